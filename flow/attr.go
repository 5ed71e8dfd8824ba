package flow

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"syscall"

	"github.com/purerdma/rdma/internal/errs"
)

// AttrType is the kind of flow (the kernel's enum ib_flow_attr_type).
type AttrType uint32

// The flow kinds.
const (
	// AttrNormal steers the packets its specs match (IB_FLOW_ATTR_NORMAL).
	AttrNormal AttrType = 0
	// AttrAllDefault takes every packet no other flow took
	// (IB_FLOW_ATTR_ALL_DEFAULT).
	AttrAllDefault AttrType = 1
	// AttrMCDefault takes every multicast packet no other flow took
	// (IB_FLOW_ATTR_MC_DEFAULT).
	AttrMCDefault AttrType = 2
	// AttrSniffer gets a copy of all traffic, both directions
	// (IB_FLOW_ATTR_SNIFFER).
	AttrSniffer AttrType = 3
)

// String returns the kernel's name without prefix ("NORMAL").
func (t AttrType) String() string {
	switch t {
	case AttrNormal:
		return "NORMAL"
	case AttrAllDefault:
		return "ALL_DEFAULT"
	case AttrMCDefault:
		return "MC_DEFAULT"
	case AttrSniffer:
		return "SNIFFER"
	}
	return fmt.Sprintf("AttrType(%d)", uint32(t))
}

// AttrFlags are flow flags (the kernel's enum ib_flow_flags).
type AttrFlags uint32

// The flow flags.
const (
	// FlagDontTrap lets matching packets go on to lower-priority flows
	// and the kernel (IB_FLOW_ATTR_FLAGS_DONT_TRAP); not with
	// AttrAllDefault or AttrMCDefault.
	FlagDontTrap AttrFlags = 1 << 1
	// FlagEgress matches outgoing packets (IB_FLOW_ATTR_FLAGS_EGRESS).
	FlagEgress AttrFlags = 1 << 2
)

// AttrHdrSize is sizeof(struct ib_uverbs_flow_attr).
const AttrHdrSize = 16

// Attr describes a flow (struct ibv_flow_attr; on the wire struct
// ib_uverbs_flow_attr followed by the specs). Its size and spec count are
// computed from Specs.
type Attr struct {
	Type AttrType
	// Priority: lower is higher priority; mlx5 takes 0–15 (ENOMEM above).
	Priority uint16
	// Port is the 1-based port number (1 to 255: the ABI carries a u8).
	Port  int
	Flags AttrFlags
	// Specs are the filters and actions, in order. The kernel takes at
	// most 10 (IB_FLOW_SPEC_SUPPORT_LAYERS).
	Specs []Spec
}

// Size returns flow_attr.size: the bytes of all specs.
func (a *Attr) Size() int {
	if a == nil {
		return 0
	}
	n := 0
	for _, s := range a.Specs {
		if !isNil(s) {
			n += s.Len()
		}
	}
	return n
}

// AppendBinary appends struct ib_uverbs_flow_attr and the specs to b. The
// error wraps EINVAL for a port past 255, more than 255 specs, more than 65535 bytes of
// them, a nil spec or a spec that fails to encode.
func (a *Attr) AppendBinary(b []byte) ([]byte, error) {
	if a == nil {
		return b, errs.New("encode flow attr", "", fmt.Errorf("nil attributes: %w", syscall.EINVAL))
	}
	if a.Port < 0 || a.Port > 0xff {
		return b, errs.New("encode flow attr", "", fmt.Errorf("port %d: port numbers are 1 to 255: %w", a.Port, syscall.EINVAL))
	}
	if len(a.Specs) > 0xff {
		return b, errs.New("encode flow attr", "", fmt.Errorf("%d specs, num_of_specs is 8 bits: %w", len(a.Specs), syscall.EINVAL))
	}
	size := 0
	for i, s := range a.Specs {
		if isNil(s) {
			return b, errs.New("encode flow attr", "", fmt.Errorf("spec %d is nil: %w", i, syscall.EINVAL))
		}
		size += s.Len()
	}
	if size > 0xffff {
		return b, errs.New("encode flow attr", "", fmt.Errorf("%d bytes of specs, size is 16 bits: %w", size, syscall.EINVAL))
	}
	le := binary.LittleEndian
	start := len(b)
	b = le.AppendUint32(b, uint32(a.Type))
	b = le.AppendUint16(b, uint16(size))
	b = le.AppendUint16(b, a.Priority)
	b = append(b, uint8(len(a.Specs)), 0, 0, uint8(a.Port))
	b = le.AppendUint32(b, uint32(a.Flags))
	for _, s := range a.Specs {
		var err error
		if b, err = s.AppendBinary(b); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

// MarshalBinary returns the wire form of the attributes and specs.
func (a *Attr) MarshalBinary() ([]byte, error) {
	return a.AppendBinary(make([]byte, 0, AttrHdrSize+a.Size()))
}

// isNil reports whether s is nil or a nil pointer in an interface.
func isNil(s Spec) bool {
	if s == nil {
		return true
	}
	v := reflect.ValueOf(s)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// UnmarshalBinary decodes struct ib_uverbs_flow_attr and its specs from b,
// which must hold exactly flow_attr.size bytes of specs after it. Reserved
// bytes must be 0 and the specs must be what the kernel accepts (see
// DecodeSpecs). Errors wrap EINVAL.
func (a *Attr) UnmarshalBinary(b []byte) error {
	if a == nil {
		return decodeErr(syscall.EINVAL, "nil attributes to decode into")
	}
	if len(b) < AttrHdrSize {
		return decodeErr(syscall.EINVAL, "%d bytes is shorter than struct ib_uverbs_flow_attr", len(b))
	}
	le := binary.LittleEndian
	size := int(le.Uint16(b[4:]))
	n := int(b[8])
	if b[9] != 0 || b[10] != 0 {
		return decodeErr(syscall.EINVAL, "flow attr reserved bytes %#x %#x", b[9], b[10])
	}
	if len(b)-AttrHdrSize != size {
		return decodeErr(syscall.EINVAL, "flow attr size %d, %d bytes of specs follow", size, len(b)-AttrHdrSize)
	}
	specs, err := DecodeSpecs(b[AttrHdrSize:], n)
	if err != nil {
		return err
	}
	*a = Attr{
		Type:     AttrType(le.Uint32(b[0:])),
		Priority: le.Uint16(b[6:]),
		Port:     int(b[11]),
		Flags:    AttrFlags(le.Uint32(b[12:])),
		Specs:    specs,
	}
	return nil
}
