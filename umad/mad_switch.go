package umad

import "encoding/binary"

// The switch attributes the routing tools read (infiniband-diags' ibroute
// and ibtracert): SwitchInfo and the linear and multicast forwarding
// tables, libibmad's IB_ATTR_SWITCH_INFO, IB_ATTR_LINEARFORWTBL and
// IB_ATTR_MULTICASTFORWTBL (IBA 14.2.5.4, 14.2.5.10, 14.2.5.12).

// SwitchInfoSize is the size of the SwitchInfo attribute up to and
// including MulticastFDBTop (libibmad's IB_SW_MCAST_FDB_TOP_F).
const SwitchInfoSize = 20

// SwitchInfo is the SMP attribute SwitchInfo (IBA 14.2.5.4; libibmad
// IB_SW_*_F, decoded by mad_decode_field and dumped by
// mad_dump_switchinfo). Bit offsets, most significant bit first:
//
//	0 LinearFDBCap (16)       16 RandomFDBCap (16)
//	32 MulticastFDBCap (16)   48 LinearFDBTop (16)
//	64 DefaultPort (8)        72 DefaultMulticastPrimaryPort (8)
//	80 DefaultMulticastNotPrimaryPort (8)
//	88 LifeTimeValue (5)      93 PortStateChange (1)
//	94 OptimizedSLtoVLMapping (2)  96 LIDsPerPort (16)
//	112 PartitionEnforcementCap (16)  128 InboundEnforcementCap (1)
//	129 OutboundEnforcementCap (1)    130 FilterRawInboundCap (1)
//	131 FilterRawOutboundCap (1)      132 EnhancedPort0 (1)
//	144 MulticastFDBTop (16)
//
// Bits 133 to 143 are reserved.
type SwitchInfo struct {
	// LinearFDBCap is the number of entries the linear forwarding
	// table supports (IB_SW_LINEAR_FDB_CAP_F).
	LinearFDBCap uint16
	// RandomFDBCap is the random forwarding table's (IB_SW_RANDOM_FDB_CAP_F).
	RandomFDBCap uint16
	// MulticastFDBCap is the number of multicast LIDs the multicast
	// forwarding table supports, from 0xC000 (IB_SW_MCAST_FDB_CAP_F).
	MulticastFDBCap uint16
	// LinearFDBTop is the highest valid LID of the linear forwarding
	// table (IB_SW_LINEAR_FDB_TOP_F).
	LinearFDBTop uint16
	// DefaultPort is the port a packet to an unknown LID goes out
	// (random forwarding only).
	DefaultPort uint8
	// DefaultMulticastPrimaryPort and DefaultMulticastNotPrimaryPort
	// are the ports of multicast packets no table entry names.
	DefaultMulticastPrimaryPort    uint8
	DefaultMulticastNotPrimaryPort uint8
	// LifeTimeValue is the 5-bit packet lifetime.
	LifeTimeValue uint8
	// PortStateChange is set when a port's state changed (1 bit).
	PortStateChange uint8
	// OptimizedSLtoVLMapping is the 2-bit
	// OptimizedSLtoVLMappingProgramming capability.
	OptimizedSLtoVLMapping uint8
	// LIDsPerPort is the number of LID/LMC combinations a port may have.
	LIDsPerPort uint16
	// PartitionEnforcementCap is the number of P_Key entries of the
	// external ports.
	PartitionEnforcementCap uint16
	// The enforcement capabilities and EnhancedPort0, one bit each
	// (IB_SW_ENHANCED_PORT0_F: port 0 has a PortInfo of its own).
	InboundEnforcementCap  bool
	OutboundEnforcementCap bool
	FilterRawInboundCap    bool
	FilterRawOutboundCap   bool
	EnhancedPort0          bool
	// MulticastFDBTop is the highest valid multicast LID, 0 when the
	// switch does not report it (IB_SW_MCAST_FDB_TOP_F).
	MulticastFDBTop uint16
}

var errSwitchInfoShort = madError("SwitchInfo needs 20 bytes", &ErrShortMAD)

// AttributeID returns SMAttrSwitchInfo.
func (s *SwitchInfo) AttributeID() AttrID {
	if s == nil {
		return 0
	}
	return SMAttrSwitchInfo
}

func bit(v bool, shift uint) byte {
	if v {
		return 1 << shift
	}
	return 0
}

// Append appends the 20-byte attribute to b; fields wider than their
// bits are truncated (Validate reports them).
func (s *SwitchInfo) Append(b []byte) []byte {
	if s == nil {
		return b
	}
	b, t := grow(b, SwitchInfoSize)
	binary.BigEndian.PutUint16(t[0:2], s.LinearFDBCap)
	binary.BigEndian.PutUint16(t[2:4], s.RandomFDBCap)
	binary.BigEndian.PutUint16(t[4:6], s.MulticastFDBCap)
	binary.BigEndian.PutUint16(t[6:8], s.LinearFDBTop)
	t[8] = s.DefaultPort
	t[9] = s.DefaultMulticastPrimaryPort
	t[10] = s.DefaultMulticastNotPrimaryPort
	t[11] = s.LifeTimeValue<<3 | (s.PortStateChange&1)<<2 | s.OptimizedSLtoVLMapping&3
	binary.BigEndian.PutUint16(t[12:14], s.LIDsPerPort)
	binary.BigEndian.PutUint16(t[14:16], s.PartitionEnforcementCap)
	t[16] = bit(s.InboundEnforcementCap, 7) | bit(s.OutboundEnforcementCap, 6) |
		bit(s.FilterRawInboundCap, 5) | bit(s.FilterRawOutboundCap, 4) | bit(s.EnhancedPort0, 3)
	binary.BigEndian.PutUint16(t[18:20], s.MulticastFDBTop)
	return b
}

// Decode sets s from the first 20 bytes of b (an SMP's Data, say),
// ignoring the reserved bits. It returns an error wrapping ErrShortMAD
// when b is shorter.
func (s *SwitchInfo) Decode(b []byte) error {
	if s == nil {
		return errNil("SwitchInfo.Decode")
	}
	if len(b) < SwitchInfoSize {
		return errSwitchInfoShort
	}
	*s = SwitchInfo{
		LinearFDBCap:                   binary.BigEndian.Uint16(b[0:2]),
		RandomFDBCap:                   binary.BigEndian.Uint16(b[2:4]),
		MulticastFDBCap:                binary.BigEndian.Uint16(b[4:6]),
		LinearFDBTop:                   binary.BigEndian.Uint16(b[6:8]),
		DefaultPort:                    b[8],
		DefaultMulticastPrimaryPort:    b[9],
		DefaultMulticastNotPrimaryPort: b[10],
		LifeTimeValue:                  b[11] >> 3,
		PortStateChange:                b[11] >> 2 & 1,
		OptimizedSLtoVLMapping:         b[11] & 3,
		LIDsPerPort:                    binary.BigEndian.Uint16(b[12:14]),
		PartitionEnforcementCap:        binary.BigEndian.Uint16(b[14:16]),
		InboundEnforcementCap:          b[16]&0x80 != 0,
		OutboundEnforcementCap:         b[16]&0x40 != 0,
		FilterRawInboundCap:            b[16]&0x20 != 0,
		FilterRawOutboundCap:           b[16]&0x10 != 0,
		EnhancedPort0:                  b[16]&0x08 != 0,
		MulticastFDBTop:                binary.BigEndian.Uint16(b[18:20]),
	}
	return nil
}

// Validate returns an error wrapping ErrFieldRange when LifeTimeValue,
// PortStateChange or OptimizedSLtoVLMapping does not fit its bits.
func (s *SwitchInfo) Validate() error {
	if s == nil {
		return errNil("SwitchInfo.Validate")
	}
	c := fieldCheck{what: "SwitchInfo"}
	c.width("LifeTimeValue", uint64(s.LifeTimeValue), 5)
	c.width("PortStateChange", uint64(s.PortStateChange), 1)
	c.width("OptimizedSLtoVLMapping", uint64(s.OptimizedSLtoVLMapping), 2)
	return c.err
}

// MarshalBinary returns the 20-byte attribute, or Validate's error.
func (s *SwitchInfo) MarshalBinary() ([]byte, error) {
	if s == nil {
		return nil, errNil("SwitchInfo.MarshalBinary")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s.Append(make([]byte, 0, SwitchInfoSize)), nil
}

// UnmarshalBinary is Decode.
func (s *SwitchInfo) UnmarshalBinary(b []byte) error {
	if s == nil {
		return errNil("SwitchInfo.UnmarshalBinary")
	}
	return s.Decode(b)
}

// LinearForwardingTableSize is the size of a LinearForwardingTable
// block: 64 LIDs (libibmad's IB_SMP_DATA_SIZE entries).
const LinearForwardingTableSize = 64

// LinearForwardingTable is one block of a switch's linear forwarding
// table (IBA 14.2.5.10, libibmad's IB_ATTR_LINEARFORWTBL as ibroute and
// ibtracert read it): the out port of 64 consecutive LIDs, block n
// holding LIDs 64n to 64n+63. The attribute modifier of a Get is the
// block number (LFTBlock). A port above the switch's NumPorts (255 most
// often) means no route.
type LinearForwardingTable [LinearForwardingTableSize]uint8

// LFTBlock returns the block of the linear forwarding table that holds
// lid, the attribute modifier of its Get, and lid's index in the block.
func LFTBlock(lid uint16) (block uint32, index int) {
	return uint32(lid) / LinearForwardingTableSize, int(lid) % LinearForwardingTableSize
}

var errLFTShort = madError("LinearForwardingTable needs 64 bytes", &ErrShortMAD)

// AttributeID returns SMAttrLinearForwardingTable.
func (t *LinearForwardingTable) AttributeID() AttrID {
	if t == nil {
		return 0
	}
	return SMAttrLinearForwardingTable
}

// Append appends the 64 ports to b.
func (t *LinearForwardingTable) Append(b []byte) []byte {
	if t == nil {
		return b
	}
	return append(b, t[:]...)
}

// Decode sets t from the first 64 bytes of b. It returns an error
// wrapping ErrShortMAD when b is shorter.
func (t *LinearForwardingTable) Decode(b []byte) error {
	if t == nil {
		return errNil("LinearForwardingTable.Decode")
	}
	if len(b) < LinearForwardingTableSize {
		return errLFTShort
	}
	copy(t[:], b)
	return nil
}

// Validate reports nothing: every block has a wire form.
func (t *LinearForwardingTable) Validate() error {
	if t == nil {
		return errNil("LinearForwardingTable.Validate")
	}
	return nil
}

// MarshalBinary returns the 64 bytes.
func (t *LinearForwardingTable) MarshalBinary() ([]byte, error) {
	if t == nil {
		return nil, errNil("LinearForwardingTable.MarshalBinary")
	}
	return t.Append(make([]byte, 0, LinearForwardingTableSize)), nil
}

// UnmarshalBinary is Decode.
func (t *LinearForwardingTable) UnmarshalBinary(b []byte) error {
	if t == nil {
		return errNil("LinearForwardingTable.UnmarshalBinary")
	}
	return t.Decode(b)
}

// MulticastLIDBase is the first multicast LID (libibmad's
// IB_MIN_MCAST_LID, 0xC000); MulticastLIDMax is the last
// (IB_MAX_MCAST_LID).
const (
	MulticastLIDBase = 0xC000
	MulticastLIDMax  = 0xFFFE
)

// MulticastForwardingTableSize is the size of a MulticastForwardingTable
// block: 32 port masks of 16 bits.
const MulticastForwardingTableSize = 64

// MulticastForwardingTable is one block of a switch's multicast
// forwarding table (IBA 14.2.5.12, libibmad's IB_ATTR_MULTICASTFORWTBL as
// ibroute -M and ibtracert -m read it): for 32 consecutive multicast
// LIDs, the mask of 16 ports a packet goes out, bit i of entry j the port
// 16·position+i for LID 0xC000+32·block+j. The attribute modifier of a
// Get names the block and the position (MFTModifier).
type MulticastForwardingTable [32]uint16

// MFTModifier returns the attribute modifier of the block of the
// multicast forwarding table that holds mlid (0xC000 and up) at position
// (ports 16·position to 16·position+15, 0 to 15), and mlid's index in the
// block; ok is false for a LID below 0xC000 or a position above 15.
func MFTModifier(mlid uint16, position int) (mod uint32, index int, ok bool) {
	if mlid < MulticastLIDBase || position < 0 || position > 15 {
		return 0, 0, false
	}
	off := uint32(mlid - MulticastLIDBase)
	return off/32 | uint32(position)<<28, int(off % 32), true
}

var errMFTShort = madError("MulticastForwardingTable needs 64 bytes", &ErrShortMAD)

// AttributeID returns SMAttrMulticastForwardingTable.
func (t *MulticastForwardingTable) AttributeID() AttrID {
	if t == nil {
		return 0
	}
	return SMAttrMulticastForwardingTable
}

// Append appends the 32 big-endian port masks to b.
func (t *MulticastForwardingTable) Append(b []byte) []byte {
	if t == nil {
		return b
	}
	b, d := grow(b, MulticastForwardingTableSize)
	for i, m := range t {
		binary.BigEndian.PutUint16(d[2*i:], m)
	}
	return b
}

// Decode sets t from the first 64 bytes of b. It returns an error
// wrapping ErrShortMAD when b is shorter.
func (t *MulticastForwardingTable) Decode(b []byte) error {
	if t == nil {
		return errNil("MulticastForwardingTable.Decode")
	}
	if len(b) < MulticastForwardingTableSize {
		return errMFTShort
	}
	for i := range t {
		t[i] = binary.BigEndian.Uint16(b[2*i:])
	}
	return nil
}

// Validate reports nothing: every block has a wire form.
func (t *MulticastForwardingTable) Validate() error {
	if t == nil {
		return errNil("MulticastForwardingTable.Validate")
	}
	return nil
}

// MarshalBinary returns the 64 bytes.
func (t *MulticastForwardingTable) MarshalBinary() ([]byte, error) {
	if t == nil {
		return nil, errNil("MulticastForwardingTable.MarshalBinary")
	}
	return t.Append(make([]byte, 0, MulticastForwardingTableSize)), nil
}

// UnmarshalBinary is Decode.
func (t *MulticastForwardingTable) UnmarshalBinary(b []byte) error {
	if t == nil {
		return errNil("MulticastForwardingTable.UnmarshalBinary")
	}
	return t.Decode(b)
}
