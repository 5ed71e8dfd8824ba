package uverbs

import (
	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
)

// AttachMcast attaches a UD QP to the multicast group gid (with the
// group's LID on InfiniBand, 0 on RoCE), like ibv_attach_mcast: write
// command ATTACH_MCAST through INVOKE_WRITE. rdmacm's JoinMulticast
// attaches the ID's QP by itself.
//
// Errors: an *Error wrapping the errno (EINVAL for a QP that is not UD),
// os.ErrClosed for a closed QP.
func (qp *QP) AttachMcast(gid rdma.GID, lid uint16) error {
	return qp.mcast("attach mcast", abi.IB_USER_VERBS_CMD_ATTACH_MCAST, gid, lid)
}

// DetachMcast detaches the QP from the multicast group, like
// ibv_detach_mcast.
//
// Errors: those of AttachMcast.
func (qp *QP) DetachMcast(gid rdma.GID, lid uint16) error {
	return qp.mcast("detach mcast", abi.IB_USER_VERBS_CMD_DETACH_MCAST, gid, lid)
}

func (qp *QP) mcast(op string, cmd uint32, gid rdma.GID, lid uint16) error {
	if err := qp.begin(op); err != nil {
		return err
	}
	defer qp.end()
	req := &abi.IbUverbsAttachMcast{Gid: gid, QpHandle: qp.handle, Mlid: lid}
	if err := qp.c.invokeWrite(cmd, bytesOf(req), nil, nil, nil); err != nil {
		return qp.c.err(op, err)
	}
	return nil
}
