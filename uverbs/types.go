package uverbs

import "fmt"

// NodeType is the node type of a device (enum ibv_node_type; sysfs
// node_type).
type NodeType int

// The node types.
const (
	NodeUnknown     NodeType = -1
	NodeCA          NodeType = 1
	NodeSwitch      NodeType = 2
	NodeRouter      NodeType = 3
	NodeRNIC        NodeType = 4
	NodeUSNIC       NodeType = 5
	NodeUSNICUDP    NodeType = 6
	NodeUnspecified NodeType = 7
)

// String returns the name libibverbs and the kernel use for the value.
func (t NodeType) String() string {
	switch t {
	case NodeCA:
		return "CA"
	case NodeSwitch:
		return "switch"
	case NodeRouter:
		return "router"
	case NodeRNIC:
		return "RNIC"
	case NodeUSNIC:
		return "usNIC"
	case NodeUSNICUDP:
		return "usNIC UDP"
	case NodeUnspecified:
		return "unspecified"
	}
	return "unknown"
}

// Transport is a device's transport (enum ibv_transport_type), derived from
// its node type the way libibverbs does.
type Transport int

// The transports, with libibverbs' values.
const (
	TransportUnknown     Transport = -1
	TransportIB          Transport = 0
	TransportIWARP       Transport = 1
	TransportUSNIC       Transport = 2
	TransportUSNICUDP    Transport = 3
	TransportUnspecified Transport = 4
)

// Transport returns the transport libibverbs reports for node type t.
func (t NodeType) Transport() Transport {
	switch t {
	case NodeCA, NodeSwitch, NodeRouter:
		return TransportIB
	case NodeRNIC:
		return TransportIWARP
	case NodeUSNIC:
		return TransportUSNIC
	case NodeUSNICUDP:
		return TransportUSNICUDP
	case NodeUnspecified:
		return TransportUnspecified
	}
	return TransportUnknown
}

// String returns the name libibverbs and the kernel use for the value.
func (t Transport) String() string {
	switch t {
	case TransportIB:
		return "InfiniBand"
	case TransportIWARP:
		return "iWARP"
	case TransportUSNIC:
		return "usNIC"
	case TransportUSNICUDP:
		return "usNIC UDP"
	case TransportUnspecified:
		return "unspecified"
	}
	return "invalid transport"
}

// PortState is a port's logical state (enum ibv_port_state).
type PortState uint8

// The port states.
const (
	PortNOP         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

// String returns the name libibverbs and the kernel use for the value.
func (s PortState) String() string {
	switch s {
	case PortNOP:
		return "NOP"
	case PortDown:
		return "DOWN"
	case PortInit:
		return "INIT"
	case PortArmed:
		return "ARMED"
	case PortActive:
		return "ACTIVE"
	case PortActiveDefer:
		return "ACTIVE_DEFER"
	}
	return fmt.Sprintf("PortState(%d)", uint8(s))
}

// MTU is an IB MTU enumerator (enum ibv_mtu): 1 = 256 bytes … 5 = 4096.
type MTU uint8

// The MTUs.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the MTU in bytes, or 0 for an invalid value.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// String returns the name libibverbs and the kernel use for the value.
func (m MTU) String() string {
	if b := m.Bytes(); b != 0 {
		return fmt.Sprint(b)
	}
	return fmt.Sprintf("MTU(%d)", uint8(m))
}

// LinkLayer is a port's link layer (IBV_LINK_LAYER_*).
type LinkLayer uint8

// The link layers.
const (
	LinkLayerUnspecified LinkLayer = 0
	LinkLayerInfiniBand  LinkLayer = 1
	LinkLayerEthernet    LinkLayer = 2
)

// String returns the name libibverbs and the kernel use for the value.
func (l LinkLayer) String() string {
	switch l {
	case LinkLayerUnspecified:
		return "Unspecified"
	case LinkLayerInfiniBand:
		return "InfiniBand"
	case LinkLayerEthernet:
		return "Ethernet"
	}
	return "Unknown"
}

// AtomicCap is a device's atomic capability (enum ibv_atomic_cap).
type AtomicCap uint32

// The atomic capabilities.
const (
	AtomicNone AtomicCap = 0
	AtomicHCA  AtomicCap = 1
	AtomicGlob AtomicCap = 2
)

// String returns the name libibverbs and the kernel use for the value.
func (a AtomicCap) String() string {
	switch a {
	case AtomicNone:
		return "ATOMIC_NONE"
	case AtomicHCA:
		return "ATOMIC_HCA"
	case AtomicGlob:
		return "ATOMIC_GLOB"
	}
	return "invalid atomic capability"
}

// GIDType is the type of a GID table entry (IB_UVERBS_GID_TYPE_*).
type GIDType uint32

// The GID types.
const (
	GIDTypeIB     GIDType = 0
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

// String returns the name libibverbs and the kernel use for the value.
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

// GID is a 128-bit global identifier in network byte order (union ibv_gid).
type GID [16]byte

// String formats the GID the way inet_ntop(AF_INET6) of glibc does, which
// is what ibv_devinfo prints for RoCE v2 GIDs: the longest run of two or
// more zero groups becomes "::", and IPv4-mapped and IPv4-compatible
// addresses end in dotted decimal (::ffff:10.77.0.1).
func (g GID) String() string { return inetNtop6(g) }

// Hex formats the GID as eight colon-separated groups of four hex digits
// (fe80:0000:0000:0000:…), the sysfs and ibv_devinfo IB format.
func (g GID) Hex() string {
	b := make([]byte, 0, 39)
	const hex = "0123456789abcdef"
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, hex[g[i]>>4], hex[g[i]&15], hex[g[i+1]>>4], hex[g[i+1]&15])
	}
	return string(b)
}

// inetNtop6 is the algorithm of glibc's inet_ntop6 (from BIND).
func inetNtop6(g GID) string {
	var w [8]uint16
	for i := range w {
		w[i] = uint16(g[2*i])<<8 | uint16(g[2*i+1])
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
	b := make([]byte, 0, 46)
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
			b = fmt.Appendf(b, "%d.%d.%d.%d", g[12], g[13], g[14], g[15])
			return string(b)
		}
		b = fmt.Appendf(b, "%x", w[i])
	}
	if bestBase != -1 && bestBase+bestLen == 8 {
		b = append(b, ':')
	}
	return string(b)
}
