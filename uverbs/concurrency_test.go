package uverbs

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/purerdma/rdma/internal/sys"
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
