package uverbs

import (
	"sync"

	"github.com/purerdma/rdma/abi"
)

// scratch is a pooled ioctl request with room for the small fixed inputs
// and outputs of the create calls, so that creating and destroying a PD,
// CQ or QP builds its request in memory reused from earlier calls (as
// QueryPort reuses c.portReq) rather than a new abi.Request, new attribute
// slices and new response structs each time. The request references these
// fields by pointer (abi.Request.keep), which is why they live beside it.
type scratch struct {
	r      abi.Request
	pdReq  abi.IbUverbsAllocPd
	pdResp abi.IbUverbsAllocPdResp
	capIn  abi.IbUverbsQpCap
	capOut abi.IbUverbsQpCap
	u32    uint32
	cqDone abi.IbUverbsDestroyCqResp
	qpDone abi.IbUverbsDestroyQpResp
	drv    drvScratch
}

// drvScratch is the driver's part of a CQ or QP create call: what the
// provider adds to the request, and room for each provider's driver data.
// None of it outlives the call.
type drvScratch struct {
	// in and out are the driver data (UHW_IN, UHW_OUT): fields below.
	in, out []byte
	// cqe is the CQ size to ask the kernel for (mlx5 rounds it).
	cqe uint32
	// attr is an extra driver attribute.
	attr driverAttr

	rxeCQ    abi.RxeCreateCqResp
	rxeQP    abi.RxeCreateQpResp
	m5CQ     abi.Mlx5IbCreateCq
	m5CQResp abi.Mlx5IbCreateCqResp
	m5QP     abi.Mlx5IbCreateQp
	m5QPResp abi.Mlx5IbCreateQpResp
}

// add adds the driver data and attribute to the create request.
func (x *drvScratch) add(r *abi.Request) {
	addUHW(r, x.in, x.out)
	if x.attr.id != 0 {
		r.InU32(x.attr.id, x.attr.u32)
	}
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// getScratch returns a scratch whose request is reset for (object,
// method) on c's device. Give it back with putScratch once the request's
// results are read.
func (c *Context) getScratch(object, method uint16) *scratch {
	s := scratchPool.Get().(*scratch)
	s.r.Reset(c.api, c.drv, object, method)
	return s
}

// putScratch returns s to the pool; the reset drops the request's
// references to the caller's buffers, so the pool keeps nothing alive.
func (c *Context) putScratch(s *scratch) {
	s.r.Release()
	s.pdReq, s.pdResp = abi.IbUverbsAllocPd{}, abi.IbUverbsAllocPdResp{}
	s.capIn, s.capOut, s.u32 = abi.IbUverbsQpCap{}, abi.IbUverbsQpCap{}, 0
	s.cqDone, s.qpDone = abi.IbUverbsDestroyCqResp{}, abi.IbUverbsDestroyQpResp{}
	s.drv = drvScratch{}
	scratchPool.Put(s)
}

// invokeWriteInto builds UVERBS_METHOD_INVOKE_WRITE into r (reset for it),
// as abi.InvokeWrite does into a new request.
func invokeWriteInto(r *abi.Request, cmd uint32, coreIn, coreOut, driverIn, driverOut []byte) *abi.Request {
	r.Const(abi.UVERBS_ATTR_WRITE_CMD, uint64(cmd))
	if len(coreIn) > 0 {
		r.In(abi.UVERBS_ATTR_CORE_IN, coreIn)
	}
	if len(coreOut) > 0 {
		r.Out(abi.UVERBS_ATTR_CORE_OUT, coreOut)
	}
	if len(driverIn) > 0 {
		r.In(abi.UVERBS_ATTR_UHW_IN, driverIn)
	}
	if len(driverOut) > 0 {
		r.Out(abi.UVERBS_ATTR_UHW_OUT, driverOut)
	}
	return r
}
