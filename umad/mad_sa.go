package umad

import (
	"encoding/binary"

	"github.com/purerdma/rdma"
)

// The subnet administrator's records the diagnostic tools use:
// PathRecord, which resolves a GUID to a LID (libibmad's
// ib_path_query_via, as infiniband-diags' -G sends it), and
// MCMemberRecord, which joins a multicast group (IBA 15.2.5.16 and
// 15.2.5.17; libibmad's IB_SA_PR_*_F and IB_SA_MCM_*_F). A record sits
// in an SA MAD's data area at SADataOffset, after the SA header's
// ComponentMask (SACompMaskOffset), whose bits name the record's fields a
// query matches on.

// Offsets of the SA header's fields in a MAD (IBA 15.2.1.1; libibmad
// IB_SA_*_F, IB_SA_DATA_OFFS).
const (
	SASMKeyOffset             = 36 // SM_Key, 8 bytes
	SAAttrOffsetOffset        = 44 // AttributeOffset, 2 bytes, in 8-byte words
	SACompMaskOffset          = 48 // ComponentMask, 8 bytes
	SADataOffset              = 56 // the record(s), 200 bytes
	SAClassVersion            = 2
	SADefaultQKey      uint32 = 0x80010000 // IB_DEFAULT_QP1_QKEY
)

// SA attributes (IBA 15.2.5; libibmad IB_SA_ATTR_*).
const (
	SAAttrNodeRecord     AttrID = 0x0011
	SAAttrPortInfoRecord AttrID = 0x0012
	SAAttrPathRecord     AttrID = 0x0035
	SAAttrMCMemberRecord AttrID = 0x0038
)

// PathRecord component mask bits (IBA 15.2.5.16; libibmad's
// IB_PR_COMPMASK_*). PRDefaultMask is IB_PR_DEF_MASK, what
// ib_path_query_via matches on: the two GIDs.
const (
	PRCompServiceID uint64 = 3 << 0 // ServiceID's two halves
	PRCompDGID      uint64 = 1 << 2
	PRCompSGID      uint64 = 1 << 3
	PRCompDLID      uint64 = 1 << 4
	PRCompSLID      uint64 = 1 << 5
	PRCompPKey      uint64 = 1 << 13
	PRCompSL        uint64 = 1 << 15
	PRDefaultMask          = PRCompDGID | PRCompSGID
)

// PathRecordSize is the size of a PathRecord (IB_SA_PR_RECSZ).
const PathRecordSize = 64

// PathRecord is the SA attribute PathRecord (IBA 15.2.5.16). Bit
// offsets, most significant bit first:
//
//	0 ServiceID (64)      64 DGID (128)        192 SGID (128)
//	320 DLID (16)         336 SLID (16)        352 RawTraffic (1)
//	356 FlowLabel (20)    376 HopLimit (8)     384 TClass (8)
//	392 Reversible (1)    393 NumbPath (7)     400 PKey (16)
//	416 QoSClass (12)     428 SL (4)           432 MTUSelector (2)
//	434 MTU (6)           440 RateSelector (2) 442 Rate (6)
//	448 PacketLifeTimeSelector (2)             450 PacketLifeTime (6)
//	456 Preference (8)
//
// Bits 353 to 355 and 464 to 511 are reserved.
type PathRecord struct {
	ServiceID    uint64
	DGID, SGID   rdma.GID
	DLID, SLID   uint16
	RawTraffic   bool
	FlowLabel    uint32 // 20 bits
	HopLimit     uint8
	TClass       uint8
	Reversible   bool
	NumbPath     uint8  // 7 bits
	PKey         uint16 // P_Key
	QoSClass     uint16 // 12 bits
	SL           uint8  // 4 bits
	MTUSelector  uint8  // 2 bits
	MTU          uint8  // 6 bits
	RateSelector uint8  // 2 bits
	Rate         uint8  // 6 bits
	// PacketLifeTimeSelector (2 bits) and PacketLifeTime (6 bits).
	PacketLifeTimeSelector uint8
	PacketLifeTime         uint8
	Preference             uint8
}

var errPathRecordShort = madError("PathRecord needs 64 bytes", ErrShortMAD)

// AttributeID returns SAAttrPathRecord.
func (r *PathRecord) AttributeID() AttrID {
	if r == nil {
		return 0
	}
	return SAAttrPathRecord
}

// Append appends the 64-byte record to b; fields wider than their bits
// are truncated (Validate reports them).
func (r *PathRecord) Append(b []byte) []byte {
	if r == nil {
		return b
	}
	b, t := grow(b, PathRecordSize)
	binary.BigEndian.PutUint64(t[0:8], r.ServiceID)
	copy(t[8:24], r.DGID[:])
	copy(t[24:40], r.SGID[:])
	binary.BigEndian.PutUint16(t[40:42], r.DLID)
	binary.BigEndian.PutUint16(t[42:44], r.SLID)
	w := (r.FlowLabel&0xfffff)<<8 | uint32(r.HopLimit)
	if r.RawTraffic {
		w |= 1 << 31
	}
	binary.BigEndian.PutUint32(t[44:48], w)
	t[48] = r.TClass
	t[49] = bit(r.Reversible, 7) | r.NumbPath&0x7f
	binary.BigEndian.PutUint16(t[50:52], r.PKey)
	binary.BigEndian.PutUint16(t[52:54], (r.QoSClass&0xfff)<<4|uint16(r.SL&0xf))
	t[54] = r.MTUSelector<<6 | r.MTU&0x3f
	t[55] = r.RateSelector<<6 | r.Rate&0x3f
	t[56] = r.PacketLifeTimeSelector<<6 | r.PacketLifeTime&0x3f
	t[57] = r.Preference
	return b
}

// Decode sets r from the first 64 bytes of b (an SA MAD's data area at
// SADataOffset, say), ignoring the reserved bits. It returns an error
// wrapping ErrShortMAD when b is shorter.
func (r *PathRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("PathRecord.Decode")
	}
	if len(b) < PathRecordSize {
		return errPathRecordShort
	}
	w := binary.BigEndian.Uint32(b[44:48])
	qs := binary.BigEndian.Uint16(b[52:54])
	*r = PathRecord{
		ServiceID:              binary.BigEndian.Uint64(b[0:8]),
		DLID:                   binary.BigEndian.Uint16(b[40:42]),
		SLID:                   binary.BigEndian.Uint16(b[42:44]),
		RawTraffic:             w>>31 != 0,
		FlowLabel:              w >> 8 & 0xfffff,
		HopLimit:               uint8(w),
		TClass:                 b[48],
		Reversible:             b[49]&0x80 != 0,
		NumbPath:               b[49] & 0x7f,
		PKey:                   binary.BigEndian.Uint16(b[50:52]),
		QoSClass:               qs >> 4,
		SL:                     uint8(qs & 0xf),
		MTUSelector:            b[54] >> 6,
		MTU:                    b[54] & 0x3f,
		RateSelector:           b[55] >> 6,
		Rate:                   b[55] & 0x3f,
		PacketLifeTimeSelector: b[56] >> 6,
		PacketLifeTime:         b[56] & 0x3f,
		Preference:             b[57],
	}
	copy(r.DGID[:], b[8:24])
	copy(r.SGID[:], b[24:40])
	return nil
}

// Validate returns an error wrapping ErrFieldRange for a field wider
// than its bits.
func (r *PathRecord) Validate() error {
	if r == nil {
		return errNil("PathRecord.Validate")
	}
	c := fieldCheck{what: "PathRecord"}
	c.width("FlowLabel", uint64(r.FlowLabel), 20)
	c.width("NumbPath", uint64(r.NumbPath), 7)
	c.width("QoSClass", uint64(r.QoSClass), 12)
	c.width("SL", uint64(r.SL), 4)
	c.width("MTUSelector", uint64(r.MTUSelector), 2)
	c.width("MTU", uint64(r.MTU), 6)
	c.width("RateSelector", uint64(r.RateSelector), 2)
	c.width("Rate", uint64(r.Rate), 6)
	c.width("PacketLifeTimeSelector", uint64(r.PacketLifeTimeSelector), 2)
	c.width("PacketLifeTime", uint64(r.PacketLifeTime), 6)
	return c.err
}

// MarshalBinary returns the 64-byte record, or Validate's error.
func (r *PathRecord) MarshalBinary() ([]byte, error) {
	if r == nil {
		return nil, errNil("PathRecord.MarshalBinary")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r.Append(make([]byte, 0, PathRecordSize)), nil
}

// UnmarshalBinary is Decode.
func (r *PathRecord) UnmarshalBinary(b []byte) error {
	if r == nil {
		return errNil("PathRecord.UnmarshalBinary")
	}
	return r.Decode(b)
}

// MCMemberRecord component mask bits (IBA 15.2.5.17; libibmad's
// IB_MCR_COMPMASK_*).
const (
	MCMCompMGID      uint64 = 1 << 0
	MCMCompPortGID   uint64 = 1 << 1
	MCMCompQKey      uint64 = 1 << 2
	MCMCompMLID      uint64 = 1 << 3
	MCMCompMTU       uint64 = 3 << 4 // MTUSelector and MTU
	MCMCompTClass    uint64 = 1 << 6
	MCMCompPKey      uint64 = 1 << 7
	MCMCompRate      uint64 = 3 << 8 // RateSelector and Rate
	MCMCompLife      uint64 = 3 << 10
	MCMCompSL        uint64 = 1 << 12
	MCMCompFlowLabel uint64 = 1 << 13
	MCMCompHopLimit  uint64 = 1 << 14
	MCMCompScope     uint64 = 1 << 15
	MCMCompJoinState uint64 = 1 << 16
	MCMCompProxyJoin uint64 = 1 << 17
	// MCMCreateMask names what an SM needs to create a group with the
	// first join (OpenSM's required components).
	MCMCreateMask = MCMCompMGID | MCMCompPortGID | MCMCompQKey | MCMCompTClass | MCMCompPKey |
		MCMCompSL | MCMCompFlowLabel | MCMCompJoinState
)

// MCMemberRecordSize is the size of an MCMemberRecord (IB_SA_MCM_RECSZ).
const MCMemberRecordSize = 52

// MCMemberRecord is the SA attribute MCMemberRecord (IBA 15.2.5.17): an
// SubnAdmSet of it joins PortGID to the group MGID, an SubnAdmDelete
// leaves. Bit offsets, most significant bit first:
//
//	0 MGID (128)          128 PortGID (128)    256 QKey (32)
//	288 MLID (16)         304 MTUSelector (2)  306 MTU (6)
//	312 TClass (8)        320 PKey (16)        336 RateSelector (2)
//	338 Rate (6)          344 PacketLifeTimeSelector (2)
//	346 PacketLifeTime (6)  352 SL (4)         356 FlowLabel (20)
//	376 HopLimit (8)      384 Scope (4)        388 JoinState (4)
//	392 ProxyJoin (1)
//
// Bits 393 to 415 are reserved.
type MCMemberRecord struct {
	MGID, PortGID          rdma.GID
	QKey                   uint32
	MLID                   uint16
	MTUSelector, MTU       uint8 // 2 and 6 bits
	TClass                 uint8
	PKey                   uint16
	RateSelector, Rate     uint8  // 2 and 6 bits
	PacketLifeTimeSelector uint8  // 2 bits
	PacketLifeTime         uint8  // 6 bits
	SL                     uint8  // 4 bits
	FlowLabel              uint32 // 20 bits
	HopLimit               uint8
	Scope                  uint8 // 4 bits
	// JoinState is 4 bits: 1 full member, 2 non-member, 4 send-only
	// non-member.
	JoinState uint8
	ProxyJoin bool
}

var errMCMemberRecordShort = madError("MCMemberRecord needs 52 bytes", ErrShortMAD)

// AttributeID returns SAAttrMCMemberRecord.
func (r *MCMemberRecord) AttributeID() AttrID {
	if r == nil {
		return 0
	}
	return SAAttrMCMemberRecord
}

// Append appends the 52-byte record to b; fields wider than their bits
// are truncated (Validate reports them).
func (r *MCMemberRecord) Append(b []byte) []byte {
	if r == nil {
		return b
	}
	b, t := grow(b, MCMemberRecordSize)
	copy(t[0:16], r.MGID[:])
	copy(t[16:32], r.PortGID[:])
	binary.BigEndian.PutUint32(t[32:36], r.QKey)
	binary.BigEndian.PutUint16(t[36:38], r.MLID)
	t[38] = r.MTUSelector<<6 | r.MTU&0x3f
	t[39] = r.TClass
	binary.BigEndian.PutUint16(t[40:42], r.PKey)
	t[42] = r.RateSelector<<6 | r.Rate&0x3f
	t[43] = r.PacketLifeTimeSelector<<6 | r.PacketLifeTime&0x3f
	binary.BigEndian.PutUint32(t[44:48], uint32(r.SL&0xf)<<28|(r.FlowLabel&0xfffff)<<8|uint32(r.HopLimit))
	t[48] = r.Scope<<4 | r.JoinState&0xf
	t[49] = bit(r.ProxyJoin, 7)
	return b
}

// Decode sets r from the first 52 bytes of b, ignoring the reserved
// bits. It returns an error wrapping ErrShortMAD when b is shorter.
func (r *MCMemberRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("MCMemberRecord.Decode")
	}
	if len(b) < MCMemberRecordSize {
		return errMCMemberRecordShort
	}
	w := binary.BigEndian.Uint32(b[44:48])
	*r = MCMemberRecord{
		QKey:                   binary.BigEndian.Uint32(b[32:36]),
		MLID:                   binary.BigEndian.Uint16(b[36:38]),
		MTUSelector:            b[38] >> 6,
		MTU:                    b[38] & 0x3f,
		TClass:                 b[39],
		PKey:                   binary.BigEndian.Uint16(b[40:42]),
		RateSelector:           b[42] >> 6,
		Rate:                   b[42] & 0x3f,
		PacketLifeTimeSelector: b[43] >> 6,
		PacketLifeTime:         b[43] & 0x3f,
		SL:                     uint8(w >> 28),
		FlowLabel:              w >> 8 & 0xfffff,
		HopLimit:               uint8(w),
		Scope:                  b[48] >> 4,
		JoinState:              b[48] & 0xf,
		ProxyJoin:              b[49]&0x80 != 0,
	}
	copy(r.MGID[:], b[0:16])
	copy(r.PortGID[:], b[16:32])
	return nil
}

// Validate returns an error wrapping ErrFieldRange for a field wider
// than its bits.
func (r *MCMemberRecord) Validate() error {
	if r == nil {
		return errNil("MCMemberRecord.Validate")
	}
	c := fieldCheck{what: "MCMemberRecord"}
	c.width("MTUSelector", uint64(r.MTUSelector), 2)
	c.width("MTU", uint64(r.MTU), 6)
	c.width("RateSelector", uint64(r.RateSelector), 2)
	c.width("Rate", uint64(r.Rate), 6)
	c.width("PacketLifeTimeSelector", uint64(r.PacketLifeTimeSelector), 2)
	c.width("PacketLifeTime", uint64(r.PacketLifeTime), 6)
	c.width("SL", uint64(r.SL), 4)
	c.width("FlowLabel", uint64(r.FlowLabel), 20)
	c.width("Scope", uint64(r.Scope), 4)
	c.width("JoinState", uint64(r.JoinState), 4)
	return c.err
}

// MarshalBinary returns the 52-byte record, or Validate's error.
func (r *MCMemberRecord) MarshalBinary() ([]byte, error) {
	if r == nil {
		return nil, errNil("MCMemberRecord.MarshalBinary")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r.Append(make([]byte, 0, MCMemberRecordSize)), nil
}

// UnmarshalBinary is Decode.
func (r *MCMemberRecord) UnmarshalBinary(b []byte) error {
	if r == nil {
		return errNil("MCMemberRecord.UnmarshalBinary")
	}
	return r.Decode(b)
}
