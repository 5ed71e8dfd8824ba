//go:build integration

package uverbs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/integration/vmtest"
)

// vmEnd is one side of an RC connection between rxe0 and rxe1.
type vmEnd struct {
	c  *Context
	ch *CompChannel
	cq *CQ
	qp *QP
	mr *MR
}

func vmConnect(t *testing.T) [2]*vmEnd {
	t.Helper()
	var e [2]*vmEnd
	var gids [2]rdma.GID
	for i, dev := range []string{vmtest.Dev0, vmtest.Dev1} {
		c := vmOpen(t, dev)
		ch, err := c.CreateCompChannel()
		if err != nil {
			t.Fatal(err)
		}
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(CQAttr{CQE: 64, Channel: ch})
		if err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}})
		if err != nil {
			t.Fatal(err)
		}
		mr, err := pd.AllocMR(1<<16, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		gids[i] = portGID(t, c).GID
		e[i] = &vmEnd{c: c, ch: ch, cq: cq, qp: qp, mr: mr}
	}
	connectRC(t, e[0].qp, e[1].qp, gids[0], gids[1])
	return e
}

// poll1 polls until one completion arrives (30 s at most: the guest is
// emulated and shares its host).
func poll1(t *testing.T, cq *CQ) WC {
	t.Helper()
	var wc [1]WC
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n, err := cq.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			if wc[0].Status != WCSuccess {
				t.Fatalf("completion %+v: %v", wc[0], wc[0].Status)
			}
			return wc[0]
		}
		time.Sleep(50 * time.Microsecond)
	}
	t.Fatal("no completion within 30 s")
	return WC{}
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*13)
	}
}

func sge(t *testing.T, mr *MR, off, n int) SGE {
	s, ok := mr.SGE(off, n)
	if !ok {
		t.Fatalf("SGE %d+%d outside the MR", off, n)
	}
	return s
}

// TestVMDataPath runs every operation PostSend posts between rxe0 and
// rxe1 and checks the bytes that arrive and the completions.
func TestVMDataPath(t *testing.T) {
	vmtest.Require(t)
	e := vmConnect(t)
	a, b := e[0], e[1]
	ab, bb := a.mr.Buf(), b.mr.Buf()

	// Send gathered from two SGEs, scattered into three.
	fill(ab[0:1000], 1)
	fill(ab[5000:5500], 2)
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 10, SGL: []SGE{sge(t, b.mr, 0, 700), sge(t, b.mr, 8192, 500), sge(t, b.mr, 20000, 4096)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]SendWR{{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{sge(t, a.mr, 0, 1000), sge(t, a.mr, 5000, 500)}}}); err != nil {
		t.Fatal(err)
	}
	if w := poll1(t, a.cq); w.ID != 1 || w.Opcode != WCSend {
		t.Errorf("send completion %+v", w)
	}
	w := poll1(t, b.cq)
	if w.ID != 10 || w.Opcode != WCRecv || w.ByteLen != 1500 || w.QPNum != b.qp.Num() || w.Flags&WCWithImm != 0 {
		t.Errorf("receive completion %+v", w)
	}
	want := append(append([]byte(nil), ab[0:1000]...), ab[5000:5500]...)
	got := append(append(append([]byte(nil), bb[0:700]...), bb[8192:8692]...), bb[20000:20300]...)
	if !bytes.Equal(got, want) {
		t.Error("the scattered bytes differ from the gathered ones")
	}

	// Send with immediate data, inline (the source is Go memory).
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 11, SGL: []SGE{sge(t, b.mr, 30000, 64)}}}); err != nil {
		t.Fatal(err)
	}
	msg := []byte("inline from the Go heap, copied into the WQE")
	if _, err := a.qp.PostSend([]SendWR{{ID: 2, Opcode: WRSendWithImm, Flags: SendSignaled, Imm: 0xdeadbeef, Inline: msg}}); err != nil {
		t.Fatal(err)
	}
	poll1(t, a.cq)
	w = poll1(t, b.cq)
	if w.ID != 11 || w.Imm != 0xdeadbeef || w.Flags&WCWithImm == 0 || w.ByteLen != uint32(len(msg)) || !bytes.Equal(bb[30000:30000+len(msg)], msg) {
		t.Errorf("inline send with imm: %+v, %q", w, bb[30000:30000+len(msg)])
	}

	// RDMA write: no receive consumed.
	fill(ab[10000:14096], 3)
	if _, err := a.qp.PostSend([]SendWR{{ID: 3, Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{sge(t, a.mr, 10000, 4096)},
		RemoteAddr: b.mr.Addr() + 40000, RKey: b.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if w := poll1(t, a.cq); w.ID != 3 || w.Opcode != WCRDMAWrite {
		t.Errorf("RDMA write completion %+v", w)
	}
	if !bytes.Equal(bb[40000:44096], ab[10000:14096]) {
		t.Error("RDMA write: the bytes differ")
	}

	// RDMA write with immediate: consumes a receive, which gets the imm.
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 12}}); err != nil {
		t.Fatal(err)
	}
	fill(ab[14096:14196], 4)
	if _, err := a.qp.PostSend([]SendWR{{ID: 4, Opcode: WRRDMAWriteWithImm, Flags: SendSignaled, Imm: 7, SGL: []SGE{sge(t, a.mr, 14096, 100)},
		RemoteAddr: b.mr.Addr() + 50000, RKey: b.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	poll1(t, a.cq)
	w = poll1(t, b.cq)
	if w.ID != 12 || w.Opcode != WCRecvRDMAWithImm || w.Imm != 7 || !bytes.Equal(bb[50000:50100], ab[14096:14196]) {
		t.Errorf("RDMA write with imm: %+v", w)
	}

	// RDMA read.
	fill(bb[60000:62000], 5)
	if _, err := a.qp.PostSend([]SendWR{{ID: 5, Opcode: WRRDMARead, Flags: SendSignaled, SGL: []SGE{sge(t, a.mr, 20000, 2000)},
		RemoteAddr: b.mr.Addr() + 60000, RKey: b.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if w := poll1(t, a.cq); w.ID != 5 || w.Opcode != WCRDMARead || w.ByteLen != 2000 {
		t.Errorf("RDMA read completion %+v", w)
	}
	if !bytes.Equal(ab[20000:22000], bb[60000:62000]) {
		t.Error("RDMA read: the bytes differ")
	}

	// An unsignaled send makes no completion on the sender.
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 13, SGL: []SGE{sge(t, b.mr, 0, 16)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]SendWR{{ID: 6, Opcode: WRSend, Inline: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if w := poll1(t, b.cq); w.ID != 13 {
		t.Errorf("receive %+v", w)
	}
	var wc [4]WC
	if n, _ := a.cq.Poll(wc[:]); n != 0 {
		t.Errorf("unsignaled send completed: %+v", wc[:n])
	}
}

// TestVMCompletionEvents: GetEvent returns the CQ after a completion,
// honours its context, and is woken by the Context's Close.
func TestVMCompletionEvents(t *testing.T) {
	vmtest.Require(t)
	e := vmConnect(t)
	a, b := e[0], e[1]
	if err := b.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := b.ch.GetEvent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetEvent with nothing to wait for: %v", err)
	}
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{sge(t, b.mr, 0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]SendWR{{ID: 1, Opcode: WRSend, Inline: []byte("wake up")}}); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	cq, err := b.ch.GetEvent(ctx2)
	if err != nil || cq != b.cq {
		t.Fatalf("GetEvent: %v, %v", cq, err)
	}
	if w := poll1(t, b.cq); w.ID != 1 || string(b.mr.Buf()[:7]) != "wake up" {
		t.Errorf("completion %+v", w)
	}
	if err := b.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := b.ch.GetEvent(context.Background()); done <- err }()
	time.Sleep(100 * time.Millisecond)
	if err := b.c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("GetEvent woken by Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not wake GetEvent")
	}
	if _, err := b.cq.Poll(make([]WC, 1)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Poll after Close: %v", err)
	}
}

// TestVMRegMRKeys: the keys rxe gives, and the kernel's refusal of remote
// write without local write (checked before the call here).
func TestVMRegMRKeys(t *testing.T) {
	vmtest.Require(t)
	c := vmOpen(t, vmtest.Dev0)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	local, err := pd.AllocMR(1<<20, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := pd.RegMR(local.Buf()[4096:], AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	if local.LKey() == 0 || remote.RKey() == 0 || remote.LKey() == local.LKey() {
		t.Errorf("keys: local %#x/%#x, remote %#x/%#x", local.LKey(), local.RKey(), remote.LKey(), remote.RKey())
	}
	t.Logf("kernel %s: local-only MR lkey %#x rkey %#x; remote MR lkey %#x rkey %#x",
		vmtest.Kernel(), local.LKey(), local.RKey(), remote.LKey(), remote.RKey())
	if _, err := pd.RegMR(make([]byte, 4096), AccessLocalWrite); err == nil {
		t.Error("Go heap memory registered")
	}
	if err := remote.Close(); err != nil {
		t.Fatal(err)
	}
	if err := local.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVMUD: a UD send with an address handle from rxe0 to rxe1, inline and
// from an SGE list, with immediate data; the receive starts with the
// 40-byte GRH.
func TestVMUD(t *testing.T) {
	vmtest.Require(t)
	const qkey = 0x11111111
	type end struct {
		pd *PD
		cq *CQ
		qp *QP
		mr *MR
		g  rdma.GID
	}
	var e [2]end
	for i, dev := range []string{vmtest.Dev0, vmtest.Dev1} {
		c := vmOpen(t, dev)
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(CQAttr{CQE: 16})
		if err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq,
			Cap: QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInlineData: 64}})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []struct {
			a QPAttr
			m QPAttrMask
		}{
			{QPAttr{State: QPStateInit, Port: 1, QKey: qkey}, QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
			{QPAttr{State: QPStateRTR}, QPAttrState},
			{QPAttr{State: QPStateRTS, SQPSN: 1}, QPAttrState | QPAttrSQPSN},
		} {
			if err := qp.Modify(&s.a, s.m); err != nil {
				t.Fatalf("UD to %v: %v", s.a.State, err)
			}
		}
		mr, err := pd.AllocMR(1<<14, AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		e[i] = end{pd, cq, qp, mr, portGID(t, c).GID}
	}
	a, b := e[0], e[1]
	ah, err := a.pd.CreateAH(AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: b.g, HopLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{sge(t, b.mr, 0, 40+512)}}, {ID: 2, SGL: []SGE{sge(t, b.mr, 4096, 40+512)}}}); err != nil {
		t.Fatal(err)
	}
	fill(a.mr.Buf()[:300], 9)
	msg := []byte("a datagram, inline")
	wrs := []SendWR{
		{ID: 1, Opcode: WRSend, Flags: SendSignaled, Inline: msg, AH: ah, RemoteQPN: b.qp.Num(), RemoteQKey: qkey},
		{ID: 2, Opcode: WRSendWithImm, Flags: SendSignaled, Imm: 42, SGL: []SGE{sge(t, a.mr, 0, 100), sge(t, a.mr, 100, 200)},
			AH: ah, RemoteQPN: b.qp.Num(), RemoteQKey: qkey},
	}
	if n, err := a.qp.PostSend(wrs); n != 2 || err != nil {
		t.Fatalf("PostSend: %d, %v", n, err)
	}
	poll1(t, a.cq)
	poll1(t, a.cq)
	w := poll1(t, b.cq)
	bb := b.mr.Buf()
	if w.ID != 1 || w.ByteLen != uint32(40+len(msg)) || w.Flags&WCWithGRH == 0 || w.SrcQP != a.qp.Num() || !bytes.Equal(bb[40:40+len(msg)], msg) {
		t.Errorf("UD receive 1: %+v, %q", w, bb[40:40+len(msg)])
	}
	w = poll1(t, b.cq)
	if w.ID != 2 || w.ByteLen != 340 || w.Imm != 42 || w.Flags&WCWithImm == 0 || !bytes.Equal(bb[4096+40:4096+340], a.mr.Buf()[:300]) {
		t.Errorf("UD receive 2: %+v", w)
	}
	// No AH: refused before the queue is touched.
	if _, err := a.qp.PostSend([]SendWR{{Opcode: WRSend, Inline: msg}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("UD send without AH: %v", err)
	}
	if err := ah.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVMPostSendBeforeRTS: the kernel refuses the doorbell of a QP that is
// not ready to send; the request stays in the queue, counted.
func TestVMPostSendBeforeRTS(t *testing.T) {
	vmtest.Require(t)
	c := vmOpen(t, vmtest.Dev0)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 4})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 16}})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.Modify(&QPAttr{State: QPStateInit, Port: 1}, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	n, err := qp.PostSend([]SendWR{{Opcode: WRSend, Inline: []byte("early")}})
	t.Logf("kernel %s: PostSend in INIT: %d, %v", vmtest.Kernel(), n, err)
	if n != 1 || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("PostSend in INIT: %d, %v; want 1 and EINVAL from the doorbell", n, err)
	}
}

// TestVMDataPathAllocs: a send, its receive and both completions on the
// real kernel allocate nothing (the doorbell is a real system call here).
func TestVMDataPathAllocs(t *testing.T) {
	vmtest.Require(t)
	e := vmConnect(t)
	a, b := e[0], e[1]
	send := []SendWR{{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{sge(t, a.mr, 0, 256)}}}
	recv := []RecvWR{{ID: 2, SGL: []SGE{sge(t, b.mr, 0, 256)}}}
	var wc [2]WC
	failed := false
	wait := func(cq *CQ) {
		for i := 0; i < 1<<26; i++ {
			if n, err := cq.Poll(wc[:1]); err != nil || n == 1 {
				if err != nil || wc[0].Status != WCSuccess {
					failed = true
				}
				return
			}
		}
		failed = true
	}
	allocs := testing.AllocsPerRun(500, func() {
		if _, err := b.qp.PostRecv(recv); err != nil {
			failed = true
		}
		if _, err := a.qp.PostSend(send); err != nil {
			failed = true
		}
		wait(a.cq)
		wait(b.cq)
	})
	if failed {
		t.Fatal("a post or a completion failed")
	}
	t.Logf("kernel %s: %v allocations per send, receive and two polls", vmtest.Kernel(), allocs)
	if allocs != 0 {
		t.Errorf("%v allocations per round trip, want 0", allocs)
	}
}
