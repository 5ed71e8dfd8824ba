package uverbs

import (
	"github.com/purerdma/rdma/internal/ucontext"
	"sync"
)

// owned is the destroy-once lifecycle of an object that a package building
// on uverbs creates through Invoke (a counters object, a flow): the
// owner's Close and the context's Close both end in at most one successful
// call of the destroy function, whichever comes first, in the stage order
// of OnClose. Its mutex serializes the owner's other operations with
// destruction; take it after Hold, as Close does.
type owned struct {
	c       *Context
	op      string
	destroy func(ucontext.Invoker) error
	cancel  func()

	mu        sync.Mutex
	destroyed bool
}

// Own registers an object created on the context: destroy runs, with the
// object's lock held, when owned.Close is called or when the context
// closes (at stage), whichever comes first, and once it has succeeded the
// object counts as destroyed. destroy should treat EIO (a removed device)
// as success, as OnClose does. op names the destruction in errors
// ("destroy counters").
func (c *Context) own(stage ucontext.Stage, op string, destroy func(invoke ucontext.Invoker) error) *owned {
	o := &owned{c: c, op: op, destroy: destroy}
	o.cancel = c.onClose(stage, o.closeHook)
	return o
}

// Lock locks the object against destruction and the owner's other
// operations. A nil *owned (an owner's zero value, never created) has no
// lock and counts as destroyed.
func (o *owned) Lock() {
	if o != nil {
		o.mu.Lock()
	}
}

// Unlock unlocks what Lock locked.
func (o *owned) Unlock() {
	if o != nil {
		o.mu.Unlock()
	}
}

// Destroyed reports whether the object was destroyed (true for a nil
// *owned). The caller holds the lock.
func (o *owned) Destroyed() bool { return o == nil || o.destroyed }

// Close destroys the object unless it already was: it holds the context,
// takes the lock and runs destroy with InvokeHeld, then unregisters it from
// the context. Closing a destroyed object, or one whose context was
// closed (which destroyed it), returns nil.
//
// Errors: destroy's, and the object stays registered (for example EBUSY
// while another object still uses it).
func (o *owned) Close() error {
	if o == nil {
		return nil
	}
	if err := o.c.hold(o.op); err != nil {
		return nil // the context's Close destroyed it
	}
	defer o.c.release()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.destroyed {
		return nil
	}
	if err := o.destroy(o.c.invokeHeld); err != nil {
		return err
	}
	o.destroyed = true
	o.cancel()
	return nil
}

func (o *owned) closeHook(invoke ucontext.Invoker) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.destroyed {
		return nil
	}
	if err := o.destroy(invoke); err != nil {
		return err
	}
	o.destroyed = true
	return nil
}
