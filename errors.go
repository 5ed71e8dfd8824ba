package rdma

import "github.com/purerdma/rdma/internal/errs/model"

// ErrNotSupported is matched, through [errors.Is], by every error whose errno
// is one of the kernel's three ways of saying "not supported":
// EPROTONOSUPPORT (the kernel or this device's driver does not know the
// object, method or mandatory attribute), EOPNOTSUPP and ENOTSUP (the method
// exists but the driver cannot do it). [errors.ErrUnsupported] matches the
// same errors.
//
// Every package of purerdma exports this same value under the same name.
var ErrNotSupported error = &model.NotSupportedValue

// Error is the one error type of every purerdma package (each exports it
// as its own Error, an alias of this type): the operation, the device or
// port it concerns, and the cause — usually a [syscall.Errno] from the
// kernel, or a sentinel such as [ErrNotSupported]. Its message is
// "op device: cause (what to do next)", the hint chosen from the errno.
//
// Match it with [errors.As], and its cause with [errors.Is]: against the
// errno itself (syscall.EINVAL, syscall.EBUSY, …), [os.ErrPermission]
// (EPERM, EACCES), [os.ErrNotExist] (ENOENT, ENODEV, ENXIO),
// [ErrNotSupported] or [errors.ErrUnsupported] (EPROTONOSUPPORT,
// EOPNOTSUPP, ENOTSUP), and [os.ErrClosed] after Close. Never compare
// errnos with ==.
//
// An Error the library returns never wraps another: the inner operation
// joins the outer one ("create flow: EX_CREATE_FLOW"), and the device and
// the hint appear once. The message is bounded: a device name or a word of
// the cause longer than 64 bytes (the kernel's IB_DEVICE_NAME_MAX) shows
// as its start and its length.
type Error struct {
	// Op is what was being done, such as "create flow" or "read port".
	Op string
	// Device is the device ("mlx5_0") or port ("mlx5_0/1"); may be empty.
	Device string
	// Err is the cause: an errno, a sentinel, or an error wrapping them.
	Err error
}

// Error formats the error as "op device: cause (hint)".
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	return model.Message(e.Op, e.Device, e.Err)
}

// Unwrap returns the cause, e.Err.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether the error matches target in purerdma's model, beyond
// what [errors.Is] finds by unwrapping: os.ErrPermission (EPERM, EACCES),
// os.ErrNotExist (ENOENT, ENODEV, ENXIO), and ErrNotSupported or
// errors.ErrUnsupported (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP).
func (e *Error) Is(target error) bool { return model.Is(e.Err, target) }
