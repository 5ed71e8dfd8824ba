// Package verbs is the core of a uverbs context that the packages of this
// module building on it (uverbs, counters, flow) share and a user never
// calls: the teardown stages, running requests on the context's
// descriptor, holding the context open across several requests, the
// destroy-once lifecycle of the objects counters and flow create, the
// close hooks, the device-file opener of the unit tests, and the binding
// state of a counters object that flow's count action uses.
//
// It corresponds to what libibverbs keeps between its core and its
// providers: struct verbs_context (the per-context state), execute_ioctl
// and the ibv_cmd_* helpers (running a command on the context's file).
// Package uverbs keeps a Core in each Context; counters and flow reach it
// through uverbs.Context.Core, and flow reaches a counters object's
// Binding through counters.Object.Binding. Both take a Seal, which only
// this module can write, so code outside it cannot call them.
package verbs

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
)

// Seal is the argument of the methods that hand this package's values to
// the other packages of this module (uverbs.Context.Core,
// counters.Object.Binding). Code outside the module cannot name the type,
// so it cannot write a value of it and cannot call them.
type Seal struct{}

// Stage orders what a Context's Close destroys: lower stages first. The
// stages keep the kernel's dependency order (uverbs_destroy_ufile_hw
// destroys in the same order: flows, counters, QPs, SRQs, CQs, AHs, MRs,
// PDs).
type Stage int

// The teardown stages, in the order Close runs them.
const (
	StageFlow     Stage = 10
	StageCounters Stage = 20
	StageQP       Stage = 30
	StageSRQ      Stage = 35
	StageCQ       Stage = 40
	StageAH       Stage = 44
	StageMR       Stage = 45
	StagePD       Stage = 50
	StageChannel  Stage = 60
)

// Invoker runs a request on a context whose caller holds it.
type Invoker func(r *abi.Request) error

// Opener opens a device file in place of open(2): the seam where unit
// tests put a fake kernel (internal/testmodel/fakekernel) behind the
// device node. It is uverbs.Options.Opener. Its function is unexported and
// only NewOpener sets it, so code outside the module, which can reach the
// field but not this package, cannot make an Opener other than the zero
// one (open(2)).
type Opener struct {
	open func(path string) (*sys.FD, error)
}

// NewOpener returns an Opener that opens device files with open.
func NewOpener(open func(path string) (*sys.FD, error)) Opener { return Opener{open: open} }

// OpenFile opens path with the Opener's function, or open(2) for the zero
// Opener.
func (o Opener) OpenFile(path string) (*sys.FD, error) {
	if o.open != nil {
		return o.open(path)
	}
	return sys.Open(path, syscall.O_RDWR)
}

// Core is the plumbing of one open context (the part of struct
// verbs_context the library keeps for itself): its descriptor and method
// table, the life lock every operation holds shared and Close holds
// exclusively, and the close hooks of the objects counters and flow
// create. The zero Core is an unopened context: every operation fails
// with EINVAL. A nil *Core behaves the same.
type Core struct {
	dev string
	fd  *sys.FD
	raw int // fd's number, -1 for a fake kernel's: see ioctl
	api *abi.API
	drv uint32

	// life is held shared by every operation and exclusively by Close:
	// Close waits for calls in flight, and calls after it see closed.
	// Lock order: life, then an object's lock, then hookMu.
	life lifeLock

	seq    atomic.Uint64
	hookMu sync.Mutex
	hooks  *Hook // the newest registered hook; the rest follow by next
}

// Init sets up c for the context opened on the device dev: its descriptor
// fd, the method table api and driver id drv that requests carry.
func (c *Core) Init(dev string, fd *sys.FD, api *abi.API, drv uint32) {
	if c == nil {
		return
	}
	c.dev, c.fd, c.raw, c.api, c.drv = dev, fd, fd.Raw(), api, drv
	c.life.init()
}

// Raw returns the context's descriptor number, -1 for a fake kernel's
// or a nil or zero Core: valid while the context is open, for calls the
// caller's own lock keeps from racing its Close (an rxe QP's doorbell).
func (c *Core) Raw() int {
	if c == nil || c.fd == nil {
		return -1
	}
	return c.raw
}

// API returns the method table of the context's device (nil for a nil
// Core).
func (c *Core) API() *abi.API {
	if c == nil {
		return nil
	}
	return c.api
}

// Number returns the context's descriptor number, valid while the context
// is held (see ioctl), or -1 for a fake kernel's descriptor.
func (c *Core) Number() int {
	if c == nil {
		return -1
	}
	return c.raw
}

// Driver returns the driver id requests on the context carry.
func (c *Core) Driver() uint32 {
	if c == nil {
		return 0
	}
	return c.drv
}

// NewRequest returns a request for method of object on the context's
// device.
func (c *Core) NewRequest(object, method uint16) *abi.Request {
	return abi.NewRequest(c.API(), c.Driver(), object, method)
}

// Err returns err as the *Error of op on the context's device.
func (c *Core) Err(op string, err error) error {
	if c == nil {
		return errs.New(op, "", err)
	}
	return errs.New(op, c.dev, err)
}

// NextSeq returns a fresh sequence number: Close destroys, within a stage,
// the newest first.
func (c *Core) NextSeq() uint64 {
	if c == nil {
		return 0
	}
	return c.seq.Add(1)
}

// Hold keeps the context open until Release: Close waits for it, as it
// waits for any call in flight. Packages that keep their own state about
// kernel objects take their locks after Hold, in the same order as the
// hooks Close runs (the context, then the object), and run their requests
// with InvokeHeld. Every successful Hold is followed by exactly one
// Release.
//
// Errors: an *Error wrapping EINVAL for an unopened context, os.ErrClosed
// after Close (then there is nothing to Release).
func (c *Core) Hold(op string) error {
	if c != nil && c.fd != nil && c.life.rlock() {
		return nil
	}
	return c.holdErr(op)
}

// TryHold is Hold without the error, for a caller that makes its own: it
// reports whether the context is held (then Release follows). It inlines.
func (c *Core) TryHold() bool {
	return c != nil && c.fd != nil && c.life.rlock()
}

// Closing reports whether the context's Close has begun: its teardown
// may be running, and the descriptor is closed at its end.
func (c *Core) Closing() bool { return c == nil || c.life.n.Load() < 0 }

// holdErr is the error of a Hold that failed, kept out of Hold so that
// Hold inlines.
func (c *Core) holdErr(op string) error {
	if c == nil || c.fd == nil {
		return errs.New(op, "", errNil)
	}
	return c.Err(op, os.ErrClosed)
}

// Release ends a Hold.
func (c *Core) Release() {
	if c == nil || c.fd == nil {
		return // Hold failed on it: there is nothing to release
	}
	c.life.runlock()
}

// errNil is the error of an operation on a nil or unopened context.
var errNil = errs.Wrap("nil or zero object (make it with Open or its Context's methods)", syscall.EINVAL)

// errArg is the error of an invalid argument, checked before any system
// call; it wraps EINVAL.
func errArg(msg string) error { return errs.Wrap(msg, syscall.EINVAL) }

// Do runs r on the context's descriptor, without the life lock: for
// Close's hooks and callers that hold the context (Hold, or Close's
// exclusive hold), which is what keeps the descriptor open, and its
// number not reused, while the ioctl runs (ioctl: the descriptor's own
// lock is not taken again). The request goes to
// the kernel as built (abi.Request.MarshalUnchecked); when the kernel
// refuses it, the request's own mistake, if the method table finds one,
// is the error (abi.Request.Explain). It does not allocate once r's
// buffers have grown to size.
func (c *Core) Do(r *abi.Request) error {
	if c == nil || c.fd == nil || r == nil {
		return errArg("nil context or request")
	}
	buf, err := r.MarshalUnchecked()
	if err != nil {
		return err
	}
	// r, which the ioctl's argument points into, keeps the memory its
	// attributes point at alive until the call returns.
	err = c.ioctl(unsafe.Pointer(unsafe.SliceData(buf)))
	runtime.KeepAlive(r) // a request of many attributes is called from a copy
	if err != nil {
		return r.Explain(err)
	}
	return nil
}

// DoMarshalled runs a request marshalled before (abi.Request.Marshal's
// buf, which the caller keeps, with the memory it points at, until the
// call returns) again, as Do runs r: for a request reissued unchanged (a
// CQ's REQ_NOTIFY_CQ). The caller holds the context. The error is the
// errno.
func (c *Core) DoMarshalled(buf []byte) error {
	if c == nil || c.fd == nil || len(buf) < abi.IoctlHdrSize {
		return errArg("nil context or empty request")
	}
	return c.ioctl(unsafe.Pointer(unsafe.SliceData(buf)))
}

// ioctl issues RDMA_VERBS_IOCTL with arg on the context's descriptor.
// Every caller holds the context (Hold) or is its Close, and only Close,
// with the life lock held alone, closes the descriptor: the number stays
// open for the call without the descriptor's own lock (sys.IoctlNumber).
// A fake kernel's descriptor has no number and goes through its ops
// (FD.Ioctl).
func (c *Core) ioctl(arg unsafe.Pointer) error {
	if c.raw >= 0 {
		return sys.IoctlNumber(c.raw, abi.RDMA_VERBS_IOCTL, arg)
	}
	return c.fd.Ioctl(abi.RDMA_VERBS_IOCTL, arg)
}

// Invoke runs a request built for the context's device, holding the
// context for it.
//
// Errors: an *Error (Op is the method's name) wrapping the request's build
// error (EINVAL) or the kernel's errno; os.ErrClosed after Close.
func (c *Core) Invoke(r *abi.Request) error {
	if r == nil {
		return errs.New("invoke", "", errArg("no request"))
	}
	if c == nil || c.fd == nil {
		return errs.New(r.Name(), "", errNil)
	}
	if !c.life.rlock() {
		return c.Err(r.Name(), os.ErrClosed)
	}
	err := c.Do(r)
	c.life.runlock()
	if err != nil {
		return c.Err(r.Name(), err)
	}
	return nil
}

// InvokeHeld runs r like Invoke, for a caller that holds the context
// (Hold): Invoke would take the life lock a second time, which deadlocks
// when Close is waiting.
func (c *Core) InvokeHeld(r *abi.Request) error {
	if c == nil || c.fd == nil || r == nil {
		return errs.New("invoke", "", errArg("nil context or request"))
	}
	if err := c.Do(r); err != nil {
		return c.Err(r.Name(), err)
	}
	return nil
}

// Close marks the context closed and runs teardown with the life lock
// held exclusively, after the calls in flight have returned; teardown
// destroys what the context owns (TakeHooks among it). It returns false,
// without running teardown, for an unopened context or one closed already.
func (c *Core) Close(teardown func()) bool {
	if c == nil || c.fd == nil {
		return false
	}
	if !c.life.lock() {
		return false
	}
	defer c.life.unlock()
	if teardown != nil {
		teardown()
	}
	return true
}

// Hook is a destroy function registered with OnClose.
type Hook struct {
	c          *Core
	prev, next *Hook
	listed     bool
	stage      Stage
	seq        uint64
	fn         func(Invoker) error
}

// Stage returns the stage the hook runs at.
func (h *Hook) Stage() Stage { return h.stage }

// Seq returns the hook's sequence number (NextSeq).
func (h *Hook) Seq() uint64 { return h.seq }

// Run runs the hook's destroy function with an Invoker that works while
// the context is closing. An EIO (a removed device) counts as success.
func (h *Hook) Run() error {
	err := h.fn(h.c.invokeClosing)
	if err != nil && !errors.Is(err, syscall.EIO) {
		return err
	}
	return nil
}

func (c *Core) invokeClosing(r *abi.Request) error {
	if err := c.Do(r); err != nil {
		return c.Err(r.Name(), err)
	}
	return nil
}

// OnClose registers destroy to run when the context closes, at stage, so
// that the objects counters and flow create are destroyed in the kernel's
// dependency order. The returned cancel unregisters it: call it after
// destroying the object yourself.
func (c *Core) OnClose(stage Stage, destroy func(invoke Invoker) error) (cancel func()) {
	if c == nil || c.fd == nil || destroy == nil {
		return func() {} // nothing was opened, or nothing to run
	}
	h := &Hook{c: c, stage: stage, seq: c.NextSeq(), fn: destroy}
	c.hookMu.Lock()
	h.next, h.listed = c.hooks, true
	if c.hooks != nil {
		c.hooks.prev = h
	}
	c.hooks = h
	c.hookMu.Unlock()
	return func() { c.unhook(h) }
}

func (c *Core) unhook(h *Hook) {
	c.hookMu.Lock()
	defer c.hookMu.Unlock()
	if !h.listed {
		return
	}
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		c.hooks = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	}
	h.prev, h.next, h.listed = nil, nil, false
}

// TakeHooks unregisters every hook and returns them, for Close to run in
// stage order.
func (c *Core) TakeHooks() []*Hook {
	if c == nil {
		return nil
	}
	c.hookMu.Lock()
	defer c.hookMu.Unlock()
	var hs []*Hook
	for h := c.hooks; h != nil; {
		next := h.next
		h.prev, h.next, h.listed = nil, nil, false
		hs = append(hs, h)
		h = next
	}
	c.hooks = nil
	return hs
}

// NumHooks returns how many hooks are registered.
func (c *Core) NumHooks() int {
	if c == nil {
		return 0
	}
	c.hookMu.Lock()
	defer c.hookMu.Unlock()
	n := 0
	for h := c.hooks; h != nil; h = h.next {
		n++
	}
	return n
}
