package uverbs

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/abi"
)

// The QP state machine the kernel enforces before any driver sees a
// modify: qp_state_table in drivers/infiniband/core/verbs.c, checked by
// ib_modify_qp_is_ok (from ib_uverbs_modify_qp through
// modify_qp → ib_modify_qp_with_udata). A transition it does not list, or
// one whose required attributes are missing from the mask, is EINVAL; the
// hint below names which.

// qpNext is, for each state, the states a modify may move it to.
var qpNext = [...][]QPState{
	QPStateReset: {QPStateReset, QPStateInit},
	QPStateInit:  {QPStateReset, QPStateErr, QPStateInit, QPStateRTR},
	QPStateRTR:   {QPStateReset, QPStateErr, QPStateRTS},
	QPStateRTS:   {QPStateReset, QPStateErr, QPStateRTS, QPStateSQD},
	QPStateSQD:   {QPStateReset, QPStateErr, QPStateRTS, QPStateSQD},
	QPStateSQE:   {QPStateReset, QPStateErr, QPStateRTS},
	QPStateErr:   {QPStateReset, QPStateErr},
}

// qpRequired is the table's req_param for the transitions a connection
// makes, by QP type (only the types this package creates).
func qpRequired(typ QPType, cur, next QPState) QPAttrMask {
	switch {
	case cur == QPStateReset && next == QPStateInit:
		switch typ {
		case QPTypeUD:
			return QPAttrPKeyIndex | QPAttrPort | QPAttrQKey
		case QPTypeRawPacket:
			return QPAttrPort
		case QPTypeRC, QPTypeUC:
			return QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags
		}
	case cur == QPStateInit && next == QPStateRTR:
		switch typ {
		case QPTypeUC:
			return QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN
		case QPTypeRC:
			return QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer
		}
	case cur == QPStateRTR && next == QPStateRTS:
		switch typ {
		case QPTypeUD, QPTypeUC:
			return QPAttrSQPSN
		case QPTypeRC:
			return QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrSQPSN | QPAttrMaxQPRdAtomic
		}
	}
	return 0
}

var qpAttrNames = [...]string{"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX", "PORT", "QKEY", "AV",
	"PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC", "ALT_PATH", "MIN_RNR_TIMER", "SQ_PSN",
	"MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE", "CAP", "DEST_QPN"}

// names lists the mask's bits as IBV_QP_* names, "|"-separated.
func (m QPAttrMask) names() string {
	var b strings.Builder
	for i, n := range qpAttrNames {
		if m&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n)
		}
	}
	return b.String()
}

// modifyHint explains an EINVAL from MODIFY_QP that asked for a state the
// state machine does not allow from the QP's current state, or left out an
// attribute the transition needs; other errors are returned as they are.
// It asks the kernel for the current state (QUERY_QP) unless the caller
// gave it in CurState.
func (qp *QP) modifyHint(attr *QPAttr, mask QPAttrMask, err error) error {
	if !errors.Is(err, syscall.EINVAL) || mask&QPAttrState == 0 {
		return err
	}
	cur := attr.CurState
	if mask&QPAttrCurState == 0 {
		var resp abi.IbUverbsQueryQpResp
		req := &abi.IbUverbsQueryQp{Response: addrOf(bytesOf(&resp)), QpHandle: qp.handle, AttrMask: uint32(QPAttrState)}
		if qp.c.invokeWrite(abi.IB_USER_VERBS_CMD_QUERY_QP, bytesOf(req), bytesOf(&resp), nil, nil) != nil {
			return err
		}
		cur = QPState(resp.QpState)
	}
	if int(cur) >= len(qpNext) || int(attr.State) >= len(qpNext) {
		return err
	}
	allowed := false
	var to []string
	for _, s := range qpNext[cur] {
		allowed = allowed || s == attr.State
		to = append(to, s.String())
	}
	if !allowed {
		return fmt.Errorf("%s → %s is not a QP state transition (from %s a QP goes to %s): %w",
			cur, attr.State, cur, strings.Join(to, ", "), err)
	}
	if missing := qpRequired(qp.typ, cur, attr.State) &^ mask; missing != 0 {
		return fmt.Errorf("%s → %s of QP type %s needs the attributes %s in the mask (missing %s): %w",
			cur, attr.State, qp.typ, qpRequired(qp.typ, cur, attr.State).names(), missing.names(), err)
	}
	return err
}
