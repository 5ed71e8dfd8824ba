package counters

import (
	"errors"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestZeroAndNil: a nil *Object and a zero Object (not made by Create)
// answer every call with an error or a zero value, never a panic. Close
// of a nil *Object is EINVAL; of a zero one, nil (nothing to destroy).
func TestZeroAndNil(t *testing.T) {
	for name, cs := range map[string]*Object{"nil": nil, "zero": {}} {
		if err := cs.Attach(AttachAttr{Desc: Packets}, nil); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: Attach: %v, want EINVAL", name, err)
		}
		if err := cs.Read(make([]uint64, 1), 0); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: Read: %v, want EINVAL", name, err)
		}
		if len(cs.Points()) != 0 || cs.Bound() != 0 || cs.Handle() != 0 || cs.Context() != nil {
			t.Errorf("%s: accessors not zero", name)
		}
		if err := cs.Close(); (cs == nil) != errors.Is(err, syscall.EINVAL) || (cs != nil && err != nil) {
			t.Errorf("%s: Close: %v", name, err)
		}
	}
}

// TestZeroValuesReflect: the same for every method, through reflection.
func TestZeroValuesReflect(t *testing.T) {
	zerotest.Methods(t, nil, new(Object), new(Set), new(AttachAttr), (*Object)(nil), (*Set)(nil))
}

// TestNilReceivers: every exported method of a nil pointer answers an
// error matching EINVAL (or zero values, where it returns no error), never
// a panic.
func TestNilReceivers(t *testing.T) {
	zerotest.NilEINVAL(t, nil, (*Object)(nil), (*Set)(nil))
}
