package fakekernel

import (
	"encoding/binary"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

func unmap(m []byte) { sys.Munmap(m) }

func mlx5Ctx(t *testing.T, v *Verbs, reqv *abi.Mlx5IbAllocUcontextReqV2) (*sys.FD, *abi.Mlx5IbAllocUcontextResp) {
	t.Helper()
	fd := vopen(t, v)
	resp := new(abi.Mlx5IbAllocUcontextResp)
	if err := do(fd, req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT).
		In(abi.UVERBS_ATTR_UHW_IN, structBytes(reqv)).Out(abi.UVERBS_ATTR_UHW_OUT, structBytes(resp))); err != nil {
		t.Fatalf("GET_CONTEXT: %v", err)
	}
	return fd, resp
}

func v2(dyn bool) *abi.Mlx5IbAllocUcontextReqV2 {
	r := &abi.Mlx5IbAllocUcontextReqV2{TotalNumBfregs: 16, NumLowLatencyBfregs: 4, MaxCqeVersion: 1, LibCaps: abi.MLX5_LIB_CAP_4K_UAR}
	if dyn {
		r.LibCaps |= abi.MLX5_LIB_CAP_DYN_UAR
	}
	return r
}

// mlx5 GET_CONTEXT rules (§2.2).
func TestMlx5AllocUcontextRules(t *testing.T) {
	v := MLX5("mlx5_0")
	try := func(in []byte) error {
		fd := vopen(t, v)
		defer fd.Close()
		r := req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT).Out(abi.UVERBS_ATTR_UHW_OUT, make([]byte, 72))
		if in != nil {
			r.In(abi.UVERBS_ATTR_UHW_IN, in)
		}
		return do(fd, r)
	}
	good := structBytes(v2(true))
	wantErrno(t, try(nil), syscall.EINVAL)
	wantErrno(t, try(good[:4]), syscall.EINVAL)
	wantErrno(t, try(good[:12]), syscall.EINVAL)
	for _, n := range []int{8, 16, 24, 32} {
		if err := try(good[:n]); err != nil {
			t.Errorf("%d-byte request: %v", n, err)
		}
	}
	bad := func(f func(r *abi.Mlx5IbAllocUcontextReqV2)) []byte {
		r := v2(true)
		f(r)
		return structBytes(r)
	}
	wantErrno(t, try(bad(func(r *abi.Mlx5IbAllocUcontextReqV2) { r.Flags = 2 })), syscall.EOPNOTSUPP)
	wantErrno(t, try(bad(func(r *abi.Mlx5IbAllocUcontextReqV2) { r.CompMask = 1 })), syscall.EOPNOTSUPP)
	wantErrno(t, try(bad(func(r *abi.Mlx5IbAllocUcontextReqV2) { r.Reserved0 = 1 })), syscall.EOPNOTSUPP)
	wantErrno(t, try(bad(func(r *abi.Mlx5IbAllocUcontextReqV2) { r.Reserved2 = 1 })), syscall.EOPNOTSUPP)
	wantErrno(t, try(bad(func(r *abi.Mlx5IbAllocUcontextReqV2) { r.NumLowLatencyBfregs = 16 })), syscall.EINVAL)
	if err := try(bad(func(r *abi.Mlx5IbAllocUcontextReqV2) { r.Flags = abi.MLX5_IB_ALLOC_UCTX_DEVX })); err != nil {
		t.Errorf("DEVX: %v", err)
	}
	// Static bfregs: a total of 0 EINVAL, above 512 ENOMEM.
	wantErrno(t, try(bad(func(r *abi.Mlx5IbAllocUcontextReqV2) { r.LibCaps = 0; r.TotalNumBfregs = 0 })), syscall.EINVAL)
	wantErrno(t, try(bad(func(r *abi.Mlx5IbAllocUcontextReqV2) { r.LibCaps = 0; r.TotalNumBfregs = 514 })), syscall.ENOMEM)
	if err := try(bad(func(r *abi.Mlx5IbAllocUcontextReqV2) { r.TotalNumBfregs = 0; r.NumLowLatencyBfregs = 0 })); err != nil {
		t.Errorf("DYN_UAR with no static bfregs: %v", err)
	}
	// The CQE version is min(device, request); the response is 72 bytes.
	_, resp := mlx5Ctx(t, v, v2(true))
	if resp.CqeVersion != 1 || resp.TotBfregs != 0 || resp.ResponseLength != 72 {
		t.Errorf("response %+v", *resp)
	}
	r0 := v2(true)
	r0.MaxCqeVersion = 0
	if _, resp := mlx5Ctx(t, v, r0); resp.CqeVersion != 0 {
		t.Errorf("CQE version %d for a request of 0", resp.CqeVersion)
	}
}

// mlx5 PD, UAR, CQ and QP rules (§2.6, §2.9).
func TestMlx5ObjectRules(t *testing.T) {
	v := MLX5("mlx5_0")
	fd, _ := mlx5Ctx(t, v, v2(true))
	// ALLOC_PD writes 4 bytes of driver output unconditionally.
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_CMD_ALLOC_PD, make([]byte, 8), make([]byte, 4), nil, nil)), syscall.EFAULT)
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_CMD_ALLOC_PD, make([]byte, 8), make([]byte, 4), nil, make([]byte, 2))), syscall.EFAULT)
	pd := allocPD(t, v, fd, make([]byte, 4))
	// EX_QUERY_DEVICE: driver output at least 8 bytes, input zero.
	exq := uint32(abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE | abi.IB_USER_VERBS_CMD_FLAG_EXTENDED)
	wantErrno(t, do(fd, write(v, exq, make([]byte, 8), make([]byte, 304), nil, make([]byte, 4))), syscall.EINVAL)
	wantErrno(t, do(fd, write(v, exq, make([]byte, 8), make([]byte, 304), []byte{1, 0, 0, 0, 0, 0, 0, 0}, nil)), syscall.EINVAL)
	// QUERY_CONTEXT needs mlx5's driver output attribute (the builder
	// refuses to omit it, so it is sent raw).
	wantErrno(t, raw(fd, rawRequest(v.DriverID, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_CONTEXT)), syscall.EINVAL)
	// UAR objects: BF and NC only.
	uar := func(typ uint64) (*abi.Request, []byte) {
		off := make([]byte, 8)
		return req(v, abi.MLX5_IB_OBJECT_UAR, abi.MLX5_IB_METHOD_UAR_OBJ_ALLOC).
			NewHandle(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE).Const(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, typ).
			Out(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, off).Out(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, make([]byte, 4)).
			Out(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, make([]byte, 4)), off
	}
	r, _ := uar(2)
	wantErrno(t, do(fd, r), syscall.EOPNOTSUPP)
	r, off := uar(abi.MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF)
	if err := do(fd, r); err != nil {
		t.Fatal(err)
	}
	var pageID uint32
	for _, o := range filesOf(v)[0].objects {
		if u, ok := o.Value.(*uarVal); ok {
			pageID = u.pageID
		}
	}
	o := int64(binary.LittleEndian.Uint64(off))
	if _, err := fd.Mmap(o, 2*sys.PageSize, syscall.PROT_WRITE, syscall.MAP_SHARED); err != syscall.EINVAL {
		t.Errorf("UAR mapped with the wrong length: %v", err)
	}
	m, err := fd.Mmap(o, sys.PageSize, syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	unmap(m)

	ring, _ := sys.MmapAnon(sys.PageSize * 4)
	defer unmap(ring)
	cqCmd := func(f func(c *abi.Mlx5IbCreateCq)) []byte {
		c := &abi.Mlx5IbCreateCq{BufAddr: 0x1000, DbAddr: 0x2000, CqeSize: 64, Flags: abi.MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX, UarPageIndex: uint16(pageID)}
		if f != nil {
			f(c)
		}
		return structBytes(c)
	}
	cq := func(cqe uint32, in, out []byte) error {
		r, _ := cqReq(v, cqe, in, out)
		return do(fd, r)
	}
	out8 := func() []byte { return make([]byte, 8) }
	wantErrno(t, cq(8, cqCmd(nil)[:21], out8()), syscall.EINVAL)
	wantErrno(t, cq(8, cqCmd(func(c *abi.Mlx5IbCreateCq) { c.CqeSize = 32 }), out8()), syscall.EINVAL)
	wantErrno(t, cq(8, cqCmd(func(c *abi.Mlx5IbCreateCq) { c.Reserved1 = 1 }), out8()), syscall.EINVAL)
	wantErrno(t, cq(8, cqCmd(func(c *abi.Mlx5IbCreateCq) { c.Flags |= 8 }), out8()), syscall.EINVAL)
	wantErrno(t, cq(8, cqCmd(func(c *abi.Mlx5IbCreateCq) { c.Flags = 0 }), out8()), syscall.EINVAL)                         // DYN_UAR: no UAR named
	wantErrno(t, cq(8, cqCmd(func(c *abi.Mlx5IbCreateCq) { c.UarPageIndex = uint16(pageID + 1) }), out8()), syscall.EINVAL) // not a UAR of this context
	wantErrno(t, cq(1<<22, cqCmd(nil), out8()), syscall.EINVAL)                                                             // 2^23 entries
	wantErrno(t, cq(8, cqCmd(func(c *abi.Mlx5IbCreateCq) { c.BufAddr = 0 }), out8()), syscall.EFAULT)                       // no ring
	wantErrno(t, cq(8, cqCmd(nil), nil), syscall.EFAULT)                                                                    // 4 bytes written unchecked
	wantErrno(t, cq(8, cqCmd(nil), make([]byte, 2)), syscall.EFAULT)                                                        //
	// The UAR index as the 0x1002 driver attribute instead of the flag.
	r, _ = cqReq(v, 8, cqCmd(func(c *abi.Mlx5IbCreateCq) { c.Flags = 0 }), out8())
	if err := do(fd, r.InU32(abi.MLX5_IB_ATTR_CREATE_CQ_UAR_INDEX, pageID)); err != nil {
		t.Errorf("CQ naming its UAR by driver attribute: %v", err)
	}
	r, resp := cqReq(v, 8, cqCmd(nil), out8())
	if err := do(fd, r); err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(resp) != 15 {
		t.Errorf("RESP_CQE %d for 8 (16 entries)", binary.LittleEndian.Uint32(resp))
	}
	cqh := created(t, r, abi.UVERBS_ATTR_CREATE_CQ_HANDLE)

	qpCmd := func(f func(c *abi.Mlx5IbCreateQp)) []byte {
		c := &abi.Mlx5IbCreateQp{BufAddr: 0x1000, DbAddr: 0x2000, SqWqeCount: 8, RqWqeCount: 8, RqWqeShift: 4,
			Flags: abi.MLX5_QP_FLAG_UAR_PAGE_INDEX, Uidx: 7, BfregIndex: pageID}
		if f != nil {
			f(c)
		}
		return structBytes(c)
	}
	qp := func(typ uint64, in []byte) error {
		return do(fd, qpReq(v, pd, cqh, typ, smallCap, in, make([]byte, 40)))
	}
	wantErrno(t, qp(qptRC, qpCmd(nil)[:47]), syscall.EINVAL)
	long := append(qpCmd(nil), 0, 0, 0, 0)
	long[55] = 1
	wantErrno(t, qp(qptRC, long), syscall.EINVAL)
	wantErrno(t, qp(qptRC, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.Uidx = 1 << 24 })), syscall.EINVAL)
	wantErrno(t, qp(qptRC, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.Flags |= abi.MLX5_QP_FLAG_BFREG_INDEX })), syscall.EINVAL)
	wantErrno(t, qp(qptRC, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.Flags = 0 })), syscall.EINVAL)
	wantErrno(t, qp(qptRC, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.BfregIndex = pageID + 5 })), syscall.EINVAL)
	wantErrno(t, qp(qptRC, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.SqWqeCount = 6 })), syscall.EINVAL)
	wantErrno(t, qp(qptRC, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.SqWqeCount = 1 << 16 })), syscall.EINVAL)
	wantErrno(t, qp(qptRC, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.Flags |= abi.MLX5_QP_FLAG_TYPE_DCT })), syscall.EINVAL)
	wantErrno(t, qp(qptRC, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.DbAddr = 0 })), syscall.EFAULT)
	wantErrno(t, qp(qptRaw, qpCmd(nil)), syscall.EPERM)
	v.NetRaw = true
	wantErrno(t, qp(qptRaw, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.SqWqeCount, c.RqWqeCount = 0, 0 })), syscall.EINVAL)
	wantErrno(t, qp(qptRaw, qpCmd(nil)), syscall.EFAULT) // RAW_PACKET with send WQEs needs sq_buf_addr
	qr := qpReq(v, pd, cqh, qptRaw, smallCap, qpCmd(func(c *abi.Mlx5IbCreateQp) { c.SqBufAddr = 0x3000 }), make([]byte, 40))
	if err := do(fd, qr); err != nil {
		t.Fatal(err)
	}
	if err := do(fd, qpReq(v, pd, cqh, qptRC, smallCap, qpCmd(nil), nil)); err != nil {
		t.Errorf("QP with no driver output (copied min(outlen, 40)): %v", err)
	}

}

// A CQE version 0 context (static bfregs): RAW_PACKET EINVAL, user index
// must be the default 0xffffff, CQs use the static UAR, UAR objects are
// EOPNOTSUPP.
func TestMlx5CQEVersion0Rules(t *testing.T) {
	v := MLX5("mlx5_0")
	v.NetRaw = true
	r0 := v2(false)
	r0.MaxCqeVersion = 0
	fd, resp := mlx5Ctx(t, v, r0)
	if resp.CqeVersion != 0 || resp.TotBfregs != 16 {
		t.Fatalf("response %+v", *resp)
	}
	off := make([]byte, 8)
	wantErrno(t, do(fd, req(v, abi.MLX5_IB_OBJECT_UAR, abi.MLX5_IB_METHOD_UAR_OBJ_ALLOC).
		NewHandle(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE).Const(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, abi.MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC).
		Out(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, off).Out(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, make([]byte, 4)).
		Out(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, make([]byte, 4))), syscall.EOPNOTSUPP)
	pd := allocPD(t, v, fd, make([]byte, 4))
	r, _ := cqReq(v, 8, structBytes(&abi.Mlx5IbCreateCq{BufAddr: 0x1000, DbAddr: 0x2000, CqeSize: 64}), make([]byte, 8))
	if err := do(fd, r); err != nil {
		t.Fatalf("CQ on the static UAR: %v", err)
	}
	cqh := created(t, r, abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	cmd := func(uidx uint32) []byte {
		return structBytes(&abi.Mlx5IbCreateQp{BufAddr: 0x1000, SqBufAddr: 0x3000, DbAddr: 0x2000, SqWqeCount: 8, RqWqeCount: 8, RqWqeShift: 4, Uidx: uidx})
	}
	wantErrno(t, do(fd, qpReq(v, pd, cqh, qptRaw, smallCap, cmd(0xffffff), make([]byte, 40))), syscall.EINVAL)
	wantErrno(t, do(fd, qpReq(v, pd, cqh, qptUD, smallCap, cmd(7), make([]byte, 40))), syscall.EINVAL)
	if err := do(fd, qpReq(v, pd, cqh, qptUD, smallCap, cmd(0xffffff), make([]byte, 40))); err != nil {
		t.Errorf("UD QP with a static bfreg: %v", err)
	}
}

func filesOf(v *Verbs) []*File { return v.Kernel().filesList() }
