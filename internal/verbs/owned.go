package verbs

import "sync"

// Owned is the destroy-once lifecycle of an object counters or flow create
// on a context: the owner's Close and the context's Close both end in at
// most one successful call of the destroy function, whichever comes first,
// in the stage order. Its lock is a readers-writer lock: destruction holds
// it exclusively; an operation that only uses the object's handle holds it
// shared (RLock), so that such operations run together, and the handle
// cannot be destroyed — and the kernel cannot hand the number to a new
// object — while one of them is in the kernel. Take it after Hold, as
// Close does. A nil *Owned (an owner's zero value, never created) has no
// lock and counts as destroyed.
type Owned struct {
	c       *Core
	op      string
	destroy func(Invoker) error
	cancel  func()

	mu        sync.RWMutex
	destroyed bool // written with mu held exclusively
}

// Own registers an object created on the context: destroy runs, with the
// object's lock held, when Owned.Close is called or when the context
// closes (at stage), whichever comes first; once it has succeeded the
// object counts as destroyed. destroy should treat EIO (a removed device)
// as success, as Close's hooks do. op names the destruction in errors
// ("destroy counters").
func (c *Core) Own(stage Stage, op string, destroy func(invoke Invoker) error) *Owned {
	o := &Owned{c: c, op: op, destroy: destroy}
	o.cancel = c.OnClose(stage, o.closeHook)
	return o
}

// RLock locks the object against destruction: holders of RLock run
// together; destruction (Close, the context's Close) holds the lock
// exclusively. An owner holds it across a system call that names the
// object's handle (a counters read, a flow bind), never twice on one
// goroutine (a waiting Close would deadlock it).
func (o *Owned) RLock() {
	if o != nil {
		o.mu.RLock()
	}
}

// RUnlock unlocks what RLock locked.
func (o *Owned) RUnlock() {
	if o != nil {
		o.mu.RUnlock()
	}
}

// Destroyed reports whether the object was destroyed (true for a nil
// *Owned). The caller holds RLock, or runs inside the destroy function.
func (o *Owned) Destroyed() bool { return o == nil || o.destroyed }

// Close destroys the object unless it already was: it holds the context,
// takes the lock and runs destroy with InvokeHeld, then unregisters it from
// the context. Closing a destroyed object, or one whose context was closed
// (which destroyed it), returns nil.
//
// Errors: destroy's, and the object stays registered (for example EBUSY
// while another object still uses it).
func (o *Owned) Close() error {
	if o == nil {
		return nil
	}
	if err := o.c.Hold(o.op); err != nil {
		return nil // the context's Close destroyed it
	}
	defer o.c.Release()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.destroyed {
		return nil
	}
	if err := o.destroy(o.c.InvokeHeld); err != nil {
		return err
	}
	o.destroyed = true
	o.cancel()
	return nil
}

func (o *Owned) closeHook(invoke Invoker) error {
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
