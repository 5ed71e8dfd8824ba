package uverbs

// The rxe data path, the Go side of rdma-core's providers/rxe/rxe.c
// (post_one_send, init_send_wqe, post_send_db, rxe_post_one_recv,
// rxe_poll_cq) against the kernel's drivers/infiniband/sw/rxe
// (rxe_queue.h, rxe_verbs.c rxe_post_send, rxe_req.c, rxe_cq.c
// rxe_cq_post).
//
// The queues are struct rxe_queue_buf (include/uapi/rdma/rdma_user_rxe.h):
// log2_elem_size and index_mask, the producer index at byte 128, the
// consumer index at 256, the slots from 384. The slot size and count come
// from the mapped header, never from sizeof: a send slot on 6.1 and 6.12
// is 256 bytes for one SGE (the SGEs start at 208), a receive slot 64
// (SGEs at 40). Indices are masked (both kernels): a queue is full when
// producer+1 == consumer.
//
// Memory ordering: ring.go (acquire the kernel's index, release ours).
//
// Linux 6.1 and 6.12 agree on the WQE fields rdma-core 44 writes, which are
// the only ones written here (wr, iova, dma, ssn; the kernel fills mask,
// state, psns itself in rxe_req.c req_next_wqe). They differ in two ways
// that matter:
//   - the doorbell (a POST_SEND write() with no work requests): newer
//     kernels' ib_uverbs_post_send (uverbs_cmd.c; 6.12 here) refuse a
//     wqe_size below sizeof(struct ib_uverbs_send_wr), 56, with EINVAL
//     even when no work request follows; rdma-core sends sizeof(struct
//     ibv_send_wr), 128 on 64-bit, which both kernels take, and so do we;
//   - what the doorbell does: 6.1's rxe_post_send runs the requester inline
//     (rxe_run_task(&qp->req.task, 0): the whole send path runs in our
//     write()), 6.12 queues it on a workqueue (rxe_sched_task).
//
// rxe_post_recv has no doorbell: the kernel reads the receive queue when a
// packet arrives.

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
)

const (
	rxeSendWqeSize = unsafe.Sizeof(abi.RxeSendWqe{}) // 208: dma.sge[] / inline_data[]
	rxeRecvWqeSize = unsafe.Sizeof(abi.RxeRecvWqe{}) // 40: dma.sge[]
	rxeSGESize     = unsafe.Sizeof(abi.RxeSge{})     // 16, the layout of struct ibv_sge
	rxeWCSize      = unsafe.Sizeof(abi.IbUverbsWc{}) // 48

	// rxeDoorbellWqeSize is the wqe_size of the doorbell:
	// sizeof(struct ibv_send_wr) on 64-bit, as rdma-core's post_send_db.
	rxeDoorbellWqeSize = 128
	// rxeDoorbellLen is the doorbell's length: struct ib_uverbs_cmd_hdr
	// and struct ib_uverbs_post_send.
	rxeDoorbellLen = abi.CmdHdrSize + int(unsafe.Sizeof(abi.IbUverbsPostSend{}))
)

// rxeDoorbell is the doorbell command: struct ib_uverbs_cmd_hdr, then
// struct ib_uverbs_post_send, as rdma-core's post_send_db writes it.
type rxeDoorbell struct {
	hdr abi.IbUverbsCmdHdr
	cmd abi.IbUverbsPostSend
}

// The command is rxeDoorbellLen bytes, no padding.
const (
	_ = uint(int(unsafe.Sizeof(rxeDoorbell{})) - rxeDoorbellLen)
	_ = uint(rxeDoorbellLen - int(unsafe.Sizeof(rxeDoorbell{})))
)

// rxeQP is the userspace half of an rxe QP.
type rxeQP struct {
	fd *sys.FD
	// raw is fd's number, -1 for a fake: the doorbell writes to it
	// directly. The number stays valid while the QP is live, as the
	// context's ioctls rely on: the context's Close destroys the QP,
	// under the lock PostSend holds shared, before it closes fd.
	raw int
	// db is the doorbell command, written once by rxeInit, and dbResp
	// where the kernel writes its response. They are the QP's own memory
	// (the Go heap does not move objects, and the QP is in use, so kept
	// alive, while a doorbell is written), as rdma-core's post_send_db
	// writes its command from the stack.
	db     rxeDoorbell
	dbResp abi.IbUverbsPostSendResp

	sqMu       sync.Mutex
	sq         rxeRing
	ssn        uint32
	maxSendSGE int
	maxInline  int

	rqMu       sync.Mutex
	rq         rxeRing
	hasRQ      bool
	maxRecvSGE int

	ud bool
}

// rxeInit sets up the data path of a QP rxe created (qpCreated mapped
// the receive queue, unless an SRQ serves it, then the send queue).
func (qp *QP) rxeInit(c *Context, d *driverRes) error {
	maps := d.mapped()
	if len(maps) < 1 {
		return fmt.Errorf("rxe QP without a mapped send queue: %w", syscall.EPROTO)
	}
	x := &qp.rxeQP
	// What abi.AppendWriteCmd would write, stored as one struct.
	x.db = rxeDoorbell{
		hdr: abi.IbUverbsCmdHdr{Command: abi.IB_USER_VERBS_CMD_POST_SEND,
			InWords: uint16(rxeDoorbellLen / 4), OutWords: uint16(unsafe.Sizeof(abi.IbUverbsPostSendResp{}) / 4)},
		cmd: abi.IbUverbsPostSend{Response: addrOf(bytesOf(&x.dbResp)), QpHandle: qp.handle, WqeSize: rxeDoorbellWqeSize},
	}
	x.fd, x.raw, x.ud = c.fd, c.core.Raw(), qp.typ == QPTypeUD
	x.sq = newRxeRing(maps[len(maps)-1])
	if len(maps) == 2 {
		x.rq, x.hasRQ = newRxeRing(maps[0]), true
	}
	if x.sq.slotSize() < rxeSendWqeSize || (x.hasRQ && x.rq.slotSize() < rxeRecvWqeSize) {
		return fmt.Errorf("rxe queue slots of %d and %d bytes are too small for a WQE: %w",
			x.sq.slotSize(), x.rq.slotSize(), syscall.EPROTO)
	}
	sqRoom := int(x.sq.slotSize() - rxeSendWqeSize)
	x.maxSendSGE = min(int(qp.cap.MaxSendSGE), sqRoom/int(rxeSGESize))
	x.maxInline = min(int(qp.cap.MaxInlineData), sqRoom)
	if x.hasRQ {
		x.maxRecvSGE = min(int(qp.cap.MaxRecvSGE), int(x.rq.slotSize()-rxeRecvWqeSize)/int(rxeSGESize))
	}
	qp.rxe = x
	return nil
}

// errFull is the error of a post to a full queue (rdma-core: ENOMEM).
var errFull = errs.Wrap("the work queue is full", syscall.ENOMEM)

// PostSend posts the send work requests wrs to the QP's send queue, in
// order, and rings the doorbell once, like ibv_post_send. It returns how
// many it posted: on an error, wrs[n] is the one that failed (ibv's
// bad_wr) and those before it were posted. When the doorbell itself fails
// (EINVAL before the QP reaches RTS), n counts the requests left in the
// queue, which the kernel takes at the next doorbell, as with rdma-core.
// It does not allocate.
//
// On rxe the requests go into the send queue the QP shares with the
// kernel, and a POST_SEND write() without work requests tells the kernel
// to look (rdma-core providers/rxe/rxe.c post_send_db). That write() is
// a raw system call (sys.FD.RawWrite): it never sleeps in a way the Go
// scheduler must know about — on 6.1 it runs rxe's requester inline for a
// few microseconds, on 6.12 it queues work — so handing off the P on each
// post would cost more than the call.
//
// Errors (*Error): EINVAL for a request the QP cannot take (an opcode
// other than those this package posts, too many SGEs, inline data
// longer than MaxInlineData or with RDMA read or an atomic, a UD send
// without an address handle, an RDMA operation or atomic on UD, on rxe an
// atomic with less than 8 bytes of SGL or a remote address not 8-byte
// aligned, as rdma-core's rxe provider checks at post); ENOMEM when the
// send queue is full; the doorbell's errno (EINVAL before the QP is in
// RTS); ErrNotSupported on a driver without a data path here (the
// generic provider), and on mlx5 for an atomic when the device's
// AtomicCap is AtomicNone (libmlx5's EOPNOTSUPP); os.ErrClosed after
// Close.
//
// An atomic whose remote memory lacks AccessRemoteAtomic, or whose
// responder QP lacks it, is posted: it completes with WCRemAccessErr
// (rxe: rxe_resp.c's access check NAKs it), or, on rxe, WCRemInvReqErr
// when the responder QP does not allow remote atomics.
//
// On mlx5 (unproven on hardware: see mlx5_data.go) the requests become
// send WQEs in the QP's buffer; the doorbell is the doorbell record and a
// store to the UAR page, no system call.
func (qp *QP) PostSend(wrs []SendWR) (int, error) {
	const op = "post send"
	if qp == nil || qp.c == nil {
		return 0, errNilPost(op)
	}
	// No defer: the data path's hottest call but Poll.
	qp.mu.RLock()
	if qp.destroyed.Load() {
		qp.mu.RUnlock()
		return 0, qp.c.err(op, os.ErrClosed)
	}
	if m := qp.mlx5; m != nil {
		m.sqMu.Lock()
		n, err := m.postSend(wrs)
		m.sqMu.Unlock()
		qp.mu.RUnlock()
		if err != nil {
			return n, qp.c.err(op, err)
		}
		return n, nil
	}
	x := qp.rxe
	if x == nil {
		qp.mu.RUnlock()
		return 0, qp.c.err(op, errNoDataPath(qp.c))
	}
	x.sqMu.Lock()
	n, err := x.postSend(wrs)
	if n > 0 {
		// Like rdma-core's rxe_post_send, a failed doorbell leaves the n
		// requests in the queue: the kernel takes them at the next one.
		if derr := x.doorbell(); derr != nil {
			err = derr
		}
	}
	x.sqMu.Unlock()
	qp.mu.RUnlock()
	if err != nil {
		return n, qp.c.err(op, err)
	}
	return n, nil
}

func (x *rxeQP) postSend(wrs []SendWR) (int, error) {
	return x.sq.post(len(wrs), func(slot unsafe.Pointer, k int) error { return x.writeSend(slot, &wrs[k]) })
}

// writeSend fills slot p with wr (init_send_wqe, convert_send_wr).
func (x *rxeQP) writeSend(p unsafe.Pointer, wr *SendWR) error {
	rdma, atomic := false, false
	switch wr.Opcode {
	case WRSend, WRSendWithImm:
		if x.ud && (wr.AH == nil || wr.AH.num == 0) {
			return errArg("a UD send needs an address handle (SendWR.AH)")
		}
	case WRRDMAWrite, WRRDMAWriteWithImm, WRRDMARead:
		if x.ud {
			return errArg("%v on a UD QP", wr.Opcode)
		}
		rdma = true
	case WRAtomicCmpAndSwp, WRAtomicFetchAndAdd:
		if x.ud {
			return errArg("%v on a UD QP", wr.Opcode)
		}
		if wr.Inline != nil {
			return errArg("inline data with %v: the original value is returned into the SGL", wr.Opcode)
		}
		atomic = true
	default:
		return errArg("opcode %v: PostSend posts SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ and the atomics", wr.Opcode)
	}
	if wr.Flags&^(SendFence|SendSignaled|SendSolicited) != 0 {
		return errArg("send flags %#x", uint32(wr.Flags))
	}
	w := (*abi.RxeSendWqe)(p)
	*w = abi.RxeSendWqe{} // the kernel leaves the last use's fields behind
	w.Wr.WrId = wr.ID
	w.Wr.Opcode = uint32(wr.Opcode)
	w.Wr.SendFlags = uint32(wr.Flags)
	if wr.Opcode == WRSendWithImm || wr.Opcode == WRRDMAWriteWithImm {
		w.Wr.Ex = be32(wr.Imm)
	}
	if x.ud {
		// wr.ud: remote_qpn, remote_qkey, pkey_index, reserved, ah_num;
		// the address vector itself stays in the kernel (ah_num).
		w.Wr.Wr.RemoteQpn = wr.RemoteQPN
		w.Wr.Wr.RemoteQkey = wr.RemoteQKey
		w.Wr.Wr.AhNum = wr.AH.num
	}
	if rdma {
		// wr.rdma: remote_addr (u64) then rkey (u32), over the union
		// the abi type spells as wr.ud.
		u := unsafe.Pointer(&w.Wr.Wr)
		*(*uint64)(u) = wr.RemoteAddr
		*(*uint32)(unsafe.Add(u, 8)) = wr.RKey
		w.Iova = wr.RemoteAddr
	}
	if atomic {
		// validate_send_wr: an atomic needs 8 bytes to return the
		// original value into and an 8-byte aligned remote address
		// (rdma-core's rxe provider answers EINVAL at post, before the
		// kernel sees the request).
		var n uint64
		for _, s := range wr.SGL {
			n += uint64(s.Length)
		}
		if n < 8 || wr.RemoteAddr&7 != 0 {
			return errArg("%v of %d bytes at remote address %#x: it needs at least 8 bytes and an 8-byte aligned address", wr.Opcode, n, wr.RemoteAddr)
		}
		// wr.atomic: remote_addr, compare_add, swap (u64), rkey (u32),
		// over the union the abi type spells as wr.ud (convert_send_wr).
		u := unsafe.Pointer(&w.Wr.Wr)
		*(*uint64)(u) = wr.RemoteAddr
		*(*uint64)(unsafe.Add(u, 8)) = wr.CompareAdd
		*(*uint64)(unsafe.Add(u, 16)) = wr.Swap
		*(*uint32)(unsafe.Add(u, 24)) = wr.RKey
		w.Iova = wr.RemoteAddr
	}
	data := unsafe.Add(p, rxeSendWqeSize)
	var length uint64
	nsge := 0
	if wr.Inline != nil {
		if wr.Opcode == WRRDMARead {
			return errArg("inline data with RDMA_READ")
		}
		if len(wr.Inline) > x.maxInline {
			return errArg("%d bytes inline: the QP takes %d", len(wr.Inline), x.maxInline)
		}
		copy(unsafe.Slice((*byte)(data), len(wr.Inline)), wr.Inline)
		w.Wr.SendFlags |= uint32(sendInline)
		length, nsge = uint64(len(wr.Inline)), 1
	} else {
		if len(wr.SGL) > x.maxSendSGE {
			return errArg("%d SGEs: the QP takes %d", len(wr.SGL), x.maxSendSGE)
		}
		sges := unsafe.Slice((*abi.RxeSge)(data), len(wr.SGL))
		for i, s := range wr.SGL {
			sges[i] = abi.RxeSge{Addr: s.Addr, Length: s.Length, Lkey: s.LKey}
			length += uint64(s.Length)
		}
		nsge = len(wr.SGL)
	}
	if length > 1<<31 {
		return errArg("%d bytes: at most %d per work request", length, 1<<31)
	}
	w.Dma.Length = uint32(length)
	w.Dma.Resid = uint32(length)
	w.Dma.NumSge = uint32(nsge)
	w.Ssn = x.ssn
	x.ssn++
	return nil
}

// doorbell is post_send_db: write() of IB_USER_VERBS_CMD_POST_SEND with
// no work requests (uverbs_cmd.c ib_uverbs_post_send then calls the
// driver's post_send with an empty list, and rxe_post_send for a user QP
// kicks the requester).
func (x *rxeQP) doorbell() error {
	var n int
	var err error
	if x.raw >= 0 { // no FD check, interface call or descriptor lock: see raw
		n, err = sys.RawWriteNumber(x.raw, unsafe.Pointer(&x.db), rxeDoorbellLen)
	} else {
		n, err = x.fd.RawWrite(unsafe.Pointer(&x.db), rxeDoorbellLen)
	}
	if err != nil {
		return err
	}
	if n != rxeDoorbellLen {
		return fmt.Errorf("doorbell write of %d bytes took %d: %w", rxeDoorbellLen, n, syscall.EIO)
	}
	return nil
}

// PostRecv posts the receive work requests wrs to the QP's receive queue,
// like ibv_post_recv. It returns how many it posted; on an error wrs[n]
// failed and those before it were posted. It does not allocate and makes
// no system call on rxe (the kernel reads the queue when a message
// arrives).
//
// Errors (*Error): EINVAL for too many SGEs, or for a QP created with an
// SRQ (its receives are posted with SRQ.PostRecv); ENOMEM when the receive
// queue is full; ErrNotSupported for a QP without a receive queue of its
// own or a driver without a data path here; os.ErrClosed after Close.
func (qp *QP) PostRecv(wrs []RecvWR) (int, error) {
	const op = "post recv"
	if qp == nil || qp.c == nil {
		return 0, errNilPost(op)
	}
	qp.mu.RLock()
	defer qp.mu.RUnlock()
	if qp.destroyed.Load() {
		return 0, qp.c.err(op, os.ErrClosed)
	}
	if qp.srq != nil {
		// rxe_post_recv: a QP without a receive queue of its own is
		// EINVAL.
		return 0, qp.c.err(op, errArg("the QP receives through its SRQ: post to the SRQ"))
	}
	if m := qp.mlx5; m != nil {
		if m.rqCnt == 0 {
			return 0, qp.c.err(op, fmt.Errorf("the QP has no receive queue: %w", ErrNotSupported))
		}
		m.rqMu.Lock()
		n, err := m.postRecv(wrs)
		m.rqMu.Unlock()
		if err != nil {
			return n, qp.c.err(op, err)
		}
		return n, nil
	}
	x := qp.rxe
	if x == nil || !x.hasRQ {
		return 0, qp.c.err(op, errNoDataPath(qp.c))
	}
	x.rqMu.Lock()
	n, err := x.postRecv(wrs)
	x.rqMu.Unlock()
	if err != nil {
		return n, qp.c.err(op, err)
	}
	return n, nil
}

func (x *rxeQP) postRecv(wrs []RecvWR) (int, error) {
	return postRecvRing(&x.rq, x.maxRecvSGE, wrs)
}

// Poll copies up to len(wc) completions from the CQ into wc, oldest first,
// and returns how many, like ibv_poll_cq; 0 means none is waiting. It
// makes no system call and does not allocate. Pollers of one CQ take turns.
//
// Errors (*Error): ErrNotSupported on a driver without a data path here
// (the generic provider); EPROTO for a CQE the device wrote that names no
// QP of the context (mlx5); os.ErrClosed after Close.
func (cq *CQ) Poll(wc []WC) (int, error) {
	const op = "poll cq"
	if cq == nil || cq.c == nil {
		return 0, errNilPost(op)
	}
	cq.pmu.Lock()
	if m := cq.m5; m != nil && !cq.pdone {
		// mlx5's CQ, also in line.
		n, err := m.poll(wc)
		cq.pmu.Unlock()
		if err != nil {
			return n, cq.c.err(op, err)
		}
		return n, nil
	}
	if cq.pdone || !cq.hasRing { // an mlx5 CQ gets here only once done
		return cq.pollOther(wc) // unlocks
	}
	// rxe's ring, consumed in line (no closure, no defer: the poll loop
	// is the data path's hottest call).
	r := &cq.ring
	cons := r.hdr.ConsumerIndex // ours
	prod := acquire(&r.hdr.ProducerIndex)
	n := 0
	for ; n < len(wc) && cons != prod; n++ {
		wc[n].set((*abi.IbUverbsWc)(r.slot(cons)))
		cons = r.next(cons)
	}
	if n > 0 {
		release(&r.hdr.ConsumerIndex, cons)
	}
	cq.pmu.Unlock()
	return n, nil
}

// pollOther is Poll of a closed CQ or one without a data path; cq.pmu
// is held, and released here.
func (cq *CQ) pollOther(wc []WC) (int, error) {
	const op = "poll cq"
	defer cq.pmu.Unlock()
	if cq.pdone {
		return 0, cq.c.err(op, os.ErrClosed)
	}
	return 0, cq.c.err(op, errNoDataPath(cq.c))
}

// rxeInit sets up the poll path of a CQ rxe created.
func (cq *CQ) rxeInit(d *driverRes) error {
	if d.nmaps != 1 {
		return fmt.Errorf("rxe CQ with %d mapped queues: %w", d.nmaps, syscall.EPROTO)
	}
	cq.ring = newRxeRing(d.maps[0])
	if cq.ring.slotSize() < rxeWCSize {
		return fmt.Errorf("rxe CQ slots of %d bytes: %w", cq.ring.slotSize(), syscall.EPROTO)
	}
	cq.hasRing = true
	return nil
}

func errNoDataPath(c *Context) error {
	return fmt.Errorf("purerdma has no data path for the %s provider yet: %w", c.prov.name(), ErrNotSupported)
}

func errNilPost(op string) error { return errs.New(op, "", errNil) }
