package uverbs

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/verbs"
)

// SRQAttr are a shared receive queue's attributes (struct ibv_srq_attr).
type SRQAttr struct {
	// MaxWR is how many receive requests the queue holds (max_wr).
	MaxWR uint32
	// MaxSGE is the most SGEs one receive request may have (max_sge).
	MaxSGE uint32
	// Limit arms the limit event (srq_limit): once fewer than Limit
	// receive requests are left in the queue, the device raises
	// EventSRQLimitReached on the async event stream (Context.AsyncEvent,
	// AsyncEvent.SRQ) and disarms the limit (it reads 0 again); Modify
	// with SRQAttrLimit arms it again. 0 is disarmed.
	Limit uint32
}

// SRQAttrMask says which SRQAttr fields SRQ.Modify changes (enum
// ibv_srq_attr_mask).
type SRQAttrMask uint32

// The SRQ attribute mask bits.
const (
	// SRQAttrMaxWR resizes the queue to MaxWR requests (IBV_SRQ_MAX_WR),
	// where the device can (DeviceAttr.DeviceCapFlags has
	// IB_UVERBS_DEVICE_SRQ_RESIZE; rxe can, keeping the posted requests).
	SRQAttrMaxWR SRQAttrMask = 1 << 0
	// SRQAttrLimit sets Limit (IBV_SRQ_LIMIT).
	SRQAttrLimit SRQAttrMask = 1 << 1
)

// SRQ is a shared receive queue (struct ibv_srq): receive requests that
// the QPs created with it (QPInitAttr.SRQ) take their messages into, in
// the order they were posted, whichever QP a message arrives on. Each
// receive completes on the receiving QP's receive CQ with that QP's
// number (WC.QPNum).
//
// On rxe the queue is shared with the kernel as a QP's receive queue is
// (providers/rxe rxe_create_srq, rxe_post_srq_recv); on mlx5 it is a
// buffer of linked WQEs and a doorbell record outside the Go heap
// (mlx5_srq.go; unproven on hardware). Either way PostRecv makes no
// system call and allocates nothing. The generic provider creates none
// (ErrNotSupported).
type SRQ struct {
	c      *Context
	pd     *PD
	handle uint32
	uh     uint64
	num    uint32
	res    driverRes // the mapped queue (rxe)
	seqV   uint64
	rxe    *rxeSRQ // &rxeSRQ on rxe; nil elsewhere
	rxeSRQ rxeSRQ
	m5     *mlx5SRQ // on mlx5 (mlx5_srq.go); nil elsewhere

	lifecycle
}

// rxeSRQ is the userspace half of an rxe SRQ (rdma-core's struct rxe_srq).
type rxeSRQ struct {
	mu     sync.Mutex // posts and resizes (rdma-core's rq.lock)
	rq     rxeRing
	mapped bool // false after a resize whose new queue could not be mapped
	maxSGE int
	// cmd is struct rxe_modify_srq_cmd, and mi where the kernel writes
	// the new queue's struct mminfo on a resize (mmap_info_addr: the
	// kernel copies to that user address, rxe_srq.c rxe_srq_from_attr,
	// rxe_queue.c rxe_queue_resize). Both live in the SRQ, whose memory
	// the Go heap does not move.
	cmd abi.RxeModifySrqCmd
	mi  abi.Mminfo
}

// CreateSRQ creates a shared receive queue on the PD, like ibv_create_srq:
// the write command IB_USER_VERBS_CMD_CREATE_SRQ (which
// ibv_cmd_create_srq falls back to) with the SRQ's user handle, so that
// its async events name it. attr.MaxWR and attr.MaxSGE are what the queue
// must hold at least; the device may give more (Query says). attr.Limit
// arms the limit event at once.
//
// On rxe the response carries the queue's mmap offset (struct
// rxe_create_srq_resp), which is mapped from the device file
// (providers/rxe rxe_create_srq). On mlx5 the buffer and doorbell record
// are allocated first and named in struct mlx5_ib_create_srq
// (mlx5_create_srq): EINVAL before any call for a MaxWR above the
// device's max_srq_recv_wr or a MaxSGE above what its receive descriptors
// hold, as libmlx5 checks.
//
// Errors: an *Error wrapping the kernel's errno: EINVAL for sizes the
// device refuses (rxe_srq.c rxe_srq_chk_attr: MaxWR 0 or above
// DeviceAttr.MaxSRQWR, MaxSGE above MaxSRQSGE, Limit above MaxSRQWR);
// ErrNotSupported on the generic provider;
// os.ErrClosed after Close or for a closed PD.
func (pd *PD) CreateSRQ(attr SRQAttr) (*SRQ, error) {
	const op = "create srq"
	if pd == nil || pd.c == nil {
		return nil, errs.New(op, "", errNil)
	}
	c := pd.c
	if err := c.enter(op); err != nil {
		return nil, err
	}
	defer c.leave()
	if err := pd.alive(c, op); err != nil {
		return nil, err
	}
	s := &SRQ{c: c, pd: pd}
	switch p := c.prov.(type) {
	case *rxeProvider:
	case *mlx5Provider:
		s.uh = c.newUserHandle()
		if err := s.mlx5Create(c, p, attr); err != nil {
			c.dropUserHandle(s.uh)
			return nil, c.err(op, err)
		}
		s.seqV = c.core.NextSeq()
		c.track(s, s.uh)
		return s, nil
	default:
		return nil, c.err(op, errSRQProvider(c))
	}
	s.res.ms = c.maps
	s.uh = c.newUserHandle()
	resp := new(abi.IbUverbsCreateSrqResp)
	req := &abi.IbUverbsCreateSrq{Response: addrOf(bytesOf(resp)), UserHandle: s.uh, PdHandle: pd.handle,
		MaxWr: attr.MaxWR, MaxSge: attr.MaxSGE, SrqLimit: attr.Limit}
	drv := new(abi.RxeCreateSrqResp)
	if err := c.invokeWrite(abi.IB_USER_VERBS_CMD_CREATE_SRQ, bytesOf(req), bytesOf(resp), nil, bytesOf(drv)); err != nil {
		c.dropUserHandle(s.uh)
		return nil, c.err(op, err)
	}
	// The core response's srqn is XRC's (ib_uverbs_create_srq fills
	// it for XRC SRQs only); rxe says its number in its own response.
	s.handle, s.num = resp.SrqHandle, drv.SrqNum
	if err := s.rxeInit(c, drv.Mi, resp.MaxSge); err != nil {
		s.destroyLocked(false)
		c.dropUserHandle(s.uh)
		return nil, c.err(op, err)
	}
	s.seqV = c.core.NextSeq()
	c.track(s, s.uh)
	return s, nil
}

// rxeInit maps the SRQ's queue (mi) and sets up its post path; maxSGE is
// what the kernel answered.
func (s *SRQ) rxeInit(c *Context, mi abi.Mminfo, maxSGE uint32) error {
	if err := rxeMap(c, &s.res, mi, "shared receive queue"); err != nil {
		return err
	}
	x := &s.rxeSRQ
	x.rq = newRxeRing(s.res.maps[0])
	if x.rq.slotSize() < rxeRecvWqeSize {
		return fmt.Errorf("rxe SRQ slots of %d bytes are too small for a WQE: %w", x.rq.slotSize(), syscall.EPROTO)
	}
	x.maxSGE = min(int(maxSGE), int(x.rq.slotSize()-rxeRecvWqeSize)/int(rxeSGESize))
	x.mapped = true
	s.rxe = x
	return nil
}

// Handle returns the kernel's handle of the SRQ.
func (s *SRQ) Handle() uint32 {
	if s == nil {
		return 0
	}
	return s.handle
}

// Num returns the SRQ number the device gave: the srq_num of struct
// rxe_create_srq_resp or the srqn of struct mlx5_ib_create_srq_resp (the
// core response's srqn is set for XRC SRQs only), the number RDMA
// netlink's resource dump shows.
func (s *SRQ) Num() uint32 {
	if s == nil {
		return 0
	}
	return s.num
}

// PD returns the SRQ's protection domain.
func (s *SRQ) PD() *PD {
	if s == nil {
		return nil
	}
	return s.pd
}

// Context returns the context the SRQ belongs to.
func (s *SRQ) Context() *Context {
	if s == nil {
		return nil
	}
	return s.c
}

func (s *SRQ) stage() verbs.Stage { return verbs.StageSRQ }
func (s *SRQ) seq() uint64        { return s.seqV }

// begin starts an operation on the SRQ: the context's life lock, then the
// SRQ's shared lock; end ends it.
func (s *SRQ) begin(op string) error {
	if s == nil || s.c == nil {
		return errs.New(op, "", errNil)
	}
	c := s.c
	if err := c.enter(op); err != nil {
		return err
	}
	s.mu.RLock()
	if s.destroyed.Load() {
		s.mu.RUnlock()
		c.leave()
		return c.err(op, os.ErrClosed)
	}
	return nil
}

// end ends an operation begin started.
func (s *SRQ) end() { s.mu.RUnlock(); s.c.leave() }

// Modify changes the attributes mask names, like ibv_modify_srq (the write
// command IB_USER_VERBS_CMD_MODIFY_SRQ): SRQAttrLimit arms the limit
// event at attr.Limit (0 disarms it); SRQAttrMaxWR resizes the queue to
// at least attr.MaxWR requests. On rxe a resize maps the new queue, whose
// mmap offset the kernel writes to the address the driver data names
// (providers/rxe rxe_modify_srq), with posts held off meanwhile; the
// requests posted stay in it.
//
// Errors: an *Error wrapping EINVAL for a nil attr or mask bits other
// than these two (before any call), or the kernel's errno: EINVAL for a
// limit above the queue's size or a size below the armed limit or above
// DeviceAttr.MaxSRQWR (rxe_srq_chk_attr); a resize on mlx5, which cannot
// (mlx5_ib_modify_srq: EINVAL); os.ErrClosed after Close.
func (s *SRQ) Modify(attr *SRQAttr, mask SRQAttrMask) error {
	const op = "modify srq"
	if err := s.begin(op); err != nil {
		return err
	}
	defer s.end()
	c := s.c
	if attr == nil || mask&^(SRQAttrMaxWR|SRQAttrLimit) != 0 {
		return c.err(op, errArg("modify srq with mask %#x (SRQAttrMaxWR, SRQAttrLimit) and attributes %v", uint32(mask), attr))
	}
	req := &abi.IbUverbsModifySrq{SrqHandle: s.handle, AttrMask: uint32(mask), MaxWr: attr.MaxWR, SrqLimit: attr.Limit}
	x := s.rxe
	if x == nil {
		if err := c.invokeWrite(abi.IB_USER_VERBS_CMD_MODIFY_SRQ, bytesOf(req), nil, nil, nil); err != nil {
			return c.err(op, err)
		}
		return nil
	}
	// rxe_modify_srq wants struct rxe_modify_srq_cmd whatever the mask;
	// a resize writes the new queue's mminfo through it.
	x.mu.Lock()
	defer x.mu.Unlock()
	x.mi = abi.Mminfo{}
	x.cmd = abi.RxeModifySrqCmd{MmapInfoAddr: addrOf(bytesOf(&x.mi))}
	if err := c.invokeWrite(abi.IB_USER_VERBS_CMD_MODIFY_SRQ, bytesOf(req), nil, bytesOf(&x.cmd), nil); err != nil {
		return c.err(op, err)
	}
	if mask&SRQAttrMaxWR == 0 {
		return nil
	}
	// The kernel moved the requests to a new queue: map it in place of
	// the old one, as rxe_modify_srq does (munmap, then mmap).
	mi := x.mi
	s.res.release()
	x.mapped = false
	s.res.ms = c.maps
	if err := rxeMap(c, &s.res, mi, "resized shared receive queue"); err != nil {
		return c.err(op, err)
	}
	x.rq = newRxeRing(s.res.maps[0])
	if x.rq.slotSize() < rxeRecvWqeSize {
		return c.err(op, fmt.Errorf("rxe SRQ slots of %d bytes after the resize: %w", x.rq.slotSize(), syscall.EPROTO))
	}
	x.mapped = true
	return nil
}

// Query returns the SRQ's attributes as the device has them now, like
// ibv_query_srq (IB_USER_VERBS_CMD_QUERY_SRQ): its size, its SGEs and the
// armed limit (0 once the limit event fired).
//
// Errors: an *Error wrapping the kernel's errno; os.ErrClosed after Close.
func (s *SRQ) Query() (SRQAttr, error) {
	const op = "query srq"
	if err := s.begin(op); err != nil {
		return SRQAttr{}, err
	}
	defer s.end()
	resp := new(abi.IbUverbsQuerySrqResp)
	req := &abi.IbUverbsQuerySrq{Response: addrOf(bytesOf(resp)), SrqHandle: s.handle}
	if err := s.c.invokeWrite(abi.IB_USER_VERBS_CMD_QUERY_SRQ, bytesOf(req), bytesOf(resp), nil, nil); err != nil {
		return SRQAttr{}, s.c.err(op, err)
	}
	return SRQAttr{MaxWR: resp.MaxWr, MaxSGE: resp.MaxSge, Limit: resp.SrqLimit}, nil
}

// Close destroys the SRQ, like ibv_destroy_srq
// (IB_USER_VERBS_CMD_DESTROY_SRQ), and unmaps its queue. Closing a closed
// SRQ, or one whose Context was closed, returns nil.
//
// Errors: an *Error wrapping EBUSY while QPs still use the SRQ (the
// kernel's ib_destroy_srq_user); the SRQ then stays usable.
func (s *SRQ) Close() error {
	if s == nil {
		return errs.New("destroy srq", "", errNil)
	}
	return closeObject(s.c, "destroy srq", s)
}

func (s *SRQ) destroyLocked(closing bool) error {
	c := s.c
	if !s.destroyBegin() {
		return nil
	}
	resp := new(abi.IbUverbsDestroySrqResp)
	req := &abi.IbUverbsDestroySrq{Response: addrOf(bytesOf(resp)), SrqHandle: s.handle}
	err := c.invokeWrite(abi.IB_USER_VERBS_CMD_DESTROY_SRQ, bytesOf(req), bytesOf(resp), nil, nil)
	if !s.destroyEnd(err, closing) {
		return c.err("destroy srq", err)
	}
	if x := s.rxe; x != nil {
		x.mu.Lock() // no post is in flight: they hold s.mu shared
		x.mapped = false
		x.mu.Unlock()
	}
	s.res.release()
	c.untrack(s, s.uh)
	s.destroyDone()
	if err != nil { // off the hot path: keptErr is a call
		return keptErr(c, "destroy srq", err)
	}
	return nil
}

// PostRecv posts the receive work requests wrs to the shared receive
// queue, like ibv_post_srq_recv: in order, under the SRQ's lock
// (rxe_post_srq_recv). It returns how many it posted; on an error wrs[n]
// failed (ibv's bad_recv_wr) and those before it were posted. It does not
// allocate and makes no system call on rxe.
//
// Errors (*Error): ENOMEM when the queue is full (rxe_post_one_recv: more
// requests than it holds and the device has not consumed); EINVAL for a
// request with more SGEs than the SRQ's MaxSGE or more than 2 GiB;
// os.ErrClosed after Close.
func (s *SRQ) PostRecv(wrs []RecvWR) (int, error) {
	const op = "post srq recv"
	if s == nil || s.c == nil {
		return 0, errNilPost(op)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.destroyed.Load() {
		return 0, s.c.err(op, os.ErrClosed)
	}
	if m := s.m5; m != nil {
		m.mu.Lock()
		n, err := m.postRecv(wrs)
		m.mu.Unlock()
		if err != nil {
			return n, s.c.err(op, err)
		}
		return n, nil
	}
	x := s.rxe
	if x == nil {
		return 0, s.c.err(op, errNoDataPath(s.c))
	}
	x.mu.Lock()
	var n int
	var err error
	if x.mapped {
		n, err = postRecvRing(&x.rq, x.maxSGE, wrs)
	} else {
		err = fmt.Errorf("the SRQ has no queue mapped since a failed resize: %w", syscall.EIO)
	}
	x.mu.Unlock()
	if err != nil {
		return n, s.c.err(op, err)
	}
	return n, nil
}

// postRecvRing is rxe_post_one_recv for each of wrs, into r: the receive
// WQE (struct rxe_recv_wqe) and its SGEs in the slot, the producer index
// released once for all.
func postRecvRing(r *rxeRing, maxSGE int, wrs []RecvWR) (int, error) {
	return r.post(len(wrs), func(p unsafe.Pointer, k int) error {
		wr := &wrs[k]
		if len(wr.SGL) > maxSGE {
			return errArg("%d SGEs: the queue takes %d", len(wr.SGL), maxSGE)
		}
		var length uint64
		sges := unsafe.Slice((*abi.RxeSge)(unsafe.Add(p, rxeRecvWqeSize)), len(wr.SGL))
		for j, s := range wr.SGL {
			sges[j] = abi.RxeSge{Addr: s.Addr, Length: s.Length, Lkey: s.LKey}
			length += uint64(s.Length)
		}
		if length > 1<<31 {
			return errArg("%d bytes: at most %d per work request", length, 1<<31)
		}
		*(*abi.RxeRecvWqe)(p) = abi.RxeRecvWqe{WrId: wr.ID, Dma: abi.RxeDmaInfo{
			Length: uint32(length), Resid: uint32(length), NumSge: uint32(len(wr.SGL))}}
		return nil
	})
}
