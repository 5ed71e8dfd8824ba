package umad

// The SA records saquery shows most (IBA 15.2.5), decoded from a record
// of an SA answer (SAResponse.Records). Each Decode fails, wrapping
// ErrShortMAD, on a record shorter than the attribute, and never panics.

import (
	"encoding/binary"

	"github.com/purerdma/rdma"
)

// SA record sizes (IBA 15.2.5; the attributes without their padding).
const (
	NodeRecordSize     = 108
	PortInfoRecordSize = 68
	PathRecordSize     = 64
	LinkRecordSize     = 6
	SMInfoRecordSize   = 28
	MCMemberRecordSize = 52
)

// Component mask bits of the records' fields (IBA 15.2.5; libibmad's
// IB_*_COMPMASK_*): bit n selects the record's n-th field.
const (
	NRCompLID = 1 << 0

	PIRCompLID     = 1 << 0
	PIRCompPortNum = 1 << 1
	PIRCompOptions = 1 << 2
	PIRCompCapMask = 1 << 7

	PRCompServiceID  = 3 << 0 // ServiceID's two halves
	PRCompDGID       = 1 << 2
	PRCompSGID       = 1 << 3
	PRCompDLID       = 1 << 4
	PRCompSLID       = 1 << 5
	PRCompRawTraffic = 1 << 6
	PRCompFlowLabel  = 1 << 8
	PRCompHopLimit   = 1 << 9
	PRCompTClass     = 1 << 10
	PRCompReversible = 1 << 11
	PRCompNumbPath   = 1 << 12
	PRCompPKey       = 1 << 13
	PRCompQoSClass   = 1 << 14
	PRCompSL         = 1 << 15
	PRCompMTUSelect  = 1 << 16
	PRCompMTU        = 1 << 17
	PRCompRateSelect = 1 << 18
	PRCompRate       = 1 << 19
	PRCompLifeSelect = 1 << 20
	PRCompLife       = 1 << 21

	LRCompFromLID  = 1 << 0
	LRCompFromPort = 1 << 1
	LRCompToPort   = 1 << 2
	LRCompToLID    = 1 << 3

	SMIRCompLID = 1 << 0

	MCRCompMGID       = 1 << 0
	MCRCompPortGID    = 1 << 1
	MCRCompQKey       = 1 << 2
	MCRCompMLID       = 1 << 3
	MCRCompMTUSelect  = 1 << 4
	MCRCompMTU        = 1 << 5
	MCRCompTClass     = 1 << 6
	MCRCompPKey       = 1 << 7
	MCRCompRateSelect = 1 << 8
	MCRCompRate       = 1 << 9
	MCRCompLifeSelect = 1 << 10
	MCRCompLife       = 1 << 11
	MCRCompSL         = 1 << 12
	MCRCompFlowLabel  = 1 << 13
	MCRCompHopLimit   = 1 << 14
	MCRCompScope      = 1 << 15
	MCRCompJoinState  = 1 << 16
	MCRCompProxyJoin  = 1 << 17
)

var (
	errNRShort   = madError("a NodeRecord needs 108 bytes", &ErrShortMAD)
	errPIRShort  = madError("a PortInfoRecord needs 68 bytes", &ErrShortMAD)
	errPRShort   = madError("a PathRecord needs 64 bytes", &ErrShortMAD)
	errLRShort   = madError("a LinkRecord needs 6 bytes", &ErrShortMAD)
	errSMIRShort = madError("an SMInfoRecord needs 28 bytes", &ErrShortMAD)
	errMCRShort  = madError("an MCMemberRecord needs 52 bytes", &ErrShortMAD)
)

// NodeRecord is the SA's NodeRecord (IBA 15.2.5.2; ib_node_record_t):
// a node's NodeInfo and NodeDescription by the LID of the port.
type NodeRecord struct {
	LID      uint16
	Reserved uint16
	NodeInfo NodeInfo
	NodeDesc NodeDescription
}

// Decode sets n from the record b.
func (n *NodeRecord) Decode(b []byte) error {
	if n == nil {
		return errNil("NodeRecord.Decode")
	}
	if len(b) < NodeRecordSize {
		return errNRShort
	}
	n.LID = binary.BigEndian.Uint16(b[0:2])
	n.Reserved = binary.BigEndian.Uint16(b[2:4])
	_ = n.NodeInfo.Decode(b[4:44])
	copy(n.NodeDesc[:], b[44:108])
	return nil
}

// PortInfoRecord is the SA's PortInfoRecord (IBA 15.2.5.3;
// ib_portinfo_record_t): a port's PortInfo, raw (PortInfo decodes it), by
// its end port's LID and its number.
type PortInfoRecord struct {
	LID      uint16
	PortNum  uint8
	Options  uint8
	PortInfo [64]byte
}

// Decode sets p from the record b.
func (p *PortInfoRecord) Decode(b []byte) error {
	if p == nil {
		return errNil("PortInfoRecord.Decode")
	}
	if len(b) < PortInfoRecordSize {
		return errPIRShort
	}
	p.LID = binary.BigEndian.Uint16(b[0:2])
	p.PortNum, p.Options = b[2], b[3]
	copy(p.PortInfo[:], b[4:68])
	return nil
}

// PathRecord is the SA's PathRecord (IBA 15.2.5.16; ib_path_rec_t).
type PathRecord struct {
	ServiceID  uint64
	DGID, SGID rdma.GID
	DLID, SLID uint16
	// HopFlowRaw is RawTraffic (bit 31), FlowLabel (bits 27–8) and
	// HopLimit (bits 7–0).
	HopFlowRaw uint32
	TClass     uint8
	// NumPath is Reversible (bit 7) and NumbPath (bits 6–0).
	NumPath uint8
	PKey    uint16
	// QoSClass is 12 bits, SL 4.
	QoSClass uint16
	SL       uint8
	// MTU, Rate and PktLife carry their selector in bits 7–6.
	MTU, Rate, PktLife uint8
	Preference         uint8
	Reserved           [6]byte
}

// Decode sets p from the record b.
func (p *PathRecord) Decode(b []byte) error {
	if p == nil {
		return errNil("PathRecord.Decode")
	}
	if len(b) < PathRecordSize {
		return errPRShort
	}
	be := binary.BigEndian
	p.ServiceID = be.Uint64(b[0:8])
	copy(p.DGID[:], b[8:24])
	copy(p.SGID[:], b[24:40])
	p.DLID, p.SLID = be.Uint16(b[40:42]), be.Uint16(b[42:44])
	p.HopFlowRaw = be.Uint32(b[44:48])
	p.TClass, p.NumPath = b[48], b[49]
	p.PKey = be.Uint16(b[50:52])
	qs := be.Uint16(b[52:54])
	p.QoSClass, p.SL = qs>>4, uint8(qs&0xf)
	p.MTU, p.Rate, p.PktLife, p.Preference = b[54], b[55], b[56], b[57]
	copy(p.Reserved[:], b[58:64])
	return nil
}

// LinkRecord is the SA's LinkRecord (IBA 15.2.5.13; ib_link_record_t): a
// link from a port of one node to a port of another, by their LIDs.
type LinkRecord struct {
	FromLID  uint16
	FromPort uint8
	ToPort   uint8
	ToLID    uint16
}

// Decode sets l from the record b.
func (l *LinkRecord) Decode(b []byte) error {
	if l == nil {
		return errNil("LinkRecord.Decode")
	}
	if len(b) < LinkRecordSize {
		return errLRShort
	}
	l.FromLID = binary.BigEndian.Uint16(b[0:2])
	l.FromPort, l.ToPort = b[2], b[3]
	l.ToLID = binary.BigEndian.Uint16(b[4:6])
	return nil
}

// SMInfoRecord is the SA's SMInfoRecord (IBA 15.2.5.11;
// ib_sminfo_record_t): an SM's SMInfo by the LID of its port.
type SMInfoRecord struct {
	LID      uint16
	GUID     uint64
	SMKey    uint64
	ActCount uint32
	Priority uint8 // 4 bits
	State    uint8 // 4 bits: 0 not active, 1 discovering, 2 standby, 3 master
}

// Decode sets s from the record b.
func (s *SMInfoRecord) Decode(b []byte) error {
	if s == nil {
		return errNil("SMInfoRecord.Decode")
	}
	if len(b) < SMInfoRecordSize {
		return errSMIRShort
	}
	be := binary.BigEndian
	s.LID = be.Uint16(b[0:2])
	s.GUID, s.SMKey = be.Uint64(b[4:12]), be.Uint64(b[12:20])
	s.ActCount = be.Uint32(b[20:24])
	s.Priority, s.State = b[24]>>4, b[24]&0xf
	return nil
}

// MCMemberRecord is the SA's MCMemberRecord (IBA 15.2.5.17;
// ib_member_rec_t): a multicast group, or a port's membership of it.
type MCMemberRecord struct {
	MGID, PortGID rdma.GID
	QKey          uint32
	MLID          uint16
	// MTU, Rate and PktLife carry their selector in bits 7–6.
	MTU, TClass uint8
	PKey        uint16
	Rate        uint8
	PktLife     uint8
	SL          uint8  // 4 bits
	FlowLabel   uint32 // 20 bits
	HopLimit    uint8
	Scope       uint8 // 4 bits
	JoinState   uint8 // 4 bits
	// ProxyJoinByte is the byte holding ProxyJoin as it came: IBA puts
	// the flag in its bit 7, OpenSM's ib_member_rec_t (a C bit-field)
	// in bit 0 on little-endian hosts.
	ProxyJoinByte uint8
}

// Decode sets m from the record b.
func (m *MCMemberRecord) Decode(b []byte) error {
	if m == nil {
		return errNil("MCMemberRecord.Decode")
	}
	if len(b) < MCMemberRecordSize {
		return errMCRShort
	}
	be := binary.BigEndian
	copy(m.MGID[:], b[0:16])
	copy(m.PortGID[:], b[16:32])
	m.QKey = be.Uint32(b[32:36])
	m.MLID = be.Uint16(b[36:38])
	m.MTU, m.TClass = b[38], b[39]
	m.PKey = be.Uint16(b[40:42])
	m.Rate, m.PktLife = b[42], b[43]
	sfh := be.Uint32(b[44:48])
	m.SL, m.FlowLabel, m.HopLimit = uint8(sfh>>28), sfh>>8&0xfffff, uint8(sfh)
	m.Scope, m.JoinState = b[48]>>4, b[48]&0xf
	m.ProxyJoinByte = b[49]
	return nil
}

// Sizes of the other records saquery shows (IBA 15.2.5).
const (
	SL2VLTableRecordSize  = 16
	VLArbTableRecordSize  = 72
	PKeyTableRecordSize   = 72
	LFTRecordSize         = 72
	MFTRecordSize         = 72
	GUIDInfoRecordSize    = 72
	SwitchInfoRecordSize  = 24
	ServiceRecordSize     = 176
	InformInfoRecordSize  = 60
	lftRecordEntries      = 64
	mftRecordEntries      = 32
	pkeyRecordEntries     = 32
	vlarbRecordEntries    = 32
	guidInfoRecordEntries = 8
)

var (
	errSL2VLRShort = madError("an SL2VLTableRecord needs 16 bytes", &ErrShortMAD)
	errVLARShort   = madError("a VLArbitrationTableRecord needs 72 bytes", &ErrShortMAD)
	errPKTRShort   = madError("a P_KeyTableRecord needs 72 bytes", &ErrShortMAD)
	errLFTRShort   = madError("an LFTRecord needs 72 bytes", &ErrShortMAD)
	errMFTRShort   = madError("an MFTRecord needs 72 bytes", &ErrShortMAD)
	errGIRShort    = madError("a GUIDInfoRecord needs 72 bytes", &ErrShortMAD)
	errSWIRShort   = madError("a SwitchInfoRecord needs 24 bytes", &ErrShortMAD)
	errSRShort     = madError("a ServiceRecord needs 176 bytes", &ErrShortMAD)
	errIIRShort    = madError("an InformInfoRecord needs 60 bytes", &ErrShortMAD)
)

// SL2VLTableRecord is the SA's SL2VLMappingTableRecord (IBA 15.2.5.4;
// ib_slvl_table_record_t): a port's SL to VL table.
type SL2VLTableRecord struct {
	LID             uint16
	InPort, OutPort uint8
	// VL is the VL of each SL (4 bits each).
	VL [16]uint8
}

// Decode sets r from the record b.
func (r *SL2VLTableRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("SL2VLTableRecord.Decode")
	}
	if len(b) < SL2VLTableRecordSize {
		return errSL2VLRShort
	}
	r.LID = binary.BigEndian.Uint16(b[0:2])
	r.InPort, r.OutPort = b[2], b[3]
	for i := range r.VL {
		v := b[8+i/2]
		if i%2 == 0 {
			v >>= 4
		}
		r.VL[i] = v & 0xf
	}
	return nil
}

// VLArbEntry is one VL arbitration table entry: a VL (4 bits) and its
// weight.
type VLArbEntry struct{ VL, Weight uint8 }

// VLArbTableRecord is the SA's VLArbitrationTableRecord (IBA 15.2.5.9;
// ib_vl_arb_table_record_t): one block of a port's VL arbitration table.
type VLArbTableRecord struct {
	LID     uint16
	Port    uint8
	Block   uint8
	Entries [vlarbRecordEntries]VLArbEntry
}

// Decode sets r from the record b.
func (r *VLArbTableRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("VLArbTableRecord.Decode")
	}
	if len(b) < VLArbTableRecordSize {
		return errVLARShort
	}
	r.LID = binary.BigEndian.Uint16(b[0:2])
	r.Port, r.Block = b[2], b[3]
	for i := range r.Entries {
		r.Entries[i] = VLArbEntry{VL: b[8+2*i], Weight: b[9+2*i]}
	}
	return nil
}

// PKeyTableRecord is the SA's P_KeyTableRecord (IBA 15.2.5.11;
// ib_pkey_table_record_t): one block of 32 P_Keys of a port.
type PKeyTableRecord struct {
	LID   uint16
	Block uint16
	Port  uint8
	PKeys [pkeyRecordEntries]uint16
}

// Decode sets r from the record b.
func (r *PKeyTableRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("PKeyTableRecord.Decode")
	}
	if len(b) < PKeyTableRecordSize {
		return errPKTRShort
	}
	r.LID, r.Block, r.Port = binary.BigEndian.Uint16(b[0:2]), binary.BigEndian.Uint16(b[2:4]), b[4]
	for i := range r.PKeys {
		r.PKeys[i] = binary.BigEndian.Uint16(b[8+2*i:])
	}
	return nil
}

// LFTRecord is the SA's LinearForwardingTableRecord (IBA 15.2.5.6;
// ib_lft_record_t): the output ports of 64 LIDs of a switch, from
// Block×64.
type LFTRecord struct {
	LID   uint16
	Block uint16
	Ports [lftRecordEntries]uint8
}

// Decode sets r from the record b.
func (r *LFTRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("LFTRecord.Decode")
	}
	if len(b) < LFTRecordSize {
		return errLFTRShort
	}
	r.LID, r.Block = binary.BigEndian.Uint16(b[0:2]), binary.BigEndian.Uint16(b[2:4])
	copy(r.Ports[:], b[8:72])
	return nil
}

// MFTRecord is the SA's MulticastForwardingTableRecord (IBA 15.2.5.8;
// ib_mft_record_t): the port masks of 32 multicast LIDs of a switch, from
// 0xC000 + Block×32, for the 16 ports Position×16 on.
type MFTRecord struct {
	LID      uint16
	Position uint8  // 4 bits
	Block    uint16 // 9 bits
	Masks    [mftRecordEntries]uint16
}

// Decode sets r from the record b.
func (r *MFTRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("MFTRecord.Decode")
	}
	if len(b) < MFTRecordSize {
		return errMFTRShort
	}
	pb := binary.BigEndian.Uint16(b[2:4])
	r.LID, r.Position, r.Block = binary.BigEndian.Uint16(b[0:2]), uint8(pb>>12), pb&0x1ff
	for i := range r.Masks {
		r.Masks[i] = binary.BigEndian.Uint16(b[8+2*i:])
	}
	return nil
}

// GUIDInfoRecord is the SA's GUIDInfoRecord (IBA 15.2.5.18;
// ib_guidinfo_record_t): one block of 8 GUIDs of a port.
type GUIDInfoRecord struct {
	LID   uint16
	Block uint8
	GUIDs [guidInfoRecordEntries]uint64
}

// Decode sets r from the record b.
func (r *GUIDInfoRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("GUIDInfoRecord.Decode")
	}
	if len(b) < GUIDInfoRecordSize {
		return errGIRShort
	}
	r.LID, r.Block = binary.BigEndian.Uint16(b[0:2]), b[2]
	for i := range r.GUIDs {
		r.GUIDs[i] = binary.BigEndian.Uint64(b[8+8*i:])
	}
	return nil
}

// SwitchInfoRecord is the SA's SwitchInfoRecord (IBA 15.2.5.5;
// ib_switch_info_record_t): a switch's SwitchInfo by its LID, raw
// (SwitchInfo's 20 bytes as the SMP attribute).
type SwitchInfoRecord struct {
	LID        uint16
	SwitchInfo [20]byte
}

// Decode sets r from the record b.
func (r *SwitchInfoRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("SwitchInfoRecord.Decode")
	}
	if len(b) < SwitchInfoRecordSize {
		return errSWIRShort
	}
	r.LID = binary.BigEndian.Uint16(b[0:2])
	copy(r.SwitchInfo[:], b[4:24])
	return nil
}

// ServiceRecord is the SA's ServiceRecord (IBA 15.2.5.14;
// ib_service_record_t).
type ServiceRecord struct {
	ID     uint64
	GID    rdma.GID
	PKey   uint16
	Lease  uint32
	Key    [16]byte
	Name   [64]byte
	Data8  [16]uint8
	Data16 [8]uint16
	Data32 [4]uint32
	Data64 [2]uint64
}

// Decode sets r from the record b.
func (r *ServiceRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("ServiceRecord.Decode")
	}
	if len(b) < ServiceRecordSize {
		return errSRShort
	}
	be := binary.BigEndian
	r.ID = be.Uint64(b[0:8])
	copy(r.GID[:], b[8:24])
	r.PKey, r.Lease = be.Uint16(b[24:26]), be.Uint32(b[28:32])
	copy(r.Key[:], b[32:48])
	copy(r.Name[:], b[48:112])
	copy(r.Data8[:], b[112:128])
	for i := range r.Data16 {
		r.Data16[i] = be.Uint16(b[128+2*i:])
	}
	for i := range r.Data32 {
		r.Data32[i] = be.Uint32(b[144+4*i:])
	}
	for i := range r.Data64 {
		r.Data64[i] = be.Uint64(b[160+8*i:])
	}
	return nil
}

// InformInfoRecord is the SA's InformInfoRecord (IBA 15.2.5.12;
// ib_inform_info_record_t): a subscription to traps and notices.
type InformInfoRecord struct {
	SubscriberGID  rdma.GID
	SubscriberEnum uint16
	// The InformInfo (IBA 13.4.8.3).
	GID                    rdma.GID
	LIDRangeBegin          uint16
	LIDRangeEnd            uint16
	IsGeneric, Subscribe   uint8
	Type                   uint16
	TrapNumberOrDeviceID   uint16
	QPN                    uint32 // 24 bits
	RespTimeValue          uint8  // 5 bits
	ProducerTypeOrVendorID uint32 // 24 bits
}

// Decode sets r from the record b.
func (r *InformInfoRecord) Decode(b []byte) error {
	if r == nil {
		return errNil("InformInfoRecord.Decode")
	}
	if len(b) < InformInfoRecordSize {
		return errIIRShort
	}
	be := binary.BigEndian
	copy(r.SubscriberGID[:], b[0:16])
	r.SubscriberEnum = be.Uint16(b[16:18])
	ii := b[24:60]
	copy(r.GID[:], ii[0:16])
	r.LIDRangeBegin, r.LIDRangeEnd = be.Uint16(ii[16:18]), be.Uint16(ii[18:20])
	r.IsGeneric, r.Subscribe = ii[22], ii[23]
	r.Type, r.TrapNumberOrDeviceID = be.Uint16(ii[24:26]), be.Uint16(ii[26:28])
	qrt := be.Uint32(ii[28:32])
	r.QPN, r.RespTimeValue = qrt>>8, uint8(qrt&0x1f)
	r.ProducerTypeOrVendorID = get24(ii[33:36])
	return nil
}
