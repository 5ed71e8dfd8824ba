package uverbs

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
)

// lifecycle is the destroy-once life every built-in object (PD, CQ, QP,
// AH, MR) embeds: its lock serialises the object's use (shared, or
// exclusive where the object has one user at a time) with its
// destruction, and destroyed is set once, by the object's Close or by the
// context's. The objects that packages above uverbs create (counters,
// flows) have the same life through owned.
type lifecycle struct {
	objLink
	mu sync.RWMutex
	// destroyed is stored under mu, held for writing; reads that only
	// look (isDestroyed) load it without the lock.
	destroyed atomic.Bool
}

// closeObject is the Close of every built-in object: when the context is
// closed, its Close destroyed the object already and there is nothing to
// do; otherwise o is destroyed with the context entered.
func closeObject(c *Context, op string, o object) error {
	if c == nil {
		return nil
	}
	if err := c.enter(op); err != nil {
		return nil // the context's Close destroyed it
	}
	err := o.destroyLocked(false)
	c.leave()
	return err
}

// destroyOnce runs destroy, the kernel's destroy request, with the
// object's lock held, unless the object is destroyed already; a removed
// device (EIO, ENODEV) counts as destroyed. Once destroyed, after releases
// what the object held and forgets it. An error leaves the object as it
// was, usable (EBUSY while another object still uses it).
func (l *lifecycle) destroyOnce(c *Context, op string, destroy func() error, after func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.destroyed.Load() {
		return nil
	}
	if err := destroy(); err != nil && !isGone(err) {
		return c.err(op, err)
	}
	l.destroyed.Store(true)
	after()
	return nil
}

// isDestroyed reports whether the object was destroyed, by its Close or
// its context's: an Into method may then create it again in place, and a
// create call must not use it. It does not wait for a destroy in
// progress (no lock: an atomic load), which a caller racing the object's
// Close could not tell from one that had not begun.
func (l *lifecycle) isDestroyed() bool {
	return l.destroyed.Load()
}

// destroyBegin starts destroyOnce's work written out in place (the
// objects created and destroyed at a high rate, whose destroy would
// otherwise go through two closures): it locks the object and reports
// true, or, when the object is destroyed already, unlocks it and reports
// false. destroyEnd follows a true.
func (l *lifecycle) destroyBegin() bool {
	l.mu.Lock()
	if l.destroyed.Load() {
		l.mu.Unlock()
		return false
	}
	return true
}

// destroyEnd takes err, the kernel's answer to the destroy request: it
// reports whether the object is destroyed now (a removed device counts,
// and so does any answer while the context closes: closing the descriptor
// next destroys every object in the kernel, uverbs_destroy_ufile_hw), and
// then marks it so; the caller releases what the object held, calls
// destroyDone and returns keptErr's error. Otherwise it unlocks the
// object, which stays usable.
func (l *lifecycle) destroyEnd(err error, closing bool) bool {
	if err != nil && !isGone(err) && !closing {
		l.mu.Unlock()
		return false
	}
	l.destroyed.Store(true)
	return true
}

// destroyDone unlocks an object destroyEnd marked destroyed.
func (l *lifecycle) destroyDone() { l.mu.Unlock() }

// keptErr is the error of a destroy that destroyEnd let through: nil, or
// the kernel's refusal while the context closes (Close reports its first).
func keptErr(c *Context, op string, err error) error {
	if err == nil || isGone(err) {
		return nil
	}
	return c.err(op, err)
}

// errLive is the error of an Into method offered a live object.
func errLive(what string) error {
	return fmt.Errorf("the %s is live: close it before creating another in its place: %w", what, syscall.EBUSY)
}
