package flow

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/internal/errs"
)

// SpecType is the type of a flow spec (the kernel's enum ib_flow_spec_type;
// rdma-core's enum ibv_flow_spec_type has the same values). The numbers are
// not in the UAPI headers; struct ib_uverbs_flow_spec_* in ib_user_verbs.h, enum ib_flow_spec_type in ib_verbs.h lists them.
type SpecType uint32

// The spec types the kernel accepts from userspace.
const (
	TypeEth   SpecType = 0x20 // IB_FLOW_SPEC_ETH
	TypeIPv4  SpecType = 0x30 // IB_FLOW_SPEC_IPV4
	TypeIPv6  SpecType = 0x31 // IB_FLOW_SPEC_IPV6
	TypeESP   SpecType = 0x34 // IB_FLOW_SPEC_ESP
	TypeTCP   SpecType = 0x40 // IB_FLOW_SPEC_TCP
	TypeUDP   SpecType = 0x41 // IB_FLOW_SPEC_UDP
	TypeVXLAN SpecType = 0x50 // IB_FLOW_SPEC_VXLAN_TUNNEL
	TypeGRE   SpecType = 0x51 // IB_FLOW_SPEC_GRE
	TypeMPLS  SpecType = 0x60 // IB_FLOW_SPEC_MPLS
	// TypeInner (IB_FLOW_SPEC_INNER) is OR'ed into a filter type to match
	// the inner (tunnelled) headers; the specs' Inner field sets it.
	TypeInner SpecType = 0x100

	TypeActionTag    SpecType = 0x1000 // IB_FLOW_SPEC_ACTION_TAG
	TypeActionDrop   SpecType = 0x1001 // IB_FLOW_SPEC_ACTION_DROP
	TypeActionHandle SpecType = 0x1002 // IB_FLOW_SPEC_ACTION_HANDLE
	TypeActionCount  SpecType = 0x1003 // IB_FLOW_SPEC_ACTION_COUNT
)

func typeName(t SpecType) (string, bool) {
	switch t {
	case TypeEth:
		return "eth", true
	case TypeIPv4:
		return "ipv4", true
	case TypeIPv6:
		return "ipv6", true
	case TypeESP:
		return "esp", true
	case TypeTCP:
		return "tcp", true
	case TypeUDP:
		return "udp", true
	case TypeVXLAN:
		return "vxlan", true
	case TypeGRE:
		return "gre", true
	case TypeMPLS:
		return "mpls", true
	case TypeActionTag:
		return "tag", true
	case TypeActionDrop:
		return "drop", true
	case TypeActionHandle:
		return "handle", true
	case TypeActionCount:
		return "count", true
	}
	return "", false
}

// String names the type ("eth", "inner udp", "count").
func (t SpecType) String() string {
	if n, ok := typeName(t); ok {
		return n
	}
	if t&TypeInner != 0 && t < TypeActionTag {
		if n, ok := typeName(t &^ TypeInner); ok {
			return "inner " + n
		}
	}
	return fmt.Sprintf("SpecType(%#x)", uint32(t))
}

// SpecHdrSize is sizeof(struct ib_uverbs_flow_spec_hdr): type u32, size u16,
// reserved u16.
const SpecHdrSize = 8

// A Spec is one flow spec: a filter (the values and masks of one protocol
// header) or an action. Specs serialize themselves to the kernel's format
// (struct ib_uverbs_flow_spec_*, <rdma/ib_user_verbs.h>): the header's type
// and size are computed, never set by the caller.
type Spec interface {
	// Type returns the spec's type as sent, TypeInner included.
	Type() SpecType
	// Len returns the length of the wire form, header included.
	Len() int
	// AppendBinary appends the wire form to b. The error wraps EINVAL
	// for values the kernel refuses (an IPv6 flow label or VXLAN VNI out
	// of range, an inner VXLAN spec, a count action without counters).
	AppendBinary(b []byte) ([]byte, error)
	// MarshalBinary returns the wire form.
	MarshalBinary() ([]byte, error)
}

func appendHdr(b []byte, t SpecType, size int) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(t))
	b = binary.LittleEndian.AppendUint16(b, uint16(size))
	return binary.LittleEndian.AppendUint16(b, 0)
}

func innerType(t SpecType, inner bool) SpecType {
	if inner {
		return t | TypeInner
	}
	return t
}

func specErr(t SpecType, format string, args ...any) error {
	return errs.New("encode "+t.String()+" spec", "", fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...))
}

// errNilSpec is the error of encoding a nil spec pointer.
func errNilSpec() error {
	return errs.New("encode flow spec", "", fmt.Errorf("nil spec: %w", syscall.EINVAL))
}

func marshal(s Spec) ([]byte, error) { return s.AppendBinary(make([]byte, 0, s.Len())) }

// MAC is an Ethernet address.
type MAC [6]byte

// String formats the address as 00:01:02:03:04:05.
func (m MAC) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// EthFilter is struct ib_uverbs_flow_eth_filter (16 bytes). EtherType and
// VLANTag are host-order values here and big-endian on the wire.
type EthFilter struct {
	DstMAC, SrcMAC MAC
	EtherType      uint16
	VLANTag        uint16
}

func (f *EthFilter) append(b []byte) []byte {
	b = append(b, f.DstMAC[:]...)
	b = append(b, f.SrcMAC[:]...)
	b = binary.BigEndian.AppendUint16(b, f.EtherType)
	return binary.BigEndian.AppendUint16(b, f.VLANTag)
}

func (f *EthFilter) decode(b []byte) {
	copy(f.DstMAC[:], b[0:6])
	copy(f.SrcMAC[:], b[6:12])
	f.EtherType = binary.BigEndian.Uint16(b[12:])
	f.VLANTag = binary.BigEndian.Uint16(b[14:])
}

// Eth matches the Ethernet header (IB_FLOW_SPEC_ETH, struct
// ib_uverbs_flow_spec_eth, 40 bytes): the fields whose Mask bits are set
// must equal Value's.
type Eth struct {
	Inner       bool
	Value, Mask EthFilter
}

// Type implements Spec.
func (s *Eth) Type() SpecType {
	if s == nil {
		return TypeEth
	}
	return innerType(TypeEth, s.Inner)
}

// Len implements Spec: 40.
func (s *Eth) Len() int { return SpecHdrSize + 2*16 }

// AppendBinary implements Spec.
func (s *Eth) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, s.Type(), s.Len())
	b = s.Value.append(b)
	return s.Mask.append(b), nil
}

// MarshalBinary implements Spec.
func (s *Eth) MarshalBinary() ([]byte, error) { return marshal(s) }

// IPv4Filter is struct ib_uverbs_flow_ipv4_filter (12 bytes), the full form
// with ttl and flags (rdma-core's plain IPv4 spec sends only the first 8
// bytes; the kernel accepts any multiple of 4). Addresses are in network
// order, as written (10.0.0.1 is {10, 0, 0, 1}).
type IPv4Filter struct {
	Src, Dst [4]byte
	Proto    uint8
	TOS      uint8
	TTL      uint8
	Flags    uint8
}

func (f *IPv4Filter) append(b []byte) []byte {
	b = append(b, f.Src[:]...)
	b = append(b, f.Dst[:]...)
	return append(b, f.Proto, f.TOS, f.TTL, f.Flags)
}

func (f *IPv4Filter) decode(b []byte) {
	copy(f.Src[:], b[0:4])
	copy(f.Dst[:], b[4:8])
	f.Proto, f.TOS, f.TTL, f.Flags = b[8], b[9], b[10], b[11]
}

// IPv4 matches the IPv4 header (IB_FLOW_SPEC_IPV4, struct
// ib_uverbs_flow_spec_ipv4, sent whole: 32 bytes).
type IPv4 struct {
	Inner       bool
	Value, Mask IPv4Filter
}

// Type implements Spec.
func (s *IPv4) Type() SpecType {
	if s == nil {
		return TypeIPv4
	}
	return innerType(TypeIPv4, s.Inner)
}

// Len implements Spec: 32.
func (s *IPv4) Len() int { return SpecHdrSize + 2*12 }

// AppendBinary implements Spec.
func (s *IPv4) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, s.Type(), s.Len())
	b = s.Value.append(b)
	return s.Mask.append(b), nil
}

// MarshalBinary implements Spec.
func (s *IPv4) MarshalBinary() ([]byte, error) { return marshal(s) }

// IPv6Filter is struct ib_uverbs_flow_ipv6_filter (40 bytes; the last is
// reserved and sent as 0). FlowLabel holds the 20-bit flow label.
type IPv6Filter struct {
	Src, Dst     [16]byte
	FlowLabel    uint32
	NextHdr      uint8
	TrafficClass uint8
	HopLimit     uint8
}

func (f *IPv6Filter) append(b []byte) []byte {
	b = append(b, f.Src[:]...)
	b = append(b, f.Dst[:]...)
	b = binary.BigEndian.AppendUint32(b, f.FlowLabel)
	return append(b, f.NextHdr, f.TrafficClass, f.HopLimit, 0)
}

func (f *IPv6Filter) decode(b []byte) {
	copy(f.Src[:], b[0:16])
	copy(f.Dst[:], b[16:32])
	f.FlowLabel = binary.BigEndian.Uint32(b[32:])
	f.NextHdr, f.TrafficClass, f.HopLimit = b[36], b[37], b[38]
}

// IPv6 matches the IPv6 header (IB_FLOW_SPEC_IPV6, struct
// ib_uverbs_flow_spec_ipv6, 88 bytes). Flow labels (value and mask) must
// be below 2^20.
type IPv6 struct {
	Inner       bool
	Value, Mask IPv6Filter
}

// Type implements Spec.
func (s *IPv6) Type() SpecType {
	if s == nil {
		return TypeIPv6
	}
	return innerType(TypeIPv6, s.Inner)
}

// Len implements Spec: 88.
func (s *IPv6) Len() int { return SpecHdrSize + 2*40 }

// AppendBinary implements Spec.
func (s *IPv6) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	if s.Value.FlowLabel >= 1<<20 || s.Mask.FlowLabel >= 1<<20 {
		return b, specErr(s.Type(), "flow label %#x (mask %#x) does not fit in 20 bits", s.Value.FlowLabel, s.Mask.FlowLabel)
	}
	b = appendHdr(b, s.Type(), s.Len())
	b = s.Value.append(b)
	return s.Mask.append(b), nil
}

// MarshalBinary implements Spec.
func (s *IPv6) MarshalBinary() ([]byte, error) { return marshal(s) }

// PortFilter is struct ib_uverbs_flow_tcp_udp_filter (4 bytes): the
// destination port first, both big-endian on the wire.
type PortFilter struct {
	DstPort, SrcPort uint16
}

func (f *PortFilter) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, f.DstPort)
	return binary.BigEndian.AppendUint16(b, f.SrcPort)
}

func (f *PortFilter) decode(b []byte) {
	f.DstPort = binary.BigEndian.Uint16(b[0:])
	f.SrcPort = binary.BigEndian.Uint16(b[2:])
}

// TCP matches the TCP ports (IB_FLOW_SPEC_TCP, struct
// ib_uverbs_flow_spec_tcp_udp, 16 bytes).
type TCP struct {
	Inner       bool
	Value, Mask PortFilter
}

// Type implements Spec.
func (s *TCP) Type() SpecType {
	if s == nil {
		return TypeTCP
	}
	return innerType(TypeTCP, s.Inner)
}

// Len implements Spec: 16.
func (s *TCP) Len() int { return SpecHdrSize + 2*4 }

// AppendBinary implements Spec.
func (s *TCP) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, s.Type(), s.Len())
	b = s.Value.append(b)
	return s.Mask.append(b), nil
}

// MarshalBinary implements Spec.
func (s *TCP) MarshalBinary() ([]byte, error) { return marshal(s) }

// UDP matches the UDP ports (IB_FLOW_SPEC_UDP, 16 bytes).
type UDP struct {
	Inner       bool
	Value, Mask PortFilter
}

// Type implements Spec.
func (s *UDP) Type() SpecType {
	if s == nil {
		return TypeUDP
	}
	return innerType(TypeUDP, s.Inner)
}

// Len implements Spec: 16.
func (s *UDP) Len() int { return SpecHdrSize + 2*4 }

// AppendBinary implements Spec.
func (s *UDP) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, s.Type(), s.Len())
	b = s.Value.append(b)
	return s.Mask.append(b), nil
}

// MarshalBinary implements Spec.
func (s *UDP) MarshalBinary() ([]byte, error) { return marshal(s) }

// VXLAN matches the VXLAN network identifier (IB_FLOW_SPEC_VXLAN_TUNNEL,
// struct ib_uverbs_flow_spec_tunnel, 16 bytes). VNI and its mask must be
// below 2^24. There is no inner VXLAN spec (the kernel refuses it).
type VXLAN struct {
	VNI, Mask uint32
}

// Type implements Spec.
func (s *VXLAN) Type() SpecType { return TypeVXLAN }

// Len implements Spec: 16.
func (s *VXLAN) Len() int { return SpecHdrSize + 2*4 }

// AppendBinary implements Spec.
func (s *VXLAN) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	if s.VNI >= 1<<24 || s.Mask >= 1<<24 {
		return b, specErr(TypeVXLAN, "VNI %#x (mask %#x) does not fit in 24 bits", s.VNI, s.Mask)
	}
	b = appendHdr(b, TypeVXLAN, s.Len())
	b = binary.BigEndian.AppendUint32(b, s.VNI)
	return binary.BigEndian.AppendUint32(b, s.Mask), nil
}

// MarshalBinary implements Spec.
func (s *VXLAN) MarshalBinary() ([]byte, error) { return marshal(s) }

// GREFilter is struct ib_uverbs_flow_gre_filter (8 bytes): CKsRes0Ver is
// the first 16 bits of the GRE header (C, K, S bits, version), Protocol
// the protocol type, Key the key; big-endian on the wire.
type GREFilter struct {
	CKsRes0Ver uint16
	Protocol   uint16
	Key        uint32
}

func (f *GREFilter) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, f.CKsRes0Ver)
	b = binary.BigEndian.AppendUint16(b, f.Protocol)
	return binary.BigEndian.AppendUint32(b, f.Key)
}

func (f *GREFilter) decode(b []byte) {
	f.CKsRes0Ver = binary.BigEndian.Uint16(b[0:])
	f.Protocol = binary.BigEndian.Uint16(b[2:])
	f.Key = binary.BigEndian.Uint32(b[4:])
}

// GRE matches the GRE header (IB_FLOW_SPEC_GRE, struct
// ib_uverbs_flow_spec_gre, 24 bytes).
type GRE struct {
	Inner       bool
	Value, Mask GREFilter
}

// Type implements Spec.
func (s *GRE) Type() SpecType {
	if s == nil {
		return TypeGRE
	}
	return innerType(TypeGRE, s.Inner)
}

// Len implements Spec: 24.
func (s *GRE) Len() int { return SpecHdrSize + 2*8 }

// AppendBinary implements Spec.
func (s *GRE) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, s.Type(), s.Len())
	b = s.Value.append(b)
	return s.Mask.append(b), nil
}

// MarshalBinary implements Spec.
func (s *GRE) MarshalBinary() ([]byte, error) { return marshal(s) }

// MPLS matches an MPLS label stack entry (IB_FLOW_SPEC_MPLS, struct
// ib_uverbs_flow_spec_mpls, 16 bytes). Label is the whole 32-bit entry:
// label in bits 31–12, traffic class 11–9, bottom of stack 8, TTL 7–0 (as
// it appears on the wire, big-endian).
type MPLS struct {
	Inner       bool
	Label, Mask uint32
}

// Type implements Spec.
func (s *MPLS) Type() SpecType {
	if s == nil {
		return TypeMPLS
	}
	return innerType(TypeMPLS, s.Inner)
}

// Len implements Spec: 16.
func (s *MPLS) Len() int { return SpecHdrSize + 2*4 }

// AppendBinary implements Spec.
func (s *MPLS) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, s.Type(), s.Len())
	b = binary.BigEndian.AppendUint32(b, s.Label)
	return binary.BigEndian.AppendUint32(b, s.Mask), nil
}

// MarshalBinary implements Spec.
func (s *MPLS) MarshalBinary() ([]byte, error) { return marshal(s) }

// ESPFilter is struct ib_uverbs_flow_spec_esp_filter (8 bytes). The UAPI
// declares spi and seq as host-order __u32, and so they are sent.
type ESPFilter struct {
	SPI, Seq uint32
}

// ESP matches the IPsec ESP header (IB_FLOW_SPEC_ESP, struct
// ib_uverbs_flow_spec_esp, 24 bytes). mlx5 refuses it (EOPNOTSUPP) in
// verbs flows.
type ESP struct {
	Inner       bool
	Value, Mask ESPFilter
}

// Type implements Spec.
func (s *ESP) Type() SpecType {
	if s == nil {
		return TypeESP
	}
	return innerType(TypeESP, s.Inner)
}

// Len implements Spec: 24.
func (s *ESP) Len() int { return SpecHdrSize + 2*8 }

// AppendBinary implements Spec.
func (s *ESP) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, s.Type(), s.Len())
	for _, v := range []uint32{s.Value.SPI, s.Value.Seq, s.Mask.SPI, s.Mask.Seq} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b, nil
}

// MarshalBinary implements Spec.
func (s *ESP) MarshalBinary() ([]byte, error) { return marshal(s) }

// Tag marks matching packets with a flow tag reported in their completions
// (IB_FLOW_SPEC_ACTION_TAG, struct ib_uverbs_flow_spec_action_tag, 16
// bytes). mlx5 takes tags below 2^24 and none on ALL_DEFAULT or MC_DEFAULT
// flows.
type Tag struct {
	ID uint32
}

// Type implements Spec.
func (s *Tag) Type() SpecType { return TypeActionTag }

// Len implements Spec: 16.
func (s *Tag) Len() int { return 16 }

// AppendBinary implements Spec.
func (s *Tag) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, TypeActionTag, 16)
	b = binary.LittleEndian.AppendUint32(b, s.ID)
	return binary.LittleEndian.AppendUint32(b, 0), nil
}

// MarshalBinary implements Spec.
func (s *Tag) MarshalBinary() ([]byte, error) { return marshal(s) }

// Drop drops matching packets (IB_FLOW_SPEC_ACTION_DROP, the 8-byte
// header alone). With a count action the packets are still counted.
type Drop struct{}

// Type implements Spec.
func (s *Drop) Type() SpecType { return TypeActionDrop }

// Len implements Spec: 8.
func (s *Drop) Len() int { return SpecHdrSize }

// AppendBinary implements Spec.
func (s *Drop) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	return appendHdr(b, TypeActionDrop, SpecHdrSize), nil
}

// MarshalBinary implements Spec.
func (s *Drop) MarshalBinary() ([]byte, error) { return marshal(s) }

// Handle applies a flow action object (UVERBS_OBJECT_FLOW_ACTION, such as
// an ESP or a driver's modify-header action) by its kernel handle
// (IB_FLOW_SPEC_ACTION_HANDLE, struct ib_uverbs_flow_spec_action_handle,
// 16 bytes). This package does not create flow action objects.
type Handle struct {
	Handle uint32
}

// Type implements Spec.
func (s *Handle) Type() SpecType { return TypeActionHandle }

// Len implements Spec: 16.
func (s *Handle) Len() int { return 16 }

// AppendBinary implements Spec.
func (s *Handle) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, TypeActionHandle, 16)
	b = binary.LittleEndian.AppendUint32(b, s.Handle)
	return binary.LittleEndian.AppendUint32(b, 0), nil
}

// MarshalBinary implements Spec.
func (s *Handle) MarshalBinary() ([]byte, error) { return marshal(s) }

// Count counts matching packets and bytes in a counters object
// (IB_FLOW_SPEC_ACTION_COUNT, struct ib_uverbs_flow_spec_action_count, 16
// bytes; rdma-core's struct ibv_flow_spec_counter_action). At most one per
// flow.
//
// Create needs Counters: binding a counters object sends, on mlx5, its
// counter points as driver data (see package counters). Handle is what a
// decoded spec carries (the kernel handle, Counters nil); it is encoded
// when Counters is nil.
type Count struct {
	Counters *counters.Object
	Handle   uint32
}

// Type implements Spec.
func (s *Count) Type() SpecType { return TypeActionCount }

// Len implements Spec: 16.
func (s *Count) Len() int { return 16 }

func (s *Count) handle() uint32 {
	if s.Counters != nil {
		return s.Counters.Handle()
	}
	return s.Handle
}

// AppendBinary implements Spec.
func (s *Count) AppendBinary(b []byte) ([]byte, error) {
	if s == nil {
		return b, errNilSpec()
	}
	b = appendHdr(b, TypeActionCount, 16)
	b = binary.LittleEndian.AppendUint32(b, s.handle())
	return binary.LittleEndian.AppendUint32(b, 0), nil
}

// MarshalBinary implements Spec.
func (s *Count) MarshalBinary() ([]byte, error) { return marshal(s) }

// Interface checks.
var (
	_ Spec = (*Eth)(nil)
	_ Spec = (*IPv4)(nil)
	_ Spec = (*IPv6)(nil)
	_ Spec = (*TCP)(nil)
	_ Spec = (*UDP)(nil)
	_ Spec = (*VXLAN)(nil)
	_ Spec = (*GRE)(nil)
	_ Spec = (*MPLS)(nil)
	_ Spec = (*ESP)(nil)
	_ Spec = (*Tag)(nil)
	_ Spec = (*Drop)(nil)
	_ Spec = (*Handle)(nil)
	_ Spec = (*Count)(nil)
)
