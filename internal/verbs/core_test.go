package verbs

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// answer is a device file that answers every ioctl with errno (nil: success)
// and counts them.
type answer struct {
	errno error
	calls int
}

func (a *answer) Ioctl(uint, unsafe.Pointer) error          { a.calls++; return a.errno }
func (a *answer) Read([]byte, time.Time, bool) (int, error) { return 0, syscall.EINVAL }
func (a *answer) Write([]byte) (int, error)                 { return 0, syscall.EINVAL }
func (a *answer) Mmap(int64, int, int, int) ([]byte, error) { return nil, syscall.ENODEV }
func (a *answer) Close() error                              { return nil }

func newCore(t *testing.T) (*Core, *answer) {
	t.Helper()
	be := &answer{}
	fd := sys.NewFake("uverbs0", be)
	t.Cleanup(func() { fd.Close() })
	c := new(Core)
	c.Init("dev0", fd, abi.APIFor(abi.RDMA_DRIVER_MLX5), abi.RDMA_DRIVER_MLX5)
	return c, be
}

func destroyReq(c *Core) *abi.Request {
	return c.NewRequest(abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_DESTROY).
		Handle(abi.UVERBS_ATTR_DESTROY_COUNTERS_HANDLE, 1)
}

// The core runs requests while open, refuses them after Close, and Close
// hands over the hooks once, in registration order reversed (newest
// first); a cancelled hook is not among them.
func TestCoreLifecycle(t *testing.T) {
	c, be := newCore(t)
	if err := c.Invoke(destroyReq(c)); err != nil || be.calls != 1 {
		t.Fatalf("Invoke: %v, %d calls", err, be.calls)
	}
	be.errno = syscall.EBUSY
	if err := c.Invoke(destroyReq(c)); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Invoke of a refused request: %v", err)
	}
	be.errno = nil
	var order []Stage
	hook := func(s Stage) func(Invoker) error {
		return func(invoke Invoker) error { order = append(order, s); return invoke(destroyReq(c)) }
	}
	c.OnClose(StageCounters, hook(StageCounters))
	cancel := c.OnClose(StageFlow, hook(StageFlow))
	c.OnClose(StageFlow, hook(StageFlow+1))
	cancel()
	if n := c.NumHooks(); n != 2 {
		t.Fatalf("%d hooks registered, want 2", n)
	}
	var hooks []*Hook
	if !c.Close(func() { hooks = c.TakeHooks() }) {
		t.Fatal("Close of an open core returned false")
	}
	if c.Close(func() { t.Error("second Close ran its teardown") }) {
		t.Error("second Close returned true")
	}
	if len(hooks) != 2 || hooks[0].Stage() != StageFlow || hooks[1].Stage() != StageCounters || hooks[0].Seq() < hooks[1].Seq() {
		t.Fatalf("hooks %v", hooks)
	}
	be.errno = syscall.EIO // a removed device: the hooks count as done
	for _, h := range hooks {
		if err := h.Run(); err != nil {
			t.Errorf("Run with EIO: %v", err)
		}
	}
	if len(order) != 2 || c.NumHooks() != 0 {
		t.Errorf("ran %v, %d hooks left", order, c.NumHooks())
	}
	if err := c.Hold("op"); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Hold after Close: %v", err)
	}
	if err := c.Invoke(destroyReq(c)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Invoke after Close: %v", err)
	}
	var zero Core
	if err := zero.Hold("op"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Hold of a zero core: %v", err)
	}
	if err := zero.Do(destroyReq(&zero)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Do on a zero core: %v", err)
	}
}

// An owned object is destroyed once, by its Close or the context's; a
// failed destroy leaves it registered.
func TestOwnedOnce(t *testing.T) {
	c, _ := newCore(t)
	calls, fail := 0, error(syscall.EBUSY)
	o := c.Own(StageCounters, "destroy thing", func(Invoker) error { calls++; return fail })
	if err := o.Close(); !errors.Is(err, syscall.EBUSY) || c.NumHooks() != 1 {
		t.Fatalf("failed Close: %v, %d hooks", err, c.NumHooks())
	}
	fail = nil
	if err := o.Close(); err != nil || c.NumHooks() != 0 || calls != 2 {
		t.Fatalf("Close: %v, %d hooks, %d calls", err, c.NumHooks(), calls)
	}
	if err := o.Close(); err != nil || calls != 2 {
		t.Errorf("second Close: %v, %d calls", err, calls)
	}
	o2 := c.Own(StageFlow, "destroy other", func(Invoker) error { calls++; return nil })
	c.Close(func() {
		for _, h := range c.TakeHooks() {
			h.Run()
		}
	})
	if err := o2.Close(); err != nil || calls != 3 {
		t.Errorf("Close after the context's: %v, %d calls", err, calls)
	}
	o2.RLock()
	if !o2.Destroyed() {
		t.Error("not destroyed by the context's Close")
	}
	o2.RUnlock()
}

// The binding protocol (rdma-core's get_flow_mcounters): the first bind
// sends the points newest first, later binds while a flow lives send
// none, an unbound object sends them again; no points is EINVAL, a
// destroyed object os.ErrClosed.
func TestBinding(t *testing.T) {
	c, _ := newCore(t)
	b := &Binding{Core: c, Handle: 7}
	b.Own = c.Own(StageCounters, "destroy counters", func(Invoker) error { return nil })
	if _, err := b.BeginBind(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("bind without points: %v", err)
	}
	for _, p := range []abi.Mlx5IbFlowCountersDesc{{Description: 0, Index: 0}, {Description: 1, Index: 1}} {
		if n, err := b.AddPoint(p); n != 0 || err != nil {
			t.Fatalf("AddPoint = %d, %v", n, err)
		}
	}
	pairs, err := b.BeginBind()
	if err != nil || len(pairs) != 2 || pairs[0].Index != 1 || pairs[1].Index != 0 {
		t.Fatalf("first bind: %v, %v", pairs, err)
	}
	b.EndBind(true)
	if pairs, err := b.BeginBind(); err != nil || pairs != nil {
		t.Fatalf("second bind: %v, %v", pairs, err)
	}
	b.EndBind(false) // that flow failed: still one bound
	if _, flows := b.State(); flows != 1 {
		t.Fatalf("%d flows bound, want 1", flows)
	}
	if n, err := b.AddPoint(abi.Mlx5IbFlowCountersDesc{}); n != 1 || err != nil {
		t.Fatalf("AddPoint while bound = %d, %v; want 1 bound flow", n, err)
	}
	b.Unbind()
	if pairs, err := b.BeginBind(); err != nil || len(pairs) != 2 {
		t.Fatalf("bind after the last flow went: %v, %v", pairs, err)
	}
	b.EndBind(false)
	if err := b.Own.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.BeginBind(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("bind of destroyed counters: %v", err)
	}
	if _, err := b.AddPoint(abi.Mlx5IbFlowCountersDesc{}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("AddPoint on destroyed counters: %v", err)
	}
	if pts, _ := b.State(); len(pts) != 2 {
		t.Errorf("points %v, want the two attached", pts)
	}
}

// Holders of an Owned's shared lock run together; Close waits for them,
// and after it a shared holder sees the object destroyed.
func TestOwnedShared(t *testing.T) {
	c, _ := newCore(t)
	destroyed := make(chan struct{})
	o := c.Own(StageCounters, "destroy thing", func(Invoker) error { close(destroyed); return nil })
	o.RLock()
	got := make(chan bool)
	go func() { o.RLock(); got <- o.Destroyed(); o.RUnlock() }()
	if <-got {
		t.Fatal("destroyed before Close")
	}
	closed := make(chan error)
	go func() { closed <- o.Close() }()
	select {
	case <-destroyed:
		t.Fatal("Close destroyed the object while a shared holder held it")
	case <-time.After(20 * time.Millisecond):
	}
	o.RUnlock()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	o.RLock()
	if !o.Destroyed() {
		t.Error("not destroyed after Close")
	}
	o.RUnlock()
	var nilOwned *Owned
	nilOwned.RLock()
	if !nilOwned.Destroyed() {
		t.Error("a nil Owned is not destroyed")
	}
	nilOwned.RUnlock()
}

// Close waits for the holds in flight; a Hold made while Close runs
// waits for it to finish and then fails; a second Close waits too and
// returns false. Holds and releases from many goroutines around a Close
// leave no hold behind and never succeed after Close began.
func TestCloseWaitsForHolds(t *testing.T) {
	c, _ := newCore(t)
	if err := c.Hold("op"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan bool)
	tornDown := make(chan struct{})
	go func() {
		closed <- c.Close(func() { close(tornDown) })
	}()
	select {
	case <-tornDown:
		t.Fatal("Close ran its teardown while a hold was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	late := make(chan error)
	go func() { late <- c.Hold("late") }()
	second := make(chan bool)
	go func() { second <- c.Close(func() { t.Error("second Close ran its teardown") }) }()
	c.Release()
	<-tornDown
	if !<-closed {
		t.Error("Close returned false")
	}
	if err := <-late; !errors.Is(err, os.ErrClosed) {
		t.Errorf("Hold during Close: %v, want os.ErrClosed", err)
	}
	if <-second {
		t.Error("second Close returned true")
	}
	if c.TryHold() {
		t.Error("TryHold after Close succeeded")
	}
}

func TestHoldsRacingClose(t *testing.T) {
	for range 20 {
		c, _ := newCore(t)
		var closing atomic.Bool
		done := make(chan struct{})
		for range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				for range 200 {
					if !c.TryHold() {
						return
					}
					if closing.Load() {
						t.Error("a hold succeeded after Close began its teardown")
					}
					c.Release()
				}
			}()
		}
		c.Close(func() { closing.Store(true) })
		for range 4 {
			<-done
		}
		if n := c.life.n.Load(); n != -lifeClosing {
			t.Fatalf("holds left after Close: count %d", n+lifeClosing)
		}
	}
}
