package uverbs

import (
	"fmt"
	"sync"
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
	mu        sync.RWMutex
	destroyed bool
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
	defer c.leave()
	return o.destroyLocked(false)
}

// destroyOnce runs destroy, the kernel's destroy request, with the
// object's lock held, unless the object is destroyed already; a removed
// device (EIO, ENODEV) counts as destroyed. Once destroyed, after releases
// what the object held and forgets it. An error leaves the object as it
// was, usable (EBUSY while another object still uses it).
func (l *lifecycle) destroyOnce(c *Context, op string, destroy func() error, after func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.destroyed {
		return nil
	}
	if err := destroy(); err != nil && !isGone(err) {
		return c.err(op, err)
	}
	l.destroyed = true
	after()
	return nil
}

// reusable reports whether a created object may be created again in
// place by an Into method: it was destroyed, by its Close or its
// context's.
func (l *lifecycle) reusable() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.destroyed
}

// errLive is the error of an Into method offered a live object.
func errLive(what string) error {
	return fmt.Errorf("the %s is live: close it before creating another in its place: %w", what, syscall.EBUSY)
}
