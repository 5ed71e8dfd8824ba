package sys

import (
	"context"
	"errors"
	"os"
	"time"
)

// ReadContext reads one record from a pollable descriptor, like Read,
// giving up when ctx is done (ctx.Err()). Close wakes it (os.ErrClosed).
// uverbs' event files read with it.
//
// A context that can never be done (Done returns nil: context.Background,
// context.WithoutCancel) waits in epoll_wait(2), a blocking system call,
// on a set of the descriptor and a wake-up descriptor that Close writes
// (made at the first such wait), then reads: two system calls and no
// allocation, as a C program's blocking read, where
// the runtime poller would park the goroutine, block the thread in
// epoll_pwait, wake it and read again, with the scheduler's and sysmon's
// work around each wait. The thread keeps its P while it waits, unless
// sysmon takes it back for goroutines that wait for one (or after 10
// ms). The read deadline (SetReadDeadline) does not apply to that wait:
// ReadContext's deadline is ctx's, and it has none.
//
// Any other context waits in the runtime poller, with ctx's deadline as
// the read deadline and its cancellation as a deadline in the past.
func (fd *FD) ReadContext(ctx context.Context, p []byte) (int, error) {
	if ctx.Done() == nil {
		if _, ok := ctx.Deadline(); !ok {
			if !fd.open() {
				return 0, os.ErrClosed
			}
			return fd.ops.readBlocking(p)
		}
	}
	var n int
	err := fd.withContext(ctx, func() (err error) {
		n, err = fd.Read(p)
		return err
	})
	return n, err
}

// WaitReadableContext waits until a pollable descriptor is readable, like
// WaitReadable, giving up when ctx is done (ctx.Err()). The rdma_cm
// device, whose events are read by a write, waits with it.
func (fd *FD) WaitReadableContext(ctx context.Context) error {
	return fd.withContext(ctx, fd.WaitReadable)
}

// withContext runs op, a read or a wait on fd, so that it ends when ctx
// is done: ctx's deadline becomes the read deadline, and cancellation
// sets a deadline in the past, which wakes op. Close wakes it too.
//
// A context that can never be done (context.Background, context.TODO:
// Done returns nil) needs no wake-up, and nothing is allocated, which
// keeps an event loop allocation-free. A cancellable context costs the
// context.AfterFunc registration and its channel (a few small
// allocations) a call.
func (fd *FD) withContext(ctx context.Context, op func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dl, _ := ctx.Deadline()
	if err := fd.SetReadDeadline(dl); err != nil {
		return err
	}
	if ctx.Done() == nil {
		return op()
	}
	woke := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		fd.SetReadDeadline(time.Unix(1, 0))
		close(woke)
	})
	err := op()
	stopped := stop()
	if !stopped {
		// The wake-up ran or is running: let it finish, so that its past
		// deadline cannot land on the next call.
		<-woke
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && (!stopped || errors.Is(err, os.ErrDeadlineExceeded)) {
		return ctx.Err() // ctx ended during op
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && !dl.IsZero() {
		// The only deadline set here is ctx's own: op may see it pass a
		// moment before ctx's timer fires.
		return context.DeadlineExceeded
	}
	return err
}
