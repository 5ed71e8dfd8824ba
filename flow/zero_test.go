package flow

import (
	"errors"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestZeroAndNil: a nil *Flow and a zero Flow (not made by Create) answer
// every call with nil or a zero value, never a panic; Close of a nil *Flow
// is EINVAL, of a zero one nil (nothing to destroy).
func TestZeroAndNil(t *testing.T) {
	for name, f := range map[string]*Flow{"nil": nil, "zero": {}} {
		if f.Handle() != 0 || f.Context() != nil || f.QP() != nil {
			t.Errorf("%s: accessors not zero", name)
		}
		if err := f.Close(); (f == nil) != errors.Is(err, syscall.EINVAL) || (f != nil && err != nil) {
			t.Errorf("%s: Close: %v", name, err)
		}
	}
}

// TestZeroValuesReflect: the same for every method, through reflection.
func TestZeroValuesReflect(t *testing.T) {
	zerotest.Methods(t, nil, new(Flow), new(Attr), new(Count), new(Eth), new(IPv4), new(IPv6), new(TCP), new(UDP),
		new(VXLAN), new(GRE), new(MPLS), new(ESP), new(Tag), new(Handle), new(Drop), (*Flow)(nil))
}

// TestNilReceivers: every exported method of a nil pointer answers an
// error matching EINVAL (or zero values, where it returns no error), never
// a panic.
func TestNilReceivers(t *testing.T) {
	zerotest.NilEINVAL(t, nil, (*Flow)(nil), (*Attr)(nil), (*Count)(nil), (*Eth)(nil), (*IPv4)(nil), (*IPv6)(nil),
		(*TCP)(nil), (*UDP)(nil), (*VXLAN)(nil), (*GRE)(nil), (*MPLS)(nil), (*ESP)(nil), (*Tag)(nil), (*Handle)(nil),
		(*Drop)(nil), (*EthFilter)(nil), (*IPv4Filter)(nil), (*IPv6Filter)(nil), (*PortFilter)(nil), (*GREFilter)(nil))
}
