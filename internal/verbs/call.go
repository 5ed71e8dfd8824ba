package verbs

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// callAttrs is the most attributes a Call holds.
const callAttrs = 4

// Call is a small request written straight into the kernel's layout
// (struct ib_uverbs_ioctl_hdr, then struct ib_uverbs_attr entries), for
// the hottest methods, whose attributes the caller knows to be what the
// method takes: QueryPort and a counters read. It is what abi.Request
// sends for the same attributes, without the builder's bookkeeping or its
// method-table check (a failed call is not explained by the table; its
// errno is returned as it is). Like libibverbs' execute_ioctl with a
// stack-built attribute array, minus the stack: a Call must be heap memory
// (a scratch, a CallList's), since the kernel reads it, and what its
// attributes point at, through addresses stored as integers.
type Call struct {
	hdr   abi.IoctlHdr
	attrs [callAttrs]abi.IoctlAttr // must follow hdr: the two are the wire form
	// keep and keepIn are the memory the Out attribute and a long In
	// attribute point at (one of each at most), kept alive, and kept off
	// the stack by escape analysis, until DoCall returns.
	keep, keepIn unsafe.Pointer
}

// The wire form is the Call's first bytes.
const (
	_ = uint(unsafe.Offsetof(Call{}.attrs) - abi.IoctlHdrSize)
	_ = uint(abi.IoctlHdrSize - unsafe.Offsetof(Call{}.attrs))
)

// Start begins a call of method of object on driver drv. A Call whose
// In or Out succeeded is run with DoCall, which drops what they keep.
func (c *Call) Start(drv uint32, object, method uint16) {
	c.hdr = abi.IoctlHdr{ObjectID: object, MethodID: method, DriverID: drv}
}

// add appends an attribute. It reports false when the Call is full.
func (c *Call) add(id, length uint16, data uint64) bool {
	i := uint(c.hdr.NumAttrs)
	if i >= callAttrs {
		return false
	}
	c.attrs[i] = abi.IoctlAttr{ID: id, Len: length, Flags: abi.UVERBS_ATTR_F_MANDATORY, Data: data}
	c.hdr.NumAttrs++
	return true
}

// Inline adds an attribute carried in the data word: a CONST_IN (length
// 8), a FLAGS_IN (4 or 8) or a u32 or u64 PTR_IN of that length.
func (c *Call) Inline(id, length uint16, v uint64) bool { return c.add(id, length, v) }

// Handle adds an IDR attribute naming an existing object.
func (c *Call) Handle(id uint16, handle uint32) bool { return c.add(id, 0, uint64(handle)) }

// Out adds the Call's PTR_OUT attribute: the kernel writes up to len(b)
// bytes at b, at most abi.MaxAttrLen. It reports false for a longer b, a
// full Call, or a second Out.
func (c *Call) Out(id uint16, b []byte) bool {
	if len(b) > abi.MaxAttrLen || c.keep != nil {
		return false
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if !c.add(id, uint16(len(b)), uint64(uintptr(p))) {
		return false
	}
	c.keep = p
	return true
}

// In adds a PTR_IN attribute: up to 8 bytes inline (where the kernel
// reads them), longer by address (one such at most). It reports false as
// Out does.
func (c *Call) In(id uint16, b []byte) bool {
	if len(b) <= 8 {
		var v [8]byte
		copy(v[:], b)
		return c.add(id, uint16(len(b)), *(*uint64)(unsafe.Pointer(&v)))
	}
	if len(b) > abi.MaxAttrLen || c.keepIn != nil {
		return false
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if !c.add(id, uint16(len(b)), uint64(uintptr(p))) {
		return false
	}
	c.keepIn = p
	return true
}

// DoCall runs call on the context's descriptor; the caller holds the
// context (Hold, or Close's teardown). It drops the call's references to
// the caller's memory afterwards, so that a pooled Call keeps nothing
// alive. The error is the errno.
func (c *Core) DoCall(call *Call) error {
	if c == nil || c.fd == nil || call == nil {
		return errArg("nil context or call")
	}
	call.hdr.Length = uint16(abi.IoctlHdrSize + abi.IoctlAttrSize*int(call.hdr.NumAttrs))
	var err error
	if c.raw >= 0 { // c.ioctl, by hand: one frame less on the hottest path
		err = sys.IoctlNumber(c.raw, abi.RDMA_VERBS_IOCTL, unsafe.Pointer(call))
	} else {
		err = c.fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(call))
	}
	if call.keep != nil || call.keepIn != nil {
		call.keep, call.keepIn = nil, nil
	}
	return err
}

// CallList hands out Calls without a lock: eight kept for reuse, a busy
// bit each, taken and given back with one atomic operation. It doubles as
// a guard: Drain closes it to new users and waits for the Calls out, so
// that an owner whose operations hold a Call (a counters read) can
// destroy the object they name once none is in the kernel. The zero
// CallList is open and ready.
type CallList struct {
	busy  atomic.Uint32 // a bit per slot, and listClosed
	slots [8]atomic.Pointer[Call]
}

// listClosed marks a CallList Drain closed.
const listClosed = 1 << 31

// TryGet returns a Call for one request and its slot, for Put; ok is
// false when the list is closed (Drain) or every slot is taken.
func (l *CallList) TryGet() (c *Call, slot int, ok bool) {
	// Slot 0 first: the one a user without company takes.
	if b := l.busy.Load(); b&(1|listClosed) == 0 && l.busy.CompareAndSwap(b, b|1) {
		if c := l.slots[0].Load(); c != nil {
			return c, 0, true
		}
		return l.slot(0), 0, true
	}
	return l.tryAny()
}

func (l *CallList) tryAny() (*Call, int, bool) {
	for {
		b := l.busy.Load()
		if b&listClosed != 0 {
			return nil, -1, false
		}
		i := 0
		for i < len(l.slots) && b&(1<<i) != 0 {
			i++
		}
		if i == len(l.slots) {
			return nil, -1, false
		}
		if l.busy.CompareAndSwap(b, b|1<<i) {
			return l.slot(i), i, true
		}
	}
}

func (l *CallList) slot(i int) *Call {
	if c := l.slots[i].Load(); c != nil {
		return c
	}
	c := new(Call)
	l.slots[i].Store(c)
	return c
}

// Put gives back the Call TryGet returned as slot.
func (l *CallList) Put(slot int) {
	if slot >= 0 {
		l.busy.And(^uint32(1 << slot))
	}
}

// Drain closes the list to TryGet and waits until every Call taken has
// been given back. Calls are held across one system call, so the wait is
// short; it yields, then sleeps a little longer each time.
func (l *CallList) Drain() {
	l.busy.Or(listClosed)
	for i := 0; l.busy.Load() != listClosed; i++ {
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(time.Duration(min(i-99, 1000)) * time.Microsecond)
		}
	}
}

// Reopen opens a drained list again (the destruction it guarded failed).
func (l *CallList) Reopen() { l.busy.And(^uint32(listClosed)) }
