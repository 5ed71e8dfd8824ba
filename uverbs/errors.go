package uverbs

import (
	"errors"
	"fmt"
	"syscall"

	rdma "github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
)

// ErrNotSupported is matched, through errors.Is, by every error whose errno
// says "not supported" (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP), and by the
// errors this package returns for drivers it has no provider for. It is the
// same value as rdma.ErrNotSupported.
var ErrNotSupported = rdma.ErrNotSupported

// Error is the error type of package uverbs: the operation (such as "create
// cq"), the IB device name and the underlying error, usually a
// syscall.Errno from the kernel.
//
// Test it with errors.Is: against the errno itself (syscall.EBUSY), against
// os.ErrPermission (EPERM, EACCES), os.ErrNotExist (ENOENT, ENODEV, ENXIO)
// or ErrNotSupported (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP).
type Error struct {
	Op     string
	Device string
	Err    error
}

// Error formats the error as "uverbs: op device: errno text (hint)".
func (e *Error) Error() string { return "uverbs: " + errs.Message(e.Op, e.Device, e.Err) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether the error matches target in purerdma's error model
// (see package rdma): the errno's own identity, os.ErrPermission,
// os.ErrNotExist and ErrNotSupported.
func (e *Error) Is(target error) bool {
	if target == ErrNotSupported && errors.Is(e.Err, errNoProvider) {
		return true
	}
	return errs.Is(e.Err, target)
}

// errNoProvider is wrapped by the error for a driver without a provider.
var errNoProvider = errors.New("no provider for this driver")

// errArg is the error of an invalid argument, checked before any system
// call; it wraps EINVAL, the errno the kernel would have answered.
func errArg(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...)
}

var errBusy = syscall.EBUSY

// errNil is the error of a method called on a nil object.
var errNil = fmt.Errorf("nil or zero object (make it with Open or its Context's methods): %w", syscall.EINVAL)
