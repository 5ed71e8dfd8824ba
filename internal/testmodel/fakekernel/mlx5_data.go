package fakekernel

// The device side of the mlx5 data path. A ConnectX reads the WQEs
// userspace writes into its queue buffers once the doorbell record and the
// UAR say so, executes them and writes CQEs, handing each over with the
// owner bit of op_own. Mlx5Run plays that part on demand: the fake cannot
// trap the UAR store, so tests call it where hardware would react.
//
// The formats are written out here independently of package uverbs (the
// device's view; both are pinned to the headers by tests): the send WQE of
// include/linux/mlx5/qp.h (struct mlx5_wqe_ctrl_seg, mlx5_wqe_raddr_seg,
// mlx5_wqe_eth_seg, mlx5_wqe_data_seg, mlx5_wqe_inline_seg), the receive
// WQE of data segments ended by MLX5_INVALID_LKEY, the 64-byte CQE of
// include/linux/mlx5/device.h (struct mlx5_cqe64, mlx5_err_cqe), the
// doorbell records (MLX5_RCV_DBR 0, MLX5_SND_DBR 1; a CQ's MLX5_CQ_SET_CI
// 0), all big-endian.
//
// What it executes: on RC and UC QPs SEND, SEND_IMM, RDMA_WRITE,
// RDMA_WRITE_IMM and (RC) RDMA_READ, ATOMIC_CS and ATOMIC_FA between QPs
// of the device (loopback:
// the destination QP number set at RTR names the peer); on RAW_PACKET QPs
// a SEND becomes a frame in the log Mlx5Frames returns, its first 18 bytes
// from the Ethernet segment's inline header. A send with no receive WQE
// posted waits (the receiver-not-ready retry of hardware); an lkey or rkey
// that does not cover the bytes is an error CQE (local or remote access)
// and moves the QP to the error state. Atomics work as a ConnectX's do on
// the 8 bytes at the raddr segment's address, big-endian in memory (the
// original value is written big-endian into the data segment); a remote
// address not 8-byte aligned is a remote invalid request. A QP created
// with an SRQ takes its receive WQEs from the SRQ's list (verbs_srq.go
// m5SRQ), and its CQEs name the WQE by its index.

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/purerdma/rdma/abi"
)

type m5CQ struct {
	cmd     abi.Mlx5IbCreateCq // the driver data the CQ was created with
	buf, db uint64
	entries uint32
	cqeSize uint32
	pi      uint32 // the producer count: the owner bit is pi & entries
}

type m5QP struct {
	cmd            abi.Mlx5IbCreateQp // the driver data the QP was created with
	rq, sq         uint64             // buffer addresses
	db             uint64
	sqCnt          uint32 // basic blocks
	rqCnt, rqShift uint32
	uidx           uint32
	raw            bool
	uar            []byte // the UAR page its doorbells go to
	reg            int    // the bfreg's offset in it
	sqCons, rqCons uint32 // what the device consumed
}

// mlx5 formats, the device's side.
const (
	fkOpRDMAWrite    = 0x08
	fkOpRDMAWriteImm = 0x09
	fkOpSend         = 0x0a
	fkOpSendImm      = 0x0b
	fkOpRDMARead     = 0x10
	fkOpAtomicCS     = 0x11
	fkOpAtomicFA     = 0x12

	fkCQEReq         = 0
	fkCQERespWRImm   = 1
	fkCQERespSend    = 2
	fkCQERespSendImm = 3
	fkCQEReqErr      = 13
	fkCQERespErr     = 14

	fkSynLocalLength  = 0x01
	fkSynLocalQPOp    = 0x02
	fkSynLocalProt    = 0x04
	fkSynWRFlush      = 0x05
	fkSynRemoteInvReq = 0x12
	fkSynRemoteAccess = 0x13

	fkCQUpdate     = 0x08 // fm_ce_se: MLX5_WQE_CTRL_CQ_UPDATE
	fkInlineSeg    = 0x80000000
	fkInvalidLKey  = 0x100
	fkEthInlineLen = 18
)

var be = binary.BigEndian

// mem is len bytes of the process at addr (the fake shares the caller's
// address space).
func mem(addr uint64, n int) []byte { return userBytes(addr, n) }

func dbWord(addr uint64, i int) uint32 {
	p := (*uint32)(unsafe.Pointer(unsafe.SliceData(mem(addr+uint64(4*i), 4))))
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], atomic.LoadUint32(p))
	return be.Uint32(b[:])
}

// Mlx5Frames returns the frames RAW_PACKET QPs sent, oldest first.
func (v *Verbs) Mlx5Frames() [][]byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([][]byte, len(v.frames))
	copy(out, v.frames)
	return out
}

type m5Ref struct {
	f  *File
	qp *qpVal
}

func (v *Verbs) m5QPs() []m5Ref {
	var out []m5Ref
	for _, f := range v.k.filesList() {
		f.mu.Lock()
		for _, o := range f.objects {
			if q, ok := o.Value.(*qpVal); ok && q.m5 != nil {
				out = append(out, m5Ref{f, q})
			}
		}
		f.mu.Unlock()
	}
	return out
}

// Mlx5Run executes the send WQEs every mlx5 QP's send doorbell record
// announces, in order, as a ConnectX would. It checks what hardware
// relies on: the doorbell record counts whole WQEs; each control segment
// carries its own index and the QP's number and a size of at least one
// unit; and the UAR register (either half of the bfreg, which userspace
// alternates) holds the first 8 bytes of the last WQE announced (a
// doorbell or the start of a BlueFlame copy) — a record advanced without
// that write would go unseen. It returns how many WQEs it executed and the
// first violation found.
func (v *Verbs) Mlx5Run() (int, error) {
	n := 0
	for _, r := range v.m5QPs() {
		k, err := v.m5RunQP(r)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (q *m5QP) unit(bb, k uint32) []byte {
	off := (bb*64 + k*16) & (q.sqCnt*64 - 1)
	return mem(q.sq+uint64(off), 16)
}

// sqBytes copies n bytes of the WQE at bb from byte off, wrapping.
func (q *m5QP) sqBytes(bb, off uint32, n int) []byte {
	out := make([]byte, 0, n)
	size := q.sqCnt * 64
	for len(out) < n {
		o := (bb*64 + off) & (size - 1)
		k := min(n-len(out), int(size-o))
		out = append(out, mem(q.sq+uint64(o), k)...)
		off += uint32(k)
	}
	return out
}

func (v *Verbs) m5RunQP(r m5Ref) (int, error) {
	qp, q := r.qp, r.qp.m5
	if q.sqCnt == 0 {
		return 0, nil
	}
	target := dbWord(q.db, 1) & 0xffff
	if q.sqCons&0xffff == target {
		return 0, nil
	}
	// Walk the announced WQEs to the last one; check each header.
	var last []byte
	for bb := q.sqCons; bb&0xffff != target; {
		c := q.unit(bb, 0)
		w0, w1 := be.Uint32(c[0:]), be.Uint32(c[4:])
		if idx := (w0 >> 8) & 0xffff; idx != bb&0xffff {
			return 0, fmt.Errorf("fakekernel: QP %#x: the WQE at basic block %d carries index %d", qp.num, bb&0xffff, idx)
		}
		if w1>>8 != qp.num {
			return 0, fmt.Errorf("fakekernel: QP %#x: a WQE names QP %#x", qp.num, w1>>8)
		}
		ds := w1 & 0x3f
		if ds == 0 {
			return 0, fmt.Errorf("fakekernel: QP %#x: a WQE of size 0", qp.num)
		}
		bbs := (ds*16 + 63) / 64
		if (target-bb)&0xffff < bbs {
			return 0, fmt.Errorf("fakekernel: QP %#x: the doorbell record (%d) ends inside the WQE at %d", qp.num, target, bb&0xffff)
		}
		last = c[:8]
		bb += bbs
	}
	if q.uar == nil || q.reg+256+8 > len(q.uar) {
		return 0, fmt.Errorf("fakekernel: QP %#x: no UAR mapped for its doorbells", qp.num)
	}
	a, b := q.uar[q.reg:q.reg+8], q.uar[q.reg+256:q.reg+264]
	if string(a) != string(last) && string(b) != string(last) {
		return 0, fmt.Errorf("fakekernel: QP %#x: doorbell record at %d but the UAR holds % x / % x, not the last WQE's control % x", qp.num, target, a, b, last)
	}
	if s := qp.attr.QpState; s != qpsRTS && s != qpsErr {
		return 0, fmt.Errorf("fakekernel: QP %#x: send doorbell in state %d", qp.num, s)
	}
	n := 0
	for q.sqCons&0xffff != target {
		c := q.unit(q.sqCons, 0)
		ds := be.Uint32(c[4:]) & 0x3f
		done, err := true, error(nil)
		if qp.attr.QpState == qpsErr {
			err = v.m5Err(r, q.sqCons, be.Uint32(c[0:])&0xff, fkSynWRFlush) // flushed
		} else {
			done, err = v.m5Exec(r, q.sqCons, ds)
		}
		if err != nil {
			return n, err
		}
		if !done {
			break // receiver not ready: try again at the next run
		}
		q.sqCons += (ds*16 + 63) / 64
		n++
	}
	return n, nil
}

// m5Exec executes the WQE at bb; false means it waits for a receive WQE.
func (v *Verbs) m5Exec(r m5Ref, bb, ds uint32) (bool, error) {
	qp, q := r.qp, r.qp.m5
	c := q.unit(bb, 0)
	op := be.Uint32(c[0:]) & 0xff
	fm := c[11]
	imm := be.Uint32(c[12:])
	k := uint32(1)
	var raddr uint64
	var rkey uint32
	switch op {
	case fkOpRDMAWrite, fkOpRDMAWriteImm, fkOpRDMARead:
		if q.raw {
			return true, v.m5Err(r, bb, op, fkSynLocalQPOp)
		}
		s := q.unit(bb, k)
		raddr, rkey = be.Uint64(s[0:]), be.Uint32(s[8:])
		k++
	case fkOpAtomicCS, fkOpAtomicFA:
		if q.raw || ds < 4 {
			return true, v.m5Err(r, bb, op, fkSynLocalQPOp)
		}
		s := q.unit(bb, k)
		raddr, rkey = be.Uint64(s[0:]), be.Uint32(s[8:])
		k += 2 // the raddr and atomic segments
	case fkOpSend, fkOpSendImm:
	default:
		return true, v.m5Err(r, bb, op, fkSynLocalQPOp)
	}
	var hdr []byte
	if q.raw {
		if op != fkOpSend || ds < k+2 {
			return true, v.m5Err(r, bb, op, fkSynLocalQPOp)
		}
		e := q.unit(bb, k)
		if be.Uint16(e[12:]) != fkEthInlineLen {
			return false, fmt.Errorf("fakekernel: QP %#x: Ethernet segment with a %d-byte inline header, want %d", qp.num, be.Uint16(e[12:]), fkEthInlineLen)
		}
		hdr = q.sqBytes(bb, k*16+14, fkEthInlineLen)
		k += 2
	}
	// The data: inline segments and data segments up to ds.
	var data []byte
	var local [][2]uint64 // address, length of the local SGEs (RDMA read)
	for k < ds {
		s := q.unit(bb, k)
		bc := be.Uint32(s[0:])
		if bc&fkInlineSeg != 0 {
			l := bc &^ fkInlineSeg
			if l == 0 || (l+4+15)/16 > ds-k {
				return false, fmt.Errorf("fakekernel: QP %#x: inline segment of %d bytes in %d units", qp.num, l, ds-k)
			}
			data = append(data, q.sqBytes(bb, k*16+4, int(l))...)
			k += (l + 4 + 15) / 16
			continue
		}
		lkey, addr := be.Uint32(s[4:]), be.Uint64(s[8:])
		if !v.mrCovers(r.f, lkey, addr, uint64(bc), false, 0) {
			return true, v.m5Err(r, bb, op, fkSynLocalProt)
		}
		if op == fkOpRDMARead || op == fkOpAtomicCS || op == fkOpAtomicFA {
			local = append(local, [2]uint64{addr, uint64(bc)})
		} else {
			data = append(data, mem(addr, int(bc))...)
		}
		k++
	}
	byteCnt := uint32(len(data))
	if q.raw {
		v.mu.Lock()
		v.frames = append(v.frames, append(hdr, data...))
		v.mu.Unlock()
		return true, v.m5Req(r, bb, op, fm, byteCnt)
	}
	peer := v.qpByNum(qp.attr.DestQpNum)
	if peer == nil || peer.qp.m5 == nil || (peer.qp.attr.QpState != qpsRTR && peer.qp.attr.QpState != qpsRTS) {
		return true, v.m5Err(r, bb, op, fkSynRemoteInvReq)
	}
	switch op {
	case fkOpRDMAWrite, fkOpRDMAWriteImm:
		if !v.mrCovers(peer.f, rkey, raddr, uint64(len(data)), true, abiRemoteWrite) {
			return true, v.m5Err(r, bb, op, fkSynRemoteAccess)
		}
		if op == fkOpRDMAWriteImm && !v.m5HasRecv(peer) {
			return false, nil
		}
		copy(mem(raddr, len(data)), data)
		if op == fkOpRDMAWriteImm {
			if err := v.m5Recv(peer, qp.num, fkCQERespWRImm, nil, byteCnt, imm); err != nil {
				return true, err
			}
		}
	case fkOpRDMARead:
		var total uint64
		for _, l := range local {
			total += l[1]
		}
		if !v.mrCovers(peer.f, rkey, raddr, total, true, abiRemoteRead) {
			return true, v.m5Err(r, bb, op, fkSynRemoteAccess)
		}
		src := mem(raddr, int(total))
		for _, l := range local {
			copy(mem(l[0], int(l[1])), src[:l[1]])
			src = src[l[1]:]
		}
		byteCnt = uint32(total)
	case fkOpAtomicCS, fkOpAtomicFA:
		if len(local) != 1 || local[0][1] != 8 {
			return false, fmt.Errorf("fakekernel: QP %#x: an atomic with %d data segments (want one of 8 bytes)", qp.num, len(local))
		}
		if raddr&7 != 0 {
			return true, v.m5Err(r, bb, op, fkSynRemoteInvReq)
		}
		if !v.mrCovers(peer.f, rkey, raddr, 8, true, abiRemoteAtomic) {
			return true, v.m5Err(r, bb, op, fkSynRemoteAccess)
		}
		a := q.unit(bb, 2)
		target := mem(raddr, 8)
		old := be.Uint64(target)
		if op == fkOpAtomicCS {
			if old == be.Uint64(a[8:]) {
				be.PutUint64(target, be.Uint64(a[0:]))
			}
		} else {
			be.PutUint64(target, old+be.Uint64(a[0:]))
		}
		be.PutUint64(mem(local[0][0], 8), old)
		byteCnt = 8
	default:
		if !v.m5HasRecv(peer) {
			return false, nil
		}
		cqeOp := uint8(fkCQERespSend)
		if op == fkOpSendImm {
			cqeOp = fkCQERespSendImm
		}
		if err := v.m5Recv(peer, qp.num, cqeOp, data, byteCnt, imm); err != nil {
			return true, err
		}
	}
	return true, v.m5Req(r, bb, op, fm, byteCnt)
}

const (
	abiRemoteWrite  = 1 << 1 // IB_ACCESS_REMOTE_WRITE
	abiRemoteRead   = 1 << 2 // IB_ACCESS_REMOTE_READ
	abiRemoteAtomic = 1 << 3 // IB_ACCESS_REMOTE_ATOMIC
)

// mrCovers reports whether key names an MR of f (the fake's keys are
// handle << 8 | 0x42) holding [addr, addr+n), with access for a remote
// key.
func (v *Verbs) mrCovers(f *File, key uint32, addr, n uint64, remote bool, access uint32) bool {
	if key&0xff != 0x42 {
		return false
	}
	f.mu.Lock()
	o := f.objects[key>>8]
	f.mu.Unlock()
	if o == nil {
		return false
	}
	mr, ok := o.Value.(*mrVal)
	if !ok || addr < mr.start || addr+n > mr.start+mr.size || addr+n < addr {
		return false
	}
	return !remote || mr.access&access != 0
}

func (v *Verbs) qpByNum(num uint32) *m5Ref {
	for _, r := range v.m5QPs() {
		if r.qp.num == num {
			return &r
		}
	}
	return nil
}

func (v *Verbs) m5HasRecv(r *m5Ref) bool {
	if s := r.qp.m5SRQ(); s != nil {
		return s.consumed != dbWord(s.db, 0)
	}
	q := r.qp.m5
	return q.rqCnt > 0 && q.rqCons&0xffff != dbWord(q.db, 0)&0xffff
}

// m5SRQ returns the device's view of the QP's SRQ, nil when it has none.
func (qp *qpVal) m5SRQ() *m5SRQ {
	if qp.srq == nil {
		return nil
	}
	return qp.srq.Value.(*srqVal).m5
}

// m5Recv consumes r's next receive WQE: scatters data into it and writes
// the responder's CQE (or, when it is too short, a local length error).
func (v *Verbs) m5Recv(r *m5Ref, src uint32, cqeOp uint8, data []byte, byteCnt, imm uint32) error {
	q := r.qp.m5
	idx := q.rqCons & (q.rqCnt - 1)
	var wqe []byte
	counter := uint16(q.rqCons)
	if sq := r.qp.m5SRQ(); sq != nil {
		// The SRQ's next WQE: its data segments after struct
		// mlx5_wqe_srq_next_seg; the CQE's wqe_counter names it.
		w := mem(sq.buf+uint64(sq.head&(sq.max-1))<<sq.shift, 1<<sq.shift)
		counter = uint16(sq.head & (sq.max - 1))
		sq.head = uint32(be.Uint16(w[2:]))
		sq.consumed++
		wqe = w[16:]
	} else {
		wqe = mem(q.rq+uint64(idx)<<q.rqShift, 1<<q.rqShift)
		q.rqCons++
	}
	rest := data
	status := uint8(0)
	for off := 0; off+16 <= len(wqe) && len(rest) > 0; off += 16 {
		s := wqe[off:]
		l, lkey, addr := be.Uint32(s[0:]), be.Uint32(s[4:]), be.Uint64(s[8:])
		if lkey == fkInvalidLKey {
			break
		}
		if !v.mrCovers(r.f, lkey, addr, uint64(l), false, 0) {
			status = fkSynLocalProt
			break
		}
		rest = rest[copy(mem(addr, int(l)), rest):]
	}
	if status == 0 && len(rest) > 0 {
		status = fkSynLocalLength
	}
	cqe := m5CQE{op: cqeOp, uidx: q.uidx, qpn: r.qp.num, rqpn: src, byteCnt: byteCnt, imm: imm, counter: counter}
	if status != 0 {
		cqe.op, cqe.syndrome = fkCQERespErr, status
		r.qp.attr.QpState = qpsErr
	}
	return v.m5CQE(r.f, r.qp.recv, cqe)
}

// m5Req writes the requester's CQE when the WQE asked for one.
func (v *Verbs) m5Req(r m5Ref, bb, op uint32, fm uint8, byteCnt uint32) error {
	if fm&fkCQUpdate == 0 {
		return nil
	}
	return v.m5CQE(r.f, r.qp.send, m5CQE{op: fkCQEReq, wqeOp: uint8(op), uidx: r.qp.m5.uidx, qpn: r.qp.num,
		byteCnt: byteCnt, counter: uint16(bb)})
}

// m5Err writes an error CQE for the WQE at bb (always: errors are
// reported whatever the WQE's CQ_UPDATE) and moves the QP to error.
func (v *Verbs) m5Err(r m5Ref, bb, op uint32, syndrome uint8) error {
	r.qp.attr.QpState = qpsErr
	return v.m5CQE(r.f, r.qp.send, m5CQE{op: fkCQEReqErr, wqeOp: uint8(op), uidx: r.qp.m5.uidx, qpn: r.qp.num,
		counter: uint16(bb), syndrome: syndrome})
}

type m5CQE struct {
	op, wqeOp, syndrome uint8
	uidx, qpn, rqpn     uint32
	byteCnt, imm        uint32
	counter             uint16
}

// m5CQE writes e into the CQ cqo: fields first, op_own (opcode << 4 |
// owner) last, as the device hands a CQE over. A CQ whose doorbell record
// says its consumer is a whole ring behind overruns (an error here; a
// CQ error event on hardware).
func (v *Verbs) m5CQE(f *File, cqo *Object, e m5CQE) error {
	cv, _ := cqo.Value.(*cqVal)
	if cv == nil || cv.m5 == nil {
		return fmt.Errorf("fakekernel: no mlx5 CQ for a completion")
	}
	cq := cv.m5
	ci := dbWord(cq.db, 0) & 0xffffff
	if (cq.pi-ci)&0xffffff >= cq.entries {
		return fmt.Errorf("fakekernel: CQ overrun: producer %d, consumer index %d in the doorbell record, %d entries", cq.pi, ci, cq.entries)
	}
	slot := uint64(cq.pi&(cq.entries-1)) * uint64(cq.cqeSize)
	b := mem(cq.buf+slot+uint64(cq.cqeSize)-64, 64) // the 64-byte CQE is the last 64 bytes of a 128-byte one
	clear(b[:60])
	be.PutUint32(b[24:], e.rqpn&0xffffff)                    // flags_rqpn
	be.PutUint32(b[32:], e.uidx&0xffffff)                    // srqn_uidx
	be.PutUint32(b[36:], e.imm)                              // imm_inval_pkey
	be.PutUint32(b[44:], e.byteCnt)                          // byte_cnt
	be.PutUint32(b[56:], uint32(e.wqeOp)<<24|e.qpn&0xffffff) // sop_drop_qpn / s_wqe_opcode_qpn
	if e.syndrome != 0 {
		b[55] = e.syndrome // struct mlx5_err_cqe syndrome
	}
	owner := uint8(0)
	if cq.pi&cq.entries != 0 {
		owner = 1
	}
	var last [4]byte
	be.PutUint16(last[0:], e.counter) // wqe_counter
	last[3] = e.op<<4 | owner         // op_own
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[60])), binary.NativeEndian.Uint32(last[:]))
	cq.pi++
	return nil
}

// Mlx5Deliver hands frame to the RAW_PACKET QP qpn as the device does a
// received packet: into its next receive WQE, with a RESP_SEND CQE.
func (v *Verbs) Mlx5Deliver(qpn uint32, frame []byte) error {
	r := v.qpByNum(qpn)
	if r == nil || !r.qp.m5.raw {
		return fmt.Errorf("fakekernel: no RAW_PACKET QP %#x", qpn)
	}
	if s := r.qp.attr.QpState; s != qpsRTR && s != qpsRTS {
		return fmt.Errorf("fakekernel: QP %#x receives nothing in state %d", qpn, s)
	}
	if !v.m5HasRecv(r) {
		return fmt.Errorf("fakekernel: QP %#x has no receive WQE (the packet is dropped)", qpn)
	}
	return v.m5Recv(r, 0, fkCQERespSend, frame, uint32(len(frame)), 0)
}
