package sys

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	TraceStacks = true
	code := m.Run()
	if l := Live(); len(l) > 0 && code == 0 {
		for _, s := range l {
			os.Stderr.WriteString("leaked descriptor: " + s + "\n")
		}
		code = 1
	}
	os.Exit(code)
}

func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenCloexecAndIdempotentClose(t *testing.T) {
	fd, err := Open("/dev/null", unix.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	flags, err := unix.FcntlInt(uintptr(fd.Raw()), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Error("descriptor opened without FD_CLOEXEC")
	}
	if len(Live()) != 1 {
		t.Errorf("Live() = %v, want one entry", Live())
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func(i int) { defer wg.Done(); errs[i] = fd.Close() }(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if fd.Raw() != -1 {
		t.Error("Raw after Close is not -1")
	}
	if len(Live()) != 0 {
		t.Errorf("Live() after Close = %v", Live())
	}
	if _, err := fd.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close: %v, want os.ErrClosed", err)
	}
	if err := fd.Ioctl(unix.TIOCINQ, nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Ioctl after Close: %v, want os.ErrClosed", err)
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open("/dev/infiniband/does-not-exist", unix.O_RDWR)
	if !errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("Open of a missing node: %v", err)
	}
}

func TestIoctlKeepsErrno(t *testing.T) {
	fd, err := Open("/dev/null", unix.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	// /dev/null is no terminal: the kernel answers ENOTTY. (TCGETS rather
	// than an RDMA ioctl because qemu-user, which runs the arm64 tests,
	// answers ENOSYS for ioctls it does not know instead of passing them
	// on.)
	tio := new(unix.Termios)
	err = fd.Ioctl(unix.TCGETS, unsafe.Pointer(tio), tio)
	if !errors.Is(err, syscall.ENOTTY) {
		t.Fatalf("Ioctl = %v, want ENOTTY", err)
	}
}

func TestPollableReadDeadlineAndClose(t *testing.T) {
	p := fifo(t)
	fd, err := Open(p, unix.O_RDWR|unix.O_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if _, err := fd.ReadNonblocking(buf); !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("ReadNonblocking on an empty fifo: %v, want EAGAIN", err)
	}
	if err := fd.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := fd.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read past the deadline: %v", err)
	}
	if err := fd.WaitReadable(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("WaitReadable past the deadline: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("deadline not honoured")
	}
	fd.SetReadDeadline(time.Time{})
	if _, err := fd.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := fd.WaitReadable(); err != nil {
		t.Fatalf("WaitReadable with data queued: %v", err)
	}
	n, err := fd.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}

	done := make(chan error)
	go func() {
		_, err := fd.Read(buf)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := fd.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("pending Read after Close: %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock a pending Read")
	}
}

func TestDeadlineNeedsPollable(t *testing.T) {
	fd, err := Open("/dev/null", unix.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if err := fd.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
		t.Errorf("SetReadDeadline on a blocking descriptor: %v", err)
	}
}

func TestMmapAnon(t *testing.T) {
	b, err := MmapAnon(PageSize)
	if err != nil {
		t.Fatal(err)
	}
	b[0], b[len(b)-1] = 1, 2
	if err := Munmap(b); err != nil {
		t.Fatal(err)
	}
	if _, err := MmapAnon(0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("MmapAnon(0) = %v", err)
	}
}

type recordingBackend struct {
	ioctls  []uint
	closed  int
	written []byte
}

func (b *recordingBackend) Ioctl(req uint, arg unsafe.Pointer) error {
	b.ioctls = append(b.ioctls, req)
	return syscall.EPROTONOSUPPORT
}
func (b *recordingBackend) Read(p []byte, _ time.Time, _ bool) (int, error) {
	return 0, syscall.EAGAIN
}
func (b *recordingBackend) Write(p []byte) (int, error) {
	b.written = append(b.written, p...)
	return len(p), nil
}
func (b *recordingBackend) Mmap(int64, int, int, int) ([]byte, error) { return nil, syscall.ENODEV }
func (b *recordingBackend) Close() error                              { b.closed++; return nil }

func TestFakeBackend(t *testing.T) {
	be := &recordingBackend{}
	fd := NewFake("/dev/infiniband/uverbs9", be)
	if err := fd.Ioctl(7, nil); !errors.Is(err, syscall.EPROTONOSUPPORT) {
		t.Errorf("Ioctl = %v", err)
	}
	if n, err := fd.Write([]byte{1, 2}); n != 2 || err != nil {
		t.Errorf("Write = %d, %v", n, err)
	}
	if fd.Raw() != -1 || fd.Name() != "/dev/infiniband/uverbs9" {
		t.Errorf("Raw/Name = %d %q", fd.Raw(), fd.Name())
	}
	fd.Close()
	fd.Close()
	if be.closed != 1 {
		t.Errorf("backend closed %d times, want 1", be.closed)
	}
	if err := fd.Ioctl(7, nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Ioctl after Close = %v", err)
	}
}

// TestArch records which architecture the tests run on; `make test-arm64`
// shows it to prove the arm64 tests really ran under qemu-user.
func TestArch(t *testing.T) {
	t.Logf("arch: %s/%s, page size %d", runtime.GOOS, runtime.GOARCH, PageSize)
}

func TestReadableAndAllocationFreeReads(t *testing.T) {
	fd, err := Open(fifo(t), unix.O_RDWR|unix.O_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if ok, err := fd.Readable(); ok || err != nil {
		t.Fatalf("Readable on an empty fifo = %v, %v", ok, err)
	}
	msg := []byte("record")
	buf := make([]byte, 16)
	if _, err := fd.Write(msg); err != nil {
		t.Fatal(err)
	}
	if ok, err := fd.Readable(); !ok || err != nil {
		t.Fatalf("Readable with data = %v, %v", ok, err)
	}
	fd.Read(buf)
	// The receive hot path: write one record, read it back, through the
	// poller (Read) and directly (ReadNonblocking). Neither allocates.
	for name, read := range map[string]func([]byte) (int, error){"Read": fd.Read, "ReadNonblocking": fd.ReadNonblocking} {
		n := testing.AllocsPerRun(100, func() {
			fd.Write(msg)
			if _, err := read(buf); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
	if _, err := fd.ReadNonblocking(buf); !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("ReadNonblocking on empty: %v", err)
	}
}

type waitingBackend struct {
	recordingBackend
	deadlines []time.Time
	waited    time.Time
	ready     bool
}

func (b *waitingBackend) WaitReadable(deadline time.Time) error { b.waited = deadline; return nil }
func (b *waitingBackend) Readable() (bool, error)               { return b.ready, nil }
func (b *waitingBackend) DeadlineChanged(t time.Time)           { b.deadlines = append(b.deadlines, t) }

func TestFakeWaiter(t *testing.T) {
	be := &waitingBackend{ready: true}
	fd := NewFake("/dev/infiniband/umad-fake", be)
	defer fd.Close()
	dl := time.Now().Add(time.Hour)
	if err := fd.SetReadDeadline(dl); err != nil {
		t.Fatal(err)
	}
	if len(be.deadlines) != 1 || !be.deadlines[0].Equal(dl) {
		t.Errorf("DeadlineChanged calls: %v", be.deadlines)
	}
	if err := fd.WaitReadable(); err != nil || !be.waited.Equal(dl) {
		t.Errorf("WaitReadable: %v, backend saw deadline %v", err, be.waited)
	}
	if ok, err := fd.Readable(); !ok || err != nil {
		t.Errorf("Readable = %v, %v", ok, err)
	}
	plain := NewFake("/dev/x", &recordingBackend{})
	defer plain.Close()
	if err := plain.WaitReadable(); !errors.Is(err, os.ErrNoDeadline) {
		t.Errorf("WaitReadable on a backend without Waiter: %v", err)
	}
}

func TestWaitReadableAllocatesNothing(t *testing.T) {
	fd, err := Open(fifo(t), unix.O_RDWR|unix.O_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	buf := make([]byte, 8)
	msg := []byte("x")
	fd.SetReadDeadline(time.Now().Add(time.Hour))
	n := testing.AllocsPerRun(100, func() {
		fd.Write(msg)
		if err := fd.WaitReadable(); err != nil {
			t.Fatal(err)
		}
		fd.Read(buf)
	})
	if n != 0 {
		t.Errorf("WaitReadable: %v allocations per call, want 0", n)
	}
}

// The ioctl path's own cost, against the cheapest ioctl there is (TCGETS
// on /dev/null: ENOTTY from the VFS without a driver): FD.Ioctl (the
// shared lock, unix.Syscall's entersyscall/exitsyscall, the EINTR loop)
// against a bare unix.RawSyscall. fd.go's Ioctl comment gives the figures
// and why it stays a Syscall under the lock.
func BenchmarkIoctlENOTTY(b *testing.B) {
	fd, err := Open("/dev/null", unix.O_RDWR)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	tio := new(unix.Termios)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		fd.Ioctl(unix.TCGETS, unsafe.Pointer(tio), tio)
	}
}

func BenchmarkRawIoctlENOTTY(b *testing.B) {
	fd, err := Open("/dev/null", unix.O_RDWR)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	tio := new(unix.Termios)
	raw := uintptr(fd.Raw())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		unix.RawSyscall(unix.SYS_IOCTL, raw, unix.TCGETS, uintptr(unsafe.Pointer(tio)))
	}
}

// IoctlNumber is the ioctl on a number its caller keeps open: the errno
// comes back as it is.
func TestIoctlNumber(t *testing.T) {
	fd, err := Open("/dev/null", unix.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	tio := new(unix.Termios)
	if err := IoctlNumber(fd.Raw(), unix.TCGETS, unsafe.Pointer(tio)); !errors.Is(err, syscall.ENOTTY) {
		t.Errorf("IoctlNumber = %v, want ENOTTY", err)
	}
}

// Live lists the tracked records still linked, whatever order they are
// untracked in, and untracking one twice changes nothing.
func TestTrackList(t *testing.T) {
	before := len(Live())
	a, b, c := track("track-a"), track("track-b"), track("track-c")
	has := func(want ...string) {
		t.Helper()
		var got []string
		for _, s := range Live() {
			if name, _, _ := strings.Cut(s, "\n"); strings.HasPrefix(name, "track-") {
				got = append(got, name) // the name, without TraceStacks' stack
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("Live = %v, want %v", got, want)
		}
	}
	has("track-a", "track-b", "track-c")
	untrack(b) // the middle
	has("track-a", "track-c")
	untrack(c) // the head
	untrack(c)
	has("track-a")
	untrack(a) // the last
	untrack(b)
	has()
	if n := len(Live()); n != before {
		t.Errorf("%d records live, %d before", n, before)
	}
}
