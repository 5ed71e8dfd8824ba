package abi

// The umad codec: struct ib_user_mad_hdr / ib_user_mad_hdr_old (the header
// in front of every MAD written to or read from /dev/infiniband/umadN) and
// the agent registration requests struct ib_user_mad_reg_req /
// ib_user_mad_reg_req2, all from <rdma/ib_user_mad.h>.
//
// Byte order: fields the UAPI declares __be16/__be32 are encoded big-endian;
// every other field is in host order, which this package writes as
// little-endian because purerdma supports only little-endian 64-bit Linux
// targets (linux/amd64 and linux/arm64). On those targets the legacy
// reg_req's "unsigned long" method mask is two u64s, which is also
// byte-for-byte the layout a 32-bit little-endian process would use.
//
// Encoders write every byte of the structure (reserved bytes as zero) and do
// not allocate. Decoders check the length, read every field as it is on the
// wire (they do not apply the kernel's semantic checks, so a fake kernel sees
// exactly what was sent), ignore reserved bytes, and do not allocate.

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/purerdma/rdma/internal/errs"
)

// Sizes of the two umad header layouts.
const (
	// MadHdrSizeOld is sizeof(struct ib_user_mad_hdr_old): the header a
	// umad file uses until IB_USER_MAD_ENABLE_PKEY or
	// IB_USER_MAD_REGISTER_AGENT2 switches it to the new one.
	MadHdrSizeOld = 56

	// MadHdrSize is sizeof(struct ib_user_mad_hdr): the header with
	// pkey_index, used after IB_USER_MAD_ENABLE_PKEY or once an agent was
	// registered with IB_USER_MAD_REGISTER_AGENT2.
	MadHdrSize = 64
)

// Sizes of the umad agent registration requests.
const (
	// RegReqSize is sizeof(struct ib_user_mad_reg_req), the argument of
	// IB_USER_MAD_REGISTER_AGENT.
	RegReqSize = 28

	// RegReq2Size is sizeof(struct ib_user_mad_reg_req2), the argument of
	// IB_USER_MAD_REGISTER_AGENT2.
	RegReq2Size = 40
)

// Largest values of the narrower-than-their-field wire values.
const (
	maxQPN       = 1<<24 - 1 // QPNs are 24 bits
	maxOUI       = 1<<24 - 1 // OUIs are 24 bits
	maxFlowLabel = 1<<20 - 1 // GRH flow labels are 20 bits
)

// Decoder errors are static so that a failing decode does not allocate
// either.
var (
	errMadHdrSize    error = &errs.Static{Msg: "abi: struct ib_user_mad_hdr", Err: &ErrMadHdrSize}
	errMadHdrShort   error = &errs.Static{Msg: "abi: struct ib_user_mad_hdr", Err: &ErrShortBuffer}
	errRegReqShort   error = &errs.Static{Msg: "abi: struct ib_user_mad_reg_req needs 28 bytes", Err: &ErrShortBuffer}
	errRegReq2Short  error = &errs.Static{Msg: "abi: struct ib_user_mad_reg_req2 needs 40 bytes", Err: &ErrShortBuffer}
	errMadHdrPKeyOld error = &errs.Static{Msg: "abi: struct ib_user_mad_hdr_old has no pkey_index, PKeyIndex must be 0", Err: &ErrRange}
)

// The texts above say RegReqSize and RegReq2Size.
const (
	_ = uint(RegReqSize-28) + uint(28-RegReqSize)
	_ = uint(RegReq2Size-40) + uint(40-RegReq2Size)
)

// MadHdr is the umad header, struct ib_user_mad_hdr (64 bytes) or, without
// PKeyIndex, struct ib_user_mad_hdr_old (56 bytes). Which of the two a umad
// file descriptor uses is fixed per file (see MadHdrSize), so every method
// takes the size.
//
// On write() (send) the header says where the MAD goes and how long to wait
// for a response; on read() (receive) the kernel fills it with the sender's
// address, or with Status = ETIMEDOUT (110) for a send whose response never
// came.
type MadHdr struct {
	// AgentID is id: the agent the MAD is sent by or was received for
	// (0–31, as returned by agent registration).
	AgentID uint32
	// Status is status: 0, or on receive an errno for a failed send
	// (ETIMEDOUT = 110).
	Status uint32
	// TimeoutMs is timeout_ms: for a request, how long to wait for the
	// response, in milliseconds; 0 sends without waiting.
	TimeoutMs uint32
	// Retries is retries: how often a request is resent on timeout.
	Retries uint32
	// Length is length: on receive, header size plus MAD bytes. The kernel
	// ignores it on send.
	Length uint32
	// QPN is qpn (__be32): the remote QP number, 24 bits.
	QPN uint32
	// QKey is qkey (__be32): the remote Q_Key.
	QKey uint32
	// LID is lid (__be16): the remote LID (0 on RoCE).
	LID uint16
	// SL is sl: the service level.
	SL uint8
	// PathBits is path_bits: the source path bits.
	PathBits uint8
	// GRHPresent is grh_present: the GRH fields below are valid (RoCE
	// always needs them). Any non-zero byte decodes as true.
	GRHPresent bool
	// GIDIndex is gid_index: the local (source) GID table index.
	GIDIndex uint8
	// HopLimit is hop_limit.
	HopLimit uint8
	// TrafficClass is traffic_class.
	TrafficClass uint8
	// GID is gid: the remote GID, in wire (network) order.
	GID [16]byte
	// FlowLabel is flow_label (__be32), 20 bits.
	FlowLabel uint32
	// PKeyIndex is pkey_index: the P_Key table index to send with. Only
	// the 64-byte header has it; with the 56-byte header it must be 0 and
	// decodes as 0.
	PKeyIndex uint16
}

func checkMadHdrSize(size int) error {
	if size != MadHdrSize && size != MadHdrSizeOld {
		return errMadHdrSize
	}
	return nil
}

// check reports values Encode refuses: they cannot be carried by the given
// header or would be silently truncated by the kernel or the hardware.
func (h *MadHdr) check(size int) error {
	if err := checkMadHdrSize(size); err != nil {
		return err
	}
	if h.QPN > maxQPN {
		return fmt.Errorf("abi: struct ib_user_mad_hdr: qpn %#x does not fit 24 bits: %w", h.QPN, ErrRange)
	}
	if h.FlowLabel > maxFlowLabel {
		return fmt.Errorf("abi: struct ib_user_mad_hdr: flow_label %#x does not fit 20 bits: %w", h.FlowLabel, ErrRange)
	}
	if size == MadHdrSizeOld && h.PKeyIndex != 0 {
		return errMadHdrPKeyOld
	}
	return nil
}

// put writes the header into b, which is exactly size bytes long.
func (h *MadHdr) put(b []byte) {
	_ = b[MadHdrSizeOld-1]
	le, be := binary.LittleEndian, binary.BigEndian
	le.PutUint32(b[0:4], h.AgentID)
	le.PutUint32(b[4:8], h.Status)
	le.PutUint32(b[8:12], h.TimeoutMs)
	le.PutUint32(b[12:16], h.Retries)
	le.PutUint32(b[16:20], h.Length)
	be.PutUint32(b[20:24], h.QPN)
	be.PutUint32(b[24:28], h.QKey)
	be.PutUint16(b[28:30], h.LID)
	b[30] = h.SL
	b[31] = h.PathBits
	b[32] = 0
	if h.GRHPresent {
		b[32] = 1
	}
	b[33] = h.GIDIndex
	b[34] = h.HopLimit
	b[35] = h.TrafficClass
	copy(b[36:52], h.GID[:])
	be.PutUint32(b[52:56], h.FlowLabel)
	if len(b) == MadHdrSize {
		le.PutUint16(b[56:58], h.PKeyIndex)
		clear(b[58:64]) // reserved[6]
	}
}

// Encode writes h as a size-byte umad header (MadHdrSize or MadHdrSizeOld)
// into b[:size], reserved bytes zeroed. It does not allocate.
//
// It returns an error wrapping ErrMadHdrSize for any other size,
// ErrShortBuffer when len(b) < size, and ErrRange when QPN does not fit 24
// bits, FlowLabel does not fit 20 bits, or PKeyIndex is non-zero with the
// 56-byte header (which cannot carry it). On error b is not modified.
func (h *MadHdr) Encode(b []byte, size int) error {
	if err := h.check(size); err != nil {
		return err
	}
	if len(b) < size {
		return errMadHdrShort
	}
	h.put(b[:size])
	return nil
}

// AppendTo appends h, encoded as a size-byte umad header, to b and returns
// the extended slice. It allocates only when b lacks the capacity. It
// returns the same errors as Encode (except ErrShortBuffer), and b
// unchanged on error.
func (h *MadHdr) AppendTo(b []byte, size int) ([]byte, error) {
	if err := h.check(size); err != nil {
		return b, err
	}
	n := len(b)
	b = slices.Grow(b, size)[:n+size]
	h.put(b[n:])
	return b, nil
}

// Decode sets h from the size-byte umad header at the start of b (the rest
// of b, normally the MAD, is ignored). Every field is read as it is on the
// wire: Decode does not reject a QPN or flow label wider than the hardware
// uses, because the kernel does not reject them on write() either, and it
// ignores the reserved bytes of the 64-byte header. It does not allocate.
//
// It returns an error wrapping ErrMadHdrSize when size is neither
// MadHdrSize nor MadHdrSizeOld, and ErrShortBuffer when len(b) < size; h is
// not modified then.
func (h *MadHdr) Decode(b []byte, size int) error {
	if err := checkMadHdrSize(size); err != nil {
		return err
	}
	if len(b) < size {
		return errMadHdrShort
	}
	// Field by field into h: a composite literal would be built in a
	// temporary and copied (b may alias h), twice the instructions.
	b = b[:size]
	_ = b[MadHdrSizeOld-1]
	le, be := binary.LittleEndian, binary.BigEndian
	h.AgentID = le.Uint32(b[0:4])
	h.Status = le.Uint32(b[4:8])
	h.TimeoutMs = le.Uint32(b[8:12])
	h.Retries = le.Uint32(b[12:16])
	h.Length = le.Uint32(b[16:20])
	h.QPN = be.Uint32(b[20:24])
	h.QKey = be.Uint32(b[24:28])
	h.LID = be.Uint16(b[28:30])
	h.SL = b[30]
	h.PathBits = b[31]
	h.GRHPresent = b[32] != 0
	h.GIDIndex = b[33]
	h.HopLimit = b[34]
	h.TrafficClass = b[35]
	h.GID = [16]byte(b[36:52])
	h.FlowLabel = be.Uint32(b[52:56])
	h.PKeyIndex = 0
	if size == MadHdrSize {
		h.PKeyIndex = le.Uint16(b[56:58])
	}
	return nil
}

// MethodMask is the 128-bit method_mask of struct ib_user_mad_reg_req and
// struct ib_user_mad_reg_req2: bit m set means the agent receives
// unsolicited MADs whose method is m. Word 0 holds methods 0–63, word 1
// methods 64–127. Method values 128–255 have the response bit (0x80) set and
// cannot be registered.
type MethodMask [2]uint64

// MethodMaskOf returns a mask with the given methods set (see Set).
func MethodMaskOf(methods ...uint8) MethodMask {
	var m MethodMask
	for _, method := range methods {
		m.Set(method)
	}
	return m
}

// Set adds method to the mask. Methods 128–255 (response methods) have no
// bit and are ignored.
func (m *MethodMask) Set(method uint8) {
	if method < 128 {
		m[method/64] |= 1 << (method % 64)
	}
}

// Has reports whether method is in the mask; it is false for methods
// 128–255.
func (m MethodMask) Has(method uint8) bool {
	return method < 128 && m[method/64]&(1<<(method%64)) != 0
}

// RegReq2 is struct ib_user_mad_reg_req2, the argument of
// IB_USER_MAD_REGISTER_AGENT2, which registers a MAD agent on a umad file
// and switches the file to the 64-byte header. Prefer it to RegReq, whose
// layout depends on the size of a C long.
type RegReq2 struct {
	// AgentID is id, written back by the kernel: the new agent's id.
	AgentID uint32
	// QPN is qpn: 0 for the SMI (QP0) or 1 for the GSI (QP1); the kernel
	// rejects anything else with EINVAL.
	QPN uint32
	// MgmtClass is mgmt_class; 0 registers a send-only agent that receives
	// only responses to its own requests.
	MgmtClass uint8
	// MgmtClassVersion is mgmt_class_version.
	MgmtClassVersion uint8
	// Flags is flags: 0 or IB_USER_MAD_USER_RMPP (1). On EINVAL for an
	// unknown flag the kernel writes the supported flags back here.
	Flags uint32
	// MethodMask is method_mask: the methods of MgmtClass to receive
	// unsolicited.
	MethodMask MethodMask
	// OUI is oui: the 24-bit OUI for vendor classes 0x30–0x4F.
	OUI uint32
	// RMPPVersion is rmpp_version: 0, or 1 to let the kernel do RMPP for
	// an RMPP-capable class.
	RMPPVersion uint8
}

// Encode writes r into b[:RegReq2Size], the res and reserved fields zeroed.
// It does not allocate.
//
// It returns an error wrapping ErrRange when OUI does not fit 24 bits (the
// kernel rejects that with EINVAL for a non-zero class), and one wrapping
// ErrShortBuffer when len(b) < RegReq2Size. Other fields are not judged:
// QPN, class, flags and versions are the kernel's to check. On error b is
// not modified.
func (r *RegReq2) Encode(b []byte) error {
	if err := r.check(); err != nil {
		return err
	}
	if len(b) < RegReq2Size {
		return errRegReq2Short
	}
	b = b[:RegReq2Size]
	le := binary.LittleEndian
	le.PutUint32(b[0:4], r.AgentID)
	le.PutUint32(b[4:8], r.QPN)
	b[8] = r.MgmtClass
	b[9] = r.MgmtClassVersion
	le.PutUint16(b[10:12], 0) // res
	le.PutUint32(b[12:16], r.Flags)
	le.PutUint64(b[16:24], r.MethodMask[0])
	le.PutUint64(b[24:32], r.MethodMask[1])
	le.PutUint32(b[32:36], r.OUI) // host order, not big-endian
	b[36] = r.RMPPVersion
	clear(b[37:40]) // reserved[3]
	return nil
}

// AppendTo appends r, encoded as by Encode, to b and returns the extended
// slice; it returns b unchanged and an error wrapping ErrRange when OUI does
// not fit 24 bits.
func (r *RegReq2) AppendTo(b []byte) ([]byte, error) {
	if err := r.check(); err != nil {
		return b, err
	}
	n := len(b)
	b = slices.Grow(b, RegReq2Size)[:n+RegReq2Size]
	_ = r.Encode(b[n:]) // cannot fail: checked, and long enough
	return b, nil
}

func (r *RegReq2) check() error {
	if r.OUI > maxOUI {
		return fmt.Errorf("abi: struct ib_user_mad_reg_req2: oui %#x does not fit 24 bits: %w", r.OUI, ErrRange)
	}
	return nil
}

// Decode sets r from the first RegReq2Size bytes of b, the way the kernel
// (or a fake kernel) reads the request and the caller reads the id written
// back. OUI is returned as found, even if wider than 24 bits; res and
// reserved are ignored. It does not allocate.
//
// It returns an error wrapping ErrShortBuffer, and leaves r unmodified,
// when len(b) < RegReq2Size.
func (r *RegReq2) Decode(b []byte) error {
	if len(b) < RegReq2Size {
		return errRegReq2Short
	}
	b = b[:RegReq2Size]
	le := binary.LittleEndian
	*r = RegReq2{
		AgentID:          le.Uint32(b[0:4]),
		QPN:              le.Uint32(b[4:8]),
		MgmtClass:        b[8],
		MgmtClassVersion: b[9],
		Flags:            le.Uint32(b[12:16]),
		MethodMask:       MethodMask{le.Uint64(b[16:24]), le.Uint64(b[24:32])},
		OUI:              le.Uint32(b[32:36]),
		RMPPVersion:      b[36],
	}
	return nil
}

// RegReq is struct ib_user_mad_reg_req, the argument of
// IB_USER_MAD_REGISTER_AGENT (the legacy registration; the file keeps the
// 56-byte header unless IB_USER_MAD_ENABLE_PKEY was called first).
//
// Layout (28 bytes): id u32 at 0; method_mask, declared as two "unsigned
// long" aligned to 4, at 4..19 (on 64-bit little-endian: methods 0–63 as a
// u64 at 4, 64–127 at 12); qpn u8 at 20; mgmt_class at 21;
// mgmt_class_version at 22; oui[3] big-endian at 23..25; rmpp_version at 26;
// one byte of padding.
type RegReq struct {
	// AgentID is id, written back by the kernel: the new agent's id.
	AgentID uint32
	// MethodMask is method_mask.
	MethodMask MethodMask
	// QPN is qpn: 0 (SMI) or 1 (GSI); the kernel rejects others (EINVAL).
	QPN uint8
	// MgmtClass is mgmt_class; 0 registers a send-only agent.
	MgmtClass uint8
	// MgmtClassVersion is mgmt_class_version.
	MgmtClassVersion uint8
	// OUI is oui[3] as a number (the wire holds it as 3 big-endian bytes).
	OUI uint32
	// RMPPVersion is rmpp_version.
	RMPPVersion uint8
}

// Encode writes r into b[:RegReqSize], the padding byte zeroed. It does not
// allocate.
//
// It returns an error wrapping ErrRange when OUI does not fit 24 bits (the
// 3-byte field cannot carry it), and one wrapping ErrShortBuffer when
// len(b) < RegReqSize. On error b is not modified.
func (r *RegReq) Encode(b []byte) error {
	if err := r.check(); err != nil {
		return err
	}
	if len(b) < RegReqSize {
		return errRegReqShort
	}
	b = b[:RegReqSize]
	le := binary.LittleEndian
	le.PutUint32(b[0:4], r.AgentID)
	le.PutUint64(b[4:12], r.MethodMask[0])
	le.PutUint64(b[12:20], r.MethodMask[1])
	b[20] = r.QPN
	b[21] = r.MgmtClass
	b[22] = r.MgmtClassVersion
	b[23] = byte(r.OUI >> 16)
	b[24] = byte(r.OUI >> 8)
	b[25] = byte(r.OUI)
	b[26] = r.RMPPVersion
	b[27] = 0 // padding
	return nil
}

// AppendTo appends r, encoded as by Encode, to b and returns the extended
// slice; it returns b unchanged and an error wrapping ErrRange when OUI does
// not fit 24 bits.
func (r *RegReq) AppendTo(b []byte) ([]byte, error) {
	if err := r.check(); err != nil {
		return b, err
	}
	n := len(b)
	b = slices.Grow(b, RegReqSize)[:n+RegReqSize]
	_ = r.Encode(b[n:]) // cannot fail: checked, and long enough
	return b, nil
}

func (r *RegReq) check() error {
	if r.OUI > maxOUI {
		return fmt.Errorf("abi: struct ib_user_mad_reg_req: oui %#x does not fit 24 bits: %w", r.OUI, ErrRange)
	}
	return nil
}

// Decode sets r from the first RegReqSize bytes of b; the padding byte is
// ignored. It does not allocate.
//
// It returns an error wrapping ErrShortBuffer, and leaves r unmodified,
// when len(b) < RegReqSize.
func (r *RegReq) Decode(b []byte) error {
	if len(b) < RegReqSize {
		return errRegReqShort
	}
	b = b[:RegReqSize]
	le := binary.LittleEndian
	*r = RegReq{
		AgentID:          le.Uint32(b[0:4]),
		MethodMask:       MethodMask{le.Uint64(b[4:12]), le.Uint64(b[12:20])},
		QPN:              b[20],
		MgmtClass:        b[21],
		MgmtClassVersion: b[22],
		OUI:              uint32(b[23])<<16 | uint32(b[24])<<8 | uint32(b[25]),
		RMPPVersion:      b[26],
	}
	return nil
}
