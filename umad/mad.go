package umad

// MAD codecs: the InfiniBand Architecture Specification (IBA) Volume 1
// management datagram layouts — the common MAD header (IBA 13.4.2), subnet
// management packets (14.2.1), performance management (16.1), vendor-class
// MADs with an OUI (13.4.2, 13.6) — as Go values that encode and decode
// themselves. The bit layouts follow the spec's tables as rdma-core's
// libibmad (libibmad/fields.c) and the kernel (include/rdma/ib_mad.h,
// ib_smi.h, ib_pma.h) implement them. All wire formats are big-endian.
//
// Every type has MarshalBinary/UnmarshalBinary and the allocation-free pair
// Append(b []byte) []byte and Decode(b []byte) error. Decoders check every
// length, never panic and do not allocate; Append allocates only when b
// lacks the capacity.

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Sizes of IBA MADs and of the fixed parts inside them.
const (
	// MADSize is the size of every IBA MAD (IB_MGMT_MAD_SIZE): the
	// common header and MADDataSize bytes of class data.
	MADSize = 256
	// MADHeaderSize is the size of the common MAD header
	// (struct ib_mad_hdr, IB_MGMT_MAD_HDR).
	MADHeaderSize = 24
	// MADDataSize is the size of everything after the common header
	// (IB_MGMT_MAD_DATA).
	MADDataSize = MADSize - MADHeaderSize
	// RMPPHeaderSize is the size of the RMPP header that follows the
	// common header in RMPP-capable classes (struct ib_rmpp_hdr).
	RMPPHeaderSize = 12
)

// BaseVersion is the MAD base version of IBA MADs, the only one these
// codecs decode (OPA's 0x80 is not supported).
const BaseVersion = 1

// PermissiveLID is the permissive LID (0xFFFF). A directed-route SMP has it
// as DrSLID when the directed part of its route starts at the requester,
// and as DrDLID when it ends at the destination.
const PermissiveLID = 0xFFFF

// OUIOpenIB is the OpenIB OUI (IB_OPENIB_OUI), which libibumad registers
// with and infiniband-diags' vendor classes use.
const OUIOpenIB = 0x001405

// MgmtClass is a MAD's management class (MgmtClass, IBA 13.4.4).
type MgmtClass uint8

// Management classes (include/rdma/ib_mad.h, libibmad mad.h).
const (
	ClassSubnMgmt              MgmtClass = 0x01 // SMP, LID-routed (QP0)
	ClassSubnAdm               MgmtClass = 0x03 // subnet administration (SA)
	ClassPerfMgmt              MgmtClass = 0x04 // performance management (PMA)
	ClassBM                    MgmtClass = 0x05 // baseboard management
	ClassDevMgmt               MgmtClass = 0x06 // device management
	ClassCM                    MgmtClass = 0x07 // communication management
	ClassSNMP                  MgmtClass = 0x08 // SNMP tunneling
	ClassVendorRange1Start     MgmtClass = 0x09 // first vendor class without OUI
	ClassVendorRange1End       MgmtClass = 0x0F // last vendor class without OUI
	ClassDevAdm                MgmtClass = 0x10 // device administration
	ClassBootMgmt              MgmtClass = 0x11 // boot management
	ClassBIS                   MgmtClass = 0x12 // BIS
	ClassCongestionMgmt        MgmtClass = 0x21 // congestion control
	ClassVendorRange2Start     MgmtClass = 0x30 // first vendor class with OUI
	ClassVendorRange2End       MgmtClass = 0x4F // last vendor class with OUI
	ClassSubnMgmtDirectedRoute MgmtClass = 0x81 // SMP, directed route (QP0)
)

// IsSubnMgmt reports whether c is one of the two SMP classes, SubnMgmt
// (LID-routed) or SubnMgmtDirectedRoute, which travel on QP0.
func (c MgmtClass) IsSubnMgmt() bool {
	return c == ClassSubnMgmt || c == ClassSubnMgmtDirectedRoute
}

// IsVendorRange1 reports whether c is a vendor class without OUI
// (0x09–0x0F): the class data follows the common header directly.
func (c MgmtClass) IsVendorRange1() bool {
	return c >= ClassVendorRange1Start && c <= ClassVendorRange1End
}

// IsVendorRange2 reports whether c is a vendor class with OUI (0x30–0x4F),
// laid out as VendorMAD.
func (c MgmtClass) IsVendorRange2() bool {
	return c >= ClassVendorRange2Start && c <= ClassVendorRange2End
}

// String returns the class's name as IBA spells it, or its number.
func (c MgmtClass) String() string {
	switch c {
	case ClassSubnMgmt:
		return "SubnMgmt"
	case ClassSubnMgmtDirectedRoute:
		return "SubnMgmtDirectedRoute"
	case ClassSubnAdm:
		return "SubnAdm"
	case ClassPerfMgmt:
		return "PerfMgmt"
	case ClassBM:
		return "BM"
	case ClassDevMgmt:
		return "DevMgmt"
	case ClassCM:
		return "CM"
	case ClassSNMP:
		return "SNMP"
	case ClassDevAdm:
		return "DevAdm"
	case ClassBootMgmt:
		return "BootMgmt"
	case ClassBIS:
		return "BIS"
	case ClassCongestionMgmt:
		return "CongestionMgmt"
	}
	switch {
	case c.IsVendorRange1():
		return fmt.Sprintf("Vendor1(%#02x)", uint8(c))
	case c.IsVendorRange2():
		return fmt.Sprintf("Vendor2(%#02x)", uint8(c))
	}
	return fmt.Sprintf("MgmtClass(%#02x)", uint8(c))
}

// defaultClassVersion is the current IBA class version of c: 2 for SA, CM
// and congestion control, 1 for every other class.
func defaultClassVersion(c MgmtClass) uint8 {
	switch c {
	case ClassSubnAdm, ClassCM, ClassCongestionMgmt:
		return 2
	}
	return 1
}

// Method is a MAD's method (IBA 13.4.2), response bit included.
type Method uint8

// Methods (libibmad mad.h, include/rdma/ib_mad.h). The response forms have
// MethodResponseBit set.
const (
	MethodGet               Method = 0x01
	MethodSet               Method = 0x02
	MethodSend              Method = 0x03
	MethodTrap              Method = 0x05
	MethodReport            Method = 0x06
	MethodTrapRepress       Method = 0x07 // the answer to a Trap; has no response bit
	MethodGetTable          Method = 0x12 // SA
	MethodGetTraceTable     Method = 0x13 // SA
	MethodGetMulti          Method = 0x14 // SA
	MethodDelete            Method = 0x15 // SA
	MethodGetResp           Method = 0x81 // the answer to Get and to Set
	MethodReportResp        Method = 0x86
	MethodGetTableResp      Method = 0x92
	MethodGetTraceTableResp Method = 0x93
	MethodGetMultiResp      Method = 0x94
	MethodDeleteResp        Method = 0x95
	MethodResponseBit       Method = 0x80 // R: set in every response method
)

// IsResponse reports whether m has the response bit set. TrapRepress,
// which answers a Trap without that bit, is not counted.
func (m Method) IsResponse() bool { return m&MethodResponseBit != 0 }

// Response returns the method that answers m: GetResp for Get and Set,
// TrapRepress for Trap, m with the response bit set otherwise.
func (m Method) Response() Method {
	switch m {
	case MethodGet, MethodSet:
		return MethodGetResp
	case MethodTrap:
		return MethodTrapRepress
	}
	return m | MethodResponseBit
}

// String returns the method's name as IBA spells it, or its number.
func (m Method) String() string {
	switch m {
	case MethodGet:
		return "Get"
	case MethodSet:
		return "Set"
	case MethodSend:
		return "Send"
	case MethodTrap:
		return "Trap"
	case MethodReport:
		return "Report"
	case MethodTrapRepress:
		return "TrapRepress"
	case MethodGetTable:
		return "GetTable"
	case MethodGetTraceTable:
		return "GetTraceTable"
	case MethodGetMulti:
		return "GetMulti"
	case MethodDelete:
		return "Delete"
	case MethodGetResp:
		return "GetResp"
	case MethodReportResp:
		return "ReportResp"
	case MethodGetTableResp:
		return "GetTableResp"
	case MethodGetTraceTableResp:
		return "GetTraceTableResp"
	case MethodGetMultiResp:
		return "GetMultiResp"
	case MethodDeleteResp:
		return "DeleteResp"
	}
	return fmt.Sprintf("Method(%#02x)", uint8(m))
}

// MADStatus is a MAD's 16-bit Status field (IBA 13.4.7): bit 0 busy, bit 1
// redirect required, bits 2–4 a code for an invalid field, bits 8–15
// class-specific. In directed-route SMPs bit 15 is the direction bit, which
// SMP keeps apart in its Direction field.
type MADStatus uint16

// Status bits and codes (include/rdma/ib_mad.h).
const (
	StatusBusy                  MADStatus = 0x0001 // busy, try again later
	StatusRedirectRequired      MADStatus = 0x0002 // see ClassPortInfo for where to
	StatusBadVersion            MADStatus = 0x0004 // code 1: bad base or class version
	StatusMethodUnsupported     MADStatus = 0x0008 // code 2: method not supported
	StatusMethodAttrUnsupported MADStatus = 0x000C // code 3: method/attribute combination not supported
	StatusInvalidAttrValue      MADStatus = 0x001C // code 7: a field of the attribute or modifier is invalid
	StatusCodeMask              MADStatus = 0x001C // the 3-bit invalid-field code, bits 2–4
	StatusDirection             MADStatus = 0x8000 // directed-route SMPs: the D bit
)

// Code returns the invalid-field code, s&StatusCodeMask: 0 (none),
// StatusBadVersion, StatusMethodUnsupported, StatusMethodAttrUnsupported,
// StatusInvalidAttrValue, or a reserved code.
func (s MADStatus) Code() MADStatus { return s & StatusCodeMask }

// String describes the status, e.g. "0x000c (method/attribute unsupported)".
func (s MADStatus) String() string {
	var what string
	switch s.Code() {
	case 0:
		what = "ok"
	case StatusBadVersion:
		what = "bad version"
	case StatusMethodUnsupported:
		what = "method unsupported"
	case StatusMethodAttrUnsupported:
		what = "method/attribute unsupported"
	case StatusInvalidAttrValue:
		what = "invalid attribute value"
	default:
		what = "reserved code"
	}
	if s&StatusBusy != 0 {
		what += ", busy"
	}
	if s&StatusRedirectRequired != 0 {
		what += ", redirect required"
	}
	// fmt.Sprintf("%#04x (%s)", uint16(s), what), without fmt: a tool
	// that fails on a status prints this, and fmt's formatting is code and
	// heap the run otherwise does not touch (docs/performance.md, "Per
	// tool").
	const hex = "0123456789abcdef"
	return string([]byte{'0', 'x', hex[s>>12&0xf], hex[s>>8&0xf], hex[s>>4&0xf], hex[s&0xf], ' ', '('}) + what + ")"
}

// AttrID is a MAD's attribute ID (IBA 13.4.2). Attribute IDs are scoped by
// management class (0x0012 is SwitchInfo in SubnMgmt and PortCounters in
// PerfMgmt), hence the class prefixes of the constants.
type AttrID uint16

// Attributes common to all classes (IBA 13.4.8).
const (
	AttrClassPortInfo AttrID = 0x0001
	AttrNotice        AttrID = 0x0002
	AttrInformInfo    AttrID = 0x0003
)

// Subnet management attributes (include/rdma/ib_smi.h, libibmad mad.h).
const (
	SMAttrNodeDescription          AttrID = 0x0010
	SMAttrNodeInfo                 AttrID = 0x0011
	SMAttrSwitchInfo               AttrID = 0x0012
	SMAttrGUIDInfo                 AttrID = 0x0014
	SMAttrPortInfo                 AttrID = 0x0015
	SMAttrPKeyTable                AttrID = 0x0016
	SMAttrSLToVLTable              AttrID = 0x0017
	SMAttrVLArbitrationTable       AttrID = 0x0018
	SMAttrLinearForwardingTable    AttrID = 0x0019
	SMAttrRandomForwardingTable    AttrID = 0x001A
	SMAttrMulticastForwardingTable AttrID = 0x001B
	SMAttrSMInfo                   AttrID = 0x0020
	SMAttrVendorDiag               AttrID = 0x0030
	SMAttrLEDInfo                  AttrID = 0x0031
	SMAttrPortInfoExtended         AttrID = 0x0033
)

// Performance management attributes (include/rdma/ib_pma.h, libibmad
// mad.h).
const (
	PMAttrPortSamplesControl            AttrID = 0x0010
	PMAttrPortSamplesResult             AttrID = 0x0011
	PMAttrPortCounters                  AttrID = 0x0012
	PMAttrPortRcvErrorDetails           AttrID = 0x0015
	PMAttrPortXmitDiscardDetails        AttrID = 0x0016
	PMAttrPortOpRcvCounters             AttrID = 0x0017
	PMAttrPortFlowCtlCounters           AttrID = 0x0018
	PMAttrPortVLOpPackets               AttrID = 0x0019
	PMAttrPortVLOpData                  AttrID = 0x001A
	PMAttrPortVLXmitFlowCtlUpdateErrors AttrID = 0x001B
	PMAttrPortVLXmitWaitCounters        AttrID = 0x001C
	PMAttrPortCountersExtended          AttrID = 0x001D
	PMAttrPortSamplesResultExtended     AttrID = 0x001E
	PMAttrPortExtendedSpeedsCounters    AttrID = 0x001F
	PMAttrSwPortVLCongestion            AttrID = 0x0030
	PMAttrPortRcvConCtrl                AttrID = 0x0031
	PMAttrPortSLRcvFECN                 AttrID = 0x0032
	PMAttrPortSLRcvBECN                 AttrID = 0x0033
	PMAttrPortXmitConCtrl               AttrID = 0x0034
	PMAttrPortVLXmitTimeCong            AttrID = 0x0035
	PMAttrPortXmitDataSL                AttrID = 0x0036
	PMAttrPortRcvDataSL                 AttrID = 0x0037
)

// MADHeader is the common MAD header (IBA 13.4.2, struct ib_mad_hdr), the
// first MADHeaderSize (24) bytes of every MAD:
//
//	byte 0      BaseVersion
//	byte 1      MgmtClass
//	byte 2      ClassVersion
//	byte 3      Method (bit 7: response)
//	bytes 4–5   Status
//	bytes 6–7   ClassSpecific
//	bytes 8–15  TransactionID
//	bytes 16–17 AttributeID
//	bytes 18–19 Reserved
//	bytes 20–23 AttributeModifier
type MADHeader struct {
	// BaseVersion is the MAD format version: BaseVersion (1) for IBA.
	BaseVersion uint8
	// MgmtClass is the management class.
	MgmtClass MgmtClass
	// ClassVersion is the version of the class's protocol.
	ClassVersion uint8
	// Method is the method, response bit included.
	Method Method
	// Status is the status, set in responses.
	Status MADStatus
	// ClassSpecific is the class-specific word (hop pointer and hop count
	// in directed-route SMPs, which SMP decodes into its own fields).
	ClassSpecific uint16
	// TransactionID matches a response to its request. For requests sent
	// through umad the kernel replaces the upper 32 bits with the
	// agent's; only the lower 32 are the sender's.
	TransactionID uint64
	// AttributeID names the attribute the MAD carries.
	AttributeID AttrID
	// Reserved is the reserved word after AttributeID, carried through
	// unchanged; senders set it to 0.
	Reserved uint16
	// AttributeModifier qualifies the attribute (a port number, a table
	// block, ...).
	AttributeModifier uint32
}

// NewMADHeader returns the header of a request: BaseVersion 1, the class's
// current ClassVersion (2 for SubnAdm, CM and CongestionMgmt, 1 otherwise;
// set the field afterwards for another), and the given method, attribute,
// modifier and transaction ID.
func NewMADHeader(class MgmtClass, method Method, attr AttrID, modifier uint32, tid uint64) MADHeader {
	return MADHeader{
		BaseVersion:       BaseVersion,
		MgmtClass:         class,
		ClassVersion:      defaultClassVersion(class),
		Method:            method,
		TransactionID:     tid,
		AttributeID:       attr,
		AttributeModifier: modifier,
	}
}

var errHeaderShort = madError("MAD header needs 24 bytes", &ErrShortMAD)

// put writes h into b[:MADHeaderSize].
func (h *MADHeader) put(b []byte) {
	_ = b[MADHeaderSize-1]
	b[0] = h.BaseVersion
	b[1] = uint8(h.MgmtClass)
	b[2] = h.ClassVersion
	b[3] = uint8(h.Method)
	binary.BigEndian.PutUint16(b[4:6], uint16(h.Status))
	binary.BigEndian.PutUint16(b[6:8], h.ClassSpecific)
	binary.BigEndian.PutUint64(b[8:16], h.TransactionID)
	binary.BigEndian.PutUint16(b[16:18], uint16(h.AttributeID))
	binary.BigEndian.PutUint16(b[18:20], h.Reserved)
	binary.BigEndian.PutUint32(b[20:24], h.AttributeModifier)
}

// get reads h from b[:MADHeaderSize]; the caller checked the length.
func (h *MADHeader) get(b []byte) {
	_ = b[MADHeaderSize-1]
	h.BaseVersion = b[0]
	h.MgmtClass = MgmtClass(b[1])
	h.ClassVersion = b[2]
	h.Method = Method(b[3])
	h.Status = MADStatus(binary.BigEndian.Uint16(b[4:6]))
	h.ClassSpecific = binary.BigEndian.Uint16(b[6:8])
	h.TransactionID = binary.BigEndian.Uint64(b[8:16])
	h.AttributeID = AttrID(binary.BigEndian.Uint16(b[16:18]))
	h.Reserved = binary.BigEndian.Uint16(b[18:20])
	h.AttributeModifier = binary.BigEndian.Uint32(b[20:24])
}

// Append appends the 24-byte header to b and returns the extended slice.
// It allocates only when b lacks the capacity.
func (h *MADHeader) Append(b []byte) []byte {
	if h == nil {
		return b
	}
	b, t := grow(b, MADHeaderSize)
	h.put(t)
	return b
}

// Decode sets h from the first 24 bytes of b, which may be a whole MAD (or
// the header-only record umad returns for a timed-out send). It returns an
// error wrapping ErrShortMAD when b is shorter. It does not allocate.
func (h *MADHeader) Decode(b []byte) error {
	if h == nil {
		return errNil("MADHeader.Decode")
	}
	if len(b) < MADHeaderSize {
		return errHeaderShort
	}
	h.get(b)
	return nil
}

// Validate reports nothing: every value of every field has a wire form. It
// exists so that all MAD types share the method.
func (h *MADHeader) Validate() error {
	if h == nil {
		return errNil("MADHeader.Validate")
	}
	return nil
}

// MarshalBinary returns the 24-byte header.
func (h *MADHeader) MarshalBinary() ([]byte, error) {
	if h == nil {
		return nil, errNil("MADHeader.MarshalBinary")
	}
	return h.Append(make([]byte, 0, MADHeaderSize)), nil
}

// UnmarshalBinary is Decode.
func (h *MADHeader) UnmarshalBinary(b []byte) error {
	if h == nil {
		return errNil("MADHeader.UnmarshalBinary")
	}
	return h.Decode(b)
}

// Message is a whole 256-byte MAD: *SMP, *PerfMAD, *VendorMAD or *RawMAD,
// as DecodeMAD returns them.
type Message interface {
	// MADHeader returns the MAD's common header, as decoded (for a
	// directed-route SMP, without the direction bit and hop fields).
	MADHeader() *MADHeader
	// Append appends the 256-byte MAD to b.
	Append(b []byte) []byte
	// Decode sets the message from exactly 256 bytes.
	Decode(b []byte) error
	// Validate reports field values that Append would truncate, and a
	// base version or class the type's Decode would refuse.
	Validate() error
	// MarshalBinary is Validate followed by Append.
	MarshalBinary() ([]byte, error)
	// UnmarshalBinary is Decode.
	UnmarshalBinary(b []byte) error
}

// Attribute is an attribute payload carried in a MAD's data area:
// *NodeDescription, *NodeInfo, *PortInfo, *ClassPortInfo, *PortCounters
// or *PortCountersExtended.
type Attribute interface {
	// AttributeID returns the attribute's ID in its class.
	AttributeID() AttrID
	// Append appends the attribute's bytes to b.
	Append(b []byte) []byte
	// Decode sets the attribute from the start of b, which may be the
	// whole data area of a MAD.
	Decode(b []byte) error
	// Validate reports field values that Append would truncate.
	Validate() error
	// MarshalBinary is Validate followed by Append.
	MarshalBinary() ([]byte, error)
	// UnmarshalBinary is Decode.
	UnmarshalBinary(b []byte) error
}

// Static errors of the 256-byte MAD decoders.
var (
	errMADShort = madError("MAD needs 256 bytes", &ErrShortMAD)
	errMADLong  = madError("MAD", &ErrLongMAD)
)

// checkMAD checks that b is one 256-byte MAD.
func checkMAD(b []byte) error {
	switch {
	case len(b) < MADSize:
		return errMADShort
	case len(b) > MADSize:
		return errMADLong
	}
	return nil
}

// DecodeMAD decodes one 256-byte MAD into a new value chosen by its
// management class: *SMP for SubnMgmt and SubnMgmtDirectedRoute, *PerfMAD
// for PerfMgmt, *VendorMAD for vendor range 2 (0x30–0x4F), and *RawMAD for
// every other class and for any MAD whose BaseVersion is not 1. Only the
// length can make it fail: it returns errors wrapping ErrShortMAD or
// ErrLongMAD. It allocates the returned value; use the types' Decode
// methods to decode without allocating.
func DecodeMAD(b []byte) (Message, error) {
	if err := checkMAD(b); err != nil {
		return nil, err
	}
	var m Message
	switch c := MgmtClass(b[1]); {
	case b[0] != BaseVersion:
		m = new(RawMAD)
	case c.IsSubnMgmt():
		m = new(SMP)
	case c == ClassPerfMgmt:
		m = new(PerfMAD)
	case c.IsVendorRange2():
		m = new(VendorMAD)
	default:
		m = new(RawMAD)
	}
	if err := m.Decode(b); err != nil {
		return nil, err // unreachable: length, version and class were checked
	}
	return m, nil
}

// MADDecoder decodes MADs like DecodeMAD without allocating: it keeps one
// value of each message type and decodes into it, so a receive loop that
// decodes every MAD it gets allocates nothing. The Message Decode returns
// is valid until the next Decode of the same decoder. The zero MADDecoder
// is ready to use; it is not safe for concurrent use.
type MADDecoder struct {
	raw    RawMAD
	smp    SMP
	perf   PerfMAD
	vendor VendorMAD
}

// Decode decodes b like DecodeMAD, into the decoder's value of the MAD's
// type.
func (d *MADDecoder) Decode(b []byte) (Message, error) {
	if d == nil {
		return nil, errNil("MADDecoder.Decode")
	}
	if err := checkMAD(b); err != nil {
		return nil, err
	}
	var m Message
	switch c := MgmtClass(b[1]); {
	case b[0] != BaseVersion:
		m = &d.raw
	case c.IsSubnMgmt():
		m = &d.smp
	case c == ClassPerfMgmt:
		m = &d.perf
	case c.IsVendorRange2():
		m = &d.vendor
	default:
		m = &d.raw
	}
	if err := m.Decode(b); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeAttribute decodes the data area of a MAD of class class carrying
// attribute id into a new value: *NodeDescription, *NodeInfo, *PortInfo,
// *SwitchInfo, *LinearForwardingTable or *MulticastForwardingTable for
// the SMP classes; *ClassPortInfo, *PortCounters, *PortCountersExtended,
// *PortSamplesControl, *PortExtendedSpeedsCounters or *PerfCounterSet
// (the attributes PerfCounterSetLayout knows) for PerfMgmt;
// *ClassPortInfo for AttrClassPortInfo of any other class, whose data
// area the caller locates. It returns an error wrapping
// ErrUnknownAttribute for any other pair, and the attribute decoder's
// error (ErrShortMAD) when data is too short.
func DecodeAttribute(class MgmtClass, id AttrID, data []byte) (Attribute, error) {
	var a Attribute
	switch {
	case class.IsSubnMgmt():
		switch id {
		case SMAttrNodeDescription:
			a = new(NodeDescription)
		case SMAttrNodeInfo:
			a = new(NodeInfo)
		case SMAttrPortInfo:
			a = new(PortInfo)
		case SMAttrSwitchInfo:
			a = new(SwitchInfo)
		case SMAttrLinearForwardingTable:
			a = new(LinearForwardingTable)
		case SMAttrMulticastForwardingTable:
			a = new(MulticastForwardingTable)
		}
	case class == ClassPerfMgmt:
		switch id {
		case AttrClassPortInfo:
			a = new(ClassPortInfo)
		case PMAttrPortCounters:
			a = new(PortCounters)
		case PMAttrPortCountersExtended:
			a = new(PortCountersExtended)
		case PMAttrPortSamplesControl:
			a = new(PortSamplesControl)
		case PMAttrPortExtendedSpeedsCounters:
			a = new(PortExtendedSpeedsCounters)
		default:
			if _, _, ok := PerfCounterSetLayout(id); ok {
				a = &PerfCounterSet{ID: id}
			}
		}
	case id == AttrClassPortInfo:
		a = new(ClassPortInfo)
	}
	if a == nil {
		return nil, fmt.Errorf("umad: %v attribute %#04x: %w", class, uint16(id), ErrUnknownAttribute)
	}
	if err := a.Decode(data); err != nil {
		return nil, err
	}
	return a, nil
}

// setAttribute encodes a into data, zeroing the rest of data.
func setAttribute(data []byte, a Attribute, errTooBig error) error {
	if a == nil {
		return invalid("nil attribute")
	}
	clear(data)
	if out := a.Append(data[:0]); len(out) > len(data) {
		clear(data)
		return errTooBig
	}
	return nil
}

// grow extends b by n zero bytes; it returns the extended slice and its
// last n bytes.
func grow(b []byte, n int) (all, tail []byte) {
	b = slices.Grow(b, n)
	l := len(b)
	b = b[:l+n]
	tail = b[l:]
	clear(tail)
	return b, tail
}

// put24 and get24 write and read a 24-bit big-endian value.
func put24(b []byte, v uint32) {
	_ = b[2]
	b[0] = byte(v >> 16)
	b[1] = byte(v >> 8)
	b[2] = byte(v)
}

func get24(b []byte) uint32 {
	_ = b[2]
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
}

// b2u turns a 1-bit field into its wire value.
func b2u(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// fieldCheck collects the first field that does not fit its width.
type fieldCheck struct {
	what string
	err  error
}

func (c *fieldCheck) width(field string, v uint64, bits int) {
	if c.err == nil && v>>bits != 0 {
		c.err = rangeError(c.what, field, v, bits)
	}
}

// unused collects a field that is set although the MAD does not carry it.
func (c *fieldCheck) unused(field string, v uint64) {
	if c.err == nil && v != 0 {
		c.err = unusedError(c.what, field, v)
	}
}
