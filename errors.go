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

// Error is the one error type of every purerdma package (each exports it
// as its own Error, an alias of this type): the operation, the device or
// port it concerns, and the cause — usually a syscall.Errno from the
// kernel, or a sentinel such as ErrNotSupported. Its message is
// "op device: cause (what to do next)".
//
// Match it with errors.As, and its cause with errors.Is: against the errno
// itself (syscall.EINVAL, syscall.EBUSY, …), os.ErrPermission (EPERM,
// EACCES), os.ErrNotExist (ENOENT, ENODEV, ENXIO), ErrNotSupported or
// errors.ErrUnsupported (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP), and
// os.ErrClosed after Close. An Error never wraps another: the inner
// operation joins the outer one, and the device and the hint appear once.
type Error = errs.Error
