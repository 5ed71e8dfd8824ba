package fakekernel

import (
	"encoding/binary"
	"syscall"

	"github.com/purerdma/rdma/abi"
)

// qpVal is the model's state of a QP.
type qpVal struct {
	typ        uint8
	num        uint32
	userHandle uint64
	pd, send   *Object
	recv       *Object
	srq        *Object // the SRQ it receives into, or nil
	sqSigAll   bool
	cap        abi.IbUverbsQpCap
	attr       abi.IbUverbsQueryQpResp // what QUERY_QP answers
	m5         *m5QP                   // mlx5: the queues' buffers and doorbell record
}

// IB QP states and attribute mask bits (enum ib_qp_state, enum
// ib_qp_attr_mask).
const (
	qpsReset = 0
	qpsInit  = 1
	qpsRTR   = 2
	qpsRTS   = 3
	qpsSQD   = 4
	qpsSQE   = 5
	qpsErr   = 6

	qpState          = 1 << 0
	qpCurState       = 1 << 1
	qpEnSQDAsync     = 1 << 2
	qpAccessFlags    = 1 << 3
	qpPKeyIndex      = 1 << 4
	qpPort           = 1 << 5
	qpQKey           = 1 << 6
	qpAV             = 1 << 7
	qpPathMTU        = 1 << 8
	qpTimeout        = 1 << 9
	qpRetryCnt       = 1 << 10
	qpRNRRetry       = 1 << 11
	qpRQPSN          = 1 << 12
	qpMaxQPRdAtomic  = 1 << 13
	qpAltPath        = 1 << 14
	qpMinRNRTimer    = 1 << 15
	qpSQPSN          = 1 << 16
	qpMaxDestRdAtom  = 1 << 17
	qpPathMigState   = 1 << 18
	qpCap            = 1 << 19
	qpDestQPN        = 1 << 20
	qpLegacyMask     = qpDestQPN<<1 - 1
	qptRC            = abi.IB_UVERBS_QPT_RC
	qptUC            = abi.IB_UVERBS_QPT_UC
	qptUD            = abi.IB_UVERBS_QPT_UD
	qptRaw           = abi.IB_UVERBS_QPT_RAW_PACKET
	maxQPNumRxeFirst = 17
)

// transition is one entry of the kernel's qp_state_table (verbs.c): the
// attributes a transition requires and those it allows, per QP type.
type transition struct {
	req, opt map[uint8]uint32
}

var qpTable = map[[2]uint8]transition{
	{qpsReset, qpsInit}: {
		req: map[uint8]uint32{
			qptUD:  qpPKeyIndex | qpPort | qpQKey,
			qptRaw: qpPort,
			qptUC:  qpPKeyIndex | qpPort | qpAccessFlags,
			qptRC:  qpPKeyIndex | qpPort | qpAccessFlags,
		},
	},
	{qpsInit, qpsInit}: {
		opt: map[uint8]uint32{
			qptUD:  qpPKeyIndex | qpPort | qpQKey,
			qptUC:  qpPKeyIndex | qpPort | qpAccessFlags,
			qptRC:  qpPKeyIndex | qpPort | qpAccessFlags,
			qptRaw: qpPort,
		},
	},
	{qpsInit, qpsRTR}: {
		req: map[uint8]uint32{
			qptUC: qpAV | qpPathMTU | qpDestQPN | qpRQPSN,
			qptRC: qpAV | qpPathMTU | qpDestQPN | qpRQPSN | qpMaxDestRdAtom | qpMinRNRTimer,
		},
		opt: map[uint8]uint32{
			qptUD: qpPKeyIndex | qpQKey,
			qptUC: qpAltPath | qpAccessFlags | qpPKeyIndex,
			qptRC: qpAltPath | qpAccessFlags | qpPKeyIndex,
		},
	},
	{qpsRTR, qpsRTS}: {
		req: map[uint8]uint32{
			qptUD: qpSQPSN,
			qptUC: qpSQPSN,
			qptRC: qpTimeout | qpRetryCnt | qpRNRRetry | qpSQPSN | qpMaxQPRdAtomic,
		},
		opt: map[uint8]uint32{
			qptUD: qpCurState | qpQKey,
			qptUC: qpCurState | qpAltPath | qpAccessFlags | qpPathMigState,
			qptRC: qpCurState | qpAltPath | qpAccessFlags | qpMinRNRTimer | qpPathMigState,
		},
	},
	{qpsRTS, qpsRTS}: {
		opt: map[uint8]uint32{
			qptUD: qpCurState | qpQKey,
			qptUC: qpCurState | qpAccessFlags | qpAltPath | qpPathMigState,
			qptRC: qpCurState | qpAccessFlags | qpAltPath | qpPathMigState | qpMinRNRTimer,
		},
	},
	{qpsRTS, qpsSQD}: {
		opt: map[uint8]uint32{qptUD: qpEnSQDAsync, qptUC: qpEnSQDAsync, qptRC: qpEnSQDAsync, qptRaw: qpEnSQDAsync},
	},
	{qpsSQD, qpsRTS}: {
		opt: map[uint8]uint32{
			qptUD: qpCurState | qpQKey,
			qptUC: qpCurState | qpAltPath | qpAccessFlags | qpPathMigState,
			qptRC: qpCurState | qpAltPath | qpAccessFlags | qpMinRNRTimer | qpPathMigState,
		},
	},
	{qpsSQE, qpsRTS}: {
		opt: map[uint8]uint32{qptUD: qpCurState | qpQKey, qptUC: qpCurState | qpAccessFlags},
	},
}

// modifyOK is ib_modify_qp_is_ok: any state may go to RESET, and any but
// RESET to ERR, with no attributes; other transitions need the table's required attributes
// and allow only its optional ones. Transitions the table leaves out are
// invalid (the model omits the SQD→SQD rules: such a call fails).
func modifyOK(cur, next, typ uint8, mask uint32) bool {
	if cur > qpsErr || next > qpsErr {
		return false
	}
	if mask&qpCurState != 0 && cur != qpsRTR && cur != qpsRTS && cur != qpsSQD && cur != qpsSQE {
		return false
	}
	// Every state may go to RESET, and every state but RESET to ERR,
	// with no attributes.
	if next == qpsReset || (next == qpsErr && cur != qpsReset) {
		return mask&^(qpState|qpCurState) == 0
	}
	t, ok := qpTable[[2]uint8{cur, next}]
	if !ok {
		return false
	}
	req, opt := t.req[typ], t.opt[typ]
	if mask&req != req {
		return false
	}
	return mask&^(req|opt|qpState) == 0
}

// createQP is UVERBS_METHOD_QP_CREATE (uverbs_std_types_qp.c UVERBS_HANDLER(UVERBS_METHOD_QP_CREATE)): RAW_PACKET without CAP_NET_RAW EPERM; an unknown type EINVAL; no
// PD, send or receive CQ ENOENT; create flags other than SQ_SIG_ALL only
// for RAW_PACKET and UD, SCATTER_FCS and CVLAN_STRIPPING only for
// RAW_PACKET (EINVAL); then the driver's create_qp.
func (v *Verbs) createQP(c *Call) error {
	typ, _ := c.Value(abi.UVERBS_ATTR_CREATE_QP_TYPE)
	switch typ {
	case qptRaw:
		if !v.NetRaw {
			return syscall.EPERM
		}
	case qptRC, qptUC, qptUD:
	default:
		return syscall.EINVAL
	}
	pd := c.Object(abi.UVERBS_ATTR_CREATE_QP_PD_HANDLE)
	send := c.Object(abi.UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE)
	recv := c.Object(abi.UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE)
	if pd == nil || send == nil || recv == nil {
		return syscall.ENOENT
	}
	if c.Has(abi.UVERBS_ATTR_CREATE_QP_XRCD_HANDLE) {
		return syscall.EINVAL
	}
	srq := c.Object(abi.UVERBS_ATTR_CREATE_QP_SRQ_HANDLE)
	flags64, _ := c.Value(abi.UVERBS_ATTR_CREATE_QP_FLAGS)
	flags := uint32(flags64)
	create := flags &^ abi.IB_UVERBS_QP_CREATE_SQ_SIG_ALL
	if create != 0 && typ != qptRaw && typ != qptUD {
		return syscall.EINVAL
	}
	if create&(abi.IB_UVERBS_QP_CREATE_SCATTER_FCS|abi.IB_UVERBS_QP_CREATE_CVLAN_STRIPPING) != 0 && typ != qptRaw {
		return syscall.EINVAL
	}
	capIn, _ := c.In(abi.UVERBS_ATTR_CREATE_QP_CAP)
	qp := &qpVal{
		typ:        uint8(typ),
		userHandle: c.inU64(abi.UVERBS_ATTR_CREATE_QP_USER_HANDLE),
		pd:         pd, send: send, recv: recv, srq: srq,
		sqSigAll: flags&abi.IB_UVERBS_QP_CREATE_SQ_SIG_ALL != 0,
		cap:      *fromBytes[abi.IbUverbsQpCap](capIn),
	}
	a := &v.Attr.Base
	if srq != nil {
		// ib_create_qp_user: a QP with an SRQ has no receive queue.
		qp.cap.MaxRecvWr, qp.cap.MaxRecvSge = 0, 0
	}
	if qp.cap.MaxSendWr > a.MaxQpWr || qp.cap.MaxRecvWr > a.MaxQpWr || qp.cap.MaxSendSge > a.MaxSge || qp.cap.MaxRecvSge > a.MaxSge {
		return syscall.EINVAL
	}
	var err error
	switch v.DriverID {
	case abi.RDMA_DRIVER_RXE:
		err = v.rxeCreateQP(c, qp, create)
	case abi.RDMA_DRIVER_MLX5:
		err = v.mlx5CreateQP(c, qp, create)
	default:
		return ErrNoHandler
	}
	if err != nil {
		return err
	}
	v.mu.Lock()
	if v.nextQPN < maxQPNumRxeFirst {
		v.nextQPN = maxQPNumRxeFirst
	}
	qp.num = v.nextQPN
	v.nextQPN++
	v.mu.Unlock()
	qp.attr.MaxSendWr, qp.attr.MaxRecvWr = qp.cap.MaxSendWr, qp.cap.MaxRecvWr
	qp.attr.MaxSendSge, qp.attr.MaxRecvSge = qp.cap.MaxSendSge, qp.cap.MaxRecvSge
	qp.attr.MaxInlineData = qp.cap.MaxInlineData
	if qp.sqSigAll {
		qp.attr.SqSigAll = 1
	}
	if err := c.Out(abi.UVERBS_ATTR_CREATE_QP_RESP_CAP, structBytes(&qp.cap), true); err != nil {
		return err
	}
	if err := c.outU32(abi.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, qp.num); err != nil {
		return err
	}
	o := c.Object(abi.UVERBS_ATTR_CREATE_QP_HANDLE)
	o.Value = qp
	pd.Users++
	send.Users++
	recv.Users++
	if srq != nil {
		srq.Users++
	}
	v.logf("create qp %d", o.Handle)
	return nil
}

// destroyQP is UVERBS_METHOD_QP_DESTROY: it drops the QP's references on
// its PD and CQs.
func (v *Verbs) destroyQP(c *Call) error {
	o := c.Object(abi.UVERBS_ATTR_DESTROY_QP_HANDLE)
	qp := o.Value.(*qpVal)
	qp.pd.Users--
	qp.send.Users--
	qp.recv.Users--
	if qp.srq != nil {
		qp.srq.Users--
	}
	v.logf("destroy qp %d", o.Handle)
	return c.Out(abi.UVERBS_ATTR_DESTROY_QP_RESP, make([]byte, 4), true)
}

// wModifyQP is ib_uverbs_modify_qp with the driver's checks (rxe_qp_chk_attr,
// mlx5_ib_modify_qp): mask bits past IB_QP_DEST_QPN EOPNOTSUPP; states past
// ERR EINVAL; an invalid port or address-vector port EINVAL; the state
// transition and its attributes (modifyOK) EINVAL; on an Ethernet (RoCE)
// port an address vector without GRH EINVAL and a source GID index that is
// not a valid entry ENODATA; a path MTU above the port's, a timeout above
// 31, more outstanding reads than the device allows EINVAL.
func (v *Verbs) wModifyQP(c *Call, in []byte) error {
	req, err := request(in, 112)
	if err != nil {
		return err
	}
	m := fromBytes[abi.IbUverbsModifyQp](req)
	o, err := c.lookup(abi.UVERBS_OBJECT_QP, m.QpHandle)
	if err != nil {
		return err
	}
	qp := o.Value.(*qpVal)
	mask := m.AttrMask
	if mask&^qpLegacyMask != 0 {
		return syscall.EOPNOTSUPP
	}
	if (mask&qpCurState != 0 && m.CurQpState > qpsErr) || (mask&qpState != 0 && m.QpState > qpsErr) {
		return syscall.EINVAL
	}
	if mask&qpPort != 0 && v.port(uint64(m.PortNum)) == nil {
		return syscall.EINVAL
	}
	if mask&qpAV != 0 && v.port(uint64(m.Dest.PortNum)) == nil {
		return syscall.EINVAL
	}
	cur := qp.attr.QpState
	if mask&qpCurState != 0 {
		cur = m.CurQpState
	}
	next := cur
	if mask&qpState != 0 {
		next = m.QpState
	}
	if !modifyOK(cur, next, qp.typ, mask) {
		return syscall.EINVAL
	}
	if mask&qpAV != 0 {
		p := v.port(uint64(m.Dest.PortNum))
		if p.Attr.LegacyResp.LinkLayer == 2 {
			if m.Dest.IsGlobal == 0 {
				return syscall.EINVAL
			}
			ok := false
			for _, g := range p.GIDs {
				ok = ok || g.GidIndex == uint32(m.Dest.SgidIndex)
			}
			if !ok {
				return syscall.ENODATA
			}
		}
	}
	port := qp.attr.PortNum
	if mask&qpPort != 0 {
		port = m.PortNum
	}
	if mask&qpPathMTU != 0 {
		if p := v.port(uint64(port)); p == nil || m.PathMtu > p.Attr.LegacyResp.MaxMtu || m.PathMtu == 0 {
			return syscall.EINVAL
		}
	}
	if mask&qpTimeout != 0 && m.Timeout > 31 {
		return syscall.EINVAL
	}
	if mask&qpMaxQPRdAtomic != 0 && uint32(m.MaxRdAtomic) > v.Attr.Base.MaxQpRdAtom {
		return syscall.EINVAL
	}
	if mask&qpMaxDestRdAtom != 0 && uint32(m.MaxDestRdAtomic) > v.Attr.Base.MaxQpRdAtom {
		return syscall.EINVAL
	}
	// Commit.
	a := &qp.attr
	a.QpState, a.CurQpState = next, next
	if mask&qpPort != 0 {
		a.PortNum = m.PortNum
	}
	if mask&qpPKeyIndex != 0 {
		a.PkeyIndex = m.PkeyIndex
	}
	if mask&qpQKey != 0 {
		a.Qkey = m.Qkey
	}
	if mask&qpAccessFlags != 0 {
		a.QpAccessFlags = m.QpAccessFlags
	}
	if mask&qpAV != 0 {
		a.Dest = m.Dest
	}
	if mask&qpPathMTU != 0 {
		a.PathMtu = m.PathMtu
	}
	if mask&qpDestQPN != 0 {
		a.DestQpNum = m.DestQpNum
	}
	if mask&qpRQPSN != 0 {
		a.RqPsn = m.RqPsn
	}
	if mask&qpSQPSN != 0 {
		a.SqPsn = m.SqPsn
	}
	if mask&qpMaxDestRdAtom != 0 {
		a.MaxDestRdAtomic = m.MaxDestRdAtomic
	}
	if mask&qpMaxQPRdAtomic != 0 {
		a.MaxRdAtomic = m.MaxRdAtomic
	}
	if mask&qpMinRNRTimer != 0 {
		a.MinRnrTimer = m.MinRnrTimer
	}
	if mask&qpTimeout != 0 {
		a.Timeout = m.Timeout
	}
	if mask&qpRetryCnt != 0 {
		a.RetryCnt = m.RetryCnt
	}
	if mask&qpRNRRetry != 0 {
		a.RnrRetry = m.RnrRetry
	}
	v.logf("modify qp %d to %d", o.Handle, next)
	return nil
}

// wQueryQP is ib_uverbs_query_qp.
func (v *Verbs) wQueryQP(c *Call, in []byte) error {
	req, err := request(in, 16)
	if err != nil {
		return err
	}
	o, err := c.lookup(abi.UVERBS_OBJECT_QP, binary.LittleEndian.Uint32(req[8:]))
	if err != nil {
		return err
	}
	qp := o.Value.(*qpVal)
	return response(c, structBytes(&qp.attr))
}
