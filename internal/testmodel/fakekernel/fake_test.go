package fakekernel

import (
	"encoding/binary"
	"errors"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/sys/systest"
)

func TestMain(m *testing.M) { os.Exit(systest.Main(m)) }

var (
	mlx5 = Device{Name: "mlx5_0", DriverID: abi.RDMA_DRIVER_MLX5}
	rxe  = Device{Name: "rxe0", DriverID: abi.RDMA_DRIVER_RXE}
)

// open returns a descriptor on a fake device, closed with the test.
func open(t *testing.T, dev Device, h Handler) (*Kernel, *sys.FD) {
	t.Helper()
	k := New(dev, h)
	fd := k.Open()
	t.Cleanup(func() {
		fd.Close()
		if n := k.OpenFiles(); n != 0 {
			t.Errorf("%d files still open", n)
		}
	})
	return k, fd
}

// do runs a built request through the real seam.
func do(fd *sys.FD, r *abi.Request) error {
	buf, err := r.Marshal()
	if err != nil {
		return err
	}
	return fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(&buf[0]), r)
}

// raw sends hand-made bytes (requests the builder refuses to make).
func raw(fd *sys.FD, b []byte) error {
	return fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(&b[0]), b)
}

func rawRequest(driver uint32, object, method uint16, attrs ...abi.IoctlAttr) []byte {
	h := abi.IoctlHdr{
		Length:   uint16(abi.IoctlHdrSize + abi.IoctlAttrSize*len(attrs)),
		ObjectID: object, MethodID: method, NumAttrs: uint16(len(attrs)), DriverID: driver,
	}
	b := abi.AppendIoctlHdr(nil, h)
	for _, a := range attrs {
		b = abi.AppendIoctlAttr(b, a)
	}
	return b
}

func getContext(t *testing.T, fd *sys.FD, driver uint32) {
	t.Helper()
	ncv := make([]byte, 4)
	r := abi.NewRequest(nil, driver, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT).
		Out(abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, ncv)
	if err := do(fd, r); err != nil {
		t.Fatalf("GET_CONTEXT: %v", err)
	}
}

func wantErrno(t *testing.T, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v (%d)", err, want, want)
	}
}

func queryPort(driver uint32, port uint64) *abi.Request {
	return abi.NewRequest(nil, driver, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT).
		Const(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, port).
		Out(abi.UVERBS_ATTR_QUERY_PORT_RESP, make([]byte, 48))
}

func portHandler(c *Call) error {
	if c.Method.Method == abi.UVERBS_METHOD_QUERY_PORT {
		resp := make([]byte, 48)
		resp[0] = 4 // state ACTIVE
		return c.Out(abi.UVERBS_ATTR_QUERY_PORT_RESP, resp, true)
	}
	return nil
}

// Rule: any ioctl number other than RDMA_VERBS_IOCTL is ENOTTY.
func TestRuleWrongIoctlNumber(t *testing.T) {
	_, fd := open(t, mlx5, nil)
	b := rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT)
	wantErrno(t, fd.Ioctl(0xC0181B02, unsafe.Pointer(&b[0]), b), syscall.ENOTTY)
}

// Rule: header length must be 24 + 16 × num_attrs → EINVAL.
func TestRuleWrongHeaderLength(t *testing.T) {
	_, fd := open(t, mlx5, portHandler)
	getContext(t, fd, abi.RDMA_DRIVER_MLX5)
	r := queryPort(abi.RDMA_DRIVER_MLX5, 1)
	buf, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(buf[0:], uint16(len(buf)+16))
	wantErrno(t, fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(&buf[0]), r), syscall.EINVAL)
	binary.LittleEndian.PutUint16(buf[0:], uint16(len(buf)-1))
	wantErrno(t, fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(&buf[0]), r), syscall.EINVAL)
	binary.LittleEndian.PutUint16(buf[0:], uint16(len(buf)))
	if err := fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(&buf[0]), r); err != nil {
		t.Fatalf("the same request with the right length: %v", err)
	}
}

// Rule: a length above one page is EINVAL even when it matches num_attrs.
func TestRuleHeaderLongerThanPage(t *testing.T) {
	_, fd := open(t, mlx5, nil)
	attrs := make([]abi.IoctlAttr, abi.MaxAttrs+1)
	for i := range attrs {
		attrs[i] = abi.IoctlAttr{ID: uint16(100 + i)} // unknown, optional: ignored
	}
	b := rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT, attrs...)
	wantErrno(t, raw(fd, b), syscall.EINVAL)
	b = rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT, attrs[:abi.MaxAttrs]...)
	if err := raw(fd, b); err != nil {
		t.Fatalf("%d unknown optional attributes: %v", abi.MaxAttrs, err)
	}
}

// Rule: non-zero reserved1 or reserved2 → EPROTONOSUPPORT (not EINVAL).
func TestRuleReservedFields(t *testing.T) {
	_, fd := open(t, mlx5, nil)
	for _, off := range []int{8, 15, 20, 23} {
		b := rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT)
		b[off] = 1
		wantErrno(t, raw(fd, b), syscall.EPROTONOSUPPORT)
	}
}

// Rule: driver_id must match the device → EINVAL.
func TestRuleDriverIDMismatch(t *testing.T) {
	_, fd := open(t, mlx5, nil)
	r := abi.NewRequest(abi.APIFor(abi.RDMA_DRIVER_MLX5), abi.RDMA_DRIVER_RXE, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT)
	wantErrno(t, do(fd, r), syscall.EINVAL)
	r.Reset(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT)
	if err := do(fd, r); err != nil {
		t.Fatalf("with the right driver id: %v", err)
	}
}

// Rule: unknown object or method → EPROTONOSUPPORT, including objects the
// device's driver prunes (every COUNTERS method on rxe).
func TestRuleUnknownObjectOrMethod(t *testing.T) {
	_, fd := open(t, rxe, nil)
	for _, om := range [][2]uint16{
		{0x13, 0},                        // no such core object
		{abi.UVERBS_OBJECT_DEVICE, 0x14}, // no such method
		{abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_CREATE},    // pruned on rxe
		{abi.MLX5_IB_OBJECT_UAR, abi.MLX5_IB_METHOD_UAR_OBJ_ALLOC},         // another driver's namespace
		{abi.UVERBS_OBJECT_DEVICE | 0x2000, abi.UVERBS_METHOD_GET_CONTEXT}, // invalid namespace bits
	} {
		b := rawRequest(abi.RDMA_DRIVER_RXE, om[0], om[1])
		if err := raw(fd, b); !errors.Is(err, syscall.EPROTONOSUPPORT) {
			t.Errorf("object %#x method %#x: %v, want EPROTONOSUPPORT", om[0], om[1], err)
		}
	}
}

// Rule: a missing mandatory attribute → EINVAL (the builder refuses to
// make such a request, so it is sent raw).
func TestRuleMissingMandatory(t *testing.T) {
	_, fd := open(t, mlx5, portHandler)
	getContext(t, fd, abi.RDMA_DRIVER_MLX5)
	r := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT).
		Const(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1)
	if _, err := r.Marshal(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("builder accepted a request without its mandatory output: %v", err)
	}
	b := rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT,
		abi.IoctlAttr{ID: abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, Len: 8, Flags: abi.UVERBS_ATTR_F_MANDATORY, Data: 1})
	wantErrno(t, raw(fd, b), syscall.EINVAL)
}

// Rule: an attribute the method does not know → EPROTONOSUPPORT when
// flagged MANDATORY, silently ignored otherwise.
func TestRuleUnknownAttribute(t *testing.T) {
	_, fd := open(t, mlx5, nil)
	r := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT).
		InU32(7, 1)
	wantErrno(t, do(fd, r), syscall.EPROTONOSUPPORT)
	r.Reset(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT)
	r.InU32(7, 1).Optional(7)
	if err := do(fd, r); err != nil {
		t.Fatalf("unknown optional attribute: %v", err)
	}
}

// Rule: the same attribute twice → EINVAL.
func TestRuleDuplicateAttribute(t *testing.T) {
	_, fd := open(t, mlx5, nil)
	ncv := make([]byte, 4)
	a := abi.IoctlAttr{ID: abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, Len: 4, Flags: abi.UVERBS_ATTR_F_MANDATORY,
		Data: uint64(uintptr(unsafe.Pointer(&ncv[0])))}
	b := rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT, a, a)
	err := fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(&b[0]), b, ncv)
	wantErrno(t, err, syscall.EINVAL)
	r := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT).
		Out(abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, ncv).Out(abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, ncv)
	if _, err := r.Marshal(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("builder accepted a duplicate attribute: %v", err)
	}
}

// Rule: attribute flag bits the kernel does not know are ignored, as
// uverbs_set_attr only tests UVERBS_ATTR_F_MANDATORY; VALID_OUTPUT sent on
// input is ignored too and the kernel sets it only on outputs it wrote.
func TestRuleUnknownAttributeFlags(t *testing.T) {
	_, fd := open(t, mlx5, portHandler)
	getContext(t, fd, abi.RDMA_DRIVER_MLX5)
	resp := make([]byte, 48)
	b := rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT,
		abi.IoctlAttr{ID: abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, Len: 8, Flags: 0xfff0 | abi.UVERBS_ATTR_F_MANDATORY | abi.UVERBS_ATTR_F_VALID_OUTPUT, Data: 1},
		abi.IoctlAttr{ID: abi.UVERBS_ATTR_QUERY_PORT_RESP, Len: 48, Flags: 0x8000, Data: uint64(uintptr(unsafe.Pointer(&resp[0])))})
	if err := fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(&b[0]), b, resp); err != nil {
		t.Fatalf("unknown flag bits: %v, want them ignored", err)
	}
	out, _ := abi.DecodeIoctlAttr(b, 1)
	if out.Flags != 0x8000|abi.UVERBS_ATTR_F_VALID_OUTPUT || resp[0] != 4 {
		t.Errorf("output flags %#x, resp[0] %d", out.Flags, resp[0])
	}
}

// Rule: FLAGS_IN with bits the method does not allow, or a length other
// than 4 or 8 → EINVAL; CONST_IN above its C type → EINVAL.
func TestRuleFlagsAndConstValues(t *testing.T) {
	_, fd := open(t, mlx5, portHandler)
	getContext(t, fd, abi.RDMA_DRIVER_MLX5)
	wantErrno(t, do(fd, queryPort(abi.RDMA_DRIVER_MLX5, 256)), syscall.EINVAL)
	if err := do(fd, queryPort(abi.RDMA_DRIVER_MLX5, 255)); err != nil {
		t.Fatalf("port 255: %v", err)
	}
	gid := func(flags abi.IoctlAttr) []byte {
		return rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE,
			abi.IoctlAttr{ID: abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, Len: 8, Flags: 1, Data: 32},
			flags,
			abi.IoctlAttr{ID: abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, Len: 0, Flags: 1},
			abi.IoctlAttr{ID: abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, Len: 8, Flags: 1, Data: uint64(uintptr(unsafe.Pointer(&scratch[0])))})
	}
	wantErrno(t, raw(fd, gid(abi.IoctlAttr{ID: abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, Len: 4, Flags: 1, Data: 1})), syscall.EINVAL)
	wantErrno(t, raw(fd, gid(abi.IoctlAttr{ID: abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, Len: 2, Flags: 1})), syscall.EINVAL)
	if err := raw(fd, gid(abi.IoctlAttr{ID: abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, Len: 4, Flags: 1})); err != nil {
		t.Fatalf("flags 0: %v", err)
	}
}

var scratch = make([]byte, 64)

// Rule: PTR_IN/PTR_OUT lengths and reserved attr_data → EINVAL; a longer
// struct input with a non-zero tail → EOPNOTSUPP.
func TestRulePointerAttributes(t *testing.T) {
	_, fd := open(t, mlx5, nil)
	getContext(t, fd, abi.RDMA_DRIVER_MLX5)
	cq := func(cqeLen uint16, attrData uint16) []byte {
		return rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE,
			abi.IoctlAttr{ID: abi.UVERBS_ATTR_CREATE_CQ_HANDLE, Flags: 1},
			abi.IoctlAttr{ID: abi.UVERBS_ATTR_CREATE_CQ_CQE, Len: cqeLen, Flags: 1, AttrData: attrData, Data: 16},
			abi.IoctlAttr{ID: abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE, Len: 8, Flags: 1},
			abi.IoctlAttr{ID: abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, Len: 4, Flags: 1},
			abi.IoctlAttr{ID: abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE, Len: 4, Flags: 1, Data: uint64(uintptr(unsafe.Pointer(&scratch[0])))})
	}
	wantErrno(t, raw(fd, cq(8, 0)), syscall.EINVAL) // CQE is exactly a u32
	wantErrno(t, raw(fd, cq(2, 0)), syscall.EINVAL)
	wantErrno(t, raw(fd, cq(4, 1)), syscall.EINVAL) // reserved attr_data
	if err := raw(fd, cq(4, 0)); err != nil {
		t.Fatalf("well-formed CQ create: %v", err)
	}

	// struct ib_uverbs_qp_cap is 20 bytes; a 24-byte one must end in zeros.
	qp := func(capBytes []byte) error {
		r := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_CREATE).
			NewHandle(abi.UVERBS_ATTR_CREATE_QP_HANDLE).
			InU64(abi.UVERBS_ATTR_CREATE_QP_USER_HANDLE, 0).
			In(abi.UVERBS_ATTR_CREATE_QP_CAP, capBytes).
			Const(abi.UVERBS_ATTR_CREATE_QP_TYPE, abi.IB_UVERBS_QPT_UD).
			Out(abi.UVERBS_ATTR_CREATE_QP_RESP_CAP, make([]byte, 20)).
			Out(abi.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, make([]byte, 4))
		return do(fd, r)
	}
	if err := qp(make([]byte, 24)); err != nil {
		t.Fatalf("zero-tailed longer cap: %v", err)
	}
	long := make([]byte, 24)
	long[22] = 1
	wantErrno(t, qp(long), syscall.EOPNOTSUPP)
}

// Rule: object handles. Creating before GET_CONTEXT → EINVAL; an unknown
// handle → ENOENT; a handle of another type → EINVAL; a non-zero len →
// EINVAL; destroying an object still in use → EBUSY.
func TestRuleHandles(t *testing.T) {
	k, fd := open(t, mlx5, func(c *Call) error {
		if c.Method.Object == abi.UVERBS_OBJECT_COUNTERS && c.Method.Method == abi.UVERBS_METHOD_COUNTERS_READ {
			return c.Out(abi.UVERBS_ATTR_READ_COUNTERS_BUFF, make([]byte, 16), false)
		}
		return nil
	})
	_ = k
	create := func() (uint32, error) {
		r := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_CREATE).
			NewHandle(abi.UVERBS_ATTR_CREATE_COUNTERS_HANDLE)
		if err := do(fd, r); err != nil {
			return 0, err
		}
		return r.Created(abi.UVERBS_ATTR_CREATE_COUNTERS_HANDLE)
	}
	if _, err := create(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("create before GET_CONTEXT: %v, want EINVAL", err)
	}
	getContext(t, fd, abi.RDMA_DRIVER_MLX5)
	h, err := create()
	if err != nil {
		t.Fatal(err)
	}
	h2, err := create()
	if err != nil || h2 == h {
		t.Fatalf("second create: handle %d (first %d), %v", h2, h, err)
	}

	read := func(handle uint32) (*abi.Request, error) {
		r := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_READ).
			Handle(abi.UVERBS_ATTR_READ_COUNTERS_HANDLE, handle).
			Out(abi.UVERBS_ATTR_READ_COUNTERS_BUFF, make([]byte, 16))
		return r, do(fd, r)
	}
	r, err := read(h)
	if err != nil || !r.Valid(abi.UVERBS_ATTR_READ_COUNTERS_BUFF) {
		t.Fatalf("read: %v, valid=%v", err, r.Valid(abi.UVERBS_ATTR_READ_COUNTERS_BUFF))
	}
	_, err = read(999)
	wantErrno(t, err, syscall.ENOENT)

	// A CQ handle where a counters handle is expected.
	cq := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE).
		NewHandle(abi.UVERBS_ATTR_CREATE_CQ_HANDLE).InU32(abi.UVERBS_ATTR_CREATE_CQ_CQE, 16).
		InU64(abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 0).InU32(abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0).
		Out(abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE, make([]byte, 4))
	if err := do(fd, cq); err != nil {
		t.Fatal(err)
	}
	cqh, _ := cq.Created(abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	_, err = read(cqh)
	wantErrno(t, err, syscall.EINVAL)

	b := rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_DESTROY,
		abi.IoctlAttr{ID: abi.UVERBS_ATTR_DESTROY_COUNTERS_HANDLE, Len: 4, Flags: 1, Data: uint64(h)})
	wantErrno(t, raw(fd, b), syscall.EINVAL)

	destroy := func(handle uint32) error {
		return do(fd, abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_DESTROY).
			Handle(abi.UVERBS_ATTR_DESTROY_COUNTERS_HANDLE, handle))
	}
	var obj *Object
	for _, f := range k.filesList() {
		for _, o := range f.Objects() {
			if o.Handle == h && o.Type == abi.UVERBS_OBJECT_COUNTERS {
				obj = o
			}
		}
	}
	obj.Users = 1 // bound to a flow
	wantErrno(t, destroy(h), syscall.EBUSY)
	obj.Users = 0
	if err := destroy(h); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, destroy(h), syscall.ENOENT)
}

// Rule: a handler's EPROTONOSUPPORT becomes EINVAL; ErrNoHandler is
// EOPNOTSUPP; a failed create leaves no object behind.
func TestRuleHandlerErrors(t *testing.T) {
	var answer error
	k, fd := open(t, mlx5, func(c *Call) error {
		if c.Method.Object == abi.UVERBS_OBJECT_COUNTERS {
			return answer
		}
		return nil
	})
	getContext(t, fd, abi.RDMA_DRIVER_MLX5)
	create := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_CREATE).
		NewHandle(abi.UVERBS_ATTR_CREATE_COUNTERS_HANDLE)
	for _, tc := range []struct {
		answer error
		want   syscall.Errno
	}{
		{syscall.EPROTONOSUPPORT, syscall.EINVAL},
		{ErrNoHandler, syscall.EOPNOTSUPP},
		{syscall.ENOMEM, syscall.ENOMEM},
	} {
		answer = tc.answer
		wantErrno(t, do(fd, create), tc.want)
	}
	if n := len(k.filesList()[0].Objects()); n != 0 {
		t.Errorf("%d objects left after failed creates", n)
	}
}

// Rule: a disassociated device answers EIO.
func TestRuleDisassociated(t *testing.T) {
	k, fd := open(t, mlx5, nil)
	getContext(t, fd, abi.RDMA_DRIVER_MLX5)
	k.Disassociate()
	wantErrno(t, do(fd, queryPort(abi.RDMA_DRIVER_MLX5, 1)), syscall.EIO)
}

// Rule: ENUM_IN variant out of range → EOPNOTSUPP; enum reserved byte → EINVAL.
func TestRuleEnumAttributes(t *testing.T) {
	api := abi.NewAPI(abi.RDMA_DRIVER_MLX5, []abi.MethodSpec{{
		Object: abi.UVERBS_OBJECT_DEVICE, Method: abi.UVERBS_METHOD_GET_CONTEXT, Name: "TEST_ENUM",
		Attrs: []abi.AttrSpec{{ID: 0, Name: "ENUM", Kind: abi.AttrEnumIn, MinLen: 4, Len: 4, Elems: 2, Mandatory: true}},
	}})
	_, fd := open(t, Device{Name: "t", DriverID: abi.RDMA_DRIVER_MLX5, API: api}, nil)
	enum := func(attrData uint16) error {
		return raw(fd, rawRequest(abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT,
			abi.IoctlAttr{ID: 0, Len: 4, Flags: 1, AttrData: attrData}))
	}
	wantErrno(t, enum(2), syscall.EOPNOTSUPP)
	wantErrno(t, enum(1|1<<8), syscall.EINVAL)
	r := abi.NewRequest(api, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT).Enum(0, 1, []byte{1, 2, 3, 4})
	if err := do(fd, r); err != nil {
		t.Fatalf("valid enum: %v", err)
	}
}

// Descriptor attributes: ASYNC_EVENT_ALLOC creates one; an fd the file does
// not own is EBADF.
func TestFDAttributes(t *testing.T) {
	_, fd := open(t, mlx5, nil)
	getContext(t, fd, abi.RDMA_DRIVER_MLX5)
	r := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_ASYNC_EVENT, abi.UVERBS_METHOD_ASYNC_EVENT_ALLOC).
		NewFD(abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE)
	if err := do(fd, r); err != nil {
		t.Fatal(err)
	}
	efd, err := r.CreatedFD(abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE)
	if err != nil || efd < 0 {
		t.Fatalf("CreatedFD = %d, %v", efd, err)
	}
	cq := func(eventFD int) error {
		return do(fd, abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE).
			NewHandle(abi.UVERBS_ATTR_CREATE_CQ_HANDLE).InU32(abi.UVERBS_ATTR_CREATE_CQ_CQE, 16).
			InU64(abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 0).InU32(abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0).
			FD(abi.UVERBS_ATTR_CREATE_CQ_EVENT_FD, eventFD).
			Out(abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE, make([]byte, 4)))
	}
	if err := cq(efd); err != nil {
		t.Fatalf("CQ with the async fd: %v", err)
	}
	wantErrno(t, cq(efd+7), syscall.EBADF)
}

// INVOKE_WRITE carries GET_CONTEXT (write command 0) and sets up the
// context like the ioctl method does; UHW_OUT gets VALID_OUTPUT.
func TestInvokeWriteGetContext(t *testing.T) {
	var sawCmd uint64
	_, fd := open(t, mlx5, func(c *Call) error {
		sawCmd, _ = c.Value(abi.UVERBS_ATTR_WRITE_CMD)
		return nil
	})
	coreIn := make([]byte, 8)
	coreOut := make([]byte, 8)
	drvOut := make([]byte, 72)
	r := abi.InvokeWrite(nil, abi.RDMA_DRIVER_MLX5, abi.IB_USER_VERBS_CMD_GET_CONTEXT, coreIn, coreOut, make([]byte, 32), drvOut)
	if err := do(fd, r); err != nil {
		t.Fatal(err)
	}
	if sawCmd != abi.IB_USER_VERBS_CMD_GET_CONTEXT || !r.Valid(abi.UVERBS_ATTR_UHW_OUT) {
		t.Errorf("cmd %d, UHW_OUT valid %v", sawCmd, r.Valid(abi.UVERBS_ATTR_UHW_OUT))
	}
	// The context exists now: creating objects works.
	c := abi.NewRequest(nil, abi.RDMA_DRIVER_MLX5, abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_CREATE).
		NewHandle(abi.UVERBS_ATTR_CREATE_COUNTERS_HANDLE)
	if err := do(fd, c); err != nil {
		t.Fatalf("create after INVOKE_WRITE(GET_CONTEXT): %v", err)
	}
}

// HandleIoctl's hook sees every RDMA_VERBS_IOCTL, the ones the framework
// refuses included, once, with its object and method, before the fake
// locks the file: a call held in the hook does not hold up another.
func TestHandleIoctl(t *testing.T) {
	k, fd := open(t, mlx5, nil)
	type call struct{ object, method uint16 }
	seen := make(chan call, 4)
	hold := make(chan struct{})
	k.HandleIoctl(func(object, method uint16) {
		seen <- call{object, method}
		if object == abi.UVERBS_OBJECT_PD {
			<-hold
		}
	})
	held := make(chan error, 1)
	go func() { held <- raw(fd, rawRequest(mlx5.DriverID, abi.UVERBS_OBJECT_PD, abi.UVERBS_METHOD_PD_DESTROY)) }()
	if c := <-seen; c != (call{abi.UVERBS_OBJECT_PD, abi.UVERBS_METHOD_PD_DESTROY}) {
		t.Fatalf("hook saw %+v", c)
	}
	// The held call holds no lock: another call on the file goes through.
	if err := raw(fd, rawRequest(mlx5.DriverID, abi.UVERBS_OBJECT_DEVICE, 0x7777)); !errors.Is(err, syscall.EPROTONOSUPPORT) {
		t.Errorf("unknown method: %v, want EPROTONOSUPPORT", err)
	}
	if c := <-seen; c != (call{abi.UVERBS_OBJECT_DEVICE, 0x7777}) {
		t.Errorf("hook saw %+v", c)
	}
	close(hold)
	if err := <-held; !errors.Is(err, syscall.EINVAL) {
		t.Errorf("PD destroy without its handle: %v, want EINVAL", err)
	}
	k.HandleIoctl(nil)
	if err := raw(fd, rawRequest(mlx5.DriverID, abi.UVERBS_OBJECT_DEVICE, 0x7777)); !errors.Is(err, syscall.EPROTONOSUPPORT) {
		t.Errorf("unknown method: %v", err)
	}
	if len(seen) != 0 {
		t.Error("the hook ran after HandleIoctl(nil)")
	}
}
