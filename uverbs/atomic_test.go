package uverbs

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
)

func TestWROpcodeStrings(t *testing.T) {
	for op, want := range map[WROpcode]string{
		WRAtomicCmpAndSwp: "ATOMIC_CMP_AND_SWP", WRAtomicFetchAndAdd: "ATOMIC_FETCH_AND_ADD",
		WRRDMARead: "RDMA_READ", WROpcode(77): "WROpcode(77)",
	} {
		if got := op.String(); got != want {
			t.Errorf("%d: %q, want %q", uint32(op), got, want)
		}
	}
	if WRAtomicCmpAndSwp != 5 || WRAtomicFetchAndAdd != 6 { // enum ibv_wr_opcode
		t.Errorf("atomic opcodes %d, %d", WRAtomicCmpAndSwp, WRAtomicFetchAndAdd)
	}
}

// An atomic on rxe: struct rxe_send_wr's wr.atomic (remote_addr,
// compare_add, swap, rkey) and iova, as providers/rxe's convert_send_wr
// and init_send_wqe write them; validate_send_wr's EINVAL for a short SGL
// and a misaligned address.
func TestPostSendAtomicRXE(t *testing.T) {
	d := newDPBed(t)
	r := &d.qp.rxe.sq
	s, _ := d.mr.SGE(64, 8)
	wrs := []SendWR{
		{ID: 1, Opcode: WRAtomicCmpAndSwp, Flags: SendSignaled, SGL: []SGE{s}, RemoteAddr: 0x10008, RKey: 0x99,
			CompareAdd: 0x1111222233334444, Swap: 0x5555666677778888},
		{ID: 2, Opcode: WRAtomicFetchAndAdd, SGL: []SGE{s}, RemoteAddr: 0x20000, RKey: 0x98, CompareAdd: 3},
	}
	if n, err := d.qp.PostSend(wrs); n != 2 || err != nil {
		t.Fatalf("PostSend = %d, %v", n, err)
	}
	for i, wr := range wrs {
		w := (*abi.RxeSendWqe)(r.slot(uint32(i)))
		u := unsafe.Slice((*byte)(unsafe.Pointer(&w.Wr.Wr)), 32)
		le := binary.LittleEndian
		if w.Wr.Opcode != uint32(wr.Opcode) || w.Wr.WrId != wr.ID || w.Iova != wr.RemoteAddr || w.Dma.Length != 8 || w.Dma.NumSge != 1 ||
			le.Uint64(u[0:]) != wr.RemoteAddr || le.Uint64(u[8:]) != wr.CompareAdd || le.Uint64(u[16:]) != wr.Swap || le.Uint32(u[24:]) != wr.RKey {
			t.Errorf("WQE %d: %+v, wr.atomic % x", i, *w, u)
		}
	}
	consume(r)
	for _, b := range []SendWR{
		{Opcode: WRAtomicFetchAndAdd, SGL: []SGE{{Addr: s.Addr, Length: 4, LKey: s.LKey}}, RemoteAddr: 0x1000},
		{Opcode: WRAtomicFetchAndAdd, SGL: []SGE{s}, RemoteAddr: 0x1004},
		{Opcode: WRAtomicCmpAndSwp, Inline: make([]byte, 8), RemoteAddr: 0x1000},
	} {
		n, err := d.qp.PostSend([]SendWR{wrs[1], b})
		if n != 1 {
			t.Errorf("%+v: posted %d, want 1", b, n)
		}
		wantErrno(t, err, syscall.EINVAL)
		consume(r)
	}
	// Two SGEs of 4 bytes make the 8 rdma-core asks for.
	two := wrs[1]
	two.SGL = []SGE{{Addr: s.Addr, Length: 4, LKey: s.LKey}, {Addr: s.Addr + 4, Length: 4, LKey: s.LKey}}
	if n, err := d.qp.PostSend([]SendWR{two}); n != 1 || err != nil {
		t.Errorf("atomic into two SGEs: %d, %v", n, err)
	}
	consume(r)
}

// The WQE of each atomic as _mlx5_post_send writes it: control (opcode
// ATOMIC_CS / ATOMIC_FA, 4 units), raddr, atomic (set_atomic_seg), and a
// data segment of MLX5_ATOMIC_SIZE bytes whatever the SGE's length
// (set_data_ptr_seg_atomic).
func TestMlx5AtomicWQEBytes(t *testing.T) {
	_, _, e := m5Pair(t, nil, 8, rcCap())
	a := e[0]
	s := m5sge(t, a.mr, 128, 16)
	wrs := []SendWR{
		{ID: 1, Opcode: WRAtomicCmpAndSwp, Flags: SendSignaled, SGL: []SGE{s}, RemoteAddr: 0xabc008, RKey: 0x4242,
			CompareAdd: 0x0102030405060708, Swap: 0x1112131415161718},
		{ID: 2, Opcode: WRAtomicFetchAndAdd, SGL: []SGE{s}, RemoteAddr: 0xabc010, RKey: 0x4343, CompareAdd: 0x21, Swap: 0xffff},
	}
	if n, err := a.qp.PostSend(wrs); n != 2 || err != nil {
		t.Fatalf("PostSend = %d, %v", n, err)
	}
	x := a.qp.mlx5
	be := binary.BigEndian
	for i, wr := range wrs {
		w := unsafe.Slice((*byte)(unsafe.Add(x.sq, i*mlx5SendWQEBB)), 64)
		op := uint32(mlx5OpcodeAtomicCS)
		swapAdd, compare := wr.Swap, wr.CompareAdd
		if wr.Opcode == WRAtomicFetchAndAdd {
			op, swapAdd, compare = mlx5OpcodeAtomicFA, wr.CompareAdd, 0
		}
		if got := be.Uint32(w[0:]); got != uint32(i)<<8|op {
			t.Errorf("WQE %d: opmod_idx_opcode %#x, want index %d, opcode %#x", i, got, i, op)
		}
		if got := be.Uint32(w[4:]); got != a.qp.Num()<<8|4 {
			t.Errorf("WQE %d: qpn_ds %#x, want 4 units", i, got)
		}
		if be.Uint64(w[16:]) != wr.RemoteAddr || be.Uint32(w[24:]) != wr.RKey || be.Uint32(w[28:]) != 0 {
			t.Errorf("WQE %d: raddr segment % x", i, w[16:32])
		}
		if be.Uint64(w[32:]) != swapAdd || be.Uint64(w[40:]) != compare {
			t.Errorf("WQE %d: atomic segment % x, want swap_add %#x, compare %#x", i, w[32:48], swapAdd, compare)
		}
		if be.Uint32(w[48:]) != mlx5AtomicSize || be.Uint32(w[52:]) != a.mr.LKey() || be.Uint64(w[56:]) != s.Addr {
			t.Errorf("WQE %d: data segment % x", i, w[48:64])
		}
	}
}

// Atomics executed by the fake ConnectX: compare and swap that matches
// and one that does not, fetch and add; the original value comes back
// big-endian, the completions are COMP_SWAP and FETCH_ADD of 8 bytes; an
// MR without remote atomic access answers a remote access error. A
// device reporting ATOMIC_NONE refuses atomics at post, as libmlx5.
func TestMlx5AtomicLoopback(t *testing.T) {
	v, _, e := m5Pair(t, nil, 16, rcCap())
	a, b := e[0], e[1]
	pd := b.qp.PD()
	target, err := pd.AllocMR(4096, AccessLocalWrite|AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	be := binary.BigEndian
	be.PutUint64(target.Buf()[8:], 100)
	res := m5sge(t, a.mr, 256, 8)
	got := func() uint64 { return be.Uint64(a.mr.Buf()[256:]) }
	post := func(wr SendWR) WC {
		t.Helper()
		wr.Flags, wr.SGL, wr.RKey = SendSignaled, []SGE{res}, target.RKey()
		if wr.RemoteAddr == 0 {
			wr.RemoteAddr = target.Addr() + 8
		}
		if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		m5Run(t, v, 1)
		return m5Poll1(t, a.cq)
	}
	if w := post(SendWR{ID: 1, Opcode: WRAtomicCmpAndSwp, CompareAdd: 100, Swap: 200}); w.Status != WCSuccess || w.Opcode != WCCompSwap || w.ByteLen != 8 || w.ID != 1 || got() != 100 {
		t.Errorf("CAS 100→200: %+v, original %d", w, got())
	}
	if w := post(SendWR{ID: 2, Opcode: WRAtomicCmpAndSwp, CompareAdd: 100, Swap: 300}); w.Status != WCSuccess || got() != 200 {
		t.Errorf("CAS that does not match: %+v, original %d", w, got())
	}
	if w := post(SendWR{ID: 3, Opcode: WRAtomicFetchAndAdd, CompareAdd: 5}); w.Status != WCSuccess || w.Opcode != WCFetchAdd || w.ByteLen != 8 || got() != 200 {
		t.Errorf("FAA +5: %+v, original %d", w, got())
	}
	if m := be.Uint64(target.Buf()[8:]); m != 205 {
		t.Errorf("remote memory %d, want 205", m)
	}
	// b's own MR has no remote atomic access.
	wr := SendWR{ID: 4, Opcode: WRAtomicFetchAndAdd, Flags: SendSignaled, SGL: []SGE{res}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), CompareAdd: 1}
	if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	m5Run(t, v, 1)
	if w := m5Poll1(t, a.cq); w.Status != WCRemAccessErr || w.ID != 4 {
		t.Errorf("FAA without remote atomic access: %+v", w)
	}
	// An atomic carries no inline data.
	if _, err := a.qp.PostSend([]SendWR{{Opcode: WRAtomicCmpAndSwp, Inline: make([]byte, 8)}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("inline atomic: %v", err)
	}

	_, _, e = m5Pair(t, func(v *fakekernel.Verbs) { v.Attr.Base.AtomicCap = 0 }, 8, rcCap())
	if _, err := e[0].qp.PostSend([]SendWR{{Opcode: WRAtomicFetchAndAdd, SGL: []SGE{m5sge(t, e[0].mr, 0, 8)}}}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("atomic on a device without atomics: %v", err)
	}
	if n := atomic.LoadUint32(&e[0].qp.mlx5.sqCur); n != 0 {
		t.Errorf("the refused atomic took %d basic blocks", n)
	}
}
