package rdmanl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/purerdma/rdma/sysfs"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
)

// nlEnc builds netlink attributes the way the kernel's nla_put_* do. With
// pad set, every u64 is preceded by an RDMA_NLDEV_ATTR_PAD attribute when
// its value would not be 8-byte aligned (nla_put_u64_64bit on architectures
// without efficient unaligned access), relative to the start of the
// message, which follows the 16-byte nlmsghdr.
type nlEnc struct {
	b   []byte
	pad bool
}

func (e *nlEnc) put(typ uint16, val []byte) {
	var h [4]byte
	binary.NativeEndian.PutUint16(h[0:], uint16(4+len(val)))
	binary.NativeEndian.PutUint16(h[2:], typ)
	e.b = append(e.b, h[:]...)
	e.b = append(e.b, val...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *nlEnc) u8(typ uint16, v uint8)   { e.put(typ, []byte{v}) }
func (e *nlEnc) u32(typ uint16, v uint32) { e.put(typ, u32(v)) }
func (e *nlEnc) str(typ uint16, s string) { e.put(typ, append([]byte(s), 0)) }

func (e *nlEnc) u64(typ uint16, v uint64, base int) {
	if e.pad && (base+len(e.b)+4)%8 != 0 {
		e.put(abi.RDMA_NLDEV_ATTR_PAD, nil)
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	e.put(typ, b[:])
}

// nest encodes a nested attribute; nested is NLA_F_NESTED (nla_nest_start
// sets it, nla_nest_start_noflag does not).
func (e *nlEnc) nest(typ uint16, nested bool, base int, fill func(inner *nlEnc, base int)) {
	inner := &nlEnc{pad: e.pad}
	fill(inner, base+len(e.b)+4)
	if nested {
		typ |= 0x8000
	}
	e.put(typ, inner.b)
}

func encodeDevice(d Device, pad bool) []byte {
	e := &nlEnc{pad: pad}
	e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, d.Index)
	e.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, d.Name)
	e.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, uint32(d.NumPorts))
	if d.CapFlags != nil {
		e.u64(abi.RDMA_NLDEV_ATTR_CAP_FLAGS, *d.CapFlags, nlmsgHdrLen)
	}
	if d.FWVersion != nil {
		e.str(abi.RDMA_NLDEV_ATTR_FW_VERSION, *d.FWVersion)
	}
	e.u64(abi.RDMA_NLDEV_ATTR_NODE_GUID, uint64(d.NodeGUID), nlmsgHdrLen)
	e.u64(abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, uint64(d.SysImageGUID), nlmsgHdrLen)
	if d.NodeType != nil {
		e.u8(abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE, uint8(*d.NodeType))
	}
	e.u8(abi.RDMA_NLDEV_ATTR_DEV_DIM, 0) // an attribute the decoder skips
	if d.Protocol != nil {
		e.str(abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL, *d.Protocol)
	}
	return e.b
}

func encodePortStats(s Stats, pad bool) []byte {
	e := &nlEnc{pad: pad}
	e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, s.Index)
	e.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, s.Device)
	e.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, uint32(s.Port))
	e.nest(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, true, nlmsgHdrLen, func(t *nlEnc, base int) {
		for _, c := range s.Counters {
			t.nest(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, false, base, func(en *nlEnc, base int) {
				en.str(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, c.Name)
				en.u64(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, c.Value, base)
			})
		}
	})
	return e.b
}

// hugeEncodeDev is the kernel's huge_encode_dev (include/linux/kdev_t.h):
// (minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12).
func hugeEncodeDev(d sysfs.DevNumber) uint64 {
	return uint64(d.Minor&0xff) | uint64(d.Major)<<8 | uint64(d.Minor&^0xff)<<12
}

// encodeChardev lays out a GET_CHARDEV reply as nldev_get_chardev does:
// the client's attributes first (uverbs: UVERBS_DRIVER_ID, a u32), then
// CHARDEV and CHARDEV_ABI (nla_put_u64_64bit) and CHARDEV_NAME.
func encodeChardev(c Chardev, pad bool) []byte {
	e := &nlEnc{pad: pad}
	if c.DriverID != nil {
		e.u32(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, uint32(*c.DriverID))
	}
	e.u64(abi.RDMA_NLDEV_ATTR_CHARDEV, hugeEncodeDev(c.Dev), nlmsgHdrLen)
	e.u64(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI, c.ABI, nlmsgHdrLen)
	e.str(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, c.Name)
	return e.b
}

// fakeDev is one device of the fake kernel.
type fakeDev struct {
	Device
	stats map[int][]NamedCounter // nil: the driver has no port statistics
	// driverID, uverbsMinor and umadMinor describe the character
	// devices: uverbs minor (major 231, ABI uverbsABI) and the first
	// port's umad minor (major 231, ABI 5).
	driverID    uint32
	uverbsABI   uint64
	uverbsMinor uint32
	umadMinor   uint32
	// smi: the ports have an SMI (InfiniBand link layer), so issm is
	// there; noMAD: the ports have no MAD interface at all.
	smi, noMAD bool
}

// fakeKernel answers nldev requests the way drivers/infiniband/core/nldev.c
// does for the commands this package sends, and checks them as strictly:
// attribute sizes (the nla_policy), mandatory attributes, dump versus doit.
type fakeKernel struct {
	devs []fakeDev
	pad  bool
	reqs int
}

func parseReqAttrs(attrs []nlAttr) (map[uint16][]byte, error) {
	m := map[uint16][]byte{}
	for _, a := range attrs {
		if _, dup := m[a.typ]; dup {
			return nil, syscall.EINVAL
		}
		m[a.typ] = a.data
	}
	return m, nil
}

func (k *fakeKernel) exec(cmd, flags uint16, attrs []nlAttr) ([][]byte, error) {
	k.reqs++
	m, err := parseReqAttrs(attrs)
	if err != nil {
		return nil, err
	}
	for typ, v := range m {
		switch typ {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			if len(v) != 4 { // nla_policy NLA_U32
				return nil, syscall.ERANGE
			}
		}
	}
	switch cmd {
	case abi.RDMA_NLDEV_CMD_GET:
		if flags&syscall.NLM_F_DUMP == 0 {
			return nil, syscall.EOPNOTSUPP // doit is not used by this package
		}
		var out [][]byte
		for _, d := range k.devs {
			out = append(out, encodeDevice(d.Device, k.pad))
		}
		return out, nil
	case abi.RDMA_NLDEV_CMD_STAT_GET:
		if _, ok := m[abi.RDMA_NLDEV_ATTR_STAT_RES]; !ok && flags&syscall.NLM_F_DUMP != 0 {
			return nil, syscall.EINVAL // nldev_stat_get_dumpit needs STAT_RES
		}
		idx, ok1 := m[abi.RDMA_NLDEV_ATTR_DEV_INDEX]
		port, ok2 := m[abi.RDMA_NLDEV_ATTR_PORT_INDEX]
		if !ok1 || !ok2 {
			return nil, syscall.EINVAL
		}
		for _, d := range k.devs {
			if d.Index != binary.NativeEndian.Uint32(idx) {
				continue
			}
			p := int(binary.NativeEndian.Uint32(port))
			if p < 1 || p > d.NumPorts || d.stats == nil {
				return nil, syscall.EINVAL
			}
			return [][]byte{encodePortStats(Stats{Device: d.Name, Index: d.Index, Port: p, Counters: d.stats[p]}, k.pad)}, nil
		}
		return nil, syscall.EINVAL
	case abi.RDMA_NLDEV_CMD_GET_CHARDEV:
		return k.getChardev(m)
	}
	return nil, syscall.EOPNOTSUPP
}

// getChardev answers as nldev_get_chardev and the clients' get_nl_info
// (ib_uverbs_get_nl_info, ib_umad_get_nl_info) do.
func (k *fakeKernel) getChardev(m map[uint16][]byte) ([][]byte, error) {
	typ, ok := m[abi.RDMA_NLDEV_ATTR_CHARDEV_TYPE]
	if !ok {
		return nil, syscall.EINVAL
	}
	name := strings.TrimRight(string(typ), "\x00")
	idx, haveIdx := m[abi.RDMA_NLDEV_ATTR_DEV_INDEX]
	port, havePort := m[abi.RDMA_NLDEV_ATTR_PORT_INDEX]
	if !haveIdx {
		// Without a device only client-wide chardevs exist (none
		// of these three); a port without a device is EINVAL.
		return nil, syscall.EINVAL
	}
	var dev *fakeDev
	for i := range k.devs {
		if k.devs[i].Index == binary.NativeEndian.Uint32(idx) {
			dev = &k.devs[i]
		}
	}
	if dev == nil {
		return nil, syscall.EINVAL // ib_device_get_by_index found none
	}
	p := -1
	if havePort {
		p = int(binary.NativeEndian.Uint32(port))
		if p < 1 || p > dev.NumPorts { // rdma_is_port_valid
			return nil, syscall.EINVAL
		}
	}
	var c Chardev
	switch name {
	case "uverbs":
		if p != -1 {
			return nil, syscall.EINVAL
		}
		id := rdma.DriverID(dev.driverID)
		c = Chardev{Name: fmt.Sprintf("uverbs%d", dev.uverbsMinor-192), Dev: sysfs.DevNumber{Major: 231, Minor: dev.uverbsMinor}, ABI: dev.uverbsABI, DriverID: &id}
	case "umad", "issm":
		if p == -1 {
			return nil, syscall.EINVAL
		}
		// ib_umad_get_nl_info: no umad port → EOPNOTSUPP;
		// ib_issm_get_nl_info also wants rdma_cap_ib_smi, which RoCE
		// ports lack (the VM showed rxe's issm0 answering EOPNOTSUPP
		// although sysfs lists the node).
		if dev.noMAD || (name == "issm" && !dev.smi) {
			return nil, syscall.EOPNOTSUPP
		}
		minor := dev.umadMinor + uint32(p-1)
		if name == "issm" {
			minor += 64
		}
		c = Chardev{Name: fmt.Sprintf("%s%d", name, dev.umadMinor+uint32(p-1)), Dev: sysfs.DevNumber{Major: 231, Minor: minor}, ABI: 5}
	default:
		return nil, syscall.EOPNOTSUPP // no such client
	}
	return [][]byte{encodeChardev(c, k.pad)}, nil
}

// rxeKernel models the Soft-RoCE VM: rxe0 and rxe1 (tools-output.txt).
func rxeKernel(pad bool) *fakeKernel {
	counters := func(sent uint64) []NamedCounter {
		return []NamedCounter{{"sent_pkts", sent}, {"rcvd_pkts", sent}, {"duplicate_request", 10}, {"rdma_sends", 5000}}
	}
	return &fakeKernel{pad: pad, devs: []fakeDev{
		{Device{Index: 0, Name: "rxe0", NumPorts: 1, NodeGUID: 0xacade8fffe375f42, SysImageGUID: 0xacade8fffe375f42,
			NodeType: ptr(rdma.NodeCA), Protocol: ptr("roce"), CapFlags: ptr[uint64](0x1223c76)}, map[int][]NamedCounter{1: counters(25019)},
			abi.RDMA_DRIVER_RXE, 2, 192, 0, false, false},
		{Device{Index: 1, Name: "rxe1", NumPorts: 1, NodeGUID: 0xacdf59fffef0895d, SysImageGUID: 0xacdf59fffef0895d,
			NodeType: ptr(rdma.NodeCA), Protocol: ptr("roce"), CapFlags: ptr[uint64](0x1223c76)}, map[int][]NamedCounter{1: counters(15011)},
			abi.RDMA_DRIVER_RXE, 2, 193, 1, false, false},
		{Device{Index: 7, Name: "mlx5_0", NumPorts: 2, NodeGUID: 1, SysImageGUID: 2, FWVersion: ptr("20.31.1014")}, nil,
			abi.RDMA_DRIVER_MLX5, 1, 194, 2, true, false},
	}}
}

func TestNetlinkDevices(t *testing.T) {
	for _, pad := range []bool{false, true} {
		k := rxeKernel(pad)
		n := &Conn{exec: k.exec}
		devs, err := n.Devices()
		if err != nil {
			t.Fatal(err)
		}
		var want []Device
		for _, d := range k.devs {
			want = append(want, d.Device)
		}
		if d := cmp.Diff(want, devs); d != "" {
			t.Errorf("pad %v: Devices (-want +got):\n%s", pad, d)
		}
		d, err := n.Device("rxe1")
		if err != nil || d.Index != 1 || d.NodeGUID.String() != "acdf:59ff:fef0:895d" || d.FWVersion != nil {
			t.Errorf("Device(rxe1) = %+v, %v", d, err)
		}
		if _, err := n.Device("rxe9"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Device(rxe9): %v, want os.ErrNotExist", err)
		}
	}
}

func TestNetlinkPortStats(t *testing.T) {
	for _, pad := range []bool{false, true} {
		k := rxeKernel(pad)
		n := &Conn{exec: k.exec}
		s, err := n.PortStatsByName("rxe0", 1)
		if err != nil {
			t.Fatal(err)
		}
		want := &Stats{Device: "rxe0", Index: 0, Port: 1, Counters: k.devs[0].stats[1]}
		if d := cmp.Diff(want, s); d != "" {
			t.Errorf("pad %v: PortStats (-want +got):\n%s", pad, d)
		}
		if m := s.Map(); len(m) != 4 || m["sent_pkts"] != 25019 {
			t.Errorf("Map = %v", m)
		}
	}
	n := &Conn{exec: rxeKernel(false).exec}
	for _, tc := range []struct {
		name string
		call func() error
		is   error
	}{
		{"unknown index", func() error { _, err := n.PortStats(42, 1); return err }, syscall.EINVAL},
		{"port beyond the last", func() error { _, err := n.PortStats(0, 2); return err }, syscall.EINVAL},
		{"port 0", func() error { _, err := n.PortStats(0, 0); return err }, syscall.EINVAL},
		{"driver without port stats", func() error { _, err := n.PortStats(7, 1); return err }, syscall.EINVAL},
		{"unknown name", func() error { _, err := n.PortStatsByName("nope", 1); return err }, os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var e *Error
			if !errors.Is(err, tc.is) || !errors.As(err, &e) {
				t.Errorf("error %v, want an *Error matching %v", err, tc.is)
			}
		})
	}
}

func TestNetlinkChardev(t *testing.T) {
	for _, pad := range []bool{false, true} {
		n := &Conn{exec: rxeKernel(pad).exec}
		c, err := n.Chardev(1, sysfs.KindUverbs, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := &Chardev{Name: "uverbs1", Dev: sysfs.DevNumber{Major: 231, Minor: 193}, ABI: 2, DriverID: ptr(rdma.DriverRXE)}
		if d := cmp.Diff(want, c); d != "" {
			t.Errorf("pad %v: uverbs (-want +got):\n%s", pad, d)
		}
		c, err = n.Chardev(0, sysfs.KindUmad, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(&Chardev{Name: "umad0", Dev: sysfs.DevNumber{Major: 231, Minor: 0}, ABI: 5}, c); d != "" {
			t.Errorf("pad %v: umad (-want +got):\n%s", pad, d)
		}
		c, err = n.Chardev(7, sysfs.KindISSM, 2)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(&Chardev{Name: "issm3", Dev: sysfs.DevNumber{Major: 231, Minor: 67}, ABI: 5}, c); d != "" {
			t.Errorf("pad %v: issm (-want +got):\n%s", pad, d)
		}
	}
	n := &Conn{exec: rxeKernel(false).exec}
	for _, tc := range []struct {
		name       string
		index      uint32
		kind       sysfs.CharDevKind
		port       int
		is         error
		kernelSaid bool // the request reached the fake kernel
	}{
		{"uverbs with a port", 0, sysfs.KindUverbs, 1, syscall.EINVAL, false},
		{"umad without a port", 0, sysfs.KindUmad, 0, syscall.EINVAL, false},
		{"negative port", 0, sysfs.KindISSM, -1, syscall.EINVAL, false},
		{"unknown kind", 0, "rdma_cm", 0, syscall.EINVAL, false},
		{"unknown index", 42, sysfs.KindUverbs, 0, syscall.EINVAL, true},
		{"port past the last", 0, sysfs.KindUmad, 2, syscall.EINVAL, true},
		{"port without MAD", 7, sysfs.KindUmad, 1, ErrNotSupported, true},
		{"issm of a RoCE port", 0, sysfs.KindISSM, 1, ErrNotSupported, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := rxeKernel(false)
			k.devs[2].noMAD = true
			n.exec = k.exec
			_, err := n.Chardev(tc.index, tc.kind, tc.port)
			var e *Error
			if !errors.Is(err, tc.is) || !errors.As(err, &e) {
				t.Errorf("error %v, want an *Error matching %v", err, tc.is)
			}
			if (k.reqs > 0) != tc.kernelSaid {
				t.Errorf("%d requests sent; want the kernel asked: %v", k.reqs, tc.kernelSaid)
			}
		})
	}
}

func TestHugeDecodeDev(t *testing.T) {
	for _, d := range []sysfs.DevNumber{{Major: 231, Minor: 192}, {Major: 231}, {}, {Major: 4095, Minor: 1<<20 - 1}, {Major: 10, Minor: 256}, {Major: 511, Minor: 0x12345}} {
		if got := hugeDecodeDev(hugeEncodeDev(d)); got != d {
			t.Errorf("%v → %#x → %v", d, hugeEncodeDev(d), got)
		}
	}
	// uverbs0 as the kernel encodes it: 231:192 → 0xe7c0.
	if got := hugeDecodeDev(0xe7c0); got != (sysfs.DevNumber{Major: 231, Minor: 192}) {
		t.Errorf("0xe7c0 → %v, want 231:192", got)
	}
}

func TestNetlinkErrors(t *testing.T) {
	noNetlink := &Conn{exec: func(uint16, uint16, []nlAttr) ([][]byte, error) {
		return nil, syscall.EPROTONOSUPPORT // socket(NETLINK_RDMA) without ib_core
	}}
	if _, err := noNetlink.Devices(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Devices without RDMA netlink: %v, want ErrNotSupported", err)
	}
	twoReplies := &Conn{exec: func(uint16, uint16, []nlAttr) ([][]byte, error) {
		b := encodePortStats(Stats{Device: "x", Port: 1}, false)
		return [][]byte{b, b}, nil
	}}
	if _, err := twoReplies.PortStats(0, 1); err == nil || !strings.Contains(err.Error(), "2 replies") {
		t.Errorf("two replies: %v", err)
	}
	garbage := &Conn{exec: func(uint16, uint16, []nlAttr) ([][]byte, error) {
		return [][]byte{{8, 0, 1, 0, 0, 0}}, nil
	}}
	if _, err := garbage.Devices(); err == nil {
		t.Error("Devices accepted a truncated reply")
	}
}

func TestDecodeErrors(t *testing.T) {
	good := encodeDevice(Device{Index: 3, Name: "mlx5_0", NumPorts: 1, NodeGUID: 1, SysImageGUID: 1}, false)
	if _, err := decodeDevice(good); err != nil {
		t.Fatal(err)
	}
	e := &nlEnc{}
	e.put(abi.RDMA_NLDEV_ATTR_DEV_INDEX, []byte{1, 2})
	shortU32 := e.b
	e = &nlEnc{}
	e.put(abi.RDMA_NLDEV_ATTR_DEV_NAME, []byte("no-nul"))
	noNUL := e.b
	e = &nlEnc{}
	e.put(abi.RDMA_NLDEV_ATTR_NODE_GUID, []byte{1, 2, 3, 4})
	shortU64 := e.b
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"3 stray bytes", append(append([]byte{}, good...), 1, 2, 3), "truncated"},
		{"length below 4", append(append([]byte{}, good...), 2, 0, 1, 0), "outside"},
		{"length past the end", append(append([]byte{}, good...), 64, 0, 1, 0), "outside"},
		{"u32 of 2 bytes", append(append([]byte{}, good...), shortU32...), "a u32 (4 bytes)"},
		{"string without NUL", append(append([]byte{}, good...), noNUL...), "NUL-terminated"},
		{"u64 of 4 bytes", append(append([]byte{}, good...), shortU64...), "a u64 (8 bytes)"},
		{"empty", nil, "without RDMA_NLDEV_ATTR_DEV_INDEX"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeDevice(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decodeDevice: %v, want %q", err, tc.want)
			}
		})
	}
	// Stats: an entry without a value; no table.
	e = &nlEnc{}
	e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 0)
	e.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
	e.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
	noTable := append([]byte{}, e.b...)
	e.nest(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, true, 16, func(t *nlEnc, base int) {
		t.nest(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, false, base, func(en *nlEnc, _ int) {
			en.str(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "x")
		})
	})
	if _, err := decodePortStats(e.b); err == nil || !strings.Contains(err.Error(), "without a name or a value") {
		t.Errorf("entry without value: %v", err)
	}
	if _, err := decodePortStats(noTable); err == nil {
		t.Error("stats without a table accepted")
	}
	// An empty table is valid: a driver with no counters.
	e = &nlEnc{b: noTable}
	e.nest(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, true, 16, func(*nlEnc, int) {})
	if s, err := decodePortStats(e.b); err != nil || len(s.Counters) != 0 {
		t.Errorf("empty table: %+v, %v", s, err)
	}
}

func ptr[T any](v T) *T { return &v }
