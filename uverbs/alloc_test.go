package uverbs

import (
	"encoding/binary"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/verbs"
)

// portOnly is a minimal, allocation-free stand-in for the kernel so that
// the allocations a test counts are the library's own (the strict fake
// allocates per call). It answers GET_CONTEXT, QUERY_PORT, ALLOC_PD and
// DEALLOC_PD and DEREG_MR, and creates and destroys rxe CQs and QPs: their responses
// name queues at the standIn* offsets, which Mmap maps as anonymous memory
// with an rxe queue header.
type portOnly struct{}

// The stand-in's handles, QP number and queue offsets.
const (
	standInPD    = 7
	standInCQ    = 11
	standInQP    = 12
	standInQPN   = 0x11
	standInCQOff = 1 << 12 // 16 slots of 64 bytes
	standInRQOff = 2 << 12 // 16 slots of 64 bytes
	standInSQOff = 3 << 12 // 8 slots of 256 bytes
)

// ioctlMethod decodes the header of the RDMA_VERBS_IOCTL request at arg:
// the object and method it names, and its number of attributes.
func ioctlMethod(arg unsafe.Pointer) (obj, method uint16, attrs int) {
	hdr := unsafe.Slice((*byte)(arg), abi.IoctlHdrSize)
	return binary.LittleEndian.Uint16(hdr[2:]), binary.LittleEndian.Uint16(hdr[4:]), int(binary.LittleEndian.Uint16(hdr[6:]))
}

func (portOnly) Ioctl(req uint, arg unsafe.Pointer) error {
	if req != abi.RDMA_VERBS_IOCTL {
		return syscall.ENOTTY
	}
	obj, method, n := ioctlMethod(arg)
	all := unsafe.Slice((*byte)(arg), abi.IoctlHdrSize+n*abi.IoctlAttrSize)
	attr := func(i int) (uint16, []byte) {
		a := all[abi.IoctlHdrSize+i*abi.IoctlAttrSize:][:abi.IoctlAttrSize]
		return binary.LittleEndian.Uint16(a[0:]), a
	}
	// data is the memory attribute a points at: an output, or an input
	// longer than 8 bytes (shorter ones are inline).
	data := func(a []byte) []byte {
		return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&a[8]))), binary.LittleEndian.Uint16(a[2:]))
	}
	valid := func(a []byte) {
		binary.LittleEndian.PutUint16(a[4:], binary.LittleEndian.Uint16(a[4:])|abi.UVERBS_ATTR_F_VALID_OUTPUT)
	}
	switch {
	case obj == abi.UVERBS_OBJECT_PD && method == abi.UVERBS_METHOD_PD_DESTROY,
		obj == abi.UVERBS_OBJECT_CQ && method == abi.UVERBS_METHOD_CQ_DESTROY,
		obj == abi.UVERBS_OBJECT_QP && method == abi.UVERBS_METHOD_QP_DESTROY,
		obj == abi.UVERBS_OBJECT_MR && method == abi.UVERBS_METHOD_MR_DESTROY:
		return nil
	case obj == abi.UVERBS_OBJECT_CQ && method == abi.UVERBS_METHOD_CQ_CREATE:
		for i := 0; i < n; i++ {
			switch id, a := attr(i); id {
			case abi.UVERBS_ATTR_CREATE_CQ_HANDLE:
				binary.LittleEndian.PutUint64(a[8:], standInCQ)
			case abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE:
				binary.LittleEndian.PutUint32(data(a), 15)
				valid(a)
			case abi.UVERBS_ATTR_UHW_OUT:
				out := data(a)
				if len(out) < int(unsafe.Sizeof(abi.RxeCreateCqResp{})) {
					return syscall.EINVAL
				}
				*(*abi.RxeCreateCqResp)(unsafe.Pointer(&out[0])) = abi.RxeCreateCqResp{Mi: abi.Mminfo{Offset: standInCQOff, Size: 4096}}
				valid(a)
			}
		}
		return nil
	case obj == abi.UVERBS_OBJECT_QP && method == abi.UVERBS_METHOD_QP_CREATE:
		var capIn []byte
		for i := 0; i < n; i++ {
			if id, a := attr(i); id == abi.UVERBS_ATTR_CREATE_QP_CAP {
				capIn = data(a)
			}
		}
		for i := 0; i < n; i++ {
			switch id, a := attr(i); id {
			case abi.UVERBS_ATTR_CREATE_QP_HANDLE:
				binary.LittleEndian.PutUint64(a[8:], standInQP)
			case abi.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM:
				binary.LittleEndian.PutUint32(data(a), standInQPN)
				valid(a)
			case abi.UVERBS_ATTR_CREATE_QP_RESP_CAP:
				copy(data(a), capIn) // the sizes asked for
				valid(a)
			case abi.UVERBS_ATTR_UHW_OUT:
				out := data(a)
				if len(out) < int(unsafe.Sizeof(abi.RxeCreateQpResp{})) {
					return syscall.EINVAL
				}
				*(*abi.RxeCreateQpResp)(unsafe.Pointer(&out[0])) = abi.RxeCreateQpResp{
					RqMi: abi.Mminfo{Offset: standInRQOff, Size: 4096},
					SqMi: abi.Mminfo{Offset: standInSQOff, Size: 4096},
				}
				valid(a)
			}
		}
		return nil
	case obj == abi.UVERBS_OBJECT_DEVICE && method == abi.UVERBS_METHOD_INVOKE_WRITE:
		// ALLOC_PD: the handle in the core response (the only write
		// command these tests send).
		for i := 0; i < n; i++ {
			a := all[abi.IoctlHdrSize+i*abi.IoctlAttrSize:]
			if binary.LittleEndian.Uint16(a[0:]) == abi.UVERBS_ATTR_CORE_OUT {
				p := *(*unsafe.Pointer)(unsafe.Pointer(&a[8]))
				binary.LittleEndian.PutUint32(unsafe.Slice((*byte)(p), 4), standInPD)
			}
		}
		return nil
	case obj == abi.UVERBS_OBJECT_DEVICE && method == abi.UVERBS_METHOD_QUERY_GID_TABLE:
		// Two entries of port 1: fe80::1 (RoCE v1) and ::ffff:10.0.0.1
		// (RoCE v2) on ifindex 3.
		var entries, num []byte
		for i := 0; i < n; i++ {
			switch id, a := attr(i); id {
			case abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE:
				if binary.LittleEndian.Uint64(a[8:]) != uint64(gidEntrySize) {
					return syscall.EINVAL
				}
			case abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES:
				entries = data(a)
				valid(a)
			case abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES:
				num = data(a)
				valid(a)
			}
		}
		if len(entries) < 2*gidEntrySize || len(num) != 8 {
			return syscall.EINVAL
		}
		for i, g := range [2][16]byte{
			{0: 0xfe, 1: 0x80, 15: 1},
			{10: 0xff, 11: 0xff, 12: 10, 15: 1},
		} {
			e := entries[i*gidEntrySize:][:gidEntrySize]
			copy(e, g[:])
			binary.LittleEndian.PutUint32(e[16:], uint32(i))
			binary.LittleEndian.PutUint32(e[20:], 1)
			binary.LittleEndian.PutUint32(e[24:], uint32(i)) // IB_UVERBS_GID_TYPE_ROCE_V1, _V2
			binary.LittleEndian.PutUint32(e[28:], 3)
		}
		binary.LittleEndian.PutUint64(num, 2)
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
			valid(a)
		}
		if method == abi.UVERBS_METHOD_GET_CONTEXT && id == abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS {
			binary.LittleEndian.PutUint32(unsafe.Slice((*byte)(p), 4), 1)
		}
	}
	return nil
}

// Mmap maps the queue at offset: anonymous memory with the header of an
// rxe queue (struct rxe_queue_buf) of the stand-in's shape.
func (portOnly) Mmap(offset int64, length int, _, _ int) ([]byte, error) {
	var log2, slots uint32
	switch offset {
	case standInCQOff, standInRQOff:
		log2, slots = 6, 16
	case standInSQOff:
		log2, slots = 8, 8
	default:
		return nil, syscall.EINVAL
	}
	if length != 4096 {
		return nil, syscall.EINVAL
	}
	m, err := sys.MmapAnon(length)
	if err != nil {
		return nil, err
	}
	q := (*abi.RxeQueueBuf)(unsafe.Pointer(&m[0]))
	q.Log2ElemSize, q.IndexMask = log2, slots-1
	return m, nil
}
func (portOnly) Read([]byte, time.Time, bool) (int, error) { return 0, syscall.EINVAL }
func (portOnly) Write([]byte) (int, error)                 { return 0, syscall.EINVAL }
func (portOnly) Close() error                              { return nil }

func portOnlyContext(t testing.TB) *Context {
	return standInContext(t, portOnly{})
}

// standInContext opens rxe0 on the stand-in kernel k.
func standInContext(t testing.TB, k sys.Backend) *Context {
	b := newBed(t, rxe0())
	opts := *b.opts
	opts.Opener = verbs.NewOpener(func(path string) (*sys.FD, error) { return sys.NewFake(path, k), nil })
	c, err := Open("rxe0", &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pdAndCQ allocates a PD and a CQ of 8 entries on c.
func pdAndCQ(t testing.TB, c *Context) (*PD, *CQ) {
	t.Helper()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 8})
	if err != nil {
		t.Fatal(err)
	}
	return pd, cq
}

// rcQPBed allocates a PD and a CQ on c and returns the PD and the
// attributes of an RC QP of 4 + 4 WRs and one SGE on that CQ (the
// stand-in kernel's queues are that size).
func rcQPBed(t testing.TB, c *Context) (*PD, QPInitAttr) {
	pd, cq := pdAndCQ(t, c)
	return pd, QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}
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

// QueryGIDTableInto allocates nothing in steady state: the request and
// the kernel's entries are in a scratch.
func TestQueryGIDTableIntoAllocatesNothing(t *testing.T) {
	c := portOnlyContext(t)
	into := make([]GIDEntry, 64)
	n, err := c.QueryGIDTableInto(into)
	want := [2]string{"fe80::1", "::ffff:10.0.0.1"}
	if err != nil || n != 2 {
		t.Fatalf("QueryGIDTableInto = %d, %v", n, err)
	}
	for i, w := range want {
		if e := into[i]; e.GID.String() != w || e.Index != i || e.Port != 1 || e.Type != GIDType(i) || e.NetdevIfindex != 3 {
			t.Errorf("entry %d: %+v, want %s", i, e, w)
		}
	}
	if n := testing.AllocsPerRun(200, func() {
		if n, err := c.QueryGIDTableInto(into); n != 2 || err != nil {
			t.Fatal(n, err)
		}
	}); n != 0 {
		t.Errorf("QueryGIDTableInto allocates %v times per call", n)
	}
	// Room for more than a scratch keeps: the buffer is the call's.
	big := make([]GIDEntry, gidTableKept+1)
	if n, err := c.QueryGIDTableInto(big); n != 2 || err != nil || big[1] != into[1] {
		t.Errorf("QueryGIDTableInto(%d) = %d, %v: %+v", len(big), n, err, big[:2])
	}
}

// AllocPD and Close allocate the PD and nothing else: the request, the
// command and its response come from reused scratch memory.
func TestAllocPDAllocatesOnlyThePD(t *testing.T) {
	c := portOnlyContext(t)
	if pd, err := c.AllocPD(); err != nil || pd.Handle() != standInPD {
		t.Fatalf("AllocPD = %v, %v; want handle %d", pd, err, standInPD)
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

// CreateCQ and Close allocate the CQ and nothing else: the provider's
// state (its driver resources and the mapping of its ring) lives in the
// CQ, the request and the driver data in reused scratch memory.
func TestCreateCQAllocatesOnlyTheCQ(t *testing.T) {
	c := portOnlyContext(t)
	mapped := sys.Mapped()
	cq, err := c.CreateCQ(CQAttr{CQE: 8})
	if err != nil || cq.Handle() != standInCQ || cq.CQE() != 15 {
		t.Fatalf("CreateCQ = %v, %v; want handle %d of 15 entries", cq, err, standInCQ)
	}
	if n, err := cq.Poll(make([]WC, 4)); n != 0 || err != nil {
		t.Fatalf("Poll of an empty CQ = %d, %v", n, err)
	}
	if got := sys.Mapped() - mapped; got != 4096 {
		t.Errorf("the CQ maps %d bytes, want its 4096-byte ring", got)
	}
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sys.Mapped(); got != mapped {
		t.Errorf("%d bytes mapped after Close, want %d", got, mapped)
	}
	if _, err := cq.Poll(make([]WC, 1)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Poll after Close: %v, want os.ErrClosed", err)
	}
	if n := testing.AllocsPerRun(200, func() {
		cq, err := c.CreateCQ(CQAttr{CQE: 8})
		if err != nil {
			t.Fatal(err)
		}
		if err := cq.Close(); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("CreateCQ+Close allocates %v times, want 1 (the CQ)", n)
	}
	if got := sys.Mapped(); got != mapped {
		t.Errorf("%d bytes mapped after 200 CQs, want %d", got, mapped)
	}
}

// CreateQP and Close allocate the QP and nothing else: the provider's
// state (driver resources, the mappings of its two queues) and rxe's data
// path live in the QP, the request and the driver data in reused scratch
// memory, the doorbell command in a page the context's QPs share. Nor do
// they map anything but the two queues once that page exists.
func TestCreateQPAllocatesOnlyTheQP(t *testing.T) {
	pd, attr := rcQPBed(t, portOnlyContext(t))
	mapped := sys.Mapped()
	qp, err := pd.CreateQP(attr)
	if err != nil || qp.Handle() != standInQP || qp.Num() != standInQPN {
		t.Fatalf("CreateQP = %v, %v; want handle %d, QP number %#x", qp, err, standInQP, standInQPN)
	}
	// The receive queue is the QP's: a posted request lands in its
	// first slot and moves the producer index.
	if n, err := qp.PostRecv([]RecvWR{{ID: 42, SGL: []SGE{{Addr: 0x1000, Length: 64, LKey: 5}}}}); n != 1 || err != nil {
		t.Fatalf("PostRecv = %d, %v", n, err)
	}
	if w := (*abi.RxeRecvWqe)(qp.rxe.rq.slot(0)); w.WrId != 42 || w.Dma.NumSge != 1 || qp.rxe.rq.hdr.ProducerIndex != 1 {
		t.Errorf("receive WQE %+v, producer index %d", *w, qp.rxe.rq.hdr.ProducerIndex)
	}
	// Two queues; the doorbell command is the QP's own memory.
	if got := sys.Mapped() - mapped; got != 2*4096 {
		t.Errorf("the QP maps %d bytes, want two 4096-byte queues", got)
	}
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sys.Mapped(); got != mapped {
		t.Errorf("%d bytes mapped after Close, want %d", got, mapped)
	}
	if _, err := qp.PostRecv([]RecvWR{{ID: 1}}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("PostRecv after Close: %v, want os.ErrClosed", err)
	}
	if n := testing.AllocsPerRun(200, func() {
		qp, err := pd.CreateQP(attr)
		if err != nil {
			t.Fatal(err)
		}
		if err := qp.Close(); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("CreateQP+Close allocates %v times, want 1 (the QP)", n)
	}
	if got := sys.Mapped(); got != mapped {
		t.Errorf("%d bytes mapped after 200 QPs, want %d", got, mapped)
	}
}

// Modify allocates nothing: its request is built in a scratch, and the
// QP's lock is taken and let go without a closure.
func TestModifyQPAllocatesNothing(t *testing.T) {
	pd, attr := rcQPBed(t, portOnlyContext(t))
	qp, err := pd.CreateQP(attr)
	if err != nil {
		t.Fatal(err)
	}
	init := QPAttr{State: QPStateInit, Port: 1, AccessFlags: AccessLocalWrite}
	reset := QPAttr{State: QPStateReset}
	if n := testing.AllocsPerRun(200, func() {
		if err := qp.Modify(&init, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
			t.Fatal(err)
		}
		if err := qp.Modify(&reset, QPAttrState); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("two Modify calls allocate %v times", n)
	}
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := qp.Modify(&reset, QPAttrState); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Modify after Close: %v, want os.ErrClosed", err)
	}
}

// RegMR and Close allocate the MR and nothing else: the command, its
// response and the request are written in a scratch, and the
// deregistration runs without closures.
func TestRegMRAllocatesOnlyTheMR(t *testing.T) {
	c := portOnlyContext(t)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	buf, err := pd.AllocMR(4096, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		mr, err := pd.RegMR(buf.Buf(), AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		if err := mr.Close(); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("RegMR+Close allocates %v times, want 1 (the MR)", n)
	}
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := buf.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
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

// refuseQPDestroy is the stand-in kernel answering EBUSY to every QP
// destroy.
type refuseQPDestroy struct{ portOnly }

func (f refuseQPDestroy) Ioctl(req uint, arg unsafe.Pointer) error {
	if req == abi.RDMA_VERBS_IOCTL {
		if obj, method, _ := ioctlMethod(arg); obj == abi.UVERBS_OBJECT_QP && method == abi.UVERBS_METHOD_QP_DESTROY {
			return syscall.EBUSY
		}
	}
	return f.portOnly.Ioctl(req, arg)
}

// A QP whose destroy the kernel refuses stays usable after its own
// Close, but not after its context's: closing the descriptor destroys it
// in the kernel, and the context unmapped its queues, so its calls answer
// os.ErrClosed instead of touching them (or a descriptor number that may
// name another file by then).
func TestCloseEndsObjectsTheKernelKept(t *testing.T) {
	c := standInContext(t, refuseQPDestroy{})
	pd, attr := rcQPBed(t, c)
	cq := attr.SendCQ
	qp, err := pd.CreateQP(attr)
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("QP Close = %v, want EBUSY", err)
	}
	if n, err := qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Addr: 0x1000, Length: 8, LKey: 5}}}}); n != 1 || err != nil {
		t.Fatalf("PostRecv on the QP the kernel kept = %d, %v", n, err)
	}
	if err := c.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("context Close = %v, want the QP's EBUSY", err)
	}
	if _, err := qp.PostSend([]SendWR{{Opcode: WRSend}}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("PostSend after the context's Close: %v, want os.ErrClosed", err)
	}
	if _, err := qp.PostRecv([]RecvWR{{ID: 2}}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("PostRecv after the context's Close: %v, want os.ErrClosed", err)
	}
	if _, err := cq.Poll(make([]WC, 1)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Poll after the context's Close: %v, want os.ErrClosed", err)
	}
	if err := qp.Close(); err != nil {
		t.Errorf("QP Close after the context's: %v", err)
	}
}
