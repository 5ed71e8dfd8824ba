package uverbs

import (
	"errors"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/internal/verbs"
)

// TestOwned pins the lifecycle counters and flows rely on: the owner's
// Close destroys once and unregisters; a failed destroy keeps the object
// registered, so the context's Close destroys it (again at its stage);
// after the context's Close the owner's Close is a no-op; a nil *verbs.Owned is
// a destroyed one.
func TestOwned(t *testing.T) {
	b := newBed(t, rxe0())
	objects := func(c *Context) int {
		c.objMu.Lock()
		defer c.objMu.Unlock()
		return c.nobj + c.core.NumHooks()
	}

	c, err := Open("rxe0", b.opts)
	if err != nil {
		t.Fatal(err)
	}
	before := objects(c)
	calls := 0
	o := c.core.Own(verbs.StageCounters, "destroy thing", func(invoke verbs.Invoker) error { calls++; return nil })
	if objects(c) != before+1 {
		t.Fatalf("Own registered %d objects", objects(c)-before)
	}
	o.RLock()
	if o.Destroyed() {
		t.Error("a new object is destroyed")
	}
	o.RUnlock()
	if err := o.Close(); err != nil || calls != 1 {
		t.Fatalf("Close: %v, %d destroy calls", err, calls)
	}
	if err := o.Close(); err != nil || calls != 1 {
		t.Fatalf("second Close: %v, %d destroy calls", err, calls)
	}
	if objects(c) != before {
		t.Errorf("Close left the object registered (%d objects, want %d)", objects(c), before)
	}

	// A destroy that fails (EBUSY) leaves the object to the context.
	busy := true
	calls = 0
	o2 := c.core.Own(verbs.StageFlow, "destroy busy thing", func(invoke verbs.Invoker) error {
		calls++
		if busy {
			return syscall.EBUSY
		}
		return nil
	})
	if err := o2.Close(); !errors.Is(err, syscall.EBUSY) || calls != 1 {
		t.Fatalf("Close of a busy object: %v, %d calls", err, calls)
	}
	busy = false
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("the context's Close called destroy %d times in all, want 2", calls)
	}
	o2.RLock()
	if !o2.Destroyed() {
		t.Error("not destroyed after the context's Close")
	}
	o2.RUnlock()
	if err := o2.Close(); err != nil || calls != 2 {
		t.Errorf("Close after the context's Close: %v, %d calls", err, calls)
	}

	var nilOwned *verbs.Owned
	nilOwned.RLock()
	if !nilOwned.Destroyed() || nilOwned.Close() != nil {
		t.Error("a nil *verbs.Owned is not a destroyed one")
	}
	nilOwned.RUnlock()
}
