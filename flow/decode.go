package flow

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/purerdma/rdma/internal/errs"
)

// filterLen is the length of each spec type's filter as the kernel keeps
// it (offsetof(struct ib_flow_*_filter, real_sz); the IPv6 filter's
// reserved last byte is not kept): a longer filter must have zero mask
// bytes past it, a shorter one is zero-extended.
func filterLen(t SpecType) (int, bool) {
	switch t {
	case TypeEth:
		return 16, true
	case TypeIPv4:
		return 12, true
	case TypeIPv6:
		return 39, true
	case TypeTCP, TypeUDP, TypeVXLAN, TypeMPLS:
		return 4, true
	case TypeESP, TypeGRE:
		return 8, true
	}
	return 0, false
}

func decodeErr(errno error, format string, args ...any) error {
	return errs.New("decode flow spec", "", fmt.Errorf(format+": %w", append(args, errno)...))
}

// DecodeSpec decodes the spec at the start of b and returns it with the
// number of bytes it takes (its header's size). It accepts what the kernel
// accepts (ib_uverbs_ex_create_flow's kern_spec_to_ib_spec): a reserved
// field of 0; a filter of any length that is a positive multiple of 4,
// shorter ones zero-extended (rdma-core's 24-byte IPv4 spec), longer ones
// with zero mask bytes past the kernel's filter (their value bytes are
// ignored); action specs of their exact size. It does not allocate beyond
// the returned Spec.
//
// Errors wrap EINVAL, the kernel's answer, or EOPNOTSUPP for an action
// handle spec of the wrong size, as the kernel does.
func DecodeSpec(b []byte) (Spec, int, error) {
	if len(b) < SpecHdrSize {
		return nil, 0, decodeErr(syscall.EINVAL, "%d bytes is shorter than a spec header", len(b))
	}
	le := binary.LittleEndian
	t := SpecType(le.Uint32(b[0:]))
	size := int(le.Uint16(b[4:]))
	if size > len(b) {
		return nil, 0, decodeErr(syscall.EINVAL, "%s spec of %d bytes, %d left", t, size, len(b))
	}
	if le.Uint16(b[6:]) != 0 {
		return nil, 0, decodeErr(syscall.EINVAL, "%s spec with reserved field %#x", t, le.Uint16(b[6:]))
	}
	if t >= TypeActionTag {
		s, err := decodeAction(t, b[:size])
		return s, size, err
	}
	if size < SpecHdrSize {
		return nil, 0, decodeErr(syscall.EINVAL, "%s spec of %d bytes", t, size)
	}
	flen := (size - SpecHdrSize) / 2
	if flen%4 != 0 {
		return nil, 0, decodeErr(syscall.EINVAL, "%s spec: a %d-byte filter is not a multiple of 4 bytes", t, flen)
	}
	if t == TypeInner|TypeVXLAN {
		return nil, 0, decodeErr(syscall.EINVAL, "there is no inner VXLAN spec")
	}
	base := t &^ TypeInner
	real, ok := filterLen(base)
	if !ok {
		return nil, 0, decodeErr(syscall.EINVAL, "unknown spec type %#x", uint32(t))
	}
	val, mask := b[SpecHdrSize:SpecHdrSize+flen], b[SpecHdrSize+flen:SpecHdrSize+2*flen]
	if flen > real {
		for i, x := range mask[real:] {
			if x != 0 {
				return nil, 0, decodeErr(syscall.EINVAL, "%s spec: mask byte %d past the kernel's %d-byte filter is %#x", t, real+i, real, x)
			}
		}
	}
	if flen == 0 {
		return nil, 0, decodeErr(syscall.EINVAL, "%s spec without a filter", t)
	}
	// Zero-extend (or cut) both halves to the full user filter.
	var v, m [40]byte
	copy(v[:min(flen, real)], val)
	copy(m[:min(flen, real)], mask)
	inner := t&TypeInner != 0
	var s Spec
	switch base {
	case TypeEth:
		e := &Eth{Inner: inner}
		e.Value.decode(v[:])
		e.Mask.decode(m[:])
		s = e
	case TypeIPv4:
		e := &IPv4{Inner: inner}
		e.Value.decode(v[:])
		e.Mask.decode(m[:])
		s = e
	case TypeIPv6:
		e := &IPv6{Inner: inner}
		e.Value.decode(v[:])
		e.Mask.decode(m[:])
		if e.Value.FlowLabel >= 1<<20 || e.Mask.FlowLabel >= 1<<20 {
			return nil, 0, decodeErr(syscall.EINVAL, "%s spec: flow label %#x (mask %#x) does not fit in 20 bits", t, e.Value.FlowLabel, e.Mask.FlowLabel)
		}
		s = e
	case TypeTCP:
		e := &TCP{Inner: inner}
		e.Value.decode(v[:])
		e.Mask.decode(m[:])
		s = e
	case TypeUDP:
		e := &UDP{Inner: inner}
		e.Value.decode(v[:])
		e.Mask.decode(m[:])
		s = e
	case TypeVXLAN:
		e := &VXLAN{VNI: binary.BigEndian.Uint32(v[:]), Mask: binary.BigEndian.Uint32(m[:])}
		if e.VNI >= 1<<24 || e.Mask >= 1<<24 {
			return nil, 0, decodeErr(syscall.EINVAL, "vxlan spec: VNI %#x (mask %#x) does not fit in 24 bits", e.VNI, e.Mask)
		}
		s = e
	case TypeGRE:
		e := &GRE{Inner: inner}
		e.Value.decode(v[:])
		e.Mask.decode(m[:])
		s = e
	case TypeMPLS:
		s = &MPLS{Inner: inner, Label: binary.BigEndian.Uint32(v[:]), Mask: binary.BigEndian.Uint32(m[:])}
	case TypeESP:
		s = &ESP{Inner: inner,
			Value: ESPFilter{SPI: binary.LittleEndian.Uint32(v[0:]), Seq: binary.LittleEndian.Uint32(v[4:])},
			Mask:  ESPFilter{SPI: binary.LittleEndian.Uint32(m[0:]), Seq: binary.LittleEndian.Uint32(m[4:])}}
	}
	return s, size, nil
}

func decodeAction(t SpecType, b []byte) (Spec, error) {
	le := binary.LittleEndian
	want := 16
	switch t {
	case TypeActionDrop:
		want = SpecHdrSize
	case TypeActionTag, TypeActionHandle, TypeActionCount:
	default:
		return nil, decodeErr(syscall.EINVAL, "unknown action type %#x", uint32(t))
	}
	if len(b) != want {
		errno := syscall.EINVAL
		if t == TypeActionHandle {
			errno = syscall.EOPNOTSUPP // ib_uverbs_ex_create_flow says so for this one
		}
		return nil, decodeErr(errno, "%s action of %d bytes, want %d", t, len(b), want)
	}
	switch t {
	case TypeActionTag:
		return &Tag{ID: le.Uint32(b[8:])}, nil
	case TypeActionHandle:
		return &Handle{Handle: le.Uint32(b[8:])}, nil
	case TypeActionCount:
		return &Count{Handle: le.Uint32(b[8:])}, nil
	}
	return &Drop{}, nil
}

// DecodeSpecs decodes n specs filling exactly b, as the kernel walks
// flow_attr.size bytes of num_of_specs specs: a spec that does not fit,
// bytes left over or fewer specs than n are errors (EINVAL). n is checked
// before anything is allocated: a negative n, or more specs than b could
// hold (every spec takes at least its 8-byte header), is EINVAL.
func DecodeSpecs(b []byte, n int) ([]Spec, error) {
	if n < 0 || n > len(b)/SpecHdrSize {
		return nil, decodeErr(syscall.EINVAL, "%d specs cannot fill %d bytes (each takes at least %d)", n, len(b), SpecHdrSize)
	}
	specs := make([]Spec, 0, n)
	for len(specs) < n && len(b) >= SpecHdrSize && len(b) >= int(binary.LittleEndian.Uint16(b[4:])) {
		s, size, err := DecodeSpec(b)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
		b = b[size:]
	}
	if len(b) != 0 || len(specs) != n {
		return nil, decodeErr(syscall.EINVAL, "%d specs decoded of %d, %d bytes left", len(specs), n, len(b))
	}
	return specs, nil
}
