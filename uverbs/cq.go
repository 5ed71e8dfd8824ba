package uverbs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/verbs"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// CQFlags are the creation flags of a CQ (IB_UVERBS_CQ_FLAGS_*).
type CQFlags uint32

// The CQ creation flags.
const (
	CQTimestampCompletion CQFlags = abi.IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
	CQIgnoreOverrun       CQFlags = abi.IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN
)

// CQAttr describes a CQ to create (ibv_create_cq's arguments).
type CQAttr struct {
	// CQE is the minimum number of entries (1 or more); the device may
	// give more, see CQ.CQE.
	CQE int
	// CompVector is the completion vector, below NumCompVectors.
	CompVector int
	// Channel, when not nil, receives the CQ's completion events.
	Channel *CompChannel
	// Flags are creation flags; drivers may refuse them (rxe: EOPNOTSUPP).
	Flags CQFlags
}

// CQ is a completion queue (struct ibv_cq).
type CQ struct {
	c       *Context
	handle  uint32
	uh      uint64
	cqe     int
	channel *CompChannel
	res     driverRes // what the provider gave the CQ
	seqV    uint64
	ring    rxeRing // the CQE ring on rxe (hasRing)
	hasRing bool
	m5      *mlx5CQ       // the CQE ring on mlx5: &m5CQ, or nil
	m5CQ    mlx5CQ        // in the CQ, not beside it: one allocation
	notify  [2]*notifyReq // ReqNotify's requests (all, solicited only), made on first use

	// pmu is the data path's lock, held by Poll from start to end, by
	// mlx5's arm (which reads the consumer index Poll moves) and by the
	// release of the rings at destroy, which sets pdone. A Mutex apart
	// from the lifecycle's RWMutex: Poll takes it at every call, and its
	// Lock and Unlock are a few instructions in line where the RWMutex's
	// are two calls and four atomic operations.
	pmu   sync.Mutex
	pdone bool // the rings are released: Poll answers os.ErrClosed

	lifecycle
	events [2]uint32 // completion and async events the kernel reported at destroy
}

// CreateCQ creates a completion queue, like ibv_create_cq:
// UVERBS_METHOD_CQ_CREATE with the context's async event file, and the
// provider's driver data and memory (rxe: the queue the kernel returns the
// mmap offset of; mlx5: the CQE ring and doorbell record, outside the Go
// heap, and the context's UAR).
//
// Errors: an *Error wrapping EINVAL for a CQE below 1 or a completion
// vector out of range (checked before the call) or the kernel's errno;
// ErrNotSupported with the generic provider; os.ErrClosed after Close or
// for a closed channel.
func (c *Context) CreateCQ(attr CQAttr) (*CQ, error) {
	cq := new(CQ)
	if err := c.createCQ(cq, attr); err != nil {
		return nil, err
	}
	return cq, nil
}

// CreateCQInto is CreateCQ into a CQ the caller provides, for programs
// that create and destroy completion queues at a high rate: cq, a zero CQ
// or one that was closed (by its Close or its Context's), becomes the new
// CQ, and the call allocates nothing. Pointers kept to cq from its
// earlier life then refer to the new CQ; do not use cq from other
// goroutines while the call runs.
//
// Errors: those of CreateCQ, which leave cq a zero CQ; an *Error wrapping
// EBUSY, before any call, when cq is still live.
func (c *Context) CreateCQInto(cq *CQ, attr CQAttr) error {
	const op = "create cq"
	if cq == nil || c == nil || c.fd == nil {
		return errs.New(op, "", errNil)
	}
	if cq.c != nil && !cq.isDestroyed() {
		return c.err(op, errLive("CQ"))
	}
	*cq = CQ{}
	err := c.createCQ(cq, attr)
	if err != nil {
		*cq = CQ{}
	}
	return err
}

// createCQ creates the CQ into cq, a zero CQ.
func (c *Context) createCQ(cq *CQ, attr CQAttr) error {
	if err := c.enter("create cq"); err != nil {
		return err
	}
	err := c.createCQHeld(cq, attr)
	c.leave()
	return err
}

// createCQHeld is createCQ for a caller that has entered the context.
func (c *Context) createCQHeld(cq *CQ, attr CQAttr) error {
	const op = "create cq"
	if attr.CQE < 1 || attr.CQE > 1<<30 {
		return c.err(op, errArg("%d entries: want 1 to %d", attr.CQE, 1<<30))
	}
	if attr.CompVector < 0 || attr.CompVector >= int(c.numCompVectors) {
		return c.err(op, errArg("completion vector %d: the device has %d", attr.CompVector, c.numCompVectors))
	}
	if ch := attr.Channel; ch != nil {
		if ch.c != c {
			return c.err(op, errArg("the completion channel belongs to another context"))
		}
		ch.mu.Lock()
		closed := ch.closed
		ch.mu.Unlock()
		if closed {
			return c.err(op, os.ErrClosed)
		}
	}
	// The provider's state lives in the CQ, the request and the driver
	// data in the scratch: nothing else is allocated.
	cq.c = c
	s := c.scr.get()
	err := c.createCQWith(cq, attr, s)
	c.scr.put(s)
	return err
}

// createCQWith makes createCQ's request in s, and the CQ.
func (c *Context) createCQWith(cq *CQ, attr CQAttr, s *scratch) error {
	const op = "create cq"
	d := &cq.res
	x := &s.drv
	x.reset()
	if err := c.prov.prepareCQ(c, uint32(attr.CQE), d, x); err != nil {
		return c.err(op, err)
	}
	cq.uh = c.newUserHandle()
	respCQE := &s.u32
	*respCQE = 0
	// The request is written in place (verbs.Call): the attributes are
	// CQ_CREATE's, as uverbs_std_types_cq.c declares them.
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE)
	k.NewHandle(abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	k.OutHeld(abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE, bytesOf(respCQE))
	k.Inline(abi.UVERBS_ATTR_CREATE_CQ_CQE, 4, uint64(x.cqe))
	k.Inline(abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 8, cq.uh)
	if attr.Channel != nil {
		k.FD(abi.UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, attr.Channel.raw)
	}
	k.Inline(abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 4, uint64(uint32(attr.CompVector)))
	if c.async != nil {
		k.FD(abi.UVERBS_ATTR_CREATE_CQ_EVENT_FD, c.asyncRaw)
		k.Optional()
	}
	if attr.Flags != 0 {
		k.Inline(abi.UVERBS_ATTR_CREATE_CQ_FLAGS, 4, uint64(uint32(attr.Flags)))
	}
	x.addCall(k)
	if err := c.core.DoCall(k); err != nil {
		c.dropUserHandle(cq.uh)
		err = d.createFailed(err)
		if errors.Is(err, syscall.EINVAL) {
			// Name the limit the kernel does not: ib_uverbs_create_cq
			// (uverbs_std_types_cq.c) and the drivers refuse more than
			// the device's max_cqe with a bare EINVAL.
			if a, qerr := c.queryDevice(); qerr == nil && uint64(attr.CQE) > uint64(a.MaxCQE) {
				err = fmt.Errorf("%d entries: %s takes at most %d (max_cqe): %w", attr.CQE, c.dev.Name, a.MaxCQE, err)
			}
		}
		return c.err(op, err)
	}
	d.created()
	cq.handle, _ = k.Created(abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	cq.cqe = int(*respCQE)
	if err := c.prov.cqCreated(c, d, x); err != nil {
		cq.destroyLocked(false)
		return c.err(op, err)
	}
	if _, ok := c.prov.(*rxeProvider); ok {
		if err := cq.rxeInit(d); err != nil {
			cq.destroyLocked(false)
			return c.err(op, err)
		}
	}
	if p, ok := c.prov.(*mlx5Provider); ok {
		if err := cq.mlx5Init(p, d, x); err != nil {
			cq.destroyLocked(false)
			return c.err(op, err)
		}
	}
	if ch := attr.Channel; ch != nil {
		ch.mu.Lock()
		ch.users++
		ch.mu.Unlock()
		cq.channel = ch
	}
	cq.seqV = c.core.NextSeq()
	c.track(cq, cq.uh)
	return nil
}

// Handle returns the kernel's handle of the CQ.
func (cq *CQ) Handle() uint32 {
	if cq == nil {
		return 0
	}
	return cq.handle
}

// CQE returns the number of entries the CQ has (at least what was asked).
func (cq *CQ) CQE() int {
	if cq == nil {
		return 0
	}
	return cq.cqe
}

// Context returns the context the CQ belongs to.
func (cq *CQ) Context() *Context {
	if cq == nil {
		return nil
	}
	return cq.c
}

func (cq *CQ) stage() verbs.Stage { return verbs.StageCQ }
func (cq *CQ) seq() uint64        { return cq.seqV }

// ReqNotify arms the CQ so the next completion (the next solicited one
// with solicitedOnly) produces an event on its completion channel, like
// ibv_req_notify_cq: through the kernel (REQ_NOTIFY_CQ through
// INVOKE_WRITE) for rxe, through the doorbell page for mlx5 (libmlx5's
// mlx5_arm_cq, with the consumer index Poll keeps and the count of
// events GetEvent has returned).
//
// Errors: os.ErrClosed after the CQ is destroyed; ErrNotSupported where
// the provider has no way to arm; the errno otherwise.
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	if cq == nil {
		return errs.New("req notify cq", "", errNil)
	}
	c := cq.c
	const op = "req notify cq"
	if err := c.enter(op); err != nil {
		return err
	}
	// No defers: an event loop arms its CQ once per event.
	if cq.m5 != nil {
		// mlx5 arms in user space, through the doorbell page.
		cq.pmu.Lock()
		var err error
		if cq.pdone {
			err = os.ErrClosed
		} else {
			err = cq.m5.arm(solicitedOnly)
		}
		cq.pmu.Unlock()
		c.leave()
		if err != nil {
			return c.err(op, err)
		}
		return nil
	}
	if !c.prov.reqNotify() {
		c.leave()
		return c.err(op, fmt.Errorf("%s arms CQs through its doorbell page: %w", c.prov.name(), ErrNotSupported))
	}
	cq.mu.Lock()
	err := cq.reqNotifyLocked(c, solicitedOnly)
	cq.mu.Unlock()
	c.leave()
	if err != nil {
		return c.err(op, err)
	}
	return nil
}

// reqNotifyLocked is ReqNotify's request, under the CQ's lock and the
// context's.
func (cq *CQ) reqNotifyLocked(c *Context, solicitedOnly bool) error {
	if cq.destroyed.Load() {
		return os.ErrClosed
	}
	k := 0
	if solicitedOnly {
		k = 1
	}
	n := cq.notify[k]
	if n == nil {
		var err error
		if n, err = c.newNotifyReq(cq.handle, uint32(k)); err != nil {
			return err
		}
		cq.notify[k] = n
	}
	// The request's memory is n's, which cq keeps.
	return c.core.DoMarshalled(n.buf)
}

// notifyReq is a CQ's REQ_NOTIFY_CQ request, marshalled once: every call
// of an event loop sends the same bytes (the CQ's handle, the solicited
// flag, carried inline), so ReqNotify reissues them without building,
// checking and marshalling a request each time, and allocates nothing.
// The request is input only: the kernel writes nothing back into it.
type notifyReq struct {
	r   *abi.Request // owns buf
	req abi.IbUverbsReqNotifyCq
	buf []byte
}

func (c *Context) newNotifyReq(handle, solicited uint32) (*notifyReq, error) {
	n := &notifyReq{req: abi.IbUverbsReqNotifyCq{CqHandle: handle, SolicitedOnly: solicited}}
	n.r = invokeWriteInto(abi.NewRequest(c.api, c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE),
		abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, bytesOf(&n.req), nil, nil, nil)
	buf, err := n.r.Marshal()
	if err != nil {
		return nil, err
	}
	n.buf = buf
	return n, nil
}

// Close destroys the CQ, like ibv_destroy_cq (UVERBS_METHOD_CQ_DESTROY),
// and releases its memory. Closing a closed CQ, or one whose Context was
// closed, returns nil.
//
// Errors: an *Error wrapping EBUSY while a QP still uses the CQ; the CQ
// then stays usable.
func (cq *CQ) Close() error {
	if cq == nil {
		return errs.New("destroy cq", "", errNil)
	}
	return closeObject(cq.c, "destroy cq", cq)
}

func (cq *CQ) destroyLocked(closing bool) error {
	c := cq.c
	if !cq.destroyBegin() {
		return nil
	}
	s := c.scr.get()
	resp := &s.cqDone
	*resp = abi.IbUverbsDestroyCqResp{}
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_DESTROY)
	k.Handle(abi.UVERBS_ATTR_DESTROY_CQ_HANDLE, cq.handle)
	k.OutHeld(abi.UVERBS_ATTR_DESTROY_CQ_RESP, bytesOf(resp))
	err := c.core.DoCall(k)
	cq.events = [2]uint32{resp.CompEventsReported, resp.AsyncEventsReported}
	c.scr.put(s)
	if !cq.destroyEnd(err, closing) {
		return c.err("destroy cq", err)
	}
	cq.pmu.Lock()
	cq.pdone = true
	cq.res.release()
	cq.pmu.Unlock()
	if ch := cq.channel; ch != nil {
		ch.mu.Lock()
		ch.users--
		ch.mu.Unlock()
	}
	c.untrack(cq, cq.uh)
	cq.destroyDone()
	if err != nil { // off the hot path: keptErr is a call
		return keptErr(c, "destroy cq", err)
	}
	return nil
}

// waitPollers returns once no Poll of the CQ is under way: a Poll holds
// pmu from start to end.
func (cq *CQ) waitPollers() {
	cq.pmu.Lock()
	defer cq.pmu.Unlock()
}

// CompChannel is a completion event channel (struct ibv_comp_channel).
type CompChannel struct {
	objLink
	c    *Context
	fd   *sys.FD
	raw  int
	seqV uint64

	mu     sync.Mutex
	closed bool
	users  int
	rd     sync.Mutex // one reader at a time
	buf    []byte
}

// CreateCompChannel creates a completion channel, like
// ibv_create_comp_channel: write command CREATE_COMP_CHANNEL through
// INVOKE_WRITE. Its descriptor is non-blocking. GetEvent waits for it in
// the Go runtime poller with a context that can be done, and in a
// blocking epoll_wait(2) with one that cannot (see GetEvent).
//
// Errors: an *Error wrapping the errno, or os.ErrClosed after Close.
func (c *Context) CreateCompChannel() (*CompChannel, error) {
	const op = "create completion channel"
	if err := c.enter(op); err != nil {
		return nil, err
	}
	defer c.leave()
	resp := new(abi.IbUverbsCreateCompChannelResp)
	req := new(abi.IbUverbsCreateCompChannel)
	req.Response = addrOf(bytesOf(resp))
	if err := c.invokeWrite(abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, bytesOf(req), bytesOf(resp), nil, nil); err != nil {
		return nil, c.err(op, err)
	}
	f, err := c.fd.Adopt(int(int32(resp.Fd)), "completion channel of "+c.dev.Name)
	if err != nil {
		return nil, c.err(op, err)
	}
	ch := &CompChannel{c: c, fd: f, raw: int(int32(resp.Fd)), buf: make([]byte, compEventDescSize)}
	ch.seqV = c.core.NextSeq()
	c.track(ch, 0)
	return ch, nil
}

func (ch *CompChannel) stage() verbs.Stage { return verbs.StageChannel }
func (ch *CompChannel) seq() uint64        { return ch.seqV }

// GetEvent waits for the next completion event, like ibv_get_cq_event,
// and returns the CQ it is for. It returns when an event arrives, ctx is
// done (ctx.Err()), or the channel is closed (os.ErrClosed).
//
// With a context that can never be done (context.Background,
// context.WithoutCancel) it allocates nothing and waits as
// ibv_get_cq_event does, in a system call: epoll_wait(2) on a set of the
// channel and a wake-up descriptor that Close writes (made at the first
// such wait), then read(2). The goroutine's
// thread blocks there; the runtime gives its P to other goroutines when
// they need it. An event loop that wants a timeout can close the channel
// when its own context ends (context.AfterFunc), as rc_pingpong does. A
// context that can be done waits in the runtime poller, with a wake-up
// registered (and allocated) per call.
//
// Errors: ctx.Err(); an *Error wrapping os.ErrClosed or the read errno.
func (ch *CompChannel) GetEvent(ctx context.Context) (*CQ, error) {
	if ch == nil || ch.c == nil {
		return nil, errs.New("get cq event", "", errNil)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// No defer: an event loop calls this once per completion event.
	ch.rd.Lock()
	n, err := ch.fd.ReadContext(ctx, ch.buf)
	var uh uint64
	var derr error
	if err == nil {
		uh, derr = decodeCompEventDesc(ch.buf[:n])
	}
	ch.rd.Unlock()
	if err != nil {
		return nil, ch.c.readErr(ctx, "get cq event", err)
	}
	if err := derr; err != nil {
		return nil, ch.c.err("get cq event", err)
	}
	if cq, ok := ch.c.lookupUH(uh).(*CQ); ok {
		if cq.m5 != nil {
			atomic.AddUint32(&cq.m5.armSN, 1) // mlx5_cq_event
		}
		return cq, nil
	}
	return nil, ch.c.err("get cq event", fmt.Errorf("event for unknown CQ user handle %#x", uh))
}

// Close closes the channel, like ibv_destroy_comp_channel. It is safe to
// call more than once.
//
// Errors: an *Error wrapping EBUSY while CQs still use the channel.
func (ch *CompChannel) Close() error {
	if ch == nil {
		return errs.New("destroy completion channel", "", errNil)
	}
	if err := ch.c.enter("destroy completion channel"); err != nil {
		return nil
	}
	defer ch.c.leave()
	return ch.destroyLocked(false)
}

func (ch *CompChannel) destroyLocked(closing bool) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return nil
	}
	if ch.users > 0 && !closing {
		return ch.c.err("destroy completion channel", fmt.Errorf("%d CQs use it: %w", ch.users, errBusy))
	}
	ch.closed = true
	ch.fd.Close()
	ch.c.untrack(ch, 0)
	return nil
}
