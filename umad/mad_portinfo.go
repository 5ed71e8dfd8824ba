package umad

import "encoding/binary"

// PortInfoSize is the size of the PortInfo attribute.
const PortInfoSize = 64

// PortInfo is the SMP attribute PortInfo (IBA 14.2.5; struct
// ib_port_info; libibmad IB_PORT_*_F), with the fields later spec releases
// added after LinkRoundTripLatency (CapabilityMask2, the LinkSpeedExt
// fields, and the XDR LinkSpeedExt*2 fields libibmad names). Each field is
// listed with its bit offset from the start of the attribute (bit 0 is the
// most significant bit of byte 0) and its width; bits not listed are
// reserved, written as zero and ignored when read.
//
// Fields narrower than their Go type are written modulo their width by
// Append; Validate reports values that do not fit.
type PortInfo struct {
	MKey                 uint64 // M_Key: 0, 64
	GIDPrefix            uint64 // GidPrefix: 64, 64
	LID                  uint16 // LID (base LID): 128, 16
	MasterSMLID          uint16 // MasterSMLID: 144, 16
	CapabilityMask       uint32 // CapabilityMask: 160, 32
	DiagCode             uint16 // DiagCode: 192, 16
	MKeyLeasePeriod      uint16 // M_KeyLeasePeriod: 208, 16
	LocalPortNum         uint8  // LocalPortNum: 224, 8
	LinkWidthEnabled     uint8  // LinkWidthEnabled: 232, 8
	LinkWidthSupported   uint8  // LinkWidthSupported: 240, 8
	LinkWidthActive      uint8  // LinkWidthActive: 248, 8
	LinkSpeedSupported   uint8  // LinkSpeedSupported: 256, 4
	PortState            uint8  // PortState: 260, 4 (1 Down, 2 Init, 3 Armed, 4 Active)
	PortPhysicalState    uint8  // PortPhysicalState: 264, 4 (2 Polling, 3 Disabled, 5 LinkUp, ...)
	LinkDownDefaultState uint8  // LinkDownDefaultState: 268, 4
	MKeyProtectBits      uint8  // M_KeyProtectBits: 272, 2
	LMC                  uint8  // LMC: 277, 3
	LinkSpeedActive      uint8  // LinkSpeedActive: 280, 4
	LinkSpeedEnabled     uint8  // LinkSpeedEnabled: 284, 4
	NeighborMTU          uint8  // NeighborMTU: 288, 4 (1 = 256 bytes ... 5 = 4096)
	MasterSMSL           uint8  // MasterSMSL: 292, 4
	VLCap                uint8  // VLCap: 296, 4
	InitType             uint8  // InitType: 300, 4
	VLHighLimit          uint8  // VLHighLimit: 304, 8
	VLArbitrationHighCap uint8  // VLArbitrationHighCap: 312, 8
	VLArbitrationLowCap  uint8  // VLArbitrationLowCap: 320, 8
	InitTypeReply        uint8  // InitTypeReply: 328, 4
	MTUCap               uint8  // MTUCap: 332, 4
	VLStallCount         uint8  // VLStallCount: 336, 3
	HOQLife              uint8  // HOQLife: 339, 5
	OperationalVLs       uint8  // OperationalVLs: 344, 4

	PartitionEnforcementInbound  bool // PartitionEnforcementInbound: 348, 1
	PartitionEnforcementOutbound bool // PartitionEnforcementOutbound: 349, 1
	FilterRawInbound             bool // FilterRawInbound: 350, 1
	FilterRawOutbound            bool // FilterRawOutbound: 351, 1

	MKeyViolations   uint16 // M_KeyViolations: 352, 16
	PKeyViolations   uint16 // P_KeyViolations: 368, 16
	QKeyViolations   uint16 // Q_KeyViolations: 384, 16
	GUIDCap          uint8  // GUIDCap: 400, 8
	ClientReregister bool   // ClientReregister: 408, 1

	MulticastPKeyTrapSuppressionEnabled uint8 // MulticastPKeyTrapSuppressionEnabled: 409, 2

	SubnetTimeOut          uint8  // SubnetTimeOut: 411, 5
	RespTimeValue          uint8  // RespTimeValue: 419, 5
	LocalPhyErrors         uint8  // LocalPhyErrors: 424, 4
	OverrunErrors          uint8  // OverrunErrors: 428, 4
	MaxCreditHint          uint16 // MaxCreditHint: 432, 16
	LinkSpeedExtActive2    uint8  // LinkSpeedExtActive2 (XDR): 449, 2
	LinkSpeedExtSupported2 uint8  // LinkSpeedExtSupported2 (XDR): 451, 2
	LinkSpeedExtEnabled2   uint8  // LinkSpeedExtEnabled2 (XDR): 453, 3
	LinkRoundTripLatency   uint32 // LinkRoundTripLatency: 456, 24
	CapabilityMask2        uint16 // CapabilityMask2: 480, 16
	LinkSpeedExtActive     uint8  // LinkSpeedExtActive: 496, 4
	LinkSpeedExtSupported  uint8  // LinkSpeedExtSupported: 500, 4
	LinkSpeedExtEnabled    uint8  // LinkSpeedExtEnabled: 507, 5
}

var errPortInfoShort = madError("PortInfo needs 64 bytes", &ErrShortMAD)

// AttributeID returns SMAttrPortInfo.
func (p *PortInfo) AttributeID() AttrID {
	if p == nil {
		return 0
	}
	return SMAttrPortInfo
}

// Append appends the 64-byte attribute to b, reserved bits zero, each
// field modulo its width. It allocates only when b lacks the capacity.
func (p *PortInfo) Append(b []byte) []byte {
	if p == nil {
		return b
	}
	b, t := grow(b, PortInfoSize)
	be := binary.BigEndian
	be.PutUint64(t[0:8], p.MKey)
	be.PutUint64(t[8:16], p.GIDPrefix)
	be.PutUint16(t[16:18], p.LID)
	be.PutUint16(t[18:20], p.MasterSMLID)
	be.PutUint32(t[20:24], p.CapabilityMask)
	be.PutUint16(t[24:26], p.DiagCode)
	be.PutUint16(t[26:28], p.MKeyLeasePeriod)
	t[28] = p.LocalPortNum
	t[29] = p.LinkWidthEnabled
	t[30] = p.LinkWidthSupported
	t[31] = p.LinkWidthActive
	t[32] = p.LinkSpeedSupported<<4 | p.PortState&0xF
	t[33] = p.PortPhysicalState<<4 | p.LinkDownDefaultState&0xF
	t[34] = p.MKeyProtectBits<<6 | p.LMC&0x7
	t[35] = p.LinkSpeedActive<<4 | p.LinkSpeedEnabled&0xF
	t[36] = p.NeighborMTU<<4 | p.MasterSMSL&0xF
	t[37] = p.VLCap<<4 | p.InitType&0xF
	t[38] = p.VLHighLimit
	t[39] = p.VLArbitrationHighCap
	t[40] = p.VLArbitrationLowCap
	t[41] = p.InitTypeReply<<4 | p.MTUCap&0xF
	t[42] = p.VLStallCount<<5 | p.HOQLife&0x1F
	t[43] = p.OperationalVLs<<4 |
		b2u(p.PartitionEnforcementInbound)<<3 |
		b2u(p.PartitionEnforcementOutbound)<<2 |
		b2u(p.FilterRawInbound)<<1 |
		b2u(p.FilterRawOutbound)
	be.PutUint16(t[44:46], p.MKeyViolations)
	be.PutUint16(t[46:48], p.PKeyViolations)
	be.PutUint16(t[48:50], p.QKeyViolations)
	t[50] = p.GUIDCap
	t[51] = b2u(p.ClientReregister)<<7 |
		(p.MulticastPKeyTrapSuppressionEnabled&0x3)<<5 |
		p.SubnetTimeOut&0x1F
	t[52] = p.RespTimeValue & 0x1F
	t[53] = p.LocalPhyErrors<<4 | p.OverrunErrors&0xF
	be.PutUint16(t[54:56], p.MaxCreditHint)
	t[56] = (p.LinkSpeedExtActive2&0x3)<<5 |
		(p.LinkSpeedExtSupported2&0x3)<<3 |
		p.LinkSpeedExtEnabled2&0x7
	put24(t[57:60], p.LinkRoundTripLatency)
	be.PutUint16(t[60:62], p.CapabilityMask2)
	t[62] = p.LinkSpeedExtActive<<4 | p.LinkSpeedExtSupported&0xF
	t[63] = p.LinkSpeedExtEnabled & 0x1F
	return b
}

// Decode sets p from the first 64 bytes of b (an SMP's Data). It returns
// an error wrapping ErrShortMAD when b is shorter. It does not allocate.
func (p *PortInfo) Decode(b []byte) error {
	if p == nil {
		return errNil("PortInfo.Decode")
	}
	if len(b) < PortInfoSize {
		return errPortInfoShort
	}
	be := binary.BigEndian
	*p = PortInfo{
		MKey:                 be.Uint64(b[0:8]),
		GIDPrefix:            be.Uint64(b[8:16]),
		LID:                  be.Uint16(b[16:18]),
		MasterSMLID:          be.Uint16(b[18:20]),
		CapabilityMask:       be.Uint32(b[20:24]),
		DiagCode:             be.Uint16(b[24:26]),
		MKeyLeasePeriod:      be.Uint16(b[26:28]),
		LocalPortNum:         b[28],
		LinkWidthEnabled:     b[29],
		LinkWidthSupported:   b[30],
		LinkWidthActive:      b[31],
		LinkSpeedSupported:   b[32] >> 4,
		PortState:            b[32] & 0xF,
		PortPhysicalState:    b[33] >> 4,
		LinkDownDefaultState: b[33] & 0xF,
		MKeyProtectBits:      b[34] >> 6,
		LMC:                  b[34] & 0x7,
		LinkSpeedActive:      b[35] >> 4,
		LinkSpeedEnabled:     b[35] & 0xF,
		NeighborMTU:          b[36] >> 4,
		MasterSMSL:           b[36] & 0xF,
		VLCap:                b[37] >> 4,
		InitType:             b[37] & 0xF,
		VLHighLimit:          b[38],
		VLArbitrationHighCap: b[39],
		VLArbitrationLowCap:  b[40],
		InitTypeReply:        b[41] >> 4,
		MTUCap:               b[41] & 0xF,
		VLStallCount:         b[42] >> 5,
		HOQLife:              b[42] & 0x1F,
		OperationalVLs:       b[43] >> 4,

		PartitionEnforcementInbound:  b[43]&0x8 != 0,
		PartitionEnforcementOutbound: b[43]&0x4 != 0,
		FilterRawInbound:             b[43]&0x2 != 0,
		FilterRawOutbound:            b[43]&0x1 != 0,

		MKeyViolations:   be.Uint16(b[44:46]),
		PKeyViolations:   be.Uint16(b[46:48]),
		QKeyViolations:   be.Uint16(b[48:50]),
		GUIDCap:          b[50],
		ClientReregister: b[51]&0x80 != 0,

		MulticastPKeyTrapSuppressionEnabled: b[51] >> 5 & 0x3,

		SubnetTimeOut:          b[51] & 0x1F,
		RespTimeValue:          b[52] & 0x1F,
		LocalPhyErrors:         b[53] >> 4,
		OverrunErrors:          b[53] & 0xF,
		MaxCreditHint:          be.Uint16(b[54:56]),
		LinkSpeedExtActive2:    b[56] >> 5 & 0x3,
		LinkSpeedExtSupported2: b[56] >> 3 & 0x3,
		LinkSpeedExtEnabled2:   b[56] & 0x7,
		LinkRoundTripLatency:   get24(b[57:60]),
		CapabilityMask2:        be.Uint16(b[60:62]),
		LinkSpeedExtActive:     b[62] >> 4,
		LinkSpeedExtSupported:  b[62] & 0xF,
		LinkSpeedExtEnabled:    b[63] & 0x1F,
	}
	return nil
}

// Validate returns an error wrapping ErrFieldRange naming the first field
// whose value does not fit its width.
func (p *PortInfo) Validate() error {
	if p == nil {
		return errNil("PortInfo.Validate")
	}
	c := fieldCheck{what: "PortInfo"}
	for _, f := range [...]struct {
		name  string
		v     uint8
		width int
	}{
		{"LinkSpeedSupported", p.LinkSpeedSupported, 4},
		{"PortState", p.PortState, 4},
		{"PortPhysicalState", p.PortPhysicalState, 4},
		{"LinkDownDefaultState", p.LinkDownDefaultState, 4},
		{"MKeyProtectBits", p.MKeyProtectBits, 2},
		{"LMC", p.LMC, 3},
		{"LinkSpeedActive", p.LinkSpeedActive, 4},
		{"LinkSpeedEnabled", p.LinkSpeedEnabled, 4},
		{"NeighborMTU", p.NeighborMTU, 4},
		{"MasterSMSL", p.MasterSMSL, 4},
		{"VLCap", p.VLCap, 4},
		{"InitType", p.InitType, 4},
		{"InitTypeReply", p.InitTypeReply, 4},
		{"MTUCap", p.MTUCap, 4},
		{"VLStallCount", p.VLStallCount, 3},
		{"HOQLife", p.HOQLife, 5},
		{"OperationalVLs", p.OperationalVLs, 4},
		{"MulticastPKeyTrapSuppressionEnabled", p.MulticastPKeyTrapSuppressionEnabled, 2},
		{"SubnetTimeOut", p.SubnetTimeOut, 5},
		{"RespTimeValue", p.RespTimeValue, 5},
		{"LocalPhyErrors", p.LocalPhyErrors, 4},
		{"OverrunErrors", p.OverrunErrors, 4},
		{"LinkSpeedExtActive2", p.LinkSpeedExtActive2, 2},
		{"LinkSpeedExtSupported2", p.LinkSpeedExtSupported2, 2},
		{"LinkSpeedExtEnabled2", p.LinkSpeedExtEnabled2, 3},
		{"LinkSpeedExtActive", p.LinkSpeedExtActive, 4},
		{"LinkSpeedExtSupported", p.LinkSpeedExtSupported, 4},
		{"LinkSpeedExtEnabled", p.LinkSpeedExtEnabled, 5},
	} {
		c.width(f.name, uint64(f.v), f.width)
	}
	c.width("LinkRoundTripLatency", uint64(p.LinkRoundTripLatency), 24)
	return c.err
}

// MarshalBinary returns the 64-byte attribute, or Validate's error.
func (p *PortInfo) MarshalBinary() ([]byte, error) {
	if p == nil {
		return nil, errNil("PortInfo.MarshalBinary")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p.Append(make([]byte, 0, PortInfoSize)), nil
}

// UnmarshalBinary is Decode.
func (p *PortInfo) UnmarshalBinary(b []byte) error {
	if p == nil {
		return errNil("PortInfo.UnmarshalBinary")
	}
	return p.Decode(b)
}
