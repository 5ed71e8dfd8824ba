package verbs

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
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
	if c.Out(1, out) || !c.In(9, make([]byte, 16)) {
		t.Error("a second Out was taken, or a long In refused")
	}
	if c.Inline(10, 8, 0) {
		t.Error("a fifth attribute was taken")
	}
	if new(Call).Out(1, make([]byte, abi.MaxAttrLen+1)) {
		t.Error("an Out past MaxAttrLen was taken")
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
