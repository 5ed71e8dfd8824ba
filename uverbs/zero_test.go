package uverbs

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestZeroValues: values Open did not make (zero values, nil pointers)
// answer every method with an error or a zero value.
func TestZeroValues(t *testing.T) {
	zerotest.Methods(t, nil,
		new(Context), new(PD), new(CQ), new(QP), new(CompChannel), new(owned),
		new(AsyncEvent), new(Device), new(GIDEntry), new(DeviceAttr), new(PortAttr), new(QPAttr),
		(*Context)(nil), (*PD)(nil), (*CQ)(nil), (*QP)(nil), (*CompChannel)(nil), (*owned)(nil))
}
