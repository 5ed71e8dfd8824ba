package uverbs

import (
	"fmt"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/errs/model"
)

// ErrNotSupported is matched, through errors.Is, by every error whose errno
// says "not supported" (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP), and by the
// errors this package returns for drivers it has no provider for. It is the
// same value as rdma.ErrNotSupported.
var ErrNotSupported error = &model.NotSupportedValue

// Error is purerdma's one error type (rdma.Error): the operation, the
// device or port, and the cause. Match it with errors.As and its cause
// with errors.Is (the errno, os.ErrPermission, os.ErrNotExist,
// ErrNotSupported, os.ErrClosed); see rdma.Error.
type Error = rdma.Error

// errNoProvider is wrapped by the error for a driver without a provider.
var errNoProvider = errs.NotSupported("no provider for this driver")

// errArg is the error of an invalid argument, checked before any system
// call; it wraps EINVAL, the errno the kernel would have answered.
func errArg(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...)
}

var errBusy = syscall.EBUSY

// errNil is the error of a method called on a nil object.
var errNil = errs.Wrap("nil or zero object (make it with Open or its Context's methods)", syscall.EINVAL)
