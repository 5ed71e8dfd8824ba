package umad

import "encoding/binary"

// Layout of a vendor MAD of range 2.
const (
	// VendorOUIOffset is where the reserved byte and 3-byte OUI of a
	// vendor range 2 MAD start, after the common and RMPP headers.
	VendorOUIOffset = MADHeaderSize + RMPPHeaderSize
	// VendorDataOffset is where a vendor range 2 MAD's data starts
	// (IB_MGMT_VENDOR_HDR).
	VendorDataOffset = VendorOUIOffset + 4
	// VendorDataSize is the size of a vendor range 2 MAD's data
	// (IB_MGMT_VENDOR_DATA).
	VendorDataSize = MADSize - VendorDataOffset
)

// RMPPVersion1 is the RMPP version IBA defines (IB_MGMT_RMPP_VERSION), the
// one the kernel implements.
const RMPPVersion1 = 1

// RMPP packet types (RMPPHeader.Type, IBA 13.6).
const (
	RMPPTypeData  = 1
	RMPPTypeAck   = 2
	RMPPTypeStop  = 3
	RMPPTypeAbort = 4
)

// RMPP flags (RMPPHeader.Flags).
const (
	RMPPFlagActive = 1 << 0 // the MAD is part of an RMPP transfer
	RMPPFlagFirst  = 1 << 1 // first segment
	RMPPFlagLast   = 1 << 2 // last segment
)

// RMPPNoRespTime is the RMPPHeader.RespTime that means "no time given".
const RMPPNoRespTime = 0x1F

// RMPPHeader is the RMPP header (IBA 13.6, struct ib_rmpp_hdr) at bytes
// 24–35 of a MAD of an RMPP-capable class:
//
//	byte 0     RMPPVersion
//	byte 1     RMPPType
//	byte 2     RRespTime (bits 7–3), RMPPFlags (bits 2–0)
//	byte 3     RMPPStatus
//	bytes 4–7  Data1
//	bytes 8–11 Data2
//
// In a MAD sent through umad by an agent that uses the kernel's RMPP, the
// kernel fills in the segment fields; the sender sets Version, Type and the
// Active flag.
type RMPPHeader struct {
	// Version is the RMPP version: 0 when RMPP is not used,
	// RMPPVersion1 otherwise.
	Version uint8
	// Type is the RMPP packet type (an RMPPType constant).
	Type uint8
	// RespTime is the 5-bit response time value (RMPPNoRespTime: none).
	RespTime uint8
	// Flags are the 3 RMPP flag bits (RMPPFlagActive, RMPPFlagFirst,
	// RMPPFlagLast).
	Flags uint8
	// Status is the RMPP status (0 normal; abort and stop codes).
	Status uint8
	// Data1 is the segment number in DATA and ACK packets.
	Data1 uint32
	// Data2 is the payload length in the first and last DATA packets and
	// the new window's last segment in ACK packets.
	Data2 uint32
}

var errRMPPShort = madError("RMPP header needs 12 bytes", &ErrShortMAD)

// put writes r into b[:RMPPHeaderSize].
func (r *RMPPHeader) put(b []byte) {
	_ = b[RMPPHeaderSize-1]
	b[0] = r.Version
	b[1] = r.Type
	b[2] = r.RespTime<<3 | r.Flags&0x7
	b[3] = r.Status
	binary.BigEndian.PutUint32(b[4:8], r.Data1)
	binary.BigEndian.PutUint32(b[8:12], r.Data2)
}

// get reads r from b[:RMPPHeaderSize]; the caller checked the length.
func (r *RMPPHeader) get(b []byte) {
	_ = b[RMPPHeaderSize-1]
	*r = RMPPHeader{
		Version:  b[0],
		Type:     b[1],
		RespTime: b[2] >> 3,
		Flags:    b[2] & 0x7,
		Status:   b[3],
		Data1:    binary.BigEndian.Uint32(b[4:8]),
		Data2:    binary.BigEndian.Uint32(b[8:12]),
	}
}

// Append appends the 12-byte header to b, RespTime modulo 32 and Flags
// modulo 8. It allocates only when b lacks the capacity.
func (r *RMPPHeader) Append(b []byte) []byte {
	if r == nil {
		return b
	}
	b, t := grow(b, RMPPHeaderSize)
	r.put(t)
	return b
}

// Decode sets r from the first 12 bytes of b (a MAD from byte 24 on). It
// returns an error wrapping ErrShortMAD when b is shorter. It does not
// allocate.
func (r *RMPPHeader) Decode(b []byte) error {
	if r == nil {
		return errNil("RMPPHeader.Decode")
	}
	if len(b) < RMPPHeaderSize {
		return errRMPPShort
	}
	r.get(b)
	return nil
}

// Validate returns an error wrapping ErrFieldRange when RespTime does not
// fit 5 bits or Flags 3 bits.
func (r *RMPPHeader) Validate() error {
	if r == nil {
		return errNil("RMPPHeader.Validate")
	}
	c := fieldCheck{what: "RMPP header"}
	c.width("RespTime", uint64(r.RespTime), 5)
	c.width("Flags", uint64(r.Flags), 3)
	return c.err
}

// MarshalBinary returns the 12-byte header, or Validate's error.
func (r *RMPPHeader) MarshalBinary() ([]byte, error) {
	if r == nil {
		return nil, errNil("RMPPHeader.MarshalBinary")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r.Append(make([]byte, 0, RMPPHeaderSize)), nil
}

// UnmarshalBinary is Decode.
func (r *RMPPHeader) UnmarshalBinary(b []byte) error {
	if r == nil {
		return errNil("RMPPHeader.UnmarshalBinary")
	}
	return r.Decode(b)
}

// VendorMAD is a MAD of a vendor class of range 2 (0x30–0x4F; IBA 13.4.2,
// struct ib_vendor_mad), the classes agents register with an OUI:
//
//	bytes 0–23   common header
//	bytes 24–35  RMPP header
//	byte 36      reserved
//	bytes 37–39  OUI
//	bytes 40–255 vendor data
//
// Vendor classes of range 1 (0x09–0x0F) have no OUI; DecodeMAD returns
// them as *RawMAD.
type VendorMAD struct {
	// Header is the common MAD header; MgmtClass is in 0x30–0x4F.
	Header MADHeader
	// RMPP is the RMPP header (all zero when RMPP is not used).
	RMPP RMPPHeader
	// OUI is the 24-bit IEEE OUI of the vendor (OUIOpenIB, say), which
	// the receiving agent registered with.
	OUI uint32
	// Data is the vendor data.
	Data [VendorDataSize]byte
}

// Static errors of the VendorMAD codec.
var (
	errVendorVersion = madError("vendor MAD", &ErrBaseVersion)
	errVendorClass   = madError("vendor MAD: class is not in vendor range 2 (0x30-0x4f)", &ErrWrongClass)
)

// MADHeader returns &m.Header.
func (m *VendorMAD) MADHeader() *MADHeader {
	if m == nil {
		return nil
	}
	return &m.Header
}

// Append appends the 256-byte MAD to b, the reserved byte zero, OUI modulo
// 2^24 and the RMPP header as RMPPHeader.Append writes it. It allocates
// only when b lacks the capacity.
func (m *VendorMAD) Append(b []byte) []byte {
	if m == nil {
		return b
	}
	b, t := grow(b, MADSize)
	m.Header.put(t)
	m.RMPP.put(t[MADHeaderSize:])
	put24(t[VendorOUIOffset+1:VendorDataOffset], m.OUI)
	copy(t[VendorDataOffset:], m.Data[:])
	return b
}

// Decode sets m from exactly 256 bytes. It returns an error wrapping
// ErrShortMAD or ErrLongMAD for another length, ErrBaseVersion when the
// base version is not 1, and ErrWrongClass when the class is not in vendor
// range 2; m is unchanged on error. It does not allocate.
func (m *VendorMAD) Decode(b []byte) error {
	if m == nil {
		return errNil("VendorMAD.Decode")
	}
	if err := checkMAD(b); err != nil {
		return err
	}
	if b[0] != BaseVersion {
		return errVendorVersion
	}
	if !MgmtClass(b[1]).IsVendorRange2() {
		return errVendorClass
	}
	m.Header.get(b)
	m.RMPP.get(b[MADHeaderSize:])
	m.OUI = get24(b[VendorOUIOffset+1 : VendorDataOffset])
	copy(m.Data[:], b[VendorDataOffset:])
	return nil
}

// Validate returns an error wrapping ErrBaseVersion or ErrWrongClass when
// the header is not that of an IBA vendor range 2 MAD, and ErrFieldRange
// when OUI does not fit 24 bits or the RMPP header does not validate.
func (m *VendorMAD) Validate() error {
	if m == nil {
		return errNil("VendorMAD.Validate")
	}
	if m.Header.BaseVersion != BaseVersion {
		return errVendorVersion
	}
	if !m.Header.MgmtClass.IsVendorRange2() {
		return errVendorClass
	}
	c := fieldCheck{what: "vendor MAD"}
	c.width("OUI", uint64(m.OUI), 24)
	if c.err != nil {
		return c.err
	}
	return m.RMPP.Validate()
}

// MarshalBinary returns the 256-byte MAD, or Validate's error.
func (m *VendorMAD) MarshalBinary() ([]byte, error) {
	if m == nil {
		return nil, errNil("VendorMAD.MarshalBinary")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m.Append(make([]byte, 0, MADSize)), nil
}

// UnmarshalBinary is Decode.
func (m *VendorMAD) UnmarshalBinary(b []byte) error {
	if m == nil {
		return errNil("VendorMAD.UnmarshalBinary")
	}
	return m.Decode(b)
}

// RawMAD is a MAD of any class, kept as the common header and the 232
// bytes after it: DecodeMAD's answer for classes without a Go type here
// (SA, CM, vendor range 1, ...) and for base versions other than 1.
type RawMAD struct {
	// Header is the common MAD header.
	Header MADHeader
	// Data is everything after the common header.
	Data [MADDataSize]byte
}

// MADHeader returns &m.Header.
func (m *RawMAD) MADHeader() *MADHeader {
	if m == nil {
		return nil
	}
	return &m.Header
}

// Append appends the 256-byte MAD to b. It allocates only when b lacks the
// capacity.
func (m *RawMAD) Append(b []byte) []byte {
	if m == nil {
		return b
	}
	b, t := grow(b, MADSize)
	m.Header.put(t)
	copy(t[MADHeaderSize:], m.Data[:])
	return b
}

// Decode sets m from exactly 256 bytes of any class and base version. It
// returns an error wrapping ErrShortMAD or ErrLongMAD for another length;
// m is unchanged on error. It does not allocate.
func (m *RawMAD) Decode(b []byte) error {
	if m == nil {
		return errNil("RawMAD.Decode")
	}
	if err := checkMAD(b); err != nil {
		return err
	}
	m.Header.get(b)
	copy(m.Data[:], b[MADHeaderSize:])
	return nil
}

// Validate reports nothing: every value has a wire form.
func (m *RawMAD) Validate() error {
	if m == nil {
		return errNil("RawMAD.Validate")
	}
	return nil
}

// MarshalBinary returns the 256-byte MAD.
func (m *RawMAD) MarshalBinary() ([]byte, error) {
	if m == nil {
		return nil, errNil("RawMAD.MarshalBinary")
	}
	return m.Append(make([]byte, 0, MADSize)), nil
}

// UnmarshalBinary is Decode.
func (m *RawMAD) UnmarshalBinary(b []byte) error {
	if m == nil {
		return errNil("RawMAD.UnmarshalBinary")
	}
	return m.Decode(b)
}
