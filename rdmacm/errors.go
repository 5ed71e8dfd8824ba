package rdmacm

import (
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/errs/model"
)

// ErrNotSupported is matched, through errors.Is, by every error whose errno
// says "not supported"; it is the same value as rdma.ErrNotSupported.
var ErrNotSupported error = &model.NotSupportedValue

// Error is purerdma's one error type (rdma.Error): the operation, the
// device, and the cause. Match it with errors.As and its cause with
// errors.Is (the errno, os.ErrPermission, os.ErrNotExist,
// ErrNotSupported, os.ErrClosed); see rdma.Error.
type Error = rdma.Error

var errNotJoined error = &errs.Wrapped{Msg: "the ID did not join this group", Err: syscall.EADDRNOTAVAIL}
