//go:build integration

package uverbs

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMSRQ: an SRQ of rxe1 shared by two RC QPs, each connected to a QP
// of rxe0. Messages from both peers land in the SRQ's receives in the
// order they were posted, each completion naming the QP it arrived on; the
// limit event arrives on the async event stream naming the SRQ and the
// limit reads 0 after it (rxe_resp.c get_srq_wqe disarms it); an overrun
// is ENOMEM at the first request past the queue's size, too many SGEs
// EINVAL; a resize keeps what was posted; Close is EBUSY while a QP uses
// the SRQ.
func TestVMSRQ(t *testing.T) {
	vmtest.Require(t)
	c0, c1 := vmOpen(t, vmtest.Dev0), vmOpen(t, vmtest.Dev1)
	g0, g1 := portGID(t, c0), portGID(t, c1)
	pd0, err := c0.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	pd1, err := c1.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq0, err := c0.CreateCQ(CQAttr{CQE: 64})
	if err != nil {
		t.Fatal(err)
	}
	cq1, err := c1.CreateCQ(CQAttr{CQE: 64})
	if err != nil {
		t.Fatal(err)
	}
	mr0, err := pd0.AllocMR(1<<16, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	mr1, err := pd1.AllocMR(1<<16, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	srq, err := pd1.CreateSRQ(SRQAttr{MaxWR: 16, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, err := srq.Query()
	if err != nil || a.MaxWR < 16 || a.MaxSGE < 1 || a.Limit != 0 {
		t.Fatalf("Query = %+v, %v", a, err)
	}
	t.Logf("SRQ %d on %s: %+v", srq.Num(), vmtest.Dev1, a)
	if srq.Num() == 0 {
		t.Error("rxe gave no srq_num")
	}
	var senders, receivers [2]*QP
	for i := range senders {
		if senders[i], err = pd0.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq0, RecvCQ: cq0,
			Cap: QPCap{MaxSendWR: 16, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
			t.Fatal(err)
		}
		if receivers[i], err = pd1.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq1, RecvCQ: cq1, SRQ: srq,
			Cap: QPCap{MaxSendWR: 4, MaxSendSGE: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range senders {
		connectRC(t, senders[i], receivers[i], g0.GID, g1.GID)
	}
	if _, err := receivers[0].PostRecv([]RecvWR{{ID: 1}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("PostRecv on a QP with an SRQ: %v", err)
	}

	// Eight receives; the limit armed at 4 fires when the fifth is taken.
	const size = 256
	recvs := make([]RecvWR, 8)
	for i := range recvs {
		recvs[i] = RecvWR{ID: uint64(100 + i), SGL: []SGE{sge(t, mr1, i*size, size)}}
	}
	if n, err := srq.PostRecv(recvs); n != 8 || err != nil {
		t.Fatalf("SRQ PostRecv = %d, %v", n, err)
	}
	if err := srq.Modify(&SRQAttr{Limit: 4}, SRQAttrLimit); err != nil {
		t.Fatal(err)
	}
	if a, _ := srq.Query(); a.Limit != 4 {
		t.Errorf("limit %d after arming it at 4", a.Limit)
	}
	// Six messages, alternately from the two senders.
	b0 := mr0.Buf()
	for m := 0; m < 6; m++ {
		fill(b0[m*size:(m+1)*size], byte(m+1))
		s := senders[m%2]
		if _, err := s.PostSend([]SendWR{{ID: uint64(m), Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{sge(t, mr0, m*size, 100+m)}}}); err != nil {
			t.Fatal(err)
		}
		if w := poll1(t, cq0); w.ID != uint64(m) || w.QPNum != s.Num() {
			t.Fatalf("send %d: %+v", m, w)
		}
		w := poll1(t, cq1)
		if w.ID != uint64(100+m) || w.Opcode != WCRecv || w.ByteLen != uint32(100+m) || w.QPNum != receivers[m%2].Num() {
			t.Errorf("receive %d: %+v (want ID %d on QP %#x)", m, w, 100+m, receivers[m%2].Num())
		}
		if !bytes.Equal(mr1.Buf()[m*size:m*size+100+m], b0[m*size:m*size+100+m]) {
			t.Errorf("message %d: the bytes differ", m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		e, err := c1.AsyncEvent(ctx)
		if err != nil {
			t.Fatalf("waiting for the SRQ limit event: %v", err)
		}
		t.Logf("async event: %v", e)
		if e.Type == EventSRQLimitReached {
			if e.SRQ != srq {
				t.Errorf("limit event %v names SRQ %p, want %p", e, e.SRQ, srq)
			}
			break
		}
	}
	if a, _ := srq.Query(); a.Limit != 0 {
		t.Errorf("limit %d after the event, want 0 (disarmed)", a.Limit)
	}

	// Too many SGEs; the overrun: 2 receives are left, the queue holds
	// a.MaxWR.
	if _, err := srq.PostRecv([]RecvWR{{SGL: []SGE{sge(t, mr1, 0, 8), sge(t, mr1, 8, 8)}}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a receive of 2 SGEs into an SRQ of max_sge 1: %v", err)
	}
	more := make([]RecvWR, a.MaxWR)
	for i := range more {
		more[i] = RecvWR{ID: uint64(200 + i), SGL: []SGE{sge(t, mr1, 4096, size)}}
	}
	n, err := srq.PostRecv(more)
	if n != int(a.MaxWR)-2 || !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("posting %d into an SRQ of %d holding 2: %d, %v", len(more), a.MaxWR, n, err)
	}

	// A resize keeps the posted receives: the next message takes the
	// seventh of the first eight.
	if err := srq.Modify(&SRQAttr{MaxWR: 2 * a.MaxWR}, SRQAttrMaxWR); err != nil {
		t.Fatal(err)
	}
	if a2, _ := srq.Query(); a2.MaxWR < 2*a.MaxWR {
		t.Errorf("max_wr %d after resizing to %d", a2.MaxWR, 2*a.MaxWR)
	}
	if n, err := srq.PostRecv(more[:2]); n != 2 || err != nil {
		t.Errorf("posting into the resized SRQ: %d, %v", n, err)
	}
	if _, err := senders[1].PostSend([]SendWR{{ID: 9, Opcode: WRSend, Flags: SendSignaled, Inline: []byte("after the resize")}}); err != nil {
		t.Fatal(err)
	}
	poll1(t, cq0)
	if w := poll1(t, cq1); w.ID != 106 || w.QPNum != receivers[1].Num() || string(mr1.Buf()[6*size:6*size+16]) != "after the resize" {
		t.Errorf("receive after the resize: %+v, %q", w, mr1.Buf()[6*size:6*size+16])
	}

	if err := srq.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Close of an SRQ in use: %v", err)
	}
	for _, qp := range receivers {
		if err := qp.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := srq.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srq.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
