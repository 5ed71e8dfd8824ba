package uverbs

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
)

func TestRegMR(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	before := sys.Mapped()
	mr, err := pd.AllocMR(5000, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	if mr.Len() != 2*sys.PageSize || len(mr.Buf()) != mr.Len() || mr.Addr() != addrOf(mr.Buf()) || sys.Mapped()-before != int64(mr.Len()) {
		t.Errorf("MR of %d bytes at %#x, %d mapped", mr.Len(), mr.Addr(), sys.Mapped()-before)
	}
	if mr.LKey() == 0 || mr.RKey() != mr.LKey() || mr.Access() != AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead {
		t.Errorf("keys %#x %#x, access %#x", mr.LKey(), mr.RKey(), mr.Access())
	}
	if s, ok := mr.SGE(100, 200); !ok || s.Addr != mr.Addr()+100 || s.Length != 200 || s.LKey != mr.LKey() {
		t.Errorf("SGE %+v %v", s, ok)
	}
	if _, ok := mr.SGE(mr.Len()-1, 2); ok {
		t.Error("SGE past the end")
	}
	mr.Buf()[0] = 0x7b // the memory is writable

	// A part of memory the library mapped registers again, without owning it.
	sub, err := pd.RegMR(mr.Buf()[4096:], AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if sub.RKey() != 0 || sub.Addr() != mr.Addr()+4096 {
		t.Errorf("local-only MR: rkey %#x, addr %#x", sub.RKey(), sub.Addr())
	}

	// Go heap memory is refused, with the reason.
	heap := make([]byte, 4096)
	_, err = pd.RegMR(heap, AccessLocalWrite)
	wantErrno(t, err, syscall.EINVAL)
	if err == nil || !strings.Contains(err.Error(), "Go heap") {
		t.Errorf("RegMR(heap): %v", err)
	}
	var stack [64]byte
	_, err = pd.RegMR(stack[:], AccessLocalWrite)
	wantErrno(t, err, syscall.EINVAL)
	// Reaching past the mapping is refused too.
	_, err = pd.RegMR(unsafe.Slice(&mr.Buf()[0], mr.Len()+1), AccessLocalWrite)
	wantErrno(t, err, syscall.EINVAL)
	_, err = pd.RegMR(nil, AccessLocalWrite)
	wantErrno(t, err, syscall.EINVAL)
	_, err = pd.AllocMR(0, AccessLocalWrite)
	wantErrno(t, err, syscall.EINVAL)
	_, err = pd.AllocMR(4096, AccessRemoteWrite)
	wantErrno(t, err, syscall.EINVAL)

	// The PD is busy while MRs use it.
	wantErrno(t, pd.Close(), syscall.EBUSY)
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mr.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if sys.Mapped() != before {
		t.Errorf("%d bytes still mapped after Close", sys.Mapped()-before)
	}

	// Context.Close deregisters what is left, before the PD.
	if _, err := pd.AllocMR(1, AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	log := strings.Join(b.devs["rxe0"].Log(), "; ")
	if i, j := strings.LastIndex(log, "dereg mr"), strings.LastIndex(log, "dealloc pd"); i < 0 || j < i {
		t.Errorf("teardown order: %s", log)
	}
	if sys.Mapped() != before-int64(0) && sys.Mapped() > before {
		t.Errorf("%d bytes still mapped after the context's Close", sys.Mapped()-before)
	}
	if _, err := pd.AllocMR(1, AccessLocalWrite); !errors.Is(err, os.ErrClosed) {
		t.Errorf("AllocMR after Close: %v", err)
	}
}

// dpBed is an RC QP with one CQ on the fake rxe, and an MR.
type dpBed struct {
	v  *fakekernel.Verbs
	c  *Context
	cq *CQ
	qp *QP
	mr *MR
}

func newDPBed(t testing.TB) *dpBed {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	pd, cq := pdAndCQ(t, c)
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: QPCap{MaxSendWR: 3, MaxRecvWR: 3, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 32}})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.AllocMR(4096, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	return &dpBed{v: b.devs["rxe0"], c: c, cq: cq, qp: qp, mr: mr}
}

// consume plays the kernel: it takes everything posted to r.
func consume(r *rxeRing) {
	atomic.StoreUint32(&r.hdr.ConsumerIndex, atomic.LoadUint32(&r.hdr.ProducerIndex))
}

func TestPostSendRXE(t *testing.T) {
	d := newDPBed(t)
	x := d.qp.rxe
	if x == nil || !x.hasRQ {
		t.Fatal("no rxe data path")
	}
	k := d.c.fd // the fake's doorbell count lives on its Kernel
	_ = k
	s0, _ := d.mr.SGE(0, 100)
	s1, _ := d.mr.SGE(200, 50)
	wrs := []SendWR{
		{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{s0, s1}},
		{ID: 2, Opcode: WRRDMAWriteWithImm, Imm: 0x01020304, SGL: []SGE{s0}, RemoteAddr: 0xabc000, RKey: 0x77},
		{ID: 3, Opcode: WRSendWithImm, Imm: 5, Inline: []byte("hello")},
	}
	n, err := d.qp.PostSend(wrs)
	if err != nil || n != 3 {
		t.Fatalf("PostSend: %d, %v", n, err)
	}
	r := &x.sq
	if got := atomic.LoadUint32(&r.hdr.ProducerIndex); got != 3 {
		t.Errorf("producer %d", got)
	}
	w0 := (*abi.RxeSendWqe)(r.slot(0))
	if w0.Wr.WrId != 1 || w0.Wr.Opcode != abi.IB_UVERBS_WR_SEND || w0.Wr.SendFlags != 2 || w0.Dma.Length != 150 ||
		w0.Dma.Resid != 150 || w0.Dma.NumSge != 2 || w0.Ssn != 0 {
		t.Errorf("WQE 0: %+v", *w0)
	}
	sg := unsafe.Slice((*abi.RxeSge)(unsafe.Add(r.slot(0), 208)), 2)
	if sg[0] != (abi.RxeSge{Addr: s0.Addr, Length: 100, Lkey: d.mr.LKey()}) || sg[1].Addr != s1.Addr || sg[1].Length != 50 {
		t.Errorf("SGEs %+v", sg)
	}
	w1 := (*abi.RxeSendWqe)(r.slot(1))
	imm := unsafe.Slice((*byte)(unsafe.Pointer(&w1.Wr.Ex)), 4)
	if string(imm) != "\x01\x02\x03\x04" || w1.Iova != 0xabc000 || w1.Wr.Wr.RemoteQpn != 0xabc000 || w1.Wr.Wr.PkeyIndex != 0x77 || w1.Ssn != 1 {
		t.Errorf("WQE 1: imm % x, %+v", imm, *w1)
	}
	w2 := (*abi.RxeSendWqe)(r.slot(2))
	if w2.Wr.SendFlags != 8 || w2.Dma.Length != 5 || string(unsafe.Slice((*byte)(unsafe.Add(r.slot(2), 208)), 5)) != "hello" || w2.Ssn != 2 {
		t.Errorf("WQE 2 (inline): %+v", *w2)
	}
	if got := d.c.dev; got.Name != "rxe0" {
		t.Fatal(got)
	}

	// Full: the kernel has not consumed anything (4 slots, 3 usable).
	n, err = d.qp.PostSend(wrs[:1])
	if n != 0 {
		t.Errorf("posted %d to a full queue", n)
	}
	wantErrno(t, err, syscall.ENOMEM)
	consume(r)

	bad := []struct {
		wr   SendWR
		want syscall.Errno
	}{
		{SendWR{Opcode: WRSend, SGL: []SGE{s0, s0, s0}}, syscall.EINVAL},
		{SendWR{Opcode: WRSend, Inline: make([]byte, 33)}, syscall.EINVAL},
		{SendWR{Opcode: WRRDMARead, Inline: []byte{1}}, syscall.EINVAL},
		{SendWR{Opcode: abi.IB_UVERBS_WR_ATOMIC_CMP_AND_SWP}, syscall.EINVAL},
		{SendWR{Opcode: WRSend, Flags: 1 << 9}, syscall.EINVAL},
	}
	for _, b := range bad {
		n, err := d.qp.PostSend([]SendWR{wrs[0], b.wr})
		if n != 1 {
			t.Errorf("%+v: posted %d, want 1 (the good one)", b.wr, n)
		}
		wantErrno(t, err, b.want)
		consume(r)
	}

	// Receives: no doorbell, the WQE in the receive queue.
	rn, err := d.qp.PostRecv([]RecvWR{{ID: 9, SGL: []SGE{s0, s1}}})
	if err != nil || rn != 1 {
		t.Fatalf("PostRecv: %d, %v", rn, err)
	}
	rw := (*abi.RxeRecvWqe)(x.rq.slot(0))
	rsg := unsafe.Slice((*abi.RxeSge)(unsafe.Add(x.rq.slot(0), 40)), 2)
	if rw.WrId != 9 || rw.Dma.Length != 150 || rw.Dma.NumSge != 2 || rsg[1].Addr != s1.Addr || atomic.LoadUint32(&x.rq.hdr.ProducerIndex) != 1 {
		t.Errorf("receive WQE %+v, SGEs %+v", *rw, rsg)
	}
	_, err = d.qp.PostRecv([]RecvWR{{SGL: []SGE{s0, s0, s0}}})
	wantErrno(t, err, syscall.EINVAL)

	if err := d.qp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.qp.PostSend(wrs[:1]); !errors.Is(err, os.ErrClosed) {
		t.Errorf("PostSend after Close: %v", err)
	}
	if _, err := d.qp.PostRecv(nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("PostRecv after Close: %v", err)
	}
}

// pushCQE plays the kernel's rxe_cq_post.
func pushCQE(r *rxeRing, wc abi.IbUverbsWc) bool {
	prod := r.hdr.ProducerIndex
	if (prod+1)&r.mask == atomic.LoadUint32(&r.hdr.ConsumerIndex) {
		return false
	}
	*(*abi.IbUverbsWc)(r.slot(prod)) = wc
	atomic.StoreUint32(&r.hdr.ProducerIndex, (prod+1)&r.mask)
	return true
}

func TestPollRXE(t *testing.T) {
	d := newDPBed(t)
	var wc [4]WC
	if n, err := d.cq.Poll(wc[:]); n != 0 || err != nil {
		t.Fatalf("empty CQ: %d, %v", n, err)
	}
	r := &d.cq.ring
	var imm abi.IbUverbsWc
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&imm.Ex)), 4), "\x00\x00\x01\x02")
	for i := 0; i < 6; i++ {
		pushCQE(r, abi.IbUverbsWc{WrId: uint64(i), Status: uint32(i % 2 * 5), Opcode: 128, ByteLen: 4096,
			Ex: imm.Ex, QpNum: 17, WcFlags: 2, PortNum: 1})
	}
	n, err := d.cq.Poll(wc[:])
	if err != nil || n != 4 {
		t.Fatalf("Poll: %d, %v", n, err)
	}
	for i, w := range wc[:n] {
		if w.ID != uint64(i) || w.Opcode != WCRecv || w.ByteLen != 4096 || w.Imm != 0x102 || w.QPNum != 17 || w.Flags != WCWithImm || w.Port != 1 {
			t.Errorf("wc %d: %+v", i, w)
		}
	}
	if wc[1].Status != WCWRFlushErr || wc[1].Status.String() != "Work Request Flushed Error" || wc[0].Status != WCSuccess {
		t.Errorf("statuses %v, %v", wc[0].Status, wc[1].Status)
	}
	if n, _ := d.cq.Poll(wc[:]); n != 2 || wc[1].ID != 5 {
		t.Errorf("second Poll: %d, %+v", n, wc[1])
	}
	if got := atomic.LoadUint32(&r.hdr.ConsumerIndex); got != 6&r.mask {
		t.Errorf("consumer %d", got)
	}
	if err := d.qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.cq.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.cq.Poll(wc[:]); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Poll after Close: %v", err)
	}
}

// The data path allocates nothing: PostSend (with its doorbell), PostRecv
// and Poll.
func TestDataPathAllocs(t *testing.T) {
	d := newDPBed(t)
	s, _ := d.mr.SGE(0, 64)
	send := []SendWR{{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{s}}}
	inline := []SendWR{{ID: 2, Opcode: WRSend, Inline: []byte("0123456789")}}
	recv := []RecvWR{{ID: 3, SGL: []SGE{s}}}
	var wc [4]WC
	x := d.qp.rxe
	if a := testing.AllocsPerRun(100, func() {
		if _, err := d.qp.PostSend(send); err != nil {
			t.Fatal(err)
		}
		if _, err := d.qp.PostSend(inline); err != nil {
			t.Fatal(err)
		}
		consume(&x.sq)
	}); a != 0 {
		t.Errorf("PostSend: %v allocations", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		if _, err := d.qp.PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		consume(&x.rq)
	}); a != 0 {
		t.Errorf("PostRecv: %v allocations", a)
	}
	r := &d.cq.ring
	if a := testing.AllocsPerRun(100, func() {
		pushCQE(r, abi.IbUverbsWc{WrId: 1})
		if n, err := d.cq.Poll(wc[:]); n != 1 || err != nil {
			t.Fatal(n, err)
		}
	}); a != 0 {
		t.Errorf("Poll: %v allocations", a)
	}
}

func BenchmarkPostSendFake(b *testing.B) {
	d := newDPBed(b)
	s, _ := d.mr.SGE(0, 64)
	send := []SendWR{{ID: 1, Opcode: WRSend, SGL: []SGE{s}}}
	b.ReportAllocs()
	for b.Loop() {
		d.qp.PostSend(send)
		consume(&d.qp.rxe.sq)
	}
}

func BenchmarkPollFake(b *testing.B) {
	d := newDPBed(b)
	var wc [1]WC
	b.ReportAllocs()
	for b.Loop() {
		pushCQE(&d.cq.ring, abi.IbUverbsWc{WrId: 1})
		d.cq.Poll(wc[:])
	}
}

func BenchmarkPostRecvFake(b *testing.B) {
	d := newDPBed(b)
	s, _ := d.mr.SGE(0, 64)
	recv := []RecvWR{{ID: 3, SGL: []SGE{s}}}
	b.ReportAllocs()
	for b.Loop() {
		d.qp.PostRecv(recv)
		consume(&d.qp.rxe.rq)
	}
}

// Nil QPs and CQs say so rather than fail oddly.
func TestDataPathNil(t *testing.T) {
	var nilQP *QP
	var nilCQ *CQ
	if _, err := nilQP.PostSend(nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil PostSend: %v", err)
	}
	if _, err := nilCQ.Poll(nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil Poll: %v", err)
	}
}

// Posting and polling race with Close: after Close every call fails with
// os.ErrClosed, and none touches the unmapped queues (the race detector
// and a fault would tell).
func TestDataPathCloseRace(t *testing.T) {
	for round := 0; round < 20; round++ {
		d := newDPBed(t)
		s, _ := d.mr.SGE(0, 64)
		stop := make(chan struct{})
		done := make(chan struct{}, 3)
		loop := func(f func() error) {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := f(); errors.Is(err, os.ErrClosed) {
					return
				}
			}
		}
		go loop(func() error {
			_, err := d.qp.PostSend([]SendWR{{Opcode: WRSend, SGL: []SGE{s}}})
			if err == nil {
				d.qp.mu.RLock()
				if !d.qp.destroyed.Load() {
					consume(&d.qp.rxe.sq)
				}
				d.qp.mu.RUnlock()
			}
			return err
		})
		go loop(func() error {
			_, err := d.qp.PostRecv([]RecvWR{{SGL: []SGE{s}}})
			return err
		})
		go loop(func() error {
			_, err := d.cq.Poll(make([]WC, 2))
			return err
		})
		if round%2 == 0 {
			d.qp.Close()
			d.cq.Close()
		}
		if err := d.c.Close(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			<-done
		}
		close(stop)
	}
}

// A UD send carries the address handle's ah_num, the remote QPN and QKey.
func TestPostSendUDRXE(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	pd, cq := pdAndCQ(t, c)
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pd.CreateAH(AHAttr{Port: 1}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("AH without GRH on RoCE: %v", err)
	}
	ah, err := pd.CreateAH(AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{HopLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qp.PostSend([]SendWR{{Opcode: WRSend}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("UD send without AH: %v", err)
	}
	if _, err := qp.PostSend([]SendWR{{Opcode: WRRDMAWrite, AH: ah}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RDMA write on UD: %v", err)
	}
	if _, err := qp.PostSend([]SendWR{{ID: 7, Opcode: WRSend, AH: ah, RemoteQPN: 0x123, RemoteQKey: 0x4567}}); err != nil {
		t.Fatal(err)
	}
	w := (*abi.RxeSendWqe)(qp.rxe.sq.slot(0))
	if w.Wr.WrId != 7 || w.Wr.Wr.RemoteQpn != 0x123 || w.Wr.Wr.RemoteQkey != 0x4567 || w.Wr.Wr.AhNum != ah.num || ah.num == 0 {
		t.Errorf("UD WQE %+v (ah_num %d)", w.Wr, ah.num)
	}
	wantErrno(t, pd.Close(), syscall.EBUSY)
	if err := ah.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ah.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Buf answers nil once the MR is closed, by its Close or its Context's:
// the memory is unmapped then, and a slice to it would fault on use.
func TestMRBufAfterClose(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.AllocMR(100, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := pd.RegMR(mr.Buf()[:64], AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Buf()) != 64 {
		t.Fatalf("RegMR's Buf has %d bytes, want 64", len(sub.Buf()))
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sub.Buf(); got != nil {
		t.Errorf("Buf after Close of a RegMR MR = %d bytes, want nil", len(got))
	}
	if len(mr.Buf()) != sys.PageSize {
		t.Fatalf("a live MR's Buf has %d bytes", len(mr.Buf()))
	}
	if err := mr.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mr.Buf(); got != nil {
		t.Errorf("Buf after Close = %d bytes at %#x, want nil", len(got), addrOf(got))
	}
	left, err := pd.AllocMR(100, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := left.Buf(); got != nil {
		t.Errorf("Buf after the context's Close = %d bytes, want nil", len(got))
	}
}
