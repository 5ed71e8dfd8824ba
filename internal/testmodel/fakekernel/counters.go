package fakekernel

// The verbs counters object (UVERBS_OBJECT_COUNTERS) with the core's rules
// (drivers/infiniband/core/uverbs_std_types_counters.c) and mlx5's
// (drivers/infiniband/hw/mlx5/counters.c: mlx5_ib_read_counters,
// mlx5_ib_flow_counters_set_data, counters_set_description,
// mlx5_ib_counters_clear_description), mlx5 counters.c mlx5_ib_flow_counters_set_data and mlx5_ib_read_counters, fs.c mlx5_ib_create_flow, uverbs_std_types_counters.c; docs/mock0.md. Only mlx5 has the
// object: the method table of every other driver lacks it, so the
// framework answers EPROTONOSUPPORT before any of this runs.

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

func init() {
	objectHandlers[abi.UVERBS_OBJECT_COUNTERS] = (*Verbs).counters
}

// countersVal is the model of a struct mlx5_ib_mcounters.
type countersVal struct {
	// desc is the stored description (counters_data): the (description,
	// index) pairs the first bind sent; maxIndex is cntrs_max_index, the
	// largest index + 1, 0 when no flow described the object. described
	// is set by a bind with pairs (even an empty list: kcalloc(0) is not
	// NULL) and cleared with the description.
	desc      []abi.Mlx5IbFlowCountersDesc
	maxIndex  uint32
	described bool
	// hw says whether the hardware flow counter (mlx5_fc) exists: created
	// by the first bind, kept until the object is destroyed, never reset.
	hw             bool
	packets, bytes uint64
	// reads counts the firmware queries (every READ is one).
	reads int
	// lastFlags are the flags of the last READ; lastFlagsSent whether
	// it carried the (optional) FLAGS attribute.
	lastFlags     uint32
	lastFlagsSent bool
}

// IB_COUNTER_PACKETS and IB_COUNTER_BYTES (enum ib_counters_description).
const (
	counterPackets = 0
	counterBytes   = 1
	// maxCountersNum is MAX_COUNTERS_NUM: USHRT_MAX / (sizeof(u32) * 2).
	maxCountersNum = 0xffff / 8
)

func (v *Verbs) counters(c *Call) error {
	if v.DriverID != abi.RDMA_DRIVER_MLX5 {
		return ErrNoHandler
	}
	switch c.Header.MethodID {
	case abi.UVERBS_METHOD_COUNTERS_CREATE:
		// mlx5_ib_create_counters only initialises a mutex.
		o := c.Object(abi.UVERBS_ATTR_CREATE_COUNTERS_HANDLE)
		o.Value = &countersVal{}
		v.logf("create counters %d", o.Handle)
		return nil
	case abi.UVERBS_METHOD_COUNTERS_DESTROY:
		// The framework answered EBUSY while flows use the object.
		v.logf("destroy counters %d", c.Object(abi.UVERBS_ATTR_DESTROY_COUNTERS_HANDLE).Handle)
		return nil
	case abi.UVERBS_METHOD_COUNTERS_READ:
		return v.readCounters(c)
	}
	return ErrNoHandler
}

// readCounters is UVERBS_METHOD_COUNTERS_READ: EINVAL while no flow uses
// the object (the core's usecnt check); ncounters = len / 8; mlx5: EINVAL
// when the buffer is shorter than the stored description's largest index;
// one firmware query, the flags passed down and ignored; every stored pair
// adds its description's value at its index; the whole ncounters × 8
// bytes are copied back (entries no pair names are 0).
func (v *Verbs) readCounters(c *Call) error {
	o := c.Object(abi.UVERBS_ATTR_READ_COUNTERS_HANDLE)
	if o.Users == 0 {
		return syscall.EINVAL
	}
	flags, sent := c.Value(abi.UVERBS_ATTR_READ_COUNTERS_FLAGS)
	n := c.OutLen(abi.UVERBS_ATTR_READ_COUNTERS_BUFF) / 8
	cv := o.Value.(*countersVal)
	v.mu.Lock()
	defer v.mu.Unlock()
	if cv.maxIndex > uint32(n) {
		return syscall.EINVAL
	}
	if !cv.hw {
		// Bound only by flows mlx5 built from static specs (ALL_DEFAULT,
		// MC_DEFAULT, SNIFFER), which never set read_counters: the
		// kernel would dereference NULL. The fake refuses instead.
		return syscall.EINVAL
	}
	cv.reads++
	cv.lastFlags = uint32(flags)
	cv.lastFlagsSent = sent
	v.log = append(v.log, fmt.Sprintf("read counters %d flags %d", o.Handle, flags))
	buf := make([]byte, n*8)
	hw := [2]uint64{cv.packets, cv.bytes}
	for _, d := range cv.desc {
		off := int(d.Index) * 8
		binary.LittleEndian.PutUint64(buf[off:], binary.LittleEndian.Uint64(buf[off:])+hw[d.Description])
	}
	return c.Out(abi.UVERBS_ATTR_READ_COUNTERS_BUFF, buf, false)
}

// setCountersData is mlx5_ib_flow_counters_set_data for a flow whose specs
// carried a COUNT action on cv; ucmd is the driver data, already checked
// to be at least 8 + 16 × ncounters_data bytes (nil when none was sent).
// On error a hardware counter this call created is destroyed again.
func (v *Verbs) setCountersData(cv *countersVal, ucmd []byte) error {
	var desc []abi.Mlx5IbFlowCountersDesc
	withDesc := false
	if len(ucmd) >= 8 && binary.LittleEndian.Uint32(ucmd[0:]) != 0 {
		// data[0]: counters_data u64, ncounters u32.
		ptr := binary.LittleEndian.Uint64(ucmd[8:])
		n := binary.LittleEndian.Uint32(ucmd[16:])
		if n > maxCountersNum {
			return syscall.EINVAL
		}
		if n > 0 {
			if ptr == 0 {
				return syscall.EFAULT
			}
			raw := userBytes(ptr, int(n)*8)
			desc = make([]abi.Mlx5IbFlowCountersDesc, n)
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&desc[0])), len(raw)), raw)
		}
		withDesc = true // kcalloc(0, …) is ZERO_SIZE_PTR, not NULL
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	created := false
	if !cv.hw {
		cv.hw = true
		created = true
	}
	fail := func(err error) error {
		if created {
			cv.hw = false
			cv.packets, cv.bytes = 0, 0
		}
		return err
	}
	if withDesc {
		if cv.maxIndex != 0 {
			return fail(syscall.EINVAL) // already bound to another flow
		}
		var max uint32
		for _, d := range desc {
			if d.Description > counterBytes {
				return fail(syscall.EINVAL)
			}
			if max <= d.Index {
				max = d.Index + 1
			}
		}
		cv.desc, cv.maxIndex, cv.described = desc, max, true
		return nil
	}
	if cv.maxIndex == 0 {
		return fail(syscall.EINVAL) // not bound yet: the first bind must describe
	}
	return nil
}

// clearCountersDescription is mlx5_ib_counters_clear_description: when the
// flow going away (or failing) is the object's last user, the description
// is forgotten; the hardware counter stays.
func (v *Verbs) clearCountersDescription(o *Object) {
	if o == nil || o.Users != 1 {
		return
	}
	cv := o.Value.(*countersVal)
	v.mu.Lock()
	cv.desc, cv.maxIndex, cv.described = nil, 0, false
	v.mu.Unlock()
}

// CountersState is what the model knows of one counters object, for tests.
type CountersState struct {
	// Users is the core's use count: the flows that reference it.
	Users int
	// Described says whether a description is stored; Desc are its
	// (description, index) pairs and MaxIndex the largest index + 1.
	Described bool
	Desc      []abi.Mlx5IbFlowCountersDesc
	MaxIndex  uint32
	// Packets and Bytes are the hardware counter; HW says it exists.
	HW             bool
	Packets, Bytes uint64
	// Reads counts READ calls that reached the firmware; LastFlags are
	// the flags of the last one, LastFlagsSent whether it named them (a
	// missing FLAGS attribute is 0).
	Reads         int
	LastFlags     uint32
	LastFlagsSent bool
}

// Counters returns the state of the counters object with handle h on any
// open file of the device (tests open one context at a time).
func (v *Verbs) Counters(h uint32) (CountersState, bool) {
	for _, f := range v.Kernel().filesList() {
		f.mu.Lock()
		o := f.objects[h]
		var st CountersState
		ok := o != nil && o.Type == abi.UVERBS_OBJECT_COUNTERS
		if ok {
			cv := o.Value.(*countersVal)
			v.mu.Lock()
			st = CountersState{Users: o.Users, Described: cv.described, Desc: append([]abi.Mlx5IbFlowCountersDesc(nil), cv.desc...),
				MaxIndex: cv.maxIndex, HW: cv.hw, Packets: cv.packets, Bytes: cv.bytes, Reads: cv.reads, LastFlags: cv.lastFlags, LastFlagsSent: cv.lastFlagsSent}
			v.mu.Unlock()
		}
		f.mu.Unlock()
		if ok {
			return st, true
		}
	}
	return CountersState{}, false
}

// OpenAllocFree opens the device like Kernel().Open, but answers
// UVERBS_METHOD_COUNTERS_READ without allocating, so that benchmarks and
// allocation tests count only the library's allocations (the strict
// framework allocates per call). The read path keeps the kernel's rules
// that matter to a read: the header's length and driver id, the three
// attributes' kinds and lengths, the flags, the handle's type, the use
// count and the buffer length against the stored description (EINVAL,
// ENOENT as the strict path); every other call goes to the strict fake.
func (v *Verbs) OpenAllocFree() *sys.FD {
	k := v.Kernel()
	f := &File{k: k, objects: map[uint32]*Object{}, fds: map[int64]*Object{}, nextFD: 100}
	k.mu.Lock()
	k.files[f] = struct{}{}
	k.mu.Unlock()
	return sys.NewFake("/dev/infiniband/uverbs-fake-"+k.dev.Name, &fastRead{File: f, v: v})
}

type fastRead struct {
	*File
	v *Verbs
}

func (b *fastRead) Ioctl(req uint, arg unsafe.Pointer) error {
	if req != abi.RDMA_VERBS_IOCTL || arg == nil {
		return b.File.Ioctl(req, arg)
	}
	b.k.enter(arg)
	hdr := unsafe.Slice((*byte)(arg), abi.IoctlHdrSize)
	le := binary.LittleEndian
	if le.Uint16(hdr[2:]) != abi.UVERBS_OBJECT_COUNTERS || le.Uint16(hdr[4:]) != abi.UVERBS_METHOD_COUNTERS_READ {
		return b.File.call(arg)
	}
	n := int(le.Uint16(hdr[6:]))
	if int(le.Uint16(hdr[0:])) != abi.IoctlHdrSize+n*abi.IoctlAttrSize || le.Uint32(hdr[16:]) != b.k.dev.DriverID ||
		le.Uint64(hdr[8:]) != 0 || le.Uint32(hdr[20:]) != 0 {
		return b.File.call(arg) // let the strict path answer
	}
	all := unsafe.Slice((*byte)(arg), abi.IoctlHdrSize+n*abi.IoctlAttrSize)
	var handle uint32
	var buf []byte
	bufAttr := -1
	seen := 0
	for i := 0; i < n; i++ {
		a := all[abi.IoctlHdrSize+i*abi.IoctlAttrSize:]
		id, l, data := le.Uint16(a[0:]), le.Uint16(a[2:]), le.Uint64(a[8:])
		if le.Uint16(a[6:]) != 0 {
			return syscall.EINVAL
		}
		switch id {
		case abi.UVERBS_ATTR_READ_COUNTERS_HANDLE:
			if l != 0 || data > 0xffffffff {
				return syscall.EINVAL
			}
			handle = uint32(data)
			seen |= 1
		case abi.UVERBS_ATTR_READ_COUNTERS_BUFF:
			if l > 0 && data == 0 {
				return syscall.EFAULT
			}
			buf = userBytes(data, int(l))
			bufAttr = i
			seen |= 2
		case abi.UVERBS_ATTR_READ_COUNTERS_FLAGS:
			if l != 4 && l != 8 {
				return syscall.EINVAL
			}
			fl := data
			if l == 4 {
				fl &= 0xffffffff
			}
			if fl&^abi.IB_UVERBS_READ_COUNTERS_PREFER_CACHED != 0 {
				return syscall.EINVAL
			}
		default:
			return b.File.call(arg)
		}
	}
	if seen != 3 {
		return syscall.EINVAL
	}
	// The kernel looks the handle up under SRCU and holds the object
	// shared; mlx5 locks the object's mutex around the query. The fake
	// holds the file's lock for the look-up and the model's for the
	// query, and fills the buffer outside both, so that reads run together
	// as far as the kernel lets them.
	b.mu.Lock()
	o, ok := b.objects[handle]
	var cv *countersVal
	users := 0
	if ok && o.Type == abi.UVERBS_OBJECT_COUNTERS {
		cv, users = o.Value.(*countersVal), o.Users
	}
	b.mu.Unlock()
	switch {
	case !ok:
		return syscall.ENOENT
	case cv == nil, users == 0:
		return syscall.EINVAL
	}
	b.v.mu.Lock()
	if cv.maxIndex > uint32(len(buf)/8) || !cv.hw {
		b.v.mu.Unlock()
		return syscall.EINVAL
	}
	cv.reads++
	hw := [2]uint64{cv.packets, cv.bytes}
	desc := cv.desc // replaced, never changed in place
	b.v.mu.Unlock()
	clear(buf)
	for _, d := range desc {
		off := int(d.Index) * 8
		le.PutUint64(buf[off:], le.Uint64(buf[off:])+hw[d.Description])
	}
	fl := all[abi.IoctlHdrSize+bufAttr*abi.IoctlAttrSize+4:]
	le.PutUint16(fl, le.Uint16(fl)|abi.UVERBS_ATTR_F_VALID_OUTPUT)
	return nil
}
