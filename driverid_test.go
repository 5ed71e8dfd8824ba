package rdma_test

import (
	"testing"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
)

// The DriverID constants are spelt out in the root package (which cannot
// import abi); they are enum rdma_driver_id's numbers.
func TestDriverIDsAreABIs(t *testing.T) {
	for _, tc := range []struct {
		got  rdma.DriverID
		want uint32
	}{
		{rdma.DriverUnknown, abi.RDMA_DRIVER_UNKNOWN},
		{rdma.DriverMLX5, abi.RDMA_DRIVER_MLX5},
		{rdma.DriverMLX4, abi.RDMA_DRIVER_MLX4},
		{rdma.DriverCXGB3, abi.RDMA_DRIVER_CXGB3},
		{rdma.DriverCXGB4, abi.RDMA_DRIVER_CXGB4},
		{rdma.DriverMTHCA, abi.RDMA_DRIVER_MTHCA},
		{rdma.DriverBNXTRE, abi.RDMA_DRIVER_BNXT_RE},
		{rdma.DriverOCRDMA, abi.RDMA_DRIVER_OCRDMA},
		{rdma.DriverNES, abi.RDMA_DRIVER_NES},
		{rdma.DriverIRDMA, abi.RDMA_DRIVER_IRDMA},
		{rdma.DriverVMWPVRDMA, abi.RDMA_DRIVER_VMW_PVRDMA},
		{rdma.DriverQEDR, abi.RDMA_DRIVER_QEDR},
		{rdma.DriverHNS, abi.RDMA_DRIVER_HNS},
		{rdma.DriverUSNIC, abi.RDMA_DRIVER_USNIC},
		{rdma.DriverRXE, abi.RDMA_DRIVER_RXE},
		{rdma.DriverHFI1, abi.RDMA_DRIVER_HFI1},
		{rdma.DriverQIB, abi.RDMA_DRIVER_QIB},
		{rdma.DriverEFA, abi.RDMA_DRIVER_EFA},
		{rdma.DriverSIW, abi.RDMA_DRIVER_SIW},
		{rdma.DriverERDMA, abi.RDMA_DRIVER_ERDMA},
		{rdma.DriverMANA, abi.RDMA_DRIVER_MANA},
	} {
		if uint32(tc.got) != tc.want {
			t.Errorf("%v is %d, abi says %d", tc.got, uint32(tc.got), tc.want)
		}
	}
}

// The GIDType constants are spelt out too; they are enum
// ib_uverbs_gid_type's numbers.
func TestGIDTypesAreABIs(t *testing.T) {
	for _, tc := range []struct {
		got  rdma.GIDType
		want uint32
	}{
		{rdma.GIDTypeIB, abi.IB_UVERBS_GID_TYPE_IB},
		{rdma.GIDTypeRoCEv1, abi.IB_UVERBS_GID_TYPE_ROCE_V1},
		{rdma.GIDTypeRoCEv2, abi.IB_UVERBS_GID_TYPE_ROCE_V2},
	} {
		if uint32(tc.got) != tc.want {
			t.Errorf("%v is %d, abi says %d", tc.got, uint32(tc.got), tc.want)
		}
	}
}
