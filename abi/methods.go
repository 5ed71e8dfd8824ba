//go:build linux

package abi

import (
	"fmt"
	"sync"
)

// AttrKind is how the kernel declares an ioctl attribute
// (UVERBS_ATTR_TYPE_* in <rdma/uverbs_ioctl.h>).
type AttrKind uint8

// The attribute kinds.
const (
	AttrPtrIn     AttrKind = iota + 1 // UVERBS_ATTR_PTR_IN
	AttrPtrOut                        // UVERBS_ATTR_PTR_OUT
	AttrConstIn                       // UVERBS_ATTR_CONST_IN: a PTR_IN of exactly 8 bytes, range-checked
	AttrFlagsIn                       // UVERBS_ATTR_FLAGS_IN: 4 or 8 bytes, unknown bits rejected
	AttrEnumIn                        // UVERBS_ATTR_ENUM_IN
	AttrIDR                           // UVERBS_ATTR_IDR: an object handle
	AttrFD                            // UVERBS_ATTR_FD: a descriptor object
	AttrRawFD                         // UVERBS_ATTR_RAW_FD
	AttrIDRsArray                     // UVERBS_ATTR_IDRS_ARR
)

// Access is the access an IDR or FD attribute asks for
// (UVERBS_ACCESS_* in <rdma/uverbs_ioctl.h>).
type Access uint8

// The access modes.
const (
	AccessRead Access = iota + 1
	AccessWrite
	AccessNew
	AccessDestroy
)

// Unbounded is AttrSpec.Len for a "minimum size" attribute
// (UVERBS_ATTR_MIN_SIZE): any length from MinLen up is accepted.
const Unbounded = 0xffff

// AttrSpec is the kernel's declaration of one attribute of one method: what
// both the request builder and the fake kernel check.
type AttrSpec struct {
	ID        uint16
	Name      string
	Kind      AttrKind
	Mandatory bool

	// PTR_IN, PTR_OUT, ENUM_IN payloads: the length must be at least
	// MinLen and at most Len, unless ZeroTrailing, in which case a longer
	// input is accepted when the bytes past Len are zero (EOPNOTSUPP
	// otherwise) and a longer output is zero-filled.
	MinLen, Len  uint16
	ZeroTrailing bool

	Allowed uint64 // FLAGS_IN: the bits the method accepts
	Max     uint64 // CONST_IN: the largest value of the declared C type

	Object uint16 // IDR, FD, IDRS_ARRAY: the object type
	Access Access // IDR, FD, IDRS_ARRAY

	Elems            uint8  // ENUM_IN: number of variants
	ArrMin, ArrMax   uint16 // IDRS_ARRAY: handle count range
	DriverNamespaced bool   // declared by the driver (id in the 0x1000 namespace)
}

// accepts reports why a builder call of kind k with payload length n does
// not fit s ("" when it does).
func (s *AttrSpec) accepts(k buildKind, n uint16) string {
	ok := false
	switch s.Kind {
	case AttrPtrIn:
		ok = k == buildIn
	case AttrConstIn:
		ok = k == buildConst || k == buildIn
	case AttrFlagsIn:
		ok = k == buildFlags
	case AttrEnumIn:
		ok = k == buildEnum
	case AttrPtrOut:
		ok = k == buildOut
	case AttrIDR:
		ok = (k == buildNewHandle) == (s.Access == AccessNew) && (k == buildHandle || k == buildNewHandle)
	case AttrFD:
		ok = (k == buildNewFD) == (s.Access == AccessNew) && (k == buildFD || k == buildNewFD)
	case AttrRawFD:
		ok = k == buildFD
	case AttrIDRsArray:
		ok = k == buildHandles
	}
	if !ok {
		return "the kernel declares it as " + s.Kind.String()
	}
	switch s.Kind {
	case AttrPtrIn, AttrPtrOut, AttrEnumIn:
		if n < s.MinLen {
			return fmt.Sprintf("%d bytes is shorter than %d", n, s.MinLen)
		}
		if n > s.Len && !s.ZeroTrailing {
			return fmt.Sprintf("%d bytes is longer than %d", n, s.Len)
		}
	case AttrConstIn:
		if n != 8 {
			return "a CONST_IN attribute is 8 bytes"
		}
	case AttrFlagsIn:
		if n != 4 && n != 8 {
			return "a FLAGS_IN attribute is 4 or 8 bytes"
		}
	}
	return ""
}

func (k AttrKind) String() string {
	switch k {
	case AttrPtrIn:
		return "PTR_IN"
	case AttrPtrOut:
		return "PTR_OUT"
	case AttrConstIn:
		return "CONST_IN"
	case AttrFlagsIn:
		return "FLAGS_IN"
	case AttrEnumIn:
		return "ENUM_IN"
	case AttrIDR:
		return "IDR"
	case AttrFD:
		return "FD"
	case AttrRawFD:
		return "RAW_FD"
	case AttrIDRsArray:
		return "IDRS_ARRAY"
	}
	return fmt.Sprintf("AttrKind(%d)", uint8(k))
}

// MethodSpec is the kernel's declaration of one ioctl method.
type MethodSpec struct {
	Object, Method uint16
	Name           string
	// UHW: the method carries driver data (UVERBS_ATTR_UHW_IN/OUT).
	UHW   bool
	Attrs []AttrSpec
}

// Attr returns the declaration of attribute id, or nil.
func (m *MethodSpec) Attr(id uint16) *AttrSpec {
	for i := range m.Attrs {
		if m.Attrs[i].ID == id {
			return &m.Attrs[i]
		}
	}
	return nil
}

// Destroys returns the attribute whose access is AccessDestroy, or nil.
func (m *MethodSpec) Destroys() *AttrSpec {
	for i := range m.Attrs {
		if m.Attrs[i].Access == AccessDestroy {
			return &m.Attrs[i]
		}
	}
	return nil
}

// API is the method tree one device exposes: the core methods its driver
// can run plus the driver's own namespace. It mirrors the uapi radix tree
// the kernel builds at device registration (drivers/infiniband/core/
// uverbs_uapi.c), which prunes objects and methods whose driver callbacks
// are missing.
type API struct {
	DriverID uint32
	methods  map[uint32]*MethodSpec
}

func methodKey(object, method uint16) uint32 { return uint32(object)<<16 | uint32(method) }

// Method returns the declaration of (object, method), or nil when this
// device's kernel does not have it (the kernel answers EPROTONOSUPPORT).
func (a *API) Method(object, method uint16) *MethodSpec {
	if a == nil {
		return nil
	}
	return a.methods[methodKey(object, method)]
}

// Methods returns every method of the tree, in no particular order.
func (a *API) Methods() []*MethodSpec {
	out := make([]*MethodSpec, 0, len(a.methods))
	for _, m := range a.methods {
		out = append(out, m)
	}
	return out
}

// apiDrivers are the drivers the table models; apiTrees holds their
// method trees, each built at its first use rather than at package init:
// a program builds the trees of the drivers it opens (a tool that only
// reads sysfs, none).
var apiDrivers = [...]uint32{RDMA_DRIVER_UNKNOWN, RDMA_DRIVER_MLX5, RDMA_DRIVER_MLX4, RDMA_DRIVER_RXE, RDMA_DRIVER_SIW, RDMA_DRIVER_EFA}

var apiTrees [len(apiDrivers)]struct {
	once sync.Once
	api  *API
}

// APIFor returns the method tree of a Linux 6.12 device whose driver is
// driverID (enum rdma_driver_id). Drivers the table does not model get the
// core methods every driver has.
func APIFor(driverID uint32) *API {
	i := 0 // RDMA_DRIVER_UNKNOWN's
	for j, id := range apiDrivers {
		if id == driverID {
			i = j
			break
		}
	}
	t := &apiTrees[i]
	t.once.Do(func() { t.api = buildAPI(apiDrivers[i]) })
	return t.api
}

// Helpers for the table below.
func in(id uint16, name string, minLen, maxLen uint16, mandatory bool) AttrSpec {
	return AttrSpec{ID: id, Name: name, Kind: AttrPtrIn, MinLen: minLen, Len: maxLen, Mandatory: mandatory}
}
func inStruct(id uint16, name string, minLen, size uint16, mandatory bool) AttrSpec {
	return AttrSpec{ID: id, Name: name, Kind: AttrPtrIn, MinLen: minLen, Len: size, ZeroTrailing: true, Mandatory: mandatory}
}
func out(id uint16, name string, minLen, maxLen uint16, mandatory bool) AttrSpec {
	return AttrSpec{ID: id, Name: name, Kind: AttrPtrOut, MinLen: minLen, Len: maxLen, Mandatory: mandatory}
}
func outStruct(id uint16, name string, minLen, size uint16, mandatory bool) AttrSpec {
	return AttrSpec{ID: id, Name: name, Kind: AttrPtrOut, MinLen: minLen, Len: size, ZeroTrailing: true, Mandatory: mandatory}
}
func constIn(id uint16, name string, max uint64, mandatory bool) AttrSpec {
	return AttrSpec{ID: id, Name: name, Kind: AttrConstIn, MinLen: 8, Len: 8, Max: max, Mandatory: mandatory}
}
func flagsIn(id uint16, name string, allowed uint64, mandatory bool) AttrSpec {
	return AttrSpec{ID: id, Name: name, Kind: AttrFlagsIn, MinLen: 4, Len: 8, Allowed: allowed, Mandatory: mandatory}
}
func idr(id uint16, name string, object uint16, access Access, mandatory bool) AttrSpec {
	return AttrSpec{ID: id, Name: name, Kind: AttrIDR, Object: object, Access: access, Mandatory: mandatory}
}
func fd(id uint16, name string, object uint16, access Access, mandatory bool) AttrSpec {
	return AttrSpec{ID: id, Name: name, Kind: AttrFD, Object: object, Access: access, Mandatory: mandatory}
}

const (
	u8Max  = 0xff
	u16Max = 0xffff
	u32Max = 0xffffffff
	u64Max = 0xffffffffffffffff
)

// coreMethods are the core methods of Linux 6.12 (drivers/infiniband/core/
// uverbs_std_types*.c) that purerdma uses, as the kernel declares them.
// Sizes: struct ib_uverbs_query_port_resp_ex 48, struct ib_uverbs_gid_entry
// 32, struct ib_uverbs_qp_cap 20, struct ib_uverbs_destroy_cq_resp 8,
// struct ib_uverbs_destroy_qp_resp 4.
func coreMethods() []MethodSpec {
	return []MethodSpec{
		{Object: UVERBS_OBJECT_DEVICE, Method: UVERBS_METHOD_INVOKE_WRITE, Name: "UVERBS_METHOD_INVOKE_WRITE", UHW: true, Attrs: []AttrSpec{
			in(UVERBS_ATTR_CORE_IN, "UVERBS_ATTR_CORE_IN", 4, Unbounded, false),
			out(UVERBS_ATTR_CORE_OUT, "UVERBS_ATTR_CORE_OUT", 0, Unbounded, false),
			constIn(UVERBS_ATTR_WRITE_CMD, "UVERBS_ATTR_WRITE_CMD", u32Max, true),
		}},
		{Object: UVERBS_OBJECT_DEVICE, Method: UVERBS_METHOD_QUERY_PORT, Name: "UVERBS_METHOD_QUERY_PORT", Attrs: []AttrSpec{
			constIn(UVERBS_ATTR_QUERY_PORT_PORT_NUM, "UVERBS_ATTR_QUERY_PORT_PORT_NUM", u8Max, true),
			outStruct(UVERBS_ATTR_QUERY_PORT_RESP, "UVERBS_ATTR_QUERY_PORT_RESP", 48, 48, true),
		}},
		{Object: UVERBS_OBJECT_DEVICE, Method: UVERBS_METHOD_GET_CONTEXT, Name: "UVERBS_METHOD_GET_CONTEXT", UHW: true, Attrs: []AttrSpec{
			out(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, "UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS", 4, 4, false),
			out(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, "UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT", 8, 8, false),
		}},
		{Object: UVERBS_OBJECT_DEVICE, Method: UVERBS_METHOD_QUERY_CONTEXT, Name: "UVERBS_METHOD_QUERY_CONTEXT", Attrs: []AttrSpec{
			out(UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, "UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS", 4, 4, false),
			out(UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, "UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT", 8, 8, false),
		}},
		{Object: UVERBS_OBJECT_DEVICE, Method: UVERBS_METHOD_QUERY_GID_TABLE, Name: "UVERBS_METHOD_QUERY_GID_TABLE", Attrs: []AttrSpec{
			constIn(UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, "UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE", u64Max, true),
			flagsIn(UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, "UVERBS_ATTR_QUERY_GID_TABLE_FLAGS", 0, false),
			out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, "UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES", 0, Unbounded, true),
			out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, "UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES", 8, 8, true),
		}},
		{Object: UVERBS_OBJECT_DEVICE, Method: UVERBS_METHOD_QUERY_GID_ENTRY, Name: "UVERBS_METHOD_QUERY_GID_ENTRY", Attrs: []AttrSpec{
			constIn(UVERBS_ATTR_QUERY_GID_ENTRY_PORT, "UVERBS_ATTR_QUERY_GID_ENTRY_PORT", u32Max, true),
			constIn(UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, "UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX", u32Max, true),
			flagsIn(UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, "UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS", 0, true),
			outStruct(UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, "UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY", 32, 32, true),
		}},
		{Object: UVERBS_OBJECT_PD, Method: UVERBS_METHOD_PD_DESTROY, Name: "UVERBS_METHOD_PD_DESTROY", Attrs: []AttrSpec{
			idr(UVERBS_ATTR_DESTROY_PD_HANDLE, "UVERBS_ATTR_DESTROY_PD_HANDLE", UVERBS_OBJECT_PD, AccessDestroy, true),
		}},
		{Object: UVERBS_OBJECT_AH, Method: UVERBS_METHOD_AH_DESTROY, Name: "UVERBS_METHOD_AH_DESTROY", Attrs: []AttrSpec{
			idr(UVERBS_ATTR_DESTROY_AH_HANDLE, "UVERBS_ATTR_DESTROY_AH_HANDLE", UVERBS_OBJECT_AH, AccessDestroy, true),
		}},
		{Object: UVERBS_OBJECT_MR, Method: UVERBS_METHOD_MR_DESTROY, Name: "UVERBS_METHOD_MR_DESTROY", Attrs: []AttrSpec{
			idr(UVERBS_ATTR_DESTROY_MR_HANDLE, "UVERBS_ATTR_DESTROY_MR_HANDLE", UVERBS_OBJECT_MR, AccessDestroy, true),
		}},
		{Object: UVERBS_OBJECT_CQ, Method: UVERBS_METHOD_CQ_CREATE, Name: "UVERBS_METHOD_CQ_CREATE", UHW: true, Attrs: []AttrSpec{
			idr(UVERBS_ATTR_CREATE_CQ_HANDLE, "UVERBS_ATTR_CREATE_CQ_HANDLE", UVERBS_OBJECT_CQ, AccessNew, true),
			in(UVERBS_ATTR_CREATE_CQ_CQE, "UVERBS_ATTR_CREATE_CQ_CQE", 4, 4, true),
			in(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, "UVERBS_ATTR_CREATE_CQ_USER_HANDLE", 8, 8, true),
			fd(UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, "UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL", UVERBS_OBJECT_COMP_CHANNEL, AccessRead, false),
			in(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, "UVERBS_ATTR_CREATE_CQ_COMP_VECTOR", 4, 4, true),
			flagsIn(UVERBS_ATTR_CREATE_CQ_FLAGS, "UVERBS_ATTR_CREATE_CQ_FLAGS", IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION|IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN, false),
			out(UVERBS_ATTR_CREATE_CQ_RESP_CQE, "UVERBS_ATTR_CREATE_CQ_RESP_CQE", 4, 4, true),
			fd(UVERBS_ATTR_CREATE_CQ_EVENT_FD, "UVERBS_ATTR_CREATE_CQ_EVENT_FD", UVERBS_OBJECT_ASYNC_EVENT, AccessRead, false),
		}},
		{Object: UVERBS_OBJECT_CQ, Method: UVERBS_METHOD_CQ_DESTROY, Name: "UVERBS_METHOD_CQ_DESTROY", Attrs: []AttrSpec{
			idr(UVERBS_ATTR_DESTROY_CQ_HANDLE, "UVERBS_ATTR_DESTROY_CQ_HANDLE", UVERBS_OBJECT_CQ, AccessDestroy, true),
			out(UVERBS_ATTR_DESTROY_CQ_RESP, "UVERBS_ATTR_DESTROY_CQ_RESP", 8, 8, true),
		}},
		{Object: UVERBS_OBJECT_QP, Method: UVERBS_METHOD_QP_CREATE, Name: "UVERBS_METHOD_QP_CREATE", UHW: true, Attrs: []AttrSpec{
			idr(UVERBS_ATTR_CREATE_QP_HANDLE, "UVERBS_ATTR_CREATE_QP_HANDLE", UVERBS_OBJECT_QP, AccessNew, true),
			idr(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE, "UVERBS_ATTR_CREATE_QP_XRCD_HANDLE", UVERBS_OBJECT_XRCD, AccessRead, false),
			idr(UVERBS_ATTR_CREATE_QP_PD_HANDLE, "UVERBS_ATTR_CREATE_QP_PD_HANDLE", UVERBS_OBJECT_PD, AccessRead, false),
			idr(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, "UVERBS_ATTR_CREATE_QP_SRQ_HANDLE", UVERBS_OBJECT_SRQ, AccessRead, false),
			idr(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, "UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE", UVERBS_OBJECT_CQ, AccessRead, false),
			idr(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, "UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE", UVERBS_OBJECT_CQ, AccessRead, false),
			idr(UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE, "UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE", UVERBS_OBJECT_RWQ_IND_TBL, AccessRead, false),
			in(UVERBS_ATTR_CREATE_QP_USER_HANDLE, "UVERBS_ATTR_CREATE_QP_USER_HANDLE", 8, 8, true),
			inStruct(UVERBS_ATTR_CREATE_QP_CAP, "UVERBS_ATTR_CREATE_QP_CAP", 20, 20, true),
			constIn(UVERBS_ATTR_CREATE_QP_TYPE, "UVERBS_ATTR_CREATE_QP_TYPE", u32Max, true),
			flagsIn(UVERBS_ATTR_CREATE_QP_FLAGS, "UVERBS_ATTR_CREATE_QP_FLAGS", IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK|IB_UVERBS_QP_CREATE_SCATTER_FCS|IB_UVERBS_QP_CREATE_CVLAN_STRIPPING|IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING|IB_UVERBS_QP_CREATE_SQ_SIG_ALL, false),
			in(UVERBS_ATTR_CREATE_QP_SOURCE_QPN, "UVERBS_ATTR_CREATE_QP_SOURCE_QPN", 4, 4, false),
			fd(UVERBS_ATTR_CREATE_QP_EVENT_FD, "UVERBS_ATTR_CREATE_QP_EVENT_FD", UVERBS_OBJECT_ASYNC_EVENT, AccessRead, false),
			outStruct(UVERBS_ATTR_CREATE_QP_RESP_CAP, "UVERBS_ATTR_CREATE_QP_RESP_CAP", 20, 20, true),
			out(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, "UVERBS_ATTR_CREATE_QP_RESP_QP_NUM", 4, 4, true),
		}},
		{Object: UVERBS_OBJECT_QP, Method: UVERBS_METHOD_QP_DESTROY, Name: "UVERBS_METHOD_QP_DESTROY", Attrs: []AttrSpec{
			idr(UVERBS_ATTR_DESTROY_QP_HANDLE, "UVERBS_ATTR_DESTROY_QP_HANDLE", UVERBS_OBJECT_QP, AccessDestroy, true),
			out(UVERBS_ATTR_DESTROY_QP_RESP, "UVERBS_ATTR_DESTROY_QP_RESP", 4, 4, true),
		}},
		{Object: UVERBS_OBJECT_ASYNC_EVENT, Method: UVERBS_METHOD_ASYNC_EVENT_ALLOC, Name: "UVERBS_METHOD_ASYNC_EVENT_ALLOC", Attrs: []AttrSpec{
			fd(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, "UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE", UVERBS_OBJECT_ASYNC_EVENT, AccessNew, true),
		}},
	}
}

// flowDestroy is registered for drivers that implement destroy_flow.
func flowMethods() []MethodSpec {
	return []MethodSpec{
		{Object: UVERBS_OBJECT_FLOW, Method: UVERBS_METHOD_FLOW_DESTROY, Name: "UVERBS_METHOD_FLOW_DESTROY", Attrs: []AttrSpec{
			idr(UVERBS_ATTR_DESTROY_FLOW_HANDLE, "UVERBS_ATTR_DESTROY_FLOW_HANDLE", UVERBS_OBJECT_FLOW, AccessDestroy, true),
		}},
	}
}

// counterMethods are registered only for drivers with destroy_counters
// (mlx5 in 6.12); everywhere else every COUNTERS call is EPROTONOSUPPORT.
func counterMethods() []MethodSpec {
	return []MethodSpec{
		{Object: UVERBS_OBJECT_COUNTERS, Method: UVERBS_METHOD_COUNTERS_CREATE, Name: "UVERBS_METHOD_COUNTERS_CREATE", Attrs: []AttrSpec{
			idr(UVERBS_ATTR_CREATE_COUNTERS_HANDLE, "UVERBS_ATTR_CREATE_COUNTERS_HANDLE", UVERBS_OBJECT_COUNTERS, AccessNew, true),
		}},
		{Object: UVERBS_OBJECT_COUNTERS, Method: UVERBS_METHOD_COUNTERS_DESTROY, Name: "UVERBS_METHOD_COUNTERS_DESTROY", Attrs: []AttrSpec{
			idr(UVERBS_ATTR_DESTROY_COUNTERS_HANDLE, "UVERBS_ATTR_DESTROY_COUNTERS_HANDLE", UVERBS_OBJECT_COUNTERS, AccessDestroy, true),
		}},
		{Object: UVERBS_OBJECT_COUNTERS, Method: UVERBS_METHOD_COUNTERS_READ, Name: "UVERBS_METHOD_COUNTERS_READ", Attrs: []AttrSpec{
			idr(UVERBS_ATTR_READ_COUNTERS_HANDLE, "UVERBS_ATTR_READ_COUNTERS_HANDLE", UVERBS_OBJECT_COUNTERS, AccessRead, true),
			out(UVERBS_ATTR_READ_COUNTERS_BUFF, "UVERBS_ATTR_READ_COUNTERS_BUFF", 0, Unbounded, true),
			flagsIn(UVERBS_ATTR_READ_COUNTERS_FLAGS, "UVERBS_ATTR_READ_COUNTERS_FLAGS", IB_UVERBS_READ_COUNTERS_PREFER_CACHED, false),
		}},
	}
}

// mlx5Methods is the mlx5 driver namespace purerdma uses
// (drivers/infiniband/hw/mlx5/main.c, <rdma/mlx5_user_ioctl_cmds.h>).
func mlx5Methods() []MethodSpec {
	return []MethodSpec{
		{Object: MLX5_IB_OBJECT_UAR, Method: MLX5_IB_METHOD_UAR_OBJ_ALLOC, Name: "MLX5_IB_METHOD_UAR_OBJ_ALLOC", Attrs: []AttrSpec{
			idr(MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, "MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE", MLX5_IB_OBJECT_UAR, AccessNew, true),
			constIn(MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, "MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE", u32Max, true),
			out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, "MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET", 8, 8, true),
			out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, "MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH", 4, 4, true),
			out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, "MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID", 4, 4, true),
		}},
		{Object: MLX5_IB_OBJECT_UAR, Method: MLX5_IB_METHOD_UAR_OBJ_DESTROY, Name: "MLX5_IB_METHOD_UAR_OBJ_DESTROY", Attrs: []AttrSpec{
			idr(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, "MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE", MLX5_IB_OBJECT_UAR, AccessDestroy, true),
		}},
	}
}

// NewAPI returns a method tree made of methods, for a driver the table does
// not model or for tests. Methods with UHW get the UHW_IN/UHW_OUT
// attributes added.
func NewAPI(driverID uint32, methods []MethodSpec) *API {
	a := &API{DriverID: driverID, methods: map[uint32]*MethodSpec{}}
	a.add(methods)
	return a
}

func (a *API) add(ms []MethodSpec) {
	for i := range ms {
		m := ms[i]
		if m.UHW {
			m.Attrs = append(m.Attrs[:len(m.Attrs):len(m.Attrs)],
				AttrSpec{ID: UVERBS_ATTR_UHW_IN, Name: "UVERBS_ATTR_UHW_IN", Kind: AttrPtrIn, Len: Unbounded, DriverNamespaced: true},
				AttrSpec{ID: UVERBS_ATTR_UHW_OUT, Name: "UVERBS_ATTR_UHW_OUT", Kind: AttrPtrOut, Len: Unbounded, DriverNamespaced: true})
		}
		a.methods[methodKey(m.Object, m.Method)] = &m
	}
}

func buildAPI(driverID uint32) *API {
	a := NewAPI(driverID, coreMethods())
	add := a.add
	switch driverID {
	case RDMA_DRIVER_MLX5:
		add(flowMethods())
		add(counterMethods())
		add(mlx5Methods())
		// mlx5 extends two core methods with driver attributes.
		qc := a.Method(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT)
		qc.Attrs = append(qc.Attrs, AttrSpec{ID: MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, Name: "MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX", Kind: AttrPtrOut, MinLen: 72, Len: Unbounded, Mandatory: true, DriverNamespaced: true})
		cq := a.Method(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE)
		cq.Attrs = append(cq.Attrs, AttrSpec{ID: MLX5_IB_ATTR_CREATE_CQ_UAR_INDEX, Name: "MLX5_IB_ATTR_CREATE_CQ_UAR_INDEX", Kind: AttrPtrIn, MinLen: 4, Len: 4, DriverNamespaced: true})
	case RDMA_DRIVER_MLX4:
		add(flowMethods())
	}
	return a
}
