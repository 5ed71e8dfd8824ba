package umadmodel

// The umad device: /dev/infiniband/umadN as Linux 6.12's
// drivers/infiniband/core/user_mad.c and the MAD layer under it
// (drivers/infiniband/core/mad.c) present it to userspace. Fabric's
// documentation lists the rules it enforces.

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// Kernel limits and MAD constants the model applies (include/rdma/ib_mad.h,
// drivers/infiniband/core/user_mad.c, mad_priv.h).
const (
	umadMaxAgents   = 32     // IB_UMAD_MAX_AGENTS
	umadMaxRecvList = 200000 // MAX_UMAD_RECV_LIST_SIZE
	umadMADSize     = 256    // sizeof(struct ib_mad)
	umadMADHdr      = 24     // IB_MGMT_MAD_HDR
	umadRMPPHdr     = 36     // IB_MGMT_RMPP_HDR
	umadMaxVersion  = 0x83   // MAX_MGMT_VERSION
	umadMaxClass    = 0x50   // MAX_MGMT_CLASS
	umadRMPPVersion = 1      // IB_MGMT_RMPP_VERSION

	umadClassSubnLID  = 0x01 // IB_MGMT_CLASS_SUBN_LID_ROUTED
	umadClassSubnAdm  = 0x03 // IB_MGMT_CLASS_SUBN_ADM
	umadClassBM       = 0x05 // IB_MGMT_CLASS_BM
	umadClassDevMgt   = 0x06 // IB_MGMT_CLASS_DEVICE_MGMT
	umadClassDevAdm   = 0x10 // IB_MGMT_CLASS_DEVICE_ADM
	umadClassBIS      = 0x12 // IB_MGMT_CLASS_BIS
	umadClassVendor2  = 0x30 // IB_MGMT_CLASS_VENDOR_RANGE2_START
	umadClassVendor2E = 0x4f // IB_MGMT_CLASS_VENDOR_RANGE2_END
	umadClassSubnDR   = 0x81 // IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE

	umadMethodGet         = 0x01 // IB_MGMT_METHOD_GET
	umadMethodSet         = 0x02 // IB_MGMT_METHOD_SET
	umadMethodGetResp     = 0x81 // IB_MGMT_METHOD_GET_RESP
	umadMethodResp        = 0x80 // IB_MGMT_METHOD_RESP
	umadMethodTrapRepress = 0x07 // IB_MGMT_METHOD_TRAP_REPRESS

	umadStatusUnsupported = 0x000c // IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB
	umadSMPDirection      = 0x8000 // IB_SMP_DIRECTION
	umadRMPPFlagActive    = 0x01   // IB_MGMT_RMPP_FLAG_ACTIVE

	// msecs_to_jiffies turns any timeout_ms that is negative as an int
	// into MAX_JIFFY_OFFSET: the request waits for its response for ever.
	umadForever = 1 << 31
)

// Link layers of a port.
const (
	InfiniBand = "InfiniBand"
	Ethernet   = "Ethernet"
)

// PortConfig describes one port of a modelled umad device.
type PortConfig struct {
	// CA and Port name the RDMA device and port number ("mlx5_0", 1).
	CA   string
	Port int
	// Device is the node name the descriptor reports, for example
	// "/dev/infiniband/umad0"; empty means a made-up name.
	Device string
	// LinkLayer is InfiniBand (the default) or Ethernet. An
	// InfiniBand port has QP0 (the SMI) and QP1; an Ethernet (RoCE) port
	// has only QP1, and every MAD it sends needs a GRH, as with rxe.
	LinkLayer string
	// LID and GID are the port's addresses: a MAD without a GRH goes to
	// the port of the fabric whose LID is the header's lid, one with a
	// GRH to the port whose GID is the header's gid.
	LID uint16
	GID [16]byte
	// NoGSI removes QP1 (a port without CM capability): GSI agents fail
	// EPROTONOSUPPORT.
	NoGSI bool
	// NoRegisterAgent2 models a kernel older than 3.16, which answers
	// IB_USER_MAD_REGISTER_AGENT2 with ENOTTY.
	NoRegisterAgent2 bool
}

// Fabric is a set of modelled umad ports wired together: a MAD one of
// them sends arrives at the port its header addresses (by LID, or by GID
// when it carries a GRH), where the MAD layer hands it to the agent
// registered for its class, version and method; responses find their way
// back to the requesting agent through the upper 32 bits of their TID.
// A port can address itself. It is safe for concurrent use.
//
// Each open file (File, behind a real *sys.FD) enforces the rules of
// Linux 6.12's user_mad.c and mad.c, in the kernel's order, with its
// errnos:
//
// ioctl: an unknown request: ENOTTY. IB_USER_MAD_ENABLE_PKEY after an
// agent was ever registered on the file: EINVAL. Registration
// (REGISTER_AGENT and REGISTER_AGENT2): device removed: EPIPE; qpn other
// than 0 or 1: EINVAL; (AGENT2) flags outside IB_USER_MAD_USER_RMPP:
// EINVAL, with the supported flags written back; 32 agents on the file:
// ENOMEM; (AGENT2, with a class) OUI wider than 24 bits: EINVAL;
// rmpp_version other than 0 or 1: EINVAL; with a class (all EINVAL): class
// version ≥ 0x83, class ≥ 0x50 other than 0x81, vendor range 2
// (0x30–0x4F) with OUI 0, rmpp_version on a class without RMPP, SMP
// classes (0x01, 0x81) on QP1 or other classes on QP0; without a class
// (send-only agent) the USER_RMPP flag: EINVAL; QP0 on a port without SMI
// (RoCE) or QP1 on a port without GSI: EPROTONOSUPPORT; a (version,
// class, OUI, method) another agent of the port holds: EINVAL. The first
// successful AGENT2 switches the file to the 64-byte header.
// Unregistration: id ≥ 32 or no such agent: EINVAL.
//
// write: count < header + 36: EINVAL; id ≥ 32: EINVAL; no agent in that
// slot (or the device is gone): EIO; on a RoCE port no GRH: EINVAL (the
// address handle needs one), a GID no port of the fabric has: ETIMEDOUT
// (its neighbour does not resolve); shorter than the class's data offset:
// EINVAL; longer than 256 bytes without kernel RMPP: EINVAL; the upper 32
// bits of a request's TID are replaced by the agent's; a request whose TID
// and class match an outstanding request on the file, or a response whose
// TID, class and destination match an outstanding response: EINVAL. With
// timeout_ms > 0 the request is resent `retries` times, each after
// timeout_ms, and then comes back on read as a header-only record (the
// header as written, status ETIMEDOUT, the first 24 bytes of the MAD);
// timeout_ms ≥ 2³¹ waits for ever. With a Wire, a try the network reports
// undelivered (Fail) counts as one whose timeout passed, and a StallWire
// that has been silent since a try went out holds that try's timeout off.
//
// read: count < header: EINVAL; device gone: EIO; nothing queued and
// non-blocking: EAGAIN; a buffer too small for the first (or only) 256
// bytes: EINVAL, nothing copied, the record stays queued; an RMPP message
// larger than the buffer: ENOSPC after copying the header (whose length
// holds the full size) and the first segment, the record stays queued.
//
// The wire: MADs are padded to 256 bytes; the destination's MAD layer
// drops MADs with a base version other than 1, SMPs not on QP0 and GSI
// MADs on QP0; it hands a response to the agent whose hi_tid is in the TID
// only while that agent waits for it (otherwise drops it), and a request
// to the agent registered for it; a Get or Set nobody registered for is
// answered by the MAD layer with a GetResp of status 0x000C (unsupported
// method/attribute), as on a device without process_mad such as rxe.
// Receive queues hold at most 200000 records.
type Fabric struct {
	mu      sync.Mutex
	ports   []*Port
	byTID   map[uint32]*umadAgent // hi_tid → agent (ib_mad_clients)
	lastTID uint32
	wire    Wire // nil: MADs go between the fabric's ports
	recFree []*umadRecord
	sndFree []*umadSend
}

// NewFabric returns an empty fabric; add ports with AddPort.
func NewFabric() *Fabric {
	return &Fabric{byTID: map[uint32]*umadAgent{}}
}

// AddPort adds a port to the fabric.
func (fab *Fabric) AddPort(cfg PortConfig) *Port {
	if cfg.LinkLayer == "" {
		cfg.LinkLayer = InfiniBand
	}
	if cfg.Device == "" {
		cfg.Device = fmt.Sprintf("/dev/infiniband/umad-fake-%s-%d", cfg.CA, cfg.Port)
	}
	p := &Port{fab: fab, cfg: cfg, files: map[*File]struct{}{}, claims: map[umadClaim]*umadAgent{}}
	fab.mu.Lock()
	fab.ports = append(fab.ports, p)
	fab.mu.Unlock()
	return p
}

// Port is one port of a modelled umad device, the kernel side of
// /dev/infiniband/umadN.
type Port struct {
	fab     *Fabric
	cfg     PortConfig
	files   map[*File]struct{}
	claims  map[umadClaim]*umadAgent // the port's method tables
	removed bool
	sent    int // MADs put on the wire, resends included
}

// umadClaim is one entry of the port's method tables: which agent
// receives requests of (class version, class, OUI, method).
type umadClaim struct {
	version, class uint8
	oui            uint32 // vendor range 2 only
	method         uint8
}

// Config returns the port's configuration.
func (p *Port) Config() PortConfig { return p.cfg }

func (p *Port) hasSMI() bool { return p.cfg.LinkLayer == InfiniBand }

// Sent returns how many MADs the port has put on the wire, resends of
// timed-out requests and responses the MAD layer generated included.
func (p *Port) Sent() int {
	p.fab.mu.Lock()
	defer p.fab.mu.Unlock()
	return p.sent
}

// OpenFiles returns how many files of the port are open.
func (p *Port) OpenFiles() int {
	p.fab.mu.Lock()
	defer p.fab.mu.Unlock()
	return len(p.files)
}

// Open opens the port, like open("/dev/infiniband/umadN", O_RDWR |
// O_NONBLOCK). The descriptor goes through the real syscall seam; the
// File is the kernel's side of it, for tests that look inside. Opening
// a removed port fails ENXIO.
func (p *Port) Open() (*File, *sys.FD, error) {
	fab := p.fab
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if p.removed {
		return nil, nil, &os.PathError{Op: "open", Path: p.cfg.Device, Err: syscall.ENXIO}
	}
	f := &File{port: p, done: make(chan struct{})}
	p.files[f] = struct{}{}
	return f, sys.NewFake(p.cfg.Device, f), nil
}

// Remove simulates hot unplug of the device: every open file's agents die
// (reads fail EIO, writes EIO, registrations EPIPE, poll reports an
// error) and later opens fail ENXIO.
func (p *Port) Remove() {
	fab := p.fab
	fab.mu.Lock()
	defer fab.mu.Unlock()
	p.removed = true
	for f := range p.files {
		f.kill()
		f.signal()
	}
}

// File is one open file of a modelled umad port (struct ib_umad_file). It
// implements sys.Backend.
type File struct {
	port *Port

	// Guarded by port.fab.mu.
	agents      [umadMaxAgents]*umadAgent
	usePKey     bool // use_pkey_index: the 64-byte header
	alreadyUsed bool // an agent was registered once
	dead        bool // agents_dead
	closed      bool
	recv        umadQueue
	sends       []*umadSend // send_list

	// The descriptor's read deadline, as sys.FD last passed it to
	// DeadlineChanged; once dlKnown, it overrides the deadline Read is
	// called with (which may be older). dlGen counts the changes.
	dl      time.Time
	dlKnown bool
	dlGen   uint64
	// The Reads and WaitReadables blocked now, each on its own channel
	// (so that one event wakes them all), and spare channels.
	waiters  []chan struct{}
	chanFree []chan struct{}

	done chan struct{} // closed by Close
}

// umadAgent is a registered MAD agent (struct ib_mad_agent plus its
// registration request).
type umadAgent struct {
	file    *File
	id      uint32
	hiTID   uint32
	qpn     uint32
	class   uint8 // 0: no registration request (send-only agent)
	version uint8
	oui     uint32
	methods abi.MethodMask
	rmpp    uint8
	flags   uint32
}

// kernelRMPP is ib_mad_kernel_rmpp_agent.
func (a *umadAgent) kernelRMPP() bool {
	return a.rmpp != 0 && a.flags&abi.IB_USER_MAD_USER_RMPP == 0
}

// HeaderSize returns the size of the umad header the file uses: 56 until
// IB_USER_MAD_ENABLE_PKEY or IB_USER_MAD_REGISTER_AGENT2, then 64.
func (f *File) HeaderSize() int {
	f.port.fab.mu.Lock()
	defer f.port.fab.mu.Unlock()
	return f.hdrSize()
}

func (f *File) hdrSize() int {
	if f.usePKey {
		return abi.MadHdrSize
	}
	return abi.MadHdrSizeOld
}

// Queued returns how many records wait to be read.
func (f *File) Queued() int {
	f.port.fab.mu.Lock()
	defer f.port.fab.mu.Unlock()
	return f.recv.n
}

// Outstanding returns how many sends are still in flight on the file
// (struct ib_umad_file's send_list): requests waiting for a response.
func (f *File) Outstanding() int {
	f.port.fab.mu.Lock()
	defer f.port.fab.mu.Unlock()
	return len(f.sends)
}

// signal wakes every blocked Read and WaitReadable, which then look
// again at the file. Caller holds fab.mu.
func (f *File) signal() {
	for _, ch := range f.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// addWaiter registers a blocked caller and returns the channel signal
// wakes it on. Caller holds fab.mu.
func (f *File) addWaiter() chan struct{} {
	var ch chan struct{}
	if n := len(f.chanFree); n > 0 {
		ch = f.chanFree[n-1]
		f.chanFree = f.chanFree[:n-1]
	} else {
		ch = make(chan struct{}, 1)
	}
	f.waiters = append(f.waiters, ch)
	return ch
}

// removeWaiter undoes addWaiter. Caller holds fab.mu.
func (f *File) removeWaiter(ch chan struct{}) {
	for i, x := range f.waiters {
		if x == ch {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-ch:
	default:
	}
	f.chanFree = append(f.chanFree, ch)
}

// Ioctl implements sys.Backend: the four umad ioctls of ib_umad_ioctl.
// Anything else fails ENOTTY (the kernel's ENOIOCTLCMD).
func (f *File) Ioctl(req uint, arg unsafe.Pointer) error {
	fab := f.port.fab
	switch req {
	case abi.IB_USER_MAD_REGISTER_AGENT:
		if arg == nil {
			return syscall.EFAULT
		}
		b := unsafe.Slice((*byte)(arg), abi.RegReqSize)
		var r abi.RegReq
		_ = r.Decode(b)
		fab.mu.Lock()
		defer fab.mu.Unlock()
		id, err := f.register(uint32(r.QPN), r.MgmtClass, r.MgmtClassVersion, r.OUI, r.MethodMask, r.RMPPVersion, 0, false)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(b[0:4], id)
		return nil
	case abi.IB_USER_MAD_REGISTER_AGENT2:
		if f.port.cfg.NoRegisterAgent2 {
			return syscall.ENOTTY
		}
		if arg == nil {
			return syscall.EFAULT
		}
		b := unsafe.Slice((*byte)(arg), abi.RegReq2Size)
		var r abi.RegReq2
		_ = r.Decode(b)
		fab.mu.Lock()
		defer fab.mu.Unlock()
		if r.Flags&^abi.IB_USER_MAD_REG_FLAGS_CAP != 0 && !f.port.removed && (r.QPN == 0 || r.QPN == 1) {
			// The kernel writes the flags it supports back.
			binary.LittleEndian.PutUint32(b[12:16], abi.IB_USER_MAD_REG_FLAGS_CAP)
		}
		id, err := f.register(r.QPN, r.MgmtClass, r.MgmtClassVersion, r.OUI, r.MethodMask, r.RMPPVersion, r.Flags, true)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(b[0:4], id)
		return nil
	case abi.IB_USER_MAD_UNREGISTER_AGENT:
		if arg == nil {
			return syscall.EFAULT
		}
		id := *(*uint32)(arg)
		if id >= umadMaxAgents {
			return syscall.EINVAL
		}
		fab.mu.Lock()
		defer fab.mu.Unlock()
		a := f.agent(id)
		if a == nil {
			return syscall.EINVAL
		}
		f.agents[id] = nil
		fab.unregister(a)
		return nil
	case abi.IB_USER_MAD_ENABLE_PKEY:
		fab.mu.Lock()
		defer fab.mu.Unlock()
		if f.alreadyUsed {
			return syscall.EINVAL
		}
		f.usePKey = true
		return nil
	}
	return syscall.ENOTTY
}

// agent is __get_agent. Caller holds fab.mu.
func (f *File) agent(id uint32) *umadAgent {
	if f.dead || id >= umadMaxAgents {
		return nil
	}
	return f.agents[id]
}

// register is ib_umad_reg_agent / ib_umad_reg_agent2 followed by
// ib_register_mad_agent, with their checks in the kernel's order. Caller
// holds fab.mu.
func (f *File) register(qpn uint32, class, version uint8, oui uint32, methods abi.MethodMask, rmpp uint8, flags uint32, v2 bool) (uint32, error) {
	p := f.port
	if p.removed {
		return 0, syscall.EPIPE
	}
	if qpn != 0 && qpn != 1 {
		return 0, syscall.EINVAL
	}
	if v2 && flags&^abi.IB_USER_MAD_REG_FLAGS_CAP != 0 {
		return 0, syscall.EINVAL
	}
	id := uint32(0)
	for ; id < umadMaxAgents; id++ {
		if f.agent(id) == nil {
			break
		}
	}
	if id == umadMaxAgents {
		return 0, syscall.ENOMEM
	}
	if class != 0 && v2 && oui&0xff000000 != 0 {
		return 0, syscall.EINVAL
	}

	// ib_register_mad_agent.
	if rmpp != 0 && rmpp != umadRMPPVersion {
		return 0, syscall.EINVAL
	}
	if class != 0 {
		switch {
		case version >= umadMaxVersion:
			return 0, syscall.EINVAL
		case class >= umadMaxClass && class != umadClassSubnDR:
			return 0, syscall.EINVAL
		case umadIsVendor2(class) && oui == 0:
			return 0, syscall.EINVAL
		}
		if !umadIsRMPPClass(class) && rmpp != 0 {
			return 0, syscall.EINVAL
		}
		smp := umadIsSMP(class)
		if (qpn == 0) != smp {
			return 0, syscall.EINVAL
		}
	} else if flags&abi.IB_USER_MAD_USER_RMPP != 0 {
		return 0, syscall.EINVAL
	}
	// "Verify the QP requested is supported. For example, Ethernet
	// devices will not have QP0."
	if (qpn == 0 && !p.hasSMI()) || (qpn == 1 && p.cfg.NoGSI) {
		return 0, syscall.EPROTONOSUPPORT
	}
	if class != 0 {
		key := umadClaim{version: version, class: umadConvertClass(class)}
		if umadIsVendor2(class) {
			key.oui = oui
		}
		for m := 0; m < 128; m++ {
			key.method = uint8(m)
			if methods.Has(uint8(m)) && p.claims[key] != nil {
				return 0, syscall.EINVAL // method_in_use
			}
		}
	}

	fab := p.fab
	fab.lastTID++
	a := &umadAgent{file: f, id: id, hiTID: fab.lastTID, qpn: qpn, class: class, version: version,
		oui: oui, methods: methods, rmpp: rmpp, flags: flags}
	if class != 0 {
		for m := 0; m < 128; m++ {
			if methods.Has(uint8(m)) {
				p.claims[a.claim(uint8(m))] = a
			}
		}
	}
	fab.byTID[a.hiTID] = a
	f.agents[id] = a
	if !f.alreadyUsed {
		f.alreadyUsed = true
		if v2 {
			f.usePKey = true
		}
	}
	return id, nil
}

func (a *umadAgent) claim(method uint8) umadClaim {
	key := umadClaim{version: a.version, class: umadConvertClass(a.class), method: method}
	if umadIsVendor2(a.class) {
		key.oui = a.oui
	}
	return key
}

// unregister is ib_unregister_mad_agent: the method table entries go, and
// the agent's outstanding sends are cancelled without a report (the
// kernel flushes them, and user_mad queues only timeouts). Caller holds
// fab.mu.
func (fab *Fabric) unregister(a *umadAgent) {
	p := a.file.port
	if a.class != 0 {
		for m := 0; m < 128; m++ {
			if a.methods.Has(uint8(m)) && p.claims[a.claim(uint8(m))] == a {
				delete(p.claims, a.claim(uint8(m)))
			}
		}
	}
	delete(fab.byTID, a.hiTID)
	f := a.file
	for i := 0; i < len(f.sends); {
		if s := f.sends[i]; s.agent == a {
			f.sends = append(f.sends[:i], f.sends[i+1:]...)
			fab.finish(s)
			continue
		}
		i++
	}
}

// kill is what device removal and close do to a file: agents_dead, every
// agent unregistered, the queue dropped. Caller holds fab.mu.
func (f *File) kill() {
	fab := f.port.fab
	f.dead = true
	for i, a := range f.agents {
		if a != nil {
			fab.unregister(a)
			f.agents[i] = nil
		}
	}
	for f.recv.n > 0 {
		fab.putRecord(f.recv.pop())
	}
}

// Close implements sys.Backend (ib_umad_close): the file's agents are
// unregistered and its queued records dropped; blocked readers return
// os.ErrClosed.
func (f *File) Close() error {
	fab := f.port.fab
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if f.closed {
		return nil
	}
	f.kill()
	f.closed = true
	delete(f.port.files, f)
	close(f.done)
	return nil
}

// Mmap implements sys.Backend: umad files cannot be mapped.
func (f *File) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	return nil, syscall.ENODEV
}

// The file is pollable: *File implements sys.Waiter, so FD.Readable,
// FD.WaitReadable and FD.SetReadDeadline reach it as poll(2) and the
// runtime poller reach a real umad descriptor.

// Readable implements sys.Waiter: poll(POLLIN) with a zero timeout. It
// reports whether a record is queued; once the device is gone, EIO (the
// kernel's POLLERR).
func (f *File) Readable() (bool, error) {
	fab := f.port.fab
	fab.mu.Lock()
	defer fab.mu.Unlock()
	switch {
	case f.closed:
		return false, os.ErrClosed
	case f.dead:
		return false, syscall.EIO
	}
	return f.recv.n > 0, nil
}

// WaitReadable implements sys.Waiter: poll(POLLIN) through the runtime
// poller. It returns nil once a record is queued, EIO once the device is
// gone (POLLERR), os.ErrDeadlineExceeded once the read deadline (deadline,
// or the one DeadlineChanged set since) has passed, and os.ErrClosed once
// the file is closed; like the poller it looks at the deadline before the
// queue. It consumes nothing.
func (f *File) WaitReadable(deadline time.Time) error {
	fab := f.port.fab
	fab.mu.Lock()
	err := f.wait(deadline, nil)
	fab.mu.Unlock()
	return err
}

// DeadlineChanged implements sys.Waiter: from now on the Reads and
// WaitReadables in progress and later ones give up at deadline (zero:
// never); one in the past wakes them at once with os.ErrDeadlineExceeded,
// as SetReadDeadline does on a real descriptor.
func (f *File) DeadlineChanged(deadline time.Time) {
	fab := f.port.fab
	fab.mu.Lock()
	f.dl, f.dlKnown = deadline, true
	f.dlGen++
	f.signal()
	fab.mu.Unlock()
}

// deadline returns the read deadline in force for a call made with arg.
// Caller holds fab.mu.
func (f *File) deadline(arg time.Time) time.Time {
	if f.dlKnown {
		return f.dl
	}
	return arg
}

// wait blocks until a record is queued, then runs take (when not nil) and
// returns its error; or returns one of the errors WaitReadable lists.
// Caller holds fab.mu, which wait releases while it sleeps.
func (f *File) wait(deadline time.Time, take func() error) error {
	fab := f.port.fab
	deadline = f.deadline(deadline)
	gen := f.dlGen
	var ch chan struct{}
	var timer *time.Timer
	defer func() {
		if ch != nil {
			f.removeWaiter(ch)
		}
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if f.dlGen != gen {
			gen, deadline = f.dlGen, f.dl
		}
		switch {
		case f.closed:
			return os.ErrClosed
		case !deadline.IsZero() && !time.Now().Before(deadline):
			return os.ErrDeadlineExceeded
		case f.dead:
			return syscall.EIO
		case f.recv.n > 0:
			if take != nil {
				return take()
			}
			return nil
		}
		if ch == nil {
			ch = f.addWaiter()
		}
		var expired <-chan time.Time
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			expired = timer.C
		}
		fab.mu.Unlock()
		select {
		case <-ch:
		case <-f.done:
		case <-expired:
		}
		fab.mu.Lock()
	}
}

// umadQueue is the file's recv_list: a FIFO of records that can also put
// one back at the front (a failed read requeues its record).
type umadQueue struct {
	buf     []*umadRecord
	head, n int
}

func (q *umadQueue) grow() {
	nb := make([]*umadRecord, max(8, 2*len(q.buf)))
	for i := 0; i < q.n; i++ {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

func (q *umadQueue) push(r *umadRecord) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = r
	q.n++
}

func (q *umadQueue) pushFront(r *umadRecord) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.head = (q.head + len(q.buf) - 1) % len(q.buf)
	q.buf[q.head] = r
	q.n++
}

func (q *umadQueue) pop() *umadRecord {
	r := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return r
}

// MAD classification (include/rdma/ib_mad.h).

func umadIsSMP(class uint8) bool { return class == umadClassSubnLID || class == umadClassSubnDR }

func umadIsVendor2(class uint8) bool { return class >= umadClassVendor2 && class <= umadClassVendor2E }

// umadIsRMPPClass is ib_is_mad_class_rmpp.
func umadIsRMPPClass(class uint8) bool {
	switch class {
	case umadClassSubnAdm, umadClassDevMgt, umadClassDevAdm, umadClassBIS:
		return true
	}
	return umadIsVendor2(class)
}

// umadConvertClass is convert_mgmt_class: directed-route SMPs share the
// method table of class 0.
func umadConvertClass(class uint8) uint8 {
	if class == umadClassSubnDR {
		return 0
	}
	return class
}

// umadDataOffset is ib_get_mad_data_offset: where the class's data starts.
func umadDataOffset(class uint8) int {
	switch {
	case class == umadClassSubnAdm:
		return 56 // IB_MGMT_SA_HDR
	case class == umadClassDevMgt || class == umadClassDevAdm || class == umadClassBIS:
		return 64 // IB_MGMT_DEVICE_HDR
	case umadIsVendor2(class):
		return 40 // IB_MGMT_VENDOR_HDR
	}
	return umadMADHdr
}

// umadIsResponse is ib_response_mad.
func umadIsResponse(mad []byte) bool {
	method := mad[3]
	return method&umadMethodResp != 0 || method == umadMethodTrapRepress ||
		(mad[1] == umadClassBM && binary.BigEndian.Uint32(mad[20:24])&1 != 0)
}

var _ sys.Backend = (*File)(nil)
