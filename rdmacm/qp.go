package rdmacm

import (
	"os"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/uverbs"
)

// CreateQP creates the ID's QP on its device, like rdma_create_qp: with
// pd nil the device's PD (ID.PD); with attr's SendCQ or RecvCQ nil, CQs
// of MaxSendWR and MaxRecvWR entries that the ID owns and destroys with
// the QP. attr.Type may be left zero: the ID's QP type. The QP is moved to
// INIT with the attributes the kernel's INIT_QP_ATTR gives (port, P_Key
// index, access or Q_Key); a UD QP goes on to RTR and RTS, ready to send.
// Connect and Accept, and GetEvent on CONNECT_RESPONSE, take an RC QP the
// rest of the way.
//
// Errors: an *Error wrapping EINVAL when the ID already has a QP, has no
// device yet (resolve or bind it first), or pd is of another device; the
// errno of the creation or a transition.
func (id *ID) CreateQP(pd *uverbs.PD, attr uverbs.QPInitAttr) (*uverbs.QP, error) {
	const op = "create qp"
	if id == nil {
		return nil, errs.New(op, "", errNil)
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	dev := id.devNameLocked()
	switch {
	case id.closed:
		return nil, errs.New(op, dev, os.ErrClosed)
	case id.qp != nil:
		return nil, errs.New(op, dev, errArg("the ID has a QP already"))
	case id.dev == nil:
		return nil, errs.New(op, dev, errArg("the ID has no device yet: bind it to a local address or resolve an address first"))
	}
	if pd == nil {
		pd = id.dev.pd
	} else if pd.Context() != id.dev.ctx {
		return nil, errs.New(op, dev, errArg("the PD is of another device than the ID's"))
	}
	if attr.Type == 0 {
		attr.Type = id.qpType
	}
	var own [2]*uverbs.CQ
	fail := func(err error) (*uverbs.QP, error) {
		for _, cq := range own {
			if cq != nil {
				cq.Close()
			}
		}
		return nil, errs.New(op, dev, err)
	}
	var err error
	if attr.SendCQ == nil {
		if own[0], err = id.dev.ctx.CreateCQ(uverbs.CQAttr{CQE: int(max(attr.Cap.MaxSendWR, 1))}); err != nil {
			return fail(err)
		}
		attr.SendCQ = own[0]
	}
	if attr.RecvCQ == nil {
		if own[1], err = id.dev.ctx.CreateCQ(uverbs.CQAttr{CQE: int(max(attr.Cap.MaxRecvWR, 1))}); err != nil {
			return fail(err)
		}
		attr.RecvCQ = own[1]
	}
	qp, err := pd.CreateQP(attr)
	if err != nil {
		return fail(err)
	}
	id.qp = qp
	if err = id.initQPLocked(); err != nil {
		id.qp = nil
		qp.Close()
		return fail(err)
	}
	id.ownCQs = own
	return qp, nil
}

// initQPLocked is ucma_init_conn_qp and ucma_init_ud_qp.
func (id *ID) initQPLocked() error {
	attr, mask, err := id.initAttrLocked(uverbs.QPStateInit)
	if err != nil {
		return err
	}
	if err := id.qp.Modify(&attr, mask); err != nil {
		return err
	}
	if id.qpType != uverbs.QPTypeUD {
		return nil
	}
	if err := id.qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState); err != nil {
		return err
	}
	return id.qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateRTS}, uverbs.QPAttrState|uverbs.QPAttrSQPSN)
}

// QP returns the ID's QP, nil when it has none.
func (id *ID) QP() *uverbs.QP {
	if id == nil {
		return nil
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.qp
}

func (id *ID) hasQP() bool {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.qp != nil
}

// DestroyQP destroys the ID's QP and the CQs CreateQP made for it, like
// rdma_destroy_qp. Without a QP it does nothing.
func (id *ID) DestroyQP() error {
	if id == nil {
		return errs.New("destroy qp", "", errNil)
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.destroyQPLocked()
}

func (id *ID) destroyQPLocked() error {
	var err error
	if id.qp != nil {
		err = id.qp.Close()
		id.qp = nil
	}
	for i, cq := range id.ownCQs {
		if cq != nil {
			cq.Close()
			id.ownCQs[i] = nil
		}
	}
	return err
}

// InitQPAttr returns the attributes and mask that move a QP of the ID's
// connection to state, from the kernel (RDMA_USER_CM_CMD_INIT_QP_ATTR),
// like rdma_init_qp_attr: for programs that drive their own QP through
// uverbs.QP.Modify.
//
// Errors: an *Error wrapping EINVAL for a state the ID cannot give yet.
func (id *ID) InitQPAttr(state uverbs.QPState) (uverbs.QPAttr, uverbs.QPAttrMask, error) {
	const op = "init qp attr"
	if id == nil {
		return uverbs.QPAttr{}, 0, errs.New(op, "", errNil)
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed {
		return uverbs.QPAttr{}, 0, errs.New(op, id.devNameLocked(), os.ErrClosed)
	}
	a, m, err := id.initAttrLocked(state)
	if err != nil {
		return a, m, errs.New(op, id.devNameLocked(), err)
	}
	return a, m, nil
}

func (id *ID) initAttrLocked(state uverbs.QPState) (uverbs.QPAttr, uverbs.QPAttrMask, error) {
	cmd := abi.RdmaUcmInitQpAttr{Id: id.handle, QpState: uint32(state)}
	var r abi.IbUverbsQpAttr
	if err := exec(id.ch, "init qp attr", id.devNameLocked(), abi.RDMA_USER_CM_CMD_INIT_QP_ATTR, &cmd, unsafe.Offsetof(cmd.Response), bytesOf(&r)); err != nil {
		return uverbs.QPAttr{}, 0, err
	}
	a := uverbs.QPAttr{
		State:            uverbs.QPState(r.QpState),
		CurState:         uverbs.QPState(r.CurQpState),
		PathMTU:          uverbs.MTU(r.PathMtu),
		PathMigState:     uint8(r.PathMigState),
		QKey:             r.Qkey,
		RQPSN:            r.RqPsn,
		SQPSN:            r.SqPsn,
		DestQPNum:        r.DestQpNum,
		AccessFlags:      uverbs.AccessFlags(r.QpAccessFlags),
		AH:               ahFromKern(&r.AhAttr),
		AltAH:            ahFromKern(&r.AltAhAttr),
		PKeyIndex:        r.PkeyIndex,
		AltPKeyIndex:     r.AltPkeyIndex,
		EnSQDAsyncNotify: r.EnSqdAsyncNotify != 0,
		MaxRdAtomic:      r.MaxRdAtomic,
		MaxDestRdAtomic:  r.MaxDestRdAtomic,
		MinRNRTimer:      r.MinRnrTimer,
		Port:             int(r.PortNum),
		Timeout:          r.Timeout,
		RetryCnt:         r.RetryCnt,
		RNRRetry:         r.RnrRetry,
		AltPort:          int(r.AltPortNum),
		AltTimeout:       r.AltTimeout,
	}
	// librdmacm's ucma_modify_qp_rtr masks off bits 21-24, which old
	// kernels set for RoCE and ibv_modify_qp does not take.
	return a, uverbs.QPAttrMask(r.QpAttrMask) & (1<<21 - 1), nil
}

// modifyQPLocked moves the ID's QP to RTR (from INIT, refreshed first as
// ucma_modify_qp_rtr does) or RTS with the kernel's attributes, depth
// overriding the responder resources (RTR) or initiator depth (RTS)
// unless it is MaxDepth. Without a QP it does nothing.
func (id *ID) modifyQPLocked(state uverbs.QPState, depth uint8) error {
	if id.qp == nil {
		return nil
	}
	if state == uverbs.QPStateRTR {
		a, m, err := id.initAttrLocked(uverbs.QPStateInit)
		if err != nil {
			return err
		}
		if err := id.qp.Modify(&a, m); err != nil {
			return err
		}
	}
	a, m, err := id.initAttrLocked(state)
	if err != nil {
		return err
	}
	if depth != MaxDepth {
		if state == uverbs.QPStateRTR {
			a.MaxDestRdAtomic = depth
		} else {
			a.MaxRdAtomic = depth
		}
	}
	return id.qp.Modify(&a, m)
}

// qpToErr moves the ID's QP, if any, to ERR (ucma_modify_qp_err).
func (id *ID) qpToErr() {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.qp != nil {
		id.qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateErr}, uverbs.QPAttrState)
	}
}

// connectResponse completes an active connection with a QP
// (ucma_process_conn_resp): RTR, RTS, then ACCEPT on the active side,
// which sends the RTU. A failure moves the QP to ERR and marks the ID so
// that the REJECTED or DISCONNECTED that follows is dropped.
func (id *ID) connectResponse() error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.qp == nil {
		return nil
	}
	err := id.modifyQPLocked(uverbs.QPStateRTR, MaxDepth)
	if err == nil {
		err = id.modifyQPLocked(uverbs.QPStateRTS, MaxDepth)
	}
	if err == nil {
		cmd := abi.RdmaUcmAccept{Id: id.handle}
		err = exec(id.ch, "accept", id.devNameLocked(), abi.RDMA_USER_CM_CMD_ACCEPT, &cmd, 0, nil)
	}
	if err != nil {
		id.qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateErr}, uverbs.QPAttrState)
		id.connectError = true
	}
	return err
}

func (id *ID) connectFailed() bool {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.connectError
}

// Establish completes an active connection whose ID has no QP, like
// rdma_establish: after CONNECT_RESPONSE, once the program has moved its
// own QP to RTR and RTS (InitQPAttr), it sends the RTU; the passive side
// then reports ESTABLISHED.
//
// Errors: an *Error wrapping EINVAL when the ID has a QP (GetEvent
// establishes those itself).
func (id *ID) Establish() error {
	const op = "establish"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	if id.hasQP() {
		return errs.New(op, dev, errArg("the ID has a QP: GetEvent established it on CONNECT_RESPONSE"))
	}
	cmd := abi.RdmaUcmAccept{Id: id.handle}
	return exec(ch, op, dev, abi.RDMA_USER_CM_CMD_ACCEPT, &cmd, 0, nil)
}
