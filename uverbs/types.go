package uverbs

import (
	"fmt"

	"github.com/purerdma/rdma"
)

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

// transportOf returns the transport libibverbs reports for node type t
// (libibverbs' device.c, ibv_get_device_list: the node type decides it).
func transportOf(t rdma.NodeType) Transport {
	switch t {
	case rdma.NodeCA, rdma.NodeSwitch, rdma.NodeRouter:
		return TransportIB
	case rdma.NodeRNIC:
		return TransportIWARP
	case rdma.NodeUSNIC:
		return TransportUSNIC
	case rdma.NodeUSNICUDP:
		return TransportUSNICUDP
	case rdma.NodeUnspecified:
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

// maxPort is the highest port number the verbs ABI carries (a u8 in
// struct ib_uverbs_qp_dest, ib_uverbs_ah_attr and the QUERY_PORT
// attribute's users).
const maxPort = 255

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

// GIDType is the type of a GID table entry (IB_UVERBS_GID_TYPE_*), the
// root package's type, which sysfs.GIDEntry shares.
type GIDType = rdma.GIDType

// The GID types, the root package's.
const (
	GIDTypeIB     GIDType = rdma.GIDTypeIB
	GIDTypeRoCEv1 GIDType = rdma.GIDTypeRoCEv1
	GIDTypeRoCEv2 GIDType = rdma.GIDTypeRoCEv2
)
