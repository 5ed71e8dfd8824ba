package fakekernel

import (
	"encoding/binary"
	"errors"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
)

// Call is one method invocation the framework accepted, as a Handler sees
// it.
type Call struct {
	// File is the open file the call came in on.
	File *File
	// Method is the method's declaration.
	Method *abi.MethodSpec
	// Header is the request header.
	Header abi.IoctlHdr

	user    []byte // the caller's header and attribute array
	present []present
	created []*Object
}

type present struct {
	spec *abi.AttrSpec
	idx  int // index in the caller's attribute array
	attr abi.IoctlAttr
	obj  *Object   // IDR / FD
	objs []*Object // IDRS_ARRAY
}

func (c *Call) find(id uint16) *present {
	for i := range c.present {
		if c.present[i].attr.ID == id {
			return &c.present[i]
		}
	}
	return nil
}

// Has reports whether attribute id was supplied (and known to the method).
func (c *Call) Has(id uint16) bool { return c.find(id) != nil }

// Attr returns attribute id as the caller sent it.
func (c *Call) Attr(id uint16) (abi.IoctlAttr, bool) {
	if p := c.find(id); p != nil {
		return p.attr, true
	}
	return abi.IoctlAttr{}, false
}

// In returns the payload of input attribute id (inline or behind its
// pointer). The slice aliases the caller's memory; copy it to keep it.
func (c *Call) In(id uint16) ([]byte, bool) {
	p := c.find(id)
	if p == nil {
		return nil, false
	}
	return payload(c.user, p.idx, p.attr), true
}

func payload(user []byte, idx int, a abi.IoctlAttr) []byte {
	if a.Inline() {
		off := abi.IoctlHdrSize + idx*abi.IoctlAttrSize + 8
		return user[off : off+int(a.Len)]
	}
	return userBytes(a.Data, int(a.Len))
}

// Value returns the inline value of a CONST_IN or FLAGS_IN attribute.
func (c *Call) Value(id uint16) (uint64, bool) {
	p := c.find(id)
	if p == nil {
		return 0, false
	}
	if p.attr.Len == 4 {
		return p.attr.Data & 0xffffffff, true
	}
	return p.attr.Data, true
}

// Object returns the object an IDR or FD attribute names (for a "new"
// attribute, the object being created).
func (c *Call) Object(id uint16) *Object {
	if p := c.find(id); p != nil {
		return p.obj
	}
	return nil
}

// Objects returns the objects of an IDRS_ARRAY attribute.
func (c *Call) Objects(id uint16) []*Object {
	if p := c.find(id); p != nil {
		return p.objs
	}
	return nil
}

// OutLen returns the length of output buffer id, or -1 when absent.
func (c *Call) OutLen(id uint16) int {
	if p := c.find(id); p != nil && p.spec.Kind == abi.AttrPtrOut {
		return int(p.attr.Len)
	}
	return -1
}

// Out writes data into output attribute id the way uverbs_copy_to does:
// min(len, len(data)) bytes are copied, and VALID_OUTPUT is set in the
// caller's attribute array. With zeroFill, the rest of a longer buffer is
// cleared first (uverbs_copy_to_struct_or_zero). An absent attribute is
// ENOENT, as in the kernel.
func (c *Call) Out(id uint16, data []byte, zeroFill bool) error {
	p := c.find(id)
	if p == nil || p.spec.Kind != abi.AttrPtrOut {
		return syscall.ENOENT
	}
	n := int(p.attr.Len)
	if n > 0 && p.attr.Data == 0 {
		return errFault
	}
	dst := userBytes(p.attr.Data, n)
	if zeroFill {
		clear(dst)
	}
	copy(dst, data)
	c.setValid(p.idx)
	return nil
}

func (c *Call) setValid(idx int) {
	off := abi.IoctlHdrSize + idx*abi.IoctlAttrSize + 4
	fl := binary.LittleEndian.Uint16(c.user[off:]) | abi.UVERBS_ATTR_F_VALID_OUTPUT
	c.user[off] = byte(fl)
	c.user[off+1] = byte(fl >> 8)
}

// UHWIn returns the driver input data (UVERBS_ATTR_UHW_IN), if any.
func (c *Call) UHWIn() []byte {
	b, _ := c.In(abi.UVERBS_ATTR_UHW_IN)
	return b
}

// errnoOf turns a handler's error into the errno the caller sees.
func errnoOf(err error) error {
	if errors.Is(err, ErrNoHandler) {
		return syscall.EOPNOTSUPP
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if errno == syscall.EPROTONOSUPPORT {
			// uverbs_ioctl.c reserves EPROTONOSUPPORT for the
			// framework and turns a handler's into EINVAL.
			return syscall.EINVAL
		}
		return errno
	}
	return syscall.EINVAL
}

func (f *File) ioctl(arg unsafe.Pointer) error {
	k := f.k
	hdrBytes := unsafe.Slice((*byte)(arg), abi.IoctlHdrSize)
	h, _ := abi.DecodeIoctlHdr(hdrBytes)

	// ib_uverbs_ioctl
	if int(h.Length) > k.dev.PageSize || int(h.Length) != abi.IoctlHdrSize+abi.IoctlAttrSize*int(h.NumAttrs) {
		return syscall.EINVAL
	}
	if h.Reserved1 != 0 || h.Reserved2 != 0 {
		return syscall.EPROTONOSUPPORT
	}
	// ib_uverbs_cmd_verbs
	if h.DriverID != k.dev.DriverID {
		return syscall.EINVAL
	}
	m := k.api.Method(h.ObjectID, h.MethodID)
	if m == nil {
		return syscall.EPROTONOSUPPORT
	}
	k.mu.Lock()
	gone := k.disassociate
	k.mu.Unlock()
	if gone {
		return syscall.EIO
	}

	// ib_uverbs_run_method
	user := unsafe.Slice((*byte)(arg), int(h.Length))
	c := &Call{File: f, Method: m, Header: h, user: user}
	err := f.setAttrs(c, int(h.NumAttrs))
	if err == nil {
		for i := range m.Attrs {
			if m.Attrs[i].Mandatory && c.find(m.Attrs[i].ID) == nil {
				err = syscall.EINVAL
				break
			}
		}
	}
	if err == nil {
		err = handlerChecks(c)
	}
	var destroyed *Object
	if err == nil {
		if d := m.Destroys(); d != nil {
			destroyed = c.Object(d.ID)
			if destroyed != nil && destroyed.Users > 0 {
				err = syscall.EBUSY
			}
		}
	}
	if err == nil && k.handler != nil {
		if herr := k.handler(c); herr != nil {
			err = errnoOf(herr)
		}
	}
	if err == nil && m.UHW {
		if p := c.find(abi.UVERBS_ATTR_UHW_OUT); p != nil {
			c.setValid(p.idx)
		}
	}
	if err != nil {
		// Abort: objects created by this call never existed.
		for _, o := range c.created {
			f.remove(o)
		}
		return err
	}
	if destroyed != nil {
		f.remove(destroyed)
	}
	if h.ObjectID == abi.UVERBS_OBJECT_DEVICE && h.MethodID == abi.UVERBS_METHOD_GET_CONTEXT {
		f.context = true
	}
	if v, ok := c.Value(abi.UVERBS_ATTR_WRITE_CMD); ok && h.ObjectID == abi.UVERBS_OBJECT_DEVICE && h.MethodID == abi.UVERBS_METHOD_INVOKE_WRITE && v == abi.IB_USER_VERBS_CMD_GET_CONTEXT {
		f.context = true
	}
	return nil
}

func (f *File) remove(o *Object) {
	if o.isFD {
		delete(f.fds, int64(o.Handle))
	} else {
		delete(f.objects, o.Handle)
	}
}

// validID reports whether an attribute id can exist at all: only the
// driver-namespace bit may be set in the namespace nibble.
func validID(id uint16) bool {
	return id&abi.UVERBS_ID_NS_MASK&^abi.UVERBS_ID_DRIVER_NS == 0
}

// setAttrs is uverbs_set_attr for every attribute, in array order.
func (f *File) setAttrs(c *Call, n int) error {
	for i := 0; i < n; i++ {
		a, _ := abi.DecodeIoctlAttr(c.user, i)
		var spec *abi.AttrSpec
		if validID(a.ID) {
			spec = c.Method.Attr(a.ID)
		}
		if spec == nil {
			if a.Flags&abi.UVERBS_ATTR_F_MANDATORY != 0 {
				return syscall.EPROTONOSUPPORT
			}
			continue
		}
		if c.find(a.ID) != nil {
			return syscall.EINVAL
		}
		p := present{spec: spec, idx: i, attr: a}
		if err := f.processAttr(c, &p); err != nil {
			return err
		}
		c.present = append(c.present, p)
	}
	return nil
}

// processAttr is uverbs_process_attr.
func (f *File) processAttr(c *Call, p *present) error {
	s, a := p.spec, p.attr
	reserved := a.AttrData
	switch s.Kind {
	case abi.AttrEnumIn:
		if a.ElemID() >= s.Elems {
			return syscall.EOPNOTSUPP
		}
		if a.AttrData>>8 != 0 {
			return syscall.EINVAL
		}
		reserved = 0
		fallthrough
	case abi.AttrPtrIn, abi.AttrConstIn, abi.AttrFlagsIn:
		if a.Len > s.Len && s.ZeroTrailing {
			if a.Len > abi.InlineMax && a.Data == 0 {
				return syscall.EFAULT
			}
			for _, b := range payload(c.user, p.idx, a)[s.Len:] {
				if b != 0 {
					return syscall.EOPNOTSUPP
				}
			}
		}
		fallthrough
	case abi.AttrPtrOut:
		if a.Len < s.MinLen || (!s.ZeroTrailing && a.Len > s.Len) {
			return syscall.EINVAL
		}
		if reserved != 0 {
			return syscall.EINVAL
		}
		if s.Kind != abi.AttrPtrOut && a.Len > abi.InlineMax && a.Data == 0 {
			return syscall.EFAULT
		}
	case abi.AttrIDR, abi.AttrFD:
		if a.AttrData != 0 || a.Len != 0 {
			return syscall.EINVAL
		}
		o, err := f.lookup(s, int64(a.Data), s.Kind == abi.AttrFD)
		if err != nil {
			return err
		}
		if s.Access == abi.AccessNew {
			// The new id is written back to the caller before the
			// handler runs (put_user in uverbs_process_attr).
			off := abi.IoctlHdrSize + p.idx*abi.IoctlAttrSize + 8
			binary.LittleEndian.PutUint64(c.user[off:], uint64(o.Handle))
			c.created = append(c.created, o)
		}
		p.obj = o
	case abi.AttrRawFD:
		if a.AttrData != 0 || a.Len != 0 {
			return syscall.EINVAL
		}
		if int64(a.Data) < -1<<31 || int64(a.Data) > 1<<31-1 {
			return syscall.EINVAL
		}
	case abi.AttrIDRsArray:
		if a.AttrData != 0 || a.Len%4 != 0 {
			return syscall.EINVAL
		}
		n := int(a.Len / 4)
		if n < int(s.ArrMin) || n > int(s.ArrMax) {
			return syscall.EINVAL
		}
		raw := payload(c.user, p.idx, a)
		for j := 0; j < n; j++ {
			o, err := f.lookup(s, int64(binary.LittleEndian.Uint32(raw[4*j:])), false)
			if err != nil {
				return err
			}
			p.objs = append(p.objs, o)
		}
	default:
		return syscall.EOPNOTSUPP
	}
	return nil
}

// lookup is uverbs_get_uobject_from_file.
func (f *File) lookup(s *abi.AttrSpec, id int64, isFD bool) (*Object, error) {
	if s.Access == abi.AccessNew {
		if !f.context {
			return nil, syscall.EINVAL
		}
		o := &Object{Type: s.Object, isFD: isFD}
		if isFD {
			o.Handle = uint32(f.nextFD)
			f.fds[f.nextFD] = o
			f.nextFD++
		} else {
			o.Handle = f.next
			f.objects[f.next] = o
			f.next++
		}
		return o, nil
	}
	if isFD {
		o, ok := f.fds[id]
		if !ok || o.Type != s.Object {
			return nil, syscall.EBADF
		}
		return o, nil
	}
	if id < 0 || id > 0xffffffff {
		return nil, syscall.EINVAL
	}
	o, ok := f.objects[uint32(id)]
	if !ok {
		return nil, syscall.ENOENT
	}
	if o.Type != s.Object {
		return nil, syscall.EINVAL
	}
	return o, nil
}

// handlerChecks applies the checks the kernel's method handlers make through
// uverbs_get_flags64/32 and uverbs_get_const on every FLAGS_IN and CONST_IN
// attribute.
func handlerChecks(c *Call) error {
	for _, p := range c.present {
		switch p.spec.Kind {
		case abi.AttrFlagsIn:
			var v uint64
			switch p.attr.Len {
			case 8:
				v = p.attr.Data
			case 4:
				v = p.attr.Data & 0xffffffff
			default:
				return syscall.EINVAL
			}
			if v&^p.spec.Allowed != 0 {
				return syscall.EINVAL
			}
		case abi.AttrConstIn:
			if p.attr.Data > p.spec.Max {
				return syscall.EINVAL
			}
		}
	}
	return nil
}
