package verbs

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// callAttrs is the most attributes a Call holds: a QP create's fourteen
// (UVERBS_METHOD_QP_CREATE with flags, event file and driver data).
const callAttrs = 16

// callKeep is the most attributes by address (an Out, a long In) a Call
// holds: a QP create's five.
const callKeep = 6

// Call is a request written straight into the kernel's layout (struct
// ib_uverbs_ioctl_hdr, then struct ib_uverbs_attr entries), for the
// methods on the hot and create paths, whose attributes the caller knows
// to be what the method takes: QueryPort, a counters read, the PD, CQ and
// QP create and destroy. It is what abi.Request sends for the same
// attributes, without the builder's bookkeeping or its method-table check
// (a failed call is not explained by the table; its errno is returned as
// it is). Like libibverbs' execute_ioctl with a stack-built attribute
// array, minus the stack: a Call must be heap memory (a scratch, a
// CallList's), since the kernel reads it, and what its attributes point
// at, through addresses stored as integers.
//
// A builder method reports false when the Call cannot take the attribute
// (full, too long, a negative descriptor); the Call then remembers it,
// and DoCall refuses to run it.
type Call struct {
	hdr   abi.IoctlHdr
	attrs [callAttrs]abi.IoctlAttr // must follow hdr: the two are the wire form
	// keep is the memory the Out and long In attributes point at, kept
	// alive, and kept off the stack by escape analysis, until DoCall
	// returns.
	keep [callKeep]unsafe.Pointer
	// bounce is where a fake kernel writes an OutLate attribute
	// (fakeLate), kept for the next call.
	bounce []byte
	// nkeep counts keep's entries in use, or is callBad once an
	// attribute was refused (one byte to test on the hot path for both).
	nkeep uint8
	// ticks counts Pace's calls, for its yield every 64.
	ticks uint8
	// late is 1 + the index of the OutLate attribute, 0 for none.
	late uint8
	// The padding makes a Call callSize bytes, an allocation size class
	// of whole cache lines: the Calls of a CallList, allocated one by
	// one, then never share a line, which readers on different CPUs
	// would each write.
	_ [callSize - abi.IoctlHdrSize - callAttrs*abi.IoctlAttrSize - callKeep*8 - 24 - 3]byte
}

// callSize is a Call's size: six 64-byte cache lines, one of the
// runtime's size classes (so that consecutive Calls start on lines).
const callSize = 384

const (
	_ = uint(unsafe.Sizeof(Call{}) - callSize)
	_ = uint(callSize - unsafe.Sizeof(Call{}))
)

// callBad is a Call's nkeep once it refused an attribute.
const callBad = 0xff

// The wire form is the Call's first bytes.
const (
	_ = uint(unsafe.Offsetof(Call{}.attrs) - abi.IoctlHdrSize)
	_ = uint(abi.IoctlHdrSize - unsafe.Offsetof(Call{}.attrs))
)

// Start begins a call of method of object on driver drv. Every Call
// started is given to DoCall, which runs it, or refuses it when an
// attribute was refused, and in both cases forgets what it kept: Start
// does not look (a Call started twice without DoCall keeps counting its
// attributes by address, up to refusing one).
func (c *Call) Start(drv uint32, object, method uint16) {
	c.hdr = abi.IoctlHdr{ObjectID: object, MethodID: method, DriverID: drv}
}

// drop forgets what the Call keeps, and that it refused an attribute.
func (c *Call) drop() {
	for i := range min(c.nkeep, callKeep) {
		c.keep[i] = nil // a loop: clear of a pointer array is a bulk-barrier call
	}
	c.nkeep, c.late = 0, 0
}

// add appends an attribute. It reports false when the Call is full.
func (c *Call) add(id, length uint16, data uint64) bool {
	i := uint(c.hdr.NumAttrs)
	if i >= callAttrs {
		c.nkeep = callBad
		return false
	}
	putAttr(&c.attrs[i], id, length, data)
	c.hdr.NumAttrs++
	return true
}

// addPtr appends an attribute by address, keeping p.
func (c *Call) addPtr(id uint16, n int, p unsafe.Pointer) bool {
	if n > abi.MaxAttrLen || c.nkeep >= callKeep {
		c.nkeep = callBad
		return false
	}
	if !c.add(id, uint16(n), uint64(uintptr(p))) {
		return false
	}
	c.keep[c.nkeep] = p
	c.nkeep++
	return true
}

// putAttr writes a mandatory attribute as two words, in place: the layout of
// struct ib_uverbs_attr on the little-endian hosts purerdma supports (id,
// len, flags, attr_data, then data), as abi.Request writes it.
func putAttr(a *abi.IoctlAttr, id, length uint16, data uint64) {
	w := (*[2]uint64)(unsafe.Pointer(a))
	w[0] = uint64(id) | uint64(length)<<16 | abi.UVERBS_ATTR_F_MANDATORY<<32
	w[1] = data
}

// Inline adds an attribute carried in the data word: a CONST_IN (length
// 8), a FLAGS_IN (4 or 8) or a u32 or u64 PTR_IN of that length.
func (c *Call) Inline(id, length uint16, v uint64) bool { return c.add(id, length, v) }

// Handle adds an IDR attribute naming an existing object.
func (c *Call) Handle(id uint16, handle uint32) bool { return c.add(id, 0, uint64(handle)) }

// NewHandle adds the IDR attribute of the object the call creates; read
// the handle with Created after the call.
func (c *Call) NewHandle(id uint16) bool { return c.add(id, 0, 0) }

// FD adds an FD attribute naming an open descriptor.
func (c *Call) FD(id uint16, fd int) bool {
	if fd < 0 {
		c.nkeep = callBad
		return false
	}
	return c.add(id, 0, uint64(fd))
}

// Optional clears the MANDATORY flag of the attribute added last, so a
// kernel that does not know it ignores it instead of failing.
func (c *Call) Optional() {
	if i := c.hdr.NumAttrs; i > 0 {
		c.attrs[i-1].Flags &^= abi.UVERBS_ATTR_F_MANDATORY
	}
}

// Out adds a PTR_OUT attribute: the kernel writes up to len(b) bytes at
// b (by address, whatever the size), at most abi.MaxAttrLen. (Written
// out, not through addPtr, to stay within the inliner's budget: a create
// call adds up to four.)
func (c *Call) Out(id uint16, b []byte) bool {
	i, k := c.hdr.NumAttrs, c.nkeep
	if len(b) > abi.MaxAttrLen || i >= callAttrs || k >= callKeep {
		c.nkeep = callBad
		return false
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	c.attrs[i] = abi.IoctlAttr{ID: id, Len: uint16(len(b)), Flags: abi.UVERBS_ATTR_F_MANDATORY, Data: uint64(uintptr(p))}
	c.hdr.NumAttrs, c.keep[k], c.nkeep = i+1, p, k+1
	return true
}

// OutHeld is Out for memory the caller holds on the heap, alive, until
// DoCall returns: a field of the scratch the Call itself is a field of,
// or a heap slice the caller names in runtime.KeepAlive after DoCall.
// The Call keeps nothing for it. Never memory that may be on a
// goroutine's stack (a slice the caller was given): OutLate is for that.
func (c *Call) OutHeld(id uint16, b []byte) bool {
	if len(b) > abi.MaxAttrLen {
		c.nkeep = callBad
		return false
	}
	return c.add(id, uint16(len(b)), uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
}

// OutLate adds a PTR_OUT attribute of n bytes, at most abi.MaxAttrLen,
// at memory of the caller's that may be on its goroutine's stack (a
// counters read's values): DoCallLate writes its address, given as a
// pointer, as its last step before the system call. A goroutine's stack
// moves (it grows, or shrinks at a preemption) in the prologue of a
// function it calls; an address written here, before DoCall's and the
// ioctl's own prologues, could name the stack's old place by the time the
// kernel writes there, which is freed memory. A Call holds one OutLate.
func (c *Call) OutLate(id uint16, n int) bool {
	i := uint(c.hdr.NumAttrs)
	if uint(n) > abi.MaxAttrLen || i >= callAttrs || c.late != 0 {
		c.nkeep = callBad
		return false
	}
	putAttr(&c.attrs[i], id, uint16(n), 0)
	c.hdr.NumAttrs, c.late = uint16(i)+1, uint8(i)+1
	return true
}

// dataWord is b, at most 8 bytes, as the data word of an attribute that
// carries it inline: in host order, zero-padded.
func dataWord(b []byte) uint64 {
	if len(b) == 8 { // the common case (a u64, a command's 8-byte core): one load
		return binary.LittleEndian.Uint64(b)
	}
	var v [8]byte
	copy(v[:], b)
	return binary.LittleEndian.Uint64(v[:])
}

// InHeld is In for memory held as OutHeld's is.
func (c *Call) InHeld(id uint16, b []byte) bool {
	if len(b) <= 8 {
		return c.add(id, uint16(len(b)), dataWord(b))
	}
	return c.OutHeld(id, b)
}

// In adds a PTR_IN attribute: up to 8 bytes inline (where the kernel
// reads them), longer by address.
func (c *Call) In(id uint16, b []byte) bool {
	if len(b) <= 8 {
		return c.add(id, uint16(len(b)), dataWord(b))
	}
	return c.addPtr(id, len(b), unsafe.Pointer(unsafe.SliceData(b)))
}

// Created returns the handle the kernel wrote back into NewHandle
// attribute id; ok is false when the Call has no such attribute or the
// kernel wrote more than 32 bits.
func (c *Call) Created(id uint16) (handle uint32, ok bool) {
	for i := range min(uint(c.hdr.NumAttrs), callAttrs) {
		if a := &c.attrs[i]; a.ID == id {
			return uint32(a.Data), a.Data <= 0xffffffff
		}
	}
	return 0, false
}

// errCallBad is DoCall's error for a Call that refused an attribute.
var errCallBad = errArg("a request with an attribute it could not take")

// DoCall runs call on the context's descriptor; the caller holds the
// context (Hold, or Close's teardown). It drops the call's references to
// the caller's memory afterwards, so that a pooled Call keeps nothing
// alive. The error is the errno. A Call with an OutLate attribute goes
// to DoCallLate instead (here the kernel would be given address 0).
func (c *Core) DoCall(call *Call) error {
	if c == nil || c.fd == nil || call == nil {
		return errArg("nil context or call")
	}
	n := call.nkeep
	if n == callBad {
		call.drop()
		return errCallBad
	}
	call.hdr.Length = uint16(abi.IoctlHdrSize + abi.IoctlAttrSize*int(call.hdr.NumAttrs))
	var err error
	if c.raw >= 0 { // c.ioctl, by hand: one frame less on the hottest path
		err = sys.IoctlNumber(c.raw, abi.RDMA_VERBS_IOCTL, unsafe.Pointer(call))
	} else {
		err = c.fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(call))
	}
	if n != 0 { // the common case, one Out, by hand
		call.keep[0] = nil
		if n > 1 {
			call.drop()
		}
		call.nkeep = 0
	}
	return err
}

// DoCallLate is DoCall for a Call with an OutLate attribute, at p, and
// no other attribute by address (Out, a long In): p's address is written
// into the request in the system call's own frame (sys.IoctlAt), and p
// is kept alive until the kernel is done with it.
func (c *Core) DoCallLate(call *Call, p unsafe.Pointer) error {
	if c == nil || c.fd == nil || call == nil {
		return errArg("nil context or call")
	}
	late := uint(call.late) - 1 // the attribute's index
	if call.nkeep != 0 || late >= callAttrs {
		call.drop()
		return errCallBad
	}
	call.late = 0
	call.hdr.Length = uint16(abi.IoctlHdrSize + abi.IoctlAttrSize*int(call.hdr.NumAttrs))
	if c.raw < 0 {
		return c.fakeLate(call, &call.attrs[late], p)
	}
	return sys.IoctlAt(c.raw, abi.RDMA_VERBS_IOCTL, unsafe.Pointer(call), &call.attrs[late].Data, p)
}

// fakeLate runs call, whose OutLate attribute is a, at p, on a fake
// kernel's descriptor. The fake is Go code on this goroutine, whose
// stack may move while it runs: it writes into the Call's bounce buffer,
// on the heap, which is copied to p afterwards (through dst, which the
// runtime moves with the stack).
func (c *Core) fakeLate(call *Call, a *abi.IoctlAttr, p unsafe.Pointer) error {
	n := int(a.Len)
	if cap(call.bounce) < n {
		call.bounce = make([]byte, n)
	}
	b := call.bounce[:n]
	var dst []byte
	if p != nil {
		dst = unsafe.Slice((*byte)(p), n)
	}
	copy(b, dst) // what the kernel does not write stays the caller's
	a.Data = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	err := c.fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(call))
	copy(dst, b)
	return err
}

// Pace yields the processor (sys.YieldP) once in 64 of its calls on this
// Call. A loop of one operation whose goroutine does nothing but system
// calls (concurrent counters reads) calls it per operation, so that the
// goroutine passes through the scheduler now and then: otherwise sysmon
// takes it for one that has run too long and takes its P at every look
// that finds it in a system call (sys.YieldP says more). Two
// instructions and a branch, and an inlined call.
func (call *Call) Pace() {
	if call.ticks++; call.ticks&63 == 0 {
		sys.YieldP()
	}
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
