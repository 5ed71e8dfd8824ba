package uverbs

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
)

func newSRQBed(t testing.TB) (*dpBed, *SRQ) {
	t.Helper()
	d := newDPBed(t)
	s, err := d.qp.PD().CreateSRQ(SRQAttr{MaxWR: 5, MaxSGE: 2, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	return d, s
}

// An SRQ on the fake rxe: the sizes granted, the receive WQEs in the
// mapped queue as rxe_post_one_recv writes them, the overrun's ENOMEM at
// the first request that does not fit, EINVAL for too many SGEs.
func TestSRQRXE(t *testing.T) {
	d, s := newSRQBed(t)
	a, err := s.Query()
	if err != nil {
		t.Fatal(err)
	}
	// rxe_queue_init: roundup_pow_of_two(5 + 1) slots, one kept empty.
	if a != (SRQAttr{MaxWR: 7, MaxSGE: 2, Limit: 2}) || s.Num() == 0 {
		t.Errorf("SRQ attributes %+v, number %d", a, s.Num())
	}
	if s.PD() != d.qp.PD() || s.Context() != d.c {
		t.Error("PD or Context")
	}
	s0, _ := d.mr.SGE(0, 100)
	s1, _ := d.mr.SGE(300, 20)
	wrs := make([]RecvWR, 8)
	for i := range wrs {
		wrs[i] = RecvWR{ID: uint64(10 + i), SGL: []SGE{s0, s1}}
	}
	n, err := s.PostRecv(wrs)
	if n != 7 {
		t.Errorf("posted %d of 8 into an SRQ of 7", n)
	}
	wantErrno(t, err, syscall.ENOMEM)
	r := &s.rxe.rq
	for i := uint32(0); i < 7; i++ {
		w := (*abi.RxeRecvWqe)(r.slot(i))
		sg := unsafe.Slice((*abi.RxeSge)(unsafe.Add(r.slot(i), rxeRecvWqeSize)), 2)
		if w.WrId != uint64(10+i) || w.Dma.Length != 120 || w.Dma.Resid != 120 || w.Dma.NumSge != 2 ||
			sg[0] != (abi.RxeSge{Addr: s0.Addr, Length: 100, Lkey: d.mr.LKey()}) || sg[1].Addr != s1.Addr {
			t.Errorf("WQE %d: %+v, SGEs %+v", i, *w, sg)
		}
	}
	if p := atomic.LoadUint32(&r.hdr.ProducerIndex); p != 7 {
		t.Errorf("producer index %d", p)
	}
	consume(r)
	n, err = s.PostRecv([]RecvWR{{ID: 1}, {ID: 2, SGL: []SGE{s0, s0, s0}}})
	if n != 1 {
		t.Errorf("posted %d, want 1 before the bad request", n)
	}
	wantErrno(t, err, syscall.EINVAL)
}

// Modify arms the limit and resizes (the new queue mapped in place of the
// old); the kernel's checks answer EINVAL; a bad mask is refused before
// any call.
func TestSRQModifyRXE(t *testing.T) {
	d, s := newSRQBed(t)
	if err := s.Modify(&SRQAttr{Limit: 5}, SRQAttrLimit); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.Query(); a.Limit != 5 {
		t.Errorf("limit %d after Modify", a.Limit)
	}
	wantErrno(t, s.Modify(&SRQAttr{Limit: 8}, SRQAttrLimit), syscall.EINVAL) // above the size
	wantErrno(t, s.Modify(&SRQAttr{MaxWR: 3}, SRQAttrMaxWR), syscall.EINVAL) // below the armed limit
	wantErrno(t, s.Modify(&SRQAttr{}, 4), syscall.EINVAL)
	wantErrno(t, s.Modify(nil, SRQAttrLimit), syscall.EINVAL)
	old := s.res.maps[0]
	if err := s.Modify(&SRQAttr{MaxWR: 20}, SRQAttrMaxWR); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.Query(); a.MaxWR != 31 {
		t.Errorf("max_wr %d after resizing to 20", a.MaxWR)
	}
	if unsafe.SliceData(s.res.maps[0]) == unsafe.SliceData(old) || s.res.nmaps != 1 || s.rxe.rq.mask != 31 {
		t.Errorf("the resized queue is not mapped (%d maps, mask %d)", s.res.nmaps, s.rxe.rq.mask)
	}
	s0, _ := d.mr.SGE(0, 8)
	wrs := make([]RecvWR, 31)
	for i := range wrs {
		wrs[i] = RecvWR{ID: uint64(i), SGL: []SGE{s0}}
	}
	if n, err := s.PostRecv(wrs); n != 31 || err != nil {
		t.Errorf("posted %d of 31 into the resized SRQ: %v", n, err)
	}
}

// A QP created with the SRQ has no receive queue of its own; the SRQ
// cannot be closed while the QP uses it (the kernel's EBUSY), then can;
// Close is idempotent; the limit event names the SRQ.
func TestSRQQPRXE(t *testing.T) {
	d, s := newSRQBed(t)
	pd := d.qp.PD()
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: d.cq, RecvCQ: d.cq, SRQ: s,
		Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if qp.SRQ() != s || qp.rxe.hasRQ || d.qp.SRQ() != nil {
		t.Errorf("QP's SRQ %p, has a receive queue %v", qp.SRQ(), qp.rxe.hasRQ)
	}
	_, err = qp.PostRecv([]RecvWR{{ID: 1}})
	wantErrno(t, err, syscall.EINVAL)

	d.v.PostAsyncEvent(uint32(EventSRQLimitReached), s.uh)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := d.c.AsyncEvent(ctx)
	if err != nil || e.Type != EventSRQLimitReached || e.SRQ != s || e.QP != nil {
		t.Errorf("AsyncEvent = %v, %v", e, err)
	}
	if e.String() != "SRQ_LIMIT_REACHED on SRQ "+strconv.Itoa(int(s.Num())) {
		t.Errorf("event string %q", e.String())
	}

	wantErrno(t, s.Close(), syscall.EBUSY)
	if _, err := s.PostRecv([]RecvWR{{ID: 1}}); err != nil {
		t.Errorf("PostRecv after a refused Close: %v", err)
	}
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.PostRecv(nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("PostRecv after Close: %v", err)
	}
	if _, err := s.Query(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Query after Close: %v", err)
	}
	if _, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: d.cq, RecvCQ: d.cq, SRQ: s, Cap: rcCap()}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("CreateQP with a closed SRQ: %v", err)
	}
}

// The Context's Close destroys QPs before the SRQs they use.
func TestSRQContextClose(t *testing.T) {
	d, s := newSRQBed(t)
	if _, err := d.qp.PD().CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: d.cq, RecvCQ: d.cq, SRQ: s, Cap: rcCap()}); err != nil {
		t.Fatal(err)
	}
	if err := d.c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("SRQ Close after the Context's: %v", err)
	}
}

func TestSRQAllocs(t *testing.T) {
	d, s := newSRQBed(t)
	s0, _ := d.mr.SGE(0, 64)
	wrs := []RecvWR{{ID: 1, SGL: []SGE{s0}}, {ID: 2, SGL: []SGE{s0}}}
	r := &s.rxe.rq
	if n := testing.AllocsPerRun(200, func() {
		if _, err := s.PostRecv(wrs); err != nil {
			t.Fatal(err)
		}
		consume(r)
	}); n != 0 {
		t.Errorf("SRQ.PostRecv allocates %.1f times", n)
	}
}

func TestSRQNil(t *testing.T) {
	var s *SRQ
	if s.Num() != 0 || s.Handle() != 0 || s.PD() != nil || s.Context() != nil {
		t.Error("nil SRQ accessors")
	}
	for _, err := range []error{s.Close(), s.Modify(&SRQAttr{}, SRQAttrLimit)} {
		wantErrno(t, err, syscall.EINVAL)
	}
	if _, err := s.PostRecv(nil); !errors.Is(err, syscall.EINVAL) {
		t.Error(err)
	}
	if _, err := s.Query(); !errors.Is(err, syscall.EINVAL) {
		t.Error(err)
	}
	var pd *PD
	if _, err := pd.CreateSRQ(SRQAttr{MaxWR: 1}); !errors.Is(err, syscall.EINVAL) {
		t.Error(err)
	}
	var qp *QP
	if qp.SRQ() != nil {
		t.Error("nil QP's SRQ")
	}
}

// The kernel's size checks (rxe_srq_chk_attr).
func TestSRQCreateErrors(t *testing.T) {
	d := newDPBed(t)
	pd := d.qp.PD()
	for _, a := range []SRQAttr{{MaxWR: 0, MaxSGE: 1}, {MaxWR: 1 << 21, MaxSGE: 1}, {MaxWR: 4, MaxSGE: 28}} {
		if _, err := pd.CreateSRQ(a); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("CreateSRQ(%+v): %v", a, err)
		}
	}
}

// Posts from several goroutines, a resize and a Close racing them: every
// post either lands or fails with ENOMEM or os.ErrClosed, nothing
// crashes, and the race detector (make race) sees the SRQ's locks order
// it all.
func TestSRQConcurrent(t *testing.T) {
	d, s := newSRQBed(t)
	s0, _ := d.mr.SGE(0, 64)
	stop := make(chan struct{})
	errc := make(chan error, 8)
	for g := 0; g < 4; g++ {
		go func() {
			wrs := []RecvWR{{ID: 1, SGL: []SGE{s0}}}
			for {
				select {
				case <-stop:
					errc <- nil
					return
				default:
				}
				_, err := s.PostRecv(wrs)
				switch {
				case err == nil, errors.Is(err, syscall.ENOMEM):
				case errors.Is(err, os.ErrClosed):
					errc <- nil
					return
				default:
					errc <- err
					return
				}
				s.mu.RLock()
				if x := s.rxe; x != nil && !s.destroyed.Load() {
					x.mu.Lock()
					if x.mapped {
						consume(&x.rq)
					}
					x.mu.Unlock()
				}
				s.mu.RUnlock()
			}
		}()
	}
	for i := 0; i < 20; i++ {
		if err := s.Modify(&SRQAttr{MaxWR: uint32(8 + i)}, SRQAttrMaxWR); err != nil {
			t.Error(err)
		}
		if _, err := s.Query(); err != nil {
			t.Error(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	close(stop)
	for g := 0; g < 4; g++ {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}
