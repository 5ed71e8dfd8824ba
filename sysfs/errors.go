package sysfs

import (
	"fmt"

	rdma "github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
)

// ErrNotSupported is the library-wide "not supported" sentinel (see
// [rdma.ErrNotSupported]). In this package it is also matched by the errors
// that say a device lacks a whole group of files: a port without
// counters/ (a driver without a PMA, such as rxe) or without hw_counters/.
var ErrNotSupported = rdma.ErrNotSupported

// Error is the error type of package sysfs: the operation ("read CA",
// "read port", "netlink stat get", …), the device ("mlx5_0", or
// "mlx5_0/1" for a port) and the cause.
//
// The cause is an *fs.PathError carrying the errno for a file that could not
// be read, a [*ParseError] for a file whose contents are not in the kernel's
// format, or a netlink errno. [errors.Is] matches it against the errno,
// against os.ErrNotExist (ENOENT, ENODEV, ENXIO: the device or file does not
// exist), os.ErrPermission (EACCES, EPERM) and [ErrNotSupported].
type Error struct {
	Op     string // what was being done: "read CA", "read port", "netlink stat get", …
	Device string // the device, "mlx5_0", or a port, "mlx5_0/1"; may be empty
	Err    error  // the cause
}

// Error returns "op device: cause (what to do next)", the message format of
// every purerdma package.
func (e *Error) Error() string { return errs.Message(e.Op, e.Device, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether the cause's errno matches target in purerdma's error
// model (see the rdma package documentation).
func (e *Error) Is(target error) bool { return errs.Is(e.Err, target) }

// ParseError says that a sysfs file, a string handed to one of the Parse
// functions, or a netlink message did not have the expected format.
type ParseError struct {
	// Path is the file (under the FS's root) or the netlink attribute; it
	// is empty for the exported Parse functions.
	Path string
	// Text is what was read (shortened to 64 bytes).
	Text string
	// Want says what was expected, usually the kernel's format string.
	Want string
}

// Error returns "parse PATH: got TEXT, want WANT".
func (e *ParseError) Error() string {
	s := "parse "
	if e.Path != "" {
		s += e.Path + ": "
	}
	return s + fmt.Sprintf("got %q, want %s", e.Text, e.Want)
}

// parseErr builds a ParseError, shortening text.
func parseErr(path, text, want string) *ParseError {
	const max = 64
	if len(text) > max {
		text = text[:max] + "…"
	}
	return &ParseError{Path: path, Text: text, Want: want}
}
