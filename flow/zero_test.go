package flow

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestZeroAndNil: a nil *Flow and a zero Flow (not made by Create) answer
// every call with nil or a zero value, never a panic.
func TestZeroAndNil(t *testing.T) {
	for name, f := range map[string]*Flow{"nil": nil, "zero": {}} {
		if f.Handle() != 0 || f.Context() != nil || f.QP() != nil {
			t.Errorf("%s: accessors not zero", name)
		}
		if err := f.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
	}
}

// TestZeroValuesReflect: the same for every method, through reflection.
func TestZeroValuesReflect(t *testing.T) {
	zerotest.Methods(t, nil, new(Flow), new(Attr), new(Count), new(Eth), new(IPv4), new(IPv6), new(TCP), new(UDP),
		new(VXLAN), new(GRE), new(MPLS), new(ESP), new(Tag), new(Handle), new(Drop), (*Flow)(nil))
}
