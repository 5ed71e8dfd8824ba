package umad

import (
	"encoding/binary"
	"math"
)

// Layout of a performance management MAD.
const (
	// PerfDataOffset is where a PerfMgmt MAD's data starts: after the
	// common header and 40 reserved bytes (IB_MGMT_DEVICE_HDR).
	PerfDataOffset = 64
	// PerfDataSize is the size of a PerfMgmt MAD's data area.
	PerfDataSize = MADSize - PerfDataOffset
)

// PerfClassVersion is the class version of performance management.
const PerfClassVersion = 1

// AllPortSelect is the PortSelect value that selects every port of the
// node at once, where ClassPortInfo.CapabilityMask has PMCapAllPortSelect.
const AllPortSelect = 0xFF

// PerfMAD is a performance management MAD (class PerfMgmt, IBA 16.1,
// struct ib_pma_mad), sent to the PMA on QP1:
//
//	bytes 0–23   common header
//	bytes 24–63  reserved
//	bytes 64–255 data (the attribute)
//
// Build a request with NewMADHeader and SetAttribute, or encode an
// attribute in place without allocating: pc.Append(m.Data[:0]).
type PerfMAD struct {
	// Header is the common MAD header; MgmtClass is ClassPerfMgmt.
	Header MADHeader
	// Data is the data area: the attribute (see SetAttribute and
	// Attribute).
	Data [PerfDataSize]byte
}

// Static errors of the PerfMAD codec.
var (
	errPerfVersion  = madError("PerfMgmt MAD", &ErrBaseVersion)
	errPerfClass    = madError("PerfMgmt MAD: class is not PerfMgmt", &ErrWrongClass)
	errPerfAttrSize = madError("PerfMgmt MAD", &ErrAttributeSize)
)

// MADHeader returns &m.Header.
func (m *PerfMAD) MADHeader() *MADHeader {
	if m == nil {
		return nil
	}
	return &m.Header
}

// SetAttribute encodes a into Data (the rest of Data zeroed) and sets
// Header.AttributeID to a.AttributeID(). It returns an error wrapping
// ErrAttributeSize when a is larger than 192 bytes.
func (m *PerfMAD) SetAttribute(a Attribute) error {
	if m == nil {
		return errNil("PerfMAD.SetAttribute")
	}
	if err := setAttribute(m.Data[:], a, errPerfAttrSize); err != nil {
		return err
	}
	m.Header.AttributeID = a.AttributeID()
	return nil
}

// Attribute decodes Data as the attribute Header.AttributeID names:
// DecodeAttribute(ClassPerfMgmt, Header.AttributeID, Data[:]).
func (m *PerfMAD) Attribute() (Attribute, error) {
	if m == nil {
		return nil, errNil("PerfMAD.Attribute")
	}
	return DecodeAttribute(m.Header.MgmtClass, m.Header.AttributeID, m.Data[:])
}

// Append appends the 256-byte MAD to b and returns the extended slice,
// reserved bytes zero. It allocates only when b lacks the capacity.
func (m *PerfMAD) Append(b []byte) []byte {
	if m == nil {
		return b
	}
	b, t := grow(b, MADSize)
	m.Header.put(t)
	copy(t[PerfDataOffset:], m.Data[:])
	return b
}

// Decode sets m from exactly 256 bytes. It returns an error wrapping
// ErrShortMAD or ErrLongMAD for another length, ErrBaseVersion when the
// base version is not 1, and ErrWrongClass when the class is not PerfMgmt;
// m is unchanged on error. It does not allocate.
func (m *PerfMAD) Decode(b []byte) error {
	if m == nil {
		return errNil("PerfMAD.Decode")
	}
	if err := checkMAD(b); err != nil {
		return err
	}
	if b[0] != BaseVersion {
		return errPerfVersion
	}
	if MgmtClass(b[1]) != ClassPerfMgmt {
		return errPerfClass
	}
	m.Header.get(b)
	copy(m.Data[:], b[PerfDataOffset:])
	return nil
}

// Validate returns an error wrapping ErrBaseVersion or ErrWrongClass when
// the header is not that of an IBA PerfMgmt MAD.
func (m *PerfMAD) Validate() error {
	if m == nil {
		return errNil("PerfMAD.Validate")
	}
	if m.Header.BaseVersion != BaseVersion {
		return errPerfVersion
	}
	if m.Header.MgmtClass != ClassPerfMgmt {
		return errPerfClass
	}
	return nil
}

// MarshalBinary returns the 256-byte MAD, or Validate's error.
func (m *PerfMAD) MarshalBinary() ([]byte, error) {
	if m == nil {
		return nil, errNil("PerfMAD.MarshalBinary")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m.Append(make([]byte, 0, MADSize)), nil
}

// UnmarshalBinary is Decode.
func (m *PerfMAD) UnmarshalBinary(b []byte) error {
	if m == nil {
		return errNil("PerfMAD.UnmarshalBinary")
	}
	return m.Decode(b)
}

// PortCountersSize is the size of the PortCounters attribute.
const PortCountersSize = 44

// PortCounters.CounterSelect bits: which counters a Set(PortCounters)
// clears (include/rdma/ib_pma.h).
const (
	PCSelSymbolErrorCounter           = 1 << 0
	PCSelLinkErrorRecoveryCounter     = 1 << 1
	PCSelLinkDownedCounter            = 1 << 2
	PCSelPortRcvErrors                = 1 << 3
	PCSelPortRcvRemotePhysicalErrors  = 1 << 4
	PCSelPortRcvSwitchRelayErrors     = 1 << 5
	PCSelPortXmitDiscards             = 1 << 6
	PCSelPortXmitConstraintErrors     = 1 << 7
	PCSelPortRcvConstraintErrors      = 1 << 8
	PCSelLocalLinkIntegrityErrors     = 1 << 9
	PCSelExcessiveBufferOverrunErrors = 1 << 10
	PCSelVL15Dropped                  = 1 << 11
	PCSelPortXmitData                 = 1 << 12
	PCSelPortRcvData                  = 1 << 13
	PCSelPortXmitPkts                 = 1 << 14
	PCSelPortRcvPkts                  = 1 << 15
)

// PortCounters is the PerfMgmt attribute PortCounters (IBA 16.1;
// struct ib_pma_portcounters; libibmad IB_PC_*_F). The counters
// saturate: they stop at their maximum rather than wrap. Each field is
// listed with its bit offset from the start of the attribute (bit 0 is the
// most significant bit of byte 0) and its width; byte 0 is reserved.
//
// LocalLinkIntegrityErrors and ExcessiveBufferOverrunErrors are 4 bits
// wide: Append writes them modulo 16, Validate reports larger values.
type PortCounters struct {
	PortSelect                   uint8  // PortSelect: 8, 8 (AllPortSelect: every port)
	CounterSelect                uint16 // CounterSelect: 16, 16 (PCSel bits)
	SymbolErrorCounter           uint16 // SymbolErrorCounter: 32, 16
	LinkErrorRecoveryCounter     uint8  // LinkErrorRecoveryCounter: 48, 8
	LinkDownedCounter            uint8  // LinkDownedCounter: 56, 8
	PortRcvErrors                uint16 // PortRcvErrors: 64, 16
	PortRcvRemotePhysicalErrors  uint16 // PortRcvRemotePhysicalErrors: 80, 16
	PortRcvSwitchRelayErrors     uint16 // PortRcvSwitchRelayErrors: 96, 16
	PortXmitDiscards             uint16 // PortXmitDiscards: 112, 16
	PortXmitConstraintErrors     uint8  // PortXmitConstraintErrors: 128, 8
	PortRcvConstraintErrors      uint8  // PortRcvConstraintErrors: 136, 8
	CounterSelect2               uint8  // CounterSelect2: 144, 8
	LocalLinkIntegrityErrors     uint8  // LocalLinkIntegrityErrors: 152, 4
	ExcessiveBufferOverrunErrors uint8  // ExcessiveBufferOverrunErrors: 156, 4
	QP1Dropped                   uint16 // QP1Dropped: 160, 16 (where PMCapQP1Dropped)
	VL15Dropped                  uint16 // VL15Dropped: 176, 16
	PortXmitData                 uint32 // PortXmitData: 192, 32, in 4-octet units (XmitDataOctets)
	PortRcvData                  uint32 // PortRcvData: 224, 32, in 4-octet units (RcvDataOctets)
	PortXmitPkts                 uint32 // PortXmitPkts: 256, 32
	PortRcvPkts                  uint32 // PortRcvPkts: 288, 32
	PortXmitWait                 uint32 // PortXmitWait: 320, 32 (where PMCapPortCountersXmitWait)
}

var errPortCountersShort = madError("PortCounters needs 44 bytes", &ErrShortMAD)

// AttributeID returns PMAttrPortCounters.
func (p *PortCounters) AttributeID() AttrID {
	if p == nil {
		return 0
	}
	return PMAttrPortCounters
}

// XmitDataOctets returns PortXmitData in octets. The PMA counts data in
// units of 4 octets (IBA: the count of data octets divided by 4),
// so this is 4 × PortXmitData. The counter stops at 0xFFFFFFFF, at which
// point the result is only a lower bound.
func (p *PortCounters) XmitDataOctets() uint64 {
	if p == nil {
		return 0
	}
	return 4 * uint64(p.PortXmitData)
}

// RcvDataOctets returns PortRcvData in octets, 4 × PortRcvData; see
// XmitDataOctets.
func (p *PortCounters) RcvDataOctets() uint64 {
	if p == nil {
		return 0
	}
	return 4 * uint64(p.PortRcvData)
}

// Append appends the 44-byte attribute to b, the reserved byte zero. It
// allocates only when b lacks the capacity.
func (p *PortCounters) Append(b []byte) []byte {
	if p == nil {
		return b
	}
	b, t := grow(b, PortCountersSize)
	be := binary.BigEndian
	t[1] = p.PortSelect
	be.PutUint16(t[2:4], p.CounterSelect)
	be.PutUint16(t[4:6], p.SymbolErrorCounter)
	t[6] = p.LinkErrorRecoveryCounter
	t[7] = p.LinkDownedCounter
	be.PutUint16(t[8:10], p.PortRcvErrors)
	be.PutUint16(t[10:12], p.PortRcvRemotePhysicalErrors)
	be.PutUint16(t[12:14], p.PortRcvSwitchRelayErrors)
	be.PutUint16(t[14:16], p.PortXmitDiscards)
	t[16] = p.PortXmitConstraintErrors
	t[17] = p.PortRcvConstraintErrors
	t[18] = p.CounterSelect2
	t[19] = p.LocalLinkIntegrityErrors<<4 | p.ExcessiveBufferOverrunErrors&0xF
	be.PutUint16(t[20:22], p.QP1Dropped)
	be.PutUint16(t[22:24], p.VL15Dropped)
	be.PutUint32(t[24:28], p.PortXmitData)
	be.PutUint32(t[28:32], p.PortRcvData)
	be.PutUint32(t[32:36], p.PortXmitPkts)
	be.PutUint32(t[36:40], p.PortRcvPkts)
	be.PutUint32(t[40:44], p.PortXmitWait)
	return b
}

// Decode sets p from the first 44 bytes of b (a PerfMAD's Data). It
// returns an error wrapping ErrShortMAD when b is shorter. It does not
// allocate.
func (p *PortCounters) Decode(b []byte) error {
	if p == nil {
		return errNil("PortCounters.Decode")
	}
	if len(b) < PortCountersSize {
		return errPortCountersShort
	}
	be := binary.BigEndian
	*p = PortCounters{
		PortSelect:                   b[1],
		CounterSelect:                be.Uint16(b[2:4]),
		SymbolErrorCounter:           be.Uint16(b[4:6]),
		LinkErrorRecoveryCounter:     b[6],
		LinkDownedCounter:            b[7],
		PortRcvErrors:                be.Uint16(b[8:10]),
		PortRcvRemotePhysicalErrors:  be.Uint16(b[10:12]),
		PortRcvSwitchRelayErrors:     be.Uint16(b[12:14]),
		PortXmitDiscards:             be.Uint16(b[14:16]),
		PortXmitConstraintErrors:     b[16],
		PortRcvConstraintErrors:      b[17],
		CounterSelect2:               b[18],
		LocalLinkIntegrityErrors:     b[19] >> 4,
		ExcessiveBufferOverrunErrors: b[19] & 0xF,
		QP1Dropped:                   be.Uint16(b[20:22]),
		VL15Dropped:                  be.Uint16(b[22:24]),
		PortXmitData:                 be.Uint32(b[24:28]),
		PortRcvData:                  be.Uint32(b[28:32]),
		PortXmitPkts:                 be.Uint32(b[32:36]),
		PortRcvPkts:                  be.Uint32(b[36:40]),
		PortXmitWait:                 be.Uint32(b[40:44]),
	}
	return nil
}

// Validate returns an error wrapping ErrFieldRange when
// LocalLinkIntegrityErrors or ExcessiveBufferOverrunErrors exceeds 15.
func (p *PortCounters) Validate() error {
	if p == nil {
		return errNil("PortCounters.Validate")
	}
	c := fieldCheck{what: "PortCounters"}
	c.width("LocalLinkIntegrityErrors", uint64(p.LocalLinkIntegrityErrors), 4)
	c.width("ExcessiveBufferOverrunErrors", uint64(p.ExcessiveBufferOverrunErrors), 4)
	return c.err
}

// MarshalBinary returns the 44-byte attribute, or Validate's error.
func (p *PortCounters) MarshalBinary() ([]byte, error) {
	if p == nil {
		return nil, errNil("PortCounters.MarshalBinary")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p.Append(make([]byte, 0, PortCountersSize)), nil
}

// UnmarshalBinary is Decode.
func (p *PortCounters) UnmarshalBinary(b []byte) error {
	if p == nil {
		return errNil("PortCounters.UnmarshalBinary")
	}
	return p.Decode(b)
}

// PortCountersExtendedSize is the size of the PortCountersExtended
// attribute, the additional error counters included.
const PortCountersExtendedSize = 184

// PortCountersExtended.CounterSelect bits: which counters a
// Set(PortCountersExtended) clears (include/rdma/ib_pma.h).
const (
	PCExtSelPortXmitData          = 1 << 0
	PCExtSelPortRcvData           = 1 << 1
	PCExtSelPortXmitPkts          = 1 << 2
	PCExtSelPortRcvPkts           = 1 << 3
	PCExtSelPortUnicastXmitPkts   = 1 << 4
	PCExtSelPortUnicastRcvPkts    = 1 << 5
	PCExtSelPortMulticastXmitPkts = 1 << 6
	PCExtSelPortMulticastRcvPkts  = 1 << 7
)

// PortCountersExtended is the PerfMgmt attribute PortCountersExtended (IBA
// 16.1; struct ib_pma_portcounters_ext; libibmad IB_PC_EXT_*_F), 64-bit
// counters. Byte offsets; byte 0 is reserved:
//
//	1 PortSelect   2 CounterSelect (16 bits)   4 CounterSelect2 (32 bits)
//	8 PortXmitData ... 64 PortMulticastRcvPkts: one 64-bit counter each
//	72 SymbolErrorCounter ... 176 QP1Dropped: one 64-bit counter each
//
// The unicast and multicast counters are valid where ClassPortInfo's
// CapabilityMask has PMCapExtendedWidth; CounterSelect2 and the counters
// from SymbolErrorCounter on only where CapabilityMask2 has
// PMCap2AdditionalPortCountersExtended (otherwise the PMA returns zeros).
type PortCountersExtended struct {
	PortSelect                   uint8  // PortSelect: byte 1
	CounterSelect                uint16 // CounterSelect: bytes 2–3 (PCExtSel bits)
	CounterSelect2               uint32 // CounterSelect2: bytes 4–7
	PortXmitData                 uint64 // PortXmitData: byte 8, in 4-octet units (XmitDataOctets)
	PortRcvData                  uint64 // PortRcvData: byte 16, in 4-octet units (RcvDataOctets)
	PortXmitPkts                 uint64 // PortXmitPkts: byte 24
	PortRcvPkts                  uint64 // PortRcvPkts: byte 32
	PortUnicastXmitPkts          uint64 // PortUnicastXmitPkts: byte 40
	PortUnicastRcvPkts           uint64 // PortUnicastRcvPkts: byte 48
	PortMulticastXmitPkts        uint64 // PortMulticastXmitPkts: byte 56
	PortMulticastRcvPkts         uint64 // PortMulticastRcvPkts: byte 64
	SymbolErrorCounter           uint64 // SymbolErrorCounter: byte 72
	LinkErrorRecoveryCounter     uint64 // LinkErrorRecoveryCounter: byte 80
	LinkDownedCounter            uint64 // LinkDownedCounter: byte 88
	PortRcvErrors                uint64 // PortRcvErrors: byte 96
	PortRcvRemotePhysicalErrors  uint64 // PortRcvRemotePhysicalErrors: byte 104
	PortRcvSwitchRelayErrors     uint64 // PortRcvSwitchRelayErrors: byte 112
	PortXmitDiscards             uint64 // PortXmitDiscards: byte 120
	PortXmitConstraintErrors     uint64 // PortXmitConstraintErrors: byte 128
	PortRcvConstraintErrors      uint64 // PortRcvConstraintErrors: byte 136
	LocalLinkIntegrityErrors     uint64 // LocalLinkIntegrityErrors: byte 144
	ExcessiveBufferOverrunErrors uint64 // ExcessiveBufferOverrunErrors: byte 152
	VL15Dropped                  uint64 // VL15Dropped: byte 160
	PortXmitWait                 uint64 // PortXmitWait: byte 168
	QP1Dropped                   uint64 // QP1Dropped: byte 176
}

var errPortCountersExtShort = madError("PortCountersExtended needs 184 bytes", &ErrShortMAD)

// AttributeID returns PMAttrPortCountersExtended.
func (p *PortCountersExtended) AttributeID() AttrID {
	if p == nil {
		return 0
	}
	return PMAttrPortCountersExtended
}

// XmitDataOctets returns PortXmitData in octets, 4 × PortXmitData (the PMA
// counts 4-octet units), saturating at math.MaxUint64.
func (p *PortCountersExtended) XmitDataOctets() uint64 {
	if p == nil {
		return 0
	}
	return octets(p.PortXmitData)
}

// RcvDataOctets returns PortRcvData in octets, 4 × PortRcvData, saturating
// at math.MaxUint64.
func (p *PortCountersExtended) RcvDataOctets() uint64 {
	if p == nil {
		return 0
	}
	return octets(p.PortRcvData)
}

func octets(words uint64) uint64 {
	if words > math.MaxUint64/4 {
		return math.MaxUint64
	}
	return 4 * words
}

// counters returns pointers to the 64-bit counters in wire order, from
// byte 8 on.
func (p *PortCountersExtended) counters() [22]*uint64 {
	return [22]*uint64{
		&p.PortXmitData, &p.PortRcvData, &p.PortXmitPkts, &p.PortRcvPkts,
		&p.PortUnicastXmitPkts, &p.PortUnicastRcvPkts,
		&p.PortMulticastXmitPkts, &p.PortMulticastRcvPkts,
		&p.SymbolErrorCounter, &p.LinkErrorRecoveryCounter, &p.LinkDownedCounter,
		&p.PortRcvErrors, &p.PortRcvRemotePhysicalErrors, &p.PortRcvSwitchRelayErrors,
		&p.PortXmitDiscards, &p.PortXmitConstraintErrors, &p.PortRcvConstraintErrors,
		&p.LocalLinkIntegrityErrors, &p.ExcessiveBufferOverrunErrors,
		&p.VL15Dropped, &p.PortXmitWait, &p.QP1Dropped,
	}
}

// Append appends the 184-byte attribute to b, the reserved byte zero. It
// allocates only when b lacks the capacity.
func (p *PortCountersExtended) Append(b []byte) []byte {
	if p == nil {
		return b
	}
	b, t := grow(b, PortCountersExtendedSize)
	be := binary.BigEndian
	t[1] = p.PortSelect
	be.PutUint16(t[2:4], p.CounterSelect)
	be.PutUint32(t[4:8], p.CounterSelect2)
	for i, c := range p.counters() {
		be.PutUint64(t[8+8*i:], *c)
	}
	return b
}

// Decode sets p from the first 184 bytes of b (a PerfMAD's Data). It
// returns an error wrapping ErrShortMAD when b is shorter. It does not
// allocate.
func (p *PortCountersExtended) Decode(b []byte) error {
	if p == nil {
		return errNil("PortCountersExtended.Decode")
	}
	if len(b) < PortCountersExtendedSize {
		return errPortCountersExtShort
	}
	be := binary.BigEndian
	p.PortSelect = b[1]
	p.CounterSelect = be.Uint16(b[2:4])
	p.CounterSelect2 = be.Uint32(b[4:8])
	for i, c := range p.counters() {
		*c = be.Uint64(b[8+8*i:])
	}
	return nil
}

// Validate reports nothing: every field is as wide as its Go type.
func (p *PortCountersExtended) Validate() error {
	if p == nil {
		return errNil("PortCountersExtended.Validate")
	}
	return nil
}

// MarshalBinary returns the 184-byte attribute.
func (p *PortCountersExtended) MarshalBinary() ([]byte, error) {
	if p == nil {
		return nil, errNil("PortCountersExtended.MarshalBinary")
	}
	return p.Append(make([]byte, 0, PortCountersExtendedSize)), nil
}

// UnmarshalBinary is Decode.
func (p *PortCountersExtended) UnmarshalBinary(b []byte) error {
	if p == nil {
		return errNil("PortCountersExtended.UnmarshalBinary")
	}
	return p.Decode(b)
}
