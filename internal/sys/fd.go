package sys

import (
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FD is an owned file descriptor. Its zero value is not usable; get one from
// [Open] or [NewFake].
//
// Its system calls go through one seam, the ops interface: the kernel's
// (osFD, in osfd.go) or, in unit tests, a fake kernel's (fake.go). FD
// itself only keeps what both share: the name, closing once, and the
// accounting of live descriptors.
type FD struct {
	name    string
	ops     ops
	closed  atomic.Bool
	track   *tracked
	cleanup runtime.Cleanup // closes a real descriptor dropped without Close
}

// ops are the system calls behind an FD. The FD checks for nil and for a
// closed descriptor before it calls them; an implementation must still
// answer os.ErrClosed for a call that races with close.
type ops interface {
	number() int // the descriptor number, -1 for a fake
	close() error
	ioctl(req uint, arg unsafe.Pointer) error
	read(p []byte) (int, error)
	readNonblocking(p []byte) (int, error)
	readable() (bool, error)
	write(p []byte) (int, error)
	rawWrite(p unsafe.Pointer, n int) (int, error)
	setReadDeadline(t time.Time) error
	waitReadable() error
	readBlocking(p []byte) (int, error) // read, waiting without the runtime poller
	mmap(offset int64, length int, prot, flags int) ([]byte, error)
	adopt(raw int, name string) (*FD, error)
}

// dropped is what the cleanup of an FD dropped without Close releases;
// it must not reach the FD itself, or the cleanup would never run.
type dropped struct {
	os    *osFD
	track *tracked
}

// closeDropped closes the descriptor of an FD that became unreachable
// without Close: the safety net under every owner (a uverbs Context, a
// umad Port) that a caller forgot to close.
func closeDropped(d dropped) {
	untrack(d.track)
	d.os.close()
}

// newFD owns o, counting it in Live and closing it if the FD is dropped
// without Close.
func newFD(name string, o *osFD) *FD {
	fd := &FD{name: name, ops: o, track: track(name)}
	fd.cleanup = runtime.AddCleanup(fd, closeDropped, dropped{os: o, track: fd.track})
	return fd
}

// Open opens path with flags|O_CLOEXEC. With O_NONBLOCK in flags the
// descriptor is pollable: it joins the runtime poller when a call first
// needs it (Read, WaitReadable, SetReadDeadline). Errors are
// *os.PathError values wrapping the errno.
func Open(path string, flags int) (*FD, error) {
	var raw int
	var err error
	for {
		raw, err = unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if flags&unix.O_NONBLOCK != 0 {
		return newPollable(raw, path), nil
	}
	return newFD(path, &osFD{name: path, raw: raw}), nil
}

// newPollable owns raw, a non-blocking descriptor. It joins the runtime
// poller when a call first needs it (see osFD).
func newPollable(raw int, name string) *FD {
	return newFD(name, &osFD{name: name, raw: raw, nonblocking: true})
}

// Name returns the path the descriptor was opened with.
func (fd *FD) Name() string {
	if fd == nil {
		return ""
	}
	return fd.name
}

// Raw returns the descriptor number, or -1 for a fake or closed descriptor.
// It is meant for attributes that carry a descriptor to the kernel; the
// number is only valid while fd is open.
func (fd *FD) Raw() int {
	if fd == nil || fd.closed.Load() {
		return -1
	}
	return fd.ops.number()
}

// Close closes the descriptor. It is safe to call more than once and from
// several goroutines; only the first call closes, later calls return nil. It
// waits for ioctls in flight and unblocks pending reads of a pollable
// descriptor.
func (fd *FD) Close() error {
	if fd == nil || !fd.closed.CompareAndSwap(false, true) {
		return nil
	}
	fd.cleanup.Stop()
	untrack(fd.track)
	return fd.ops.close()
}

// open reports whether fd may be used: not nil and not closed.
func (fd *FD) open() bool { return fd != nil && !fd.closed.Load() }

// Ioctl issues ioctl(fd, req, arg). The objects in keep (the owners of any
// memory whose address is inside *arg) are kept alive until the call
// returns. The error is the errno, or os.ErrClosed.
func (fd *FD) Ioctl(req uint, arg unsafe.Pointer, keep ...any) error {
	if !fd.open() {
		return os.ErrClosed
	}
	err := fd.ops.ioctl(req, arg)
	runtime.KeepAlive(keep)
	return err
}

// IoctlNumber issues ioctl(raw, req, arg) with no check and no lock: the
// entry of a caller whose own lock keeps the descriptor number open for
// the call (verbs.Core: every ioctl of a context runs under the context's
// life lock, and only its Close, holding that lock alone, closes the
// descriptor), taken from FD.Raw once; osFD.ioctl's under the
// descriptor's own lock. A Syscall, not a RawSyscall (see osFD.ioctl).
// The error is the errno.
func IoctlNumber(raw int, req uint, arg unsafe.Pointer) error {
	for {
		_, _, errno := syscall.Syscall(unix.SYS_IOCTL, uintptr(raw), uintptr(req), uintptr(arg))
		if errno == 0 {
			return nil
		}
		if errno != unix.EINTR {
			return errno
		}
	}
}

// IoctlAt is IoctlNumber for a request that names, by address, memory
// of the caller's that may be on its goroutine's stack: it writes p's
// address into *at, the request's word for it, and makes the system
// call, in one nosplit frame. A goroutine's stack moves only in a
// function's prologue (growing, or shrunk at a preemption), which a
// nosplit function and syscall.Syscall lack, and never while it is in a
// system call; an address written before a call with a prologue may name
// the stack's old place by the time the kernel writes there. p is kept
// alive until the kernel is done.
//
//go:nosplit
func IoctlAt(raw int, req uint, arg unsafe.Pointer, at *uint64, p unsafe.Pointer) error {
	*at = uint64(uintptr(p))
	for {
		_, _, errno := syscall.Syscall(unix.SYS_IOCTL, uintptr(raw), uintptr(req), uintptr(arg))
		if errno != unix.EINTR {
			runtime.KeepAlive(p)
			if errno == 0 {
				return nil
			}
			return errno
		}
	}
}

// rwNumber is read(2) or write(2), as trap says, of p on raw, retried on
// EINTR; the error is the errno. unix.Read and unix.Write written out for
// the MAD path: their two frames cost a send and a receive 30 user
// instructions each. A Syscall: ib_umad_write may sleep resolving the
// destination's address, and ib_umad_read waits for the file's mutex.
//
// Under the race detector it reports write(2)'s read of p and read(2)'s
// write into it, as unix.Write and unix.Read do.
func rwNumber(trap uintptr, raw int, p []byte) (int, error) {
	ptr := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	if raceEnabled && trap == unix.SYS_WRITE && len(p) > 0 {
		raceReadRange(unsafe.Pointer(unsafe.SliceData(p)), len(p))
	}
	for {
		r, _, e := syscall.Syscall(trap, uintptr(raw), ptr, uintptr(len(p)))
		if e == 0 {
			if raceEnabled && trap == unix.SYS_READ && r > 0 {
				raceWriteRange(unsafe.Pointer(unsafe.SliceData(p)), int(r))
			}
			return int(r), nil
		}
		if e != unix.EINTR {
			return 0, e
		}
	}
}

// RawWriteNumber is RawWrite on raw with no check and no lock, for a
// caller whose own lock keeps the number open for the call, as
// IoctlNumber's: the uverbs doorbell of an rxe QP, whose context closes
// the descriptor only after it destroyed the QP under the lock the post
// holds. EINTR is retried; the error is the errno.
func RawWriteNumber(raw int, p unsafe.Pointer, n int) (int, error) {
	for {
		r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(raw), uintptr(p), uintptr(n))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return int(r), e
		}
		return int(r), nil
	}
}

// Read reads one record. On a pollable descriptor it waits, through the
// runtime poller, until data arrives, the read deadline passes
// (os.ErrDeadlineExceeded) or the descriptor is closed (os.ErrClosed). The
// error is otherwise the errno.
func (fd *FD) Read(p []byte) (int, error) {
	if !fd.open() {
		return 0, os.ErrClosed
	}
	return fd.ops.read(p)
}

// ReadNonblocking reads one record if one is queued, and fails with EAGAIN
// otherwise, whatever the read deadline.
func (fd *FD) ReadNonblocking(p []byte) (int, error) {
	if !fd.open() {
		return 0, os.ErrClosed
	}
	return fd.ops.readNonblocking(p)
}

// Readable reports, without waiting, whether a read would find data
// (poll(2) with a zero timeout). A descriptor in an error state (POLLERR,
// for example a removed device) gives EIO.
func (fd *FD) Readable() (bool, error) {
	if !fd.open() {
		return false, os.ErrClosed
	}
	return fd.ops.readable()
}

// Write writes p in one write(2) call and returns the count the kernel
// accepted; the error is the errno or os.ErrClosed.
func (fd *FD) Write(p []byte) (int, error) {
	if !fd.open() {
		return 0, os.ErrClosed
	}
	return fd.ops.write(p)
}

// RawWrite issues write(2) of n bytes at p without telling the Go scheduler
// (unix.RawSyscall: no entersyscall/exitsyscall, no hand-off of the P). Use
// it only for writes that never block — the uverbs doorbell, see
// uverbs/rxe_data.go — and with p, and any address inside what it points
// at, in memory that does not move: outside the Go heap, or a heap object
// the caller keeps alive (the collector does not move heap objects; a
// goroutine's stack moves).
// It returns the count written and the errno (EINTR is retried), or
// os.ErrClosed. On a fake descriptor it is the fake's Write.
func (fd *FD) RawWrite(p unsafe.Pointer, n int) (int, error) {
	if !fd.open() {
		return 0, os.ErrClosed
	}
	return fd.ops.rawWrite(p, n)
}

// SetReadDeadline sets the time after which a pending or future Read fails
// with os.ErrDeadlineExceeded; the zero time means no deadline. Only
// pollable (O_NONBLOCK) and fake descriptors support deadlines.
func (fd *FD) SetReadDeadline(t time.Time) error {
	if !fd.open() {
		return os.ErrClosed
	}
	return fd.ops.setReadDeadline(t)
}

// WaitReadable blocks until a read would not block, the read deadline passes
// (os.ErrDeadlineExceeded) or the descriptor is closed (os.ErrClosed). It
// consumes nothing. Only pollable descriptors support it.
func (fd *FD) WaitReadable() error {
	if !fd.open() {
		return os.ErrClosed
	}
	return fd.ops.waitReadable()
}

// Mmap maps length bytes of the descriptor at offset.
func (fd *FD) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	if fd == nil {
		return nil, os.ErrClosed
	}
	if length <= 0 {
		return nil, unix.EINVAL
	}
	if fd.closed.Load() {
		return nil, os.ErrClosed
	}
	return fd.ops.mmap(offset, length, prot, flags)
}

// Adopt takes ownership of raw, a descriptor the kernel created through a
// call on fd (for example the async event file that
// UVERBS_METHOD_ASYNC_EVENT_ALLOC returns in an attribute, or a completion
// channel), and returns it as an owned FD named name. The descriptor is
// switched to O_NONBLOCK and is pollable, as Open's with O_NONBLOCK: read
// deadlines work and Close unblocks a pending read. It joins the runtime
// poller only when a call first needs it, so adopting it costs one fcntl;
// it is counted by Live from now on.
//
// On error raw is closed (the caller owns nothing): the error is the errno,
// or os.ErrClosed when fd is closed. For a fake fd, the Backend must
// implement Adopter, else the error is EBADF.
func (fd *FD) Adopt(raw int, name string) (*FD, error) {
	if !fd.open() {
		return nil, os.ErrClosed // raw is the kernel's only through an open fd
	}
	return fd.ops.adopt(raw, name)
}

// Munmap unmaps memory returned by Mmap or MmapAnon.
func Munmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	forgetAnon(b)
	return munmap(b)
}

// mmap and munmap are mmap(2) and munmap(2) without unix.Mmap's
// bookkeeping (a mutex and a map of every mapping, which MapSet and
// anonMaps make redundant here). A mapping of at most rawMapMax bytes (a
// ring, a doorbell page, a device's pages: what every CQ and QP create
// and destroy maps and unmaps) is made and unmade raw, without telling
// the scheduler (entersyscall, exitsyscall), as the runtime maps its own
// memory (runtime.sysMmap, a raw system call): at that size neither does
// much work, and neither waits for anything but the address space's lock
// (the uverbs drivers' mmap handlers remap memory a create call set up:
// rxe_mmap, mlx5_ib_mmap's entries and static UAR pages). Larger ones,
// whose unmapping frees many pages, tell it.
func mmap(fd int, offset int64, length, prot, flags int) ([]byte, error) {
	var (
		p     uintptr
		errno syscall.Errno
	)
	if length <= rawMapMax {
		p, _, errno = syscall.RawSyscall6(unix.SYS_MMAP, 0, uintptr(length), uintptr(prot), uintptr(flags), uintptr(fd), uintptr(offset))
	} else {
		p, _, errno = syscall.Syscall6(unix.SYS_MMAP, 0, uintptr(length), uintptr(prot), uintptr(flags), uintptr(fd), uintptr(offset))
	}
	if errno != 0 {
		return nil, errno
	}
	// The mapping is outside the Go heap: an address, not a pointer the
	// collector tracks (read through a pointer to keep vet's unsafeptr
	// check quiet about the conversion).
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&p)), length), nil
}

func munmap(b []byte) error {
	var errno syscall.Errno
	if len(b) <= rawMapMax {
		_, _, errno = syscall.RawSyscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), 0)
	} else {
		_, _, errno = syscall.Syscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), 0)
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// rawMapMax is the largest mapping mmap and munmap make raw.
const rawMapMax = 1 << 20

// MmapAnon returns length bytes of zeroed, private, anonymous memory outside
// the Go heap: rings and doorbell records the device keeps using after the
// call that registered them live there. Release it with Munmap.
func MmapAnon(length int) ([]byte, error) {
	if length <= 0 {
		return nil, unix.EINVAL
	}
	b, err := mmap(-1, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err == nil {
		recordAnon(b)
	}
	return b, err
}

// PageSize is the system page size.
var PageSize = os.Getpagesize()

// unwrapPathError returns the errno inside the *os.PathError an os.File
// method returns. It does not allocate (the receive hot path runs it).
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// Descriptor accounting, so tests can prove that nothing leaks.

type tracked struct {
	name  string
	stack string
	// prev and next link the record into live while its descriptor is
	// open.
	prev, next *tracked
}

var (
	liveMu sync.Mutex
	// live lists the open descriptors' records, the latest first: a list
	// the record links itself into, where a map's first insert allocated
	// its table, a heap size class of its own, in every program's first
	// open (docs/performance.md, "Per tool").
	live *tracked
	// TraceStacks makes Live report the stack that opened each descriptor.
	// Set it in TestMain before anything is opened.
	TraceStacks bool
)

func track(name string) *tracked {
	t := &tracked{name: name}
	if TraceStacks {
		buf := make([]byte, 4096)
		t.stack = string(buf[:runtime.Stack(buf, false)])
	}
	liveMu.Lock()
	t.next = live
	if live != nil {
		live.prev = t
	}
	live = t
	liveMu.Unlock()
	return t
}

// untrack unlinks t from live; again, it does nothing.
func untrack(t *tracked) {
	liveMu.Lock()
	switch {
	case t.prev != nil:
		t.prev.next = t.next
	case live == t:
		live = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	}
	t.prev, t.next = nil, nil
	liveMu.Unlock()
}

// Live describes every FD, real or fake, that was opened and not closed yet,
// sorted; with TraceStacks each entry includes the opening stack.
func Live() []string {
	liveMu.Lock()
	defer liveMu.Unlock()
	var out []string
	for t := live; t != nil; t = t.next {
		s := t.name
		if t.stack != "" {
			s += "\n" + t.stack
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Yield gives up the CPU to another runnable thread, if any, with
// sched_yield(2); it returns at once when none is waiting. A busy-polling
// loop calls it between empty polls when the device is the kernel itself
// (rxe): the work that completes the poll is a kernel thread or softirq
// that needs this CPU. sched_yield never blocks, so it is a RawSyscall: no
// entersyscall/exitsyscall, no hand-off of the P.
func Yield() {
	unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}
