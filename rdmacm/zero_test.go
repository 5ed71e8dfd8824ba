package rdmacm

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestNilReceivers: every exported method of a nil pointer answers an
// error matching EINVAL (or zero values, where it returns no error), never
// a panic.
func TestNilReceivers(t *testing.T) {
	zerotest.NilEINVAL(t, nil, (*ID)(nil), (*EventChannel)(nil), (*Event)(nil), (*Options)(nil), (*RejectError)(nil))
}
