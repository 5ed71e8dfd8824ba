// Package errs builds purerdma's errors for every package: New makes the
// one error type, rdma.Error, folding an inner Error into the outer
// operation. The errno classification behind errors.Is and the message
// format live in internal/errs/model, below the root package, and are
// re-exported here so that call sites need one import.
package errs

import (
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs/model"
)

// Error is rdma.Error, the one error type.
type Error = rdma.Error

// ErrNotSupported is rdma.ErrNotSupported: EPROTONOSUPPORT, EOPNOTSUPP and
// ENOTSUP match it.
var ErrNotSupported error = &model.NotSupportedValue

// NotSupported is a cause without an errno that still means "not
// supported": it matches ErrNotSupported and errors.ErrUnsupported.
type NotSupported = model.NotSupported

// MaxWord is the longest run of text an error message shows whole (see
// model.MaxWord).
const MaxWord = model.MaxWord

// Errno returns the errno inside err, or 0 when there is none.
func Errno(err error) syscall.Errno { return model.Errno(err) }

// Match reports whether an error whose errno is errno matches target in
// purerdma's model (see model.Match).
func Match(errno syscall.Errno, target error) bool { return model.Match(errno, target) }

// Is is Match applied to the errno found inside err.
func Is(err, target error) bool { return model.Is(err, target) }

// Message formats an error the same way in every package: "op dev: errno
// text (what to do next)" (see model.Message).
func Message(op, dev string, err error) string { return model.Message(op, dev, err) }

// Hinter is implemented by causes that name their own remedy (see
// [Message]).
type Hinter = model.Hinter

// Hint says, for the errnos users meet most, what to do next.
func Hint(errno syscall.Errno) string { return model.Hint(errno) }

// Cap returns s with every over-long word cut (see model.Cap).
func Cap(s string) string { return model.Cap(s) }

// New returns the Error of op on dev caused by err. When err is an
// *Error, or wraps one through a chain of single wrappers (fmt.Errorf with
// one %w), the result is one Error whose Op is "op: inner op" (with the
// wrappers' words), whose Device is dev or the inner one, and whose Err is
// the inner cause.
func New(op, dev string, err error) *Error {
	inner, words := innerError(err)
	if inner == nil {
		return &Error{Op: op, Device: dev, Err: err}
	}
	iop := words + inner.Op
	if dev == "" {
		dev = inner.Device
	} else if inner.Device != "" && inner.Device != dev {
		iop += " " + inner.Device
	}
	if iop != "" && iop != op {
		op = op + ": " + iop
	}
	return &Error{Op: op, Device: dev, Err: inner.Err}
}

// innerError follows single wrappers from err to an *Error; words are the
// text the wrappers put before it ("context: ").
func innerError(err error) (*Error, string) {
	for x := err; x != nil; {
		if e, ok := x.(*Error); ok {
			if e == nil {
				return nil, ""
			}
			words := ""
			if x != err {
				s, in := err.Error(), e.Error()
				if len(s) < len(in) || s[len(s)-len(in):] != in {
					// The wrappers put words after it too: folding
					// would lose them, so keep the chain.
					return nil, ""
				}
				words = s[:len(s)-len(in)]
			}
			return e, words
		}
		u, ok := x.(interface{ Unwrap() error })
		if !ok {
			return nil, ""
		}
		x = u.Unwrap()
	}
	return nil, ""
}

// Wrapped is Msg + ": " + Err's text, wrapping Err: what
// fmt.Errorf("%s: %w", msg, err) makes, for the static errors packages
// make at initialization, where fmt's formatting would cost every program
// that links them (tens of thousands of instructions at start-up).
type Wrapped struct {
	Msg string
	Err error
}

// Wrap returns a *Wrapped of msg around err.
func Wrap(msg string, err error) error { return &Wrapped{Msg: msg, Err: err} }

func (e *Wrapped) Error() string {
	if e == nil || e.Err == nil {
		return "<nil>"
	}
	return e.Msg + ": " + e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *Wrapped) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Static is Msg + ": " + the text of the sentinel variable Err points at,
// wrapping it: Wrap for package-level errors around a sentinel, which the
// compiler lays out as data (wrapping the variable's value instead is
// code that every program linking the package runs at start).
type Static struct {
	Msg string
	Err *error
}

func (e *Static) Error() string {
	if e == nil || e.Err == nil || *e.Err == nil {
		return "<nil>"
	}
	return e.Msg + ": " + (*e.Err).Error()
}

// Unwrap returns the sentinel.
func (e *Static) Unwrap() error {
	if e == nil || e.Err == nil {
		return nil
	}
	return *e.Err
}
