package umad

// RMPP, the reliable multi-packet protocol (IBA 13.6): the receiver's
// reassembly of a message from its DATA segments (RMPPHeader is in
// mad_vendor.go).

import (
	"errors"
	"fmt"
)

// RMPPDataOffset is where a class's RMPP segment data starts in each
// segment, the kernel's ib_get_mad_data_offset: 56 for SA
// (IB_MGMT_SA_HDR), 40 for the vendor classes of the second range
// (IB_MGMT_VENDOR_HDR), 36 otherwise (IB_MGMT_RMPP_HDR).
func RMPPDataOffset(c MgmtClass) int {
	switch {
	case c == ClassSubnAdm:
		return SAHeaderSize
	case c.IsVendorRange2():
		return 40
	}
	return MADHeaderSize + RMPPHeaderSize
}

// RMPPReassembler is the receiving side of one RMPP transfer, for an agent
// registered with UserRMPP (the kernel's mad_rmpp.c does it for others):
// DATA segments go in with Add, in order, and Message returns the whole
// message once the last has come. The message is the first segment's
// headers followed by every segment's data, and its length what the
// kernel's get_mad_len gives: the data offset, plus the data of all
// segments, less the last segment's unused room (its PayloadLength counts
// the bytes from byte 36 on).
type RMPPReassembler struct {
	msg  []byte
	next uint32
	done bool
	off  int
}

// RMPP reassembly errors: a segment out of order, a header that is not a
// DATA segment of an active transfer, or a message larger than the
// reassembler takes (64 MiB, Packet's limit).
var (
	ErrRMPPSegment = errors.New("umad: RMPP segment out of sequence")
	ErrRMPPHeader  = errors.New("umad: not an RMPP DATA segment")
)

// Reset readies r for a new transfer.
func (r *RMPPReassembler) Reset() {
	if r == nil {
		return
	}
	r.msg, r.next, r.done, r.off = r.msg[:0], 0, false, 0
}

// Add takes the next DATA segment (a whole MAD, up to 256 bytes) and
// reports whether it was the last. The first must have the First flag
// and segment number 1; each next the number after; a segment that does
// not fit fails (wrapping ErrRMPPSegment or ErrRMPPHeader) and leaves r
// as it was. After the last, Add fails until Reset.
func (r *RMPPReassembler) Add(seg []byte) (last bool, err error) {
	if r == nil {
		return false, errNil("RMPPReassembler.Add")
	}
	var h RMPPHeader
	if len(seg) < MADHeaderSize+RMPPHeaderSize {
		return false, errRMPPShort
	}
	h.get(seg[MADHeaderSize:])
	if len(seg) > MADSize {
		return false, madError("an RMPP segment is one MAD", &ErrLongMAD)
	}
	if h.Type != RMPPTypeData || h.Flags&RMPPFlagActive == 0 || h.Version != 1 {
		return false, fmt.Errorf("%w (version %d, type %d, flags %#x)", ErrRMPPHeader, h.Version, h.Type, h.Flags)
	}
	if r.done {
		return false, fmt.Errorf("%w: segment %d after the last", ErrRMPPSegment, h.Data1)
	}
	first := h.Flags&RMPPFlagFirst != 0
	switch {
	case r.next == 0 && (!first || h.Data1 != 1):
		return false, fmt.Errorf("%w: segment %d (flags %#x) first", ErrRMPPSegment, h.Data1, h.Flags)
	case r.next != 0 && (first || h.Data1 != r.next):
		return false, fmt.Errorf("%w: segment %d, want %d", ErrRMPPSegment, h.Data1, r.next)
	}
	off := RMPPDataOffset(MgmtClass(seg[1]))
	if r.next == 0 {
		r.off = off
		r.msg = append(r.msg[:0], seg[:min(off, len(seg))]...)
		for len(r.msg) < off {
			r.msg = append(r.msg, 0)
		}
	}
	if len(r.msg)+MADSize-off > pktMaxMAD {
		return false, fmt.Errorf("%w: the message passes %d bytes", ErrRMPPSegment, pktMaxMAD)
	}
	data := make([]byte, MADSize-off)
	if len(seg) > off {
		copy(data, seg[off:])
	}
	r.msg = append(r.msg, data...)
	r.next = h.Data1 + 1
	if h.Flags&RMPPFlagLast != 0 {
		// get_mad_len: the last segment's PayloadLength counts its
		// bytes after the RMPP header; the rest of it is padding.
		pad := (MADSize - MADHeaderSize - RMPPHeaderSize) - int(h.Data2)
		if pad < 0 || pad > MADSize-MADHeaderSize-RMPPHeaderSize {
			pad = 0
		}
		r.msg = r.msg[:max(len(r.msg)-pad, r.off)]
		r.done = true
	}
	return r.done, nil
}

// Message returns the reassembled message once the last segment is in,
// nil before. It aliases r's buffer until Reset.
func (r *RMPPReassembler) Message() []byte {
	if r == nil || !r.done {
		return nil
	}
	return r.msg
}
