package fakekernel

import (
	"encoding/binary"
	"syscall"

	"github.com/purerdma/rdma/abi"
)

// writeCmd is one legacy command the model implements: its fixed request
// and response sizes (UAPI_DEF_WRITE_IO: recorded for non-ex commands only,
// struct ib_uverbs_cmd_hdr and ib_uverbs_ex_cmd_hdr in ib_user_verbs.h, uverbs_main.c ib_uverbs_write) and its handler.
type writeCmd struct {
	name      string
	req, resp int
	run       func(v *Verbs, c *Call, req []byte) error
}

// Fixed sizes, including the response u64 that requests with a response
// begin with.
var writeCmds = map[uint32]writeCmd{
	abi.IB_USER_VERBS_CMD_QUERY_DEVICE:                                          {"QUERY_DEVICE", 8, 176, (*Verbs).wQueryDevice},
	abi.IB_USER_VERBS_CMD_QUERY_PORT:                                            {"QUERY_PORT", 16, 40, (*Verbs).wQueryPort},
	abi.IB_USER_VERBS_CMD_ALLOC_PD:                                              {"ALLOC_PD", 8, 4, (*Verbs).wAllocPD},
	abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL:                                   {"CREATE_COMP_CHANNEL", 8, 4, (*Verbs).wCreateCompChannel},
	abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ:                                         {"REQ_NOTIFY_CQ", 8, 0, (*Verbs).wReqNotifyCQ},
	abi.IB_USER_VERBS_CMD_QUERY_QP:                                              {"QUERY_QP", 16, 128, (*Verbs).wQueryQP},
	abi.IB_USER_VERBS_CMD_MODIFY_QP:                                             {"MODIFY_QP", 112, 0, (*Verbs).wModifyQP},
	abi.IB_USER_VERBS_CMD_FLAG_EXTENDED | abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE: {"EX_QUERY_DEVICE", 0, 0, (*Verbs).wExQueryDevice},
}

// Highest command numbers of the core write tables (ib_uverbs_write_cmds,
// IB_USER_VERBS_EX_CMD_MODIFY_CQ): numbers past them are EOPNOTSUPP.
const (
	numWrite   = abi.IB_USER_VERBS_CMD_OPEN_QP + 1
	numWriteEx = abi.IB_USER_VERBS_EX_CMD_MODIFY_CQ + 1
)

// invokeWrite is UVERBS_METHOD_INVOKE_WRITE (uverbs_std_types_device.c UVERBS_METHOD_INVOKE_WRITE, uverbs_main.c): bits outside
// the command mask and the extended flag EINVAL; a command past the table,
// or one the model does not implement, EOPNOTSUPP; for non-ex commands a
// CORE_IN or CORE_OUT shorter than the fixed size ENOSPC; a request longer
// than the fixed size must be zero past it (EOPNOTSUPP, uverbs_request).
func (v *Verbs) invokeWrite(c *Call) error {
	cmd64, _ := c.Value(abi.UVERBS_ATTR_WRITE_CMD)
	cmd := uint32(cmd64)
	if cmd&^(abi.IB_USER_VERBS_CMD_COMMAND_MASK|abi.IB_USER_VERBS_CMD_FLAG_EXTENDED) != 0 {
		return syscall.EINVAL
	}
	idx := cmd & abi.IB_USER_VERBS_CMD_COMMAND_MASK
	if (cmd&abi.IB_USER_VERBS_CMD_FLAG_EXTENDED != 0 && idx >= numWriteEx) || (cmd&abi.IB_USER_VERBS_CMD_FLAG_EXTENDED == 0 && idx >= numWrite) {
		return syscall.EOPNOTSUPP
	}
	w, ok := writeCmds[cmd]
	if !ok {
		return ErrNoHandler
	}
	in, _ := c.In(abi.UVERBS_ATTR_CORE_IN)
	outLen := max(c.OutLen(abi.UVERBS_ATTR_CORE_OUT), 0)
	if len(in) < w.req || outLen < w.resp {
		return syscall.ENOSPC
	}
	return w.run(v, c, in)
}

// request is uverbs_request: the request zero-extended to size, EOPNOTSUPP
// when the caller's longer request is not zero past it.
func request(in []byte, size int) ([]byte, error) {
	for _, b := range in[min(len(in), size):] {
		if b != 0 {
			return nil, syscall.EOPNOTSUPP
		}
	}
	req := make([]byte, size)
	copy(req, in)
	return req, nil
}

// response is uverbs_response: the core response copied with the rest of
// the caller's buffer zeroed.
func response(c *Call, data []byte) error {
	if c.OutLen(abi.UVERBS_ATTR_CORE_OUT) < 0 {
		return nil
	}
	return c.Out(abi.UVERBS_ATTR_CORE_OUT, data, true)
}

func (v *Verbs) wQueryDevice(c *Call, in []byte) error {
	if err := needContext(c); err != nil {
		return err
	}
	if _, err := request(in, 8); err != nil {
		return err
	}
	return response(c, structBytes(&v.Attr.Base))
}

// wExQueryDevice is ib_uverbs_ex_query_device: comp_mask and reserved must
// be 0 (EINVAL); the driver's query_device gets the driver data (rxe: any
// is EINVAL; mlx5 fills struct mlx5_ib_query_device_resp); response_length
// is min(out, sizeof(resp)).
func (v *Verbs) wExQueryDevice(c *Call, in []byte) error {
	if err := needContext(c); err != nil {
		return err
	}
	req, err := request(in, 8)
	if err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(req[0:]) != 0 || binary.LittleEndian.Uint32(req[4:]) != 0 {
		return syscall.EINVAL
	}
	switch v.DriverID {
	case abi.RDMA_DRIVER_RXE:
		if len(c.UHWIn()) != 0 || c.OutLen(abi.UVERBS_ATTR_UHW_OUT) > 0 {
			return syscall.EINVAL
		}
	case abi.RDMA_DRIVER_MLX5:
		if err := v.mlx5QueryDevice(c); err != nil {
			return err
		}
	}
	resp := v.Attr
	out := max(c.OutLen(abi.UVERBS_ATTR_CORE_OUT), 0)
	resp.ResponseLength = uint32(min(out, int(structSize(&resp))))
	return response(c, structBytes(&resp))
}

func structSize[T any](p *T) uintptr { return uintptr(len(structBytes(p))) }

func (v *Verbs) wQueryPort(c *Call, in []byte) error {
	if err := needContext(c); err != nil {
		return err
	}
	req, err := request(in, 16)
	if err != nil {
		return err
	}
	p := v.port(uint64(req[8]))
	if p == nil {
		return syscall.EINVAL
	}
	return response(c, structBytes(&p.Attr.LegacyResp))
}

// wAllocPD is ib_uverbs_alloc_pd: a new PD object; mlx5 writes its 4-byte
// driver response unconditionally (uverbs_cmd.c ib_uverbs_alloc_pd, mlx5 main.c mlx5_ib_alloc_pd).
func (v *Verbs) wAllocPD(c *Call, in []byte) error {
	if _, err := request(in, 8); err != nil {
		return err
	}
	o, err := c.create(abi.UVERBS_OBJECT_PD, false)
	if err != nil {
		return err
	}
	o.Value = &pdVal{}
	if v.DriverID == abi.RDMA_DRIVER_MLX5 {
		if err := c.copyToUdata(binary.LittleEndian.AppendUint32(nil, 0x100+o.Handle)); err != nil {
			return err
		}
	}
	v.logf("alloc pd %d", o.Handle)
	return response(c, binary.LittleEndian.AppendUint32(nil, o.Handle))
}

// wCreateCompChannel is ib_uverbs_create_comp_channel: a new completion
// channel descriptor.
func (v *Verbs) wCreateCompChannel(c *Call, in []byte) error {
	if _, err := request(in, 8); err != nil {
		return err
	}
	o, err := c.create(abi.UVERBS_OBJECT_COMP_CHANNEL, true)
	if err != nil {
		return err
	}
	q := newEventQueue(8)
	q.onCloseLog = func() { v.logf("close comp channel %d", o.Handle) }
	o.Value = q
	v.logf("create comp channel")
	return response(c, binary.LittleEndian.AppendUint32(nil, o.Handle))
}

// wReqNotifyCQ is ib_uverbs_req_notify_cq.
func (v *Verbs) wReqNotifyCQ(c *Call, in []byte) error {
	req, err := request(in, 8)
	if err != nil {
		return err
	}
	o, err := c.lookup(abi.UVERBS_OBJECT_CQ, binary.LittleEndian.Uint32(req))
	if err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(req[4:]) != 0 {
		v.logf("req notify cq %d solicited", o.Handle)
		return nil
	}
	v.logf("req notify cq %d", o.Handle)
	return nil
}
