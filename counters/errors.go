package counters

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

// Error is the error type of package counters: the operation (such as
// "read counters"), the IB device name and the underlying error, usually a
// syscall.Errno from the kernel or the rule it broke.
//
// Test it with errors.Is: against the errno itself (syscall.EBUSY,
// syscall.EINVAL, syscall.ENOTSUP), os.ErrPermission, os.ErrNotExist,
// ErrNotSupported (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP) or os.ErrClosed.
type Error struct {
	Op     string
	Device string
	Err    error
}

// Error formats the error as "counters: op device: error (hint)".
func (e *Error) Error() string { return "counters: " + errs.Message(e.Op, e.Device, e.Err) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether the error matches target in purerdma's error model:
// the errno's own identity, os.ErrPermission, os.ErrNotExist and
// ErrNotSupported.
func (e *Error) Is(target error) bool { return errs.Is(e.Err, target) }

// errArg is the error of an invalid argument, checked before any system
// call; it wraps EINVAL.
func errArg(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...)
}
