package counters

import (
	"fmt"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs/model"
)

// ErrNotSupported is matched, through errors.Is, by every error whose errno
// says "not supported" (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP). It is the
// same value as rdma.ErrNotSupported.
var ErrNotSupported error = &model.NotSupportedValue

// Error is purerdma's one error type (rdma.Error): the operation, the
// device or port, and the cause. Match it with errors.As and its cause
// with errors.Is (the errno, os.ErrPermission, os.ErrNotExist,
// ErrNotSupported, os.ErrClosed); see rdma.Error.
type Error = rdma.Error

// errArg is the error of an invalid argument, checked before any system
// call; it wraps EINVAL.
func errArg(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...)
}
