package umad

import (
	"encoding/binary"

	"github.com/purerdma/rdma"
)

// ClassPortInfoSize is the size of the ClassPortInfo attribute.
const ClassPortInfoSize = 72

// ClassPortInfo is the ClassPortInfo attribute every GSI class supports
// (IBA 13.4.8.1; struct ib_class_port_info; libibmad
// IB_CPI_*_F): what the class manager supports and where to redirect
// requests and send traps. Each field is listed with its bit offset (bit 0
// is the most significant bit of byte 0) and width; the reserved byte at
// bit 256 is written as zero and ignored when read.
//
// It does not fit the 64-byte data area of an SMP; the subnet management
// class has no ClassPortInfo.
type ClassPortInfo struct {
	BaseVersion     uint8    // BaseVersion: 0, 8
	ClassVersion    uint8    // ClassVersion: 8, 8
	CapabilityMask  uint16   // CapabilityMask: 16, 16 (for PerfMgmt: the PMCap bits)
	CapabilityMask2 uint32   // CapabilityMask2: 32, 27 (for PerfMgmt: the PMCap2 bits)
	RespTimeValue   uint8    // RespTimeValue: 59, 5
	RedirectGID     rdma.GID // RedirectGID: 64, 128
	RedirectTC      uint8    // RedirectTC: 192, 8
	RedirectSL      uint8    // RedirectSL: 200, 4
	RedirectFL      uint32   // RedirectFL: 204, 20
	RedirectLID     uint16   // RedirectLID: 224, 16
	RedirectPKey    uint16   // RedirectP_Key: 240, 16
	RedirectQP      uint32   // RedirectQP: 264, 24
	RedirectQKey    uint32   // RedirectQ_Key: 288, 32
	TrapGID         rdma.GID // TrapGID: 320, 128
	TrapTC          uint8    // TrapTC: 448, 8
	TrapSL          uint8    // TrapSL: 456, 4
	TrapFL          uint32   // TrapFL: 460, 20
	TrapLID         uint16   // TrapLID: 480, 16
	TrapPKey        uint16   // TrapP_Key: 496, 16
	TrapHL          uint8    // TrapHL (hop limit): 512, 8
	TrapQP          uint32   // TrapQP: 520, 24
	TrapQKey        uint32   // TrapQ_Key: 544, 32
}

// Performance management ClassPortInfo.CapabilityMask bits (include/rdma/ib_pma.h,
// libibmad iba_types.h).
const (
	PMCapAllPortSelect                               = 1 << 8  // PortSelect 0xFF (AllPortSelect) is supported
	PMCapExtendedWidth                               = 1 << 9  // PortCountersExtended, unicast and multicast counters included
	PMCapExtendedWidthNoIETF                         = 1 << 10 // PortCountersExtended without the unicast and multicast counters
	PMCapSamplesOnly                                 = 1 << 11 // only PortSamplesControl/Result counters
	PMCapPortCountersXmitWait                        = 1 << 12 // PortCounters.PortXmitWait is supported
	PMCapInhibitLimitedPKeyMulticastConstraintErrors = 1 << 13 // limited-P_Key multicast constraint errors are not counted
	PMCapRSFECCounters                               = 1 << 14 // RS-FEC counters in PortExtendedSpeedsCounters
	PMCapQP1Dropped                                  = 1 << 15 // QP1Dropped is supported
)

// Performance management ClassPortInfo.CapabilityMask2 bits.
const (
	PMCap2PMKey                          = 1 << 0 // PM_Key is supported
	PMCap2AdditionalPortCountersExtended = 1 << 1 // PortCountersExtended carries the error counters after PortMulticastRcvPkts
)

var errClassPortInfoShort = madError("ClassPortInfo needs 72 bytes", &ErrShortMAD)

// AttributeID returns AttrClassPortInfo.
func (c *ClassPortInfo) AttributeID() AttrID {
	if c == nil {
		return 0
	}
	return AttrClassPortInfo
}

// Append appends the 72-byte attribute to b, each field modulo its width.
// It allocates only when b lacks the capacity.
func (c *ClassPortInfo) Append(b []byte) []byte {
	if c == nil {
		return b
	}
	b, t := grow(b, ClassPortInfoSize)
	be := binary.BigEndian
	t[0] = c.BaseVersion
	t[1] = c.ClassVersion
	be.PutUint16(t[2:4], c.CapabilityMask)
	be.PutUint32(t[4:8], c.CapabilityMask2<<5|uint32(c.RespTimeValue&0x1F))
	copy(t[8:24], c.RedirectGID[:])
	be.PutUint32(t[24:28], uint32(c.RedirectTC)<<24|uint32(c.RedirectSL&0xF)<<20|c.RedirectFL&0xFFFFF)
	be.PutUint16(t[28:30], c.RedirectLID)
	be.PutUint16(t[30:32], c.RedirectPKey)
	put24(t[33:36], c.RedirectQP)
	be.PutUint32(t[36:40], c.RedirectQKey)
	copy(t[40:56], c.TrapGID[:])
	be.PutUint32(t[56:60], uint32(c.TrapTC)<<24|uint32(c.TrapSL&0xF)<<20|c.TrapFL&0xFFFFF)
	be.PutUint16(t[60:62], c.TrapLID)
	be.PutUint16(t[62:64], c.TrapPKey)
	t[64] = c.TrapHL
	put24(t[65:68], c.TrapQP)
	be.PutUint32(t[68:72], c.TrapQKey)
	return b
}

// Decode sets c from the first 72 bytes of b (a GSI MAD's data area). It
// returns an error wrapping ErrShortMAD when b is shorter. It does not
// allocate.
func (c *ClassPortInfo) Decode(b []byte) error {
	if c == nil {
		return errNil("ClassPortInfo.Decode")
	}
	if len(b) < ClassPortInfoSize {
		return errClassPortInfoShort
	}
	be := binary.BigEndian
	w1 := be.Uint32(b[4:8])
	rw := be.Uint32(b[24:28])
	tw := be.Uint32(b[56:60])
	*c = ClassPortInfo{
		BaseVersion:     b[0],
		ClassVersion:    b[1],
		CapabilityMask:  be.Uint16(b[2:4]),
		CapabilityMask2: w1 >> 5,
		RespTimeValue:   uint8(w1 & 0x1F),
		RedirectTC:      uint8(rw >> 24),
		RedirectSL:      uint8(rw >> 20 & 0xF),
		RedirectFL:      rw & 0xFFFFF,
		RedirectLID:     be.Uint16(b[28:30]),
		RedirectPKey:    be.Uint16(b[30:32]),
		RedirectQP:      get24(b[33:36]),
		RedirectQKey:    be.Uint32(b[36:40]),
		TrapTC:          uint8(tw >> 24),
		TrapSL:          uint8(tw >> 20 & 0xF),
		TrapFL:          tw & 0xFFFFF,
		TrapLID:         be.Uint16(b[60:62]),
		TrapPKey:        be.Uint16(b[62:64]),
		TrapHL:          b[64],
		TrapQP:          get24(b[65:68]),
		TrapQKey:        be.Uint32(b[68:72]),
	}
	copy(c.RedirectGID[:], b[8:24])
	copy(c.TrapGID[:], b[40:56])
	return nil
}

// Validate returns an error wrapping ErrFieldRange naming the first field
// whose value does not fit its width.
func (c *ClassPortInfo) Validate() error {
	if c == nil {
		return errNil("ClassPortInfo.Validate")
	}
	v := fieldCheck{what: "ClassPortInfo"}
	v.width("CapabilityMask2", uint64(c.CapabilityMask2), 27)
	v.width("RespTimeValue", uint64(c.RespTimeValue), 5)
	v.width("RedirectSL", uint64(c.RedirectSL), 4)
	v.width("RedirectFL", uint64(c.RedirectFL), 20)
	v.width("RedirectQP", uint64(c.RedirectQP), 24)
	v.width("TrapSL", uint64(c.TrapSL), 4)
	v.width("TrapFL", uint64(c.TrapFL), 20)
	v.width("TrapQP", uint64(c.TrapQP), 24)
	return v.err
}

// MarshalBinary returns the 72-byte attribute, or Validate's error.
func (c *ClassPortInfo) MarshalBinary() ([]byte, error) {
	if c == nil {
		return nil, errNil("ClassPortInfo.MarshalBinary")
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.Append(make([]byte, 0, ClassPortInfoSize)), nil
}

// UnmarshalBinary is Decode.
func (c *ClassPortInfo) UnmarshalBinary(b []byte) error {
	if c == nil {
		return errNil("ClassPortInfo.UnmarshalBinary")
	}
	return c.Decode(b)
}
