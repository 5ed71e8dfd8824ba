package fakekernel

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// Device describes the device a Kernel pretends to be.
type Device struct {
	// Name is the IB device name, for example "mlx5_0".
	Name string
	// DriverID is its enum rdma_driver_id.
	DriverID uint32
	// API is its method tree; nil means abi.APIFor(DriverID).
	API *abi.API
	// PageSize bounds the ioctl header length; 0 means 4096.
	PageSize int
}

// Handler implements the methods of the fake device. It runs after the
// framework checks passed; returning a syscall.Errno fails the call with
// that errno, and nil succeeds (objects the call creates are then
// committed, and objects it destroys are released).
type Handler func(c *Call) error

// Kernel is a fake uverbs device. It is safe for concurrent use.
type Kernel struct {
	dev     Device
	api     *abi.API
	handler Handler

	mu           sync.Mutex
	disassociate bool
	files        map[*File]struct{}
	mmap         MmapHandler
	onClose      func(f *File)
	doorbells    atomic.Int64 // POST_SEND doorbells (verbs_mr.go)
	onIoctl      atomic.Pointer[func(object, method uint16)]
}

// MmapHandler implements mmap(2) of an open file of the device (drivers map
// queues and doorbell pages). It runs with the file's lock held.
type MmapHandler func(f *File, offset int64, length, prot, flags int) ([]byte, error)

// HandleMmap installs h as the device's mmap; without one every mmap fails
// ENODEV, as on a driver without an mmap op.
func (k *Kernel) HandleMmap(h MmapHandler) {
	k.mu.Lock()
	k.mmap = h
	k.mu.Unlock()
}

// New returns a fake device that runs h for every call the framework
// accepts. h may be nil: calls then succeed without doing anything beyond
// creating and destroying the objects they name.
func New(dev Device, h Handler) *Kernel {
	if dev.API == nil {
		dev.API = abi.APIFor(dev.DriverID)
	}
	if dev.PageSize == 0 {
		dev.PageSize = 4096
	}
	return &Kernel{dev: dev, api: dev.API, handler: h, files: map[*File]struct{}{}}
}

// HandleIoctl installs h to run at the start of every RDMA_VERBS_IOCTL on
// the device's files, with the call's object and method ids, before the
// fake takes any lock of its own (the kernel's uverbs ioctl takes none per
// file either). A test can block a call there, for example to see which
// calls the library lets into the kernel at the same time. nil removes it.
func (k *Kernel) HandleIoctl(h func(object, method uint16)) {
	if h == nil {
		k.onIoctl.Store(nil)
		return
	}
	k.onIoctl.Store(&h)
}

// enter runs the HandleIoctl hook for the call whose header is at arg.
func (k *Kernel) enter(arg unsafe.Pointer) {
	h := k.onIoctl.Load()
	if h == nil {
		return
	}
	hdr := unsafe.Slice((*byte)(arg), abi.IoctlHdrSize)
	(*h)(binary.LittleEndian.Uint16(hdr[2:]), binary.LittleEndian.Uint16(hdr[4:]))
}

// Device returns the device description.
func (k *Kernel) Device() Device { return k.dev }

// Disassociate simulates hot unplug: from now on every method fails EIO.
func (k *Kernel) Disassociate() {
	k.mu.Lock()
	k.disassociate = true
	k.mu.Unlock()
}

// Open opens the device, like open("/dev/infiniband/uverbsN"). Each open
// file has its own ucontext and handle table.
func (k *Kernel) Open() *sys.FD {
	f := &File{k: k, objects: map[uint32]*Object{}, fds: map[int64]*Object{}, nextFD: 100}
	k.mu.Lock()
	k.files[f] = struct{}{}
	k.mu.Unlock()
	return sys.NewFake("/dev/infiniband/uverbs-fake-"+k.dev.Name, f)
}

// OpenFiles returns how many files are open; a test that closes
// everything it opened sees 0.
func (k *Kernel) OpenFiles() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.files)
}

// Object is a uverbs object of one open file (a PD, CQ, QP, counters...).
type Object struct {
	// Handle is the handle (or, for descriptor objects, the fd number)
	// the kernel returned.
	Handle uint32
	// Type is the object type (UVERBS_OBJECT_*).
	Type uint16
	// Users counts the objects that reference this one; a destroy while
	// it is non-zero fails EBUSY, as for a PD with QPs or counters bound
	// to a flow. Handlers maintain it.
	Users int
	// Value is the handler's own state for the object.
	Value any

	isFD bool
}

// File is one open file of a fake device: its ucontext flag and its
// objects. It implements sys.Backend.
type File struct {
	k       *Kernel
	mu      sync.Mutex
	context bool
	closed  bool
	next    uint32
	nextFD  int64
	objects map[uint32]*Object
	fds     map[int64]*Object

	// State is the Handler's own per-file state (a driver's ucontext).
	State any
}

// HasContext reports whether GET_CONTEXT succeeded on this file.
func (f *File) HasContext() bool { return f.context }

// Objects returns the live objects of the file.
func (f *File) Objects() []*Object {
	out := make([]*Object, 0, len(f.objects)+len(f.fds))
	for _, o := range f.objects {
		out = append(out, o)
	}
	for _, o := range f.fds {
		out = append(out, o)
	}
	return out
}

// Ioctl implements sys.Backend.
func (f *File) Ioctl(req uint, arg unsafe.Pointer) error {
	if req != abi.RDMA_VERBS_IOCTL {
		return syscall.ENOTTY
	}
	if arg == nil {
		return syscall.EFAULT
	}
	f.k.enter(arg)
	return f.call(arg)
}

// call runs the ioctl whose header is at arg, the HandleIoctl hook
// already run.
func (f *File) call(arg unsafe.Pointer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ioctl(arg)
}

// Read implements sys.Backend: the uverbs command file has no records.
func (f *File) Read(p []byte, deadline time.Time, nonblocking bool) (int, error) {
	return 0, syscall.EINVAL
}

// Write implements sys.Backend for the legacy write() path: only the
// framing rules that do not depend on the command are modelled so far;
// every command is then answered EOPNOTSUPP (not implemented).
func (f *File) Write(p []byte) (int, error) {
	if len(p) < 8 {
		return 0, syscall.EINVAL
	}
	if binary.LittleEndian.Uint32(p) == abi.IB_USER_VERBS_CMD_POST_SEND {
		return f.postSendDoorbell(p)
	}
	return 0, syscall.EOPNOTSUPP
}

// Mmap implements sys.Backend through the Kernel's MmapHandler; without one
// the fake device maps nothing (ENODEV).
func (f *File) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	f.k.mu.Lock()
	h := f.k.mmap
	f.k.mu.Unlock()
	if h == nil {
		return nil, syscall.ENODEV
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return h(f, offset, length, prot, flags)
}

// HandleClose installs h to run when a file of the device is closed, after
// its objects are gone.
func (k *Kernel) HandleClose(h func(f *File)) {
	k.mu.Lock()
	k.onClose = h
	k.mu.Unlock()
}

// Close implements sys.Backend: closing the file destroys every object.
func (f *File) Close() error {
	f.mu.Lock()
	f.closed = true
	f.objects = map[uint32]*Object{}
	f.fds = map[int64]*Object{}
	f.mu.Unlock()
	f.k.mu.Lock()
	delete(f.k.files, f)
	h := f.k.onClose
	f.k.mu.Unlock()
	if h != nil {
		h(f)
	}
	return nil
}

// user memory helpers: the fake runs in the caller's address space, so a
// u64 "user pointer" is an ordinary address.

func userBytes(addr uint64, n int) []byte {
	if n == 0 {
		return nil
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

var errFault = syscall.EFAULT

// ErrNoHandler is what a Handler can return for a method it does not model;
// the call then fails EOPNOTSUPP, as a method whose driver op is missing.
var ErrNoHandler = errors.New("fakekernel: method not modelled")

var _ sys.Backend = (*File)(nil)

// filesList returns the open files (for tests).
func (k *Kernel) filesList() []*File {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*File, 0, len(k.files))
	for f := range k.files {
		out = append(out, f)
	}
	return out
}
