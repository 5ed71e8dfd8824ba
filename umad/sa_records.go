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
	errNRShort   = madError("a NodeRecord needs 108 bytes", ErrShortMAD)
	errPIRShort  = madError("a PortInfoRecord needs 68 bytes", ErrShortMAD)
	errPRShort   = madError("a PathRecord needs 64 bytes", ErrShortMAD)
	errLRShort   = madError("a LinkRecord needs 6 bytes", ErrShortMAD)
	errSMIRShort = madError("an SMInfoRecord needs 28 bytes", ErrShortMAD)
	errMCRShort  = madError("an MCMemberRecord needs 52 bytes", ErrShortMAD)
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
