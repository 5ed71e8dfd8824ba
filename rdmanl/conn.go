package rdmanl

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/sysfs"

	"github.com/purerdma/rdma/abi"
)

// Conn reads RDMA devices and port statistics over RDMA netlink
// (NETLINK_RDMA, the nldev client): the second source next to sysfs, and
// the one that reads hardware counters fresh from the driver and includes
// the optional counters enabled with "rdma statistic set". Requests and
// replies go over a blocking netlink socket (transport.go); the replies
// are decoded here, with every length checked. A client from [New] opens
// a socket for each request and closes it afterwards; one from
// [Open] keeps one socket for all its requests until Close.
//
// It is safe for concurrent use. Only devices visible in the caller's
// network namespace are reported.
type Conn struct {
	exec nlExecFunc
	// kept is Open's socket; nil for New's clients.
	kept   *socket
	closed atomic.Bool
}

// nlExecFunc sends one nldev request (command cmd, netlink flags besides
// NLM_F_REQUEST, attributes) and returns the payloads of the replies, each
// without its nlmsghdr. Errors carry the kernel's errno. Unit tests replace
// it with a fake kernel.
type nlExecFunc func(cmd uint16, flags uint16, attrs []nlAttr) ([][]byte, error)

// nlAttr is one request attribute.
type nlAttr struct {
	typ  uint16
	data []byte
}

// New returns a client that opens a socket for each request. The zero
// Conn (and a nil *Conn) works the same.
func New() *Conn { return &Conn{exec: execNetlink} }

// Open returns a client that sends all its requests on one
// socket, opened here, where [New]'s opens and closes one a request:
// a tool or an agent that asks several questions saves the socket's set-up
// and tear-down (socket, two setsockopt, close) on each but the first. Close it when
// done; requests after Close fail with an error matching os.ErrClosed.
//
// Errors: an *Error matching ErrNotSupported when the kernel has no RDMA
// netlink (ib_core not loaded: the socket cannot be created).
func Open() (*Conn, error) {
	s, err := openSocket()
	if err != nil {
		return nil, errs.New("netlink open", "", err)
	}
	n := &Conn{kept: s}
	n.exec = n.execKept
	return n, nil
}

// Close closes the socket of a client from [Open]; on one from
// [New] (or a nil or zero Conn) it does nothing. It is safe to
// call more than once.
func (n *Conn) Close() error {
	if n == nil || n.kept == nil || n.closed.Swap(true) {
		return nil
	}
	n.kept.close()
	return nil
}

// execKept is execNetlink on the kept socket.
func (n *Conn) execKept(cmd uint16, flags uint16, attrs []nlAttr) ([][]byte, error) {
	if n.closed.Load() {
		return nil, os.ErrClosed
	}
	return n.kept.exchange(cmd, flags, attrs, replyType(cmd, flags))
}

func (n *Conn) run(cmd uint16, flags uint16, attrs []nlAttr) ([][]byte, error) {
	if n == nil || n.exec == nil {
		return execNetlink(cmd, flags, attrs)
	}
	return n.exec(cmd, flags, attrs)
}

// nlType returns the nlmsg_type of an nldev command: RDMA_NL_GET_TYPE.
func nlType(cmd uint16) uint16 { return abi.RDMA_NL_NLDEV<<10 | cmd }

// replyType is the type of the replies to cmd: the request's, except
// PORT_GET's, which the kernel answers with RDMA_NLDEV_CMD_GET's type
// (nldev.c, nldev_port_get_doit). Replies of other types are skipped.
func replyType(cmd, flags uint16) uint16 {
	if cmd == abi.RDMA_NLDEV_CMD_PORT_GET && flags&syscall.NLM_F_DUMP == 0 {
		return nlType(abi.RDMA_NLDEV_CMD_GET)
	}
	return nlType(cmd)
}

// execNetlink sends the request on a socket of its own, closed after.
func execNetlink(cmd uint16, flags uint16, attrs []nlAttr) ([][]byte, error) {
	s, err := openSocket()
	if err != nil {
		return nil, err
	}
	defer s.close()
	return s.exchange(cmd, flags, attrs, replyType(cmd, flags))
}

// Device is one device of an nldev GET reply (like a line of
// "rdma dev show").
type Device struct {
	// Index is the kernel's device index, which requests address a
	// device by.
	Index uint32
	// Name is the device name.
	Name string
	// NumPorts is the number of the last port (RDMA_NLDEV_ATTR_PORT_INDEX
	// in a GET reply).
	NumPorts int
	// NodeGUID and SysImageGUID are the same values as sysfs's node_guid
	// and sys_image_guid.
	NodeGUID     rdma.GUID
	SysImageGUID rdma.GUID
	// FWVersion is the firmware version; nil when the device has none
	// (the kernel leaves the attribute out for an empty string, as for
	// rxe).
	FWVersion *string
	// NodeType is the node type (1 = CA …), nil on kernels without it.
	NodeType *rdma.NodeType
	// Protocol is "ib", "roce", "iw", "opa" or "usnic" (Linux 5.5 and
	// later; nil before).
	Protocol *string
	// CapFlags are the device capability flags (IB_DEVICE_*).
	CapFlags *uint64
}

// Devices lists the RDMA devices (like "rdma dev show"), in the kernel's
// order (by index). The error matches ErrNotSupported when the kernel has
// no RDMA netlink (ib_core not loaded: the socket cannot be created).
func (n *Conn) Devices() ([]Device, error) {
	msgs, err := n.run(abi.RDMA_NLDEV_CMD_GET, syscall.NLM_F_DUMP, nil)
	if err != nil {
		return nil, errs.New("netlink dev get", "", err)
	}
	devs := make([]Device, 0, len(msgs))
	for _, m := range msgs {
		d, err := decodeDevice(m)
		if err != nil {
			return nil, errs.New("netlink dev get", "", err)
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// Device returns the device called name (like "rdma dev show NAME"). The
// error matches os.ErrNotExist when there is none.
func (n *Conn) Device(name string) (*Device, error) {
	devs, err := n.Devices()
	if err != nil {
		return nil, err
	}
	for i := range devs {
		if devs[i].Name == name {
			return &devs[i], nil
		}
	}
	return nil, errs.New("netlink dev get", name, syscall.ENODEV)
}

// NamedCounter is one hardware counter of a netlink statistics reply.
type NamedCounter struct {
	Name  string // the driver's counter name, as in hw_counters/
	Value uint64 // the value
}

// PortStats are a port's hardware counters as RDMA netlink reports them
// (RDMA_NLDEV_CMD_STAT_GET without a resource: "rdma statistic show link
// DEV/PORT"): the names and values of the port's hw_counters/ in sysfs, but
// read from the driver for this request, and including enabled optional
// counters.
type Stats struct {
	// Device and Index identify the device; Port is the port number.
	Device string
	Index  uint32
	Port   int
	// Counters are in the kernel's (the driver's) order.
	Counters []NamedCounter
}

// Map returns the counters as a map, name → value (nil for a nil
// *Stats).
func (s *Stats) Map() sysfs.HwCounters {
	if s == nil {
		return nil
	}
	m := make(sysfs.HwCounters, len(s.Counters))
	for _, c := range s.Counters {
		m[c.Name] = c.Value
	}
	return m
}

// PortStats reads the hardware counters of port of the device with index
// devIndex (like "rdma statistic show link DEV/PORT"). The kernel answers
// EINVAL (matched with errors.Is(err, syscall.EINVAL)) for an unknown
// device or port (port 0 is a switch's only port, and no other device's),
// and for a driver without port statistics.
func (n *Conn) PortStats(devIndex uint32, port int) (*Stats, error) {
	if port < 0 || uint64(port) > 0xffffffff {
		return nil, errs.New("netlink stat get", fmt.Sprintf("index %d port %d", devIndex, port), syscall.EINVAL)
	}
	msgs, err := n.run(abi.RDMA_NLDEV_CMD_STAT_GET, 0, []nlAttr{
		{abi.RDMA_NLDEV_ATTR_DEV_INDEX, u32(devIndex)},
		{abi.RDMA_NLDEV_ATTR_PORT_INDEX, u32(uint32(port))},
	})
	dev := fmt.Sprintf("index %d/%d", devIndex, port)
	if err != nil {
		return nil, errs.New("netlink stat get", dev, err)
	}
	if len(msgs) != 1 {
		return nil, errs.New("netlink stat get", dev, fmt.Errorf("the kernel sent %d replies, want 1", len(msgs)))
	}
	s, err := decodePortStats(msgs[0])
	if err != nil {
		return nil, errs.New("netlink stat get", dev, err)
	}
	return &s, nil
}

// PortStatsByName is [Conn.PortStats] for the device called name. The
// error matches os.ErrNotExist when there is no such device.
func (n *Conn) PortStatsByName(name string, port int) (*Stats, error) {
	d, err := n.Device(name)
	if err != nil {
		return nil, err
	}
	return n.PortStats(d.Index, port)
}

func u32(v uint32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, v)
	return b
}

// Chardev is a character device as RDMA_NLDEV_CMD_GET_CHARDEV
// reports it (what rdma-core's libibverbs and libibumad ask to find the
// uverbsN and umadN of a device and port).
type Chardev struct {
	// Name is the node's name in DevDir: "uverbs0", "umad1", "issm1".
	Name string
	// Dev is the device number (the kernel's huge_encode_dev value,
	// decoded).
	Dev sysfs.DevNumber
	// ABI is the ABI version: the driver's uverbs ABI for uverbs (rxe 2,
	// mlx5 1), 5 for umad and issm.
	ABI uint64
	// DriverID is the driver (enum rdma_driver_id) for
	// uverbs; nil for umad and issm, and for drivers the kernel binds no
	// driver id to.
	DriverID *rdma.DriverID
}

// Chardev asks the kernel for the character device of kind of the device
// with index devIndex: sysfs.KindUverbs takes port 0 (the device's only uverbs
// node); sysfs.KindUmad and sysfs.KindISSM take a port number. Like "rdma dev show"
// it needs no privilege.
//
// Errors: an *Error wrapping EINVAL for a port that does not fit the kind
// (checked here first) or that the device does not have, or an unknown
// index (the kernel's answer); ErrNotSupported (EOPNOTSUPP) when the
// kind's module (ib_uverbs, ib_umad) is not loaded, the port has no MAD
// interface, or, for sysfs.KindISSM, no SMI: RoCE and iWARP ports answer
// EOPNOTSUPP for issm, even where ib_umad creates an issmN node for them
// (Soft-RoCE on Linux 6.1; 6.12 creates none).
func (n *Conn) Chardev(devIndex uint32, kind sysfs.CharDevKind, port int) (*Chardev, error) {
	const op = "netlink get chardev"
	dev := fmt.Sprintf("index %d", devIndex)
	if port != 0 {
		dev = fmt.Sprintf("index %d/%d", devIndex, port)
	}
	switch kind {
	case sysfs.KindUverbs:
		if port != 0 {
			return nil, errs.New(op, dev, fmt.Errorf("uverbs nodes belong to a device, not a port: pass port 0: %w", syscall.EINVAL))
		}
	case sysfs.KindUmad, sysfs.KindISSM:
		if port < 1 || uint64(port) > 0xffffffff {
			return nil, errs.New(op, dev, fmt.Errorf("%s nodes belong to a port: pass a port number from 1: %w", kind, syscall.EINVAL))
		}
	default:
		return nil, errs.New(op, dev, fmt.Errorf("kind %q: want %q, %q or %q: %w", kind, sysfs.KindUverbs, sysfs.KindUmad, sysfs.KindISSM, syscall.EINVAL))
	}
	attrs := []nlAttr{
		{abi.RDMA_NLDEV_ATTR_CHARDEV_TYPE, append([]byte(kind), 0)},
		{abi.RDMA_NLDEV_ATTR_DEV_INDEX, u32(devIndex)},
	}
	if port != 0 {
		attrs = append(attrs, nlAttr{abi.RDMA_NLDEV_ATTR_PORT_INDEX, u32(uint32(port))})
	}
	msgs, err := n.run(abi.RDMA_NLDEV_CMD_GET_CHARDEV, 0, attrs)
	if err != nil {
		return nil, errs.New(op, dev, err)
	}
	if len(msgs) != 1 {
		return nil, errs.New(op, dev, fmt.Errorf("the kernel sent %d replies, want 1", len(msgs)))
	}
	c, err := decodeChardev(msgs[0])
	if err != nil {
		return nil, errs.New(op, dev, err)
	}
	return &c, nil
}

// LinkAdd creates a software RDMA device (like "rdma link add NAME type
// TYPE netdev NETDEV"): RDMA_NLDEV_CMD_NEWLINK (nldev.c, nldev_newlink),
// which hands the netdev to the link type's driver (rxe, siw). The kernel
// answers EEXIST when the netdev already has one, ENODEV for an unknown
// netdev, EINVAL for an unknown type.
func (n *Conn) LinkAdd(name, linkType, netdev string) error {
	_, err := n.run(abi.RDMA_NLDEV_CMD_NEWLINK, syscall.NLM_F_ACK, []nlAttr{
		{abi.RDMA_NLDEV_ATTR_DEV_NAME, append([]byte(name), 0)},
		{abi.RDMA_NLDEV_ATTR_LINK_TYPE, append([]byte(linkType), 0)},
		{abi.RDMA_NLDEV_ATTR_NDEV_NAME, append([]byte(netdev), 0)},
	})
	if err != nil {
		return &Error{Op: "netlink link add", Device: name, Err: err}
	}
	return nil
}

// LinkDelete removes the device with index devIndex (like "rdma link
// delete NAME"): RDMA_NLDEV_CMD_DELLINK (nldev_dellink), which only a
// device created with LinkAdd allows (EINVAL otherwise).
func (n *Conn) LinkDelete(devIndex uint32) error {
	_, err := n.run(abi.RDMA_NLDEV_CMD_DELLINK, syscall.NLM_F_ACK, []nlAttr{{abi.RDMA_NLDEV_ATTR_DEV_INDEX, u32(devIndex)}})
	if err != nil {
		return &Error{Op: "netlink link delete", Device: fmt.Sprintf("index %d", devIndex), Err: err}
	}
	return nil
}
