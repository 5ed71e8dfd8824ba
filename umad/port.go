package umad

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
)

// Port is an open umad port: the /dev/infiniband/umadN of one port of an
// RDMA device, and the MAD agents registered on it (libibumad's portid).
// What a port is (its state, LID, GID) is a [CAPort] here, as libibumad's
// umad_get_port gives it, or a sysfs.Port, as sysfs shows it.
//
// A Port is safe for concurrent use. Sends and registrations run in
// parallel; receives (Recv, RecvContext, Poll) are served one at a time, in
// the order they lock the port, because they share the descriptor's read
// deadline. Close unblocks a pending receive.
type Port struct {
	fd        *sys.FD
	ca        string
	num       int
	dev       string
	name      string // "ca/port"
	linkLayer rdma.LinkLayer
	sim       *simLink // the ibsim transport's link, nil for a kernel port
	info      CAPort   // the port as OpenPort read it

	hdr      atomic.Int32 // 56 or 64: the umad header this file uses
	noAgent2 atomic.Bool  // the kernel answered REGISTER_AGENT2 with ENOTTY

	rmu   sync.Mutex // held by the receive in progress
	dlSet bool       // (rmu) a read deadline may be set on fd
	waits bool       // (rmu) a receive has waited: fd is in the runtime poller
	dlMu  sync.Mutex // orders context wake-ups against the end of a receive
	dlGen uint64     // (dlMu) the receive a context wake-up may interrupt
}

// OpenPort opens a port for MAD I/O (umad_open_port). ca and port are
// chosen as LookupPort chooses them: both given, that port; no port (0),
// the best port of ca; no CA (""), that port on any device; neither, the
// default device and port. libibumad's choice of the default prefers the
// first ACTIVE InfiniBand port, then the first InfiniBand port that is
// LinkUp, then the first port of any link layer that is not Disabled, on
// the devices in name order; so a RoCE port is chosen only where there is
// no usable InfiniBand port.
//
// It checks the umad ABI (see Init), finds the port's umadN in
// class/infiniband_mad, opens the node with O_RDWR|O_NONBLOCK through the
// runtime poller, and enables the 64-byte header with
// IB_USER_MAD_ENABLE_PKEY, as libibumad does (if the kernel refuses, the
// port keeps the 56-byte header; see HeaderSize).
//
// The error matches ErrNoDevice when the device cannot be resolved
// (libibumad's -ENODEV), ErrInvalidPort when the device has no such port
// or the port no umad device (-EINVAL), and ErrOpenFailed when the node
// cannot be opened (-EIO), in which case it also matches the open's errno:
// os.ErrPermission for a node the caller may not open (the kernel makes
// umad nodes root-only unless udev rules say otherwise).
//
// OpenPort opens kernel ports only; OpenSimPort opens a port of an ibsim
// fabric (the tools of cmd/purerdma choose it from PURERDMA_IBSIM).
func (h *Host) OpenPort(ca string, port int) (*Port, error) {
	if h == nil {
		return nil, errNil("Host.OpenPort")
	}
	name := portName(ca, port)
	fail := func(err error) (*Port, error) {
		return nil, errs.New("open port", name, err)
	}
	if port < 0 {
		return fail(detail(ErrInvalidPort, fmt.Sprintf("port number %d is negative", port), nil))
	}
	if err := h.checkABI(); err != nil {
		return fail(err)
	}
	caName, num, err := h.resolve(ca, port)
	if err != nil {
		return fail(err)
	}
	name = resolvedName(caName, num)
	// The port is read into the Port's own record.
	p := new(Port)
	if err := h.readPortInto(&p.info, caName, num); err != nil {
		return fail(err)
	}
	node, err := h.umadNode(caName, num)
	if err != nil {
		return fail(err)
	}
	fd, err := h.openDevice(node)
	if err != nil {
		text := ""
		if errors.Is(err, os.ErrPermission) {
			text = "the kernel creates umad nodes root-only: run as root, or let a udev rule open them up " +
				`(KERNEL=="umad*", MODE="0666" in /etc/udev/rules.d)`
		}
		return fail(detail(ErrOpenFailed, text, err))
	}
	p.fd, p.ca, p.num, p.dev, p.name, p.linkLayer = fd, caName, num, node, name, p.info.LinkLayer
	p.hdr.Store(abi.MadHdrSizeOld)
	if err := fd.Ioctl(abi.IB_USER_MAD_ENABLE_PKEY, nil); err == nil {
		p.hdr.Store(abi.MadHdrSize)
	} else if debugOn(1) {
		logDebug("umad: ENABLE_PKEY failed, using the 56-byte header", slog.String("port", name), slog.Any("err", err))
	}
	if debugOn(1) {
		logDebug("umad: opened port", slog.String("port", name), slog.String("device", node),
			slog.Int("fd", fd.Raw()), slog.Int("header", p.HeaderSize()), slog.String("link_layer", p.info.LinkLayer.String()))
	}
	return p, nil
}

func (h *Host) openDevice(path string) (*sys.FD, error) {
	if h.open != nil {
		return h.open(path)
	}
	return sys.Open(path, os.O_RDWR|syscall.O_NONBLOCK)
}

// Close closes the port (umad_close_port); the kernel unregisters its
// agents. A receive in progress returns an error matching os.ErrClosed.
// Close is safe to call more than once; later calls return nil. On a nil
// *Port it returns an *Error wrapping EINVAL, as every Close of the
// library does (and os.File's).
func (p *Port) Close() error {
	if p == nil {
		return errNil("close port")
	}
	if err := p.fd.Close(); err != nil {
		return errs.New("close port", p.name, err)
	}
	if p.sim != nil {
		if err := p.sim.close(); err != nil {
			return errs.New("close port", p.name, err)
		}
	}
	if debugOn(1) {
		logDebug("umad: closed port", slog.String("port", p.name))
	}
	return nil
}

// CA returns the port's device name and PortNum its number.
func (p *Port) CA() string {
	if p == nil {
		return ""
	}
	return p.ca
}

// PortNum returns the port number.
func (p *Port) PortNum() int {
	if p == nil {
		return 0
	}
	return p.num
}

// Info returns the port as OpenPort read it from sysfs (LookupPort's view
// at open time, as libibmad's mad_rpc_open_port keeps umad_get_port's): a
// copy, not read again, so a tool that needs the port's LID or GID after
// opening it does not read the device's sysfs a second time.
func (p *Port) Info() CAPort {
	if p == nil {
		return CAPort{}
	}
	return p.info.clone()
}

// clone returns a copy of p that shares no memory with it.
func (p *CAPort) clone() CAPort {
	c := *p
	c.PKeys = slices.Clone(p.PKeys)
	c.Rate = clonePtr(p.Rate)
	c.LID, c.SMLID, c.CapMask = clonePtr(p.LID), clonePtr(p.SMLID), clonePtr(p.CapMask)
	c.LMC, c.SMSL = clonePtr(p.LMC), clonePtr(p.SMSL)
	c.LinkLayerName = clonePtr(p.LinkLayerName)
	c.Umad, c.ISSM = clonePtr(p.Umad), clonePtr(p.ISSM)
	return c
}

func clonePtr[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// Device returns the path of the umad node ("/dev/infiniband/umad0").
func (p *Port) Device() string {
	if p == nil {
		return ""
	}
	return p.dev
}

// LinkLayer returns the port's link layer as sysfs reports it
// (rdma.LinkLayerUnspecified when sysfs does not say, which libibumad
// calls "IB" and treats as InfiniBand); an ibsim port's is InfiniBand.
func (p *Port) LinkLayer() rdma.LinkLayer {
	if p == nil {
		return rdma.LinkLayerUnspecified
	}
	return p.linkLayer
}

// String returns "ca/port".
func (p *Port) String() string {
	if p == nil {
		return ""
	}
	return p.name
}

// FD returns the descriptor number (umad_get_fd), for an event loop that
// polls it; -1 once the port is closed (or for a fake port in tests, or a
// nil Port). Read and write it only through the Port: the Port keeps
// state about it.
func (p *Port) FD() int {
	if p == nil {
		return -1
	}
	return p.fd.Raw()
}

// HeaderSize returns the size of the umad header in front of every MAD on
// this port: 64 (struct ib_user_mad_hdr, with pkey_index) normally, 56 on a
// kernel that refused IB_USER_MAD_ENABLE_PKEY. Packets hide the
// difference.
func (p *Port) HeaderSize() int {
	if p == nil {
		return 0
	}
	return int(p.hdr.Load())
}

// AgentID identifies a MAD agent registered on a Port (0–31), as the
// kernel numbers them.
type AgentID uint32

// maxAgents is IB_UMAD_MAX_AGENTS.
const maxAgents = 32

// MethodMask is the set of methods (0–127) an agent receives unsolicited:
// method_mask of the kernel's registration request. The zero mask
// registers a client, which receives only responses to its own requests.
type MethodMask = abi.MethodMask

// MethodMaskOf returns a mask with the given methods (response methods
// 128–255 have no bit and are ignored).
func MethodMaskOf(methods ...Method) MethodMask {
	var m MethodMask
	for _, x := range methods {
		m.Set(uint8(x))
	}
	return m
}

// Registration asks for a MAD agent (umad_register2's struct
// umad_reg_attr).
type Registration struct {
	// Class is the management class; 0 registers a send-only agent that
	// receives nothing but responses to its own requests. The SMP classes
	// 0x01 and 0x81 register on QP0 (the SMI), every other class on QP1.
	Class MgmtClass
	// Version is the class version.
	Version uint8
	// Methods are the methods received unsolicited (the agent is a
	// replier for them); empty for a client.
	Methods MethodMask
	// OUI is the 24-bit OUI; vendor classes 0x30–0x4F need a non-zero
	// one, other classes ignore it.
	OUI uint32
	// RMPPVersion is 1 to let the kernel do RMPP for an RMPP-capable class
	// (SA, vendor range 2, …), else 0.
	RMPPVersion uint8
	// UserRMPP asks for IB_USER_MAD_USER_RMPP: RMPP is left to the caller
	// even though RMPPVersion is set.
	UserRMPP bool
}

// Management classes the registration calls treat specially (IBA 13.4.4).
const (
	portClassSMPLID     = 0x01
	portClassSMPDR      = 0x81
	portVendor2First    = 0x30
	portVendor2Last     = 0x4f
	portOUIOpenIB       = 0x001405
	portDefaultVendorV  = 1
	portMaxOUI          = 1<<24 - 1
	portSMIQPN, portGSI = 0, 1
)

// Register registers an agent for a class and version (umad_register):
// with methods it is a replier that receives requests of those methods;
// with an empty mask a client that receives only the responses to its
// own requests. Class 0 registers a send-only agent.
//
// SMP classes (0x01, 0x81) need QP0: on a port without one, every RoCE
// port, the error matches ErrNotSupported and says "not supported on RoCE
// (no SMI)". Other failures carry the kernel's errno (libibumad turns them
// all into EPERM): EINVAL for a registration the kernel refuses (a class
// version ≥ 0x83, a method another agent of the port already has, …),
// ENOMEM when the port has 32 agents, the kernel's limit per open port
// (IB_UMAD_MAX_AGENTS), which the error says.
func (p *Port) Register(class MgmtClass, version uint8, methods MethodMask) (AgentID, error) {
	if p == nil {
		return 0, errNil("Port.Register")
	}
	return p.RegisterAgent(Registration{Class: class, Version: version, Methods: methods, OUI: portOUIOpenIB})
}

// RegisterOUI registers an agent for a class of vendor range 2
// (0x30–0x4F) and an OUI (umad_register_oui), class version 1, with
// kernel RMPP when rmppVersion is 1. A class outside the range, or an OUI
// that is 0 or wider than 24 bits, fails with EINVAL before the kernel is
// asked. Otherwise it is Register.
func (p *Port) RegisterOUI(class MgmtClass, rmppVersion uint8, oui uint32, methods MethodMask) (AgentID, error) {
	if p == nil {
		return 0, errNil("Port.RegisterOUI")
	}
	if class < portVendor2First || class > portVendor2Last {
		return 0, errs.New("register agent", p.name, invalid(fmt.Sprintf("class %s is not in vendor range 2 (0x30–0x4f)", hex8(uint8(class)))))
	}
	return p.RegisterAgent(Registration{Class: class, Version: portDefaultVendorV, Methods: methods, OUI: oui, RMPPVersion: rmppVersion})
}

// RegisterAgent registers the agent r describes (umad_register2). It uses
// IB_USER_MAD_REGISTER_AGENT2 and, like libibumad, falls back to
// IB_USER_MAD_REGISTER_AGENT when the kernel answers ENOTTY (older than
// 3.16) or EINVAL and no flag was asked for. See Register for the errors.
func (p *Port) RegisterAgent(r Registration) (AgentID, error) {
	if p == nil {
		return 0, errNil("Port.RegisterAgent")
	}
	fail := func(err error) (AgentID, error) {
		if debugOn(1) {
			logDebug("umad: register failed", slog.String("port", p.name), slog.Int("class", int(r.Class)), slog.Any("err", err))
		}
		return 0, errs.New("register agent", p.name, err)
	}
	if r.Class == 0 && (r.Methods != MethodMask{}) {
		return fail(invalid("a method mask needs a class (class 0 registers a send-only agent)"))
	}
	if r.Class >= portVendor2First && r.Class <= portVendor2Last && (r.OUI == 0 || r.OUI > portMaxOUI) {
		return fail(invalid(fmt.Sprintf("vendor class %s needs a non-zero 24-bit OUI, not %#x", hex8(uint8(r.Class)), r.OUI)))
	}
	if r.OUI > portMaxOUI {
		r.OUI &= portMaxOUI // ignored by the kernel for this class; keep it encodable
	}
	qpn := uint32(portGSI)
	if r.Class == portClassSMPLID || r.Class == portClassSMPDR {
		qpn = portSMIQPN
		if !isIBLink(p.linkLayer) {
			return fail(errNoSMI(r.Class, p.linkLayer))
		}
	}
	var flags uint32
	if r.UserRMPP {
		flags = abi.IB_USER_MAD_USER_RMPP
	}
	id, err := p.register2(qpn, r, flags)
	if err != nil && (errors.Is(err, syscall.ENOTTY) || errors.Is(err, syscall.EINVAL)) && flags == 0 {
		if errors.Is(err, syscall.ENOTTY) {
			p.noAgent2.Store(true)
		}
		id, err = p.register1(qpn, r)
	}
	if err != nil {
		if qpn == portSMIQPN && errors.Is(err, syscall.EPROTONOSUPPORT) {
			return fail(errNoSMI(r.Class, p.linkLayer))
		}
		if errors.Is(err, os.ErrClosed) {
			return fail(errClosed)
		}
		if errors.Is(err, syscall.ENOMEM) {
			// ib_umad_reg_agent2 and ib_umad_reg_agent answer ENOMEM
			// when every agent slot of the file is taken.
			return fail(detail(nil, fmt.Sprintf("the port already has %d agents, the kernel's limit per open port "+
				"(IB_UMAD_MAX_AGENTS in drivers/infiniband/core/user_mad.c); unregister one or open the port again", maxAgents), err))
		}
		return fail(err)
	}
	if debugOn(1) {
		logDebug("umad: registered agent", slog.String("port", p.name), slog.Int("agent", int(id)),
			slog.Int("qpn", int(qpn)), slog.Int("class", int(r.Class)), slog.Int("version", int(r.Version)),
			slog.String("methods", fmt.Sprintf("%#x:%#x", r.Methods[1], r.Methods[0])), slog.Int("oui", int(r.OUI)))
	}
	return AgentID(id), nil
}

func (p *Port) register2(qpn uint32, r Registration, flags uint32) (uint32, error) {
	if p.noAgent2.Load() {
		return 0, syscall.ENOTTY
	}
	req := abi.RegReq2{QPN: qpn, MgmtClass: uint8(r.Class), MgmtClassVersion: r.Version, Flags: flags,
		MethodMask: r.Methods, OUI: r.OUI, RMPPVersion: r.RMPPVersion}
	b := make([]byte, abi.RegReq2Size)
	if err := req.Encode(b); err != nil {
		return 0, err
	}
	if err := p.fd.Ioctl(abi.IB_USER_MAD_REGISTER_AGENT2, unsafe.Pointer(&b[0]), b); err != nil {
		return 0, err
	}
	// The first REGISTER_AGENT2 of a file switches it to the 64-byte
	// header (which ENABLE_PKEY has normally done already).
	p.hdr.Store(abi.MadHdrSize)
	return binary.LittleEndian.Uint32(b[0:4]), nil
}

func (p *Port) register1(qpn uint32, r Registration) (uint32, error) {
	req := abi.RegReq{QPN: uint8(qpn), MgmtClass: uint8(r.Class), MgmtClassVersion: r.Version,
		MethodMask: r.Methods, OUI: r.OUI, RMPPVersion: r.RMPPVersion}
	b := make([]byte, abi.RegReqSize)
	if err := req.Encode(b); err != nil {
		return 0, err
	}
	if err := p.fd.Ioctl(abi.IB_USER_MAD_REGISTER_AGENT, unsafe.Pointer(&b[0]), b); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[0:4]), nil
}

// Unregister unregisters an agent (umad_unregister); the kernel cancels
// its outstanding requests without reporting them. The error matches
// EINVAL for an id that is not registered.
func (p *Port) Unregister(id AgentID) error {
	if p == nil {
		return errNil("Port.Unregister")
	}
	if id >= maxAgents {
		return errs.New("unregister agent", p.name, invalid(fmt.Sprintf("agent id %d is not below 32", id)))
	}
	arg := new(uint32)
	*arg = uint32(id)
	if err := p.fd.Ioctl(abi.IB_USER_MAD_UNREGISTER_AGENT, unsafe.Pointer(arg), arg); err != nil {
		if errors.Is(err, os.ErrClosed) {
			err = errClosed
		}
		return errs.New("unregister agent", p.name, err)
	}
	if debugOn(1) {
		logDebug("umad: unregistered agent", slog.String("port", p.name), slog.Int("agent", int(id)))
	}
	return nil
}
