package uverbs

import (
	"fmt"
	"os"

	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/verbs"

	"github.com/purerdma/rdma/abi"
)

// QPType is a queue pair's transport type (IB_UVERBS_QPT_*).
type QPType uint8

// The QP types this package creates.
const (
	QPTypeRC        QPType = abi.IB_UVERBS_QPT_RC
	QPTypeUC        QPType = abi.IB_UVERBS_QPT_UC
	QPTypeUD        QPType = abi.IB_UVERBS_QPT_UD
	QPTypeRawPacket QPType = abi.IB_UVERBS_QPT_RAW_PACKET
)

// String returns the name libibverbs and the kernel use for the value.
func (t QPType) String() string {
	switch t {
	case QPTypeRC:
		return "RC"
	case QPTypeUC:
		return "UC"
	case QPTypeUD:
		return "UD"
	case QPTypeRawPacket:
		return "RAW_PACKET"
	}
	return fmt.Sprintf("QPType(%d)", uint8(t))
}

// QPCap are the queue sizes of a QP (struct ibv_qp_cap).
type QPCap struct {
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
}

// QPCreateFlags are QP creation flags (IB_UVERBS_QP_CREATE_*), apart from
// SQ_SIG_ALL, which QPInitAttr.SQSigAll sets.
type QPCreateFlags uint32

// The QP creation flags.
const (
	QPCreateBlockMulticastLoopback QPCreateFlags = abi.IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK
	QPCreateScatterFCS             QPCreateFlags = abi.IB_UVERBS_QP_CREATE_SCATTER_FCS
	QPCreateCVLANStripping         QPCreateFlags = abi.IB_UVERBS_QP_CREATE_CVLAN_STRIPPING
	QPCreatePCIWriteEndPadding     QPCreateFlags = abi.IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING
)

// QPInitAttr describes a QP to create (struct ibv_qp_init_attr).
type QPInitAttr struct {
	Type           QPType
	SendCQ, RecvCQ *CQ
	Cap            QPCap
	// SQSigAll makes every send request generate a completion.
	SQSigAll bool
	Flags    QPCreateFlags
	// SRQ, when not nil, is the shared receive queue the QP receives
	// into (ibv_qp_init_attr's srq): the QP then has no receive queue of
	// its own (Cap.MaxRecvWR and MaxRecvSGE are ignored), its receives
	// complete on RecvCQ, and the SRQ cannot be closed before the QP.
	SRQ *SRQ
}

// QP is a queue pair (struct ibv_qp).
type QP struct {
	c      *Context
	pd     *PD
	sendCQ *CQ // the CQs it was created with (its destroy waits for their pollers)
	recvCQ *CQ
	srq    *SRQ // the SRQ it receives into, or nil
	handle uint32
	uh     uint64
	num    uint32
	typ    QPType
	cap    QPCap
	res    driverRes // what the provider gave the QP
	seqV   uint64
	rxe    *rxeQP  // the data path on rxe: &rxeQP; nil elsewhere
	mlx5   *mlx5QP // the data path on mlx5 (with its work request arrays); nil elsewhere
	rxeQP  rxeQP   // in the QP, not beside it: one allocation
	// m5spare is the mlx5 data path of the QP's earlier life, which
	// CreateQPInto hands to mlx5Init to reuse.
	m5spare *mlx5QP

	lifecycle
}

// CreateQP creates a queue pair of type UD, RC, UC or RAW_PACKET on the
// PD, like ibv_create_qp: UVERBS_METHOD_QP_CREATE with the context's async
// event file and the provider's driver data (rxe: the send and receive
// queues are mapped from the kernel; mlx5: the work queue buffers and
// doorbell record outside the Go heap, the context's UAR, and for
// RAW_PACKET a separate send queue buffer and a 24-bit user index).
//
// Errors: an *Error wrapping EINVAL for missing CQs or CQs of another
// context (checked first), or the kernel's errno: EPERM (matches
// os.ErrPermission) for RAW_PACKET without CAP_NET_RAW, EOPNOTSUPP
// (ErrNotSupported) for types the driver lacks (rxe: RAW_PACKET); ErrNotSupported
// with the generic provider; os.ErrClosed after Close or for closed CQs.
func (pd *PD) CreateQP(attr QPInitAttr) (*QP, error) {
	if pd == nil {
		return nil, errs.New("create qp", "", errNil)
	}
	qp := new(QP)
	if err := pd.createQP(qp, &attr); err != nil {
		return nil, err
	}
	return qp, nil
}

// CreateQPInto is CreateQP into a QP the caller provides, for programs
// that create and destroy queue pairs at a high rate: qp, a zero QP or one
// that was closed (by its Close or its Context's), becomes the new QP, and
// the call allocates nothing (on mlx5, nothing once the work request
// arrays of qp's earlier life are as large as the new queues'). Pointers
// kept to qp from its earlier life then refer to the new QP; do not use
// qp from other goroutines while the call runs.
//
// Errors: those of CreateQP, which leave qp a zero QP; an *Error wrapping
// EBUSY, before any call, when qp is still live.
func (pd *PD) CreateQPInto(qp *QP, attr QPInitAttr) error {
	const op = "create qp"
	if pd == nil || qp == nil || pd.c == nil || pd.c.fd == nil {
		return errs.New(op, "", errNil)
	}
	if qp.c != nil && !qp.isDestroyed() {
		return pd.c.err(op, errLive("QP"))
	}
	spare := qp.mlx5 // its arrays serve again (mlx5Init)
	*qp = QP{m5spare: spare}
	err := pd.createQP(qp, &attr)
	if err != nil {
		*qp = QP{}
	}
	return err
}

// createQP creates the QP into qp, a zero QP but for m5spare.
func (pd *PD) createQP(qp *QP, attr *QPInitAttr) error {
	c := pd.c
	if err := c.enter("create qp"); err != nil {
		return err
	}
	err := pd.createQPHeld(qp, attr)
	c.leave()
	return err
}

// createQPHeld is createQP for a caller that has entered the context.
func (pd *PD) createQPHeld(qp *QP, attr *QPInitAttr) error {
	c := pd.c
	const op = "create qp"
	if err := pd.alive(c, op); err != nil {
		return err
	}
	switch attr.Type {
	case QPTypeRC, QPTypeUC, QPTypeUD, QPTypeRawPacket:
	default:
		return c.err(op, errArg("QP type %d is not one of RC, UC, UD, RAW_PACKET", attr.Type))
	}
	if err := attr.SendCQ.usable(c, op); err != nil {
		return err
	}
	if attr.RecvCQ != attr.SendCQ {
		if err := attr.RecvCQ.usable(c, op); err != nil {
			return err
		}
	}
	if s := attr.SRQ; s != nil {
		if s.c != c {
			return c.err(op, errArg("the SRQ belongs to another context"))
		}
		if s.isDestroyed() {
			return c.err(op, os.ErrClosed)
		}
	}
	// The provider's state and the data path live in the QP (on rxe; on
	// mlx5 the work request arrays are beside it), the request and the
	// driver data in the scratch.
	qp.c, qp.pd, qp.typ = c, pd, attr.Type
	qp.sendCQ, qp.recvCQ, qp.srq = attr.SendCQ, attr.RecvCQ, attr.SRQ
	s := c.scr.get()
	err := pd.createQPWith(qp, attr, s)
	c.scr.put(s)
	return err
}

// createQPWith makes createQP's request in s, and the QP.
func (pd *PD) createQPWith(qp *QP, attr *QPInitAttr, s *scratch) error {
	c := pd.c
	const op = "create qp"
	d := &qp.res
	x := &s.drv
	x.reset()
	// rxe's calls are made directly, not through the provider
	// interface: they are the hot create path, and inlined, with no
	// copy of attr. (Others get attr by value: a pointer through the
	// interface would move it to the heap.)
	rxe, _ := c.prov.(*rxeProvider)
	if rxe != nil {
		rxePrepareQP(c, d, x)
	} else if err := c.prov.prepareQP(c, *attr, d, x); err != nil {
		return c.err(op, err)
	}
	qp.uh = c.newUserHandle()
	capIn, capOut, qpn := &s.capIn, &s.capOut, &s.u32
	*capOut, *qpn = abi.IbUverbsQpCap{}, 0
	*capIn = abi.IbUverbsQpCap{
		MaxSendWr: attr.Cap.MaxSendWR, MaxRecvWr: attr.Cap.MaxRecvWR,
		MaxSendSge: attr.Cap.MaxSendSGE, MaxRecvSge: attr.Cap.MaxRecvSGE,
		MaxInlineData: attr.Cap.MaxInlineData,
	}
	// The request is written in place (verbs.Call): the attributes are
	// QP_CREATE's, as uverbs_std_types_qp.c declares them.
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_CREATE)
	k.NewHandle(abi.UVERBS_ATTR_CREATE_QP_HANDLE) // first: Created finds it at once
	k.Handle(abi.UVERBS_ATTR_CREATE_QP_PD_HANDLE, pd.handle)
	k.Handle(abi.UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, attr.SendCQ.handle)
	k.Handle(abi.UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, attr.RecvCQ.handle)
	if attr.SRQ != nil {
		k.Handle(abi.UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, attr.SRQ.handle)
	}
	k.Inline(abi.UVERBS_ATTR_CREATE_QP_TYPE, 8, uint64(attr.Type))
	k.Inline(abi.UVERBS_ATTR_CREATE_QP_USER_HANDLE, 8, qp.uh)
	k.InHeld(abi.UVERBS_ATTR_CREATE_QP_CAP, bytesOf(capIn))
	if c.async != nil {
		k.FD(abi.UVERBS_ATTR_CREATE_QP_EVENT_FD, c.asyncRaw)
	}
	flags := uint32(attr.Flags)
	if attr.SQSigAll {
		flags |= abi.IB_UVERBS_QP_CREATE_SQ_SIG_ALL
	}
	if flags != 0 {
		k.Inline(abi.UVERBS_ATTR_CREATE_QP_FLAGS, 4, uint64(flags))
	}
	k.OutHeld(abi.UVERBS_ATTR_CREATE_QP_RESP_CAP, bytesOf(capOut))
	k.OutHeld(abi.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, bytesOf(qpn))
	x.addCall(k)
	if err := c.core.DoCall(k); err != nil {
		c.dropUserHandle(qp.uh)
		return c.err(op, d.createFailed(err))
	}
	d.created()
	qp.handle, _ = k.Created(abi.UVERBS_ATTR_CREATE_QP_HANDLE)
	qp.num = *qpn
	qp.cap = QPCap{MaxSendWR: capOut.MaxSendWr, MaxRecvWR: capOut.MaxRecvWr,
		MaxSendSGE: capOut.MaxSendSge, MaxRecvSGE: capOut.MaxRecvSge, MaxInlineData: capOut.MaxInlineData}
	var err error
	if rxe != nil {
		if err = rxeQPCreated(c, d, x); err == nil {
			err = qp.rxeInit(c, d)
		}
	} else if err = c.prov.qpCreated(c, d, x); err == nil {
		if p, ok := c.prov.(*mlx5Provider); ok {
			err = qp.mlx5Init(p, d, x, attr)
		}
	}
	if err != nil {
		qp.destroyLocked(false)
		return c.err(op, err)
	}
	qp.seqV = c.core.NextSeq()
	c.track(qp, qp.uh)
	return nil
}

// usable checks a QP's CQ for a create call (the caller holds the
// context's life lock).
func (cq *CQ) usable(c *Context, op string) error {
	if cq == nil {
		return c.err(op, errArg("a QP needs a send and a receive CQ"))
	}
	if cq.c != c {
		return c.err(op, errArg("the CQ belongs to another context"))
	}
	if cq.isDestroyed() {
		return c.err(op, os.ErrClosed)
	}
	return nil
}

// Handle returns the kernel's handle of the QP.
func (qp *QP) Handle() uint32 {
	if qp == nil {
		return 0
	}
	return qp.handle
}

// Num returns the QP number.
func (qp *QP) Num() uint32 {
	if qp == nil {
		return 0
	}
	return qp.num
}

// Type returns the QP's type.
func (qp *QP) Type() QPType {
	if qp == nil {
		return 0
	}
	return qp.typ
}

// Cap returns the queue sizes the device gave (at least those asked for).
func (qp *QP) Cap() QPCap {
	if qp == nil {
		return QPCap{}
	}
	return qp.cap
}

// PD returns the QP's protection domain.
func (qp *QP) PD() *PD {
	if qp == nil {
		return nil
	}
	return qp.pd
}

// Context returns the context the QP belongs to.
func (qp *QP) Context() *Context {
	if qp == nil {
		return nil
	}
	return qp.c
}

func (qp *QP) stage() verbs.Stage { return verbs.StageQP }
func (qp *QP) seq() uint64        { return qp.seqV }

// Close destroys the QP, like ibv_destroy_qp (UVERBS_METHOD_QP_DESTROY),
// and releases its memory. Closing a closed QP, or one whose Context was
// closed, returns nil.
//
// Errors: an *Error wrapping EBUSY while flows or multicast attachments
// still use the QP; the QP then stays usable.
func (qp *QP) Close() error {
	if qp == nil {
		return errs.New("destroy qp", "", errNil)
	}
	return closeObject(qp.c, "destroy qp", qp)
}

func (qp *QP) destroyLocked(closing bool) error {
	c := qp.c
	if !qp.destroyBegin() {
		return nil
	}
	s := c.scr.get()
	s.qpDone = abi.IbUverbsDestroyQpResp{}
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_DESTROY)
	k.Handle(abi.UVERBS_ATTR_DESTROY_QP_HANDLE, qp.handle)
	k.OutHeld(abi.UVERBS_ATTR_DESTROY_QP_RESP, bytesOf(&s.qpDone))
	err := c.core.DoCall(k)
	c.scr.put(s)
	if !qp.destroyEnd(err, closing) {
		return c.err("destroy qp", err)
	}
	qp.res.release()
	if qp.mlx5 != nil {
		// release took the QP out of the provider's table; a poller
		// of its CQs that found it there before is done once it
		// gives up the CQ's poll lock, as mlx5_destroy_qp
		// (providers/mlx5/verbs.c) locks the CQs to clean them.
		// After this nothing refers to qp.mlx5 but the QP, and
		// CreateQPInto may reuse it.
		qp.sendCQ.waitPollers()
		qp.recvCQ.waitPollers()
	}
	c.untrack(qp, qp.uh)
	qp.destroyDone()
	if err != nil { // off the hot path: keptErr is a call
		return keptErr(c, "destroy qp", err)
	}
	return nil
}

// begin starts an operation on the QP: the context's life lock, then the
// QP's shared lock; end ends it.
func (qp *QP) begin(op string) error {
	if qp == nil {
		return errs.New(op, "", errNil)
	}
	c := qp.c
	if err := c.enter(op); err != nil {
		return err
	}
	qp.mu.RLock()
	if qp.destroyed.Load() {
		qp.mu.RUnlock()
		c.leave()
		return c.err(op, os.ErrClosed)
	}
	return nil
}

// end ends an operation begin started.
func (qp *QP) end() { qp.mu.RUnlock(); qp.c.leave() }

// SendCQ returns the CQ the QP's send completions go to, nil for a nil QP.
func (qp *QP) SendCQ() *CQ {
	if qp == nil {
		return nil
	}
	return qp.sendCQ
}

// SRQ returns the shared receive queue the QP was created with
// (QPInitAttr.SRQ), nil when it has a receive queue of its own.
func (qp *QP) SRQ() *SRQ {
	if qp == nil {
		return nil
	}
	return qp.srq
}

// RecvCQ returns the CQ the QP's receive completions go to, nil for a nil
// QP.
func (qp *QP) RecvCQ() *CQ {
	if qp == nil {
		return nil
	}
	return qp.recvCQ
}
