package rdmacm

import (
	"net/netip"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
)

// mcast is one multicast group the ID joined (struct cma_multicast).
type mcast struct {
	id       *ID
	uid      uint64
	handle   uint32 // the kernel's
	addr     netip.Addr
	sendOnly bool
	attached bool
	mgid     rdma.GID
	mlid     uint16
}

// JoinMulticast joins the multicast group addr, like rdma_join_multicast
// (rdma_join_multicast_ex with sendOnly: a send-only full member, whose
// QP is not attached). MULTICAST_JOIN follows on the channel, with the
// group's address vector and Q_Key in Event.UD; the ID's QP, if any, is
// then attached to the group. The ID must be bound to a device (Bind or
// ResolveAddr).
//
// Errors: an *Error wrapping EINVAL for an ID without a device or already
// in the group, and the kernel's errno.
func (id *ID) JoinMulticast(addr netip.Addr, sendOnly bool) error {
	const op = "join multicast"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	id.mu.Lock()
	for _, mc := range id.mcs {
		if mc.addr == addr {
			id.mu.Unlock()
			return errs.New(op, dev, errArg("already joined %s", addr))
		}
	}
	id.mu.Unlock()
	mc := &mcast{id: id, uid: nextUID.Add(1), addr: addr, sendOnly: sendOnly}
	cmd := abi.RdmaUcmJoinMcast{Uid: mc.uid, Id: id.handle}
	if sendOnly {
		cmd.JoinFlags = abi.RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
	}
	n, err := putSockaddr(cmd.Addr[:], netip.AddrPortFrom(addr, 0))
	if err != nil {
		return errs.New(op, dev, err)
	}
	cmd.AddrSize = uint16(n)
	// The group must be findable before its event can arrive.
	ch.mu.Lock()
	ch.mcs[mc.uid] = mc
	ch.mu.Unlock()
	var resp abi.RdmaUcmCreateIdResp
	if err := exec(ch, op, dev, abi.RDMA_USER_CM_CMD_JOIN_MCAST, &cmd, unsafe.Offsetof(cmd.Response), bytesOf(&resp)); err != nil {
		ch.mu.Lock()
		delete(ch.mcs, mc.uid)
		ch.mu.Unlock()
		return err
	}
	id.mu.Lock()
	mc.handle = resp.Id
	id.mcs = append(id.mcs, mc)
	id.mu.Unlock()
	return nil
}

// joined attaches the ID's QP to the group (ucma_process_join).
func (id *ID) joined(mc *mcast, ev *Event) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	mc.mgid, mc.mlid = ev.UD.AH.GRH.DGID, ev.UD.AH.DLID
	if id.qp == nil || mc.sendOnly {
		return nil
	}
	if err := id.qp.AttachMcast(mc.mgid, mc.mlid); err != nil {
		return err
	}
	mc.attached = true
	return nil
}

// LeaveMulticast leaves a group JoinMulticast joined, like
// rdma_leave_multicast: the QP is detached first.
//
// Errors: an *Error wrapping EADDRNOTAVAIL when the ID did not join addr.
func (id *ID) LeaveMulticast(addr netip.Addr) error {
	const op = "leave multicast"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	id.mu.Lock()
	var mc *mcast
	for i, m := range id.mcs {
		if m.addr == addr {
			mc = m
			id.mcs = append(id.mcs[:i], id.mcs[i+1:]...)
			break
		}
	}
	if mc != nil && mc.attached && id.qp != nil {
		id.qp.DetachMcast(mc.mgid, mc.mlid)
	}
	id.mu.Unlock()
	if mc == nil {
		return errs.New(op, dev, errNotJoined)
	}
	ch.mu.Lock()
	delete(ch.mcs, mc.uid)
	ch.mu.Unlock()
	cmd := abi.RdmaUcmDestroyId{Id: mc.handle}
	var resp abi.RdmaUcmDestroyIdResp
	return exec(ch, op, dev, abi.RDMA_USER_CM_CMD_LEAVE_MCAST, &cmd, unsafe.Offsetof(cmd.Response), bytesOf(&resp))
}
