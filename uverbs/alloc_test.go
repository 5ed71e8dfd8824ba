package uverbs

import (
	"encoding/binary"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// portOnly is a minimal, allocation-free stand-in for the kernel that
// answers GET_CONTEXT and QUERY_PORT only, so that the allocations a test
// counts are the library's own (the strict fake allocates per call).
type portOnly struct{}

func (portOnly) Ioctl(req uint, arg unsafe.Pointer) error {
	if req != abi.RDMA_VERBS_IOCTL {
		return syscall.ENOTTY
	}
	hdr := unsafe.Slice((*byte)(arg), abi.IoctlHdrSize)
	n := int(binary.LittleEndian.Uint16(hdr[6:]))
	all := unsafe.Slice((*byte)(arg), abi.IoctlHdrSize+n*abi.IoctlAttrSize)
	obj, method := binary.LittleEndian.Uint16(hdr[2:]), binary.LittleEndian.Uint16(hdr[4:])
	switch {
	case obj == abi.UVERBS_OBJECT_PD && method == abi.UVERBS_METHOD_PD_DESTROY:
		return nil
	case obj == abi.UVERBS_OBJECT_DEVICE && method == abi.UVERBS_METHOD_INVOKE_WRITE:
		// ALLOC_PD: handle 7 in the core response (the only write
		// command these tests send).
		for i := 0; i < n; i++ {
			a := all[abi.IoctlHdrSize+i*abi.IoctlAttrSize:]
			if binary.LittleEndian.Uint16(a[0:]) == abi.UVERBS_ATTR_CORE_OUT {
				p := *(*unsafe.Pointer)(unsafe.Pointer(&a[8]))
				binary.LittleEndian.PutUint32(unsafe.Slice((*byte)(p), 4), 7)
			}
		}
		return nil
	case obj != abi.UVERBS_OBJECT_DEVICE || (method != abi.UVERBS_METHOD_QUERY_PORT && method != abi.UVERBS_METHOD_GET_CONTEXT):
		return syscall.EPROTONOSUPPORT
	}
	for i := 0; i < n; i++ {
		a := all[abi.IoctlHdrSize+i*abi.IoctlAttrSize:]
		id, l := binary.LittleEndian.Uint16(a[0:]), binary.LittleEndian.Uint16(a[2:])
		p := *(*unsafe.Pointer)(unsafe.Pointer(&a[8]))
		if method == abi.UVERBS_METHOD_QUERY_PORT && id == abi.UVERBS_ATTR_QUERY_PORT_RESP {
			out := unsafe.Slice((*byte)(p), l)
			clear(out)
			out[26] = 4 // state ACTIVE
			out[37] = 2 // Ethernet
			binary.LittleEndian.PutUint16(a[4:], binary.LittleEndian.Uint16(a[4:])|abi.UVERBS_ATTR_F_VALID_OUTPUT)
		}
		if method == abi.UVERBS_METHOD_GET_CONTEXT && id == abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS {
			binary.LittleEndian.PutUint32(unsafe.Slice((*byte)(p), 4), 1)
		}
	}
	return nil
}
func (portOnly) Read([]byte, time.Time, bool) (int, error) { return 0, syscall.EINVAL }
func (portOnly) Write([]byte) (int, error)                 { return 0, syscall.EINVAL }
func (portOnly) Mmap(int64, int, int, int) ([]byte, error) { return nil, syscall.ENODEV }
func (portOnly) Close() error                              { return nil }

func portOnlyContext(t testing.TB) *Context {
	b := newBed(t, rxe0())
	opts := *b.opts
	opts.open = func(path string) (*sys.FD, error) { return sys.NewFake(path, portOnly{}), nil }
	c, err := Open("rxe0", &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// QueryPort allocates nothing in steady state.
func TestQueryPortAllocatesNothing(t *testing.T) {
	c := portOnlyContext(t)
	if p, err := c.QueryPort(1); err != nil || p.State != rdma.PortActive || p.LinkLayer != rdma.LinkLayerEthernet {
		t.Fatalf("QueryPort = %+v, %v", p, err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if _, err := c.QueryPort(1); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("QueryPort allocates %v times per call", n)
	}
}

// AllocPD and Close allocate the PD and nothing else: the request, the
// command and its response come from reused scratch memory.
func TestAllocPDAllocatesOnlyThePD(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	c := portOnlyContext(t)
	if pd, err := c.AllocPD(); err != nil || pd.Handle() != 7 {
		t.Fatalf("AllocPD = %v, %v; want handle 7", pd, err)
	} else if err := pd.Close(); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		if err := pd.Close(); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("AllocPD+Close allocates %v times, want 1 (the PD)", n)
	}
}

// BenchmarkQueryPort measures the library's side of QueryPort (the kernel
// is an allocation-free stand-in): 0 allocs/op. The VM benchmark
// (integration tests) measures it against Linux.
func BenchmarkQueryPort(b *testing.B) {
	c := portOnlyContext(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := c.QueryPort(1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryPortStrictFake is QueryPort through the strict fake kernel,
// whose own bookkeeping allocates.
func BenchmarkQueryPortStrictFake(b *testing.B) {
	bd := newBed(b, rxe0())
	c := bd.open(b, "rxe0")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := c.QueryPort(1); err != nil {
			b.Fatal(err)
		}
	}
}
