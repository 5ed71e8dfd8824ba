package umad

// The ibsim transport: a Port on a fabric that ibsim simulates, over
// ibsim's own socket protocol instead of /dev/infiniband/umadN. The
// protocol is ibsim 0.10's (include/ibsim.h; the server side in
// ibsim/ibsim.c and ibsim/sim_net.c, the client side in
// umad2sim/sim_client.c): Unix datagram sockets in the abstract
// namespace, a control socket for struct sim_ctl messages and a data
// socket for struct sim_request packets. The kernel's part of a umad
// port — agents, method tables, TID routing of responses, timeouts and
// retries — is umad/internal/umadmodel's model of Linux's user_mad.c and
// mad.c, the one the unit tests use, with its wire (umadmodel.Wire)
// leading to ibsim: so the Port code above it, the MAD codecs and the
// agent logic are the same for both transports.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/umad/internal/umadmodel"
)

// struct sim_ctl and struct sim_request (include/ibsim.h).
const (
	simMagic       = 0xdeadbeef
	simCtlError    = 0
	simCtlConnect  = 1
	simCtlDisconn  = 2
	simCtlPortInfo = 8
	simCtlSize     = 16 + 64
	simReqSize     = 32 + 256 // x86_64 and arm64 pad before the u64 length
	simInfoSize    = 44       // struct sim_client_info
	simNodeIDLen   = 32
	simPermissive  = 0xffff
)

// simLinks numbers the links of this process: ibsim names a client's
// sockets by the id its sim_client_info carries (libumad2sim uses the
// pid), so the links of one process need ids of their own.
var simLinks atomic.Uint32

// simLink is one ibsim client: its sockets and the modelled umad port whose
// wire it is.
type simLink struct {
	name  string
	base  string
	ctl   int // blocking, SO_RCVTIMEO; guarded by ctlMu
	ctlMu sync.Mutex
	data  *net.UnixConn
	id    uint32 // the client index ibsim gave
	fab   *umadmodel.Fabric
	port  *umadmodel.Port
	done  chan struct{}
	once  sync.Once
	cerr  error
}

// simName is ibsim's make_name: the abstract address "\0BASE:X" whose
// length counts a trailing NUL.
func simName(base, x string) *syscall.SockaddrUnix {
	return &syscall.SockaddrUnix{Name: "@" + base + ":" + x + "\x00"}
}

// OpenSimPort opens a port at node of the InfiniBand fabric that ibsim
// simulates under the socket base sock (ibsim's IBSIM_SOCKNAME; "" means
// ibsim's default, "sim"). node is matched by ibsim against its node ids
// and descriptions, like libumad2sim's SIM_HOST; "" attaches at ibsim's
// default node. The port has the Port API of a kernel port: agents,
// Send with timeout and retries, Recv, Poll, Close unblocking a receive;
// ibsim answers SMPs and PMA MADs for every simulated port, and forwards
// other MADs to the client attached at the destination (OpenSM's SA).
//
// A request ibsim cannot route (an unassigned LID, a directed route
// through a port that is down) comes back at once as a timed-out send
// (Status ETIMEDOUT), without waiting for its retries. ibsim has at most
// 10 clients; Close gives the slot back.
//
// Errors match ErrNoDevice when ibsim does not listen on sock, and
// ErrOpenFailed when it refuses the client (no such node, no free slot).
func OpenSimPort(sock, node string) (*Port, error) {
	if sock == "" {
		sock = "sim"
	}
	name := "ibsim:" + sock + "/" + node
	if node == "" {
		name = "ibsim:" + sock
	}
	fail := func(err error) (*Port, error) { return nil, errs.New("open port", name, err) }
	if len(node) >= simNodeIDLen {
		return fail(invalid(fmt.Sprintf("node %q is longer than ibsim's %d-byte node id", node, simNodeIDLen-1)))
	}
	if strings.ContainsAny(sock, "\x00/") {
		return fail(invalid(fmt.Sprintf("socket base %q", sock)))
	}
	l, err := dialSim(sock, node, name)
	if err != nil {
		return fail(err)
	}
	_, fd, err := l.port.Open()
	if err != nil {
		l.close()
		return fail(err)
	}
	p := &Port{fd: fd, ca: node, num: l.port.Config().Port, dev: l.port.Config().Device, name: name,
		linkLayer: rdma.LinkLayerInfiniBand, sim: l}
	p.hdr.Store(abi.MadHdrSizeOld)
	if err := fd.Ioctl(abi.IB_USER_MAD_ENABLE_PKEY, nil); err == nil {
		p.hdr.Store(abi.MadHdrSize)
	}
	go l.receive()
	if debugOn(1) {
		logDebug("umad: opened ibsim port", slog.String("port", name), slog.Int("client", int(l.id)),
			slog.Int("lid", int(l.port.Config().LID)))
	}
	return p, nil
}

func dialSim(base, node, name string) (*simLink, error) {
	l := &simLink{name: name, base: base, ctl: -1, done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			l.close()
		}
	}()
	ctl, err := simSocket()
	if err != nil {
		return nil, err
	}
	l.ctl = ctl
	tv := syscall.Timeval{Sec: 5}
	if err := syscall.SetsockoptTimeval(ctl, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return nil, err
	}
	id := uint32(os.Getpid())&(1<<22-1) | (simLinks.Add(1)&0x3ff)<<22
	if err := syscall.Bind(ctl, simName(base, fmt.Sprintf("ctl%d", id))); err != nil {
		return nil, detail(ErrOpenFailed, "binding the control socket", err)
	}
	if err := syscall.Connect(ctl, simName(base, "ctl")); err != nil {
		return nil, detail(ErrNoDevice, fmt.Sprintf("ibsim does not listen on @%s:ctl (is ibsim running with IBSIM_SOCKNAME=%s?)", base, base), err)
	}
	// The data socket is bound before CONNECT: ibsim connects its output
	// socket to BASE:in<id> while it handles the CONNECT.
	dfd, err := simSocket()
	if err != nil {
		return nil, err
	}
	if err := syscall.Bind(dfd, simName(base, fmt.Sprintf("in%d", id))); err != nil {
		syscall.Close(dfd)
		return nil, detail(ErrOpenFailed, "binding the data socket", err)
	}
	info := make([]byte, simInfoSize)
	binary.NativeEndian.PutUint32(info[0:], id)
	copy(info[12:12+simNodeIDLen-1], node)
	r, err := l.call(simCtlConnect, info)
	if err != nil {
		syscall.Close(dfd)
		return nil, detail(ErrOpenFailed, fmt.Sprintf("ibsim refused the client (no node %q, or all 10 client slots taken?)", node), err)
	}
	l.id = binary.NativeEndian.Uint32(r[0:])
	got := strings.TrimRight(string(r[12:12+simNodeIDLen]), "\x00")
	if err := syscall.Connect(dfd, simName(base, fmt.Sprintf("out%d", l.id))); err != nil {
		syscall.Close(dfd)
		_, _ = l.call(simCtlDisconn, nil)
		return nil, detail(ErrOpenFailed, "connecting the data socket", err)
	}
	if err := syscall.SetNonblock(dfd, true); err != nil {
		syscall.Close(dfd)
		return nil, err
	}
	file := os.NewFile(uintptr(dfd), "ibsim-data")
	c, err := net.FileConn(file)
	file.Close()
	if err != nil {
		_, _ = l.call(simCtlDisconn, nil)
		return nil, err
	}
	l.data = c.(*net.UnixConn)
	// Our port's PortInfo (the first 64 bytes; LID at 16): the LID the
	// port reports.
	pi := make([]byte, 64)
	var lid uint16
	if r, err := l.call(simCtlPortInfo, pi); err == nil {
		lid = binary.BigEndian.Uint16(r[16:18])
	}
	l.fab = umadmodel.NewFabric()
	l.port = l.fab.AddPort(umadmodel.PortConfig{CA: got, Port: 1, LID: lid,
		Device: name, LinkLayer: umadmodel.InfiniBand})
	l.fab.SetWire(l)
	ok = true
	return l, nil
}

func simSocket() (int, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, detail(ErrOpenFailed, "socket(AF_UNIX, SOCK_DGRAM)", err)
	}
	return fd, nil
}

// call sends one struct sim_ctl and reads the answer's data.
func (l *simLink) call(typ uint32, data []byte) ([]byte, error) {
	l.ctlMu.Lock()
	defer l.ctlMu.Unlock()
	if l.ctl < 0 {
		return nil, os.ErrClosed
	}
	b := make([]byte, simCtlSize)
	ne := binary.NativeEndian // struct sim_ctl is in host order
	ne.PutUint32(b[0:], simMagic)
	ne.PutUint32(b[4:], l.id)
	ne.PutUint32(b[8:], typ)
	ne.PutUint32(b[12:], uint32(len(data)))
	copy(b[16:], data)
	if _, err := retryEINTR(func() (int, error) { return syscall.Write(l.ctl, b) }); err != nil {
		return nil, err
	}
	n, err := retryEINTR(func() (int, error) { return syscall.Read(l.ctl, b) })
	if err != nil {
		return nil, err
	}
	if n != simCtlSize || ne.Uint32(b[0:]) != simMagic || ne.Uint32(b[8:]) == simCtlError {
		return nil, syscall.EPROTO
	}
	return b[16:], nil
}

// retryEINTR repeats a raw system call that Go's preemption signals
// interrupted.
func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}

// Transmit implements umadmodel.Wire: one struct sim_request to
// ibsim. Addresses are big-endian in their slots; slid 0 makes ibsim use
// our port's LID, and a directed-route SMP goes with dlid and slid 0xffff
// (what libibmad's permissive address gives libumad2sim). The request is
// dropped, as a full wire would drop it, when ibsim does not take it.
func (l *simLink) Transmit(_ *umadmodel.Port, srcQPN uint32, h *abi.MadHdr, mad []byte) {
	var b [simReqSize]byte
	be := binary.BigEndian
	dlid, slid := h.LID, uint16(0)
	if len(mad) > 1 && mad[1] == portClassSMPDR {
		dlid, slid = simPermissive, simPermissive
	}
	be.PutUint16(b[0:], dlid)
	be.PutUint16(b[4:], slid)
	be.PutUint32(b[8:], h.QPN)
	be.PutUint32(b[12:], srcQPN)
	be.PutUint64(b[24:], 256)
	copy(b[32:], mad)
	_ = l.data.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := l.data.Write(b[:]); err != nil && debugOn(1) {
		logDebug("umad: ibsim send failed", slog.String("port", l.name), slog.Any("err", err))
	}
}

// receive reads ibsim's packets until the link closes and hands them to
// the port: answers to the agents waiting for them, requests to the agents
// registered for them, failed sends back to their senders.
func (l *simLink) receive() {
	defer close(l.done)
	var b [simReqSize + 1]byte
	for {
		n, err := l.data.Read(b[:])
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if debugOn(1) {
				logDebug("umad: ibsim receive failed", slog.String("port", l.name), slog.Any("err", err))
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		r, ok := decodeSimRequest(b[:n])
		if !ok {
			continue // not a struct sim_request
		}
		if r.status != 0 {
			l.fab.Fail(l.port, r.mad)
			continue
		}
		l.fab.Deliver(l.port, r.slid, r.sqp, r.dqp, r.mad)
	}
}

// simRequest is a decoded struct sim_request.
type simRequest struct {
	slid     uint16
	sqp, dqp uint32
	status   uint32
	mad      []byte // 256 bytes, inside the buffer decoded
}

// decodeSimRequest decodes one packet from ibsim: exactly 288 bytes, a
// length of a MAD header to a whole MAD. The packet comes back with
// source and destination swapped, so slid and sqp are the sender's. ibsim
// writes the client index into the top 16 bits of a request's TID to
// route the answer back; the agents' TIDs have zero there (their hi_tid
// is below 2¹⁶), so they are cleared in answers and in failed requests
// (not in requests from other clients, whose answers need them).
func decodeSimRequest(b []byte) (simRequest, bool) {
	be := binary.BigEndian
	if len(b) != simReqSize {
		return simRequest{}, false
	}
	if length := be.Uint64(b[24:32]); length < 24 || length > 256 {
		return simRequest{}, false
	}
	r := simRequest{slid: be.Uint16(b[4:6]), sqp: be.Uint32(b[12:16]) & 0xffffff, dqp: be.Uint32(b[8:12]) & 0xffffff,
		status: be.Uint32(b[16:20]), mad: b[32 : 32+256]}
	if r.mad[3]&0x80 != 0 || r.status != 0 {
		r.mad[8], r.mad[9] = 0, 0
	}
	return r, true
}

// close disconnects from ibsim (giving the client slot back), closes both
// sockets and waits for the receiver. Safe to call more than once.
func (l *simLink) close() error {
	l.once.Do(func() {
		if l.data != nil {
			_, _ = l.call(simCtlDisconn, nil)
			l.cerr = l.data.Close()
			<-l.done
		}
		l.ctlMu.Lock()
		if l.ctl >= 0 {
			syscall.Close(l.ctl)
			l.ctl = -1
		}
		l.ctlMu.Unlock()
	})
	return l.cerr
}
