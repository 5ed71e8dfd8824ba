package rdma

import "github.com/purerdma/rdma/internal/errs"

// ErrNotSupported is matched, through [errors.Is], by every error whose errno
// is one of the kernel's three ways of saying "not supported":
// EPROTONOSUPPORT (the kernel or this device's driver does not know the
// object, method or mandatory attribute), EOPNOTSUPP and ENOTSUP (the method
// exists but the driver cannot do it). [errors.ErrUnsupported] matches the
// same errors.
//
// Every package of purerdma exports this same value under the same name.
var ErrNotSupported = errs.ErrNotSupported
