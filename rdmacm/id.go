package rdmacm

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/uverbs"
)

// PortSpace is an ID's port space (enum rdma_ucm_port_space): which
// transport its connections use and how its ports map to service IDs.
type PortSpace uint16

// The port spaces.
const (
	PortSpaceTCP   PortSpace = abi.RDMA_PS_TCP   // RDMA_PS_TCP: reliable connected (RC) QPs
	PortSpaceUDP   PortSpace = abi.RDMA_PS_UDP   // RDMA_PS_UDP: unreliable datagram (UD) QPs, SIDR to "connect"
	PortSpaceIB    PortSpace = abi.RDMA_PS_IB    // RDMA_PS_IB: RC QPs on InfiniBand service IDs
	PortSpaceIPoIB PortSpace = abi.RDMA_PS_IPOIB // RDMA_PS_IPOIB: UD QPs in IPoIB's space
)

// String names the port space as rdma-core's tools ("tcp", "udp", "ib",
// "ipoib").
func (ps PortSpace) String() string {
	switch ps {
	case PortSpaceTCP:
		return "tcp"
	case PortSpaceUDP:
		return "udp"
	case PortSpaceIB:
		return "ib"
	case PortSpaceIPoIB:
		return "ipoib"
	}
	return "port space " + strconv.Itoa(int(ps))
}

// qpType is the QP type the kernel gives an ID of the port space
// (ucma_get_qp_type).
func (ps PortSpace) qpType() (uverbs.QPType, bool) {
	switch ps {
	case PortSpaceTCP, PortSpaceIB:
		return uverbs.QPTypeRC, true
	case PortSpaceUDP, PortSpaceIPoIB:
		return uverbs.QPTypeUD, true
	}
	return 0, false
}

// ID is a connection manager identifier (struct rdma_cm_id): one
// endpoint, which is bound, resolved, listens or connects, and may carry a
// QP. Its methods are safe for concurrent use.
type ID struct {
	ps     PortSpace
	qpType uverbs.QPType
	handle uint32 // the kernel's
	uid    uint64 // ours, in the kernel's events

	mu     sync.Mutex
	ch     *EventChannel
	closed bool
	dev    *device
	port   int
	qp     *uverbs.QP
	ownCQs [2]*uverbs.CQ // the CQs CreateQP made: send, recv

	initDepth, respRes uint8
	connectError       bool
	mcs                []*mcast

	// sync: the ID has its own channel and its calls wait for their
	// outcome (CreateEP, GetRequest); reqQP and reqPD are a passive
	// endpoint's QP attributes for GetRequest.
	sync  bool
	reqQP *uverbs.QPInitAttr
	reqPD *uverbs.PD
}

// nextUID numbers the IDs and multicast joins of the process: the value
// the kernel hands back in events.
var nextUID atomic.Uint64

// CreateID creates an ID in the port space ps, like rdma_create_id: TCP
// and IB IDs carry RC QPs, UDP and IPoIB IDs UD QPs.
//
// Errors: an *Error wrapping EINVAL for an unknown port space, os.ErrClosed
// on a closed channel, or the kernel's errno.
func (ch *EventChannel) CreateID(ps PortSpace) (*ID, error) {
	const op = "create id"
	if ch == nil || ch.fd == nil {
		return nil, errs.New(op, "", errNil)
	}
	typ, ok := ps.qpType()
	if !ok {
		return nil, errs.New(op, "", errArg("unknown port space %#x", uint16(ps)))
	}
	id := &ID{ps: ps, qpType: typ, uid: nextUID.Add(1), ch: ch}
	cmd := abi.RdmaUcmCreateId{Uid: id.uid, Ps: uint16(ps), QpType: uint8(typ)}
	var resp abi.RdmaUcmCreateIdResp
	if err := exec(ch, op, "", abi.RDMA_USER_CM_CMD_CREATE_ID, &cmd, unsafe.Offsetof(cmd.Response), bytesOf(&resp)); err != nil {
		return nil, err
	}
	id.handle = resp.Id
	if !ch.add(id) {
		destroyKernID(ch, resp.Id)
		return nil, ch.errClosed(op)
	}
	return id, nil
}

// newRequestID makes the ID of an incoming connection (ucma_process_conn_req):
// on the listener's channel, with the depths the peer asked for, bound to
// its device.
func (listen *ID) newRequestID(handle uint32, ev *Event) (*ID, error) {
	listen.mu.Lock()
	ch := listen.ch
	listen.mu.Unlock()
	id := &ID{ps: listen.ps, qpType: listen.qpType, handle: handle, uid: nextUID.Add(1), ch: ch,
		initDepth: ev.Conn.InitiatorDepth, respRes: ev.Conn.ResponderResources}
	if !ch.add(id) {
		destroyKernID(ch, handle)
		return nil, os.ErrClosed
	}
	id.mu.Lock()
	err := id.bindDeviceLocked()
	id.mu.Unlock()
	if err != nil {
		id.Close()
		return nil, err
	}
	return id, nil
}

// destroyKernID destroys the kernel's ID (its events not yet read go
// with it; the count the kernel reports is not needed, as Close does not
// wait for acknowledgements).
func destroyKernID(ch *EventChannel, handle uint32) error {
	cmd := abi.RdmaUcmDestroyId{Id: handle}
	var resp abi.RdmaUcmDestroyIdResp
	return exec(ch, "destroy id", "", abi.RDMA_USER_CM_CMD_DESTROY_ID, &cmd, unsafe.Offsetof(cmd.Response), bytesOf(&resp))
}

// PortSpace returns the ID's port space.
func (id *ID) PortSpace() PortSpace {
	if id == nil {
		return 0
	}
	return id.ps
}

// QPType returns the type of QP the ID carries: RC or UD.
func (id *ID) QPType() uverbs.QPType {
	if id == nil {
		return 0
	}
	return id.qpType
}

// Channel returns the event channel the ID reports to.
func (id *ID) Channel() *EventChannel {
	if id == nil {
		return nil
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.ch
}

// Verbs returns the verbs context of the ID's device (rdma_cm_id's verbs),
// nil until the ID is bound to a device by Bind to a local address, an
// ADDR_RESOLVED event or a connection request. The IDs on one device share
// it: it stays open while one of them does, and closing the last one
// closes it with what was created on it, as a C program deallocates its
// objects before its last rdma_destroy_id.
func (id *ID) Verbs() *uverbs.Context {
	if d := id.device(); d != nil {
		return d.ctx
	}
	return nil
}

// PD returns the device's protection domain that CreateQP uses when given
// none (rdma_cm_id's pd), nil while the ID has no device.
func (id *ID) PD() *uverbs.PD {
	if d := id.device(); d != nil {
		return d.pd
	}
	return nil
}

// device returns the ID's device, nil while it has none.
func (id *ID) device() *device {
	if id == nil {
		return nil
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.dev
}

// Port returns the port number of the ID's device it is bound to, 0
// while it has none.
func (id *ID) Port() int {
	if id == nil {
		return 0
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.port
}

// DeviceName returns the name of the ID's device, "" while it has none.
func (id *ID) DeviceName() string {
	if id == nil {
		return ""
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.devNameLocked()
}

func (id *ID) devNameLocked() string {
	if id.dev == nil {
		return ""
	}
	return id.dev.name
}

// use returns the ID's channel and device name for a command, or the
// error of a closed or nil ID.
func (id *ID) use(op string) (*EventChannel, string, error) {
	if id == nil {
		return nil, "", errs.New(op, "", errNil)
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed {
		return nil, "", errs.New(op, id.devNameLocked(), os.ErrClosed)
	}
	return id.ch, id.devNameLocked(), nil
}

// Bind binds the ID to a local address and port, like rdma_bind_addr. A
// wildcard address (0.0.0.0, ::) binds no device: a listener then takes
// connections on every device. Port 0 picks a free port. An IPv6
// address's zone is its scope (an interface name or index).
//
// Errors: an *Error wrapping EADDRINUSE, EADDRNOTAVAIL (no interface has
// the address), EINVAL (already bound), or ENODEV (no RDMA device has the
// address's interface).
func (id *ID) Bind(addr netip.AddrPort) error {
	const op = "bind addr"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	cmd := abi.RdmaUcmBind{Id: id.handle}
	n, err := putSockaddr(cmd.Addr[:], addr)
	if err != nil {
		return errs.New(op, dev, err)
	}
	cmd.AddrSize = uint16(n)
	if err := exec(ch, op, dev, abi.RDMA_USER_CM_CMD_BIND, &cmd, 0, nil); err != nil {
		return err
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if addr.Addr().IsUnspecified() {
		return nil
	}
	if err := id.bindDeviceLocked(); err != nil {
		return errs.New(op, "", err)
	}
	return nil
}

// ResolveAddr resolves dst (and src, when valid) to a device, a port and
// GIDs, like rdma_resolve_addr: it returns at once and the ID's channel
// reports ADDR_RESOLVED or ADDR_ERROR within timeout (the kernel's
// default unit is milliseconds; 0 means 2 s as rping's). With src invalid
// the ID is bound to the address the route to dst leaves from; a
// destination that is a local address resolves to the device that owns
// it.
//
// Errors: an *Error wrapping EINVAL (an address family the ID cannot
// take, or resolving twice), EADDRNOTAVAIL, or the kernel's errno.
func (id *ID) ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	const op = "resolve addr"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	cmd := abi.RdmaUcmResolveAddr{Id: id.handle, TimeoutMs: msec(timeout)}
	if src.Addr().IsValid() {
		n, err := putSockaddr(cmd.SrcAddr[:], src)
		if err != nil {
			return errs.New(op, dev, err)
		}
		cmd.SrcSize = uint16(n)
	}
	n, err := putSockaddr(cmd.DstAddr[:], dst)
	if err != nil {
		return errs.New(op, dev, err)
	}
	cmd.DstSize = uint16(n)
	return exec(ch, op, dev, abi.RDMA_USER_CM_CMD_RESOLVE_ADDR, &cmd, 0, nil)
}

// ResolveRoute resolves the route to the address ResolveAddr resolved,
// like rdma_resolve_route: ROUTE_RESOLVED or ROUTE_ERROR follows on the
// channel. timeout 0 means 2 s.
//
// Errors: an *Error wrapping EINVAL when the address is not resolved.
func (id *ID) ResolveRoute(timeout time.Duration) error {
	const op = "resolve route"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	cmd := abi.RdmaUcmResolveRoute{Id: id.handle, TimeoutMs: msec(timeout)}
	return exec(ch, op, dev, abi.RDMA_USER_CM_CMD_RESOLVE_ROUTE, &cmd, 0, nil)
}

func msec(d time.Duration) uint32 {
	ms := d.Milliseconds()
	if ms > 1<<31 {
		ms = 1 << 31
	}
	if ms < 1 {
		ms = 1
	}
	return uint32(ms)
}

// Listen makes a bound ID listen for connections, like rdma_listen:
// CONNECT_REQUEST events follow on its channel, each with a new ID to
// Accept or Reject. backlog is the most requests waiting (the kernel caps
// it; 0 means its default).
//
// Errors: an *Error wrapping EINVAL when the ID is not bound, EADDRINUSE
// when another ID listens on the port.
func (id *ID) Listen(backlog int) error {
	const op = "listen"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	if backlog < 0 || backlog > 1<<30 {
		return errs.New(op, dev, errArg("backlog %d", backlog))
	}
	cmd := abi.RdmaUcmListen{Id: id.handle, Backlog: uint32(backlog)}
	return exec(ch, op, dev, abi.RDMA_USER_CM_CMD_LISTEN, &cmd, 0, nil)
}

// privateLimit is the kernel's limit on private data (cma.c:
// IB_CM_*_PRIVATE_DATA_SIZE less, for a request, the 36-byte RDMA CM
// header cma_user_data_offset reserves for every address but AF_IB's;
// this package gives the kernel IP addresses only).
func (id *ID) privateLimit(accept bool) int {
	switch {
	case id.qpType == uverbs.QPTypeUD && accept:
		return 136 // IB_CM_SIDR_REP_PRIVATE_DATA_SIZE
	case id.qpType == uverbs.QPTypeUD:
		return 216 - 36 // IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE
	case accept:
		return 196 // IB_CM_REP_PRIVATE_DATA_SIZE
	}
	return 92 - 36 // IB_CM_REQ_PRIVATE_DATA_SIZE
}

// Connect connects to the peer whose route ResolveRoute resolved, like
// rdma_connect. With a QP on the ID its number is sent and, when the peer
// accepts, GetEvent moves it to RTR and RTS and reports ESTABLISHED;
// without one, the peer's answer is CONNECT_RESPONSE. p may be nil:
// retries 7, the device's maximum depths. For UDP IDs it sends a SIDR
// request: ESTABLISHED carries the peer's QP number and Q_Key. On a
// synchronous ID (CreateEP) it waits for ESTABLISHED.
//
// Errors: an *Error wrapping EINVAL, before any system call, for private
// data over the kernel's limit (56 bytes for TCP) or depths over the
// device's, and the kernel's errno.
func (id *ID) Connect(p *ConnParam) error {
	const op = "connect"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	var cmd abi.RdmaUcmConnect
	cmd.Id = id.handle
	id.mu.Lock()
	err = id.connParamLocked(&cmd.ConnParam, p, false)
	id.mu.Unlock()
	if err != nil {
		return errs.New(op, dev, err)
	}
	if err := exec(ch, op, dev, abi.RDMA_USER_CM_CMD_CONNECT, &cmd, 0, nil); err != nil {
		return err
	}
	id.mu.Lock()
	id.connectError = false
	id.mu.Unlock()
	return id.awaitIfSync(op, EventEstablished)
}

// connParamLocked checks p and fills the kernel's conn param, as
// ucma_valid_param and ucma_copy_conn_param_to_kern, settling the depths
// as rdma_connect and rdma_accept do.
func (id *ID) connParamLocked(dst *abi.RdmaUcmConnParam, p *ConnParam, accept bool) error {
	var maxInit, maxResp uint8 = MaxDepth, MaxDepth
	if id.dev != nil {
		maxInit, maxResp = id.dev.maxInit, id.dev.maxResp
	}
	if p != nil {
		if lim := id.privateLimit(accept); len(p.PrivateData) > lim {
			return errArg("%d bytes of private data: the kernel takes at most %d here", len(p.PrivateData), lim)
		}
		if id.ps == PortSpaceTCP && id.dev != nil {
			if p.ResponderResources != MaxDepth && p.ResponderResources > maxResp {
				return errArg("responder resources %d: the device has %d", p.ResponderResources, maxResp)
			}
			if p.InitiatorDepth != MaxDepth && p.InitiatorDepth > maxInit {
				return errArg("initiator depth %d: the device has %d", p.InitiatorDepth, maxInit)
			}
		}
	} else if id.ps == PortSpaceTCP && id.qp == nil {
		return errArg("no QP on the ID and no connection parameters")
	}
	if !accept {
		id.initDepth, id.respRes = maxInit, maxResp
		if p != nil && p.InitiatorDepth != MaxDepth {
			id.initDepth = p.InitiatorDepth
		}
		if p != nil && p.ResponderResources != MaxDepth {
			id.respRes = p.ResponderResources
		}
	} else {
		if p == nil || p.InitiatorDepth == MaxDepth {
			id.initDepth = min(id.initDepth, maxInit)
		} else {
			id.initDepth = p.InitiatorDepth
		}
		if p == nil || p.ResponderResources == MaxDepth {
			id.respRes = min(id.respRes, maxResp)
		} else {
			id.respRes = p.ResponderResources
		}
	}
	dst.ResponderResources = id.respRes
	dst.InitiatorDepth = id.initDepth
	dst.Valid = 1
	dst.RetryCount, dst.RnrRetryCount = 7, 7
	if p != nil {
		dst.QpNum = p.QPNum
		if p.SRQ {
			dst.Srq = 1
		}
		dst.FlowControl = p.FlowControl
		dst.RetryCount = p.RetryCount
		dst.RnrRetryCount = p.RNRRetryCount
		dst.PrivateDataLen = uint8(copy(dst.PrivateData[:], p.PrivateData))
	}
	if id.qp != nil {
		dst.QpNum = id.qp.Num()
		dst.Srq = 0
	}
	return nil
}

// Accept accepts the connection request that created the ID, like
// rdma_accept. With a QP on the ID (RC) it is moved to RTR and RTS
// first; ESTABLISHED follows on the channel. p may be nil (the depths the
// peer asked for, within the device's). On a synchronous ID
// (GetRequest) it waits for ESTABLISHED.
//
// Errors: an *Error wrapping EINVAL, before any system call, for private
// data over the kernel's limit (196 bytes for TCP); the errno of a QP
// transition, after which the QP is in ERR; the kernel's errno.
func (id *ID) Accept(p *ConnParam) error {
	const op = "accept"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	var cmd abi.RdmaUcmAccept
	cmd.Id, cmd.Uid = id.handle, id.uid
	id.mu.Lock()
	err = id.connParamLocked(&cmd.ConnParam, p, true)
	if err == nil && id.qpType != uverbs.QPTypeUD {
		if err = id.modifyQPLocked(uverbs.QPStateRTR, id.respRes); err == nil {
			err = id.modifyQPLocked(uverbs.QPStateRTS, id.initDepth)
		}
	}
	id.mu.Unlock()
	if err != nil {
		return errs.New(op, dev, err)
	}
	if err := exec(ch, op, dev, abi.RDMA_USER_CM_CMD_ACCEPT, &cmd, 0, nil); err != nil {
		id.qpToErr()
		return err
	}
	if id.qpType == uverbs.QPTypeUD {
		return nil
	}
	return id.awaitIfSync(op, EventEstablished)
}

// Reject rejects the connection request that created the ID, like
// rdma_reject: the peer's REJECTED event carries privateData (148 bytes
// at most in the TCP port space) and the reason RejectConsumerDefined.
//
// Errors: an *Error wrapping EINVAL for private data over 255 bytes, and
// the kernel's errno (EINVAL over its limit).
func (id *ID) Reject(privateData []byte) error {
	return id.reject(privateData, RejectConsumerDefined)
}

// RejectECE rejects like Reject with the reason
// RejectVendorOptionNotSupp, like rdma_reject_ece.
func (id *ID) RejectECE(privateData []byte) error {
	return id.reject(privateData, RejectVendorOptionNotSupp)
}

func (id *ID) reject(privateData []byte, reason RejectReason) error {
	const op = "reject"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	if len(privateData) > 255 {
		return errs.New(op, dev, errArg("%d bytes of private data: a reject carries at most 148", len(privateData)))
	}
	cmd := abi.RdmaUcmReject{Id: id.handle, Reason: uint8(reason)}
	cmd.PrivateDataLen = uint8(copy(cmd.PrivateData[:], privateData))
	return exec(ch, op, dev, abi.RDMA_USER_CM_CMD_REJECT, &cmd, 0, nil)
}

// Disconnect disconnects, like rdma_disconnect: the ID's QP goes to ERR
// (flushing its work requests) and the CM sends a DREQ; both sides get
// DISCONNECTED. On a synchronous ID (CreateEP, GetRequest) it waits for
// that event: the peer's DREQ if it came first, else the peer's answer.
//
// Errors: an *Error wrapping EINVAL when the ID is not connected.
func (id *ID) Disconnect() error {
	const op = "disconnect"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	id.qpToErr()
	cmd := abi.RdmaUcmDisconnect{Id: id.handle}
	if err := exec(ch, op, dev, abi.RDMA_USER_CM_CMD_DISCONNECT, &cmd, 0, nil); err != nil {
		return err
	}
	return id.awaitIfSync(op, EventDisconnected)
}

// Notify tells the CM of a QP event the verbs async events reported
// (IBV_EVENT_COMM_EST), like rdma_notify.
func (id *ID) Notify(event uverbs.EventType) error {
	const op = "notify"
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	cmd := abi.RdmaUcmNotify{Id: id.handle, Event: uint32(event)}
	return exec(ch, op, dev, abi.RDMA_USER_CM_CMD_NOTIFY, &cmd, 0, nil)
}

// SetTOS sets the type of service of the ID's connections
// (RDMA_OPTION_ID_TOS): the traffic class on RoCE. Set it before
// ResolveRoute.
func (id *ID) SetTOS(tos uint8) error {
	return id.setOption("set option tos", abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_TOS, []byte{tos})
}

// SetReuseAddr lets the ID bind a port other IDs use
// (RDMA_OPTION_ID_REUSEADDR), like SO_REUSEADDR. Set it before Bind.
func (id *ID) SetReuseAddr(on bool) error {
	return id.setOption("set option reuseaddr", abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_REUSEADDR, intOpt(on))
}

// SetAFOnly makes an IPv6 wildcard listener take IPv6 connections only
// (RDMA_OPTION_ID_AFONLY), like IPV6_V6ONLY. Set it before Bind.
func (id *ID) SetAFOnly(on bool) error {
	return id.setOption("set option afonly", abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_AFONLY, intOpt(on))
}

// SetAckTimeout sets the QP's local ACK timeout exponent
// (RDMA_OPTION_ID_ACK_TIMEOUT: 4.096 µs × 2^timeout), which INIT_QP_ATTR
// then hands to the RTS transition.
func (id *ID) SetAckTimeout(timeout uint8) error {
	return id.setOption("set option ack timeout", abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_ACK_TIMEOUT, []byte{timeout})
}

func intOpt(on bool) []byte {
	if on {
		return []byte{1, 0, 0, 0}
	}
	return []byte{0, 0, 0, 0}
}

func (id *ID) setOption(op string, level, name uint32, val []byte) error {
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	return ch.setOption(op, dev, id.handle, level, name, val)
}

// Migrate moves the ID to another event channel, like rdma_migrate_id:
// its events not yet read move with it.
//
// Errors: an *Error wrapping EINVAL for a nil or closed channel.
func (id *ID) Migrate(to *EventChannel) error {
	const op = "migrate id"
	from, dev, err := id.use(op)
	if err != nil {
		return err
	}
	if to == nil || to.fd == nil {
		return errs.New(op, dev, errArg("no channel to move to"))
	}
	if to == from {
		return nil
	}
	cmd := abi.RdmaUcmMigrateId{Id: id.handle, Fd: uint32(from.fd.Raw())}
	var resp abi.RdmaUcmMigrateResp
	if err := exec(to, op, dev, abi.RDMA_USER_CM_CMD_MIGRATE_ID, &cmd, unsafe.Offsetof(cmd.Response), bytesOf(&resp)); err != nil {
		return err
	}
	id.mu.Lock()
	mcs := id.mcs
	from.remove(id)
	id.ch = to
	to.add(id)
	id.mu.Unlock()
	to.mu.Lock()
	for _, mc := range mcs {
		to.mcs[mc.uid] = mc
	}
	to.mu.Unlock()
	return nil
}

// Close destroys the ID, like rdma_destroy_id: its QP and the CQs CreateQP
// made go first, then its multicast groups and the kernel's ID (which
// drops its events not yet read; events already read stay readable until
// Ack). The ID's device is closed with the last ID on it. It is safe to
// call more than once.
func (id *ID) Close() error {
	if id == nil {
		return errs.New("destroy id", "", errNil)
	}
	id.mu.Lock()
	if id.closed {
		id.mu.Unlock()
		return nil
	}
	id.closed = true
	ch := id.ch
	sync := id.sync
	id.destroyQPLocked()
	id.mcs = nil
	dev := id.dev
	id.dev = nil
	id.mu.Unlock()
	ch.remove(id)
	var err error
	ch.mu.Lock()
	closed := ch.closed
	ch.mu.Unlock()
	if !closed {
		err = destroyKernID(ch, id.handle)
		if errs.Is(err, os.ErrClosed) {
			err = nil // the channel's close destroyed it
		}
	}
	if dev != nil {
		dev.release()
	}
	if sync {
		ch.Close()
	}
	return err
}

// AddrInfo is what QueryAddr returns (struct rdma_ucm_query_addr_resp).
type AddrInfo struct {
	Src, Dst netip.AddrPort
	NodeGUID rdma.GUID // the device's, host order
	Port     int
	PKey     uint16
	// DeviceIndex is the kernel's index of the device.
	DeviceIndex uint32
}

// QueryAddr returns the ID's addresses and device (RDMA_USER_CM_QUERY_ADDR),
// what rdma_get_local_addr and rdma_get_peer_addr read.
func (id *ID) QueryAddr() (AddrInfo, error) {
	const op = "query addr"
	ch, dev, err := id.use(op)
	if err != nil {
		return AddrInfo{}, err
	}
	var resp abi.RdmaUcmQueryAddrResp
	if err := query(ch, op, dev, id.handle, abi.RDMA_USER_CM_QUERY_ADDR, bytesOf(&resp)); err != nil {
		return AddrInfo{}, err
	}
	return addrInfo(&resp), nil
}

func addrInfo(r *abi.RdmaUcmQueryAddrResp) AddrInfo {
	return AddrInfo{
		Src:         sockaddr(r.SrcAddr[:min(int(r.SrcSize), len(r.SrcAddr))]),
		Dst:         sockaddr(r.DstAddr[:min(int(r.DstSize), len(r.DstAddr))]),
		NodeGUID:    rdma.GUID(binary.BigEndian.Uint64(bytesOf(&r.NodeGuid))),
		Port:        int(r.PortNum),
		PKey:        r.Pkey,
		DeviceIndex: r.IbdevIndex,
	}
}

func query(ch *EventChannel, op, dev string, handle, option uint32, out []byte) error {
	cmd := abi.RdmaUcmQuery{Id: handle, Option: option}
	return exec(ch, op, dev, abi.RDMA_USER_CM_CMD_QUERY, &cmd, unsafe.Offsetof(cmd.Response), out)
}

// QueryGID returns the ID's source and destination GIDs and P_Key
// (RDMA_USER_CM_QUERY_GID), what rdma_get_sgid and rdma_get_dgid read.
func (id *ID) QueryGID() (sgid, dgid rdma.GID, pkey uint16, err error) {
	const op = "query gid"
	ch, dev, err := id.use(op)
	if err != nil {
		return sgid, dgid, 0, err
	}
	var resp abi.RdmaUcmQueryAddrResp
	if err := query(ch, op, dev, id.handle, abi.RDMA_USER_CM_QUERY_GID, bytesOf(&resp)); err != nil {
		return sgid, dgid, 0, err
	}
	// The GIDs come as sockaddr_ib: the GID at offset 8.
	copy(sgid[:], resp.SrcAddr[8:24])
	copy(dgid[:], resp.DstAddr[8:24])
	return sgid, dgid, resp.Pkey, nil
}

// PathRecord is one path of a resolved route (struct ibv_path_record,
// from the SA path record the kernel hands over).
type PathRecord struct {
	Flags          uint32 // IB_PATH_PRIMARY, IB_PATH_GMP, IB_PATH_BIDIRECTIONAL, …
	DGID, SGID     rdma.GID
	DLID, SLID     uint16
	FlowLabel      uint32
	HopLimit       uint8
	TrafficClass   uint8
	Reversible     bool
	NumbPath       uint8
	PKey           uint16
	SL             uint8
	MTU            uint8 // IB_MTU_* (3: 1024, 4: 2048, 5: 4096)
	Rate           uint8
	PacketLifeTime uint8
	Preference     uint8
}

// QueryPath returns the paths of the ID's resolved route
// (RDMA_USER_CM_QUERY_PATH), as rdma_cm_id's route.path_rec.
func (id *ID) QueryPath() ([]PathRecord, error) {
	const op = "query path"
	ch, dev, err := id.use(op)
	if err != nil {
		return nil, err
	}
	var resp [8 + 3*72]byte
	if err := query(ch, op, dev, id.handle, abi.RDMA_USER_CM_QUERY_PATH, resp[:]); err != nil {
		return nil, err
	}
	return decodePaths(resp[:]), nil
}

// decodePaths decodes struct rdma_ucm_query_path_resp: the count, then
// that many struct ib_path_rec_data (flags, reserved, the 64-byte SA path
// record of IBA 15.2.5.16 in network order), as far as b holds them.
func decodePaths(b []byte) []PathRecord {
	if len(b) < 8 {
		return nil
	}
	n := int(binary.LittleEndian.Uint32(b))
	var out []PathRecord
	for i, off := 0, 8; i < n && off+72 <= len(b); i, off = i+1, off+72 {
		r := b[off+8 : off+72]
		w := binary.BigEndian.Uint32(r[44:])
		out = append(out, PathRecord{
			Flags:          binary.LittleEndian.Uint32(b[off:]),
			DGID:           rdma.GID(r[8:24]),
			SGID:           rdma.GID(r[24:40]),
			DLID:           binary.BigEndian.Uint16(r[40:]),
			SLID:           binary.BigEndian.Uint16(r[42:]),
			FlowLabel:      w >> 8 & 0xfffff,
			HopLimit:       uint8(w),
			TrafficClass:   r[48],
			Reversible:     r[49]&0x80 != 0,
			NumbPath:       r[49] & 0x7f,
			PKey:           binary.BigEndian.Uint16(r[50:]),
			SL:             uint8(binary.BigEndian.Uint16(r[52:]) & 0xf),
			MTU:            r[54] & 0x3f,
			Rate:           r[55] & 0x3f,
			PacketLifeTime: r[56] & 0x3f,
			Preference:     r[57],
		})
	}
	return out
}

// String names the ID by its handle and port space.
func (id *ID) String() string {
	if id == nil {
		return "<nil>"
	}
	return fmt.Sprintf("cm_id %d (%s)", id.handle, id.ps)
}

// bytesOf returns the memory of *p as a byte slice (the UAPI structs have
// no pointers; abi's layout test pins them).
func bytesOf[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// errArg is the error of an invalid argument, found before any system
// call; it wraps EINVAL, what the kernel would answer.
func errArg(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...)
}

// errNil is the error of a method called on a nil object.
var errNil = errs.Wrap("nil or zero object (make it with NewEventChannel or CreateID)", syscall.EINVAL)
