package verbs

import (
	"errors"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// A Call's first bytes are the request abi.Request sends for the same
// attributes: the header, then the attributes.
func TestCallWireForm(t *testing.T) {
	var r abi.Request
	r.Reset(nil, 2, abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_READ)
	out := make([]byte, 16)
	r.Handle(abi.UVERBS_ATTR_READ_COUNTERS_HANDLE, 7).
		Out(abi.UVERBS_ATTR_READ_COUNTERS_BUFF, out).
		Flags32(abi.UVERBS_ATTR_READ_COUNTERS_FLAGS, 1)
	want, err := r.MarshalUnchecked()
	if err != nil {
		t.Fatal(err)
	}
	c := new(Call)
	c.Start(2, abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_READ)
	if !c.Handle(abi.UVERBS_ATTR_READ_COUNTERS_HANDLE, 7) || !c.Out(abi.UVERBS_ATTR_READ_COUNTERS_BUFF, out) ||
		!c.Inline(abi.UVERBS_ATTR_READ_COUNTERS_FLAGS, 4, 1) {
		t.Fatal("a Call refused three attributes")
	}
	c.hdr.Length = uint16(abi.IoctlHdrSize + abi.IoctlAttrSize*int(c.hdr.NumAttrs))
	got := unsafe.Slice((*byte)(unsafe.Pointer(c)), len(want))
	if string(got) != string(want) {
		t.Errorf("Call bytes\n%x\nwant abi.Request's\n%x", got, want)
	}
	if !c.Out(1, out) || !c.In(9, make([]byte, 16)) {
		t.Error("a second Out, or a long In, was refused")
	}
	if new(Call).Out(1, make([]byte, abi.MaxAttrLen+1)) {
		t.Error("an Out past MaxAttrLen was taken")
	}
	if new(Call).FD(1, -1) {
		t.Error("a negative descriptor was taken")
	}
}

// A Call takes callAttrs attributes and callKeep by address; one it
// refuses makes DoCall fail before the kernel, and the next Start
// forgets it.
func TestCallLimits(t *testing.T) {
	c := new(Call)
	c.Start(0, 1, 2)
	for i := range callKeep {
		if !c.Out(uint16(i), make([]byte, 16)) {
			t.Fatalf("Out %d refused", i)
		}
	}
	if c.Out(99, make([]byte, 16)) || c.In(99, make([]byte, 9)) {
		t.Error("an attribute by address past callKeep was taken")
	}
	if !c.In(98, make([]byte, 8)) {
		t.Error("an inline In was refused with the addresses used up")
	}
	for i := int(c.hdr.NumAttrs); i < callAttrs; i++ {
		if !c.NewHandle(uint16(100 + i)) {
			t.Fatalf("attribute %d refused", i)
		}
	}
	if c.Handle(200, 1) {
		t.Error("an attribute past callAttrs was taken")
	}
	if c.nkeep != callBad {
		t.Fatal("a refused attribute was not remembered")
	}
	core, be := newCore(t)
	if err := core.DoCall(c); !errors.Is(err, syscall.EINVAL) || be.calls != 0 {
		t.Errorf("DoCall of a Call that refused an attribute: %v, %d calls", err, be.calls)
	}
	if c.nkeep != 0 || c.keep[0] != nil {
		t.Error("DoCall kept what the refused Call held")
	}
	c.Start(0, 1, 2)
	c.NewHandle(5)
	c.Optional()
	if c.attrs[0].Flags&abi.UVERBS_ATTR_F_MANDATORY != 0 {
		t.Error("Optional left the attribute mandatory")
	}
	c.attrs[0].Data = 42
	if h, ok := c.Created(5); !ok || h != 42 {
		t.Errorf("Created = %d, %v", h, ok)
	}
	c.attrs[0].Data = 1 << 32
	if _, ok := c.Created(5); ok {
		t.Error("a handle wider than 32 bits was taken")
	}
	if _, ok := c.Created(6); ok {
		t.Error("Created found an attribute the Call has not")
	}
}

// Concurrent users of a CallList never share a Call; Drain waits for the
// Calls out and closes the list until Reopen.
func TestCallList(t *testing.T) {
	var l CallList
	var mu sync.Mutex
	inUse := map[*Call]bool{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c, slot, ok := l.TryGet()
				if !ok {
					continue // every slot taken
				}
				mu.Lock()
				if inUse[c] {
					t.Error("a Call handed out twice")
				}
				inUse[c] = true
				mu.Unlock()
				runtime.Gosched() // hold it while others take theirs
				mu.Lock()
				delete(inUse, c)
				mu.Unlock()
				l.Put(slot)
			}
		}()
	}
	wg.Wait()
	if b := l.busy.Load(); b != 0 {
		t.Errorf("busy %b after every Put", b)
	}
	if n := testing.AllocsPerRun(100, func() { _, s, _ := l.TryGet(); l.Put(s) }); n != 0 {
		t.Errorf("TryGet+Put allocates %v", n)
	}

	_, held, _ := l.TryGet()
	drained := make(chan struct{})
	go func() { l.Drain(); close(drained) }()
	for l.busy.Load()&listClosed == 0 {
		runtime.Gosched()
	}
	if _, _, ok := l.TryGet(); ok {
		t.Error("TryGet succeeded on a draining list")
	}
	select {
	case <-drained:
		t.Fatal("Drain returned with a Call out")
	case <-time.After(20 * time.Millisecond):
	}
	l.Put(held)
	<-drained
	if _, _, ok := l.TryGet(); ok {
		t.Error("TryGet succeeded on a drained list")
	}
	l.Reopen()
	if _, s, ok := l.TryGet(); !ok {
		t.Error("TryGet failed after Reopen")
	} else {
		l.Put(s)
	}
}

// In carries up to 8 bytes inline and longer ones by address, as
// abi.Request's In does.
func TestCallInAsRequest(t *testing.T) {
	short, long, out := []byte{1, 2, 3, 4, 5, 6, 7, 8}, make([]byte, 24), make([]byte, 4)
	var r abi.Request
	r.Reset(nil, 2, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE)
	r.Const(abi.UVERBS_ATTR_WRITE_CMD, 3).In(abi.UVERBS_ATTR_CORE_IN, short).
		Out(abi.UVERBS_ATTR_CORE_OUT, out).In(abi.UVERBS_ATTR_UHW_IN, long)
	want, err := r.MarshalUnchecked()
	if err != nil {
		t.Fatal(err)
	}
	c := new(Call)
	c.Start(2, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE)
	if !c.Inline(abi.UVERBS_ATTR_WRITE_CMD, 8, 3) || !c.In(abi.UVERBS_ATTR_CORE_IN, short) ||
		!c.Out(abi.UVERBS_ATTR_CORE_OUT, out) || !c.In(abi.UVERBS_ATTR_UHW_IN, long) {
		t.Fatal("a Call refused the attributes")
	}
	c.hdr.Length = uint16(abi.IoctlHdrSize + abi.IoctlAttrSize*int(c.hdr.NumAttrs))
	if got := unsafe.Slice((*byte)(unsafe.Pointer(c)), len(want)); string(got) != string(want) {
		t.Errorf("Call bytes\n%x\nwant abi.Request's\n%x", got, want)
	}
}

// writer is a fake kernel that writes fill into the one PTR_OUT attribute
// of a request, through the address the request holds, as the kernel's
// copy_to_user does.
type writer struct {
	answer
	fill byte
}

func (w *writer) Ioctl(_ uint, arg unsafe.Pointer) error {
	w.calls++
	hdr := (*abi.IoctlHdr)(arg)
	attrs := unsafe.Slice((*abi.IoctlAttr)(unsafe.Add(arg, abi.IoctlHdrSize)), hdr.NumAttrs)
	for _, a := range attrs {
		if a.ID == 7 {
			addr := a.Data // an address in this process, as fakekernel's userBytes reads one
			b := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), a.Len)
			for i := range b {
				b[i] = w.fill
			}
		}
	}
	return w.errno
}

// OutLate takes one attribute of at most MaxAttrLen bytes; DoCallLate
// writes its address at the call, refuses a Call without one or with
// another attribute by address, and leaves the Call ready for the next.
func TestCallOutLate(t *testing.T) {
	w := &writer{fill: 0xab}
	fd := sys.NewFake("uverbs0", w)
	t.Cleanup(func() { fd.Close() })
	core := new(Core)
	core.Init("dev0", fd, abi.APIFor(abi.RDMA_DRIVER_MLX5), abi.RDMA_DRIVER_MLX5)

	c := new(Call)
	for _, n := range []int{-1, abi.MaxAttrLen + 1} {
		c.Start(0, 1, 2)
		if c.OutLate(7, n) {
			t.Errorf("OutLate(%d bytes) was taken", n)
		}
		if err := core.DoCallLate(c, nil); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("DoCallLate after OutLate(%d bytes) refused: %v", n, err)
		}
	}
	c.Start(0, 1, 2)
	if !c.OutLate(7, 8) || c.OutLate(8, 8) {
		t.Error("OutLate: the first refused or a second taken")
	}
	c.drop()
	c.Start(0, 1, 2)
	c.Out(9, make([]byte, 8))
	c.OutLate(7, 8)
	if err := core.DoCallLate(c, nil); !errors.Is(err, syscall.EINVAL) || c.nkeep != 0 || c.late != 0 {
		t.Errorf("DoCallLate of a Call with an Out: %v, nkeep %d, late %d", err, c.nkeep, c.late)
	}
	c.Start(0, 1, 2)
	if err := core.DoCallLate(c, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("DoCallLate of a Call without OutLate: %v", err)
	}
	calls := w.calls
	var got [3]byte // the third is past the attribute: not written
	c.Start(0, 1, 2)
	c.Handle(1, 5)
	c.OutLate(7, 2)
	if err := core.DoCallLate(c, unsafe.Pointer(&got)); err != nil || got != [3]byte{0xab, 0xab, 0} || w.calls != calls+1 {
		t.Errorf("DoCallLate = %v, wrote %x, %d calls", err, got, w.calls-calls)
	}
	if c.late != 0 || c.attrs[1].Data == uint64(uintptr(unsafe.Pointer(&got))) {
		t.Error("DoCallLate left the Call holding the attribute, or gave the fake the caller's address")
	}
	w.errno = syscall.EFAULT
	c.Start(0, 1, 2)
	c.OutLate(7, 2)
	if err := core.DoCallLate(c, unsafe.Pointer(&got)); !errors.Is(err, syscall.EFAULT) {
		t.Errorf("DoCallLate of a failing call: %v", err)
	}
}
