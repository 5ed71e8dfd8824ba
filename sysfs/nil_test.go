package sysfs

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestNilReceivers: the data types' methods on a nil pointer answer EINVAL
// (or a zero value where they return no error) instead of panicking. A nil
// *FS is not among them: it reads the running system (TestZeroValues).
func TestNilReceivers(t *testing.T) {
	zerotest.NilEINVAL(t, []string{
		// An error's Unwrap on nil wraps nothing: nil, not EINVAL.
		"ParseError.Unwrap", "DanglingLinkError.Unwrap",
	}, (*CA)(nil), (*Port)(nil), (*HwCounterSet)(nil), (*CounterSet)(nil),
		(*PortStatusReader)(nil), (*CAWatch)(nil), (*ParseError)(nil), (*DanglingLinkError)(nil))
}
