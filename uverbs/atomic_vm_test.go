//go:build integration

package uverbs

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// pollWC polls until one completion arrives, whatever its status.
func pollWC(t *testing.T, cq *CQ) WC {
	t.Helper()
	var wc [1]WC
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n, err := cq.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return wc[0]
		}
		time.Sleep(50 * time.Microsecond)
	}
	t.Fatal("no completion within 30 s")
	return WC{}
}

// allowAtomics lets qp, in RTS, answer remote atomics (RTS→RTS with
// IBV_QP_ACCESS_FLAGS).
func allowAtomics(t *testing.T, qp *QP) {
	t.Helper()
	a := QPAttr{State: QPStateRTS, AccessFlags: AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic}
	if err := qp.Modify(&a, QPAttrState|QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
}

// TestVMAtomics: compare-and-swap and fetch-and-add from rxe0 to memory
// of rxe1: the original values come back (host order, rxe_resp.c
// atomic_reply), the remote memory changes as the operation says, the
// completions are COMP_SWAP and FETCH_ADD of 8 bytes. Then the errors the
// kernel reports, whatever the userspace library: an MR without remote
// atomic access is NAKed (rxe_resp.c check_rkey: RESPST_ERR_RKEY_VIOLATION)
// and completes with REM_ACCESS_ERR; a responder QP without
// IBV_ACCESS_REMOTE_ATOMIC is NAKed as an invalid request (check_op_valid:
// RESPST_ERR_UNSUPPORTED_OPCODE) and completes with REM_INV_REQ_ERR.
func TestVMAtomics(t *testing.T) {
	vmtest.Require(t)
	a0, err := vmOpen(t, vmtest.Dev0).QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if a0.AtomicCap != AtomicHCA {
		t.Errorf("rxe's atomic capability %v, want ATOMIC_HCA", a0.AtomicCap)
	}
	e := vmConnect(t)
	a, b := e[0], e[1]
	allowAtomics(t, b.qp)
	target, err := b.qp.PD().AllocMR(4096, AccessLocalWrite|AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	ne.PutUint64(target.Buf()[64:], 1000)
	res := sge(t, a.mr, 512, 8)
	orig := func() uint64 { return ne.Uint64(a.mr.Buf()[512:]) }
	remote := func() uint64 { return ne.Uint64(target.Buf()[64:]) }
	run := func(wr SendWR) WC {
		t.Helper()
		wr.Flags, wr.SGL, wr.RemoteAddr, wr.RKey = SendSignaled, []SGE{res}, target.Addr()+64, target.RKey()
		if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		return poll1(t, a.cq)
	}
	if w := run(SendWR{ID: 1, Opcode: WRAtomicCmpAndSwp, CompareAdd: 1000, Swap: 2000}); w.ID != 1 || w.Opcode != WCCompSwap || w.ByteLen != 8 || orig() != 1000 || remote() != 2000 {
		t.Errorf("CAS 1000→2000: %+v, original %d, remote %d", w, orig(), remote())
	}
	if w := run(SendWR{ID: 2, Opcode: WRAtomicCmpAndSwp, CompareAdd: 1000, Swap: 3000}); w.Opcode != WCCompSwap || orig() != 2000 || remote() != 2000 {
		t.Errorf("CAS that does not match: %+v, original %d, remote %d", w, orig(), remote())
	}
	for i := uint64(0); i < 10; i++ {
		if w := run(SendWR{ID: 3 + i, Opcode: WRAtomicFetchAndAdd, CompareAdd: 7}); w.ID != 3+i || w.Opcode != WCFetchAdd || w.ByteLen != 8 || orig() != 2000+7*i {
			t.Fatalf("FAA %d: %+v, original %d", i, w, orig())
		}
	}
	if remote() != 2070 {
		t.Errorf("remote after ten adds of 7: %d", remote())
	}
	// Several in one post: the send queue keeps them in order.
	wrs := make([]SendWR, 4)
	for i := range wrs {
		wrs[i] = SendWR{ID: uint64(100 + i), Opcode: WRAtomicFetchAndAdd, Flags: SendSignaled, CompareAdd: 1,
			SGL: []SGE{sge(t, a.mr, 1024+8*i, 8)}, RemoteAddr: target.Addr() + 64, RKey: target.RKey()}
	}
	if n, err := a.qp.PostSend(wrs); n != 4 || err != nil {
		t.Fatalf("PostSend of 4 atomics: %d, %v", n, err)
	}
	for i := range wrs {
		if w := poll1(t, a.cq); w.ID != uint64(100+i) {
			t.Errorf("completion %d: %+v", i, w)
		}
		if got := ne.Uint64(a.mr.Buf()[1024+8*i:]); got != 2070+uint64(i) {
			t.Errorf("atomic %d returned %d", i, got)
		}
	}

	// b's MR of vmConnect has remote read and write access, no atomic.
	if _, err := a.qp.PostSend([]SendWR{{ID: 9, Opcode: WRAtomicFetchAndAdd, Flags: SendSignaled, SGL: []SGE{res},
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), CompareAdd: 1}}); err != nil {
		t.Fatal(err)
	}
	if w := pollWC(t, a.cq); w.ID != 9 || w.Status != WCRemAccessErr {
		t.Errorf("FAA to an MR without remote atomic access: %+v (%v), want %v", w, w.Status, WCRemAccessErr)
	}

	// A responder QP without remote atomic access (vmConnect's).
	e = vmConnect(t)
	a, b = e[0], e[1]
	target, err = b.qp.PD().AllocMR(4096, AccessLocalWrite|AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]SendWR{{ID: 10, Opcode: WRAtomicCmpAndSwp, Flags: SendSignaled, SGL: []SGE{sge(t, a.mr, 0, 8)},
		RemoteAddr: target.Addr(), RKey: target.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if w := pollWC(t, a.cq); w.ID != 10 || w.Status != WCRemInvReqErr {
		t.Errorf("CAS to a QP without remote atomic access: %+v (%v), want %v", w, w.Status, WCRemInvReqErr)
	}
}
