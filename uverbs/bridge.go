package uverbs

// The plumbing the packages that add objects to a Context (counters,
// flow) need: holding the context open across several requests, running
// requests, the teardown hooks, and opening a device through a fake kernel
// in their unit tests. They reach it through internal/ucontext, which this
// file fills in; a user of the package never sees it.

import (
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/ucontext"
)

func init() {
	ctx := func(x any) *Context { c, _ := x.(*Context); return c }
	ucontext.Hold = func(x any, op string) error { return ctx(x).hold(op) }
	ucontext.Release = func(x any) { ctx(x).release() }
	ucontext.Invoke = func(x any, r *abi.Request) error { return ctx(x).invoke(r) }
	ucontext.InvokeHeld = func(x any, r *abi.Request) error { return ctx(x).invokeHeld(r) }
	ucontext.Own = func(x any, stage ucontext.Stage, op string, destroy func(ucontext.Invoker) error) *ucontext.Owned {
		return ucontext.NewOwned(ctx(x).own(stage, op, destroy))
	}
	ucontext.OnClose = func(x any, stage ucontext.Stage, destroy func(ucontext.Invoker) error) func() {
		return ctx(x).onClose(stage, destroy)
	}
	ucontext.API = func(x any) *abi.API { return ctx(x).apiTable() }
	ucontext.WithOpener = func(base any, open func(path string) (*sys.FD, error)) any {
		o, _ := base.(*Options)
		return withOpener(o, open)
	}
}

// hold keeps the context open until Release: Close waits for it, as it
// waits for any call in flight. Packages that keep their own state about
// kernel objects (a counters object's binding state, a flow's) take their
// locks after Hold, in the same order as the teardown hooks that Close runs
// (the context, then the object), and run their requests with InvokeHeld.
// Every Hold must be followed by exactly one Release.
//
// Errors: an *Error wrapping os.ErrClosed after Close (then there is
// nothing to Release).
func (c *Context) hold(op string) error { return c.enter(op) }

// release ends a hold.
func (c *Context) release() {
	if c == nil || c.fd == nil {
		return // Hold failed on it: there is nothing to release
	}
	c.leave()
}

// invokeHeld runs r like invoke, for a caller that holds the context
// (Hold): Invoke itself would take the context's lock a second time, which
// deadlocks when Close is waiting. It does not allocate once r's buffers
// have grown to size.
//
// Errors: an *Error (Op is the method's name) wrapping the request's build
// error (EINVAL) or the kernel's errno.
func (c *Context) invokeHeld(r *abi.Request) error {
	if c == nil || c.fd == nil || r == nil {
		return errs.New("invoke", "", errArg("nil context or request"))
	}
	if err := c.do(r); err != nil {
		return c.err(r.Name(), err)
	}
	return nil
}

// withOpener returns a copy of base (nil: the defaults) whose device files
// are opened by open instead of open(2). It exists for the unit tests of
// packages in this module, which put a fake kernel
// (internal/testmodel/fakekernel) behind the device node; code outside the module
// cannot name its argument's type.
func withOpener(base *Options, open func(path string) (*sys.FD, error)) *Options {
	var o Options
	if base != nil {
		o = *base
	}
	o.open = open
	return &o
}
