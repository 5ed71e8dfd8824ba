package sys

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// adoptedPipe returns a pipe's read end adopted as an FD (as uverbs adopts
// an event file) and its write end, closed at the end of the test.
func adoptedPipe(t *testing.T) (*FD, int) {
	t.Helper()
	parent, err := Open("/dev/null", unix.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[1]) })
	fd, err := parent.Adopt(p[0], "pipe")
	if err != nil {
		t.Fatal(err)
	}
	return fd, p[1]
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// registered reports whether fd joined the runtime poller.
func registered(fd *FD) bool { return fd.ops.(*osFD).pf.Load() != nil }

// readAsync starts ReadContext(ctx) in a goroutine and returns its result
// channel once the read had time to block.
func readAsync(ctx context.Context, fd *FD, buf []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := fd.ReadContext(ctx, buf)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	return done
}

func wait(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the read did not return", what)
		return nil
	}
}

// A context that cannot be done reads through a blocking epoll_wait(2),
// not the runtime poller: data wakes it, Close wakes it with os.ErrClosed,
// and the wake-up eventfd and the epoll set are closed with the
// descriptor.
func TestReadContextBlocking(t *testing.T) {
	before := openFDs(t)
	fd, w := adoptedPipe(t)
	if registered(fd) {
		t.Error("Adopt registered the descriptor with the runtime poller")
	}
	buf := make([]byte, 8)
	bg := context.Background()
	done := readAsync(bg, fd, buf)
	select {
	case err := <-done:
		t.Fatalf("ReadContext returned with nothing queued: %v", err)
	default:
	}
	unix.Write(w, []byte("ev"))
	if err := wait(t, done, "data"); err != nil || string(buf[:2]) != "ev" {
		t.Fatalf("ReadContext woken by data = %q, %v", buf[:2], err)
	}
	// Queued already: no wait.
	unix.Write(w, []byte("e2"))
	if n, err := fd.ReadContext(context.WithoutCancel(bg), buf); err != nil || string(buf[:n]) != "e2" {
		t.Fatalf("ReadContext of a queued record = %q, %v", buf[:n], err)
	}
	if registered(fd) {
		t.Error("the blocking read registered the descriptor with the runtime poller")
	}
	if got := openFDs(t); got != before+4 { // the pipe's two ends, the eventfd and the epoll set
		t.Errorf("%d descriptors open, want %d", got, before+4)
	}
	done = readAsync(bg, fd, buf)
	if err := fd.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done, "Close"); !errors.Is(err, os.ErrClosed) {
		t.Errorf("blocking ReadContext after Close: %v, want os.ErrClosed", err)
	}
	if _, err := fd.ReadContext(bg, buf); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadContext on a closed descriptor: %v", err)
	}
	if got := openFDs(t); got != before+1 { // the write end
		t.Errorf("%d descriptors open after Close, want %d: the eventfd leaked", got, before+1)
	}
}

// A cancellable context still waits in the runtime poller, and the two
// kinds of wait mix on one descriptor.
func TestReadContextCancellableAndBlocking(t *testing.T) {
	fd, w := adoptedPipe(t)
	defer fd.Close()
	buf := make([]byte, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := readAsync(ctx, fd, buf)
	cancel()
	if err := wait(t, done, "cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadContext cancelled: %v", err)
	}
	if !registered(fd) {
		t.Error("a cancellable wait did not use the runtime poller")
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer tcancel()
	if _, err := fd.ReadContext(tctx, buf); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ReadContext past its deadline: %v", err)
	}
	// The poller's deadline, left in the past by the cancellation, does
	// not end a blocking wait.
	done = readAsync(context.Background(), fd, buf)
	unix.Write(w, []byte("ev"))
	if err := wait(t, done, "data"); err != nil || string(buf[:2]) != "ev" {
		t.Errorf("blocking ReadContext after a cancelled one = %q, %v", buf[:2], err)
	}
	unix.Write(w, []byte("e3"))
	vctx, vcancel := context.WithCancel(context.Background())
	defer vcancel()
	if n, err := fd.ReadContext(vctx, buf); err != nil || string(buf[:n]) != "e3" {
		t.Errorf("cancellable ReadContext after a blocking one = %q, %v", buf[:n], err)
	}
}

// Close racing with blocking reads that are starting: each returns (data
// or os.ErrClosed), none is left asleep.
func TestReadContextBlockingCloseRace(t *testing.T) {
	for range 50 {
		fd, _ := adoptedPipe(t)
		var wg sync.WaitGroup
		errc := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := fd.ReadContext(context.Background(), make([]byte, 8))
				errc <- err
			}()
		}
		fd.Close()
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("a blocking ReadContext was not woken by Close")
		}
		close(errc)
		for err := range errc {
			if !errors.Is(err, os.ErrClosed) {
				t.Errorf("ReadContext racing Close: %v, want os.ErrClosed", err)
			}
		}
	}
}

func TestReadContextBlockingAllocatesNothing(t *testing.T) {
	fd, w := adoptedPipe(t)
	defer fd.Close()
	buf := make([]byte, 8)
	msg := []byte("x")
	bg := context.Background()
	n := testing.AllocsPerRun(100, func() {
		unix.Write(w, msg)
		if _, err := fd.ReadContext(bg, buf); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("ReadContext(context.Background()): %v allocations per call, want 0", n)
	}
}

// Opening a pollable descriptor registers nothing with the runtime
// poller; the first call that needs it does, and Close still wakes a
// reader parked there.
func TestPollerRegistrationIsLazy(t *testing.T) {
	fd, err := Open(fifo(t), unix.O_RDWR|unix.O_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	fd.ReadNonblocking(buf)
	fd.Readable()
	if err := fd.SetReadDeadline(time.Time{}); err != nil {
		t.Errorf("SetReadDeadline(zero): %v", err)
	}
	if registered(fd) {
		t.Fatal("registered before any call needed the poller")
	}
	if err := fd.SetReadDeadline(time.Now().Add(time.Hour)); err != nil || !registered(fd) {
		t.Fatalf("SetReadDeadline: %v, registered %v", err, registered(fd))
	}
	fd.SetReadDeadline(time.Time{})
	fd2, err := Open(fifo(t), unix.O_RDWR|unix.O_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := fd2.Read(buf)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if !registered(fd2) {
		t.Error("Read did not register the descriptor")
	}
	fd2.Close()
	if err := wait(t, done, "Close"); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read parked in the poller after Close: %v", err)
	}
	fd.Close()
	if err := fd.SetReadDeadline(time.Time{}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("SetReadDeadline after Close: %v", err)
	}
}

type readRecordingBackend struct {
	recordingBackend
	readDeadline    time.Time
	readNonblocking bool
}

func (b *readRecordingBackend) Read(p []byte, dl time.Time, nonblocking bool) (int, error) {
	b.readDeadline, b.readNonblocking = dl, nonblocking
	return len(p), nil
}

// A fake's blocking read is its Backend's Read without a deadline.
func TestFakeReadContextBlocking(t *testing.T) {
	be := &readRecordingBackend{}
	fd := NewFake("fake", be)
	defer fd.Close()
	fd.SetReadDeadline(time.Now().Add(time.Hour))
	if _, err := fd.ReadContext(context.Background(), make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if !be.readDeadline.IsZero() || be.readNonblocking {
		t.Errorf("Backend.Read saw deadline %v, nonblocking %v; want none, blocking", be.readDeadline, be.readNonblocking)
	}
}
