package sys

import (
	"errors"
	"fmt"
	"io"
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

// Backend stands in for the kernel behind one descriptor in unit tests.
// Its methods receive exactly what the real system call would, and return
// errors as syscall.Errno values the way the kernel does.
type Backend interface {
	// Ioctl handles ioctl(fd, req, arg). arg points at caller memory that
	// stays alive for the call.
	Ioctl(req uint, arg unsafe.Pointer) error
	// Read handles read(2). It must give up with os.ErrDeadlineExceeded once
	// deadline (when not zero) has passed, and with os.ErrClosed once Close
	// was called; it returns syscall.EAGAIN when nonblocking is set and
	// nothing is queued.
	Read(p []byte, deadline time.Time, nonblocking bool) (int, error)
	// Write handles write(2).
	Write(p []byte) (int, error)
	// Mmap handles mmap(2) of the descriptor.
	Mmap(offset int64, length int, prot, flags int) ([]byte, error)
	// Close is called once, when the FD is closed.
	Close() error
}

// Waiter is implemented by fake Backends whose reads can block (a fake
// umad device): it gives pollable fakes what the runtime poller gives real
// descriptors.
type Waiter interface {
	// WaitReadable blocks until a read would not block, the deadline
	// (when not zero) passes (os.ErrDeadlineExceeded) or the descriptor
	// is closed (os.ErrClosed).
	WaitReadable(deadline time.Time) error
	// Readable reports without blocking whether a read would find data.
	Readable() (bool, error)
	// DeadlineChanged is called by SetReadDeadline with the new
	// deadline: a Read or WaitReadable in progress must honour it from
	// now on (a deadline in the past wakes them at once).
	DeadlineChanged(deadline time.Time)
}

// readDeadline returns the fake descriptor's read deadline as set, its
// monotonic clock reading included: a deadline kept as wall-clock
// nanoseconds alone would be compared on the wall clock, which may step or
// run at another rate than the monotonic clock that context timers use
// (it does in a TCG guest), and a read could then give up before the
// context that set the deadline knows it is done.
func (fd *FD) readDeadline() time.Time {
	fd.dlMu.Lock()
	defer fd.dlMu.Unlock()
	return fd.deadline
}

// FD is an owned file descriptor. Its zero value is not usable; get one from
// [Open] or [NewFake].
type FD struct {
	name        string
	nonblocking bool

	// Real descriptors.
	raw  int
	file *os.File        // set for pollable (O_NONBLOCK) descriptors
	rc   syscall.RawConn // file's RawConn, cached
	wait *waitState      // WaitReadable's poller callback

	// Fake descriptors.
	be       Backend
	dlMu     sync.Mutex
	deadline time.Time // zero = none (fakes only)

	mu      sync.RWMutex // held shared by syscalls on raw, exclusively by Close
	closed  atomic.Bool
	track   *tracked
	cleanup runtime.Cleanup // closes a real descriptor dropped without Close
}

// dropped is what the cleanup of an FD dropped without Close releases;
// it must not reach the FD itself, or the cleanup would never run.
type dropped struct {
	raw   int
	file  *os.File
	track *tracked
}

// closeDropped closes the descriptor of an FD that became unreachable
// without Close: the safety net under every owner (a uverbs Context, a
// umad Port) that a caller forgot to close.
func closeDropped(d dropped) {
	untrack(d.track)
	if d.file != nil {
		d.file.Close()
		return
	}
	unix.Close(d.raw)
}

// Open opens path with flags|O_CLOEXEC. With O_NONBLOCK in flags the
// descriptor is registered with the runtime poller. Errors are *os.PathError
// values wrapping the errno.
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
		fd, err := newPollable(raw, path)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
	fd := &FD{name: path, raw: raw, track: track(path)}
	fd.cleanup = runtime.AddCleanup(fd, closeDropped, dropped{raw: raw, track: fd.track})
	return fd, nil
}

// newPollable owns raw, a non-blocking descriptor, through the runtime
// poller. On error raw is closed.
func newPollable(raw int, name string) (*FD, error) {
	fd := &FD{name: name, raw: raw, nonblocking: true}
	fd.file = os.NewFile(uintptr(raw), name)
	rc, err := fd.file.SyscallConn()
	if err != nil {
		fd.file.Close()
		return nil, err
	}
	fd.rc = rc
	fd.wait = newWaitState()
	fd.track = track(name)
	fd.cleanup = runtime.AddCleanup(fd, closeDropped, dropped{raw: raw, file: fd.file, track: fd.track})
	return fd, nil
}

// NewFake returns an FD whose system calls go to be instead of the kernel.
// name is what Name reports (for example "/dev/infiniband/uverbs0").
func NewFake(name string, be Backend, nonblocking bool) *FD {
	return &FD{name: name, raw: -1, be: be, nonblocking: nonblocking, track: track(name)}
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
	if fd == nil {
		return -1
	}
	if fd.be != nil || fd.closed.Load() {
		return -1
	}
	return fd.raw
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
	if fd.be != nil {
		return fd.be.Close()
	}
	// Wait for ioctls in flight on the number, then close it. Readers
	// parked in the poller hold no lock: os.File.Close wakes them.
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if fd.file != nil {
		return fd.file.Close()
	}
	return unix.Close(fd.raw)
}

// acquire takes the shared lock for a system call on the raw number.
func (fd *FD) acquire() error {
	fd.mu.RLock()
	if fd.closed.Load() {
		fd.mu.RUnlock()
		return os.ErrClosed
	}
	return nil
}

// Ioctl issues ioctl(fd, req, arg). The objects in keep (the owners of any
// memory whose address is inside *arg) are kept alive until the call
// returns. The error is the errno, or os.ErrClosed.
func (fd *FD) Ioctl(req uint, arg unsafe.Pointer, keep ...any) error {
	if fd == nil {
		return os.ErrClosed
	}
	if fd.be != nil {
		if fd.closed.Load() {
			return os.ErrClosed
		}
		err := fd.be.Ioctl(req, arg)
		runtime.KeepAlive(keep)
		return err
	}
	// Why a lock and a Syscall, not a bare RawSyscall (measured, issue 11):
	//
	//   - The shared lock is what keeps the number valid for the call:
	//     without it a Close racing this Ioctl could close the number and
	//     a concurrent open could reuse it, and the ioctl (a destroy, say)
	//     would go to another file. Uncontended, RLock and RUnlock are two
	//     atomic adds; Close is the only writer.
	//   - unix.Syscall, not RawSyscall, because uverbs ioctls sleep: object
	//     creation allocates GFP_KERNEL and takes the uobject locks
	//     (drivers/infiniband/core/rdma_core.c, rdma_alloc_begin_uobject),
	//     mlx5 runs firmware commands and waits for them (mlx5_cmd_exec),
	//     even QUERY_PORT may send a MAD to the firmware
	//     (mlx5_query_mad_ifc_port), MR registration pins pages. A
	//     RawSyscall would hold this goroutine's P through the sleep: other
	//     goroutines queued on it would wait, and a GC stop-the-world would
	//     wait for the ioctl. No uverbs method is promised not to sleep, so
	//     none gets the raw path.
	//   - The price, on the host (BenchmarkIoctlENOTTY against
	//     BenchmarkRawIoctlENOTTY, TCGETS on /dev/null, the cheapest ioctl
	//     there is): about 310 ns against 260-280 ns median, 0 allocations;
	//     a few tens of ns on calls that cost microseconds in the kernel
	//     (rxe's CQ create: tens of µs).
	if err := fd.acquire(); err != nil {
		return err
	}
	var errno syscall.Errno
	for {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, uintptr(fd.raw), uintptr(req), uintptr(arg))
		if errno != unix.EINTR {
			break
		}
	}
	fd.mu.RUnlock()
	runtime.KeepAlive(keep)
	if errno != 0 {
		return errno
	}
	return nil
}

// Read reads one record. On a pollable descriptor it waits, through the
// runtime poller, until data arrives, the read deadline passes
// (os.ErrDeadlineExceeded) or the descriptor is closed (os.ErrClosed). The
// error is otherwise the errno.
func (fd *FD) Read(p []byte) (int, error) {
	if fd == nil {
		return 0, os.ErrClosed
	}
	if fd.be != nil {
		if fd.closed.Load() {
			return 0, os.ErrClosed
		}
		return fd.be.Read(p, fd.readDeadline(), false)
	}
	if fd.file != nil {
		n, err := fd.file.Read(p)
		err = unwrapPathError(err)
		if err != nil && pollerGaveUp(err) {
			// The runtime poller saw EPOLLERR alone (a umad device
			// removed under the read: ib_umad_poll answers EPOLLERR) and
			// reports "not pollable"; the kernel's own answer is the
			// read's errno (EIO), so ask it once, without waiting.
			if n, rerr := fd.ReadNonblocking(p); rerr != unix.EAGAIN {
				return n, rerr
			}
			if _, perr := fd.Readable(); perr != nil {
				return 0, perr
			}
		}
		return n, err
	}
	if err := fd.acquire(); err != nil {
		return 0, err
	}
	defer fd.mu.RUnlock()
	for {
		n, err := unix.Read(fd.raw, p)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// ReadNonblocking reads one record if one is queued, and fails with EAGAIN
// otherwise, whatever the read deadline.
func (fd *FD) ReadNonblocking(p []byte) (int, error) {
	if fd == nil {
		return 0, os.ErrClosed
	}
	if fd.be != nil {
		if fd.closed.Load() {
			return 0, os.ErrClosed
		}
		return fd.be.Read(p, time.Time{}, true)
	}
	if !fd.nonblocking {
		return 0, fmt.Errorf("read %s: descriptor was not opened with O_NONBLOCK", fd.name)
	}
	// The descriptor is non-blocking, so a plain read(2) never parks; no
	// poller round trip (and no closure allocation) is needed.
	if err := fd.acquire(); err != nil {
		return 0, err
	}
	defer fd.mu.RUnlock()
	for {
		n, err := unix.Read(fd.raw, p)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// Readable reports, without waiting, whether a read would find data
// (poll(2) with a zero timeout). A descriptor in an error state (POLLERR,
// for example a removed device) gives EIO.
func (fd *FD) Readable() (bool, error) {
	if fd == nil {
		return false, os.ErrClosed
	}
	if fd.be != nil {
		if fd.closed.Load() {
			return false, os.ErrClosed
		}
		if w, ok := fd.be.(Waiter); ok {
			return w.Readable()
		}
		return false, os.ErrNoDeadline
	}
	if err := fd.acquire(); err != nil {
		return false, err
	}
	defer fd.mu.RUnlock()
	fds := [1]unix.PollFd{{Fd: int32(fd.raw), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
			return false, unix.EIO
		}
		return n > 0 && fds[0].Revents&unix.POLLIN != 0, nil
	}
}

// Write writes p in one write(2) call and returns the count the kernel
// accepted; the error is the errno or os.ErrClosed.
func (fd *FD) Write(p []byte) (int, error) {
	if fd == nil {
		return 0, os.ErrClosed
	}
	if fd.be != nil {
		if fd.closed.Load() {
			return 0, os.ErrClosed
		}
		return fd.be.Write(p)
	}
	if err := fd.acquire(); err != nil {
		return 0, err
	}
	defer fd.mu.RUnlock()
	for {
		n, err := unix.Write(fd.raw, p)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// SetReadDeadline sets the time after which a pending or future Read fails
// with os.ErrDeadlineExceeded; the zero time means no deadline. Only
// pollable (O_NONBLOCK) and fake descriptors support deadlines.
func (fd *FD) SetReadDeadline(t time.Time) error {
	if fd == nil {
		return os.ErrClosed
	}
	if fd.be != nil {
		fd.dlMu.Lock()
		fd.deadline = t
		fd.dlMu.Unlock()
		if w, ok := fd.be.(Waiter); ok {
			w.DeadlineChanged(t)
		}
		return nil
	}
	if fd.file == nil {
		return os.ErrNoDeadline
	}
	return fd.file.SetReadDeadline(t)
}

// WaitReadable blocks until a read would not block, the read deadline passes
// (os.ErrDeadlineExceeded) or the descriptor is closed (os.ErrClosed). It
// consumes nothing. Only pollable descriptors support it.
func (fd *FD) WaitReadable() error {
	if fd == nil {
		return os.ErrClosed
	}
	if fd.be != nil {
		if fd.closed.Load() {
			return os.ErrClosed
		}
		w, ok := fd.be.(Waiter)
		if !ok {
			return os.ErrNoDeadline
		}
		return w.WaitReadable(fd.readDeadline())
	}
	if fd.file == nil {
		return os.ErrNoDeadline
	}
	w := fd.wait
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = nil
	if err := fd.rc.Read(w.fn); err != nil {
		if pollerGaveUp(err) {
			// As in Read: EPOLLERR alone is the kernel's error state,
			// which poll(2) reports as POLLERR, given here as EIO.
			if _, perr := fd.Readable(); perr != nil {
				return perr
			}
		}
		return err
	}
	return w.err
}

// pollerGaveUp reports whether err is the runtime poller's own failure
// rather than the kernel's errno, a deadline or a close: internal/poll's
// unexported ErrNotPollable ("not pollable"), which a wait reports when
// epoll returned EPOLLERR alone for the descriptor.
func pollerGaveUp(err error) bool {
	var errno syscall.Errno
	return !errors.As(err, &errno) && !errors.Is(err, os.ErrDeadlineExceeded) &&
		!errors.Is(err, os.ErrClosed) && err != io.EOF
}

// waitState is what WaitReadable hands the runtime poller: a callback made
// once per descriptor (a closure per call would allocate on a hot path) and
// the poll(2) result it reports back.
type waitState struct {
	mu  sync.Mutex
	fn  func(uintptr) bool // w.poll, bound once
	err error
	pfd [1]unix.PollFd
}

func newWaitState() *waitState {
	w := &waitState{}
	w.fn = w.poll
	return w
}

// poll looks once, without blocking; returning false makes the poller wait
// for readability and call it again.
func (w *waitState) poll(s uintptr) bool {
	w.pfd[0] = unix.PollFd{Fd: int32(s), Events: unix.POLLIN}
	n, err := unix.Poll(w.pfd[:], 0)
	switch {
	case err == unix.EINTR:
		return false
	case err != nil:
		w.err = err
		return true
	case n > 0 && w.pfd[0].Revents&(unix.POLLERR|unix.POLLNVAL) != 0:
		w.err = unix.EIO
		return true
	}
	return n > 0
}

// Mmap maps length bytes of the descriptor at offset.
func (fd *FD) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	if fd == nil {
		return nil, os.ErrClosed
	}
	if length <= 0 {
		return nil, unix.EINVAL
	}
	if fd.be != nil {
		if fd.closed.Load() {
			return nil, os.ErrClosed
		}
		return fd.be.Mmap(offset, length, prot, flags)
	}
	if err := fd.acquire(); err != nil {
		return nil, err
	}
	defer fd.mu.RUnlock()
	return unix.Mmap(fd.raw, offset, length, prot, flags)
}

// Munmap unmaps memory returned by Mmap or MmapAnon.
func Munmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	forgetAnon(b)
	return unix.Munmap(b)
}

// MmapAnon returns length bytes of zeroed, private, anonymous memory outside
// the Go heap: rings and doorbell records the device keeps using after the
// call that registered them live there. Release it with Munmap.
func MmapAnon(length int) ([]byte, error) {
	if length <= 0 {
		return nil, unix.EINVAL
	}
	b, err := unix.Mmap(-1, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
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
}

var (
	liveMu sync.Mutex
	live   = map[*tracked]struct{}{}
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
	live[t] = struct{}{}
	liveMu.Unlock()
	return t
}

func untrack(t *tracked) {
	liveMu.Lock()
	delete(live, t)
	liveMu.Unlock()
}

// Live describes every FD, real or fake, that was opened and not closed yet,
// sorted; with TraceStacks each entry includes the opening stack.
func Live() []string {
	liveMu.Lock()
	defer liveMu.Unlock()
	out := make([]string, 0, len(live))
	for t := range live {
		s := t.name
		if t.stack != "" {
			s += "\n" + t.stack
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
