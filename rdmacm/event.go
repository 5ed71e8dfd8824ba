package rdmacm

import (
	"fmt"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/uverbs"
)

// EventType is what an event says happened (enum rdma_cm_event_type,
// include/rdma/rdma_cm.h in the kernel, librdmacm's rdma_cma.h: the
// kernel reports the same numbers).
type EventType uint32

// The events, in the kernel's order.
const (
	EventAddrResolved    EventType = 0  // RDMA_CM_EVENT_ADDR_RESOLVED: ResolveAddr found the device and port
	EventAddrError       EventType = 1  // RDMA_CM_EVENT_ADDR_ERROR: ResolveAddr failed (Status: -errno)
	EventRouteResolved   EventType = 2  // RDMA_CM_EVENT_ROUTE_RESOLVED: ResolveRoute found a path
	EventRouteError      EventType = 3  // RDMA_CM_EVENT_ROUTE_ERROR: ResolveRoute failed (Status: -errno)
	EventConnectRequest  EventType = 4  // RDMA_CM_EVENT_CONNECT_REQUEST: a peer connects to a listener; Event.ID is the new ID
	EventConnectResponse EventType = 5  // RDMA_CM_EVENT_CONNECT_RESPONSE: the peer accepted an ID without a QP
	EventConnectError    EventType = 6  // RDMA_CM_EVENT_CONNECT_ERROR: the connection could not be made
	EventUnreachable     EventType = 7  // RDMA_CM_EVENT_UNREACHABLE: the peer did not answer (Status: -errno)
	EventRejected        EventType = 8  // RDMA_CM_EVENT_REJECTED: the peer or its CM rejected (Status: the reason)
	EventEstablished     EventType = 9  // RDMA_CM_EVENT_ESTABLISHED: the connection is up
	EventDisconnected    EventType = 10 // RDMA_CM_EVENT_DISCONNECTED: either side disconnected
	EventDeviceRemoval   EventType = 11 // RDMA_CM_EVENT_DEVICE_REMOVAL: the ID's device is going away; close the ID
	EventMulticastJoin   EventType = 12 // RDMA_CM_EVENT_MULTICAST_JOIN: JoinMulticast succeeded
	EventMulticastError  EventType = 13 // RDMA_CM_EVENT_MULTICAST_ERROR: a join failed or the group went away
	EventAddrChange      EventType = 14 // RDMA_CM_EVENT_ADDR_CHANGE: the address moved to another device (bonding)
	EventTimewaitExit    EventType = 15 // RDMA_CM_EVENT_TIMEWAIT_EXIT: the QP left time-wait and may be reused
)

var eventNames = [...]string{
	"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
	"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
	"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
	"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
	"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
	"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
	"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
	"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
}

// String returns the name rdma_event_str gives ("RDMA_CM_EVENT_ESTABLISHED"),
// or "UNKNOWN EVENT (N)".
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "UNKNOWN EVENT (" + strconv.FormatUint(uint64(t), 10) + ")"
}

// RejectReason is the reason of a REJECTED event on InfiniBand and RoCE:
// the CM's REJ reason (enum ib_cm_rej_reason, include/rdma/ib_cm.h).
type RejectReason uint16

// The reasons a program meets; the others have their number.
const (
	RejectNoQP                 RejectReason = 1  // IB_CM_REJ_NO_QP
	RejectNoResources          RejectReason = 4  // IB_CM_REJ_NO_RESOURCES
	RejectInvalidServiceID     RejectReason = 8  // IB_CM_REJ_INVALID_SERVICE_ID: nobody listens on the port
	RejectStaleConn            RejectReason = 10 // IB_CM_REJ_STALE_CONN
	RejectTimeout              RejectReason = 26 // IB_CM_REJ_TIMEOUT
	RejectConsumerDefined      RejectReason = 28 // IB_CM_REJ_CONSUMER_DEFINED: the peer called Reject
	RejectInvalidRNRRetry      RejectReason = 29 // IB_CM_REJ_INVALID_RNR_RETRY
	RejectVendorOptionNotSupp  RejectReason = 35 // IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED: rdma_reject_ece
	RejectInvalidPrivateData   RejectReason = 33 // IB_CM_REJ_INVALID_PRIVATE_DATA
	RejectInvalidClassVersion  RejectReason = 31 // IB_CM_REJ_INVALID_CLASS_VERSION
	RejectDuplicateLocalCommID RejectReason = 3  // IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID
)

func rejectName(r RejectReason) (string, bool) {
	switch r {
	case RejectNoQP:
		return "no QP", true
	case RejectNoResources:
		return "no resources", true
	case RejectDuplicateLocalCommID:
		return "duplicate local comm id", true
	case RejectInvalidServiceID:
		return "invalid service ID (nobody listens)", true
	case RejectStaleConn:
		return "stale connection", true
	case RejectTimeout:
		return "timeout", true
	case RejectConsumerDefined:
		return "consumer defined (the peer rejected)", true
	case RejectInvalidRNRRetry:
		return "invalid RNR retry", true
	case RejectInvalidClassVersion:
		return "invalid class version", true
	case RejectInvalidPrivateData:
		return "invalid private data", true
	case RejectVendorOptionNotSupp:
		return "vendor option not supported", true
	}
	return "", false
}

// String names the reason as ib_cm.c's table does, with its number.
func (r RejectReason) String() string {
	if s, ok := rejectName(r); ok {
		return s + " (" + strconv.Itoa(int(r)) + ")"
	}
	return "reject reason " + strconv.Itoa(int(r))
}

// RejectError is the error of a REJECTED event: the reason and the
// peer's private data (a copy). errors.Is matches ECONNREFUSED, what
// rdma_get_request answers for a rejection.
type RejectError struct {
	Reason      RejectReason
	PrivateData []byte
}

func (e *RejectError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return "rejected: " + e.Reason.String()
}

// Is reports whether target is ECONNREFUSED.
func (e *RejectError) Is(target error) bool { return target == syscall.ECONNREFUSED }

// ConnParam are the parameters of Connect and Accept, and what the peer
// sent in a CONNECT_REQUEST, CONNECT_RESPONSE, ESTABLISHED, REJECTED or
// DISCONNECTED event (struct rdma_conn_param).
type ConnParam struct {
	// PrivateData is sent with the request, the reply or the rejection.
	// The kernel's limits for RC (the TCP and IB port spaces): 56 bytes
	// with Connect, 196 with Accept, 148 with Reject (the CM's REQ, REP
	// and REJ less the 36 bytes of the RDMA CM header in a REQ); for UD
	// (UDP), 180 with Connect and 136 with Accept. In an event it is
	// valid until Ack.
	PrivateData []byte
	// ResponderResources and InitiatorDepth are the RDMA reads and
	// atomics in flight this side accepts and issues; MaxDepth (0xff,
	// RDMA_MAX_RESP_RES and RDMA_MAX_INIT_DEPTH) means the device's
	// maximum, and on Accept what the request asked for if that is less.
	ResponderResources, InitiatorDepth uint8
	FlowControl                        uint8
	// RetryCount and RNRRetryCount are the transport's retries (0-7; 7 is
	// "forever" for RNR). A nil *ConnParam uses 7 for both, as librdmacm.
	RetryCount, RNRRetryCount uint8
	// SRQ says the QP uses a shared receive queue; QPNum is the QP's
	// number. Both are taken from the ID's QP when it has one.
	SRQ   bool
	QPNum uint32
}

// MaxDepth is ConnParam's "the device's maximum" for ResponderResources
// and InitiatorDepth.
const MaxDepth = 0xff

// UDParam is what a UD (UDP port space) CONNECT_REQUEST, ESTABLISHED or
// MULTICAST_JOIN event carries (struct rdma_ud_param): the peer's QP
// number and Q_Key and the address vector to reach it or the group.
type UDParam struct {
	QPNum, QKey uint32
	AH          uverbs.AHAttr
	PrivateData []byte
}

// ECE is the enhanced connection establishment option of a request or
// reply (struct rdma_ucm_ece).
type ECE struct {
	VendorID, AttrMod uint32
}

// Event is one connection manager event (struct rdma_cm_event). Get one
// with EventChannel.GetEvent and give it back with Ack when done: its
// private data and its place are reused after that.
type Event struct {
	Type EventType
	// Status is the kernel's status: 0, a negative errno (ADDR_ERROR,
	// ROUTE_ERROR, UNREACHABLE, CONNECT_ERROR) or, for REJECTED, the
	// reject reason. Err decodes it.
	Status int32
	// ID is the ID the event is for; for CONNECT_REQUEST the new ID of the
	// incoming connection, ListenID the listener it came to.
	ID, ListenID *ID
	// Conn is set for the connected port spaces (TCP, IB), UD for UDP
	// and multicast events.
	Conn ConnParam
	UD   UDParam
	ECE  ECE
	// Group is the multicast address of MULTICAST_JOIN and MULTICAST_ERROR.
	Group netip.Addr

	ch      *EventChannel
	private [abi.RDMA_MAX_PRIVATE_DATA]byte
	next    *Event
}

// Err returns the event's status as an error, nil when it reports
// success (EINVAL for a nil event): a *RejectError for REJECTED, else an *Error wrapping the errno
// (ETIMEDOUT for an unanswered request, EHOSTUNREACH or ENETUNREACH for an
// address with no route, ENODEV for an address no RDMA device has).
func (e *Event) Err() error {
	if e == nil {
		return errNil
	}
	if e.Type == EventRejected {
		pd := append([]byte(nil), e.Conn.PrivateData...)
		return &RejectError{Reason: RejectReason(e.Status), PrivateData: pd}
	}
	if e.Status == 0 {
		return nil
	}
	errno := syscall.Errno(-e.Status)
	if e.Status > 0 {
		errno = syscall.Errno(e.Status)
	}
	return &Error{Op: e.Type.String(), Err: errno}
}

// String describes the event: its name and, when it failed, why.
func (e *Event) String() string {
	if e == nil {
		return "<nil>"
	}
	if err := e.Err(); err != nil {
		return fmt.Sprintf("%s, error %d (%v)", e.Type, e.Status, err)
	}
	return e.Type.String()
}

// Ack gives the event back, like rdma_ack_cm_event: its private data must
// not be used after it. Acking twice, or a nil event, does nothing.
func (e *Event) Ack() {
	if e == nil || e.ch == nil {
		return
	}
	ch := e.ch
	*e = Event{}
	ch.putEvent(e)
}

// copyConn fills e.Conn from the kernel's struct rdma_ucm_conn_param, as
// ucma_copy_conn_event.
func (e *Event) copyConn(p *abi.RdmaUcmConnParam) {
	n := int(p.PrivateDataLen)
	copy(e.private[:], p.PrivateData[:n])
	e.Conn = ConnParam{
		PrivateData:        e.private[:n:n],
		ResponderResources: p.ResponderResources,
		InitiatorDepth:     p.InitiatorDepth,
		FlowControl:        p.FlowControl,
		RetryCount:         p.RetryCount,
		RNRRetryCount:      p.RnrRetryCount,
		SRQ:                p.Srq != 0,
		QPNum:              p.QpNum,
	}
}

// copyUD fills e.UD from struct rdma_ucm_ud_param, as ucma_copy_ud_event.
func (e *Event) copyUD(p *abi.RdmaUcmUdParam) {
	n := int(p.PrivateDataLen)
	copy(e.private[:], p.PrivateData[:n])
	e.UD = UDParam{QPNum: p.QpNum, QKey: p.Qkey, AH: ahFromKern(&p.AhAttr), PrivateData: e.private[:n:n]}
}

// ahFromKern converts struct ib_uverbs_ah_attr.
func ahFromKern(a *abi.IbUverbsAhAttr) uverbs.AHAttr {
	return uverbs.AHAttr{
		GRH: uverbs.GlobalRoute{
			DGID:         rdma.GID(a.Grh.Dgid),
			FlowLabel:    a.Grh.FlowLabel,
			SGIDIndex:    a.Grh.SgidIndex,
			HopLimit:     a.Grh.HopLimit,
			TrafficClass: a.Grh.TrafficClass,
		},
		DLID:        a.Dlid,
		SL:          a.Sl,
		SrcPathBits: a.SrcPathBits,
		StaticRate:  a.StaticRate,
		IsGlobal:    a.IsGlobal != 0,
		Port:        int(a.PortNum),
	}
}
