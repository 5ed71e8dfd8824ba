package umad

import (
	"bytes"
	"encoding/binary"
)

// Sizes of the parts of an SMP.
const (
	// SMPDataSize is the size of an SMP's data area (IB_SMP_DATA_SIZE),
	// at byte 64.
	SMPDataSize = 64
	// SMPMaxHops is the size of a directed-route SMP's InitialPath and
	// ReturnPath (IB_SMP_MAX_PATH_HOPS): entries 1 to 63 hold a hop's
	// port; entry 0 is unused.
	SMPMaxHops = 64
)

// SMPClassVersion is the class version of both SMP classes.
const SMPClassVersion = 1

// SMP is a subnet management packet (IBA 14.2.1.1 and 14.2.1.2, struct
// ib_smp), LID-routed (class SubnMgmt) or directed-route (class
// SubnMgmtDirectedRoute), sent and received on QP0:
//
//	bytes 0–23    common header (directed route: bytes 4–5 are D and a
//	              15-bit Status, byte 6 HopPointer, byte 7 HopCount)
//	bytes 24–31   M_Key
//	bytes 32–33   DrSLID (directed route; reserved when LID-routed)
//	bytes 34–35   DrDLID (directed route; reserved when LID-routed)
//	bytes 36–63   reserved
//	bytes 64–127  SMP data (the attribute)
//	bytes 128–191 InitialPath (directed route; reserved when LID-routed)
//	bytes 192–255 ReturnPath (directed route; reserved when LID-routed)
//
// Header.MgmtClass selects the layout. For a directed-route SMP the
// direction bit and the hop fields live in Direction, HopPointer and
// HopCount; Header.Status holds the other 15 status bits and
// Header.ClassSpecific is not used (Decode sets it to 0, Append ignores
// it). For a LID-routed SMP those three fields, DrSLID, DrDLID and the
// paths are not used: Decode leaves them zero and Append writes the
// reserved bytes as zero.
type SMP struct {
	// Header is the common MAD header; MgmtClass is ClassSubnMgmt or
	// ClassSubnMgmtDirectedRoute.
	Header MADHeader
	// Direction is the directed-route D bit: false on the way out
	// (requests), true on the way back (responses).
	Direction bool
	// HopPointer is the directed-route hop pointer.
	HopPointer uint8
	// HopCount is the number of hops of the directed route; SetInitialPath
	// sets it.
	HopCount uint8
	// MKey is the M_Key.
	MKey uint64
	// DrSLID is the directed-route source LID (PermissiveLID when the
	// route starts at the sender).
	DrSLID uint16
	// DrDLID is the directed-route destination LID (PermissiveLID when
	// the route ends at the target).
	DrDLID uint16
	// Data is the SMP data: the attribute (see SetAttribute and
	// Attribute).
	Data [SMPDataSize]byte
	// InitialPath holds the outbound port of each hop, from index 1.
	InitialPath [SMPMaxHops]byte
	// ReturnPath holds the inbound port of each hop, from index 1.
	ReturnPath [SMPMaxHops]byte
}

// Static errors of the SMP codec.
var (
	errSMPVersion  = madError("SMP", &ErrBaseVersion)
	errSMPClass    = madError("SMP: class is not SubnMgmt or SubnMgmtDirectedRoute", &ErrWrongClass)
	errSMPAttrSize = madError("SMP", &ErrAttributeSize)
	errSMPPath     = madError("SMP: a directed route has at most 63 hops", &ErrFieldRange)
)

// MADHeader returns &s.Header.
func (s *SMP) MADHeader() *MADHeader {
	if s == nil {
		return nil
	}
	return &s.Header
}

// DirectedRoute reports whether s is a directed-route SMP.
func (s *SMP) DirectedRoute() bool {
	if s == nil {
		return false
	}
	return s.Header.MgmtClass == ClassSubnMgmtDirectedRoute
}

// SetInitialPath sets a directed route's outbound ports: InitialPath[1:]
// = ports (the rest zeroed), HopCount = len(ports) and HopPointer = 0, as
// a requester starts a directed-route SMP. Zero ports address the local
// port. It returns an error wrapping ErrFieldRange for more than 63 ports.
func (s *SMP) SetInitialPath(ports ...uint8) error {
	if s == nil {
		return errNil("SMP.SetInitialPath")
	}
	if len(ports) > SMPMaxHops-1 {
		return errSMPPath
	}
	s.InitialPath = [SMPMaxHops]byte{}
	copy(s.InitialPath[1:], ports)
	s.HopCount = uint8(len(ports))
	s.HopPointer = 0
	return nil
}

// SetAttribute encodes a into Data (the rest of Data zeroed) and sets
// Header.AttributeID to a.AttributeID(). It returns an error wrapping
// ErrAttributeSize when a is larger than 64 bytes (ClassPortInfo is).
func (s *SMP) SetAttribute(a Attribute) error {
	if s == nil {
		return errNil("SMP.SetAttribute")
	}
	if err := setAttribute(s.Data[:], a, errSMPAttrSize); err != nil {
		return err
	}
	s.Header.AttributeID = a.AttributeID()
	return nil
}

// Attribute decodes Data as the attribute Header.AttributeID names:
// DecodeAttribute(Header.MgmtClass, Header.AttributeID, Data[:]).
func (s *SMP) Attribute() (Attribute, error) {
	if s == nil {
		return nil, errNil("SMP.Attribute")
	}
	return DecodeAttribute(s.Header.MgmtClass, s.Header.AttributeID, s.Data[:])
}

// Append appends the 256-byte SMP to b and returns the extended slice,
// reserved bytes zero. Values wider than their field (a Status with bit 15
// set in a directed-route SMP) are truncated; Validate reports them. It
// allocates only when b lacks the capacity.
func (s *SMP) Append(b []byte) []byte {
	if s == nil {
		return b
	}
	b, t := grow(b, MADSize)
	s.Header.put(t)
	binary.BigEndian.PutUint64(t[24:32], s.MKey)
	copy(t[64:128], s.Data[:])
	if s.DirectedRoute() {
		st := uint16(s.Header.Status) &^ uint16(StatusDirection)
		if s.Direction {
			st |= uint16(StatusDirection)
		}
		binary.BigEndian.PutUint16(t[4:6], st)
		t[6] = s.HopPointer
		t[7] = s.HopCount
		binary.BigEndian.PutUint16(t[32:34], s.DrSLID)
		binary.BigEndian.PutUint16(t[34:36], s.DrDLID)
		copy(t[128:192], s.InitialPath[:])
		copy(t[192:256], s.ReturnPath[:])
	}
	return b
}

// Decode sets s from exactly 256 bytes. It returns an error wrapping
// ErrShortMAD or ErrLongMAD for another length, ErrBaseVersion when the
// base version is not 1, and ErrWrongClass when the class is not one of
// the two SMP classes; s is unchanged on error. It does not allocate.
func (s *SMP) Decode(b []byte) error {
	if s == nil {
		return errNil("SMP.Decode")
	}
	if err := checkMAD(b); err != nil {
		return err
	}
	if b[0] != BaseVersion {
		return errSMPVersion
	}
	if !MgmtClass(b[1]).IsSubnMgmt() {
		return errSMPClass
	}
	*s = SMP{}
	s.Header.get(b)
	s.MKey = binary.BigEndian.Uint64(b[24:32])
	copy(s.Data[:], b[64:128])
	if s.DirectedRoute() {
		s.Direction = s.Header.Status&StatusDirection != 0
		s.Header.Status &^= StatusDirection
		s.HopPointer = b[6]
		s.HopCount = b[7]
		s.Header.ClassSpecific = 0
		s.DrSLID = binary.BigEndian.Uint16(b[32:34])
		s.DrDLID = binary.BigEndian.Uint16(b[34:36])
		copy(s.InitialPath[:], b[128:192])
		copy(s.ReturnPath[:], b[192:256])
	}
	return nil
}

// Validate reports what Append cannot carry or would silently drop: a base
// version other than 1 (ErrBaseVersion), a class other than the SMP
// classes (ErrWrongClass), and with ErrFieldRange a directed-route Status
// with bit 15 set or a non-zero ClassSpecific, or a LID-routed SMP with
// Direction, HopPointer, HopCount, DrSLID, DrDLID or a path set.
func (s *SMP) Validate() error {
	if s == nil {
		return errNil("SMP.Validate")
	}
	if s.Header.BaseVersion != BaseVersion {
		return errSMPVersion
	}
	if !s.Header.MgmtClass.IsSubnMgmt() {
		return errSMPClass
	}
	c := fieldCheck{what: "SMP"}
	if s.DirectedRoute() {
		c.width("Status", uint64(s.Header.Status), 15)
		c.unused("Header.ClassSpecific (directed route: HopPointer and HopCount)", uint64(s.Header.ClassSpecific))
	} else {
		c.unused("Direction (LID-routed)", uint64(b2u(s.Direction)))
		c.unused("HopPointer (LID-routed)", uint64(s.HopPointer))
		c.unused("HopCount (LID-routed)", uint64(s.HopCount))
		c.unused("DrSLID (LID-routed)", uint64(s.DrSLID))
		c.unused("DrDLID (LID-routed)", uint64(s.DrDLID))
		if s.InitialPath != ([SMPMaxHops]byte{}) || s.ReturnPath != ([SMPMaxHops]byte{}) {
			c.unused("InitialPath or ReturnPath (LID-routed)", 1)
		}
	}
	return c.err
}

// MarshalBinary returns the 256-byte SMP, or Validate's error.
func (s *SMP) MarshalBinary() ([]byte, error) {
	if s == nil {
		return nil, errNil("SMP.MarshalBinary")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s.Append(make([]byte, 0, MADSize)), nil
}

// UnmarshalBinary is Decode.
func (s *SMP) UnmarshalBinary(b []byte) error {
	if s == nil {
		return errNil("SMP.UnmarshalBinary")
	}
	return s.Decode(b)
}

// NodeInfoSize is the size of the NodeInfo attribute.
const NodeInfoSize = 40

// NodeInfo is the SMP attribute NodeInfo (IBA 14.2.5, struct
// ib_node_info; libibmad IB_NODE_*_F). Bit offsets from the start of the
// attribute, most significant bit first:
//
//	0 BaseVersion (8)      8 ClassVersion (8)   16 NodeType (8)
//	24 NumPorts (8)        32 SystemImageGUID (64)
//	96 NodeGUID (64)       160 PortGUID (64)    224 PartitionCap (16)
//	240 DeviceID (16)      256 Revision (32)    288 LocalPortNum (8)
//	296 VendorID (24)
type NodeInfo struct {
	// BaseVersion is the highest MAD base version supported.
	BaseVersion uint8
	// ClassVersion is the highest SMP class version supported.
	ClassVersion uint8
	// NodeType is 1 for a channel adapter, 2 a switch, 3 a router.
	NodeType uint8
	// NumPorts is the number of physical ports.
	NumPorts uint8
	// SystemImageGUID identifies the system the node belongs to.
	SystemImageGUID uint64
	// NodeGUID is the node's GUID.
	NodeGUID uint64
	// PortGUID is the GUID of the port the SMP came in on.
	PortGUID uint64
	// PartitionCap is the number of P_Key table entries.
	PartitionCap uint16
	// DeviceID is the vendor's device ID.
	DeviceID uint16
	// Revision is the device revision.
	Revision uint32
	// LocalPortNum is the number of the port the SMP came in on.
	LocalPortNum uint8
	// VendorID is the vendor's 24-bit IEEE OUI.
	VendorID uint32
}

var errNodeInfoShort = madError("NodeInfo needs 40 bytes", &ErrShortMAD)

// AttributeID returns SMAttrNodeInfo.
func (n *NodeInfo) AttributeID() AttrID {
	if n == nil {
		return 0
	}
	return SMAttrNodeInfo
}

// Append appends the 40-byte attribute to b; a VendorID wider than 24 bits
// is truncated (Validate reports it).
func (n *NodeInfo) Append(b []byte) []byte {
	if n == nil {
		return b
	}
	b, t := grow(b, NodeInfoSize)
	t[0] = n.BaseVersion
	t[1] = n.ClassVersion
	t[2] = n.NodeType
	t[3] = n.NumPorts
	binary.BigEndian.PutUint64(t[4:12], n.SystemImageGUID)
	binary.BigEndian.PutUint64(t[12:20], n.NodeGUID)
	binary.BigEndian.PutUint64(t[20:28], n.PortGUID)
	binary.BigEndian.PutUint16(t[28:30], n.PartitionCap)
	binary.BigEndian.PutUint16(t[30:32], n.DeviceID)
	binary.BigEndian.PutUint32(t[32:36], n.Revision)
	t[36] = n.LocalPortNum
	put24(t[37:40], n.VendorID)
	return b
}

// Decode sets n from the first 40 bytes of b (an SMP's Data, say). It
// returns an error wrapping ErrShortMAD when b is shorter. It does not
// allocate.
func (n *NodeInfo) Decode(b []byte) error {
	if n == nil {
		return errNil("NodeInfo.Decode")
	}
	if len(b) < NodeInfoSize {
		return errNodeInfoShort
	}
	n.BaseVersion = b[0]
	n.ClassVersion = b[1]
	n.NodeType = b[2]
	n.NumPorts = b[3]
	n.SystemImageGUID = binary.BigEndian.Uint64(b[4:12])
	n.NodeGUID = binary.BigEndian.Uint64(b[12:20])
	n.PortGUID = binary.BigEndian.Uint64(b[20:28])
	n.PartitionCap = binary.BigEndian.Uint16(b[28:30])
	n.DeviceID = binary.BigEndian.Uint16(b[30:32])
	n.Revision = binary.BigEndian.Uint32(b[32:36])
	n.LocalPortNum = b[36]
	n.VendorID = get24(b[37:40])
	return nil
}

// Validate returns an error wrapping ErrFieldRange when VendorID does not
// fit 24 bits.
func (n *NodeInfo) Validate() error {
	if n == nil {
		return errNil("NodeInfo.Validate")
	}
	c := fieldCheck{what: "NodeInfo"}
	c.width("VendorID", uint64(n.VendorID), 24)
	return c.err
}

// MarshalBinary returns the 40-byte attribute, or Validate's error.
func (n *NodeInfo) MarshalBinary() ([]byte, error) {
	if n == nil {
		return nil, errNil("NodeInfo.MarshalBinary")
	}
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return n.Append(make([]byte, 0, NodeInfoSize)), nil
}

// UnmarshalBinary is Decode.
func (n *NodeInfo) UnmarshalBinary(b []byte) error {
	if n == nil {
		return errNil("NodeInfo.UnmarshalBinary")
	}
	return n.Decode(b)
}

// NodeDescriptionSize is the size of the NodeDescription attribute.
const NodeDescriptionSize = 64

// NodeDescription is the SMP attribute NodeDescription (IBA 14.2.5): 64
// bytes of UTF-8 text, padded with NUL bytes, not necessarily
// NUL-terminated.
type NodeDescription [NodeDescriptionSize]byte

var (
	errNodeDescShort = madError("NodeDescription needs 64 bytes", &ErrShortMAD)
	errNodeDescLong  = madError("NodeDescription: text longer than 64 bytes", &ErrFieldRange)
)

// AttributeID returns SMAttrNodeDescription.
func (d *NodeDescription) AttributeID() AttrID {
	if d == nil {
		return 0
	}
	return SMAttrNodeDescription
}

// String returns the text up to the first NUL byte.
func (d *NodeDescription) String() string {
	if d == nil {
		return ""
	}
	s := d[:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

// SetString sets the text, NUL-padded. It returns an error wrapping
// ErrFieldRange, leaving d unchanged, when s is longer than 64 bytes.
func (d *NodeDescription) SetString(s string) error {
	if d == nil {
		return errNil("NodeDescription.SetString")
	}
	if len(s) > NodeDescriptionSize {
		return errNodeDescLong
	}
	*d = NodeDescription{}
	copy(d[:], s)
	return nil
}

// Append appends the 64 bytes to b.
func (d *NodeDescription) Append(b []byte) []byte {
	if d == nil {
		return b
	}
	return append(b, d[:]...)
}

// Decode sets d from the first 64 bytes of b. It returns an error wrapping
// ErrShortMAD when b is shorter. It does not allocate.
func (d *NodeDescription) Decode(b []byte) error {
	if d == nil {
		return errNil("NodeDescription.Decode")
	}
	if len(b) < NodeDescriptionSize {
		return errNodeDescShort
	}
	copy(d[:], b)
	return nil
}

// Validate reports nothing: every 64-byte value has a wire form.
func (d *NodeDescription) Validate() error {
	if d == nil {
		return errNil("NodeDescription.Validate")
	}
	return nil
}

// MarshalBinary returns the 64 bytes.
func (d *NodeDescription) MarshalBinary() ([]byte, error) {
	if d == nil {
		return nil, errNil("NodeDescription.MarshalBinary")
	}
	return d.Append(make([]byte, 0, NodeDescriptionSize)), nil
}

// UnmarshalBinary is Decode.
func (d *NodeDescription) UnmarshalBinary(b []byte) error {
	if d == nil {
		return errNil("NodeDescription.UnmarshalBinary")
	}
	return d.Decode(b)
}
