// Package rdmacm is the RDMA connection manager in pure Go: what
// librdmacm from rdma-core does, over the kernel's rdma_cm device
// (/dev/infiniband/rdma_cm, the write() ABI of
// include/uapi/rdma/rdma_user_cm.h, version 4), without cgo. An IP address
// is resolved to an RDMA device, a port, GIDs and a path; two sides
// connect and accept with private data; events say what happened. The
// QPs of the IDs are uverbs QPs, and the data moves through uverbs'
// data path unchanged.
//
// The C API it corresponds to:
//
//	rdma_create_event_channel, rdma_destroy_event_channel  NewEventChannel, EventChannel.Close
//	rdma_get_cm_event, rdma_ack_cm_event, rdma_event_str    EventChannel.GetEvent, Event.Ack, EventType.String
//	rdma_create_id, rdma_destroy_id                         EventChannel.CreateID, ID.Close
//	rdma_bind_addr, rdma_resolve_addr, rdma_resolve_route   ID.Bind, ID.ResolveAddr, ID.ResolveRoute
//	rdma_listen, rdma_connect, rdma_accept                  ID.Listen, ID.Connect, ID.Accept
//	rdma_reject, rdma_reject_ece, rdma_disconnect           ID.Reject, ID.RejectECE, ID.Disconnect
//	rdma_create_qp, rdma_destroy_qp, rdma_init_qp_attr      ID.CreateQP, ID.DestroyQP, ID.InitQPAttr
//	rdma_get_local_addr, rdma_get_peer_addr, rdma_get_sgid  ID.QueryAddr, ID.QueryGID, ID.QueryPath
//	rdma_set_option (TOS, REUSEADDR, AFONLY, ACK_TIMEOUT)   ID.SetTOS, ID.SetReuseAddr, ID.SetAFOnly, ID.SetAckTimeout
//	rdma_migrate_id, rdma_notify, rdma_establish            ID.Migrate, ID.Notify, ID.Establish
//	rdma_create_ep, rdma_destroy_ep, rdma_get_request       CreateEP, ID.Close, ID.GetRequest
//	rdma_join_multicast(_ex), rdma_leave_multicast          ID.JoinMulticast, ID.LeaveMulticast
//	id->verbs, id->pd, id->qp, id->port_num                 ID.Verbs, ID.PD, ID.QP, ID.Port
//
// # The common path
//
// A client resolves, creates its QP, connects and waits for ESTABLISHED:
//
//	ch, _ := rdmacm.NewEventChannel(nil)
//	id, _ := ch.CreateID(rdmacm.PortSpaceTCP)
//	id.ResolveAddr(netip.AddrPort{}, netip.MustParseAddrPort("10.0.0.2:7471"), 2*time.Second)
//	ev, _ := ch.GetEvent(ctx) // ADDR_RESOLVED; ev.Ack()
//	id.ResolveRoute(2 * time.Second)
//	ev, _ = ch.GetEvent(ctx) // ROUTE_RESOLVED; ev.Ack()
//	qp, _ := id.CreateQP(nil, uverbs.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
//	id.Connect(&rdmacm.ConnParam{PrivateData: []byte("hello"), RetryCount: 7, RNRRetryCount: 7})
//	ev, _ = ch.GetEvent(ctx) // ESTABLISHED, or REJECTED with ev.Err() a *RejectError
//
// A server binds and listens; each CONNECT_REQUEST carries a new ID to
// give a QP and Accept (or Reject). Either side's Disconnect brings
// DISCONNECTED to both; the passive side answers with its own Disconnect.
//
// CreateEP makes the same in synchronous form, as rdma_create_ep: an ID
// with a channel of its own whose Connect, Accept and Disconnect return
// when their outcome is known, and a passive one whose GetRequest returns
// each connection's ID with its QP made:
//
//	c, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Dst: dst, QP: &attr})
//	err = c.Connect(nil) // ESTABLISHED, or an error matching ECONNREFUSED
//
// # Devices and contexts
//
// As in librdmacm, the IDs on one RDMA device share one uverbs Context
// and a PD (ID.Verbs, ID.PD), opened when the first ID reaches the device
// (Bind to a local address, ADDR_RESOLVED, a connection request) and
// closed with the last ID on it, with what was created on it: close MRs
// and CQs you made before your last ID, as a C program deallocates them
// before its last rdma_destroy_id.
//
// # Events
//
// GetEvent does what rdma_get_cm_event does before it returns: it opens
// the device of a resolved address, creates the ID of a connection
// request, completes an active connection whose ID has a QP (RTR, RTS,
// and the ACCEPT that sends the RTU: CONNECT_RESPONSE becomes ESTABLISHED)
// and attaches the QP to a joined multicast group. It honours a
// context.Context, is woken by EventChannel.Close, and allocates nothing
// in steady state: events come from the channel's pool and go back with
// Event.Ack. Unlike rdma_destroy_id, ID.Close does not wait for the ID's
// events to be acknowledged: the kernel drops the events it has not
// handed over, and those handed over stay readable until Ack.
//
// # Errors
//
// Errors are *Error values carrying the operation, the device and the
// errno; errors.Is works with the errno, os.ErrPermission,
// os.ErrNotExist, ErrNotSupported and os.ErrClosed. A failed event's
// Event.Err decodes its status: an errno (ETIMEDOUT, EHOSTUNREACH, …) or,
// for REJECTED, a *RejectError with the reason and the peer's private
// data.
// A nil pointer is an invalid argument too: every method of one returns an
// error wrapping EINVAL (Close included), or zero values where the method
// returns no error; none panics.
package rdmacm
