package sys

import (
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// The test seam: an FD made by NewFake sends its system calls to a Backend
// instead of the kernel (internal/testmodel/fakekernel provides them), so the library
// above the seam runs unchanged in unit tests.

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

// Adopter is implemented by a Backend whose calls can create descriptors
// (the fake uverbs device: the async event file, completion channels). Adopt
// returns the Backend of descriptor raw, which the Backend handed out, or an
// errno (EBADF when raw is not one of its descriptors).
type Adopter interface {
	Adopt(raw int) (Backend, error)
}

// NewFake returns an FD whose system calls go to be instead of the kernel.
// name is what Name reports (for example "/dev/infiniband/uverbs0").
// A Backend's Read is told per call whether it may block.
func NewFake(name string, be Backend) *FD {
	fd := &FD{name: name, track: track(name)}
	fd.ops = &fakeFD{be: be}
	return fd
}

// fakeFD is the ops of a fake descriptor.
type fakeFD struct {
	be Backend

	dlMu     sync.Mutex
	deadline time.Time // zero = none
}

func (f *fakeFD) number() int  { return -1 }
func (f *fakeFD) close() error { return f.be.Close() }

func (f *fakeFD) ioctl(req uint, arg unsafe.Pointer) error { return f.be.Ioctl(req, arg) }

func (f *fakeFD) read(p []byte) (int, error) { return f.be.Read(p, f.readDeadline(), false) }

func (f *fakeFD) readNonblocking(p []byte) (int, error) { return f.be.Read(p, time.Time{}, true) }

func (f *fakeFD) readable() (bool, error) {
	if w, ok := f.be.(Waiter); ok {
		return w.Readable()
	}
	return false, os.ErrNoDeadline
}

func (f *fakeFD) write(p []byte) (int, error) { return f.be.Write(p) }

func (f *fakeFD) rawWrite(p unsafe.Pointer, n int) (int, error) {
	return f.be.Write(unsafe.Slice((*byte)(p), n))
}

func (f *fakeFD) setReadDeadline(t time.Time) error {
	f.dlMu.Lock()
	f.deadline = t
	f.dlMu.Unlock()
	if w, ok := f.be.(Waiter); ok {
		w.DeadlineChanged(t)
	}
	return nil
}

// readDeadline returns the read deadline as set, its monotonic clock
// reading included: a deadline kept as wall-clock nanoseconds alone would
// be compared on the wall clock, which may step or run at another rate
// than the monotonic clock that context timers use (it does in a TCG
// guest), and a read could then give up before the context that set the
// deadline knows it is done.
func (f *fakeFD) readDeadline() time.Time {
	f.dlMu.Lock()
	defer f.dlMu.Unlock()
	return f.deadline
}

func (f *fakeFD) waitReadable() error {
	w, ok := f.be.(Waiter)
	if !ok {
		return os.ErrNoDeadline
	}
	return w.WaitReadable(f.readDeadline())
}

func (f *fakeFD) mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	return f.be.Mmap(offset, length, prot, flags)
}

func (f *fakeFD) adopt(raw int, name string) (*FD, error) {
	a, ok := f.be.(Adopter)
	if !ok {
		return nil, syscall.EBADF
	}
	be, err := a.Adopt(raw)
	if err != nil {
		return nil, err
	}
	return NewFake(name, be), nil
}

// readBlocking is the Backend's blocking Read without a deadline: the
// fake's Close wakes it, as close wakes a real blocking read.
func (f *fakeFD) readBlocking(p []byte) (int, error) { return f.be.Read(p, time.Time{}, false) }
