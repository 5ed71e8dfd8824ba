package uverbs

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
	"github.com/purerdma/rdma/internal/verbs"
)

// TestZeroValues: values Open did not make (zero values, nil pointers)
// answer every method with an error or a zero value.
func TestZeroValues(t *testing.T) {
	zerotest.Methods(t, nil,
		new(Context), new(PD), new(CQ), new(QP), new(CompChannel), new(verbs.Owned), new(verbs.Core), new(verbs.Binding),
		new(AsyncEvent), new(Device), new(GIDEntry), new(DeviceAttr), new(PortAttr), new(QPAttr),
		(*Context)(nil), (*PD)(nil), (*CQ)(nil), (*QP)(nil), (*CompChannel)(nil), (*verbs.Owned)(nil), (*verbs.Core)(nil), (*verbs.Binding)(nil))
}

// TestNilReceivers: every exported method of a nil pointer answers an
// error matching EINVAL (or zero values, where it returns no error), never
// a panic.
func TestNilReceivers(t *testing.T) {
	zerotest.NilEINVAL(t, nil,
		(*Context)(nil), (*PD)(nil), (*CQ)(nil), (*QP)(nil), (*AH)(nil), (*MR)(nil), (*CompChannel)(nil),
		(*Options)(nil))
}
