package sysfs

import (
	"fmt"
	"syscall"

	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/errs/model"

	"github.com/purerdma/rdma"
)

// ErrNotSupported is the library-wide "not supported" sentinel (see
// [rdma.ErrNotSupported]). In this package it is also matched by the errors
// that say a device lacks a whole group of files: a port without
// counters/ (a driver without a PMA, such as rxe) or without hw_counters/.
var ErrNotSupported error = &model.NotSupportedValue

// Error is purerdma's one error type (rdma.Error): the operation, the
// device or port, and the cause. Match it with errors.As and its cause
// with errors.Is (the errno, os.ErrPermission, os.ErrNotExist,
// ErrNotSupported, os.ErrClosed); see rdma.Error.
type Error = rdma.Error

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
	if e == nil {
		return "<nil>"
	}
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

// errNil is the error of a method called on a nil pointer of one of the
// package's types (a *Port, a *HwCounterSet, ...): EINVAL, an invalid
// argument, rather than a panic.
func errNil(op string) error {
	return errs.New(op, "", fmt.Errorf("called on a nil pointer: %w", syscall.EINVAL))
}
