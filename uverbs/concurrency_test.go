package uverbs

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/verbs"
)

// Objects are safe for concurrent use: queries, creates and destroys from
// many goroutines, then a Close racing with them (run with -race).
func TestConcurrentUse(t *testing.T) {
	b := newBed(t, rxe0())
	c, err := Open("rxe0", b.opts)
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := c.AllocPD()
	shared, _ := c.CreateCQ(CQAttr{CQE: 64})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := c.QueryPort(1); err != nil {
					errs <- err
					return
				}
				cq, err := c.CreateCQ(CQAttr{CQE: 8, CompVector: g % 2})
				if err != nil {
					errs <- err
					return
				}
				qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: shared, Cap: rcCap()})
				if err != nil {
					errs <- err
					return
				}
				if err := qp.Modify(&QPAttr{State: QPStateInit, Port: 1, QKey: 0x11111111},
					QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrQKey); err != nil {
					errs <- err
					return
				}
				// Two goroutines race to destroy the same QP: one wins,
				// the other sees a closed QP, neither fails.
				var w2 sync.WaitGroup
				for k := 0; k < 2; k++ {
					w2.Add(1)
					go func() { defer w2.Done(); qp.Close() }()
				}
				w2.Wait()
				if err := cq.Close(); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Close while calls are in flight: each call either completes or
	// reports os.ErrClosed; Close destroys whatever was created.
	var w sync.WaitGroup
	for g := 0; g < 4; g++ {
		w.Add(1)
		go func() {
			defer w.Done()
			for i := 0; i < 100; i++ {
				cq, err := c.CreateCQ(CQAttr{CQE: 4})
				if err != nil {
					if !errors.Is(err, os.ErrClosed) {
						t.Errorf("CreateCQ racing Close: %v", err)
					}
					return
				}
				_ = cq
			}
		}()
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	w.Wait()
	if n := b.devs["rxe0"].Kernel().OpenFiles(); n != 0 {
		t.Errorf("%d files open after Close", n)
	}
}

// Many create/destroy cycles leave no object in the kernel and no
// descriptor behind (the VM test repeats this 10,000 times on Linux).
func TestCyclesLeaveNothing(t *testing.T) {
	b := newBed(t, rxe0())
	base := len(sys.Live())
	for i := 0; i < 200; i++ {
		c, err := Open("rxe0", b.opts)
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := c.CreateCompChannel()
		pd, _ := c.AllocPD()
		cq, err := c.CreateCQ(CQAttr{CQE: 8, Channel: ch})
		if err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			// explicit teardown
			for _, f := range []func() error{qp.Close, cq.Close, ch.Close, pd.Close} {
				if err := f(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(sys.Live()); n != base {
		t.Errorf("%d descriptors live, %d before", n, base)
	}
	if n := b.devs["rxe0"].Kernel().OpenFiles(); n != 0 {
		t.Errorf("%d files open", n)
	}
}

// gate is the stand-in kernel with a gate on one method: a call of it
// waits, inside the system call, until a second call of it has entered
// too, and gives up with ETIMEDOUT when none does. Two calls on one
// Context that serialised on a lock held across the system call would
// time out.
type gate struct {
	portOnly
	armed          atomic.Bool
	object, method uint16
	inside         atomic.Int32
	both           chan struct{}
	once           sync.Once
}

func (g *gate) Ioctl(req uint, arg unsafe.Pointer) error {
	if h := (*abi.IoctlHdr)(arg); req == abi.RDMA_VERBS_IOCTL && g.armed.Load() && h.ObjectID == g.object && h.MethodID == g.method {
		if g.inside.Add(1) >= 2 {
			g.once.Do(func() { close(g.both) })
		}
		select {
		case <-g.both:
		case <-time.After(10 * time.Second):
			return syscall.ETIMEDOUT
		}
	}
	return g.portOnly.Ioctl(req, arg)
}

// Queries on one Context run in parallel: two goroutines are in the
// system call at once (run with -race).
func TestQueriesRunInParallel(t *testing.T) {
	for _, tc := range []struct {
		name           string
		object, method uint16
		query          func(c *Context) error
	}{
		{"QueryPort", abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT, func(c *Context) error {
			_, err := c.QueryPort(1)
			return err
		}},
		{"QueryDevice", abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE, func(c *Context) error {
			_, err := c.QueryDevice()
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gate{object: tc.object, method: tc.method, both: make(chan struct{})}
			b := newBed(t, rxe0())
			opts := *b.opts
			opts.Opener = verbs.NewOpener(func(path string) (*sys.FD, error) { return sys.NewFake(path, g), nil })
			c, err := Open("rxe0", &opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			g.armed.Store(true)
			errs := make(chan error, 2)
			for range 2 {
				go func() { errs <- tc.query(c) }()
			}
			for range 2 {
				if err := <-errs; err != nil {
					t.Errorf("%s: %v (the calls did not overlap in the system call)", tc.name, err)
				}
			}
		})
	}
}

// BenchmarkStandInQueryPortParallel runs QueryPort from GOMAXPROCS
// goroutines on one Context: no lock is held across the system call, and
// in steady state nothing is allocated.
func BenchmarkStandInQueryPortParallel(b *testing.B) {
	c := portOnlyContext(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.QueryPort(1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
