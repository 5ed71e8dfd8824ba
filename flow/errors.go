package flow

import (
	"fmt"
	"syscall"

	rdma "github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
)

// ErrNotSupported is matched, through errors.Is, by every error whose errno
// says "not supported" (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP). It is the
// same value as rdma.ErrNotSupported.
var ErrNotSupported = rdma.ErrNotSupported

// Error is the error type of package flow: the operation (such as "create
// flow"), the IB device name and the underlying error, usually a
// syscall.Errno from the kernel.
//
// Test it with errors.Is: against the errno itself (syscall.EINVAL),
// os.ErrPermission (EPERM, EACCES: the caller lacks CAP_NET_RAW),
// os.ErrNotExist, ErrNotSupported (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP).
type Error struct {
	Op     string
	Device string
	Err    error
}

// Error formats the error as "flow: op device: error (hint)".
func (e *Error) Error() string { return "flow: " + errs.Message(e.Op, e.Device, e.Err) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether the error matches target in purerdma's error model:
// the errno's own identity, os.ErrPermission, os.ErrNotExist and
// ErrNotSupported.
func (e *Error) Is(target error) bool { return errs.Is(e.Err, target) }

// errArg is the error of an invalid argument, checked before any system
// call; it wraps EINVAL, the errno the kernel would have answered.
func errArg(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...)
}
