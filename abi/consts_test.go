//go:build linux

package abi

import (
	"testing"
	"unsafe"
)

// Spot checks of the generated ABI against numbers taken independently
// from the Linux 6.12 UAPI headers (include/uapi/rdma/) and pahole.
func TestSpotSizes(t *testing.T) {
	for _, c := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"ib_uverbs_ioctl_hdr", unsafe.Sizeof(IbUverbsIoctlHdr{}), 24},
		{"ib_uverbs_attr", unsafe.Sizeof(IbUverbsAttr{}), 16},
		{"ib_user_mad_hdr", unsafe.Sizeof(IbUserMadHdr{}), 64},
		{"ib_user_mad_hdr_old", unsafe.Sizeof(IbUserMadHdrOld{}), 56},
		{"ib_user_mad_reg_req", unsafe.Sizeof(IbUserMadRegReq{}), 28},
		{"ib_user_mad_reg_req2", unsafe.Sizeof(IbUserMadRegReq2{}), 40},
		{"ib_uverbs_cmd_hdr", unsafe.Sizeof(IbUverbsCmdHdr{}), 8},
		{"ib_uverbs_ex_cmd_hdr", unsafe.Sizeof(IbUverbsExCmdHdr{}), 16},
		{"ib_uverbs_query_port_resp_ex", unsafe.Sizeof(IbUverbsQueryPortRespEx{}), 48},
		{"ib_uverbs_flow_spec_hdr", unsafe.Sizeof(IbUverbsFlowSpecHdr{}), 8},
		{"mlx5_ib_flow_counters_desc", unsafe.Sizeof(Mlx5IbFlowCountersDesc{}), 8},
		{"mlx5_ib_flow_counters_data", unsafe.Sizeof(Mlx5IbFlowCountersData{}), 16},
		{"mlx5_ib_create_flow", unsafe.Sizeof(Mlx5IbCreateFlow{}), 8},
		{"mminfo", unsafe.Sizeof(Mminfo{}), 16},
	} {
		if c.got != c.want {
			t.Errorf("sizeof(struct %s) = %d, want %d", c.name, c.got, c.want)
		}
	}

	// Offsets of struct ib_uverbs_ioctl_hdr (rdma_user_ioctl_cmds.h).
	var h IbUverbsIoctlHdr
	if off := unsafe.Offsetof(h.DriverId); off != 16 {
		t.Errorf("ib_uverbs_ioctl_hdr.driver_id at %d, want 16", off)
	}
	var a IbUverbsAttr
	if off := unsafe.Offsetof(a.Data); off != 8 {
		t.Errorf("ib_uverbs_attr.data at %d, want 8", off)
	}
	if off := unsafe.Offsetof(a.AttrData); off != 6 {
		t.Errorf("ib_uverbs_attr.attr_data at %d, want 6", off)
	}
	var m IbUserMadHdr
	if off := unsafe.Offsetof(m.FlowLabel); off != 52 {
		t.Errorf("ib_user_mad_hdr.flow_label at %d, want 52", off)
	}
	if off := unsafe.Offsetof(m.PkeyIndex); off != 56 {
		t.Errorf("ib_user_mad_hdr.pkey_index at %d, want 56", off)
	}
	var r IbUserMadRegReq
	if off := unsafe.Offsetof(r.MethodMask); off != 4 {
		t.Errorf("ib_user_mad_reg_req.method_mask at %d, want 4", off)
	}
	if off := unsafe.Offsetof(r.RmppVersion); off != 26 {
		t.Errorf("ib_user_mad_reg_req.rmpp_version at %d, want 26", off)
	}
	var r2 IbUserMadRegReq2
	if off := unsafe.Offsetof(r2.MethodMask); off != 16 {
		t.Errorf("ib_user_mad_reg_req2.method_mask at %d, want 16", off)
	}
	var e IbUverbsFlowSpecEth
	if off := unsafe.Offsetof(e.Val); off != unsafe.Sizeof(IbUverbsFlowSpecHdr{}) {
		t.Errorf("ib_uverbs_flow_spec_eth.val at %d, want right after the 8-byte hdr", off)
	}
}

func TestSpotConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"RDMA_IOCTL_MAGIC", RDMA_IOCTL_MAGIC, 0x1b},
		{"RDMA_VERBS_IOCTL", RDMA_VERBS_IOCTL, 0xC0181B01},
		{"IB_USER_MAD_REGISTER_AGENT", IB_USER_MAD_REGISTER_AGENT, 0xC01C1B01},
		{"IB_USER_MAD_UNREGISTER_AGENT", IB_USER_MAD_UNREGISTER_AGENT, 0x40041B02},
		{"IB_USER_MAD_ENABLE_PKEY", IB_USER_MAD_ENABLE_PKEY, 0x1B03},
		{"IB_USER_MAD_REGISTER_AGENT2", IB_USER_MAD_REGISTER_AGENT2, 0xC0281B04},
		{"IB_USER_MAD_USER_RMPP", IB_USER_MAD_USER_RMPP, 1},
		{"RDMA_DRIVER_UNKNOWN", RDMA_DRIVER_UNKNOWN, 0},
		{"RDMA_DRIVER_MLX5", RDMA_DRIVER_MLX5, 1},
		{"RDMA_DRIVER_RXE", RDMA_DRIVER_RXE, 14},
		{"RDMA_DRIVER_MANA", RDMA_DRIVER_MANA, 20},
		{"UVERBS_ID_NS_MASK", UVERBS_ID_NS_MASK, 0xF000},
		{"UVERBS_ID_NS_SHIFT", UVERBS_ID_NS_SHIFT, 12},
		{"UVERBS_ID_DRIVER_NS", UVERBS_ID_DRIVER_NS, 0x1000},
		{"UVERBS_ATTR_UHW_IN", UVERBS_ATTR_UHW_IN, 0x1000},
		{"UVERBS_ATTR_UHW_OUT", UVERBS_ATTR_UHW_OUT, 0x1001},
		{"UVERBS_ID_DRIVER_NS_WITH_UHW", UVERBS_ID_DRIVER_NS_WITH_UHW, 0x1002},
		{"UVERBS_ATTR_F_MANDATORY", UVERBS_ATTR_F_MANDATORY, 1},
		{"UVERBS_ATTR_F_VALID_OUTPUT", UVERBS_ATTR_F_VALID_OUTPUT, 2},
		{"UVERBS_OBJECT_DEVICE", UVERBS_OBJECT_DEVICE, 0},
		{"UVERBS_OBJECT_COUNTERS", UVERBS_OBJECT_COUNTERS, 15},
		{"UVERBS_METHOD_INVOKE_WRITE", UVERBS_METHOD_INVOKE_WRITE, 0},
		{"UVERBS_ATTR_CORE_IN", UVERBS_ATTR_CORE_IN, 0},
		{"UVERBS_ATTR_CORE_OUT", UVERBS_ATTR_CORE_OUT, 1},
		{"UVERBS_ATTR_WRITE_CMD", UVERBS_ATTR_WRITE_CMD, 2},
		{"MLX5_IB_OBJECT_DEVX", MLX5_IB_OBJECT_DEVX, 0x1000},
		{"MLX5_IB_ATTR_CREATE_CQ_UAR_INDEX", MLX5_IB_ATTR_CREATE_CQ_UAR_INDEX, 0x1002},
		{"IB_USER_VERBS_ABI_VERSION", IB_USER_VERBS_ABI_VERSION, 6},
		{"IB_USER_VERBS_CMD_GET_CONTEXT", IB_USER_VERBS_CMD_GET_CONTEXT, 0},
		{"IB_USER_VERBS_CMD_QUERY_PORT", IB_USER_VERBS_CMD_QUERY_PORT, 2},
		{"IB_USER_VERBS_CMD_CREATE_CQ", IB_USER_VERBS_CMD_CREATE_CQ, 18},
		{"IB_USER_VERBS_CMD_CREATE_QP", IB_USER_VERBS_CMD_CREATE_QP, 24},
		{"IB_USER_VERBS_CMD_OPEN_QP", IB_USER_VERBS_CMD_OPEN_QP, 40},
		{"IB_USER_VERBS_CMD_THRESHOLD", IB_USER_VERBS_CMD_THRESHOLD, 50},
		{"IB_USER_VERBS_EX_CMD_QUERY_DEVICE", IB_USER_VERBS_EX_CMD_QUERY_DEVICE, 1},
		{"IB_USER_VERBS_EX_CMD_CREATE_FLOW", IB_USER_VERBS_EX_CMD_CREATE_FLOW, 50},
		{"IB_USER_VERBS_EX_CMD_DESTROY_FLOW", IB_USER_VERBS_EX_CMD_DESTROY_FLOW, 51},
		{"IB_USER_VERBS_EX_CMD_MODIFY_CQ", IB_USER_VERBS_EX_CMD_MODIFY_CQ, 57},
		{"IB_USER_VERBS_CMD_COMMAND_MASK", IB_USER_VERBS_CMD_COMMAND_MASK, 0xff},
		{"IB_USER_VERBS_CMD_FLAG_EXTENDED", IB_USER_VERBS_CMD_FLAG_EXTENDED, 0x80000000},
		{"IB_USER_MAD_ABI_VERSION", IB_USER_MAD_ABI_VERSION, 5},
		{"RDMA_NL_NLDEV", RDMA_NL_NLDEV, 5},
		{"RDMA_NL_GROUP_NOTIFY", RDMA_NL_GROUP_NOTIFY, 4},
		{"RDMA_NLDEV_CMD_GET", RDMA_NLDEV_CMD_GET, 1},
		{"RDMA_NLDEV_CMD_GET_CHARDEV", RDMA_NLDEV_CMD_GET_CHARDEV, 15},
		{"RDMA_NLDEV_CMD_MONITOR", RDMA_NLDEV_CMD_MONITOR, 28},
		{"RDMA_NLDEV_ATTR_DEV_INDEX", RDMA_NLDEV_ATTR_DEV_INDEX, 1},
		{"RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID", RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 73},
		{"RDMA_NLDEV_ATTR_NAME_ASSIGN_TYPE", RDMA_NLDEV_ATTR_NAME_ASSIGN_TYPE, 101},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	// The create-flow command word on the wire (ib_user_verbs.h, struct ib_uverbs_cmd_hdr and ib_uverbs_ex_cmd_hdr; uverbs_main.c, ib_uverbs_write).
	if got := IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_CREATE_FLOW; got != 0x80000032 {
		t.Errorf("extended CREATE_FLOW command = %#x, want 0x80000032", got)
	}
}
