package uverbs

import (
	"math/bits"
	"sync/atomic"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/verbs"
)

// scratch is an ioctl request with room for the small fixed inputs and
// outputs of the calls that use it (the create and destroy calls, the
// queries, the write commands), so that they build their request in
// memory reused from earlier calls rather than a new abi.Request and new
// response structs each time. The request references these fields by
// pointer, which is why they live beside it, on the heap. A scratch is
// one call's alone: concurrent calls on a Context take different ones
// (scratchList), so none waits for another's system call.
type scratch struct {
	call   verbs.Call // first: the calls built in place (QueryPort), aligned as the object
	port   abi.IbUverbsQueryPortRespEx
	r      abi.Request
	pdReq  abi.IbUverbsAllocPd
	pdResp abi.IbUverbsAllocPdResp
	capIn  abi.IbUverbsQpCap
	capOut abi.IbUverbsQpCap
	u32    uint32
	u64    uint64
	gids   []byte // GID table responses (gidTable), kept up to gidTableKept entries
	cqDone abi.IbUverbsDestroyCqResp
	qpDone abi.IbUverbsDestroyQpResp
	qpMod  abi.IbUverbsModifyQp
	mrReq  abi.IbUverbsRegMr
	mrResp abi.IbUverbsRegMrResp
	drv    drvScratch
	slot   int8 // its slot in the Context's scratchList, -1 for none
}

// gidTableKept is the most GID entries whose response buffer a scratch
// keeps for the next query (4 KiB); a query with room for more allocates
// its buffer for the call.
const gidTableKept = 128

// gidTable returns a buffer for n GID entries (struct
// ib_uverbs_gid_entry) as the kernel writes them: the scratch's own when
// it has room, kept for the next call when n is at most gidTableKept.
func (s *scratch) gidTable(n int) []byte {
	size := n * gidEntrySize
	if size <= cap(s.gids) {
		return s.gids[:size]
	}
	b := make([]byte, size)
	if n <= gidTableKept {
		s.gids = b
	}
	return b
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

// reset empties what a provider's prepare sets: the scratch may hold an
// earlier call's.
func (x *drvScratch) reset() { x.in, x.out, x.cqe, x.attr = nil, nil, 0, driverAttr{} }

// addCall adds the driver data and attribute to the create request (in
// and out are fields of x, in the scratch that holds k).
func (x *drvScratch) addCall(k *verbs.Call) {
	if len(x.in) > 0 {
		k.InHeld(abi.UVERBS_ATTR_UHW_IN, x.in)
	}
	if len(x.out) > 0 {
		k.OutHeld(abi.UVERBS_ATTR_UHW_OUT, x.out)
	}
	if x.attr.id != 0 {
		k.Inline(x.attr.id, 4, uint64(x.attr.u32))
	}
}

// scratchSlots is how many scratches a Context keeps: as many calls as
// that can run at once on it without allocating.
const scratchSlots = 8

// scratchList is a Context's scratches, a small lock-free free list: a
// bit per slot says the slot's scratch is idle. Taking one clears its bit
// with a compare-and-swap, giving it back sets the bit again; the slot's
// scratch is made on its first use, by the caller that holds the slot.
// With every slot busy a call gets a scratch of its own, which it leaves
// to the collector.
type scratchList struct {
	busy  atomic.Uint32 // bit i set: slot i is taken
	slots [scratchSlots]*scratch
}

func (l *scratchList) get() *scratch {
	// Slot 0 first: the one a Context without concurrent calls uses.
	if b := l.busy.Load(); b&1 == 0 && l.busy.CompareAndSwap(b, b|1) {
		if s := l.slots[0]; s != nil {
			return s
		}
		s := &scratch{slot: 0}
		l.slots[0] = s
		return s
	}
	return l.getAny()
}

func (l *scratchList) getAny() *scratch {
	for {
		b := l.busy.Load()
		if b == 1<<scratchSlots-1 {
			return &scratch{slot: -1}
		}
		i := bits.TrailingZeros32(^b)
		if l.busy.CompareAndSwap(b, b|1<<i) {
			s := l.slots[i]
			if s == nil {
				s = &scratch{slot: int8(i)}
				l.slots[i] = s
			}
			return s
		}
	}
}

func (l *scratchList) put(s *scratch) {
	if s.slot >= 0 {
		l.busy.And(^uint32(1 << s.slot))
	}
}

// getScratch returns a scratch whose request is reset for (object,
// method) on c's device. Its inputs and outputs hold what an earlier call
// left: the caller sets the inputs it sends and zeroes the outputs it
// reads. Give it back with putScratch once the request's results are
// read.
func (c *Context) getScratch(object, method uint16) *scratch {
	s := c.scr.get()
	s.r.Reset(c.api, c.drv, object, method)
	return s
}

// putScratch gives s back; the release drops the request's references to
// the caller's buffers, so an idle scratch keeps nothing alive.
func (c *Context) putScratch(s *scratch) {
	s.r.Release()
	c.scr.put(s)
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
