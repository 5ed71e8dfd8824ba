//go:build linux

package abi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// TestGoldenQueryPort: the bytes of QUERY_PORT(port 1) on an mlx5 device.
// Expected bytes from uverbs_ioctl.c ib_uverbs_cmd_verbs and struct ib_uverbs_ioctl_hdr in rdma_user_ioctl_cmds.h (struct
// ib_uverbs_ioctl_hdr, struct ib_uverbs_attr, CONST_IN inline, PTR_OUT by
// pointer); to be replaced by a capture of `strace -X raw -e trace=ioctl
// ibv_devinfo -d rxe0` from the VM test bed.
func TestGoldenQueryPort(t *testing.T) {
	resp := make([]byte, 48)
	r := NewRequest(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT).
		Const(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1).
		Out(UVERBS_ATTR_QUERY_PORT_RESP, resp)
	got, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x38, 0x00, // length 56 = 24 + 2*16
		0x00, 0x00, // object DEVICE
		0x02, 0x00, // method QUERY_PORT
		0x02, 0x00, // num_attrs
		0, 0, 0, 0, 0, 0, 0, 0, // reserved1
		0x01, 0x00, 0x00, 0x00, // driver_id RDMA_DRIVER_MLX5
		0, 0, 0, 0, // reserved2
		// attr 0: PORT_NUM, len 8, MANDATORY, inline 1
		0x00, 0x00, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00,
		0x01, 0, 0, 0, 0, 0, 0, 0,
		// attr 1: RESP, len 48, MANDATORY, pointer
		0x01, 0x00, 0x30, 0x00, 0x01, 0x00, 0x00, 0x00,
	}
	want = append(want, le64(addr(resp))...)
	if !bytes.Equal(got, want) {
		t.Errorf("QUERY_PORT bytes:\n got % x\nwant % x", got, want)
	}
}

// TestGoldenCountersRead: what rdma-core's ibv_cmd_read_counters sends
// (uverbs_std_types_counters.c): the handle, the output array by pointer, and
// the flags as a 4-byte inline value.
func TestGoldenCountersRead(t *testing.T) {
	buf := make([]byte, 2*8)
	r := NewRequest(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ).
		Handle(UVERBS_ATTR_READ_COUNTERS_HANDLE, 5).
		Out(UVERBS_ATTR_READ_COUNTERS_BUFF, buf).
		Flags32(UVERBS_ATTR_READ_COUNTERS_FLAGS, IB_UVERBS_READ_COUNTERS_PREFER_CACHED)
	got, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x48, 0x00, 0x0f, 0x00, 0x02, 0x00, 0x03, 0x00,
		0, 0, 0, 0, 0, 0, 0, 0,
		0x01, 0, 0, 0, 0, 0, 0, 0,
		// HANDLE: len 0, data = handle
		0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0, 0, 0, 0, 0, 0, 0,
		// BUFF: len 16, pointer
		0x01, 0x00, 0x10, 0x00, 0x01, 0x00, 0x00, 0x00,
	}
	want = append(want, le64(addr(buf))...)
	want = append(want,
		// FLAGS: len 4, inline 1
		0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0)
	if !bytes.Equal(got, want) {
		t.Errorf("COUNTERS_READ bytes:\n got % x\nwant % x", got, want)
	}
}

// TestGoldenInvokeWrite: ALLOC_PD (write command 3) over INVOKE_WRITE
// (uverbs_std_types_device.c UVERBS_METHOD_INVOKE_WRITE, uverbs_main.c): WRITE_CMD is an 8-byte CONST_IN, CORE_IN the
// 8-byte request (inline), CORE_OUT and UHW_OUT by pointer.
func TestGoldenInvokeWrite(t *testing.T) {
	coreIn := make([]byte, 8)
	coreOut := make([]byte, 4)
	drvOut := make([]byte, 4)
	r := InvokeWrite(nil, RDMA_DRIVER_MLX5, IB_USER_VERBS_CMD_ALLOC_PD, coreIn, coreOut, nil, drvOut)
	got, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x58, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0, 0, 0, 0, 0, 0, 0, 0,
		0x01, 0, 0, 0, 0, 0, 0, 0,
		0x02, 0x00, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, // WRITE_CMD = 3
		0x00, 0x00, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, // CORE_IN inline zeros
		0x01, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, // CORE_OUT
	}
	want = append(want, le64(addr(coreOut))...)
	want = append(want, 0x01, 0x10, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00) // UHW_OUT 0x1001
	want = append(want, le64(addr(drvOut))...)
	if !bytes.Equal(got, want) {
		t.Errorf("INVOKE_WRITE bytes:\n got % x\nwant % x", got, want)
	}
	// The extended flag travels in the command word.
	r = InvokeWrite(nil, RDMA_DRIVER_MLX5, IB_USER_VERBS_CMD_FLAG_EXTENDED|IB_USER_VERBS_EX_CMD_CREATE_FLOW, make([]byte, 16), make([]byte, 8), nil, nil)
	got, _ = r.Marshal()
	a, _ := DecodeIoctlAttr(got, 0)
	if a.Data != 0x80000032 {
		t.Errorf("EX_CREATE_FLOW command word = %#x, want 0x80000032", a.Data)
	}
}

func TestInlineAndPointerInputs(t *testing.T) {
	eight := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	nine := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	api := NewAPI(0, nil)
	r := NewRequest(api, 0, 0x1f, 0).In(1, eight).In(2, nine).In(3, nil).Handles(4, []uint32{7, 9}).Handles(5, []uint32{1, 2, 3})
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	_, attrs, err := ParseIoctl(b)
	if err != nil {
		t.Fatal(err)
	}
	if attrs[0].Data != 0x0807060504030201 || !attrs[0].Inline() {
		t.Errorf("8-byte input not inline: %+v", attrs[0])
	}
	if attrs[1].Data != addr(nine) || attrs[1].Inline() {
		t.Errorf("9-byte input not by pointer: %+v", attrs[1])
	}
	if attrs[2].Len != 0 || attrs[2].Data != 0 {
		t.Errorf("empty input: %+v", attrs[2])
	}
	if attrs[3].Len != 8 || attrs[3].Data != 7|9<<32 {
		t.Errorf("two handles inline: %+v", attrs[3])
	}
	if attrs[4].Len != 12 || attrs[4].Inline() {
		t.Errorf("three handles by pointer: %+v", attrs[4])
	}
}

// Sticky errors: the first mistake is kept and reported by Marshal; later
// calls change nothing.
func TestStickyErrors(t *testing.T) {
	r := NewRequest(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT).
		Out(UVERBS_ATTR_QUERY_PORT_PORT_NUM, make([]byte, 8)). // declared CONST_IN
		Const(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1)
	_, err := r.Marshal()
	var ae *Error
	if !errors.As(err, &ae) || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Marshal = %v", err)
	}
	if !strings.Contains(err.Error(), "CONST_IN") {
		t.Errorf("Marshal = %v, want the first mistake (RESP_NUM given as an output, declared CONST_IN)", err)
	}
	for name, build := range map[string]func(*Request){
		"output too short":   func(r *Request) { r.Out(UVERBS_ATTR_QUERY_PORT_RESP, make([]byte, 40)) },
		"flags length":       func(r *Request) { r.In(UVERBS_ATTR_QUERY_PORT_PORT_NUM, make([]byte, 2)) },
		"payload too long":   func(r *Request) { r.In(9, make([]byte, MaxAttrLen+1)) },
		"negative fd":        func(r *Request) { r.FD(9, -1) },
		"optional unknown":   func(r *Request) { r.Optional(42) },
		"new handle as read": func(r *Request) { r.Handle(UVERBS_ATTR_QUERY_PORT_RESP, 1) },
	} {
		r := NewRequest(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT)
		build(r)
		if r.Err() == nil {
			t.Errorf("%s: no error", name)
		}
	}
	r = NewRequest(NewAPI(0, nil), 0, 1, 1)
	for i := 0; i <= MaxAttrs; i++ {
		r.InU32(uint16(i), 0)
	}
	if r.Err() == nil {
		t.Errorf("more than %d attributes accepted", MaxAttrs)
	}
}

func TestResultsBeforeAndAfterCall(t *testing.T) {
	r := NewRequest(nil, RDMA_DRIVER_RXE, UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_CREATE).
		NewHandle(UVERBS_ATTR_CREATE_COUNTERS_HANDLE)
	if _, err := r.Created(UVERBS_ATTR_CREATE_COUNTERS_HANDLE); err == nil {
		t.Error("Created before the call")
	}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// Play the kernel: write handle 42 back into the attribute's data.
	binary.LittleEndian.PutUint64(b[IoctlHdrSize+8:], 42)
	if h, err := r.Created(UVERBS_ATTR_CREATE_COUNTERS_HANDLE); err != nil || h != 42 {
		t.Errorf("Created = %d, %v", h, err)
	}
	if _, err := r.CreatedFD(UVERBS_ATTR_CREATE_COUNTERS_HANDLE); err == nil {
		t.Error("CreatedFD on a handle attribute")
	}
	binary.LittleEndian.PutUint64(b[IoctlHdrSize+8:], 1<<40)
	if _, err := r.Created(UVERBS_ATTR_CREATE_COUNTERS_HANDLE); err == nil {
		t.Error("a handle wider than 32 bits was accepted")
	}
}

func TestAPIPruning(t *testing.T) {
	if APIFor(RDMA_DRIVER_RXE).Method(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_CREATE) != nil {
		t.Error("rxe has the COUNTERS object; the kernel prunes it (no destroy_counters)")
	}
	if APIFor(RDMA_DRIVER_MLX5).Method(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ) == nil {
		t.Error("mlx5 lacks COUNTERS_READ")
	}
	qc := APIFor(RDMA_DRIVER_MLX5).Method(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT)
	if a := qc.Attr(MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX); a == nil || !a.Mandatory || a.MinLen != 72 {
		t.Errorf("mlx5 QUERY_CONTEXT driver output: %+v", a)
	}
	if APIFor(RDMA_DRIVER_RXE).Method(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT).Attr(MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX) != nil {
		t.Error("the mlx5 attribute leaked into the rxe tree")
	}
	if APIFor(12345) != APIFor(RDMA_DRIVER_UNKNOWN) {
		t.Error("unknown drivers do not get the core tree")
	}
	// Every declared size agrees with the generated struct it names.
	for _, tc := range []struct {
		object, method, attr uint16
		size                 uintptr
	}{
		{UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT, UVERBS_ATTR_QUERY_PORT_RESP, unsafe.Sizeof(IbUverbsQueryPortRespEx{})},
		{UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY, UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, unsafe.Sizeof(IbUverbsGidEntry{})},
		{UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, UVERBS_ATTR_CREATE_QP_CAP, unsafe.Sizeof(IbUverbsQpCap{})},
		{UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_DESTROY, UVERBS_ATTR_DESTROY_CQ_RESP, unsafe.Sizeof(IbUverbsDestroyCqResp{})},
		{UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY, UVERBS_ATTR_DESTROY_QP_RESP, unsafe.Sizeof(IbUverbsDestroyQpResp{})},
	} {
		a := APIFor(RDMA_DRIVER_MLX5).Method(tc.object, tc.method).Attr(tc.attr)
		if uintptr(a.Len) != tc.size {
			t.Errorf("%s: table says %d bytes, struct is %d", a.Name, a.Len, tc.size)
		}
	}
}

func TestParseIoctlRoundTrip(t *testing.T) {
	r := NewRequest(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT).
		Const(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1).Out(UVERBS_ATTR_QUERY_PORT_RESP, make([]byte, 48))
	b, _ := r.Marshal()
	h, attrs, err := ParseIoctl(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.Header(), h); diff != "" {
		t.Errorf("header (-built +parsed):\n%s", diff)
	}
	if diff := cmp.Diff(r.inl[:r.count()], attrs); diff != "" {
		t.Errorf("attributes (-built +parsed):\n%s", diff)
	}
	if _, _, err := ParseIoctl(b[:len(b)-1]); err == nil {
		t.Error("short buffer parsed")
	}
	if _, err := DecodeIoctlAttr(b, -1); err == nil {
		t.Error("negative index decoded")
	}
}

// FuzzParseIoctl: decoding never panics, and decode → encode → decode is
// stable (the encoding reproduces the decoded prefix byte for byte).
func FuzzParseIoctl(f *testing.F) {
	r := NewRequest(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT).
		Const(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1).Out(UVERBS_ATTR_QUERY_PORT_RESP, make([]byte, 48))
	b, _ := r.Marshal()
	f.Add(append([]byte(nil), b...))
	f.Add([]byte{})
	f.Add(make([]byte, 24))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, attrs, err := ParseIoctl(b)
		if err != nil {
			return
		}
		enc := AppendIoctlHdr(nil, h)
		for _, a := range attrs {
			enc = AppendIoctlAttr(enc, a)
		}
		if !bytes.Equal(enc, b[:len(enc)]) {
			t.Fatalf("re-encoding differs:\n% x\n% x", enc, b[:len(enc)])
		}
		h2, attrs2, err := ParseIoctl(enc)
		if err != nil || h2 != h || !cmp.Equal(attrs, attrs2) {
			t.Fatalf("second decode differs: %v", err)
		}
	})
}

// BenchmarkCountersReadRequest: building the counters-read request, the
// hot path of ibv_read_counters, allocates nothing once the request is
// reused.
func BenchmarkCountersReadRequest(b *testing.B) {
	buf := make([]byte, 64)
	r := NewRequest(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ)
	api := APIFor(RDMA_DRIVER_MLX5)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.Reset(api, RDMA_DRIVER_MLX5, UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ)
		r.Handle(UVERBS_ATTR_READ_COUNTERS_HANDLE, 1).
			Out(UVERBS_ATTR_READ_COUNTERS_BUFF, buf).
			Flags32(UVERBS_ATTR_READ_COUNTERS_FLAGS, 0)
		if _, err := r.Marshal(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCountersReadRequestAllocatesNothing(t *testing.T) {
	buf := make([]byte, 64)
	r := NewRequest(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ)
	api := APIFor(RDMA_DRIVER_MLX5)
	build := func() {
		r.Reset(api, RDMA_DRIVER_MLX5, UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ)
		r.Handle(UVERBS_ATTR_READ_COUNTERS_HANDLE, 1).Out(UVERBS_ATTR_READ_COUNTERS_BUFF, buf).Flags32(UVERBS_ATTR_READ_COUNTERS_FLAGS, 0)
		r.Marshal()
	}
	build()
	if n := testing.AllocsPerRun(100, build); n != 0 {
		t.Errorf("%v allocations per reused counters-read request, want 0", n)
	}
}

// TestResetKeepsOrLooksUpTheMethod: a request reset to another method
// checks against that method's spec, one reset to the method it had (after
// Release too) keeps it, and neither allocates.
func TestResetKeepsOrLooksUpTheMethod(t *testing.T) {
	api := APIFor(RDMA_DRIVER_UNKNOWN)
	r := NewRequest(api, RDMA_DRIVER_UNKNOWN, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT)
	if r.Name() != "UVERBS_METHOD_QUERY_PORT" {
		t.Fatalf("new request for QUERY_PORT is %s", r.Name())
	}
	r.Reset(api, RDMA_DRIVER_UNKNOWN, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE)
	if r.Name() != "UVERBS_METHOD_INVOKE_WRITE" {
		t.Errorf("reset to INVOKE_WRITE is %s", r.Name())
	}
	r.Release()
	r.Reset(api, RDMA_DRIVER_UNKNOWN, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE)
	if r.Name() != "UVERBS_METHOD_INVOKE_WRITE" {
		t.Errorf("reset to INVOKE_WRITE after Release is %s", r.Name())
	}
	r.Reset(api, RDMA_DRIVER_UNKNOWN, UVERBS_OBJECT_DEVICE, 0x7777)
	if r.Name() == "UVERBS_METHOD_INVOKE_WRITE" {
		t.Error("reset to an unknown method kept INVOKE_WRITE's spec")
	}
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(api, RDMA_DRIVER_UNKNOWN, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT)
		r.Release()
	})
	if allocs != 0 {
		t.Errorf("Reset and Release allocate %.0f times", allocs)
	}
}

// A request of more attributes than it holds in place is copied into one
// buffer when called; the kernel's write-backs are read from there.
func TestManyAttributes(t *testing.T) {
	r := NewRequest(NewAPI(0, nil), 0, 1, 1)
	for i := 0; i < inlineAttrs+4; i++ {
		r.InU32(uint16(i), uint32(i))
	}
	r.NewHandle(100)
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	h, attrs, err := ParseIoctl(b)
	if err != nil || int(h.NumAttrs) != inlineAttrs+5 || int(h.Length) != len(b) {
		t.Fatalf("header %+v, %v", h, err)
	}
	for i, a := range attrs[:inlineAttrs+4] {
		if a.ID != uint16(i) || a.Data != uint64(i) || a.Flags != UVERBS_ATTR_F_MANDATORY {
			t.Errorf("attribute %d: %+v", i, a)
		}
	}
	binary.LittleEndian.PutUint64(b[IoctlHdrSize+(inlineAttrs+4)*IoctlAttrSize+8:], 9)
	if h, err := r.Created(100); err != nil || h != 9 {
		t.Errorf("Created = %d, %v", h, err)
	}
}

// MarshalUnchecked leaves the method table's check to Explain; structural
// errors it reports at once.
func TestMarshalUncheckedAndExplain(t *testing.T) {
	r := NewRequest(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT).
		Out(UVERBS_ATTR_QUERY_PORT_RESP, make([]byte, 48)) // PORT_NUM missing
	if _, err := r.MarshalUnchecked(); err != nil {
		t.Fatalf("MarshalUnchecked = %v", err)
	}
	if err := r.Explain(syscall.EINVAL); !strings.Contains(err.Error(), "missing") || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Explain = %v, want the missing attribute", err)
	}
	r.Reset(nil, RDMA_DRIVER_MLX5, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT)
	r.Const(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1).Out(UVERBS_ATTR_QUERY_PORT_RESP, make([]byte, 48))
	if err := r.Explain(syscall.EIO); err != syscall.EIO {
		t.Errorf("Explain of a good request = %v, want the kernel's EIO", err)
	}
	r.FD(9, -1)
	if _, err := r.MarshalUnchecked(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("MarshalUnchecked with a negative descriptor = %v", err)
	}
}
