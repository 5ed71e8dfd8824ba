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
//
// ibsim answers every request it handles: with the answer, or with the
// request itself and status 110 when it cannot route it or a port's error
// rate drops it. The wire turns that status into a try that came to
// nothing (the next try goes at once, as the kernel's would after its
// timeout), and holds timeouts off while ibsim is silent: a stopped or
// busy ibsim delays answers, it does not lose them (umadmodel.StallWire).

import (
	"context"
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
	simCtlGetPort  = 3
	simCtlVendor   = 4
	simCtlNodeInfo = 7
	simCtlPortInfo = 8
	simCtlPKeys    = 10
	simCtlSize     = 16 + 64
	simReqSize     = 32 + 256 // x86_64 and arm64 pad before the u64 length
	simInfoSize    = 44       // struct sim_client_info
	simNodeIDLen   = 32
	simPermissive  = 0xffff
	simMaxClients  = 10 // IBSIM_MAX_CLIENTS
)

// simTick is how often a wait for ibsim's control answer looks whether
// ibsim is still there; simQueue is how many packets wait for room in
// ibsim's socket (which holds net.unix.max_dgram_qlen, 10 by default)
// before the wire drops more, as a full wire would.
const (
	simTick = 250 * time.Millisecond
	// simCloseWait bounds Close's wait for ibsim's answer to DISCONNECT:
	// ibsim frees the slot when it reads the message and only warns when
	// the answer finds no socket (ibsim/ibsim.c, sim_ctl), so a stopped
	// ibsim does not hold Close longer.
	simCloseWait = time.Second
	simQueue     = 4096
)

// simLinks numbers the links of this process: ibsim names a client's
// sockets by the id its sim_client_info carries (libumad2sim uses the
// pid), so the links of one process need ids of their own. An id is the
// pid (below 2²², Linux's largest pid_max) with the link's number in the
// 9 bits above: ibsim prints the id as a C int ("%s:in%d",
// sim_ctl_new_client), so bit 31 must stay clear, or the name it
// connects to is not the one we bound and it exits.
var simLinks atomic.Uint32

// simIDs is how many ids a process has: a link takes the next one whose
// names are free.
const simIDs = 1 << 9

func simID(seq uint32) uint32 {
	return uint32(os.Getpid())&(1<<22-1) | (seq%simIDs)<<22
}

// simEpoch is the origin of the links' monotonic clock (simNow), taken at
// the first use, not when a program that links umad starts.
var (
	simEpochOnce sync.Once
	simEpochT    time.Time
)

func simEpoch() time.Time {
	simEpochOnce.Do(func() { simEpochT = time.Now() })
	return simEpochT
}

func simNow() int64 { return int64(time.Since(simEpoch())) }

// The ways a control exchange with ibsim ends without an answer.
var (
	errSimGone    = errors.New("ibsim went away (its control socket is no longer bound)")
	errSimRefused = errors.New("ibsim answered with SIM_CTL_ERROR")
	errSimGaveUp  = errors.New("the port is closing")
)

// simLink is one ibsim client: its sockets and the modelled umad port whose
// wire it is.
type simLink struct {
	name      string
	base      string
	ctl       int // blocking, SO_RCVTIMEO simTick; guarded by ctlMu
	ctlMu     sync.Mutex
	data      *net.UnixConn
	id        uint32 // the client index ibsim gave
	connected bool   // ibsim holds a slot for us (until DISCONNECT)
	fab       *umadmodel.Fabric
	port      *umadmodel.Port
	node      SimNode

	out   chan *[simReqSize]byte // packets for the writer
	stop  chan struct{}          // closed by close: the writer stops
	done  chan struct{}          // closed when the receiver is done
	wdone chan struct{}          // closed when the writer is done

	heard   atomic.Int64 // simNow() of the last word from ibsim
	probing atomic.Bool  // a probe of ibsim's control socket is out
	gone    atomic.Bool  // ibsim's control socket went away
	closing atomic.Bool

	started bool // receive and write run
	once    sync.Once
	cerr    error
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
// CA returns the node ibsim attached the port at, PortNum its port's
// number (PortInfo's LocalPortNum; libumad2sim names the device
// "ibsim0").
//
// A request ibsim cannot deliver (an unassigned LID, a directed route
// through a port that is down, a port whose error rate drops it) comes
// back from ibsim at once: each such try counts as one that timed out,
// the next goes at once, and after the last the send comes back timed
// out (Status ETIMEDOUT). While ibsim is silent (stopped, or busy with
// other clients) timeouts wait: ibsim answers every request it handles.
//
// Like libumad2sim (umad2sim/sim_client.c), OpenSimPort waits for
// ibsim's answer to its CONNECT as long as ibsim is there;
// OpenSimPortContext stops waiting when its context is done. ibsim 0.10
// connects to the client's data socket while it handles a CONNECT and
// exits when that socket is gone (ibsim/ibsim.c, sim_ctl_new_client), so
// a CONNECT given up is not left behind: a goroutine keeps both sockets
// until ibsim answers, then disconnects. Close sends DISCONNECT and waits
// for the answer for at most a second: ibsim frees the slot when it reads
// the message, whenever that is. ibsim has at most 10 clients; Close
// gives the slot back.
//
// Errors match ErrNoDevice when ibsim does not listen on sock or goes
// away before it answers, and ErrOpenFailed when it refuses the client
// (no such node, no free slot).
func OpenSimPort(sock, node string) (*Port, error) {
	return openSimPort(context.Background(), sock, node, false)
}

// OpenSimPortContext is OpenSimPort that gives up waiting for ibsim's
// answer to its CONNECT when ctx is done, with an error that matches
// ctx.Err(). The answer is still awaited, in the background, and the
// slot ibsim gives is handed back at once.
func OpenSimPortContext(ctx context.Context, sock, node string) (*Port, error) {
	return openSimPort(ctx, sock, node, false)
}

// OpenSimPortSM is OpenSimPort for a client that answers requests: it
// attaches as its node's SM client (struct sim_client_info's issm, which
// OpenSM's libumad2sim client has), so ibsim hands it the requests to
// QP0 and QP1 of its port that no simulated agent of ibsim answers —
// vendor-class requests such as ibping's, which ibsim gives no other
// client — as the kernel gives them to a port's registered agents
// (libibumad's umad_register_oui for a server). The port's CapabilityMask
// is left as it is (IsSM stays clear: it is not libumad2sim's
// SIM_CTL_SET_ISSM). ibsim refuses it, ErrOpenFailed, on a node that
// has an SM client already (OpenSM's node).
func OpenSimPortSM(sock, node string) (*Port, error) {
	return openSimPort(context.Background(), sock, node, true)
}

func openSimPort(ctx context.Context, sock, node string, sm bool) (*Port, error) {
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
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return fail(detail(ErrOpenFailed, "not connecting to ibsim", err))
	}
	l, err := dialSim(ctx, sock, node, name, sm)
	if err != nil {
		return fail(err)
	}
	_, fd, err := l.port.Open()
	if err != nil {
		l.close()
		return fail(err)
	}
	p := &Port{fd: fd, ca: l.node.NodeID, num: l.port.Config().Port, dev: l.port.Config().Device, name: name,
		linkLayer: rdma.LinkLayerInfiniBand, sim: l}
	p.hdr.Store(abi.MadHdrSizeOld)
	if err := fd.Ioctl(abi.IB_USER_MAD_ENABLE_PKEY, nil); err == nil {
		p.hdr.Store(abi.MadHdrSize)
	}
	l.start()
	if debugOn(1) {
		logDebug("umad: opened ibsim port", slog.String("port", name), slog.Int("client", int(l.id)),
			slog.Int("lid", int(l.port.Config().LID)))
	}
	return p, nil
}

func dialSim(ctx context.Context, base, node, name string, sm bool) (*simLink, error) {
	l := &simLink{name: name, base: base, ctl: -1, done: make(chan struct{}), wdone: make(chan struct{}),
		stop: make(chan struct{}), out: make(chan *[simReqSize]byte, simQueue)}
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
	tv := syscall.NsecToTimeval(int64(simTick))
	if err := syscall.SetsockoptTimeval(ctl, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return nil, err
	}
	// The next id whose control socket name is free (one of a link
	// still open is taken).
	var id uint32
	for try := 0; ; try++ {
		id = simID(simLinks.Add(1))
		err := syscall.Bind(ctl, simName(base, fmt.Sprintf("ctl%d", int32(id))))
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || try == simIDs {
			return nil, detail(ErrOpenFailed, "binding the control socket", err)
		}
	}
	if err := syscall.Connect(ctl, simName(base, "ctl")); err != nil {
		return nil, detail(ErrNoDevice, fmt.Sprintf("ibsim does not listen on @%s:ctl (is ibsim running with IBSIM_SOCKNAME=%s?)", base, base), err)
	}
	// The data socket is bound before CONNECT: ibsim connects its output
	// socket to BASE:in<id> while it handles the CONNECT, and dies when
	// that fails; so it stays bound until ibsim has answered.
	dfd, err := simSocket()
	if err != nil {
		return nil, err
	}
	defer func() {
		if dfd >= 0 {
			syscall.Close(dfd)
		}
	}()
	if err := syscall.Bind(dfd, simName(base, fmt.Sprintf("in%d", int32(id)))); err != nil {
		return nil, detail(ErrOpenFailed, "binding the data socket", err)
	}
	info := make([]byte, simInfoSize)
	binary.NativeEndian.PutUint32(info[0:], id)
	if sm {
		binary.NativeEndian.PutUint32(info[8:], 1) // issm
	}
	copy(info[12:12+simNodeIDLen-1], node)
	r, err := l.connect(ctx, info)
	switch {
	case errors.Is(err, errSimGaveUp):
		// A goroutine owns both sockets now (abandon).
		go l.abandon(dfd)
		ok, dfd = true, -1
		return nil, detail(ErrOpenFailed, "gave up waiting for ibsim's answer to the CONNECT (is ibsim stopped or busy?)", ctx.Err())
	case errors.Is(err, errSimRefused):
		why := fmt.Sprintf("no node %q in its fabric (a node id or description), or all %d client slots taken", node, simMaxClients)
		if node == "" {
			why = fmt.Sprintf("all %d client slots taken", simMaxClients)
		}
		if sm {
			why += ", or the node has an SM client already"
		}
		return nil, detail(ErrOpenFailed, "ibsim refused the client: "+why+
			" (its console lists the clients with Attached; X <n> frees slot n)", nil)
	case errors.Is(err, errSimGone):
		return nil, detail(ErrNoDevice, fmt.Sprintf("ibsim went away before it answered the CONNECT: nothing listens on @%s:ctl any more", base), syscall.ECONNREFUSED)
	case err != nil:
		return nil, detail(ErrOpenFailed, "connecting to ibsim", err)
	}
	l.connected = true
	l.id = binary.NativeEndian.Uint32(r[0:])
	l.node.NodeID = strings.TrimRight(string(r[12:12+simNodeIDLen]), "\x00")
	if err := syscall.Connect(dfd, simName(base, fmt.Sprintf("out%d", l.id))); err != nil {
		return nil, detail(ErrOpenFailed, "connecting the data socket", err)
	}
	if err := syscall.SetNonblock(dfd, true); err != nil {
		return nil, err
	}
	file := os.NewFile(uintptr(dfd), "ibsim-data")
	dfd = -1
	c, err := net.FileConn(file)
	file.Close()
	if err != nil {
		return nil, err
	}
	l.data = c.(*net.UnixConn)
	// What libumad2sim asks (sim_client_init): the vendor, NodeInfo,
	// our port's PortInfo (port 0 of the request is the client's port)
	// and P_Keys.
	if err := l.readNode(); err != nil {
		return nil, detail(ErrOpenFailed, "asking ibsim about the node", err)
	}
	lid := binary.BigEndian.Uint16(l.node.PortInfo[16:18])
	l.fab = umadmodel.NewFabric()
	l.port = l.fab.AddPort(umadmodel.PortConfig{CA: l.node.NodeID, Port: int(l.node.PortInfo[28]), LID: lid,
		Device: name, LinkLayer: umadmodel.InfiniBand})
	l.fab.SetWire(l)
	ok = true
	return l, nil
}

// connect sends CONNECT and waits for ibsim's answer until ctx is done
// (errSimGaveUp; the answer is then still to come).
func (l *simLink) connect(ctx context.Context, info []byte) ([]byte, error) {
	l.ctlMu.Lock()
	defer l.ctlMu.Unlock()
	if err := l.send(simCtlConnect, info); err != nil {
		return nil, err
	}
	if ctx.Done() == nil {
		return l.await(simCtlConnect, nil)
	}
	return l.await(simCtlConnect, func() bool { return ctx.Err() != nil })
}

// abandon finishes a CONNECT that OpenSimPortContext gave up on: it waits
// for ibsim's answer with the data socket dfd still bound (ibsim connects
// to it while it handles the CONNECT), gives back the slot ibsim gave,
// and closes both sockets. It ends when ibsim answers or goes away.
func (l *simLink) abandon(dfd int) {
	defer syscall.Close(dfd)
	l.ctlMu.Lock()
	r, err := l.await(simCtlConnect, nil)
	l.ctlMu.Unlock()
	if err == nil {
		l.connected = true
		l.id = binary.NativeEndian.Uint32(r[0:])
	}
	l.close()
}

// readNode asks ibsim what libumad2sim asks about the client's node.
func (l *simLink) readNode() error {
	n := &l.node
	r, err := l.call(simCtlVendor, nil)
	if err != nil {
		return err
	}
	// struct sim_vendor: three u32, then a u64 at offset 16.
	ne := binary.NativeEndian
	n.VendorID, n.VendorPartID, n.HWVersion = ne.Uint32(r[0:]), ne.Uint32(r[4:]), ne.Uint32(r[8:])
	n.FWVersion = ne.Uint64(r[16:])
	if r, err = l.call(simCtlNodeInfo, nil); err != nil {
		return err
	}
	copy(n.NodeInfo[:], r)
	if r, err = l.call(simCtlPortInfo, make([]byte, 64)); err != nil {
		return err
	}
	copy(n.PortInfo[:], r)
	if r, err = l.call(simCtlPKeys, nil); err != nil {
		return err
	}
	for i := range n.PKeys {
		n.PKeys[i] = binary.BigEndian.Uint16(r[2*i:]) // ibsim keeps them in network order
	}
	return nil
}

// SimNode is what ibsim says about the node a port of its fabric is
// attached at: its answers to SIM_CTL_GET_VENDOR, GET_NODEINFO,
// GET_PORTINFO and GET_PKEYS (ibsim/ibsim.c), from which libumad2sim
// builds the one device it shows its clients, "ibsim0"
// (umad2sim/umad2sim.c, dev_sysfs_create).
type SimNode struct {
	// NodeID is ibsim's id of the node.
	NodeID string
	// The vendor: VendorID, VendorPartID and HWVersion come from
	// NodeInfo; ibsim gives FWVersion 1.
	VendorID, VendorPartID, HWVersion uint32
	FWVersion                         uint64
	// NodeInfo and PortInfo are the SMP attributes (the port the client
	// is attached at).
	NodeInfo, PortInfo [64]byte
	// PKeys are the first 32 entries of the port's P_Key table.
	PKeys [32]uint16
}

// SimNode returns what ibsim said about the node the port is attached at
// when OpenSimPort opened it. On a kernel port it returns an error
// matching ErrNotSupported.
func (p *Port) SimNode() (SimNode, error) {
	if p == nil {
		return SimNode{}, errNil("Port.SimNode")
	}
	if p.sim == nil {
		return SimNode{}, errs.New("sim node", p.name, detail(ErrNotSupported, "not a port of an ibsim fabric", nil))
	}
	return p.sim.node, nil
}

func simSocket() (int, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, detail(ErrOpenFailed, "socket(AF_UNIX, SOCK_DGRAM)", err)
	}
	return fd, nil
}

// call sends one struct sim_ctl and returns the data of ibsim's answer.
// ibsim answers every control message it handles, in turn; like
// libumad2sim (sim_client.c, sim_ctl) call waits for the answer as long
// as ibsim is there (a stopped or busy ibsim delays it): it fails when
// ibsim goes away (errSimGone) or refuses (errSimRefused).
func (l *simLink) call(typ uint32, data []byte) ([]byte, error) {
	l.ctlMu.Lock()
	defer l.ctlMu.Unlock()
	if err := l.send(typ, data); err != nil {
		return nil, err
	}
	return l.await(typ, nil)
}

// send writes one struct sim_ctl. Caller holds ctlMu.
func (l *simLink) send(typ uint32, data []byte) error {
	if l.ctl < 0 {
		return os.ErrClosed
	}
	b := make([]byte, simCtlSize)
	ne := binary.NativeEndian // struct sim_ctl is in host order
	ne.PutUint32(b[0:], simMagic)
	ne.PutUint32(b[4:], l.id)
	ne.PutUint32(b[8:], typ)
	ne.PutUint32(b[12:], uint32(len(data)))
	copy(b[16:], data)
	_, err := retryEINTR(func() (int, error) { return syscall.Write(l.ctl, b) })
	if errors.Is(err, syscall.ECONNREFUSED) {
		l.gone.Store(true)
		return errSimGone
	}
	return err
}

// await reads control answers until the one to a message of type typ (or
// an error answer) comes, and returns its data; answers of other types
// (to a probe that gave up) are skipped. Every simTick without one it
// looks whether ibsim is still there, and asks stop, when not nil,
// whether to give up (errSimGaveUp). Caller holds ctlMu.
func (l *simLink) await(typ uint32, stop func() bool) ([]byte, error) {
	b := make([]byte, simCtlSize)
	ne := binary.NativeEndian
	start := time.Now()
	logged := false
	for {
		n, err := retryEINTR(func() (int, error) { return syscall.Read(l.ctl, b) })
		if errors.Is(err, syscall.EAGAIN) {
			if stop != nil && stop() {
				return nil, errSimGaveUp
			}
			if !simListening(l.base) {
				l.gone.Store(true)
				return nil, errSimGone
			}
			if !logged && time.Since(start) >= time.Second && debugOn(1) {
				logDebug("umad: waiting for ibsim's answer (is ibsim stopped or busy?)", slog.String("port", l.name),
					slog.Int("type", int(typ)))
				logged = true
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		l.heard.Store(simNow())
		if n != simCtlSize || ne.Uint32(b[0:]) != simMagic {
			return nil, syscall.EPROTO
		}
		switch ne.Uint32(b[8:]) {
		case typ:
			return b[16:], nil
		case simCtlError:
			return nil, errSimRefused
		}
	}
}

// simListening reports whether something is bound at ibsim's control
// socket: a connect from a fresh socket, which sends nothing, fails with
// ECONNREFUSED once ibsim is gone. When it cannot tell it says yes.
func simListening(base string) bool {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return true
	}
	defer syscall.Close(fd)
	err = syscall.Connect(fd, simName(base, "ctl"))
	return !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT)
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

// simBufs are the packets' buffers.
var simBufs = sync.Pool{New: func() any { return new([simReqSize]byte) }}

// Transmit implements umadmodel.Wire: one struct sim_request to ibsim,
// queued for the writer (Transmit runs under the fabric's lock and must
// not wait for room in ibsim's socket). Addresses are big-endian in their
// slots; slid 0 makes ibsim use our port's LID, and a directed-route SMP
// goes with dlid and slid 0xffff (what libibmad's permissive address gives
// libumad2sim). With simQueue packets already waiting the packet is
// dropped, as a full wire would drop it.
func (l *simLink) Transmit(_ *umadmodel.Port, srcQPN uint32, h *abi.MadHdr, mad []byte) {
	b := simBufs.Get().(*[simReqSize]byte)
	clear(b[:])
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
	select {
	case l.out <- b:
	default:
		simBufs.Put(b)
		if debugOn(1) {
			logDebug("umad: ibsim send dropped: the queue to ibsim is full", slog.String("port", l.name))
		}
	}
}

// Stalled implements umadmodel.StallWire: ibsim has said nothing since
// since, and is still there. The first time it asks ibsim's control
// socket (SIM_CTL_GET_PORT, which a running ibsim answers at once): if
// the answer comes, ibsim runs and a try that goes unanswered is lost.
func (l *simLink) Stalled(_ *umadmodel.Port, since time.Time) bool {
	if l.heard.Load() >= int64(since.Sub(simEpoch())) || l.gone.Load() {
		return false
	}
	if l.probing.CompareAndSwap(false, true) {
		go l.probe()
	}
	return true
}

// probe asks ibsim's control socket for our port (SIM_CTL_GET_PORT) and
// waits for the answer, which await notes as a word from ibsim; it gives
// up when the link closes or ibsim goes away.
func (l *simLink) probe() {
	defer l.probing.Store(false)
	l.ctlMu.Lock()
	defer l.ctlMu.Unlock()
	if l.closing.Load() || l.send(simCtlGetPort, nil) != nil {
		return
	}
	_, _ = l.await(simCtlGetPort, l.closing.Load)
}

// start starts the receiver and the writer.
func (l *simLink) start() {
	l.started = true
	go l.receive()
	go l.write()
}

// write hands the queued packets to ibsim, in order, waiting for room in
// its socket.
func (l *simLink) write() {
	defer close(l.wdone)
	for {
		select {
		case <-l.stop:
			return
		case b := <-l.out:
			_, err := l.data.Write(b[:])
			simBufs.Put(b)
			if err != nil {
				if errors.Is(err, syscall.ECONNREFUSED) {
					l.gone.Store(true)
				}
				if debugOn(1) && !errors.Is(err, net.ErrClosed) {
					logDebug("umad: ibsim send failed", slog.String("port", l.name), slog.Any("err", err))
				}
			}
		}
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
		l.heard.Store(simNow())
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
	mad      []byte // the packet's length of it, inside the buffer decoded
}

// decodeSimRequest decodes one packet from ibsim: exactly 288 bytes, a
// length of a MAD header to a whole MAD. The MAD keeps that length, as
// libumad2sim's read gives it (umad2sim.c, umad2sim_read: the umad's
// length is the packet's): ibsim's own answers are whole MADs, but what
// another client wrote through libumad2sim carries the length it wrote,
// cut to 256 bytes (umad2sim_write) — OpenSM's SA responses among them,
// which under the simulator are their first 256 bytes, RMPP or not. The packet comes back with
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
	length := be.Uint64(b[24:32])
	if length < 24 || length > 256 {
		return simRequest{}, false
	}
	r := simRequest{slid: be.Uint16(b[4:6]), sqp: be.Uint32(b[12:16]) & 0xffffff, dqp: be.Uint32(b[8:12]) & 0xffffff,
		status: be.Uint32(b[16:20]), mad: b[32 : 32+length]}
	if r.mad[3]&0x80 != 0 || r.status != 0 {
		r.mad[8], r.mad[9] = 0, 0
	}
	return r, true
}

// close gives ibsim's slot back (DISCONNECT, whose answer it waits for
// at most simCloseWait: ibsim frees the slot when it reads the message),
// closes both sockets and waits for the receiver and the writer; packets
// still queued for ibsim are dropped. Safe to call more than once.
func (l *simLink) close() error {
	l.once.Do(func() {
		l.closing.Store(true)
		close(l.stop)
		if l.connected {
			deadline := time.Now().Add(simCloseWait)
			l.ctlMu.Lock()
			if l.send(simCtlDisconn, nil) == nil {
				_, _ = l.await(simCtlDisconn, func() bool { return time.Now().After(deadline) })
			}
			l.ctlMu.Unlock()
		}
		if l.data != nil {
			l.cerr = l.data.Close()
			if l.started {
				<-l.done
				<-l.wdone
			}
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
