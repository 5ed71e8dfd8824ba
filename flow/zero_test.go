package flow

import "testing"

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
