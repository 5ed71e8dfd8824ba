package uverbs

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/verbs"
)

// Context is an open device with its user context: what ibv_open_device
// returns. It owns every object created through it; Close destroys what is
// left, in dependency order. A Context and its objects are safe for
// concurrent use.
type Context struct {
	dev Device
	// fd, api and drv are set once by Open and never change; core holds
	// the same values (verbs.Core.Init) for counters and flow.
	fd   *sys.FD
	api  *abi.API
	drv  uint32
	prov provider

	numCompVectors uint32
	coreSupport    uint64
	async          *sys.FD    // nil when the kernel has no ASYNC_EVENT object
	asyncRaw       int        // its number, for EVENT_FD attributes
	asyncMu        sync.Mutex // one reader of the async event file at a time

	// core is what counters and flow share with this package (Core): the
	// life lock every operation holds shared and Close exclusively, the
	// request runner and the close hooks. Lock order: the life lock, then
	// an object's mu, then objMu.
	core verbs.Core

	objMu   sync.Mutex
	objects *objLink // the newest live object's link; the rest follow by next
	nobj    int      // how many are live
	uh      uhTable

	// scr holds the idle request scratches of the calls on the context.
	scr scratchList

	// maps records the memory mapped for the context (queues, doorbell
	// records, the device's pages); cleanup unmaps what is left when the
	// Context becomes unreachable without Close (its descriptors have
	// cleanups of their own, in internal/sys).
	maps    *sys.MapSet
	cleanup runtime.Cleanup

	// pdBare says the provider sends no driver data with ALLOC_PD (rxe):
	// allocPD writes its call in place.
	pdBare bool
}

// object is what a Context owns and destroys on Close.
type object interface {
	stage() verbs.Stage
	seq() uint64
	// destroyLocked destroys the object; the caller holds the Context's
	// life lock (shared or exclusive). It reports EIO as success.
	destroyLocked(closing bool) error
	// listLink is the object's place in its Context's list.
	listLink() *objLink
}

// objLink threads an object on its Context's list of live objects (the
// ones Close destroys). Adding and removing hash and allocate nothing, where
// a set keyed by the object interface hashed it on each create and destroy
// (issue 11: the per-operation Go time in the VM's profile).
type objLink struct {
	prev, next *objLink
	obj        object // the object the link is in, set when listed
	listed     bool
}

func (l *objLink) listLink() *objLink { return l }

// Open opens the device named name (an IB device name such as "rxe0", or a
// uverbs node such as "uverbs0") and creates its user context, like
// ibv_open_device on the device ibv_get_device_list returned for it.
//
// Errors (all *Error): ENODEV (matches os.ErrNotExist) when there is no such
// device; ErrNotSupported when purerdma has no provider for the device's
// driver (the message names the driver) or its driver ABI version; the
// errno of open(2) (EACCES, EPERM: os.ErrPermission) or of GET_CONTEXT.
func Open(name string, opts *Options) (*Context, error) {
	d, err := LookupDevice(name, opts)
	if err != nil {
		return nil, err
	}
	return OpenDevice(d, opts)
}

// OpenDevice opens d, a device Devices returned; see Open.
func OpenDevice(d Device, opts *Options) (*Context, error) {
	prov, err := newProvider(d, opts != nil && opts.Generic)
	if err != nil {
		return nil, errs.New("open", d.Name, err)
	}
	fd, err := opts.opener().OpenFile(d.Path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, errs.New("open "+d.Path, d.Name, err)
	}
	c := &Context{
		dev:  d,
		fd:   fd,
		api:  abi.APIFor(uint32(d.DriverID)),
		drv:  uint32(d.DriverID),
		prov: prov,
		maps: sys.NewMapSet(),
	}
	if in, out := prov.pdData(); len(in) == 0 && len(out) == 0 {
		c.pdBare = true
	}
	// The safety net: a Context dropped without Close still gives back
	// its mappings (and, through the FDs' own cleanups, its descriptors).
	// The cleanup's argument must not reach c, or it would never run.
	c.core.Init(d.Name, fd, c.api, c.drv)
	c.cleanup = runtime.AddCleanup(c, (*sys.MapSet).UnmapAll, c.maps)
	if err := c.getContext(); err != nil {
		fd.Close()
		return nil, err
	}
	if err := c.allocAsyncFD(); err != nil {
		c.prov.close(c)
		fd.Close()
		return nil, err
	}
	return c, nil
}

func (c *Context) getContext() error {
	ncv := new(uint32)
	core := new(uint64)
	r := abi.NewRequest(c.api, c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT).
		Out(abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, bytesOf(ncv)).
		Out(abi.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, bytesOf(core))
	in, out := c.prov.contextData()
	addUHW(r, in, out)
	if err := c.do(r); err != nil {
		return c.err("get context", err)
	}
	c.numCompVectors = *ncv
	if r.Valid(abi.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT) {
		c.coreSupport = *core
	}
	if err := c.prov.contextCreated(c, out); err != nil {
		return c.err("get context", err)
	}
	return nil
}

// allocAsyncFD creates the async event file (UVERBS_METHOD_ASYNC_EVENT_ALLOC).
// A kernel without the method (EPROTONOSUPPORT) leaves the context without
// one: AsyncEvent then fails with ErrNotSupported.
func (c *Context) allocAsyncFD() error {
	r := abi.NewRequest(c.api, c.drv, abi.UVERBS_OBJECT_ASYNC_EVENT, abi.UVERBS_METHOD_ASYNC_EVENT_ALLOC).
		NewFD(abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE)
	if err := c.do(r); err != nil {
		if errors.Is(err, syscall.EPROTONOSUPPORT) {
			return nil
		}
		return c.err("alloc async event file", err)
	}
	raw, err := r.CreatedFD(abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE)
	if err != nil {
		return c.err("alloc async event file", err)
	}
	f, err := c.fd.Adopt(raw, "async events of "+c.dev.Name)
	if err != nil {
		return c.err("alloc async event file", err)
	}
	c.async, c.asyncRaw = f, raw
	return nil
}

// Device returns the device the context was opened on.
func (c *Context) Device() Device {
	if c == nil {
		return Device{}
	}
	return c.dev
}

// DriverID returns the device's driver id (enum rdma_driver_id), which every
// ioctl request on the context carries.
func (c *Context) DriverID() rdma.DriverID {
	if c == nil {
		return rdma.DriverUnknown
	}
	return rdma.DriverID(c.drv)
}

// apiTable returns the method table of the device (abi.APIFor(DriverID())).
func (c *Context) apiTable() *abi.API {
	if c == nil {
		return nil
	}
	return c.api
}

// NumCompVectors returns the number of completion vectors the device
// reported at GET_CONTEXT (ibv_context.num_comp_vectors).
func (c *Context) NumCompVectors() int {
	if c == nil {
		return 0
	}
	return int(c.numCompVectors)
}

// CoreSupport returns the IB_UVERBS_CORE_SUPPORT_* bits the kernel reported
// at GET_CONTEXT.
func (c *Context) CoreSupport() uint64 {
	if c == nil {
		return 0
	}
	return c.coreSupport
}

func (c *Context) err(op string, err error) error {
	return errs.New(op, c.dev.Name, err)
}

// enter starts an operation: it holds the context until leave.
func (c *Context) enter(op string) error {
	if c != nil && c.core.TryHold() {
		return nil
	}
	return c.enterErr(op)
}

// enterErr is the error of an enter that failed.
func (c *Context) enterErr(op string) error {
	if c == nil || c.fd == nil {
		return errs.New(op, "", errNil)
	}
	return c.err(op, os.ErrClosed)
}

func (c *Context) leave() { c.core.Release() }

// Core returns the context's core, for this module's packages counters
// and flow, which create objects on the context through it. Code outside
// the module cannot call it (short of reflection): its argument's type is
// internal. It returns nil for a nil Context.
func (c *Context) Core(verbs.Seal) *verbs.Core {
	if c == nil {
		return nil
	}
	return &c.core
}

// do marshals r and runs it on the context's descriptor. It does not
// allocate once r's buffers have grown to size.
func (c *Context) do(r *abi.Request) error { return c.core.Do(r) }

// hookObject puts a close hook of counters or flow (verbs.Core.OnClose)
// among the objects Close destroys.
type hookObject struct {
	objLink
	h *verbs.Hook
}

func (o *hookObject) stage() verbs.Stage       { return o.h.Stage() }
func (o *hookObject) seq() uint64              { return o.h.Seq() }
func (o *hookObject) destroyLocked(bool) error { return o.h.Run() }

// uhTable maps the user handles of CQs, QPs and SRQs (the values the kernel
// echoes in completion and async events) back to the objects: a handle
// is a slot's index plus one in its low 32 bits and the slot's generation,
// counted up at each use, above them, so that taking and giving back a
// handle is a few stores under objMu, with no hashing, and a stale handle
// finds nothing.
type uhTable struct {
	obj  []object
	gen  []uint32
	used []bool
	free []uint32
}

// slot returns the slot of uh, when uh is a handle of it now.
func (t *uhTable) slot(uh uint64) (int, bool) {
	i := int(uint32(uh)) - 1
	if i < 0 || i >= len(t.gen) || t.gen[i] != uint32(uh>>32) || !t.used[i] {
		return 0, false
	}
	return i, true
}

// release gives uh's slot back; releasing it again does nothing.
func (t *uhTable) release(uh uint64) {
	if i, ok := t.slot(uh); ok {
		t.releaseSlot(i)
	}
}

// releaseSlot gives back slot i, which slot found.
func (t *uhTable) releaseSlot(i int) {
	t.obj[i], t.used[i] = nil, false
	t.free = append(t.free, uint32(i))
}

// track adds o to the objects Close destroys: a CQ or QP, whose uh is a
// handle newUserHandle returned, in the user-handle table alone (teardown
// walks it as it walks the list: one store instead of linking), any
// other object (uh 0) on the list. untrack takes it out again.
func (c *Context) track(o object, uh uint64) {
	c.objMu.Lock()
	if i, ok := c.uh.slot(uh); ok {
		c.uh.obj[i] = o
		c.nobj++
	} else {
		c.listLocked(o)
	}
	c.objMu.Unlock()
}

func (c *Context) untrack(o object, uh uint64) {
	c.objMu.Lock()
	if i, ok := c.uh.slot(uh); ok {
		if c.uh.obj[i] != nil {
			c.nobj--
		}
		c.uh.releaseSlot(i)
	} else {
		c.unlistLocked(o)
	}
	c.objMu.Unlock()
}

// listLocked puts o first on the list of live objects; the caller holds
// objMu.
func (c *Context) listLocked(o object) {
	l := o.listLink()
	if l.listed {
		return
	}
	if l.obj != o {
		l.obj = o // an object created again in place (Into) keeps it
	}
	l.prev, l.next, l.listed = nil, c.objects, true
	if c.objects != nil {
		c.objects.prev = l
	}
	c.objects = l
	c.nobj++
}

// unlistLocked takes o off the list, if it is on it; the caller holds
// objMu.
func (c *Context) unlistLocked(o object) {
	l := o.listLink()
	if !l.listed {
		return
	}
	if l.prev != nil {
		l.prev.next = l.next
	} else {
		c.objects = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	}
	l.prev, l.next, l.listed = nil, nil, false
	c.nobj--
}

func (c *Context) lookupUH(uh uint64) object {
	var o object
	c.objMu.Lock() // no defer: an event loop looks up each event's CQ
	if i, ok := c.uh.slot(uh); ok {
		o = c.uh.obj[i]
	}
	c.objMu.Unlock()
	return o
}

// newUserHandle returns a fresh user_handle for a CQ or QP: the value the
// kernel echoes in completion and async events. track files the object
// under it; untrack, or dropUserHandle when the create failed, gives it
// back.
func (c *Context) newUserHandle() uint64 {
	c.objMu.Lock()
	t := &c.uh
	var i int
	if n := len(t.free); n > 0 {
		i = int(t.free[n-1])
		t.free = t.free[:n-1]
	} else {
		i = len(t.gen)
		t.obj, t.gen, t.used = append(t.obj, nil), append(t.gen, 0), append(t.used, false)
	}
	t.gen[i]++
	t.used[i] = true
	uh := uint64(t.gen[i])<<32 | uint64(i+1)
	c.objMu.Unlock()
	return uh
}

// dropUserHandle gives back a handle newUserHandle returned for an object
// that was not created.
func (c *Context) dropUserHandle(uh uint64) {
	c.objMu.Lock()
	c.uh.release(uh)
	c.objMu.Unlock()
}

// Close destroys every object the context still owns, in dependency order
// (flows, counters, QPs, SRQs, CQs, PDs, completion channels — rdma_core.c uverbs_destroy_ufile_hw, ib_destroy_usecnt),
// then the driver's context resources, the async event file and the
// device file, like ibv_close_device after destroying what is left. It
// waits for calls in flight. After a device was removed (destroys fail EIO:
// the kernel has already destroyed everything) Close still succeeds. It is
// safe to call more than once; later calls return nil.
//
// Errors: an *Error for the first destroy that failed other than with EIO;
// everything is released anyway.
func (c *Context) Close() error {
	if c == nil {
		return errs.New("close", "", errNil)
	}
	var first error
	c.core.Close(func() { first = c.teardown() })
	return first
}

// teardown is Close's work, with the life lock held exclusively.
func (c *Context) teardown() error {
	c.objMu.Lock()
	objs := make([]object, 0, c.nobj)
	for l := c.objects; l != nil; l = l.next {
		objs = append(objs, l.obj)
	}
	for i, o := range c.uh.obj {
		if o != nil && c.uh.used[i] {
			objs = append(objs, o)
		}
	}
	c.objMu.Unlock()
	for _, h := range c.core.TakeHooks() {
		objs = append(objs, &hookObject{h: h})
	}
	// Dependency order first; within a stage, newest first.
	sort.Slice(objs, func(i, j int) bool {
		if objs[i].stage() != objs[j].stage() {
			return objs[i].stage() < objs[j].stage()
		}
		return objs[i].seq() > objs[j].seq()
	})
	var first error
	for _, o := range objs {
		if err := o.destroyLocked(true); err != nil && first == nil {
			first = err
		}
	}
	c.objMu.Lock()
	for _, o := range objs {
		c.unlistLocked(o)
	}
	clear(c.uh.obj)
	clear(c.uh.used)
	c.nobj = 0 // what a failed destroy left in the user-handle table too
	c.objMu.Unlock()
	c.prov.close(c)
	c.cleanup.Stop()
	c.maps.UnmapAll()
	if c.async != nil {
		c.async.Close()
	}
	if err := c.fd.Close(); err != nil && first == nil {
		first = c.err("close", err)
	}
	return first
}

// isGone reports whether err says the device was removed: the kernel then
// answers EIO and has already destroyed every object.
func isGone(err error) bool { return errors.Is(err, syscall.EIO) }

// bytesOf returns the memory of *p as a byte slice (the UAPI structs have no
// pointers and no implicit padding; abi's layout test pins them).
func bytesOf[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// addUHW adds the driver data attributes when not empty.
func addUHW(r *abi.Request, in, out []byte) {
	if len(in) > 0 {
		r.In(abi.UVERBS_ATTR_UHW_IN, in)
	}
	if len(out) > 0 {
		r.Out(abi.UVERBS_ATTR_UHW_OUT, out)
	}
}

// invokeWrite runs a legacy write command through INVOKE_WRITE.
func (c *Context) invokeWrite(cmd uint32, coreIn, coreOut, drvIn, drvOut []byte) error {
	s := c.getScratch(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE)
	defer c.putScratch(s)
	return c.do(invokeWriteInto(&s.r, cmd, coreIn, coreOut, drvIn, drvOut))
}

// String names the context by device and node.
func (c *Context) String() string {
	if c == nil {
		return "uverbs context <nil>"
	}
	return fmt.Sprintf("uverbs context %s (%s)", c.dev.Name, c.dev.Path)
}

func ptrOf(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// addrOf is the user address of b, for the u64 fields of driver data. b
// must be memory outside the Go heap (sys.MmapAnon, Mmap) or kept alive by
// the request that carries the address.
func addrOf(b []byte) uint64 { return uint64(uintptr(ptrOf(b))) }
