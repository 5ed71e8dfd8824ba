package rdma

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The domain types every package shares: sysfs, uverbs, umad, counters and
// flow use these, never their own, so a value read through one package can
// be handed to another. Port numbers are plain ints everywhere (the kernel
// carries them as u8 in the verbs ABI and u32 in netlink; 1 is the first
// port, 0 a switch's management port).

//go:generate go run golang.org/x/tools/cmd/stringer@v0.51.0 -type=NodeType,PortState,PhysState,LinkLayer -linecomment -output types_string.go

// NodeType is a device's node type (enum rdma_node_type in the kernel's
// include/rdma/ib_verbs.h, the number in sysfs node_type, libibverbs' enum
// ibv_node_type). Its String is the name the kernel prints after the number
// in node_type ("CA", "switch", …).
type NodeType int

// The node types.
const (
	NodeUnknown     NodeType = -1 // unknown
	NodeCA          NodeType = 1  // CA
	NodeSwitch      NodeType = 2  // switch
	NodeRouter      NodeType = 3  // router
	NodeRNIC        NodeType = 4  // RNIC
	NodeUSNIC       NodeType = 5  // usNIC
	NodeUSNICUDP    NodeType = 6  // usNIC UDP
	NodeUnspecified NodeType = 7  // unspecified
)

// PortState is a port's logical state (enum ib_port_state, the number in
// sysfs ports/N/state, libibverbs' enum ibv_port_state). Its String is the
// name the kernel prints after the number ("ACTIVE").
type PortState int

// The port states.
const (
	PortNOP         PortState = 0 // NOP
	PortDown        PortState = 1 // DOWN
	PortInit        PortState = 2 // INIT
	PortArmed       PortState = 3 // ARMED
	PortActive      PortState = 4 // ACTIVE
	PortActiveDefer PortState = 5 // ACTIVE_DEFER
)

// PhysState is a port's physical state (enum ib_port_phys_state, the
// number in sysfs ports/N/phys_state). Its String is the name the kernel
// prints after the number ("LinkUp").
type PhysState int

// The physical port states.
const (
	PhysSleep                     PhysState = 1 // Sleep
	PhysPolling                   PhysState = 2 // Polling
	PhysDisabled                  PhysState = 3 // Disabled
	PhysPortConfigurationTraining PhysState = 4 // PortConfigurationTraining
	PhysLinkUp                    PhysState = 5 // LinkUp
	PhysLinkErrorRecovery         PhysState = 6 // LinkErrorRecovery
	PhysPhyTest                   PhysState = 7 // Phy Test
)

// LinkLayer is a port's link layer (IB_LINK_LAYER_*, libibverbs'
// IBV_LINK_LAYER_*). Its String is the name the kernel prints in sysfs
// ports/N/link_layer, except that an unspecified layer, which sysfs shows
// as "Unknown", is "Unspecified".
type LinkLayer int

// The link layers.
const (
	LinkLayerUnspecified LinkLayer = 0 // Unspecified
	LinkLayerInfiniBand  LinkLayer = 1 // InfiniBand
	LinkLayerEthernet    LinkLayer = 2 // Ethernet
)

// ParseLinkLayer parses the text of sysfs ports/N/link_layer (the
// kernel's show_port_link_layer in drivers/infiniband/core/sysfs.c prints
// "InfiniBand", "Ethernet" or "Unknown"). ok is false for any other text.
func ParseLinkLayer(s string) (l LinkLayer, ok bool) {
	switch s {
	case "InfiniBand":
		return LinkLayerInfiniBand, true
	case "Ethernet":
		return LinkLayerEthernet, true
	case "Unknown":
		return LinkLayerUnspecified, true
	}
	return LinkLayerUnspecified, false
}

// GIDType is the type of a GID table entry (enum ib_uverbs_gid_type,
// IB_UVERBS_GID_TYPE_*; libibverbs' enum ibv_gid_type): the Type of
// uverbs.GIDEntry, which the kernel's QUERY_GID_TABLE ioctl reports, and of
// sysfs.GIDEntry, which [ParseGIDType] decides from sysfs text.
type GIDType uint32

// The GID types: the numbers of enum ib_uverbs_gid_type, spelt out rather
// than taken from abi.IB_UVERBS_GID_TYPE_* (this package cannot import
// abi); a test checks each against abi's.
const (
	GIDTypeIB     GIDType = 0
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

// String returns the name libibverbs and the kernel use for the value
// ("IB", "RoCE v1", "RoCE v2"), or "GIDType(N)" for another number.
func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("GIDType(%d)", uint32(t))
}

// ParseGIDType parses the text of sysfs ports/N/gid_attrs/types/M, given
// the port's link layer (ports/N/link_layer). The kernel prints "RoCE v2"
// for a RoCE v2 GID and "IB/RoCE v1" for both an InfiniBand GID and a RoCE
// v1 GID (gid_type_str in drivers/infiniband/core/cache.c); like
// libibverbs' sysfs fallback (query_sysfs_gid_entry in
// libibverbs/cmd_device.c), the link layer tells them apart: "IB/RoCE v1"
// is GIDTypeRoCEv1 on an Ethernet port and GIDTypeIB otherwise (an
// unspecified link layer is InfiniBand). ok is false for any other text.
func ParseGIDType(s string, ll LinkLayer) (t GIDType, ok bool) {
	switch s {
	case "IB/RoCE v1":
		if ll == LinkLayerEthernet {
			return GIDTypeRoCEv1, true
		}
		return GIDTypeIB, true
	case "RoCE v2":
		return GIDTypeRoCEv2, true
	}
	return GIDTypeIB, false
}

// DriverID names a device's kernel driver (enum rdma_driver_id in
// include/uapi/rdma/ib_user_ioctl_verbs.h): the uverbs ioctl header
// carries it, RDMA netlink reports it, and driver-specific attributes
// (mlx5's flow actions, counters) depend on it.
type DriverID uint32

// The drivers the library knows by name: the numbers of enum
// rdma_driver_id, spelt out rather than taken from abi.RDMA_DRIVER_*
// (abi builds its errors on this package's Error, so this package cannot
// import abi); a test checks each against abi's.
const (
	DriverUnknown   DriverID = 0
	DriverMLX5      DriverID = 1
	DriverMLX4      DriverID = 2
	DriverCXGB3     DriverID = 3
	DriverCXGB4     DriverID = 4
	DriverMTHCA     DriverID = 5
	DriverBNXTRE    DriverID = 6
	DriverOCRDMA    DriverID = 7
	DriverNES       DriverID = 8
	DriverIRDMA     DriverID = 9
	DriverVMWPVRDMA DriverID = 10
	DriverQEDR      DriverID = 11
	DriverHNS       DriverID = 12
	DriverUSNIC     DriverID = 13
	DriverRXE       DriverID = 14
	DriverHFI1      DriverID = 15
	DriverQIB       DriverID = 16
	DriverEFA       DriverID = 17
	DriverSIW       DriverID = 18
	DriverERDMA     DriverID = 19
	DriverMANA      DriverID = 20
)

var driverNames = [...]string{
	DriverUnknown:   "unknown",
	DriverMLX5:      "mlx5",
	DriverMLX4:      "mlx4",
	DriverCXGB3:     "cxgb3",
	DriverCXGB4:     "cxgb4",
	DriverMTHCA:     "mthca",
	DriverBNXTRE:    "bnxt_re",
	DriverOCRDMA:    "ocrdma",
	DriverNES:       "nes",
	DriverIRDMA:     "irdma",
	DriverVMWPVRDMA: "vmw_pvrdma",
	DriverQEDR:      "qedr",
	DriverHNS:       "hns",
	DriverUSNIC:     "usnic",
	DriverRXE:       "rxe",
	DriverHFI1:      "hfi1",
	DriverQIB:       "qib",
	DriverEFA:       "efa",
	DriverSIW:       "siw",
	DriverERDMA:     "erdma",
	DriverMANA:      "mana",
}

// String returns the driver's short name as rdma-core's providers and the
// kernel's modules spell it ("mlx5", "rxe"), or "driver id N" for a number
// the library does not know.
func (d DriverID) String() string {
	if int(d) < len(driverNames) && driverNames[d] != "" {
		return driverNames[d]
	}
	return "driver id " + strconv.FormatUint(uint64(d), 10)
}

// GUID is a 64-bit InfiniBand GUID (node GUID, system image GUID, port
// GUID) as a number: the first group of the sysfs text is the most
// significant. sysfs prints it as four 16-bit groups,
// "%04x:%04x:%04x:%04x" (node_guid, sys_image_guid); ibstat prints it as
// 0x%016x; netlink carries it as a host-order u64 with the same value.
type GUID uint64

// String returns the sysfs form, "acad:e8ff:fe37:5f42".
func (g GUID) String() string {
	b := make([]byte, 0, 19)
	for i := 3; i >= 0; i-- {
		b = appendHex4(b, uint16(g>>(16*i)))
		if i > 0 {
			b = append(b, ':')
		}
	}
	return string(b)
}

// Format implements fmt.Formatter: the number verbs (x, X, d, o, b)
// format the GUID as the number it is, so "0x%016x" prints ibstat's form;
// s, v and q format [GUID.String].
func (g GUID) Format(f fmt.State, verb rune) {
	switch verb {
	case 's', 'v', 'q':
		fmt.Fprintf(f, fmt.FormatString(f, verb), g.String())
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), uint64(g))
	}
}

// MarshalText returns the sysfs form.
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText parses the sysfs form (see [ParseGUID]).
func (g *GUID) UnmarshalText(b []byte) error {
	v, err := ParseGUID(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// ParseGUID parses a GUID in the sysfs form: four colon-separated groups
// of one to four hex digits ("%04x:%04x:%04x:%04x" prints exactly four;
// shorter groups are accepted as libibumad's parser accepts them).
func ParseGUID(s string) (GUID, error) {
	var groups [4]uint16
	if !parseGroups(s, groups[:]) {
		return 0, fmt.Errorf("invalid GUID %q: want four colon-separated 16-bit hex groups (\"%%04x:%%04x:%%04x:%%04x\")", s)
	}
	var g GUID
	for _, v := range groups {
		g = g<<16 | GUID(v)
	}
	return g, nil
}

// GID is a 128-bit InfiniBand/RoCE global identifier in network byte
// order: the 16 bytes of an IPv6 address (union ibv_gid, the kernel's
// union ib_gid).
type GID [16]byte

// String returns the GID the way glibc's inet_ntop(AF_INET6) formats it,
// which is what ibv_devinfo prints for RoCE GIDs: the longest run of two or
// more zero groups becomes "::", and IPv4-mapped and IPv4-compatible
// addresses end in dotted decimal ("::ffff:10.77.0.1"). [GID.Hex] is the
// sysfs form.
func (g GID) String() string { return string(g.appendNtop(make([]byte, 0, 46))) }

// Hex returns the sysfs form: eight groups of four hex digits, never
// compressed ("fe80:0000:0000:0000:acad:e8ff:fe37:5f42", the kernel's
// %pI6). ibstatus prints GIDs this way, and ibv_devinfo on InfiniBand.
func (g GID) Hex() string {
	b := make([]byte, 0, 39)
	for i := 0; i < 8; i++ {
		if i > 0 {
			b = append(b, ':')
		}
		b = appendHex4(b, binary.BigEndian.Uint16(g[2*i:]))
	}
	return string(b)
}

// Addr returns the GID as an IPv6 address.
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g) }

// IsZero reports whether every byte is zero, which is how sysfs and the
// kernel's GID table show an empty slot.
func (g GID) IsZero() bool { return g == GID{} }

// Prefix returns the upper 64 bits (the subnet prefix, libibumad's
// gid_prefix, as a host-order number).
func (g GID) Prefix() uint64 { return binary.BigEndian.Uint64(g[:8]) }

// InterfaceID returns the lower 64 bits (for GID 0 of an InfiniBand port
// the port GUID, libibumad's port_guid, as a host-order number).
func (g GID) InterfaceID() uint64 { return binary.BigEndian.Uint64(g[8:]) }

// MarshalText returns the sysfs form ([GID.Hex]).
func (g GID) MarshalText() ([]byte, error) { return []byte(g.Hex()), nil }

// UnmarshalText parses a GID (see [ParseGID]).
func (g *GID) UnmarshalText(b []byte) error {
	v, err := ParseGID(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// ParseGID parses a GID in the sysfs form (eight colon-separated groups
// of one to four hex digits) or as any IPv6 address ("fe80::1",
// "::ffff:10.0.0.1").
func ParseGID(s string) (GID, error) {
	var groups [8]uint16
	if strings.Count(s, ":") == 7 && !strings.Contains(s, "::") && parseGroups(s, groups[:]) {
		var g GID
		for i, v := range groups {
			binary.BigEndian.PutUint16(g[2*i:], v)
		}
		return g, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return GID{}, fmt.Errorf("invalid GID %q: want eight colon-separated 16-bit hex groups or an IPv6 address", s)
	}
	return a.As16(), nil
}

// appendNtop is the algorithm of glibc's inet_ntop6 (from BIND).
func (g GID) appendNtop(b []byte) []byte {
	var w [8]uint16
	for i := range w {
		w[i] = binary.BigEndian.Uint16(g[2*i:])
	}
	bestBase, bestLen := -1, 0
	curBase, curLen := -1, 0
	for i := 0; i < 8; i++ {
		if w[i] == 0 {
			if curBase == -1 {
				curBase, curLen = i, 1
			} else {
				curLen++
			}
			continue
		}
		if curBase != -1 {
			if bestBase == -1 || curLen > bestLen {
				bestBase, bestLen = curBase, curLen
			}
			curBase = -1
		}
	}
	if curBase != -1 && (bestBase == -1 || curLen > bestLen) {
		bestBase, bestLen = curBase, curLen
	}
	if bestBase != -1 && bestLen < 2 {
		bestBase = -1
	}
	for i := 0; i < 8; i++ {
		if bestBase != -1 && i >= bestBase && i < bestBase+bestLen {
			if i == bestBase {
				b = append(b, ':')
			}
			continue
		}
		if i != 0 {
			b = append(b, ':')
		}
		if i == 6 && bestBase == 0 && (bestLen == 6 || (bestLen == 7 && w[7] != 1) || (bestLen == 5 && w[5] == 0xffff)) {
			for j := 12; j < 16; j++ {
				if j > 12 {
					b = append(b, '.')
				}
				b = strconv.AppendUint(b, uint64(g[j]), 10)
			}
			return b
		}
		b = strconv.AppendUint(b, uint64(w[i]), 16)
	}
	if bestBase != -1 && bestBase+bestLen == 8 {
		b = append(b, ':')
	}
	return b
}

const hexDigits = "0123456789abcdef"

func appendHex4(b []byte, v uint16) []byte {
	return append(b, hexDigits[v>>12], hexDigits[v>>8&15], hexDigits[v>>4&15], hexDigits[v&15])
}

// parseGroups parses len(out) colon-separated groups of one to four hex
// digits.
func parseGroups(s string, out []uint16) bool {
	for i := range out {
		j := 0
		var v uint16
		for j < len(s) && j < 4 && isHex(s[j]) {
			v = v<<4 | uint16(unhex(s[j]))
			j++
		}
		if j == 0 {
			return false
		}
		out[i], s = v, s[j:]
		if i < len(out)-1 {
			if len(s) == 0 || s[0] != ':' {
				return false
			}
			s = s[1:]
		}
	}
	return s == ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
