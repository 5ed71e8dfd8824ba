package fakekernel

import (
	"encoding/binary"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/internal/sys"
)

// eventQueue is an async event file or a completion channel
// (ib_uverbs_event_queue): records of eventsz bytes, one per read(2).
type eventQueue struct {
	eventsz int

	mu      sync.Mutex
	wake    chan struct{} // closed and replaced on every change
	recs    [][]byte
	err     error // set when the device is gone: reads past the queue fail with it
	closed  bool
	adopted bool
	onClose func()

	onCloseLog func()
	deadline   time.Time // the descriptor's read deadline (sys.Waiter)
}

func newEventQueue(eventsz int) *eventQueue {
	return &eventQueue{eventsz: eventsz, wake: make(chan struct{})}
}

func (q *eventQueue) changed() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// post queues struct ib_uverbs_async_event_desc {element, event_type} or,
// for a completion channel, struct ib_uverbs_comp_event_desc {cq_handle}.
func (q *eventQueue) post(element uint64, eventType uint32) {
	rec := binary.LittleEndian.AppendUint64(nil, element)
	if q.eventsz == 16 {
		rec = binary.LittleEndian.AppendUint32(rec, eventType)
		rec = binary.LittleEndian.AppendUint32(rec, 0)
	}
	q.mu.Lock()
	q.recs = append(q.recs, rec)
	q.changed()
	q.mu.Unlock()
}

func (q *eventQueue) fail(err error) {
	q.mu.Lock()
	q.err = err
	q.changed()
	q.mu.Unlock()
}

// Read is ib_uverbs_event_read: one event per call, EINVAL for a buffer
// shorter than an event, EAGAIN when non-blocking and empty, the device's
// error (EIO) once it is gone and the queue is empty.
func (q *eventQueue) Read(p []byte, deadline time.Time, nonblocking bool) (int, error) {
	q.mu.Lock()
	q.deadline = deadline
	q.mu.Unlock()
	for {
		q.mu.Lock()
		switch {
		case q.closed:
			q.mu.Unlock()
			return 0, os.ErrClosed
		case len(q.recs) > 0:
			if len(p) < q.eventsz {
				q.mu.Unlock()
				return 0, syscall.EINVAL
			}
			n := copy(p, q.recs[0])
			q.recs = q.recs[1:]
			q.mu.Unlock()
			return n, nil
		case q.err != nil:
			q.mu.Unlock()
			return 0, q.err
		case nonblocking:
			q.mu.Unlock()
			return 0, syscall.EAGAIN
		}
		if err := q.waitLocked(); err != nil {
			return 0, err
		}
	}
}

// waitLocked waits, with q.mu held on entry and released on return, for a
// change of the queue or the deadline to pass.
func (q *eventQueue) waitLocked() error {
	wake, dl := q.wake, q.deadline
	q.mu.Unlock()
	var timeout <-chan time.Time
	if !dl.IsZero() {
		d := time.Until(dl)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-wake:
		return nil
	case <-timeout:
		return os.ErrDeadlineExceeded
	}
}

// WaitReadable implements sys.Waiter.
func (q *eventQueue) WaitReadable(deadline time.Time) error {
	q.mu.Lock()
	q.deadline = deadline
	q.mu.Unlock()
	for {
		q.mu.Lock()
		switch {
		case q.closed:
			q.mu.Unlock()
			return os.ErrClosed
		case len(q.recs) > 0 || q.err != nil:
			q.mu.Unlock()
			return nil
		}
		if err := q.waitLocked(); err != nil {
			return err
		}
	}
}

// Readable implements sys.Waiter.
func (q *eventQueue) Readable() (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, os.ErrClosed
	}
	return len(q.recs) > 0 || q.err != nil, nil
}

// DeadlineChanged implements sys.Waiter: a read in progress honours the
// new deadline (one in the past wakes it at once). The same deadline again
// wakes nothing (and allocates nothing: GetEvent sets its context's
// deadline, none for context.Background, on every call).
func (q *eventQueue) DeadlineChanged(deadline time.Time) {
	q.mu.Lock()
	if !q.deadline.Equal(deadline) {
		q.deadline = deadline
		q.changed()
	}
	q.mu.Unlock()
}

// Write, Ioctl and Mmap fail as on the kernel's event files.
func (q *eventQueue) Write([]byte) (int, error)                 { return 0, syscall.EINVAL }
func (q *eventQueue) Ioctl(uint, unsafe.Pointer) error          { return syscall.ENOTTY }
func (q *eventQueue) Mmap(int64, int, int, int) ([]byte, error) { return nil, syscall.ENODEV }

// Close releases the descriptor; a pending Read returns os.ErrClosed.
func (q *eventQueue) Close() error {
	q.mu.Lock()
	q.closed = true
	q.changed()
	f, l := q.onClose, q.onCloseLog
	q.mu.Unlock()
	if f != nil {
		f()
	}
	if l != nil {
		l()
	}
	return nil
}

// Adopt implements sys.Adopter: descriptor raw is an event file or
// completion channel the device created for this file (EBADF otherwise, or
// when it was adopted already).
func (f *File) Adopt(raw int) (sys.Backend, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.fds[int64(raw)]
	if !ok {
		return nil, syscall.EBADF
	}
	q, ok := o.Value.(*eventQueue)
	if !ok {
		return nil, syscall.EBADF
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.adopted {
		return nil, syscall.EBADF
	}
	q.adopted = true
	q.onClose = func() {
		f.mu.Lock()
		if f.fds[int64(raw)] == o {
			delete(f.fds, int64(raw))
		}
		f.mu.Unlock()
	}
	return q, nil
}

var (
	_ sys.Adopter = (*File)(nil)
	_ sys.Waiter  = (*eventQueue)(nil)
)
