package verbs

import (
	"sync"
	"testing"
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
	if c.Out(1, out) {
		t.Error("a second Out was taken")
	}
	if c.Inline(9, 8, 0); c.Inline(10, 8, 0) {
		t.Error("a fifth attribute was taken")
	}
	if new(Call).Out(1, make([]byte, abi.MaxAttrLen+1)) {
		t.Error("an Out past MaxAttrLen was taken")
	}
}

// Concurrent users of a CallList never share a Call.
func TestCallListExclusive(t *testing.T) {
	var l CallList
	var mu sync.Mutex
	inUse := map[*Call]bool{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c, slot := l.Get()
				mu.Lock()
				if inUse[c] {
					t.Error("a Call handed out twice")
				}
				inUse[c] = true
				mu.Unlock()
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
	if n := testing.AllocsPerRun(100, func() { _, s := l.Get(); l.Put(s) }); n != 0 {
		t.Errorf("Get+Put allocates %v", n)
	}
}
