package uverbs

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma"
)

// An mlx5 SRQ on the fake device: the buffer and its free list as
// mlx5_alloc_srq_buf leaves them, WQEs as mlx5_post_srq_recv writes them
// (next segment, data segments, MLX5_INVALID_LKEY after a short list),
// the doorbell record's count; two RC QPs receiving through it, each
// completion naming its QP and the WQE wqe_counter names, the WQE freed
// after the tail (mlx5_free_srq_wqe); the overrun's ENOMEM, EINVAL for
// SGEs and a resize; EBUSY while a QP uses it.
func TestMlx5SRQ(t *testing.T) {
	b, c := mlx5Bed(t, nil)
	v := b.devs["mlx5_0"]
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	scq, err := c.CreateCQ(CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	rcq, err := c.CreateCQ(CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.AllocMR(1<<16, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	srq, err := pd.CreateSRQ(SRQAttr{MaxWR: 5, MaxSGE: 2})
	if err != nil {
		t.Fatal(err)
	}
	x := srq.m5
	// 16 + 2 × 16 bytes → 64-byte WQEs, 3 SGEs; roundup_pow_of_two(6).
	if x.max != 8 || x.wqeShift != 6 || x.maxGS != 3 || x.head != 0 || x.tail != 7 || srq.Num() == 0 {
		t.Fatalf("SRQ of %d WQEs of %d bytes, %d SGEs, head %d, tail %d, number %d", x.max, 1<<x.wqeShift, x.maxGS, x.head, x.tail, srq.Num())
	}
	for i := uint32(0); i < 7; i++ {
		if x.next(i) != i+1 {
			t.Errorf("WQE %d links to %d", i, x.next(i))
		}
	}
	if a, err := srq.Query(); err != nil || a.MaxWR != 7 || a.MaxSGE != 3 {
		t.Errorf("Query = %+v, %v", a, err)
	}
	var senders, receivers [2]*QP
	for i := range senders {
		if senders[i], err = pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: scq, RecvCQ: scq, Cap: rcCap()}); err != nil {
			t.Fatal(err)
		}
		if receivers[i], err = pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: rcq, RecvCQ: rcq, SRQ: srq, Cap: rcCap()}); err != nil {
			t.Fatal(err)
		}
		if receivers[i].mlx5.rqCnt != 0 || receivers[i].mlx5.srq != x {
			t.Fatalf("receiver %d: %d receive WQEs of its own", i, receivers[i].mlx5.rqCnt)
		}
		connectRC(t, senders[i], receivers[i], rdma.GID{}, rdma.GID{})
	}
	if _, err := receivers[0].PostRecv([]RecvWR{{ID: 1}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("PostRecv on a QP with an SRQ: %v", err)
	}

	s0 := m5sge(t, mr, 0, 100)
	s1 := m5sge(t, mr, 1000, 50)
	if n, err := srq.PostRecv([]RecvWR{{ID: 10, SGL: []SGE{s0, s1}}, {ID: 11, SGL: []SGE{m5sge(t, mr, 2000, 64)}}}); n != 2 || err != nil {
		t.Fatalf("SRQ PostRecv = %d, %v", n, err)
	}
	be := binary.BigEndian
	w := unsafe.Slice((*byte)(x.wqe(0)), 64)
	if be.Uint16(w[2:]) != 1 || be.Uint32(w[16:]) != 100 || be.Uint32(w[20:]) != mr.LKey() || be.Uint64(w[24:]) != s0.Addr ||
		be.Uint32(w[32:]) != 50 || be.Uint64(w[40:]) != s1.Addr || be.Uint32(w[48:]) != 0 || be.Uint32(w[52:]) != mlx5InvalidLKey {
		t.Errorf("WQE 0: % x", w)
	}
	if got := be32(*x.dbrec); got != 2 || x.head != 2 {
		t.Errorf("doorbell record %d, head %d after two posts", got, x.head)
	}

	// The second message first: it takes WQE 0, the first takes 1.
	copy(mr.Buf()[8192:], "to the second receiver")
	copy(mr.Buf()[9000:], "to the first")
	for i, m := range []struct {
		s   *QP
		off int
		n   int
	}{{senders[1], 8192, 22}, {senders[0], 9000, 12}} {
		if _, err := m.s.PostSend([]SendWR{{ID: uint64(i), Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{m5sge(t, mr, m.off, m.n)}}}); err != nil {
			t.Fatal(err)
		}
		m5Run(t, v, 1)
	}
	wc := make([]WC, 4)
	if n, err := rcq.Poll(wc); n != 2 || err != nil {
		t.Fatalf("receive Poll = %d, %v", n, err)
	}
	if wc[0].ID != 10 || wc[0].QPNum != receivers[1].Num() || wc[0].ByteLen != 22 || wc[1].ID != 11 || wc[1].QPNum != receivers[0].Num() || wc[1].ByteLen != 12 {
		t.Errorf("receive completions %+v", wc[:2])
	}
	if string(mr.Buf()[:22]) != "to the second receiver" || string(mr.Buf()[2000:2012]) != "to the first" {
		t.Errorf("received %q, %q", mr.Buf()[:22], mr.Buf()[2000:2012])
	}
	// mlx5_free_srq_wqe: 7 → 0 → 1, the new tail.
	if x.tail != 1 || x.next(7) != 0 || x.next(0) != 1 {
		t.Errorf("free list after two completions: tail %d, 7 → %d, 0 → %d", x.tail, x.next(7), x.next(0))
	}
	if n, _ := scq.Poll(wc); n != 2 {
		t.Errorf("%d send completions", n)
	}

	// Full: head == tail after 7 outstanding.
	many := make([]RecvWR, 9)
	for i := range many {
		many[i] = RecvWR{ID: uint64(100 + i), SGL: []SGE{m5sge(t, mr, 4096, 64)}}
	}
	n, err := srq.PostRecv(many)
	if n != 7 || !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("posting 9 into an SRQ of 7: %d, %v", n, err)
	}
	if _, err := srq.PostRecv([]RecvWR{{SGL: make([]SGE, 4)}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("4 SGEs: %v", err)
	}
	wantErrno(t, srq.Modify(&SRQAttr{MaxWR: 20}, SRQAttrMaxWR), syscall.EINVAL)
	if err := srq.Modify(&SRQAttr{Limit: 3}, SRQAttrLimit); err != nil {
		t.Error(err)
	}
	if a, _ := srq.Query(); a.Limit != 3 {
		t.Errorf("limit %d", a.Limit)
	}
	wantErrno(t, srq.Close(), syscall.EBUSY)
	for _, qp := range receivers {
		if err := qp.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := srq.Close(); err != nil {
		t.Fatal(err)
	}
}

// libmlx5's checks before the call (mlx5_create_srq).
func TestMlx5SRQErrors(t *testing.T) {
	_, c := mlx5Bed(t, nil)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []SRQAttr{{MaxWR: 40000, MaxSGE: 1}, {MaxWR: 4, MaxSGE: 33}} {
		if _, err := pd.CreateSRQ(a); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("CreateSRQ(%+v): %v", a, err)
		}
	}
}

func TestMlx5SRQAllocs(t *testing.T) {
	_, c := mlx5Bed(t, nil)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.AllocMR(4096, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	srq, err := pd.CreateSRQ(SRQAttr{MaxWR: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	x := srq.m5
	wrs := []RecvWR{{ID: 1, SGL: []SGE{m5sge(t, mr, 0, 64)}}}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := srq.PostRecv(wrs); err != nil {
			t.Fatal(err)
		}
		x.complete(x.head - 1) // the device took it: free it again
	}); n != 0 {
		t.Errorf("mlx5 SRQ.PostRecv allocates %.1f times", n)
	}
}
