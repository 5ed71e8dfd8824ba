package counters_test

// Reads of one counters object run together, and against Close, the
// context's Close and a flow binding the object, on the fake kernel: its
// HandleIoctl hook holds a call at the kernel's door, where the library
// has let it go and the fake has taken no lock yet.

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
)

// waitLong bounds every wait of these tests: long enough for -race on a
// loaded machine, short enough that a library that serializes fails the
// test instead of hanging it.
const waitLong = 10 * time.Second

// fakeBound is a counters object with packets at 0 and bytes at 1 bound to
// an L2 flow on a fake mlx5 (always the fake: the tests need its hook),
// with 3 frames of 100 bytes counted.
func fakeBound(t *testing.T) (*env, *counters.Object, *flow.Flow) {
	t.Helper()
	v := verbstest.MLX5()
	b := verbstest.New(t, v)
	b.AllocFree = true
	c := b.Open(t, "mlx5_0")
	e := &env{t: t, v: v, c: c, qp: verbstest.RawQP(t, c)}
	cs := e.counters(t, pkts(0), bytesAt(1))
	f := e.flow(t, macA, cs)
	e.frames(macA, 3, 100)
	t.Cleanup(func() { e.v.Kernel().HandleIoctl(nil) })
	return e, cs, f
}

func isRead(object, method uint16) bool {
	return object == abi.UVERBS_OBJECT_COUNTERS && method == abi.UVERBS_METHOD_COUNTERS_READ
}

// Two Reads of one object are in the kernel at the same time: the first
// one is held at the kernel's door until the second arrives. A library
// that keeps the object locked across the system call lets the second in
// only once the first gave up waiting.
func TestReadsOfOneObjectRunTogether(t *testing.T) {
	e, cs, _ := fakeBound(t)
	var arrived atomic.Int32
	second := make(chan struct{})
	var together atomic.Bool
	e.v.Kernel().HandleIoctl(func(object, method uint16) {
		if !isRead(object, method) {
			return
		}
		switch arrived.Add(1) {
		case 1:
			select {
			case <-second:
				together.Store(true)
			case <-time.After(waitLong):
			}
		case 2:
			close(second)
		}
	})
	var wg sync.WaitGroup
	vals := [2][]uint64{make([]uint64, 2), make([]uint64, 2)}
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cs.Read(vals[i], counters.PreferCached)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || vals[i][0] != 3 || vals[i][1] != 300 {
			t.Errorf("read %d: %v, %v; want [3 300]", i, vals[i], err)
		}
	}
	if !together.Load() {
		t.Error("the second Read reached the kernel only after the first returned: reads of one object are serialized")
	}
}

// A Read waiting for a flow being created that binds the object would
// wait for the kernel's EX_CREATE_FLOW: the bind holds the object only
// against destruction and other binds.
func TestReadDuringBind(t *testing.T) {
	e, cs, _ := fakeBound(t)
	inCreate := make(chan struct{})
	readDone := make(chan struct{})
	var once sync.Once
	e.v.Kernel().HandleIoctl(func(object, method uint16) {
		if object != abi.UVERBS_OBJECT_DEVICE || method != abi.UVERBS_METHOD_INVOKE_WRITE {
			return
		}
		once.Do(func() {
			close(inCreate)
			select {
			case <-readDone:
			case <-time.After(waitLong):
			}
		})
	})
	created := make(chan error, 1)
	go func() {
		f, err := flow.Create(e.qp, l2(macB, cs))
		if err == nil {
			err = f.Close()
		}
		created <- err
	}()
	<-inCreate
	start := time.Now()
	vals := make([]uint64, 2)
	err := cs.Read(vals, 0)
	close(readDone)
	if err != nil || vals[0] != 3 || vals[1] != 300 {
		t.Errorf("Read during a bind: %v, %v; want [3 300]", vals, err)
	}
	if d := time.Since(start); d >= waitLong {
		t.Errorf("Read waited %v for a flow being created", d)
	}
	if err := <-created; err != nil {
		t.Fatalf("flow.Create: %v", err)
	}
	if cs.Bound() != 1 {
		t.Errorf("Bound() = %d, want 1", cs.Bound())
	}
}

// Close waits for a Read in the kernel before destroying the handle (the
// kernel could give the number to a new object), and a Read after Close
// fails with os.ErrClosed without reaching the kernel.
func TestCloseWaitsForRead(t *testing.T) {
	e, cs, f := fakeBound(t)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h := cs.Handle()
	inRead := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	var reads atomic.Int32
	e.v.Kernel().HandleIoctl(func(object, method uint16) {
		if !isRead(object, method) {
			return
		}
		reads.Add(1)
		once.Do(func() {
			close(inRead)
			<-release
		})
	})
	readErr := make(chan error, 1)
	go func() { readErr <- cs.Read(make([]uint64, 2), 0) }()
	<-inRead
	closed := make(chan error, 1)
	go func() { closed <- cs.Close() }()
	select {
	case err := <-closed:
		t.Errorf("Close returned (%v) while a Read was in the kernel", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	// The object is unbound: the kernel answers EINVAL, not ENOENT (a
	// destroyed handle).
	if err := <-readErr; !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Read racing Close: %v, want EINVAL (unbound)", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, ok := e.state(h); ok {
		t.Error("the fake still has the counters object after Close")
	}
	n := reads.Load()
	if err := cs.Read(make([]uint64, 2), 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close: %v, want os.ErrClosed", err)
	}
	if reads.Load() != n {
		t.Error("a Read after Close reached the kernel")
	}
}

// readers reads cs from n goroutines until stop is closed, and returns
// what they saw: how many reads succeeded and every other error.
func readers(cs *counters.Object, n int, stop <-chan struct{}) func() (int, []error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	var seen []error
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals := make([]uint64, 2)
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := cs.Read(vals, counters.PreferCached)
				mu.Lock()
				if err == nil {
					ok++
				} else if len(seen) < 100 {
					seen = append(seen, err)
				}
				mu.Unlock()
				if errors.Is(err, os.ErrClosed) {
					return
				}
			}
		}()
	}
	return func() (int, []error) {
		wg.Wait()
		return ok, seen
	}
}

// Reads racing the flow's and the object's Close: each sees the values,
// the kernel's EINVAL once the flow is gone, or os.ErrClosed; never a
// destroyed handle (ENOENT) and never a panic. After Close every Read
// fails with os.ErrClosed, and the fake holds no counters object.
func TestReadRacesClose(t *testing.T) {
	for round := range 20 {
		e, cs, f := fakeBound(t)
		h := cs.Handle()
		stop := make(chan struct{})
		wait := readers(cs, 4, stop)
		time.Sleep(time.Millisecond)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := cs.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if err := cs.Read(make([]uint64, 2), 0); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("round %d: Read after Close: %v, want os.ErrClosed", round, err)
		}
		close(stop)
		_, seen := wait()
		for _, err := range seen {
			if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, os.ErrClosed) {
				t.Fatalf("round %d: a Read racing Close: %v", round, err)
			}
		}
		if _, ok := e.state(h); ok {
			t.Fatalf("round %d: the fake still has the counters object", round)
		}
	}
}

// Reads racing the context's Close, which destroys the flow and the
// object: each read succeeds or fails with os.ErrClosed; afterwards every
// read fails with os.ErrClosed and the device file is closed.
func TestReadRacesContextClose(t *testing.T) {
	for round := range 20 {
		e, cs, _ := fakeBound(t)
		stop := make(chan struct{})
		wait := readers(cs, 4, stop)
		time.Sleep(time.Millisecond)
		if err := e.c.Close(); err != nil {
			t.Fatalf("round %d: context Close: %v", round, err)
		}
		if err := cs.Read(make([]uint64, 2), 0); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("round %d: Read after the context's Close: %v, want os.ErrClosed", round, err)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("round %d: Close after the context's: %v", round, err)
		}
		close(stop)
		_, seen := wait()
		for _, err := range seen {
			if !errors.Is(err, os.ErrClosed) {
				t.Fatalf("round %d: a Read racing the context's Close: %v", round, err)
			}
		}
		if n := e.v.Kernel().OpenFiles(); n != 0 {
			t.Fatalf("round %d: %d device files open after Close", round, n)
		}
	}
}

// Many reads of one object and of others at once stay correct and do
// not allocate: the requests come from the object's lock-free list.
func TestParallelReadsAllocateNothing(t *testing.T) {
	_, cs, _ := fakeBound(t)
	vals := make([]uint64, 2)
	stop := make(chan struct{})
	wait := readers(cs, 3, stop)
	n := testing.AllocsPerRun(500, func() {
		if err := cs.Read(vals, counters.PreferCached); err != nil {
			t.Fatal(err)
		}
	})
	// AllocsPerRun runs on one P, where the readers may not have had a
	// turn: give them one before they stop.
	time.Sleep(20 * time.Millisecond)
	close(stop)
	ok, seen := wait()
	if n != 0 {
		t.Errorf("Read with 3 more readers allocates %v times per call", n)
	}
	if len(seen) > 0 || ok == 0 {
		t.Errorf("parallel readers: %d reads, errors %v", ok, seen)
	}
	if vals[0] != 3 || vals[1] != 300 {
		t.Errorf("values %v, want [3 300]", vals)
	}
}
