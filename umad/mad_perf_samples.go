package umad

import (
	"encoding/binary"
)

// PortSamplesControlSize is the size of PortSamplesControl in bytes.
const PortSamplesControlSize = 80

// PortSamplesControl is the PerfMgmt attribute PortSamplesControl (IBA
// 16.1.3.2; libibmad IB_PSC_*_F), which starts and describes a port's
// sampling. Each field is listed with its bit offset from the start of
// the attribute (bit 0 is the most significant bit of byte 0) and its
// width; the bits between are reserved. libibmad reads it with
// pma_query_via and dumps it with mad_dump_portsamples_control
// (perfquery -c).
type PortSamplesControl struct {
	OpCode             uint8      // OpCode: 0, 8
	PortSelect         uint8      // PortSelect: 8, 8
	Tick               uint8      // Tick: 16, 8
	CounterWidth       uint8      // CounterWidth: 29, 3
	CounterMask0       uint8      // CounterMask0: 34, 3
	CounterMasks1to9   uint32     // CounterMasks1to9: 37, 27 (3 bits a counter)
	CounterMasks10to14 uint16     // CounterMasks10to14: 65, 15
	SampleMechanisms   uint8      // SampleMechanisms: 80, 8
	SampleStatus       uint8      // SampleStatus: 94, 2
	OptionMask         uint64     // OptionMask: 96, 64
	VendorMask         uint64     // VendorMask: 160, 64
	SampleStart        uint32     // SampleStart: 224, 32
	SampleInterval     uint32     // SampleInterval: 256, 32
	Tag                uint16     // Tag: 288, 16
	CounterSelect      [15]uint16 // CounterSelect0..14: 304 + 16 × i, 16
	// SamplesOnlyOptionMask: 576, 64.
	SamplesOnlyOptionMask uint64
}

var errPortSamplesControlShort = madError("PortSamplesControl needs 80 bytes", &ErrShortMAD)

// AttributeID returns PMAttrPortSamplesControl.
func (p *PortSamplesControl) AttributeID() AttrID {
	if p == nil {
		return 0
	}
	return PMAttrPortSamplesControl
}

// Append appends the 80-byte attribute to b, reserved bits zero, each
// field modulo its width.
func (p *PortSamplesControl) Append(b []byte) []byte {
	if p == nil {
		return b
	}
	b, t := grow(b, PortSamplesControlSize)
	be := binary.BigEndian
	t[0], t[1], t[2] = p.OpCode, p.PortSelect, p.Tick
	putBitsAt(t, 29, 3, uint64(p.CounterWidth))
	putBitsAt(t, 34, 3, uint64(p.CounterMask0))
	putBitsAt(t, 37, 27, uint64(p.CounterMasks1to9))
	putBitsAt(t, 65, 15, uint64(p.CounterMasks10to14))
	t[10] = p.SampleMechanisms
	putBitsAt(t, 94, 2, uint64(p.SampleStatus))
	be.PutUint64(t[12:], p.OptionMask)
	be.PutUint64(t[20:], p.VendorMask)
	be.PutUint32(t[28:], p.SampleStart)
	be.PutUint32(t[32:], p.SampleInterval)
	be.PutUint16(t[36:], p.Tag)
	for i, c := range p.CounterSelect {
		be.PutUint16(t[38+2*i:], c)
	}
	be.PutUint64(t[72:], p.SamplesOnlyOptionMask)
	return b
}

// Decode sets p from the first 80 bytes of b (a PerfMAD's Data). It
// returns an error wrapping ErrShortMAD when b is shorter.
func (p *PortSamplesControl) Decode(b []byte) error {
	if p == nil {
		return errNil("PortSamplesControl.Decode")
	}
	if len(b) < PortSamplesControlSize {
		return errPortSamplesControlShort
	}
	be := binary.BigEndian
	p.OpCode, p.PortSelect, p.Tick = b[0], b[1], b[2]
	p.CounterWidth = uint8(bitsAt(b, 29, 3))
	p.CounterMask0 = uint8(bitsAt(b, 34, 3))
	p.CounterMasks1to9 = uint32(bitsAt(b, 37, 27))
	p.CounterMasks10to14 = uint16(bitsAt(b, 65, 15))
	p.SampleMechanisms = b[10]
	p.SampleStatus = uint8(bitsAt(b, 94, 2))
	p.OptionMask = be.Uint64(b[12:])
	p.VendorMask = be.Uint64(b[20:])
	p.SampleStart = be.Uint32(b[28:])
	p.SampleInterval = be.Uint32(b[32:])
	p.Tag = be.Uint16(b[36:])
	for i := range p.CounterSelect {
		p.CounterSelect[i] = be.Uint16(b[38+2*i:])
	}
	p.SamplesOnlyOptionMask = be.Uint64(b[72:])
	return nil
}

// Validate reports the fields narrower than their Go type that hold
// more than they fit (ErrFieldRange).
func (p *PortSamplesControl) Validate() error {
	if p == nil {
		return errNil("PortSamplesControl.Validate")
	}
	for _, f := range []struct {
		name string
		v    uint64
		w    int
	}{
		{"CounterWidth", uint64(p.CounterWidth), 3}, {"CounterMask0", uint64(p.CounterMask0), 3},
		{"CounterMasks1to9", uint64(p.CounterMasks1to9), 27}, {"CounterMasks10to14", uint64(p.CounterMasks10to14), 15},
		{"SampleStatus", uint64(p.SampleStatus), 2},
	} {
		if f.v>>f.w != 0 {
			return rangeError("PortSamplesControl", f.name, f.v, f.w)
		}
	}
	return nil
}

// MarshalBinary is Validate followed by Append.
func (p *PortSamplesControl) MarshalBinary() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p.Append(make([]byte, 0, PortSamplesControlSize)), nil
}

// UnmarshalBinary is Decode.
func (p *PortSamplesControl) UnmarshalBinary(b []byte) error {
	if p == nil {
		return errNil("PortSamplesControl.UnmarshalBinary")
	}
	return p.Decode(b)
}

// PortExtendedSpeedsCountersSize is the size of
// PortExtendedSpeedsCounters in bytes, its RS-FEC counters included.
const PortExtendedSpeedsCountersSize = 152

// PortExtendedSpeedsCounters is the PerfMgmt attribute
// PortExtendedSpeedsCounters (IBA 16.1.4.8; libibmad IB_PESC_*_F), the
// error counters of the FDR and faster link layers, per lane. Byte
// offsets: 1 PortSelect, 8 CounterSelect, 16 SyncHeaderErrorCounter, 18
// UnknownBlockCounter, 20 ErrorDetectionCounterLane (12 × 16 bits), 44
// FECCorrectableBlockCtrLane (12 × 32), 92 FECUncorrectableBlockCtrLane
// (12 × 32), 140 PortFECCorrectableBlockCtr, 144
// PortFECUncorrectableBlockCtr, 148 PortFECCorrectedSymbolCtr. Where the
// port runs RS-FEC, the FECCorrectableBlockCtrLane counters are its
// FECCorrectableSymbolCtrLane ones and the three port counters at the
// end are valid (perfquery -T's "with RS-FEC Active" dump,
// mad_dump_port_ext_speeds_counters_rsfec_active; otherwise
// mad_dump_port_ext_speeds_counters). A Set with CounterSelect bits
// clears counters (perfquery's ext_speeds_reset_via).
type PortExtendedSpeedsCounters struct {
	PortSelect                   uint8
	CounterSelect                uint64
	SyncHeaderErrorCounter       uint16
	UnknownBlockCounter          uint16
	ErrorDetectionCounterLane    [12]uint16
	FECCorrectableBlockCtrLane   [12]uint32
	FECUncorrectableBlockCtrLane [12]uint32
	PortFECCorrectableBlockCtr   uint32
	PortFECUncorrectableBlockCtr uint32
	PortFECCorrectedSymbolCtr    uint32
}

var errPortExtSpeedsShort = madError("PortExtendedSpeedsCounters needs 152 bytes", &ErrShortMAD)

// The text above says PortExtendedSpeedsCountersSize.
const (
	_ = uint(PortExtendedSpeedsCountersSize - 152)
	_ = uint(152 - PortExtendedSpeedsCountersSize)
)

// AttributeID returns PMAttrPortExtendedSpeedsCounters.
func (p *PortExtendedSpeedsCounters) AttributeID() AttrID {
	if p == nil {
		return 0
	}
	return PMAttrPortExtendedSpeedsCounters
}

// Append appends the 152-byte attribute to b, reserved bytes zero.
func (p *PortExtendedSpeedsCounters) Append(b []byte) []byte {
	if p == nil {
		return b
	}
	b, t := grow(b, PortExtendedSpeedsCountersSize)
	be := binary.BigEndian
	t[1] = p.PortSelect
	be.PutUint64(t[8:], p.CounterSelect)
	be.PutUint16(t[16:], p.SyncHeaderErrorCounter)
	be.PutUint16(t[18:], p.UnknownBlockCounter)
	for i := range 12 {
		be.PutUint16(t[20+2*i:], p.ErrorDetectionCounterLane[i])
		be.PutUint32(t[44+4*i:], p.FECCorrectableBlockCtrLane[i])
		be.PutUint32(t[92+4*i:], p.FECUncorrectableBlockCtrLane[i])
	}
	be.PutUint32(t[140:], p.PortFECCorrectableBlockCtr)
	be.PutUint32(t[144:], p.PortFECUncorrectableBlockCtr)
	be.PutUint32(t[148:], p.PortFECCorrectedSymbolCtr)
	return b
}

// Decode sets p from the first 152 bytes of b (a PerfMAD's Data). It
// returns an error wrapping ErrShortMAD when b is shorter.
func (p *PortExtendedSpeedsCounters) Decode(b []byte) error {
	if p == nil {
		return errNil("PortExtendedSpeedsCounters.Decode")
	}
	if len(b) < PortExtendedSpeedsCountersSize {
		return errPortExtSpeedsShort
	}
	be := binary.BigEndian
	p.PortSelect = b[1]
	p.CounterSelect = be.Uint64(b[8:])
	p.SyncHeaderErrorCounter = be.Uint16(b[16:])
	p.UnknownBlockCounter = be.Uint16(b[18:])
	for i := range 12 {
		p.ErrorDetectionCounterLane[i] = be.Uint16(b[20+2*i:])
		p.FECCorrectableBlockCtrLane[i] = be.Uint32(b[44+4*i:])
		p.FECUncorrectableBlockCtrLane[i] = be.Uint32(b[92+4*i:])
	}
	p.PortFECCorrectableBlockCtr = be.Uint32(b[140:])
	p.PortFECUncorrectableBlockCtr = be.Uint32(b[144:])
	p.PortFECCorrectedSymbolCtr = be.Uint32(b[148:])
	return nil
}

// Validate reports nothing: every field is as wide as its Go type.
func (p *PortExtendedSpeedsCounters) Validate() error {
	if p == nil {
		return errNil("PortExtendedSpeedsCounters.Validate")
	}
	return nil
}

// MarshalBinary returns the 152-byte attribute.
func (p *PortExtendedSpeedsCounters) MarshalBinary() ([]byte, error) {
	if p == nil {
		return nil, errNil("PortExtendedSpeedsCounters.MarshalBinary")
	}
	return p.Append(make([]byte, 0, PortExtendedSpeedsCountersSize)), nil
}

// UnmarshalBinary is Decode.
func (p *PortExtendedSpeedsCounters) UnmarshalBinary(b []byte) error {
	if p == nil {
		return errNil("PortExtendedSpeedsCounters.UnmarshalBinary")
	}
	return p.Decode(b)
}
