package uverbs

// The mlx5 data path: the Go side of rdma-core's providers/mlx5 (qp.c
// _mlx5_post_send, post_send_db, mlx5_post_recv; cq.c mlx5_poll_one,
// get_sw_cqe, handle_good_req, handle_responder, mlx5_handle_error_cqe)
// in the formats of providers/mlx5/mlx5dv.h and the kernel's
// include/linux/mlx5/qp.h and device.h.
//
// UNPROVEN ON HARDWARE: the project has no ConnectX. Everything here is
// tested against the strict fake kernel (internal/testmodel/fakekernel,
// mlx5_data.go there), with the layouts pinned to the headers in
// mlx5_data_test.go, and in the VM against mock0, the project's mlx5 model,
// which executes the queues in the kernel and against which rdma-core's
// libmlx5 runs too: RC messages both ways between this provider and
// libmlx5, busy polling and on completion events, and the same error
// completions for the same mistakes (docs/mock0.md). See the README.
//
// The send queue is a ring of 64-byte basic blocks (MLX5_SEND_WQE_BB); a
// WQE takes ceil(16 × ds / 64) of them and may wrap past the end (each
// 16-byte segment is placed on its own, so no segment straddles it). The
// receive queue is a ring of 1 << rq_wqe_shift byte WQEs of data
// segments. The doorbell record is two big-endian words: [MLX5_RCV_DBR=0]
// the receive counter, [MLX5_SND_DBR=1] the send counter (mlx5dv.h); a
// CQ's doorbell record word 0 (MLX5_CQ_SET_CI) is its consumer index.
//
// Memory ordering (ring.go's rules, as rdma-core's udma barriers):
//   - posting: WQEs are written with plain stores, then the doorbell
//     record is released (udma_to_device_barrier in post_send_db and
//     mlx5_post_recv), then the UAR gets a 64-bit atomic store
//     (mmio_write64_be after mmio_wc_start) or, for BlueFlame, 64-bit
//     atomic stores of the whole WQE; the tails the poller advances are
//     acquired before a slot is reused;
//   - polling: the CQE's last word (wqe_counter, signature, op_own) is
//     acquired (udma_from_device_barrier after the owner check), the rest
//     read with plain loads, then the CQ doorbell record released; the
//     tails of the queues whose WQEs completed are released.
//
// Go's atomics order memory for the inner-shareable domain (arm64 LDAR and
// STLR, no DMB); a device is outer-shareable, which rdma-core's arm64
// barriers (DMB OSHST, DMB OSHLD, DSB ST) name. On amd64 the two coincide.
// That is one more reason the path is unproven on arm64 hardware: ring.go's
// "arm64" section has the reasoning and what a port would add.
//
// Every index the device writes (a CQE's user index, QP number,
// wqe_counter, syndrome) is bounded before it indexes our arrays.

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
)

// Layouts (providers/mlx5/mlx5dv.h; the kernel's include/linux/mlx5/qp.h
// has the same segments as struct mlx5_wqe_ctrl_seg, mlx5_wqe_eth_seg,
// mlx5_wqe_raddr_seg, mlx5_wqe_data_seg, mlx5_wqe_inline_seg and
// device.h struct mlx5_cqe64, mlx5_err_cqe).
const (
	mlx5CtrlSegSize  = 16 // struct mlx5_wqe_ctrl_seg
	mlx5RaddrSegSize = 16 // struct mlx5_wqe_raddr_seg
	mlx5EthSegSize   = 32 // struct mlx5_wqe_eth_seg (inline_hdr_start + inline_hdr: 18 bytes)
	mlx5EthInlineOff = 14 // offsetof(struct mlx5_wqe_eth_seg, inline_hdr_start)
	mlx5EthHdrSzOff  = 12 // offsetof(struct mlx5_wqe_eth_seg, inline_hdr_sz)
	// mlx5EthInline is MLX5_ETH_L2_INLINE_HEADER_SIZE, the bytes of
	// each packet copied into the Ethernet segment (the kernel's
	// default eth_min_inline; rdma-core copy_eth_inline_headers).
	mlx5EthInline = 18

	mlx5CtrlFmCeSeOff = 11 // fm_ce_se in the control segment
	mlx5CtrlImmOff    = 12

	mlx5OpcodeRDMAWrite    = 0x08 // MLX5_OPCODE_RDMA_WRITE
	mlx5OpcodeRDMAWriteImm = 0x09
	mlx5OpcodeSend         = 0x0a
	mlx5OpcodeSendImm      = 0x0b
	mlx5OpcodeRDMARead     = 0x10
	mlx5OpcodeAtomicCS     = 0x11 // MLX5_OPCODE_ATOMIC_CS
	mlx5OpcodeAtomicFA     = 0x12 // MLX5_OPCODE_ATOMIC_FA

	mlx5AtomicSegSize = 16 // struct mlx5_wqe_atomic_seg: swap_add, compare (__be64)
	mlx5AtomicSize    = 8  // MLX5_ATOMIC_SIZE: the byte_count of an atomic's data segments

	mlx5CtrlCQUpdate  = 2 << 2 // MLX5_WQE_CTRL_CQ_UPDATE
	mlx5CtrlSolicited = 1 << 1 // MLX5_WQE_CTRL_SOLICITED
	mlx5CtrlFence     = 4 << 5 // MLX5_WQE_CTRL_FENCE

	mlx5InlineSeg   = 0x80000000 // MLX5_INLINE_SEG, in byte_count
	mlx5InvalidLKey = 0x100      // MLX5_INVALID_LKEY: ends a short receive WQE

	mlx5RcvDBR  = 0 // MLX5_RCV_DBR
	mlx5SndDBR  = 1 // MLX5_SND_DBR
	mlx5CQSetCI = 0 // MLX5_CQ_SET_CI
	mlx5CQArmDB = 1 // MLX5_CQ_ARM_DB

	mlx5CQDoorbell    = 0x20    // MLX5_CQ_DOORBELL: the arm doorbell in a UAR page
	mlx5CQDBReqNot    = 0 << 24 // MLX5_CQ_DB_REQ_NOT: the next completion
	mlx5CQDBReqNotSol = 1 << 24 // MLX5_CQ_DB_REQ_NOT_SOL: the next solicited one

	mlx5BFOffset = 0x800 // MLX5_BF_OFFSET: the first bfreg in a UAR page

	// struct mlx5_cqe64 offsets.
	mlx5CQEMLPath     = 17
	mlx5CQESLID       = 22
	mlx5CQEFlagsRQPN  = 24
	mlx5CQESrqnUidx   = 32
	mlx5CQEImm        = 36
	mlx5CQEByteCnt    = 44
	mlx5CQESopDropQPN = 56
	mlx5CQEWqeCounter = 60
	mlx5CQEOpOwn      = 63
	// struct mlx5_err_cqe offsets.
	mlx5ErrCQEVendor   = 54
	mlx5ErrCQESyndrome = 55

	mlx5CQEReq        = 0 // MLX5_CQE_REQ
	mlx5CQERespWRImm  = 1
	mlx5CQERespSend   = 2
	mlx5CQERespSendIm = 3
	mlx5CQEReqErr     = 13
	mlx5CQERespErr    = 14
	mlx5CQEInvalid    = 15
)

// mlx5BF is one doorbell/BlueFlame register (struct mlx5_bf): reg is the
// UAR page plus MLX5_BF_OFFSET; each doorbell goes to reg+offset, and
// offset toggles by bufSize (bf_reg_size / 2; 0 on a non-write-combining
// UAR, which has no BlueFlame). QPs share it, so writes are under mu (the
// need_lock case of post_send_db).
type mlx5BF struct {
	mu      sync.Mutex
	reg     unsafe.Pointer
	offset  uintptr
	bufSize uintptr
}

// mlx5QP is the userspace half of an mlx5 QP.
type mlx5QP struct {
	qpn     uint32
	uidx    uint32
	typ     QPType
	sigAll  bool
	atomics bool       // the device has an atomic capability (qp->atomics_enabled)
	dbrec   *[2]uint32 // big-endian words
	bf      *mlx5BF
	maxSGE  int
	maxInl  int
	maxBB   uint32 // the most basic blocks one WQE may take
	sqMu    sync.Mutex
	sq      unsafe.Pointer
	sqCnt   uint32   // basic blocks, a power of two
	sqCur   uint32   // cur_post, in basic blocks; ours, under sqMu
	sqTail  uint32   // released by the poller
	sqWrid  []uint64 // by the WQE's first basic block
	sqEnd   []uint32 // cur_post after the WQE (the tail once it completes)
	rqMu    sync.Mutex
	rq      unsafe.Pointer
	rqCnt   uint32
	rqShift uint32
	rqHead  uint32 // ours, under rqMu
	rqTail  uint32 // released by the receive CQ's poller
	rqWrid  []uint64
	maxRSGE int
	srq     *mlx5SRQ // the SRQ its receives come from, or nil
}

// mlx5CQ is the poll side of an mlx5 CQ, and its arm.
type mlx5CQ struct {
	p       *mlx5Provider
	buf     unsafe.Pointer
	entries uint32 // a power of two
	ci      uint32 // cons_index; ours, under the CQ's mu
	dbrec   *uint32
	cqn     uint32
	armSN   uint32         // arm_sn: events read (GetEvent), atomic
	uar     unsafe.Pointer // the UAR page the arm doorbell goes to
}

func (p *mlx5Provider) bfFor(resp *abi.Mlx5IbCreateQpResp) (*mlx5BF, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	size := uintptr(p.resp.BfRegSize)
	if p.dynUAR {
		u := p.uar
		if u == nil || len(u.mem) < mlx5BFOffset+int(size) || len(u.mem) < mlx5BFOffset+8 {
			return nil, fmt.Errorf("no UAR page to ring: %w", syscall.EPROTO)
		}
		if u.bf == nil {
			u.bf = &mlx5BF{reg: unsafe.Add(ptrOf(u.mem), mlx5BFOffset)}
			if !u.nc {
				u.bf.bufSize = size / 2
			}
		}
		return u.bf, nil
	}
	// Static bfregs: bfreg i is register i%2 of UAR page i/2
	// (MLX5_NUM_NON_FP_BFREGS_PER_UAR, num_uars_per_page 1), at
	// MLX5_BF_OFFSET + (i%2) × bf_reg_size (mlx5.c mlx5_init_context).
	i := int(resp.BfregIndex)
	if i >= 2*len(p.staticUARs) || mlx5BFOffset+uintptr(i%2+1)*max(size, 8) > mlx5AdapterPage {
		return nil, fmt.Errorf("the kernel gave bfreg %d of %d: %w", i, 2*len(p.staticUARs), syscall.EPROTO)
	}
	if p.staticBF == nil {
		p.staticBF = map[int]*mlx5BF{}
	}
	bf := p.staticBF[i]
	if bf == nil {
		bf = &mlx5BF{reg: unsafe.Add(ptrOf(p.staticUARs[i/2]), mlx5BFOffset+uintptr(i%2)*size), bufSize: size / 2}
		p.staticBF[i] = bf
	}
	return bf, nil
}

const mlx5AdapterPage = 4096 // MLX5_ADAPTER_PAGE_SIZE

// mlx5Init sets up the data path of a QP mlx5 created from the buffers
// prepareQP allocated (in d) and the create call's driver data (x).
func (qp *QP) mlx5Init(p *mlx5Provider, d *driverRes, drv *drvScratch, attr *QPInitAttr) error {
	cmd, resp := &drv.m5QP, &drv.m5QPResp
	rec := p.db.slot(cmd.DbAddr)
	if rec == nil {
		return fmt.Errorf("doorbell record %#x not ours: %w", cmd.DbAddr, syscall.EPROTO)
	}
	// A QP created in place (CreateQPInto) reuses the mlx5QP of its
	// earlier life and its arrays: no poller still holds it, since the
	// destroy waited for the CQs' pollers (destroyLocked).
	x := qp.m5spare
	qp.m5spare = nil
	if x == nil {
		x = new(mlx5QP)
	}
	sqWrid, sqEnd, rqWrid := x.sqWrid, x.sqEnd, x.rqWrid
	var srq *mlx5SRQ
	if attr.SRQ != nil {
		srq = attr.SRQ.m5
	}
	*x = mlx5QP{qpn: qp.num, uidx: cmd.Uidx, typ: attr.Type, sigAll: attr.SQSigAll, atomics: p.atomicCap != AtomicNone, srq: srq,
		dbrec: (*[2]uint32)(ptrOf(rec)), sqCnt: cmd.SqWqeCount, rqCnt: cmd.RqWqeCount, rqShift: cmd.RqWqeShift}
	find := func(addr uint64, n int) unsafe.Pointer {
		for _, m := range d.anonymous() {
			if a := addrOf(m); addr >= a && addr+uint64(n) <= a+uint64(len(m)) {
				return unsafe.Add(ptrOf(m), addr-a)
			}
		}
		return nil
	}
	rqBytes := int(x.rqCnt) << x.rqShift
	if x.rqCnt > 0 {
		if x.rq = find(cmd.BufAddr, rqBytes); x.rq == nil {
			return fmt.Errorf("receive queue not in the QP's buffers: %w", syscall.EPROTO)
		}
		x.maxRSGE = min(int(max(qp.cap.MaxRecvSGE, attr.Cap.MaxRecvSGE)), (1<<x.rqShift)/mlx5DataSegSize)
		x.rqWrid = zeroed(rqWrid, x.rqCnt)
	}
	if x.sqCnt > 0 {
		at := cmd.SqBufAddr
		if attr.Type != QPTypeRawPacket {
			at = cmd.BufAddr + uint64(rqBytes)
		}
		if x.sq = find(at, int(x.sqCnt)*mlx5SendWQEBB); x.sq == nil {
			return fmt.Errorf("send queue not in the QP's buffers: %w", syscall.EPROTO)
		}
		wqe := int(mlx5SendWQESize(attr))
		room := wqe - mlx5CtrlSegSize
		switch attr.Type {
		case QPTypeRC, QPTypeUC:
			room -= mlx5RaddrSegSize
		case QPTypeRawPacket:
			room -= mlx5EthSegSize
		}
		x.maxBB = uint32(wqe / mlx5SendWQEBB)
		x.maxSGE = min(int(max(qp.cap.MaxSendSGE, attr.Cap.MaxSendSGE)), room/mlx5DataSegSize)
		x.maxInl = min(int(max(qp.cap.MaxInlineData, attr.Cap.MaxInlineData)), room-4)
		x.sqWrid = zeroed(sqWrid, x.sqCnt)
		x.sqEnd = zeroed(sqEnd, x.sqCnt)
		bf, err := p.bfFor(resp)
		if err != nil {
			return err
		}
		x.bf = bf
	}
	key := x.uidx
	if p.cqeVersion == 0 {
		key = x.qpn
	}
	p.qps.set(key, x)
	d.qpKey, d.keyed = key, true // release deletes it
	qp.mlx5 = x
	return nil
}

// zeroed returns n zero elements: s's memory when it has room, new memory
// otherwise.
func zeroed[T uint32 | uint64](s []T, n uint32) []T {
	if uint32(cap(s)) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// mlx5Init sets up the poll path of a CQ mlx5 created.
func (cq *CQ) mlx5Init(p *mlx5Provider, d *driverRes, x *drvScratch) error {
	cmd := &x.m5CQ
	rec := p.db.slot(cmd.DbAddr)
	entries := uint32(cq.cqe) + 1
	if rec == nil || d.nanon != 1 || entries&(entries-1) != 0 || len(d.anon[0]) < int(entries)*mlx5CQESize {
		return fmt.Errorf("mlx5 CQ of %d entries without its buffer or doorbell record: %w", entries, syscall.EPROTO)
	}
	cq.m5CQ = mlx5CQ{p: p, buf: ptrOf(d.anon[0]), entries: entries, dbrec: (*uint32)(ptrOf(rec)),
		cqn: x.m5CQResp.Cqn, uar: p.cqUAR()}
	cq.m5 = &cq.m5CQ
	return nil
}

// arm is mlx5_arm_cq (providers/mlx5/cq.c; the kernel's mlx5_cq_arm in
// include/linux/mlx5/cq.h): the arm word, sn << 28 | cmd | ci, goes to the
// doorbell record's MLX5_CQ_ARM_DB and then, followed by the CQ number, to
// the UAR's MLX5_CQ_DOORBELL in one 64-bit big-endian store. Under the
// CQ's mu (ci is the poller's). The device raises one completion event
// per arm; GetEvent counts them (sn, mlx5_cq_event).
func (m *mlx5CQ) arm(solicitedOnly bool) error {
	if m.uar == nil {
		return fmt.Errorf("no UAR page to arm the CQ through: %w", ErrNotSupported)
	}
	cmd := uint32(mlx5CQDBReqNot)
	if solicitedOnly {
		cmd = mlx5CQDBReqNotSol
	}
	w := (atomic.LoadUint32(&m.armSN)&3)<<28 | cmd | m.ci&0xffffff
	release(&(*[2]uint32)(unsafe.Pointer(m.dbrec))[mlx5CQArmDB], be32(w)) // udma_to_device_barrier
	atomic.StoreUint64((*uint64)(unsafe.Add(m.uar, mlx5CQDoorbell)), uint64(be32(w))|uint64(be32(m.cqn))<<32)
	return nil
}

// seg returns the 16-byte unit k of the WQE that starts at basic block bb.
func (x *mlx5QP) seg(bb, k uint32) unsafe.Pointer {
	off := (bb*mlx5SendWQEBB + k*16) & (x.sqCnt*mlx5SendWQEBB - 1)
	return unsafe.Add(x.sq, off)
}

// copyIn copies b into the WQE at bb from byte off on, wrapping at the end
// of the queue.
func (x *mlx5QP) copyIn(bb, off uint32, b []byte) {
	size := x.sqCnt * mlx5SendWQEBB
	for len(b) > 0 {
		o := (bb*mlx5SendWQEBB + off) & (size - 1)
		n := copy(unsafe.Slice((*byte)(unsafe.Add(x.sq, o)), size-o), b)
		b, off = b[n:], off+uint32(n)
	}
}

func put32(p unsafe.Pointer, off uintptr, v uint32) {
	binary.BigEndian.PutUint32(unsafe.Slice((*byte)(unsafe.Add(p, off)), 4), v)
}

func put64(p unsafe.Pointer, off uintptr, v uint64) {
	binary.BigEndian.PutUint64(unsafe.Slice((*byte)(unsafe.Add(p, off)), 8), v)
}

func get32(p unsafe.Pointer, off uintptr) uint32 {
	return binary.BigEndian.Uint32(unsafe.Slice((*byte)(unsafe.Add(p, off)), 4))
}

func get16(p unsafe.Pointer, off uintptr) uint16 {
	return binary.BigEndian.Uint16(unsafe.Slice((*byte)(unsafe.Add(p, off)), 2))
}

// userMem is the caller's memory at addr (an SGE of a registered region).
func userMem(addr uint64, n int) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

func (x *mlx5QP) postSend(wrs []SendWR) (int, error) {
	if x.sq == nil {
		return 0, errArg("the QP has no send queue")
	}
	n := 0
	var last unsafe.Pointer
	var size uint32
	inl := false
	var err error
	for i := range wrs {
		start := x.sqCur
		ds, werr := x.writeSend(&wrs[i])
		if werr != nil {
			err = werr
			break
		}
		last, size, inl = x.seg(start, 0), ds, wrs[i].Inline != nil
		n++
	}
	if n > 0 {
		x.ring(n, last, size, inl)
	}
	return n, err
}

// writeSend writes wr at cur_post and advances it; it returns the WQE's
// size in 16-byte units (ds).
func (x *mlx5QP) writeSend(wr *SendWR) (uint32, error) {
	var op uint32
	raddr, atomic := false, false
	switch wr.Opcode {
	case WRSend:
		op = mlx5OpcodeSend
	case WRSendWithImm:
		op = mlx5OpcodeSendImm
	case WRRDMAWrite:
		op, raddr = mlx5OpcodeRDMAWrite, true
	case WRRDMAWriteWithImm:
		op, raddr = mlx5OpcodeRDMAWriteImm, true
	case WRRDMARead:
		op, raddr = mlx5OpcodeRDMARead, true
	case WRAtomicCmpAndSwp:
		op, raddr, atomic = mlx5OpcodeAtomicCS, true, true
	case WRAtomicFetchAndAdd:
		op, raddr, atomic = mlx5OpcodeAtomicFA, true, true
	default:
		return 0, errArg("opcode %v: PostSend posts SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ and the atomics", wr.Opcode)
	}
	switch x.typ {
	case QPTypeRC:
		// _mlx5_post_send: atomics only where the context's device
		// reported an atomic capability (qp->atomics_enabled, set
		// from mlx5_query_device_ctx's atomic_cap), EOPNOTSUPP
		// otherwise.
		if atomic && !x.atomics {
			return 0, fmt.Errorf("%v: the device's atomic capability is ATOMIC_NONE: %w", wr.Opcode, ErrNotSupported)
		}
	case QPTypeUC:
		if wr.Opcode == WRRDMARead || atomic {
			return 0, errArg("%v on a UC QP", wr.Opcode)
		}
	case QPTypeRawPacket:
		if wr.Opcode != WRSend {
			return 0, errArg("%v on a RAW_PACKET QP: it sends packets only", wr.Opcode)
		}
	case QPTypeUD:
		if wr.Opcode != WRSend && wr.Opcode != WRSendWithImm {
			return 0, errArg("%v on a UD QP: it sends SEND and SEND_WITH_IMM only", wr.Opcode)
		}
		if wr.AH == nil || !wr.AH.m5 {
			return 0, errArg("a UD send needs an AH made on this mlx5 context")
		}
	default:
		return 0, fmt.Errorf("%v sends on mlx5 are not implemented: %w", x.typ, ErrNotSupported)
	}
	if wr.Flags&^(SendFence|SendSignaled|SendSolicited) != 0 {
		return 0, errArg("send flags %#x", uint32(wr.Flags))
	}
	var total uint64
	if wr.Inline != nil {
		if wr.Opcode == WRRDMARead || atomic {
			return 0, errArg("inline data with %v", wr.Opcode)
		}
		total = uint64(len(wr.Inline))
	} else {
		if len(wr.SGL) > x.maxSGE {
			return 0, errArg("%d SGEs: the QP takes %d", len(wr.SGL), x.maxSGE)
		}
		for _, s := range wr.SGL {
			total += uint64(s.Length)
		}
	}
	if total > 1<<31 {
		return 0, errArg("%d bytes: at most %d per work request", total, 1<<31)
	}
	// The Ethernet segment takes the packet's first 18 bytes.
	skip := uint64(0)
	if x.typ == QPTypeRawPacket {
		if total < mlx5EthInline {
			return 0, errArg("a %d-byte packet: at least %d (the L2 header the Ethernet segment holds)", total, mlx5EthInline)
		}
		skip = mlx5EthInline
	}
	// Size, in 16-byte units: control, transport, data.
	ds := uint32(1)
	if raddr {
		ds++
	}
	if atomic {
		ds += mlx5AtomicSegSize / 16
	}
	if x.typ == QPTypeRawPacket {
		ds += mlx5EthSegSize / 16
	}
	if x.typ == QPTypeUD {
		ds += mlx5AVSize / 16 // struct mlx5_wqe_datagram_seg
	}
	if wr.Inline != nil {
		if len(wr.Inline) > x.maxInl {
			return 0, errArg("%d bytes inline: the QP takes %d", len(wr.Inline), x.maxInl)
		}
		if rest := total - skip; rest > 0 {
			ds += uint32(rest+4+15) / 16
		}
	} else {
		ds += uint32(x.dataSegs(wr.SGL, skip))
	}
	bbs := (ds*16 + mlx5SendWQEBB - 1) / mlx5SendWQEBB
	if bbs > x.maxBB {
		return 0, errArg("a %d-byte WQE: the QP's are %d", ds*16, x.maxBB*mlx5SendWQEBB)
	}
	// Acquire: the poller advanced the tail after the device finished.
	if x.sqCur+bbs-acquire(&x.sqTail) > x.sqCnt {
		return 0, errFull
	}
	bb := x.sqCur
	ctrl := x.seg(bb, 0)
	fm := uint8(0)
	if wr.Flags&SendSignaled != 0 || x.sigAll {
		fm |= mlx5CtrlCQUpdate
	}
	if wr.Flags&SendSolicited != 0 {
		fm |= mlx5CtrlSolicited
	}
	if wr.Flags&SendFence != 0 {
		fm |= mlx5CtrlFence
	}
	put32(ctrl, 0, (bb&0xffff)<<8|op) // opmod_idx_opcode
	put32(ctrl, 4, x.qpn<<8|ds)       // qpn_ds
	put32(ctrl, 8, 0)                 // signature, dci_stream_channel_id, fm_ce_se
	*(*uint8)(unsafe.Add(ctrl, mlx5CtrlFmCeSeOff)) = fm
	imm := uint32(0)
	if wr.Opcode == WRSendWithImm || wr.Opcode == WRRDMAWriteWithImm {
		imm = wr.Imm
	}
	put32(ctrl, mlx5CtrlImmOff, imm)
	k := uint32(1)
	if raddr {
		s := x.seg(bb, k)
		put64(s, 0, wr.RemoteAddr)
		put32(s, 8, wr.RKey)
		put32(s, 12, 0)
		k++
	}
	if atomic {
		// set_atomic_seg: compare and swap carry swap in swap_add and
		// compare_add in compare; fetch and add its addend in
		// swap_add (compare is not read: zeroed here).
		s := x.seg(bb, k)
		if wr.Opcode == WRAtomicCmpAndSwp {
			put64(s, 0, wr.Swap)
			put64(s, 8, wr.CompareAdd)
		} else {
			put64(s, 0, wr.CompareAdd)
			put64(s, 8, 0)
		}
		k++
	}
	if x.typ == QPTypeUD {
		// _set_datagram_seg (qp.c): the AH's vector, then the
		// destination QP (with MLX5_EXTENDED_UD_AV) and its Q_Key.
		av := wr.AH.m5av
		binary.BigEndian.PutUint32(av[mlx5AVDQP:], wr.RemoteQPN&0xffffff|mlx5ExtendedUDAV)
		binary.BigEndian.PutUint32(av[mlx5AVQKey:], wr.RemoteQKey)
		x.copyIn(bb, k*16, av[:])
		k += mlx5AVSize / 16
	}
	if x.typ == QPTypeRawPacket {
		for j := uint32(0); j < mlx5EthSegSize/16; j++ {
			*(*[16]byte)(x.seg(bb, k+j)) = [16]byte{}
		}
		eth := x.seg(bb, k)
		binary.BigEndian.PutUint16(unsafe.Slice((*byte)(unsafe.Add(eth, mlx5EthHdrSzOff)), 2), mlx5EthInline)
		var hdr [mlx5EthInline]byte
		gather(hdr[:], wr)
		x.copyIn(bb, k*16+mlx5EthInlineOff, hdr[:])
		k += mlx5EthSegSize / 16
	}
	if wr.Inline != nil {
		data := wr.Inline[skip:]
		if len(data) > 0 {
			put32(x.seg(bb, k), 0, uint32(len(data))|mlx5InlineSeg)
			x.copyIn(bb, k*16+4, data)
		}
	} else {
		for _, s := range wr.SGL {
			if s.Length == 0 {
				continue
			}
			addr, length := s.Addr, uint64(s.Length)
			if skip >= length {
				skip -= length
				continue
			}
			addr, length, skip = addr+skip, length-skip, 0
			if atomic {
				// set_data_ptr_seg_atomic: every segment is
				// MLX5_ATOMIC_SIZE bytes, whatever the SGE says.
				length = mlx5AtomicSize
			}
			d := x.seg(bb, k)
			put32(d, 0, uint32(length))
			put32(d, 4, s.LKey)
			put64(d, 8, addr)
			k++
		}
	}
	i := bb & (x.sqCnt - 1)
	x.sqWrid[i] = wr.ID
	x.sqCur += bbs
	x.sqEnd[i] = x.sqCur
	return ds, nil
}

// dataSegs counts the data segments of sgl once skip bytes are inline:
// SGEs of zero length take none (rdma-core skips them).
func (x *mlx5QP) dataSegs(sgl []SGE, skip uint64) int {
	n := 0
	for _, s := range sgl {
		if s.Length == 0 {
			continue
		}
		if skip >= uint64(s.Length) {
			skip -= uint64(s.Length)
			continue
		}
		skip = 0
		n++
	}
	return n
}

// gather copies the first len(dst) bytes of wr's data into dst. Like
// rdma-core's copy_eth_inline_headers it reads the SGEs' memory: they must
// lie in the caller's registered memory.
func gather(dst []byte, wr *SendWR) {
	if wr.Inline != nil {
		copy(dst, wr.Inline)
		return
	}
	for _, s := range wr.SGL {
		if len(dst) == 0 {
			return
		}
		n := min(len(dst), int(s.Length))
		copy(dst, userMem(s.Addr, n))
		dst = dst[n:]
	}
}

// ring is post_send_db: the doorbell record, then the UAR — BlueFlame
// (the whole WQE into the register) for a single inline WQE that fits
// bf->buf_size, else the control segment's first 8 bytes.
func (x *mlx5QP) ring(n int, ctrl unsafe.Pointer, ds uint32, inl bool) {
	// The WQEs before the record (udma_to_device_barrier).
	release(&x.dbrec[mlx5SndDBR], be32(x.sqCur&0xffff))
	bf := x.bf
	bf.mu.Lock()
	reg := unsafe.Add(bf.reg, bf.offset)
	if n == 1 && inl && bf.bufSize > 0 && ds > 1 && uintptr(ds) <= bf.bufSize/16 {
		// mlx5_bf_copy: 64 bytes at a time, wrapping with the queue.
		bb := uint32(uintptr(ctrl)-uintptr(x.sq)) / mlx5SendWQEBB
		for c := uint32(0); c < (ds*16+63)/64; c++ {
			src := x.seg(bb+c, 0)
			for w := uintptr(0); w < 64; w += 8 {
				atomic.StoreUint64((*uint64)(unsafe.Add(reg, uintptr(c)*64+w)), *(*uint64)(unsafe.Add(src, w)))
			}
		}
	} else {
		// mmio_write64_be of the big-endian ctrl words: their bytes as
		// they are in memory.
		atomic.StoreUint64((*uint64)(reg), *(*uint64)(ctrl))
	}
	bf.offset ^= bf.bufSize
	bf.mu.Unlock()
}

func (x *mlx5QP) postRecv(wrs []RecvWR) (int, error) {
	n := 0
	var err error
	for i := range wrs {
		wr := &wrs[i]
		if x.rqHead-acquire(&x.rqTail) >= x.rqCnt {
			err = errFull
			break
		}
		if len(wr.SGL) > x.maxRSGE {
			err = errArg("%d SGEs: the QP takes %d", len(wr.SGL), x.maxRSGE)
			break
		}
		idx := x.rqHead & (x.rqCnt - 1)
		w := unsafe.Add(x.rq, uintptr(idx)<<x.rqShift)
		j := 0
		for _, s := range wr.SGL {
			if s.Length == 0 {
				continue
			}
			d := unsafe.Add(w, j*mlx5DataSegSize)
			put32(d, 0, s.Length)
			put32(d, 4, s.LKey)
			put64(d, 8, s.Addr)
			j++
		}
		if j < (1<<x.rqShift)/mlx5DataSegSize {
			d := unsafe.Add(w, j*mlx5DataSegSize)
			put32(d, 0, 0)
			put32(d, 4, mlx5InvalidLKey)
			put64(d, 8, 0)
		}
		x.rqWrid[idx] = wr.ID
		x.rqHead++
		n++
	}
	if n > 0 {
		release(&x.dbrec[mlx5RcvDBR], be32(x.rqHead&0xffff)) // udma_to_device_barrier
	}
	return n, err
}

// poll is mlx5_poll_cq for 64-byte CQEs.
func (m *mlx5CQ) poll(wc []WC) (int, error) {
	n := 0
	var err error
	for n < len(wc) {
		cqe := unsafe.Add(m.buf, uintptr(m.ci&(m.entries-1))*mlx5CQESize)
		// Acquire: op_own is the last byte the device writes (get_sw_cqe,
		// then udma_from_device_barrier). The word holds wqe_counter,
		// signature and op_own in memory order.
		var last [4]byte
		binary.NativeEndian.PutUint32(last[:], acquire((*uint32)(unsafe.Add(cqe, mlx5CQEWqeCounter))))
		opOwn := last[3]
		owner := uint8(0)
		if m.ci&m.entries != 0 {
			owner = 1
		}
		if opOwn>>4 == mlx5CQEInvalid || opOwn&1 != owner {
			break
		}
		m.ci++
		if err = m.decode(cqe, opOwn>>4, &wc[n]); err != nil {
			break
		}
		n++
	}
	// Our reads of the CQEs are done (update_cons_index).
	release(m.dbrec, be32(m.ci&0xffffff))
	return n, err
}

func (m *mlx5CQ) decode(cqe unsafe.Pointer, op uint8, w *WC) error {
	rsn := get32(cqe, mlx5CQESrqnUidx) & 0xffffff
	qpn := get32(cqe, mlx5CQESopDropQPN) & 0xffffff
	if m.p.cqeVersion == 0 {
		rsn = qpn
	}
	x := m.p.qps.get(rsn)
	if x == nil {
		return fmt.Errorf("a CQE for user index or QP %#x, which no QP of the context has: %w", rsn, syscall.EPROTO)
	}
	ctr := uint32(get16(cqe, mlx5CQEWqeCounter))
	*w = WC{QPNum: x.qpn, ByteLen: get32(cqe, mlx5CQEByteCnt)}
	switch op {
	case mlx5CQEReq, mlx5CQEReqErr:
		if x.sqCnt == 0 {
			return fmt.Errorf("a send CQE for QP %#x, which has no send queue: %w", x.qpn, syscall.EPROTO)
		}
		i := ctr & (x.sqCnt - 1)
		w.ID = x.sqWrid[i]
		release(&x.sqTail, x.sqEnd[i]) // the slots are free again
		if op == mlx5CQEReqErr {
			m.errStatus(cqe, w)
			return nil
		}
		w.ByteLen = 0
		switch get32(cqe, mlx5CQESopDropQPN) >> 24 {
		case mlx5OpcodeRDMAWriteImm:
			w.Flags |= WCWithImm
			w.Opcode = WCRDMAWrite
		case mlx5OpcodeRDMAWrite:
			w.Opcode = WCRDMAWrite
		case mlx5OpcodeSendImm:
			w.Flags |= WCWithImm
			w.Opcode = WCSend
		case mlx5OpcodeSend:
			w.Opcode = WCSend
		case mlx5OpcodeRDMARead:
			w.Opcode = WCRDMARead
			w.ByteLen = get32(cqe, mlx5CQEByteCnt)
		case mlx5OpcodeAtomicCS:
			w.Opcode, w.ByteLen = WCCompSwap, mlx5AtomicSize // handle_good_req
		case mlx5OpcodeAtomicFA:
			w.Opcode, w.ByteLen = WCFetchAdd, mlx5AtomicSize
		default:
			w.Status = WCGeneralErr
		}
	case mlx5CQERespWRImm, mlx5CQERespSend, mlx5CQERespSendIm, mlx5CQERespErr:
		switch {
		case x.srq != nil:
			w.ID = x.srq.complete(ctr) // srq->wrid[wqe_ctr], mlx5_free_srq_wqe
		case x.rqCnt == 0:
			return fmt.Errorf("a receive CQE for QP %#x, which has no receive queue: %w", x.qpn, syscall.EPROTO)
		default:
			w.ID = x.rqWrid[ctr&(x.rqCnt-1)]
			release(&x.rqTail, x.rqTail+1) // ours: only this CQ's poller writes it
		}
		if op == mlx5CQERespErr {
			m.errStatus(cqe, w)
			return nil
		}
		w.Opcode = WCRecv
		// handle_responder: the source QP and SL, the GRH bits, the
		// SLID, the path bits and the P_Key index (the low half of
		// imm_inval_pkey, whatever the opcode).
		fr := get32(cqe, mlx5CQEFlagsRQPN)
		w.SrcQP = fr & 0xffffff
		w.SL = uint8(fr>>24) & 0xf
		if (fr>>28)&3 != 0 {
			w.Flags |= WCWithGRH
		}
		w.SLID = get16(cqe, mlx5CQESLID)
		w.DLIDPathBits = *(*uint8)(unsafe.Add(cqe, mlx5CQEMLPath)) & 0x7f
		w.PKeyIndex = uint16(get32(cqe, mlx5CQEImm))
		switch op {
		case mlx5CQERespWRImm:
			w.Opcode = WCRecvRDMAWithImm
			w.Flags |= WCWithImm
			w.Imm = get32(cqe, mlx5CQEImm)
		case mlx5CQERespSendIm:
			w.Flags |= WCWithImm
			w.Imm = get32(cqe, mlx5CQEImm)
		}
	default:
		return fmt.Errorf("CQE opcode %d: %w", op, syscall.EPROTO)
	}
	return nil
}

// mlx5Syndrome maps struct mlx5_err_cqe's syndrome to the status
// (mlx5_handle_error_cqe); the rest are WCGeneralErr.
func mlx5Syndrome(syn uint8) WCStatus {
	switch syn {
	case 0x01:
		return WCLocLenErr
	case 0x02:
		return WCLocQPOpErr
	case 0x04:
		return WCLocProtErr
	case 0x05:
		return WCWRFlushErr
	case 0x06:
		return WCMWBindErr
	case 0x10:
		return WCBadRespErr
	case 0x11:
		return WCLocAccessErr
	case 0x12:
		return WCRemInvReqErr
	case 0x13:
		return WCRemAccessErr
	case 0x14:
		return WCRemOpErr
	case 0x15:
		return WCRetryExcErr
	case 0x16:
		return WCRNRRetryExcErr
	case 0x22:
		return WCRemAbortErr
	}
	return WCGeneralErr
}

func (m *mlx5CQ) errStatus(cqe unsafe.Pointer, w *WC) {
	syn := *(*uint8)(unsafe.Add(cqe, mlx5ErrCQESyndrome))
	w.Status = mlx5Syndrome(syn)
	w.VendorErr = uint32(*(*uint8)(unsafe.Add(cqe, mlx5ErrCQEVendor)))
	w.ByteLen = 0
}
