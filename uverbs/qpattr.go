package uverbs

import (
	"fmt"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
)

// QPState is a queue pair state (enum ibv_qp_state).
type QPState uint8

// The QP states.
const (
	QPStateReset QPState = 0
	QPStateInit  QPState = 1
	QPStateRTR   QPState = 2
	QPStateRTS   QPState = 3
	QPStateSQD   QPState = 4
	QPStateSQE   QPState = 5
	QPStateErr   QPState = 6
)

// String returns the name libibverbs and the kernel use for the value.
func (s QPState) String() string {
	switch s {
	case QPStateReset:
		return "RESET"
	case QPStateInit:
		return "INIT"
	case QPStateRTR:
		return "RTR"
	case QPStateRTS:
		return "RTS"
	case QPStateSQD:
		return "SQD"
	case QPStateSQE:
		return "SQE"
	case QPStateErr:
		return "ERR"
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// QPAttrMask selects the QPAttr fields Modify sets and Query returns (enum
// ibv_qp_attr_mask).
type QPAttrMask uint32

// The QP attribute mask bits (the legacy modify_qp command carries them up
// to QPAttrDestQPN).
const (
	QPAttrState           QPAttrMask = 1 << 0
	QPAttrCurState        QPAttrMask = 1 << 1
	QPAttrEnSQDAsyncNotif QPAttrMask = 1 << 2
	QPAttrAccessFlags     QPAttrMask = 1 << 3
	QPAttrPKeyIndex       QPAttrMask = 1 << 4
	QPAttrPort            QPAttrMask = 1 << 5
	QPAttrQKey            QPAttrMask = 1 << 6
	QPAttrAV              QPAttrMask = 1 << 7
	QPAttrPathMTU         QPAttrMask = 1 << 8
	QPAttrTimeout         QPAttrMask = 1 << 9
	QPAttrRetryCnt        QPAttrMask = 1 << 10
	QPAttrRNRRetry        QPAttrMask = 1 << 11
	QPAttrRQPSN           QPAttrMask = 1 << 12
	QPAttrMaxQPRdAtomic   QPAttrMask = 1 << 13
	QPAttrAltPath         QPAttrMask = 1 << 14
	QPAttrMinRNRTimer     QPAttrMask = 1 << 15
	QPAttrSQPSN           QPAttrMask = 1 << 16
	QPAttrMaxDestRdAtomic QPAttrMask = 1 << 17
	QPAttrPathMigState    QPAttrMask = 1 << 18
	QPAttrCap             QPAttrMask = 1 << 19
	QPAttrDestQPN         QPAttrMask = 1 << 20

	qpAttrLegacyMask = QPAttrDestQPN<<1 - 1
)

// AccessFlags are memory and QP access rights (IB_UVERBS_ACCESS_*).
type AccessFlags uint32

// The access flags a QP's QPAttr.AccessFlags takes.
const (
	AccessLocalWrite   AccessFlags = abi.IB_UVERBS_ACCESS_LOCAL_WRITE
	AccessRemoteWrite  AccessFlags = abi.IB_UVERBS_ACCESS_REMOTE_WRITE
	AccessRemoteRead   AccessFlags = abi.IB_UVERBS_ACCESS_REMOTE_READ
	AccessRemoteAtomic AccessFlags = abi.IB_UVERBS_ACCESS_REMOTE_ATOMIC
)

// GlobalRoute is the GRH part of an address (struct ibv_global_route).
type GlobalRoute struct {
	DGID         rdma.GID
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
}

// AHAttr is an address vector (struct ibv_ah_attr). RoCE ports need
// IsGlobal with a GRH.
type AHAttr struct {
	GRH         GlobalRoute
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  uint8
	IsGlobal    bool
	Port        int
}

// QPAttr are the attributes Modify sets and Query returns (struct
// ibv_qp_attr); a QPAttrMask says which ones count.
type QPAttr struct {
	State            QPState
	CurState         QPState
	PathMTU          MTU
	PathMigState     uint8
	QKey             uint32
	RQPSN            uint32
	SQPSN            uint32
	DestQPNum        uint32
	AccessFlags      AccessFlags
	Cap              QPCap
	AH               AHAttr
	AltAH            AHAttr
	PKeyIndex        uint16
	AltPKeyIndex     uint16
	EnSQDAsyncNotify bool
	SQDraining       bool
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRNRTimer      uint8
	Port             int
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	AltPort          int
	AltTimeout       uint8
}

// Modify changes the attributes mask selects, like ibv_modify_qp: write
// command MODIFY_QP through INVOKE_WRITE. The kernel checks the state
// transition and the attributes it requires (RESET→INIT: port, P_Key index
// and access flags for RC, Q_Key for UD; INIT→RTR for RC: address vector,
// path MTU, destination QPN, RQ PSN, responder resources and RNR timer;
// RTR→RTS: SQ PSN, and for RC the timeout, retry counts and initiator
// depth).
//
// Errors: an *Error wrapping EINVAL for an invalid transition or missing
// attributes (the kernel's answer), EINVAL before any call for mask bits
// past QPAttrDestQPN or states past ERR, os.ErrClosed for a closed QP.
func (qp *QP) Modify(attr *QPAttr, mask QPAttrMask) error {
	const op = "modify qp"
	if err := qp.begin(op); err != nil {
		return err
	}
	defer qp.end()
	c := qp.c
	if attr == nil {
		return c.err(op, errArg("no attributes"))
	}
	if mask&^qpAttrLegacyMask != 0 {
		return c.err(op, errArg("attribute mask %#x has bits past IB_QP_DEST_QPN", uint32(mask)))
	}
	if attr.State > QPStateErr || attr.CurState > QPStateErr {
		return c.err(op, errArg("QP state %d", max(attr.State, attr.CurState)))
	}
	for _, p := range [...]int{attr.Port, attr.AltPort, attr.AH.Port, attr.AltAH.Port} {
		if p < 0 || p > maxPort {
			return c.err(op, errArg("port %d: port numbers are 1 to %d", p, maxPort))
		}
	}
	// The command and the ioctl are written in place in a scratch (on the
	// stack the command would escape with the request that points at it).
	s := c.scr.get()
	m := &s.qpMod
	*m = abi.IbUverbsModifyQp{
		Dest:             qpDest(&attr.AH),
		AltDest:          qpDest(&attr.AltAH),
		QpHandle:         qp.handle,
		AttrMask:         uint32(mask),
		Qkey:             attr.QKey,
		RqPsn:            attr.RQPSN,
		SqPsn:            attr.SQPSN,
		DestQpNum:        attr.DestQPNum,
		QpAccessFlags:    uint32(attr.AccessFlags),
		PkeyIndex:        attr.PKeyIndex,
		AltPkeyIndex:     attr.AltPKeyIndex,
		QpState:          uint8(attr.State),
		CurQpState:       uint8(attr.CurState),
		PathMtu:          uint8(attr.PathMTU),
		PathMigState:     attr.PathMigState,
		EnSqdAsyncNotify: b2u(attr.EnSQDAsyncNotify),
		MaxRdAtomic:      attr.MaxRdAtomic,
		MaxDestRdAtomic:  attr.MaxDestRdAtomic,
		MinRnrTimer:      attr.MinRNRTimer,
		PortNum:          uint8(attr.Port),
		Timeout:          attr.Timeout,
		RetryCnt:         attr.RetryCnt,
		RnrRetry:         attr.RNRRetry,
		AltPortNum:       uint8(attr.AltPort),
		AltTimeout:       attr.AltTimeout,
	}
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE)
	k.Inline(abi.UVERBS_ATTR_WRITE_CMD, 8, abi.IB_USER_VERBS_CMD_MODIFY_QP)
	k.InHeld(abi.UVERBS_ATTR_CORE_IN, bytesOf(m))
	err := c.core.DoCall(k)
	c.scr.put(s)
	if err != nil {
		return c.err(op, qp.modifyHint(attr, mask, err))
	}
	return nil
}

// Query returns the QP's current attributes and its creation attributes,
// like ibv_query_qp: write command QUERY_QP through INVOKE_WRITE. mask says
// which attributes the caller wants; the kernel fills what it has.
//
// Errors: an *Error wrapping the errno, os.ErrClosed for a closed QP.
func (qp *QP) Query(mask QPAttrMask) (QPAttr, QPInitAttr, error) {
	const op = "query qp"
	if err := qp.begin(op); err != nil {
		return QPAttr{}, QPInitAttr{}, err
	}
	defer qp.end()
	c := qp.c
	resp := new(abi.IbUverbsQueryQpResp)
	req := &abi.IbUverbsQueryQp{Response: addrOf(bytesOf(resp)), QpHandle: qp.handle, AttrMask: uint32(mask)}
	if err := c.invokeWrite(abi.IB_USER_VERBS_CMD_QUERY_QP, bytesOf(req), bytesOf(resp), nil, nil); err != nil {
		return QPAttr{}, QPInitAttr{}, c.err(op, err)
	}
	caps := QPCap{MaxSendWR: resp.MaxSendWr, MaxRecvWR: resp.MaxRecvWr, MaxSendSGE: resp.MaxSendSge,
		MaxRecvSGE: resp.MaxRecvSge, MaxInlineData: resp.MaxInlineData}
	a := QPAttr{
		State: QPState(resp.QpState), CurState: QPState(resp.CurQpState), PathMTU: MTU(resp.PathMtu),
		PathMigState: resp.PathMigState, QKey: resp.Qkey, RQPSN: resp.RqPsn, SQPSN: resp.SqPsn,
		DestQPNum: resp.DestQpNum, AccessFlags: AccessFlags(resp.QpAccessFlags), Cap: caps,
		AH: ahAttr(&resp.Dest), AltAH: ahAttr(&resp.AltDest),
		PKeyIndex: resp.PkeyIndex, AltPKeyIndex: resp.AltPkeyIndex, SQDraining: resp.SqDraining != 0,
		MaxRdAtomic: resp.MaxRdAtomic, MaxDestRdAtomic: resp.MaxDestRdAtomic, MinRNRTimer: resp.MinRnrTimer,
		Port: int(resp.PortNum), Timeout: resp.Timeout, RetryCnt: resp.RetryCnt, RNRRetry: resp.RnrRetry,
		AltPort: int(resp.AltPortNum), AltTimeout: resp.AltTimeout,
	}
	init := QPInitAttr{Type: qp.typ, Cap: caps, SQSigAll: resp.SqSigAll != 0}
	return a, init, nil
}

func qpDest(a *AHAttr) abi.IbUverbsQpDest {
	return abi.IbUverbsQpDest{
		Dgid: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, Dlid: a.DLID,
		SgidIndex: a.GRH.SGIDIndex, HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass,
		Sl: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, IsGlobal: b2u(a.IsGlobal),
		PortNum: uint8(a.Port),
	}
}

func ahAttr(d *abi.IbUverbsQpDest) AHAttr {
	return AHAttr{
		GRH:  GlobalRoute{DGID: d.Dgid, FlowLabel: d.FlowLabel, SGIDIndex: d.SgidIndex, HopLimit: d.HopLimit, TrafficClass: d.TrafficClass},
		DLID: d.Dlid, SL: d.Sl, SrcPathBits: d.SrcPathBits, StaticRate: d.StaticRate, IsGlobal: d.IsGlobal != 0, Port: int(d.PortNum),
	}
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
