//go:build linux

package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
)

// Sizes of the uverbs ioctl framing (struct ib_uverbs_ioctl_hdr and struct
// ib_uverbs_attr from <rdma/rdma_user_ioctl_cmds.h>).
const (
	IoctlHdrSize  = 24
	IoctlAttrSize = 16
	// MaxAttrs is the most attributes one request can carry: the kernel
	// refuses a header whose length exceeds one page (4 KiB here; larger
	// pages allow more, but no method declares anywhere near this many).
	MaxAttrs = (4096 - IoctlHdrSize) / IoctlAttrSize
	// InlineMax is the largest input payload carried inline in the
	// attribute's data field instead of by pointer.
	InlineMax = 8
	// MaxAttrLen is the largest attribute payload (the len field is a u16).
	MaxAttrLen = 0xffff
)

// Host byte order. purerdma supports little-endian 64-bit Linux (amd64,
// arm64); the UAPI structs are in host order except the fields marked
// big-endian.
var hostOrder = binary.LittleEndian

// IoctlHdr is a decoded struct ib_uverbs_ioctl_hdr.
type IoctlHdr struct {
	Length    uint16
	ObjectID  uint16
	MethodID  uint16
	NumAttrs  uint16
	Reserved1 uint64
	DriverID  uint32
	Reserved2 uint32
}

// IoctlAttr is a decoded struct ib_uverbs_attr. AttrData is the 16-bit
// attr_data union: for ENUM_IN attributes its low byte is enum_data.elem_id
// and its high byte enum_data.reserved.
type IoctlAttr struct {
	ID       uint16
	Len      uint16
	Flags    uint16
	AttrData uint16
	Data     uint64
}

// ElemID returns attr_data.enum_data.elem_id.
func (a IoctlAttr) ElemID() uint8 { return uint8(a.AttrData) }

// Inline reports whether an input payload of this length travels inside
// Data rather than behind a pointer. (Outputs always use a pointer.)
func (a IoctlAttr) Inline() bool { return a.Len <= InlineMax }

// AppendIoctlHdr appends the 24-byte wire form of h.
func AppendIoctlHdr(b []byte, h IoctlHdr) []byte {
	b = hostOrder.AppendUint16(b, h.Length)
	b = hostOrder.AppendUint16(b, h.ObjectID)
	b = hostOrder.AppendUint16(b, h.MethodID)
	b = hostOrder.AppendUint16(b, h.NumAttrs)
	b = hostOrder.AppendUint64(b, h.Reserved1)
	b = hostOrder.AppendUint32(b, h.DriverID)
	return hostOrder.AppendUint32(b, h.Reserved2)
}

// AppendIoctlAttr appends the 16-byte wire form of a.
func AppendIoctlAttr(b []byte, a IoctlAttr) []byte {
	b = hostOrder.AppendUint16(b, a.ID)
	b = hostOrder.AppendUint16(b, a.Len)
	b = hostOrder.AppendUint16(b, a.Flags)
	b = hostOrder.AppendUint16(b, a.AttrData)
	return hostOrder.AppendUint64(b, a.Data)
}

var (
	errShortHdr  = errors.New("buffer shorter than struct ib_uverbs_ioctl_hdr")
	errAttrRange = errors.New("attribute index outside the buffer")
)

// DecodeIoctlHdr decodes the header at the start of b. It checks only that
// b is long enough; the kernel's rules (length, reserved fields) are the
// caller's to apply.
func DecodeIoctlHdr(b []byte) (IoctlHdr, error) {
	if len(b) < IoctlHdrSize {
		return IoctlHdr{}, errs.New("decode ioctl header", "", errShortHdr)
	}
	return IoctlHdr{
		Length:    hostOrder.Uint16(b[0:]),
		ObjectID:  hostOrder.Uint16(b[2:]),
		MethodID:  hostOrder.Uint16(b[4:]),
		NumAttrs:  hostOrder.Uint16(b[6:]),
		Reserved1: hostOrder.Uint64(b[8:]),
		DriverID:  hostOrder.Uint32(b[16:]),
		Reserved2: hostOrder.Uint32(b[20:]),
	}, nil
}

// DecodeIoctlAttr decodes attribute i of the request (or response) in b,
// which starts with the header. It does not allocate.
func DecodeIoctlAttr(b []byte, i int) (IoctlAttr, error) {
	// i is compared before it is multiplied: i*IoctlAttrSize wraps for a
	// large enough i, and the wrapped offset could land inside b.
	if i < 0 || len(b) < IoctlHdrSize || i >= (len(b)-IoctlHdrSize)/IoctlAttrSize {
		return IoctlAttr{}, errs.New("decode ioctl attribute", "", errAttrRange)
	}
	off := IoctlHdrSize + i*IoctlAttrSize
	a := b[off : off+IoctlAttrSize]
	return IoctlAttr{
		ID:       hostOrder.Uint16(a[0:]),
		Len:      hostOrder.Uint16(a[2:]),
		Flags:    hostOrder.Uint16(a[4:]),
		AttrData: hostOrder.Uint16(a[6:]),
		Data:     hostOrder.Uint64(a[8:]),
	}, nil
}

// ParseIoctl decodes a whole request or response buffer: the header and the
// NumAttrs attributes that follow it. It fails when b is shorter than the
// header says; it does not judge the header's Length field, which is what
// the kernel checks first (see internal/testmodel/fakekernel).
func ParseIoctl(b []byte) (IoctlHdr, []IoctlAttr, error) {
	h, err := DecodeIoctlHdr(b)
	if err != nil {
		return h, nil, err
	}
	need := IoctlHdrSize + int(h.NumAttrs)*IoctlAttrSize
	if len(b) < need {
		return h, nil, errs.New("decode ioctl request", "", fmt.Errorf("%d attributes need %d bytes, have %d", h.NumAttrs, need, len(b)))
	}
	attrs := make([]IoctlAttr, h.NumAttrs)
	for i := range attrs {
		attrs[i], _ = DecodeIoctlAttr(b, i)
	}
	return h, attrs, nil
}

// Error is purerdma's one error type (rdma.Error); abi's carry an
// operation (such as building a request for a method) and what was wrong.
// Builder errors wrap syscall.EINVAL, the errno the kernel would have
// answered.
type Error = rdma.Error

// builder kinds: what the caller asked for, checked against the method table.
type buildKind uint8

const (
	buildIn buildKind = iota + 1
	buildConst
	buildFlags
	buildEnum
	buildOut
	buildHandle
	buildNewHandle
	buildFD
	buildNewFD
	buildHandles
)

// Request builds one RDMA_VERBS_IOCTL call: a header followed by attributes,
// in a single writable buffer the kernel also writes results back into
// (VALID_OUTPUT flags, new handles, new descriptors).
//
// Attributes are MANDATORY unless Optional is called for them (the rdma-core
// convention). Errors are sticky: the first mistake is kept, later calls do
// nothing, and Marshal reports it. A Request can be Reset and reused; in
// steady state that allocates nothing.
//
// Memory passed by pointer (inputs longer than 8 bytes, output buffers) is
// referenced from the Request, so it is heap-allocated and kept alive while
// the Request is; pass the Request as a keep argument of the ioctl call.
type Request struct {
	hdr    IoctlHdr
	spec   *MethodSpec
	api    *API
	attrs  []IoctlAttr
	kinds  []buildKind
	keep   []unsafe.Pointer
	buf    []byte
	err    error
	called bool
}

// NewRequest starts a request for (object, method) on a device whose driver
// is driverID (enum rdma_driver_id). api, when not nil, is the method table
// the request is checked against; with nil the request is checked against
// APIFor(driverID).
func NewRequest(api *API, driverID uint32, object, method uint16) *Request {
	r := &Request{}
	r.Reset(api, driverID, object, method)
	return r
}

// Reset empties r for a new call, keeping its buffers. A request reset
// for the method it was last built for keeps that method's spec without
// looking it up again (pooled requests are reused for the same calls).
func (r *Request) Reset(api *API, driverID uint32, object, method uint16) {
	if api == nil {
		api = APIFor(driverID)
	}
	if r.spec == nil || r.api != api || r.hdr.ObjectID != object || r.hdr.MethodID != method || r.hdr.DriverID != driverID {
		r.spec = api.Method(object, method)
	}
	r.api = api
	r.hdr = IoctlHdr{ObjectID: object, MethodID: method, DriverID: driverID}
	r.release()
}

// Release drops what r holds of the last call's buffers (a pooled request
// must not keep them alive) and keeps its method, for a Reset to the same
// method.
func (r *Request) Release() {
	r.hdr.Length, r.hdr.NumAttrs = 0, 0
	r.release()
}

func (r *Request) release() {
	r.attrs = r.attrs[:0]
	r.kinds = r.kinds[:0]
	clear(r.keep)
	r.keep = r.keep[:0]
	r.buf = r.buf[:0]
	r.err = nil
	r.called = false
}

// Name names the method for messages: its UAPI name when the table knows
// it, else the numbers.
func (r *Request) Name() string {
	if r.spec != nil {
		return r.spec.Name
	}
	return fmt.Sprintf("object %#x method %#x", r.hdr.ObjectID, r.hdr.MethodID)
}

// Err returns the first error recorded while building.
func (r *Request) Err() error { return r.err }

func (r *Request) fail(format string, args ...any) {
	if r.err == nil {
		r.err = errs.New("build "+r.Name(), "", fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...))
	}
}

func (r *Request) add(k buildKind, a IoctlAttr) {
	if r.err != nil {
		return
	}
	if len(r.attrs) >= MaxAttrs {
		r.fail("more than %d attributes", MaxAttrs)
		return
	}
	for _, old := range r.attrs {
		if old.ID == a.ID {
			r.fail("attribute %#x given twice", a.ID)
			return
		}
	}
	if r.spec != nil {
		if s := r.spec.Attr(a.ID); s != nil {
			if err := s.accepts(k, a.Len); err != "" {
				r.fail("attribute %s: %s", s.Name, err)
				return
			}
		}
	}
	a.Flags |= UVERBS_ATTR_F_MANDATORY
	r.attrs = append(r.attrs, a)
	r.kinds = append(r.kinds, k)
}

func (r *Request) ptr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	r.keep = append(r.keep, p)
	return uint64(uintptr(p))
}

func inline(b []byte) uint64 {
	var v [8]byte
	copy(v[:], b)
	return hostOrder.Uint64(v[:])
}

func (r *Request) in(k buildKind, id uint16, data []byte, attrData uint16) {
	if len(data) > MaxAttrLen {
		r.fail("attribute %#x: %d bytes is longer than %d", id, len(data), MaxAttrLen)
		return
	}
	a := IoctlAttr{ID: id, Len: uint16(len(data)), AttrData: attrData}
	if len(data) <= InlineMax {
		a.Data = inline(data)
	} else {
		a.Data = r.ptr(data)
	}
	r.add(k, a)
}

// In adds a PTR_IN attribute: data travels inline when it is at most 8
// bytes long, otherwise by pointer (data must not change until the call
// returns).
func (r *Request) In(id uint16, data []byte) *Request {
	r.in(buildIn, id, data, 0)
	return r
}

// InU32 adds a 4-byte PTR_IN attribute (an exact-size u32 such as a CQE
// count), inline.
func (r *Request) InU32(id uint16, v uint32) *Request {
	r.add(buildIn, IoctlAttr{ID: id, Len: 4, Data: uint64(v)})
	return r
}

// InU64 adds an 8-byte PTR_IN attribute, inline.
func (r *Request) InU64(id uint16, v uint64) *Request {
	r.add(buildIn, IoctlAttr{ID: id, Len: 8, Data: v})
	return r
}

// Const adds a CONST_IN attribute: always an 8-byte inline value; the
// kernel range-checks it against the declared C type.
func (r *Request) Const(id uint16, v uint64) *Request {
	r.add(buildConst, IoctlAttr{ID: id, Len: 8, Data: v})
	return r
}

// Flags adds a FLAGS_IN attribute as an 8-byte inline value.
func (r *Request) Flags(id uint16, v uint64) *Request {
	r.add(buildFlags, IoctlAttr{ID: id, Len: 8, Data: v})
	return r
}

// Flags32 adds a FLAGS_IN attribute as a 4-byte inline value (what
// rdma-core sends for the counters read flags).
func (r *Request) Flags32(id uint16, v uint32) *Request {
	r.add(buildFlags, IoctlAttr{ID: id, Len: 4, Data: uint64(v)})
	return r
}

// Enum adds an ENUM_IN attribute: variant elem with payload data (inline
// up to 8 bytes).
func (r *Request) Enum(id uint16, elem uint8, data []byte) *Request {
	r.in(buildEnum, id, data, uint16(elem))
	return r
}

// Out adds a PTR_OUT attribute: the kernel writes up to len(buf) bytes into
// buf (always by pointer, whatever the size) and sets VALID_OUTPUT; see
// Valid.
func (r *Request) Out(id uint16, buf []byte) *Request {
	if len(buf) > MaxAttrLen {
		r.fail("attribute %#x: %d-byte output is longer than %d", id, len(buf), MaxAttrLen)
		return r
	}
	r.add(buildOut, IoctlAttr{ID: id, Len: uint16(len(buf)), Data: r.ptr(buf)})
	return r
}

// Handle adds an IDR attribute naming an existing object (read, write or
// destroy access, as the method declares).
func (r *Request) Handle(id uint16, handle uint32) *Request {
	r.add(buildHandle, IoctlAttr{ID: id, Data: uint64(handle)})
	return r
}

// NewHandle adds an IDR attribute for the object the call creates; read
// the handle with Created after the call.
func (r *Request) NewHandle(id uint16) *Request {
	r.add(buildNewHandle, IoctlAttr{ID: id})
	return r
}

// FD adds an FD attribute naming an open descriptor.
func (r *Request) FD(id uint16, fd int) *Request {
	if fd < 0 {
		r.fail("attribute %#x: negative descriptor %d", id, fd)
		return r
	}
	r.add(buildFD, IoctlAttr{ID: id, Data: uint64(fd)})
	return r
}

// NewFD adds an FD attribute for the descriptor the call creates; read it
// with CreatedFD after the call.
func (r *Request) NewFD(id uint16) *Request {
	r.add(buildNewFD, IoctlAttr{ID: id})
	return r
}

// Handles adds an IDRS_ARRAY attribute (inline when it holds at most two
// handles). The slice must not change until the call returns.
func (r *Request) Handles(id uint16, handles []uint32) *Request {
	if len(handles)*4 > MaxAttrLen {
		r.fail("attribute %#x: %d handles are too many", id, len(handles))
		return r
	}
	a := IoctlAttr{ID: id, Len: uint16(4 * len(handles))}
	switch {
	case len(handles) == 0:
	case a.Len <= InlineMax:
		a.Data = uint64(handles[0])
		if len(handles) == 2 {
			a.Data |= uint64(handles[1]) << 32
		}
	default:
		p := unsafe.Pointer(unsafe.SliceData(handles))
		r.keep = append(r.keep, p)
		a.Data = uint64(uintptr(p))
	}
	r.add(buildHandles, a)
	return r
}

// Optional clears the MANDATORY flag of attribute id, so a kernel that
// does not know it ignores it instead of failing with EPROTONOSUPPORT.
func (r *Request) Optional(id uint16) *Request {
	for i := range r.attrs {
		if r.attrs[i].ID == id {
			r.attrs[i].Flags &^= UVERBS_ATTR_F_MANDATORY
			return r
		}
	}
	r.fail("Optional(%#x): no such attribute", id)
	return r
}

// Marshal checks the request against the method table (every mandatory
// attribute present) and returns the wire buffer: header then attributes.
// The buffer belongs to r; pass r as a keep argument of the ioctl and read
// results back through r.
func (r *Request) Marshal() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.spec != nil {
		for i := range r.spec.Attrs {
			s := &r.spec.Attrs[i]
			if s.Mandatory && r.index(s.ID) < 0 {
				r.fail("mandatory attribute %s missing", s.Name)
				return nil, r.err
			}
		}
	}
	r.hdr.NumAttrs = uint16(len(r.attrs))
	r.hdr.Length = uint16(IoctlHdrSize + IoctlAttrSize*len(r.attrs))
	r.buf = AppendIoctlHdr(r.buf[:0], r.hdr)
	for _, a := range r.attrs {
		r.buf = AppendIoctlAttr(r.buf, a)
	}
	r.called = true
	return r.buf, nil
}

func (r *Request) index(id uint16) int {
	for i := range r.attrs {
		if r.attrs[i].ID == id {
			return i
		}
	}
	return -1
}

// Response decoding: after the ioctl returned, the kernel's write-backs are
// read out of the marshalled buffer.

func (r *Request) result(id uint16, want ...buildKind) (IoctlAttr, error) {
	i := r.index(id)
	if i < 0 || !r.called {
		return IoctlAttr{}, errs.New("decode "+r.Name(), "", fmt.Errorf("attribute %#x was not sent", id))
	}
	ok := false
	for _, k := range want {
		ok = ok || r.kinds[i] == k
	}
	if !ok {
		return IoctlAttr{}, errs.New("decode "+r.Name(), "", fmt.Errorf("attribute %#x is not of the kind asked for", id))
	}
	return DecodeIoctlAttr(r.buf, i)
}

// Valid reports whether the kernel filled output attribute id: it sets
// UVERBS_ATTR_F_VALID_OUTPUT in the caller's attribute array for every
// output it wrote.
func (r *Request) Valid(id uint16) bool {
	a, err := r.result(id, buildOut)
	return err == nil && a.Flags&UVERBS_ATTR_F_VALID_OUTPUT != 0
}

// Created returns the handle the kernel wrote back into NewHandle
// attribute id.
func (r *Request) Created(id uint16) (uint32, error) {
	a, err := r.result(id, buildNewHandle)
	if err != nil {
		return 0, err
	}
	if a.Data > 0xffffffff {
		return 0, errs.New("decode "+r.Name(), "", fmt.Errorf("kernel returned handle %#x, wider than 32 bits", a.Data))
	}
	return uint32(a.Data), nil
}

// CreatedFD returns the descriptor the kernel wrote back into NewFD
// attribute id. The caller owns it.
func (r *Request) CreatedFD(id uint16) (int, error) {
	a, err := r.result(id, buildNewFD)
	if err != nil {
		return -1, err
	}
	fd := int64(a.Data)
	if fd < 0 || fd > 1<<31-1 {
		return -1, errs.New("decode "+r.Name(), "", fmt.Errorf("kernel returned descriptor %d", fd))
	}
	return int(fd), nil
}

// Header returns the header as it will be (or was) sent.
func (r *Request) Header() IoctlHdr { return r.hdr }

// InvokeWrite builds UVERBS_METHOD_INVOKE_WRITE: a legacy write() command
// (cmd, with IB_USER_VERBS_CMD_FLAG_EXTENDED for ex commands) carried over
// the ioctl path. coreIn is the command's request struct without the
// cmd_hdr/ex_cmd_hdr (for non-ex commands it still begins with the ignored
// response u64); coreOut receives the core response; driverIn and
// driverOut are the provider's udata. Empty slices are left out.
func InvokeWrite(api *API, driverID uint32, cmd uint32, coreIn, coreOut, driverIn, driverOut []byte) *Request {
	r := NewRequest(api, driverID, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE)
	r.Const(UVERBS_ATTR_WRITE_CMD, uint64(cmd))
	if len(coreIn) > 0 {
		r.In(UVERBS_ATTR_CORE_IN, coreIn)
	}
	if len(coreOut) > 0 {
		r.Out(UVERBS_ATTR_CORE_OUT, coreOut)
	}
	if len(driverIn) > 0 {
		r.In(UVERBS_ATTR_UHW_IN, driverIn)
	}
	if len(driverOut) > 0 {
		r.Out(UVERBS_ATTR_UHW_OUT, driverOut)
	}
	return r
}
