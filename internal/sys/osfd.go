package sys

import (
	"errors"
	"fmt"
	"io"
	"os"

	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// osFD is a kernel descriptor: the ops every FD outside unit tests has.
//
// A non-blocking descriptor joins the runtime poller only when a call
// needs it (poller: Read, WaitReadable, a read deadline), not when it is
// opened: a uverbs context's async event file and its completion channels
// are often never read that way, and the registration costs system calls
// (fcntl, epoll_ctl ADD, and DEL at close) that ibv_open_device does not
// make. The blocking read (readBlocking, ReadContext's with a context that
// cannot be done) does not use the poller at all: it sleeps in
// epoll_wait(2) on a set of its own holding the descriptor and a wake-up
// eventfd that close writes.
type osFD struct {
	name        string
	raw         int
	nonblocking bool // O_NONBLOCK: may join the runtime poller

	pf  atomic.Pointer[pollFile] // the poller registration, once made
	pmu sync.Mutex               // serializes making it

	wmu     sync.Mutex // guards closing and the making of wake
	closing bool       // close has begun: no new wake-up descriptor
	// wake is the eventfd close writes to wake blocking waits, plus one
	// (0: none yet), and ep the epoll set the waits sleep on (raw and
	// wake); set once, ep first, under wmu, read without it.
	wake atomic.Int32
	ep   int32

	mu     sync.RWMutex // held shared by system calls on raw, exclusively by close
	closed bool         // under mu

	waits atomic.Uint32 // blocking waits made, for the yield every yieldEvery
}

// yieldEvery is how often a blocking wait first yields (YieldP): every
// eighth keeps the scheduler's tick moving for events up to 1.2 ms apart.
const yieldEvery = 8

// pollFile is a descriptor's runtime poller registration: raw as an
// *os.File, which owns the number from then on.
type pollFile struct {
	file *os.File
	rc   syscall.RawConn // file's RawConn, cached
	wait *waitState      // waitReadable's poller callback
}

func (o *osFD) number() int { return o.raw }

// close wakes the blocking waits, waits for system calls in flight on the
// number, then closes it. Readers parked in the runtime poller hold no
// lock: os.File.Close wakes them.
func (o *osFD) close() error {
	// A blocking wait sleeps in epoll_wait(2) holding the shared lock: wake it
	// before taking the lock exclusively.
	o.wmu.Lock()
	o.closing = true
	if w := o.wake.Load(); w != 0 {
		one := [8]byte{1}
		unix.Write(int(w-1), one[:])
	}
	o.wmu.Unlock()

	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	if w := o.wake.Load(); w != 0 {
		unix.Close(int(o.ep)) // no wait holds them now: they hold mu
		unix.Close(int(w - 1))
	}
	if p := o.pf.Load(); p != nil {
		return p.file.Close()
	}
	return unix.Close(o.raw)
}

// poller returns the descriptor's runtime poller registration, making it
// on first use; os.ErrNoDeadline for a blocking descriptor.
func (o *osFD) poller() (*pollFile, error) {
	if p := o.pf.Load(); p != nil {
		return p, nil
	}
	if !o.nonblocking {
		return nil, os.ErrNoDeadline
	}
	// Under the shared lock, so that close cannot close the number
	// (which another open could then reuse) while it is being wrapped.
	if err := o.acquire(); err != nil {
		return nil, err
	}
	defer o.mu.RUnlock()
	o.pmu.Lock()
	defer o.pmu.Unlock()
	if p := o.pf.Load(); p != nil {
		return p, nil
	}
	f := os.NewFile(uintptr(o.raw), o.name)
	rc, err := f.SyscallConn()
	if err != nil {
		// Not for a non-nil file; were it, the number stays raw's.
		return nil, err
	}
	p := &pollFile{file: f, rc: rc, wait: newWaitState()}
	o.pf.Store(p)
	return p, nil
}

// waitSet returns the epoll set of raw and the eventfd that close writes,
// and the eventfd, making them on first use. The caller holds the shared
// lock. Once they exist a wait needs no lock to find them: close writes
// the eventfd after it set closing, and it stays readable, so a wait that
// starts late still wakes at once.
//
// An epoll set, made once, rather than poll(2) of the two descriptors at
// each wait: poll registers on and unregisters from both wait queues
// every time, about 1 k kernel instructions an event more (make
// bench-insn's rc_pingpong profile), where rdma-core's blocking read
// registers on one.
func (o *osFD) waitSet() (ep, efd int, err error) {
	if w := o.wake.Load(); w != 0 {
		return int(o.ep), int(w - 1), nil
	}
	return o.newWaitSet()
}

// newWaitSet is waitSet's first use.
func (o *osFD) newWaitSet() (int, int, error) {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	if o.closing {
		return -1, -1, os.ErrClosed
	}
	if w := o.wake.Load(); w != 0 {
		return int(o.ep), int(w - 1), nil
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, -1, err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err == nil {
		err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, o.raw, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(o.raw)})
		if err == nil {
			err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)})
		}
		if err != nil {
			unix.Close(ep)
		}
	}
	if err != nil {
		unix.Close(efd)
		return -1, -1, err
	}
	o.ep = int32(ep)
	o.wake.Store(int32(efd) + 1) // after ep: a wait that sees wake sees ep
	return ep, efd, nil
}

// pollBlocking sleeps in epoll_wait(2), a blocking system call
// (unix.EpollWait is a Syscall: the P stays with this thread unless sysmon
// hands it off), until raw is readable or in an error state, or close
// wrote the wake-up descriptor (os.ErrClosed). It returns raw's events as
// poll(2) revents (the EPOLL bits are the POLL ones). The caller holds the
// shared lock.
func (o *osFD) pollBlocking() (int16, error) {
	ep, efd, err := o.waitSet()
	if err != nil {
		return 0, err
	}
	var evs [2]unix.EpollEvent
	for {
		n, err := unix.EpollWait(ep, evs[:], -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		var rev int16
		for _, e := range evs[:n] {
			if int(e.Fd) == efd {
				return 0, os.ErrClosed
			}
			rev |= int16(e.Events)
		}
		if rev != 0 {
			return rev, nil
		}
	}
}

// readBlocking reads one record, waiting for it in pollBlocking: without
// the runtime poller, so without a deadline; close wakes it.
func (o *osFD) readBlocking(p []byte) (int, error) {
	if !o.nonblocking {
		return 0, os.ErrNoDeadline
	}
	if err := o.acquire(); err != nil {
		return 0, err
	}
	n, err := o.readBlockingLocked(p)
	o.mu.RUnlock()
	return n, err
}

// readBlockingLocked is readBlocking's loop, under the shared lock.
func (o *osFD) readBlockingLocked(p []byte) (int, error) {
	if o.waits.Add(1)%yieldEvery == 0 {
		YieldP()
	}
	for {
		rev, err := o.pollBlocking()
		if err != nil {
			return 0, err
		}
		// Non-blocking, and poll saw a record: the read does not sleep,
		// so it need not tell the scheduler (as rawWrite).
		r, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(o.raw), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		switch {
		case errno == 0:
			return int(r), nil
		case errno == unix.EINTR:
		case errno != unix.EAGAIN:
			return 0, errno
		case rev&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0:
			// An error state with nothing to read: as readable says.
			return 0, unix.EIO
		}
		// Another reader of the number took the record: wait again.
	}
}

// acquire takes the shared lock for a system call on the raw number.
func (o *osFD) acquire() error {
	o.mu.RLock()
	if o.closed {
		o.mu.RUnlock()
		return os.ErrClosed
	}
	return nil
}

func (o *osFD) ioctl(req uint, arg unsafe.Pointer) error {
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
	if err := o.acquire(); err != nil {
		return err
	}
	err := IoctlNumber(o.raw, req, arg)
	o.mu.RUnlock()
	return err
}

func (o *osFD) read(p []byte) (int, error) {
	if o.nonblocking {
		pf, err := o.poller()
		if err != nil {
			return 0, err
		}
		n, err := pf.file.Read(p)
		err = unwrapPathError(err)
		if err != nil && pollerGaveUp(err) {
			// The runtime poller saw EPOLLERR alone (a umad device
			// removed under the read: ib_umad_poll answers EPOLLERR) and
			// reports "not pollable"; the kernel's own answer is the
			// read's errno (EIO), so ask it once, without waiting.
			if n, rerr := o.readNonblocking(p); rerr != unix.EAGAIN {
				return n, rerr
			}
			if _, perr := o.readable(); perr != nil {
				return 0, perr
			}
		}
		return n, err
	}
	if err := o.acquire(); err != nil {
		return 0, err
	}
	defer o.mu.RUnlock()
	for {
		n, err := unix.Read(o.raw, p)
		if err != unix.EINTR {
			return n, err
		}
	}
}

func (o *osFD) readNonblocking(p []byte) (int, error) {
	if !o.nonblocking {
		return 0, fmt.Errorf("read %s: descriptor was not opened with O_NONBLOCK", o.name)
	}
	// The descriptor is non-blocking, so a plain read(2) never parks; no
	// poller round trip (and no closure allocation) is needed.
	if err := o.acquire(); err != nil {
		return 0, err
	}
	n, err := rwNumber(unix.SYS_READ, o.raw, p) // no defer: the hot path of every MAD
	o.mu.RUnlock()
	return n, err
}

func (o *osFD) readable() (bool, error) {
	if err := o.acquire(); err != nil {
		return false, err
	}
	defer o.mu.RUnlock()
	fds := [1]unix.PollFd{{Fd: int32(o.raw), Events: unix.POLLIN}}
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

func (o *osFD) write(p []byte) (int, error) {
	if err := o.acquire(); err != nil {
		return 0, err
	}
	n, err := rwNumber(unix.SYS_WRITE, o.raw, p) // no defer: the hot path of every MAD
	o.mu.RUnlock()
	return n, err
}

// rawWrite is RawWrite's system call: the doorbell write never blocks (the
// uverbs POST_SEND handler runs to completion), so the scheduler need not
// know about it.
func (o *osFD) rawWrite(p unsafe.Pointer, n int) (int, error) {
	if err := o.acquire(); err != nil {
		return 0, err
	}
	r, err := RawWriteNumber(o.raw, p, n)
	o.mu.RUnlock()
	return r, err
}

func (o *osFD) setReadDeadline(t time.Time) error {
	if !o.nonblocking {
		return os.ErrNoDeadline
	}
	if t.IsZero() && o.pf.Load() == nil {
		// No deadline on a descriptor not in the poller yet: nothing to
		// clear, and no reason to register it.
		if err := o.acquire(); err != nil {
			return err
		}
		o.mu.RUnlock()
		return nil
	}
	pf, err := o.poller()
	if err != nil {
		return err
	}
	return pf.file.SetReadDeadline(t)
}

func (o *osFD) waitReadable() error {
	pf, err := o.poller()
	if err != nil {
		return err
	}
	w := pf.wait
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = nil
	if err := pf.rc.Read(w.fn); err != nil {
		if pollerGaveUp(err) {
			// As in read: EPOLLERR alone is the kernel's error state,
			// which poll(2) reports as POLLERR, given here as EIO.
			if _, perr := o.readable(); perr != nil {
				return perr
			}
		}
		return err
	}
	return w.err
}

func (o *osFD) mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	if err := o.acquire(); err != nil {
		return nil, err
	}
	defer o.mu.RUnlock()
	return mmap(o.raw, offset, length, prot, flags)
}

func (o *osFD) adopt(raw int, name string) (*FD, error) {
	if raw < 0 {
		return nil, syscall.EBADF
	}
	// One F_SETFL, without the F_GETFL of unix.SetNonblock: the kernel
	// made raw a moment ago and set none of the other flags F_SETFL
	// changes (O_APPEND, O_ASYNC, O_DIRECT, O_NOATIME); the access mode
	// is not among them.
	for {
		_, err := unix.FcntlInt(uintptr(raw), unix.F_SETFL, unix.O_NONBLOCK)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(raw)
			return nil, err
		}
		break
	}
	return newPollable(raw, name), nil
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

// waitState is what waitReadable hands the runtime poller: a callback made
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
