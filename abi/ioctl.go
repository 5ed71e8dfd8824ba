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

// The UAPI structs are in host order except the fields marked big-endian,
// and purerdma supports little-endian 64-bit Linux (amd64, arm64): the
// encoders use binary.LittleEndian. Not through a package variable: one
// holding binary.LittleEndian gives the package an init function, which
// every program start runs, faulting a page of text in for it
// (docs/performance.md, "Per tool").

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
	b = binary.LittleEndian.AppendUint16(b, h.Length)
	b = binary.LittleEndian.AppendUint16(b, h.ObjectID)
	b = binary.LittleEndian.AppendUint16(b, h.MethodID)
	b = binary.LittleEndian.AppendUint16(b, h.NumAttrs)
	b = binary.LittleEndian.AppendUint64(b, h.Reserved1)
	b = binary.LittleEndian.AppendUint32(b, h.DriverID)
	return binary.LittleEndian.AppendUint32(b, h.Reserved2)
}

// AppendIoctlAttr appends the 16-byte wire form of a.
func AppendIoctlAttr(b []byte, a IoctlAttr) []byte {
	b = binary.LittleEndian.AppendUint16(b, a.ID)
	b = binary.LittleEndian.AppendUint16(b, a.Len)
	b = binary.LittleEndian.AppendUint16(b, a.Flags)
	b = binary.LittleEndian.AppendUint16(b, a.AttrData)
	return binary.LittleEndian.AppendUint64(b, a.Data)
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
		Length:    binary.LittleEndian.Uint16(b[0:]),
		ObjectID:  binary.LittleEndian.Uint16(b[2:]),
		MethodID:  binary.LittleEndian.Uint16(b[4:]),
		NumAttrs:  binary.LittleEndian.Uint16(b[6:]),
		Reserved1: binary.LittleEndian.Uint64(b[8:]),
		DriverID:  binary.LittleEndian.Uint32(b[16:]),
		Reserved2: binary.LittleEndian.Uint32(b[20:]),
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
		ID:       binary.LittleEndian.Uint16(a[0:]),
		Len:      binary.LittleEndian.Uint16(a[2:]),
		Flags:    binary.LittleEndian.Uint16(a[4:]),
		AttrData: binary.LittleEndian.Uint16(a[6:]),
		Data:     binary.LittleEndian.Uint64(a[8:]),
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

// inlineAttrs is how many attributes a Request holds in place, right after
// its header, in the layout the kernel reads: every method this module
// calls fits. Requests with more keep the rest aside and are copied into
// one buffer when called.
const inlineAttrs = 16

// Request builds one RDMA_VERBS_IOCTL call: a header followed by attributes,
// in a single writable buffer the kernel also writes results back into
// (VALID_OUTPUT flags, new handles, new descriptors).
//
// Attributes are MANDATORY unless Optional is called for them (the rdma-core
// convention). Errors are sticky: the first mistake is kept and Marshal
// (and Err) report it. A Request can be Reset and reused; in steady state
// that allocates nothing.
//
// The header and the first attributes are built in place, in the
// kernel's layout (IoctlHdr and IoctlAttr have the layout of struct
// ib_uverbs_ioctl_hdr and struct ib_uverbs_attr on the little-endian hosts
// purerdma supports), so a call needs no encoding step. The check against
// the method table is made by Marshal and Err; MarshalUnchecked leaves it
// for Explain to make after the kernel refused the call.
//
// Memory passed by pointer (inputs longer than 8 bytes, output buffers) is
// referenced from the Request, so it is heap-allocated and kept alive while
// the Request is; keep the Request alive until the ioctl returns.
type Request struct {
	hdr   IoctlHdr
	inl   [inlineAttrs]IoctlAttr // must follow hdr: the two are the wire form
	kinds [inlineAttrs]buildKind
	keep  [inlineAttrs]unsafe.Pointer

	// Attributes past inlineAttrs, and the wire buffer a request with
	// them is copied into when called.
	more     []IoctlAttr
	moreKind []buildKind
	moreKeep []unsafe.Pointer
	buf      []byte
	spilled  bool // buf holds the wire form of the last call

	api     *API // nil: APIFor(hdr.DriverID), looked up when needed
	spec    *MethodSpec
	specAPI *API   // spec was looked up for api specAPI
	specKey uint64 // and the method specKey (specKeyOf), when specOK
	specOK  bool

	// err is the first error: a structural one (too long, too many, a
	// negative descriptor, Optional of a missing attribute) recorded as
	// the builder call is made, at errAt attributes; or the method
	// table's, found by check.
	err     error
	errAt   int
	checked bool // check ran since the last attribute was added
	called  bool
}

// The wire form is the Request's first bytes: the header, then the
// attributes with no padding between them.
const (
	_ = uint(unsafe.Offsetof(Request{}.inl) - IoctlHdrSize)
	_ = uint(IoctlHdrSize - unsafe.Offsetof(Request{}.inl))
	_ = uint(unsafe.Sizeof(IoctlHdr{}) - IoctlHdrSize)
	_ = uint(IoctlHdrSize - unsafe.Sizeof(IoctlHdr{}))
	_ = uint(unsafe.Sizeof(IoctlAttr{}) - IoctlAttrSize)
	_ = uint(IoctlAttrSize - unsafe.Sizeof(IoctlAttr{}))
)

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
	if r.hdr.NumAttrs != 0 || r.called || r.err != nil {
		r.release() // not released since its last use
	}
	if r.api != api {
		r.api = api
	}
	r.hdr = IoctlHdr{ObjectID: object, MethodID: method, DriverID: driverID}
}

// Release drops what r holds of the last call's buffers (a pooled request
// must not keep them alive) and keeps its method, for a Reset to the same
// method.
func (r *Request) Release() {
	if r.hdr.NumAttrs != 0 || r.called || r.err != nil {
		r.release()
	}
	r.hdr.Length = 0
}

func (r *Request) release() {
	n := int(r.hdr.NumAttrs)
	if n > inlineAttrs {
		n = inlineAttrs
	}
	for i := 0; i < n; i++ {
		if r.keep[i] != nil {
			r.keep[i] = nil // a loop: clear of a pointer slice is a bulk-barrier call
		}
	}
	if r.more != nil {
		clear(r.moreKeep)
		r.more, r.moreKind, r.moreKeep = r.more[:0], r.moreKind[:0], r.moreKeep[:0]
	}
	r.hdr.NumAttrs = 0
	r.spilled = false
	if r.err != nil {
		r.err, r.errAt = nil, 0
	}
	r.checked, r.called = false, false
}

// method returns the spec of r's method, or nil when the table does not
// have it.
func (r *Request) method() *MethodSpec {
	key := specKeyOf(r.hdr)
	if !r.specOK || r.specAPI != r.api || r.specKey != key {
		api := r.api
		if api == nil {
			api = APIFor(r.hdr.DriverID)
		}
		r.spec = api.Method(r.hdr.ObjectID, r.hdr.MethodID)
		r.specAPI, r.specKey, r.specOK = r.api, key, true
	}
	return r.spec
}

// methodKey identifies the method a header calls, on its driver.
func specKeyOf(h IoctlHdr) uint64 {
	return uint64(h.ObjectID) | uint64(h.MethodID)<<16 | uint64(h.DriverID)<<32
}

// Name names the method for messages: its UAPI name when the table knows
// it, else the numbers.
func (r *Request) Name() string {
	if s := r.method(); s != nil {
		return s.Name
	}
	return fmt.Sprintf("object %#x method %#x", r.hdr.ObjectID, r.hdr.MethodID)
}

// Err returns the first error made while building: a structural one, or
// an attribute the method table does not accept.
func (r *Request) Err() error { return r.check() }

func (r *Request) fail(format string, args ...any) {
	if r.err == nil {
		r.err = r.newErr(format, args...)
		r.errAt = r.count()
	}
}

func (r *Request) newErr(format string, args ...any) error {
	return errs.New("build "+r.Name(), "", fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...))
}

// count returns the number of attributes added.
func (r *Request) count() int { return int(r.hdr.NumAttrs) }

// at returns attribute i as built (not as the kernel wrote it back into
// a spilled request's buffer; see wire).
func (r *Request) at(i int) *IoctlAttr {
	if i < inlineAttrs {
		return &r.inl[i]
	}
	return &r.more[i-inlineAttrs]
}

func (r *Request) kind(i int) buildKind {
	if i < inlineAttrs {
		return r.kinds[i]
	}
	return r.moreKind[i-inlineAttrs]
}

// put adds an attribute, MANDATORY, with the memory behind its data (nil
// for inline data). Its common case, one of the first inlineAttrs
// attributes of a request without error, is inlined into the builder
// methods: three stores and the count.
func (r *Request) put(k buildKind, a IoctlAttr, p unsafe.Pointer) {
	r.put1(k, a.ID, a.Len, a.AttrData, a.Data, p)
}

// put1 is put with the attribute's fields as arguments: the common case
// writes the attribute as two words, in place.
func (r *Request) put1(k buildKind, id, length, attrData uint16, data uint64, p unsafe.Pointer) {
	i := uint(r.hdr.NumAttrs)
	if i >= inlineAttrs || r.err != nil {
		r.putMore(k, IoctlAttr{ID: id, Len: length, AttrData: attrData, Data: data}, p)
		return
	}
	// The wire layout on the little-endian hosts purerdma supports: id,
	// len, flags, attr_data, then data.
	w := (*[2]uint64)(unsafe.Pointer(&r.inl[i]))
	w[0] = uint64(id) | uint64(length)<<16 | UVERBS_ATTR_F_MANDATORY<<32 | uint64(attrData)<<48
	w[1] = data
	r.kinds[i] = k
	if p != nil {
		r.keep[i] = p
	}
	r.hdr.NumAttrs = uint16(i + 1)
	r.checked = false
}

// putMore is put past the inline attributes, or after an error.
func (r *Request) putMore(k buildKind, a IoctlAttr, p unsafe.Pointer) {
	if r.err != nil {
		return
	}
	i := int(r.hdr.NumAttrs)
	if i >= MaxAttrs {
		r.fail("more than %d attributes", MaxAttrs)
		return
	}
	a.Flags |= UVERBS_ATTR_F_MANDATORY
	r.more = append(r.more, a)
	r.moreKind = append(r.moreKind, k)
	r.moreKeep = append(r.moreKeep, p)
	r.hdr.NumAttrs++
	r.checked = false
}

// check checks the attributes against the method table, once per shape:
// no attribute twice, each of the kind and size its declaration allows,
// every mandatory one present. It returns the first error, the method
// table's or a structural one recorded while building, whichever came
// first.
func (r *Request) check() error {
	if r.checked {
		return r.err
	}
	r.checked = true
	n := r.count()
	if r.err != nil {
		n = r.errAt
	}
	spec := r.method()
	for i := 0; i < n; i++ {
		a := r.at(i)
		for j := 0; j < i; j++ {
			if r.at(j).ID == a.ID {
				r.err = r.newErr("attribute %#x given twice", a.ID)
				return r.err
			}
		}
		if spec == nil {
			continue
		}
		if s := spec.Attr(a.ID); s != nil {
			if msg := s.accepts(r.kind(i), a.Len); msg != "" {
				r.err = r.newErr("attribute %s: %s", s.Name, msg)
				return r.err
			}
		}
	}
	if r.err != nil || spec == nil {
		return r.err
	}
	for i := range spec.Attrs {
		s := &spec.Attrs[i]
		if s.Mandatory && r.index(s.ID) < 0 {
			r.err = r.newErr("mandatory attribute %s missing", s.Name)
			return r.err
		}
	}
	return nil
}

func (r *Request) ptr(b []byte) (uint64, unsafe.Pointer) {
	if len(b) == 0 {
		return 0, nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	return uint64(uintptr(p)), p
}

func inline(b []byte) uint64 {
	var v [8]byte
	copy(v[:], b)
	return binary.LittleEndian.Uint64(v[:])
}

func (r *Request) in(k buildKind, id uint16, data []byte, attrData uint16) {
	if len(data) > MaxAttrLen {
		r.failLong(id, len(data), " bytes")
		return
	}
	if len(data) <= InlineMax {
		r.put1(k, id, uint16(len(data)), attrData, inline(data), nil)
		return
	}
	d, p := r.ptr(data)
	r.put1(k, id, uint16(len(data)), attrData, d, p)
}

// failLong records an attribute longer than MaxAttrLen.
func (r *Request) failLong(id uint16, n int, what string) {
	r.fail("attribute %#x: %d%s is longer than %d", id, n, what, MaxAttrLen)
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
	r.put1(buildIn, id, 4, 0, uint64(v), nil)
	return r
}

// InU64 adds an 8-byte PTR_IN attribute, inline.
func (r *Request) InU64(id uint16, v uint64) *Request {
	r.put1(buildIn, id, 8, 0, v, nil)
	return r
}

// Const adds a CONST_IN attribute: always an 8-byte inline value; the
// kernel range-checks it against the declared C type.
func (r *Request) Const(id uint16, v uint64) *Request {
	r.put1(buildConst, id, 8, 0, v, nil)
	return r
}

// Flags adds a FLAGS_IN attribute as an 8-byte inline value.
func (r *Request) Flags(id uint16, v uint64) *Request {
	r.put1(buildFlags, id, 8, 0, v, nil)
	return r
}

// Flags32 adds a FLAGS_IN attribute as a 4-byte inline value (what
// rdma-core sends for the counters read flags).
func (r *Request) Flags32(id uint16, v uint32) *Request {
	r.put1(buildFlags, id, 4, 0, uint64(v), nil)
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
		r.failLong(id, len(buf), "-byte output")
		return r
	}
	d, p := r.ptr(buf)
	r.put1(buildOut, id, uint16(len(buf)), 0, d, p)
	return r
}

// Handle adds an IDR attribute naming an existing object (read, write or
// destroy access, as the method declares).
func (r *Request) Handle(id uint16, handle uint32) *Request {
	r.put1(buildHandle, id, 0, 0, uint64(handle), nil)
	return r
}

// NewHandle adds an IDR attribute for the object the call creates; read
// the handle with Created after the call.
func (r *Request) NewHandle(id uint16) *Request {
	r.put1(buildNewHandle, id, 0, 0, 0, nil)
	return r
}

// FD adds an FD attribute naming an open descriptor.
func (r *Request) FD(id uint16, fd int) *Request {
	if fd < 0 {
		r.fail("attribute %#x: negative descriptor %d", id, fd)
		return r
	}
	r.put1(buildFD, id, 0, 0, uint64(fd), nil)
	return r
}

// NewFD adds an FD attribute for the descriptor the call creates; read it
// with CreatedFD after the call.
func (r *Request) NewFD(id uint16) *Request {
	r.put1(buildNewFD, id, 0, 0, 0, nil)
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
	var p unsafe.Pointer
	switch {
	case len(handles) == 0:
	case a.Len <= InlineMax:
		a.Data = uint64(handles[0])
		if len(handles) == 2 {
			a.Data |= uint64(handles[1]) << 32
		}
	default:
		p = unsafe.Pointer(unsafe.SliceData(handles))
		a.Data = uint64(uintptr(p))
	}
	r.put(buildHandles, a, p)
	return r
}

// Optional clears the MANDATORY flag of attribute id, so a kernel that
// does not know it ignores it instead of failing with EPROTONOSUPPORT.
func (r *Request) Optional(id uint16) *Request {
	if r.err != nil {
		return r
	}
	if i := r.index(id); i >= 0 {
		r.at(i).Flags &^= UVERBS_ATTR_F_MANDATORY
		return r
	}
	r.fail("Optional(%#x): no such attribute", id)
	return r
}

// Marshal checks the request against the method table (every mandatory
// attribute present) and returns the wire buffer: header then attributes.
// The buffer belongs to r; keep r alive until the ioctl returns and read
// results back through r.
func (r *Request) Marshal() ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	return r.MarshalUnchecked()
}

// MarshalUnchecked is Marshal without the check against the method table,
// for a caller that issues the ioctl at once and, when the kernel refuses
// it, asks Explain why: the kernel makes the same checks, so a request
// the table would refuse fails there too. Structural errors (see Err) are
// still reported.
func (r *Request) MarshalUnchecked() ([]byte, error) {
	n := uint(r.hdr.NumAttrs)
	if n > inlineAttrs || r.err != nil {
		return r.marshalMore()
	}
	r.hdr.Length = uint16(IoctlHdrSize + IoctlAttrSize*n)
	r.called, r.spilled = true, false
	return unsafe.Slice((*byte)(unsafe.Pointer(&r.hdr)), IoctlHdrSize+IoctlAttrSize*n), nil
}

// marshalMore is MarshalUnchecked for a request with more attributes
// than it holds in place, or with an error.
func (r *Request) marshalMore() ([]byte, error) {
	if r.err != nil {
		return nil, r.check()
	}
	n := r.count()
	r.hdr.Length = uint16(IoctlHdrSize + IoctlAttrSize*n)
	r.called = true
	r.buf = AppendIoctlHdr(r.buf[:0], r.hdr)
	for i := 0; i < n; i++ {
		r.buf = AppendIoctlAttr(r.buf, *r.at(i))
	}
	r.spilled = true
	return r.buf, nil
}

// Explain returns the error of a call of r that failed with err: the
// request's own error, when the method table does not accept it (see Err),
// else err.
func (r *Request) Explain(err error) error {
	if cerr := r.check(); cerr != nil {
		return cerr
	}
	return err
}

func (r *Request) index(id uint16) int {
	n := r.count()
	for i := 0; i < n; i++ {
		if r.at(i).ID == id {
			return i
		}
	}
	return -1
}

// Response decoding: after the ioctl returned, the kernel's write-backs are
// read out of the request.

// wire returns attribute i as the kernel left it.
func (r *Request) wire(i int) IoctlAttr {
	if r.spilled {
		a, _ := DecodeIoctlAttr(r.buf, i)
		return a
	}
	return *r.at(i)
}

func (r *Request) result(id uint16, want, alt buildKind) (IoctlAttr, error) {
	i := r.index(id)
	if i < 0 || !r.called {
		return IoctlAttr{}, errs.New("decode "+r.Name(), "", fmt.Errorf("attribute %#x was not sent", id))
	}
	if k := r.kind(i); k != want && k != alt {
		return IoctlAttr{}, errs.New("decode "+r.Name(), "", fmt.Errorf("attribute %#x is not of the kind asked for", id))
	}
	return r.wire(i), nil
}

// Valid reports whether the kernel filled output attribute id: it sets
// UVERBS_ATTR_F_VALID_OUTPUT in the caller's attribute array for every
// output it wrote.
func (r *Request) Valid(id uint16) bool {
	a, err := r.result(id, buildOut, buildOut)
	return err == nil && a.Flags&UVERBS_ATTR_F_VALID_OUTPUT != 0
}

// Created returns the handle the kernel wrote back into NewHandle
// attribute id.
func (r *Request) Created(id uint16) (uint32, error) {
	a, err := r.result(id, buildNewHandle, buildNewHandle)
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
	a, err := r.result(id, buildNewFD, buildNewFD)
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
