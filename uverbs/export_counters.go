package uverbs

// Accessors for the packages that add objects to a Context (counters,
// flow): holding the context open across several requests, and opening a
// device through a fake kernel in their unit tests. Added with issue 6.

import (
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// Hold keeps the context open until Release: Close waits for it, as it
// waits for any call in flight. Packages that keep their own state about
// kernel objects (a counters object's binding state, a flow's) take their
// locks after Hold, in the same order as the teardown hooks that Close runs
// (the context, then the object), and run their requests with InvokeHeld.
// Every Hold must be followed by exactly one Release.
//
// Errors: an *Error wrapping os.ErrClosed after Close (then there is
// nothing to Release).
func (c *Context) Hold(op string) error { return c.enter(op) }

// Release ends a Hold.
func (c *Context) Release() {
	if c == nil || c.fd == nil {
		return // Hold failed on it: there is nothing to release
	}
	c.leave()
}

// InvokeHeld runs r like Invoke, for a caller that holds the context
// (Hold): Invoke itself would take the context's lock a second time, which
// deadlocks when Close is waiting. It does not allocate once r's buffers
// have grown to size.
//
// Errors: an *Error (Op is the method's name) wrapping the request's build
// error (EINVAL) or the kernel's errno.
func (c *Context) InvokeHeld(r *abi.Request) error {
	if c == nil || c.fd == nil || r == nil {
		return &Error{Op: "invoke", Err: errArg("nil context or request")}
	}
	if err := c.do(r); err != nil {
		return c.err(r.Name(), err)
	}
	return nil
}

// WithOpener returns a copy of base (nil: the defaults) whose device files
// are opened by open instead of open(2). It exists for the unit tests of
// packages in this module, which put a fake kernel
// (internal/fakekernel) behind the device node; code outside the module
// cannot name its argument's type.
func WithOpener(base *Options, open func(path string) (*sys.FD, error)) *Options {
	var o Options
	if base != nil {
		o = *base
	}
	o.open = open
	return &o
}
