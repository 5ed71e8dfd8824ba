package fakekernel

import (
	"encoding/binary"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// Verbs is a simulated RDMA device: the semantics of the uverbs methods
// purerdma's uverbs package uses, with the driver rules of rxe (rxe.go) or
// mlx5 (mlx5.go), behind the strict framework of Kernel. Every rule cites
// the kernel function it models (file and function); what is not
// modelled fails EOPNOTSUPP (ErrNoHandler) rather than succeeding.
//
// Build one with RXE or MLX5, adjust the exported fields, then call Kernel
// once.
type Verbs struct {
	// Name is the IB device name.
	Name string
	// DriverID is enum rdma_driver_id; it selects the driver rules.
	DriverID uint32
	// Attr is what EX_QUERY_DEVICE answers (the core part);
	// Attr.Base.PhysPortCnt must equal len(Ports).
	Attr abi.IbUverbsExQueryDeviceResp
	// Ports are the ports, port 1 first.
	Ports []Port
	// NumCompVectors is what GET_CONTEXT reports.
	NumCompVectors uint32
	// NetRaw says whether the caller has CAP_NET_RAW (RAW_PACKET QPs).
	NetRaw bool
	// Mlx5 are the mlx5 device capabilities (ignored for other drivers).
	Mlx5 Mlx5Caps
	// Memlock makes REG_MR enforce the process's RLIMIT_MEMLOCK
	// (sys.MemlockLimit) on the memory this device's MRs pin, as
	// ib_umem_get does for a caller without CAP_IPC_LOCK: ENOMEM when the
	// pinned pages would exceed it. Off, the limit is not checked (the
	// test process may have any limit, or CAP_IPC_LOCK).
	Memlock bool

	k *Kernel

	mu       sync.Mutex
	log      []string
	removed  bool
	nextQPN  uint32
	nextSRQN uint32
	nextUAR  uint32
	nextOff  int64
	queues   []*eventQueue    // async event files, for Remove
	frames   [][]byte         // what mlx5 RAW_PACKET QPs sent
	pinned   map[*File]uint64 // bytes (whole pages) the live MRs of each file pin
}

// Port is one port of a Verbs device.
type Port struct {
	// Attr is what QUERY_PORT answers.
	Attr abi.IbUverbsQueryPortRespEx
	// GIDs are the valid GID entries (GidIndex and PortNum set).
	GIDs []abi.IbUverbsGidEntry
}

// Kernel returns the fake device behind the framework, with the Verbs
// handler and mmap. It is created on the first call.
func (v *Verbs) Kernel() *Kernel {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.k == nil {
		v.k = New(Device{Name: v.Name, DriverID: v.DriverID}, v.handle)
		v.k.HandleMmap(v.mmap)
		v.k.HandleClose(func(f *File) {
			v.mu.Lock()
			delete(v.pinned, f) // closing the file deregistered its MRs
			v.mu.Unlock()
			v.logf("close file")
		})
	}
	return v.k
}

// Log returns the successful object-level calls in order ("alloc pd 1",
// "create cq 2", "destroy qp 3", "close file", …): what tests check the
// teardown order against.
func (v *Verbs) Log() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.log...)
}

func (v *Verbs) logf(format string, args ...any) {
	v.mu.Lock()
	v.log = append(v.log, fmt.Sprintf(format, args...))
	v.mu.Unlock()
}

// Remove simulates hot unplug (`rdma link delete`): every method fails EIO
// from now on (the kernel has destroyed every object), a DEVICE_FATAL event
// is queued on every async event file, and reads past it fail EIO.
func (v *Verbs) Remove() {
	k := v.Kernel()
	k.Disassociate()
	v.mu.Lock()
	v.removed = true
	qs := append([]*eventQueue(nil), v.queues...)
	v.mu.Unlock()
	for _, q := range qs {
		q.post(0, ibEventDeviceFatal)
		q.fail(syscall.EIO)
	}
}

// ib_event_type values the fake posts.
const (
	ibEventCQErr       = 0
	ibEventQPFatal     = 1
	ibEventDeviceFatal = 8
	ibEventPortActive  = 9
)

// PostAsyncEvent queues an async event on the default async event file of
// every open file that has one: element is the object's user handle (or
// the port number for port events).
func (v *Verbs) PostAsyncEvent(eventType uint32, element uint64) {
	for _, f := range v.Kernel().filesList() {
		f.mu.Lock()
		st, _ := f.State.(*verbsFile)
		f.mu.Unlock()
		if st != nil && st.async != nil {
			st.async.post(element, eventType)
		}
	}
}

// PostCompEvent queues a completion event for the CQ with handle cq on its
// completion channel, as the driver does when an armed CQ completes. It
// reports whether such a CQ with a channel exists.
func (v *Verbs) PostCompEvent(cq uint32) bool {
	for _, f := range v.Kernel().filesList() {
		f.mu.Lock()
		o := f.objects[cq]
		f.mu.Unlock()
		if o == nil || o.Type != abi.UVERBS_OBJECT_CQ {
			continue
		}
		if c := o.Value.(*cqVal); c.channel != nil {
			c.channel.post(c.userHandle, 0)
			return true
		}
	}
	return false
}

// verbsFile is the per-file (ucontext) state.
type verbsFile struct {
	async *eventQueue // the default async event file
	mlx5  mlx5Context
	mmaps map[int64]mmapRegion
	uctx  []byte // GET_CONTEXT's driver response, for QUERY_CONTEXT
	// uarMem are the mlx5 UAR pages userspace mapped, by mmap offset:
	// the device reads its doorbells there.
	uarMem map[int64][]byte
}

type mmapRegion struct {
	length int
	exact  bool // the mapping must be exactly length (rdma_user_mmap_entry)
	init   []byte
	what   string
	uar    bool // an mlx5 UAR page
}

func (v *Verbs) state(f *File) *verbsFile {
	st, _ := f.State.(*verbsFile)
	if st == nil {
		st = &verbsFile{mmaps: map[int64]mmapRegion{}}
		f.State = st
	}
	return st
}

// addMmap registers an offset the file may mmap, and returns it.
func (v *Verbs) addMmap(f *File, r mmapRegion) int64 {
	v.mu.Lock()
	v.nextOff += int64(sys.PageSize) * 16
	off := v.nextOff
	v.mu.Unlock()
	v.state(f).mmaps[off] = r
	return off
}

// mmap is the device's mmap: only offsets a response handed out, with a
// length within the region (rxe_mmap: EINVAL otherwise; mlx5's UAR entries
// must be mapped whole). The memory is fresh anonymous memory holding the
// region's initial content, so sys.Munmap releases it.
func (v *Verbs) mmap(f *File, offset int64, length, prot, flags int) ([]byte, error) {
	st := v.state(f)
	r, ok := st.mmaps[offset]
	if !ok || length <= 0 || length > r.length || (r.exact && length != r.length) {
		return nil, syscall.EINVAL
	}
	if flags&syscall.MAP_SHARED == 0 {
		return nil, syscall.EINVAL
	}
	m, err := sys.MmapAnon(length)
	if err != nil {
		return nil, err
	}
	copy(m, r.init)
	if r.uar {
		if st.uarMem == nil {
			st.uarMem = map[int64][]byte{}
		}
		st.uarMem[offset] = m
	}
	v.logf("mmap %s", r.what)
	return m, nil
}

// Values of the objects the model creates.
type pdVal struct{}

type cqVal struct {
	cqe        uint32
	userHandle uint64
	channel    *eventQueue
	async      *eventQueue
	uar        uint32
	m5         *m5CQ // mlx5: the CQ's buffer and doorbell record
}

type uarVal struct {
	pageID uint32
	offset int64
}

// handle is the Handler: it dispatches on (object, method).
func (v *Verbs) handle(c *Call) error {
	h := c.Header
	switch {
	case h.ObjectID == abi.UVERBS_OBJECT_DEVICE:
		switch h.MethodID {
		case abi.UVERBS_METHOD_GET_CONTEXT:
			return v.getContext(c)
		case abi.UVERBS_METHOD_QUERY_CONTEXT:
			return v.queryContext(c)
		case abi.UVERBS_METHOD_QUERY_PORT:
			return v.queryPort(c)
		case abi.UVERBS_METHOD_QUERY_GID_TABLE:
			return v.queryGIDTable(c)
		case abi.UVERBS_METHOD_QUERY_GID_ENTRY:
			return v.queryGIDEntry(c)
		case abi.UVERBS_METHOD_INVOKE_WRITE:
			return v.invokeWrite(c)
		}
	case h.ObjectID == abi.UVERBS_OBJECT_PD && h.MethodID == abi.UVERBS_METHOD_PD_DESTROY:
		v.logf("dealloc pd %d", c.Object(abi.UVERBS_ATTR_DESTROY_PD_HANDLE).Handle)
		return nil
	case h.ObjectID == abi.UVERBS_OBJECT_CQ && h.MethodID == abi.UVERBS_METHOD_CQ_CREATE:
		return v.createCQ(c)
	case h.ObjectID == abi.UVERBS_OBJECT_CQ && h.MethodID == abi.UVERBS_METHOD_CQ_DESTROY:
		o := c.Object(abi.UVERBS_ATTR_DESTROY_CQ_HANDLE)
		v.logf("destroy cq %d", o.Handle)
		// struct ib_uverbs_destroy_cq_resp: events reported so far.
		return c.Out(abi.UVERBS_ATTR_DESTROY_CQ_RESP, make([]byte, 8), true)
	case h.ObjectID == abi.UVERBS_OBJECT_QP && h.MethodID == abi.UVERBS_METHOD_QP_CREATE:
		return v.createQP(c)
	case h.ObjectID == abi.UVERBS_OBJECT_QP && h.MethodID == abi.UVERBS_METHOD_QP_DESTROY:
		return v.destroyQP(c)
	case h.ObjectID == abi.UVERBS_OBJECT_ASYNC_EVENT && h.MethodID == abi.UVERBS_METHOD_ASYNC_EVENT_ALLOC:
		return v.asyncEventAlloc(c)
	case h.ObjectID == abi.MLX5_IB_OBJECT_UAR && v.DriverID == abi.RDMA_DRIVER_MLX5:
		switch h.MethodID {
		case abi.MLX5_IB_METHOD_UAR_OBJ_ALLOC:
			return v.mlx5UARAlloc(c)
		case abi.MLX5_IB_METHOD_UAR_OBJ_DESTROY:
			v.logf("destroy uar %d", c.Object(abi.MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE).Handle)
			return nil
		}
	}
	if fn := objectHandlers[h.ObjectID]; fn != nil {
		return fn(v, c)
	}
	return ErrNoHandler
}

// objectHandlers handle the methods of further object types (counters.go,
// flow.go fill it in their init functions).
var objectHandlers = map[uint16]func(v *Verbs, c *Call) error{}

// needContext is ib_uverbs_get_ucontext: methods that work on the ucontext
// fail EINVAL before GET_CONTEXT (uverbs_std_types_device.c UVERBS_METHOD_QUERY_PORT, rdma_core.c ib_uverbs_get_ucontext).
func needContext(c *Call) error {
	if !c.File.HasContext() {
		return syscall.EINVAL
	}
	return nil
}

func (v *Verbs) getContext(c *Call) error {
	// A second GET_CONTEXT on the same file: EINVAL (§2.2).
	if c.File.HasContext() {
		return syscall.EINVAL
	}
	var err error
	switch v.DriverID {
	case abi.RDMA_DRIVER_MLX5:
		err = v.mlx5AllocUcontext(c)
	case abi.RDMA_DRIVER_RXE:
		// rxe_alloc_ucontext ignores the udata.
	}
	if err != nil {
		return err
	}
	if err := c.outU32(abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, v.NumCompVectors); err != nil {
		return err
	}
	if err := c.outU64(abi.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, abi.IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS); err != nil {
		return err
	}
	v.logf("get context")
	return nil
}

// outU32 and outU64 fill optional scalar outputs that were supplied.
func (c *Call) outU32(id uint16, x uint32) error {
	if !c.Has(id) {
		return nil
	}
	return c.Out(id, binary.LittleEndian.AppendUint32(nil, x), false)
}

func (c *Call) outU64(id uint16, x uint64) error {
	if !c.Has(id) {
		return nil
	}
	return c.Out(id, binary.LittleEndian.AppendUint64(nil, x), false)
}

// queryContext is UVERBS_METHOD_QUERY_CONTEXT: EOPNOTSUPP without the
// driver's query_ucontext (rxe); mlx5 also answers its alloc_ucontext
// response in the mandatory driver attribute (§2.3).
func (v *Verbs) queryContext(c *Call) error {
	if err := needContext(c); err != nil {
		return err
	}
	if v.DriverID != abi.RDMA_DRIVER_MLX5 {
		return syscall.EOPNOTSUPP
	}
	if err := c.outU32(abi.UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, v.NumCompVectors); err != nil {
		return err
	}
	if err := c.outU64(abi.UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, abi.IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS); err != nil {
		return err
	}
	return c.Out(abi.MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, v.state(c.File).uctx, true)
}

func (v *Verbs) port(n uint64) *Port {
	if n < 1 || n > uint64(len(v.Ports)) {
		return nil
	}
	return &v.Ports[n-1]
}

// queryPort is UVERBS_METHOD_QUERY_PORT: an invalid port is EINVAL; the
// response is copied with the rest of a longer buffer zeroed (§2.4).
func (v *Verbs) queryPort(c *Call) error {
	if err := needContext(c); err != nil {
		return err
	}
	n, _ := c.Value(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM)
	p := v.port(n)
	if p == nil {
		return syscall.EINVAL
	}
	return c.Out(abi.UVERBS_ATTR_QUERY_PORT_RESP, structBytes(&p.Attr), true)
}

// queryGIDTable is UVERBS_METHOD_QUERY_GID_TABLE: entry size non-zero and
// dividing the buffer (EINVAL), room for every valid entry (EINVAL), each
// entry copied at the caller's entry size (truncated or zero-padded).
func (v *Verbs) queryGIDTable(c *Call) error {
	if err := needContext(c); err != nil {
		return err
	}
	size, _ := c.Value(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE)
	out := c.OutLen(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES)
	if size == 0 || out%int(size) != 0 || out == 0 {
		return syscall.EINVAL
	}
	max := out / int(size)
	var all []abi.IbUverbsGidEntry
	for _, p := range v.Ports {
		all = append(all, p.GIDs...)
	}
	if len(all) > max {
		return syscall.EINVAL
	}
	buf := make([]byte, out)
	for i := range all {
		copy(buf[i*int(size):(i+1)*int(size)], structBytes(&all[i]))
	}
	if err := c.Out(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, buf[:len(all)*int(size)], false); err != nil {
		return err
	}
	return c.outU64(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, uint64(len(all)))
}

// queryGIDEntry is UVERBS_METHOD_QUERY_GID_ENTRY: invalid port or index
// past the table EINVAL, empty entry ENODATA (rdma_get_gid_attr).
func (v *Verbs) queryGIDEntry(c *Call) error {
	if err := needContext(c); err != nil {
		return err
	}
	pn, _ := c.Value(abi.UVERBS_ATTR_QUERY_GID_ENTRY_PORT)
	idx, _ := c.Value(abi.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX)
	p := v.port(pn)
	if p == nil || idx >= uint64(p.Attr.LegacyResp.GidTblLen) {
		return syscall.EINVAL
	}
	for i := range p.GIDs {
		if uint64(p.GIDs[i].GidIndex) == idx {
			return c.Out(abi.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, structBytes(&p.GIDs[i]), true)
		}
	}
	return syscall.ENODATA
}

// asyncEventAlloc is UVERBS_METHOD_ASYNC_EVENT_ALLOC: the framework made
// the descriptor object; the first one becomes the file's default async
// event file.
func (v *Verbs) asyncEventAlloc(c *Call) error {
	o := c.Object(abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE)
	q := newEventQueue(16)
	q.onCloseLog = func() { v.logf("close async event file") }
	o.Value = q
	st := v.state(c.File)
	if st.async == nil {
		st.async = q
	}
	v.mu.Lock()
	v.queues = append(v.queues, q)
	v.mu.Unlock()
	v.logf("alloc async event file")
	return nil
}

// createCQ is UVERBS_METHOD_CQ_CREATE (uverbs_std_types_cq.c): the
// completion vector must be below num_comp_vectors (EINVAL), then the
// driver's create_cq.
func (v *Verbs) createCQ(c *Call) error {
	vec := c.inU32(abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR)
	cqe := c.inU32(abi.UVERBS_ATTR_CREATE_CQ_CQE)
	flags, _ := c.Value(abi.UVERBS_ATTR_CREATE_CQ_FLAGS)
	if vec >= v.NumCompVectors {
		return syscall.EINVAL
	}
	cq := &cqVal{cqe: cqe, userHandle: c.inU64(abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE)}
	if ch := c.Object(abi.UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL); ch != nil {
		cq.channel = ch.Value.(*eventQueue)
	}
	if ev := c.Object(abi.UVERBS_ATTR_CREATE_CQ_EVENT_FD); ev != nil {
		cq.async = ev.Value.(*eventQueue)
	}
	var err error
	switch v.DriverID {
	case abi.RDMA_DRIVER_RXE:
		err = v.rxeCreateCQ(c, cq, uint32(flags))
	case abi.RDMA_DRIVER_MLX5:
		err = v.mlx5CreateCQ(c, cq, uint32(flags))
	default:
		return ErrNoHandler
	}
	if err != nil {
		return err
	}
	o := c.Object(abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	o.Value = cq
	if err := c.outU32(abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE, cq.cqe); err != nil {
		return err
	}
	v.logf("create cq %d", o.Handle)
	return nil
}

func (c *Call) inU32(id uint16) uint32 {
	b, _ := c.In(id)
	if len(b) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (c *Call) inU64(id uint16) uint64 {
	b, _ := c.In(id)
	if len(b) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// copyToUdata is ib_copy_to_udata(udata, data, len(data)) as drivers call
// it: the kernel copies the driver's length whatever the caller's buffer.
// With no buffer that faults (EFAULT); with a shorter one the kernel would
// write past it — the fake refuses with EFAULT rather than corrupt memory
// (the kernel sources named here).
func (c *Call) copyToUdata(data []byte) error {
	n := c.OutLen(abi.UVERBS_ATTR_UHW_OUT)
	if n < len(data) {
		return syscall.EFAULT
	}
	return c.Out(abi.UVERBS_ATTR_UHW_OUT, data, false)
}

// create makes a new object for a write command's handler (uobj_alloc):
// the ucontext must exist (EINVAL); the object is dropped if the call
// fails.
func (c *Call) create(typ uint16, isFD bool) (*Object, error) {
	f := c.File
	if !f.context {
		return nil, syscall.EINVAL
	}
	o := &Object{Type: typ, isFD: isFD}
	if isFD {
		o.Handle = uint32(f.nextFD)
		f.fds[f.nextFD] = o
		f.nextFD++
	} else {
		o.Handle = f.next
		f.objects[f.next] = o
		f.next++
	}
	c.created = append(c.created, o)
	return o, nil
}

// lookup finds an object of the file by handle and type, as
// uobj_get_obj_read does for write commands: unknown ENOENT, another type
// EINVAL.
func (c *Call) lookup(typ uint16, handle uint32) (*Object, error) {
	o, ok := c.File.objects[handle]
	if !ok {
		return nil, syscall.ENOENT
	}
	if o.Type != typ {
		return nil, syscall.EINVAL
	}
	return o, nil
}

// structBytes returns the memory of a UAPI struct.
func structBytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// fromBytes copies b (zero-extended) into a UAPI struct.
func fromBytes[T any](b []byte) *T {
	p := new(T)
	copy(structBytes(p), b)
	return p
}
