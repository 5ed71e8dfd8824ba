package sys

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestAdoptRealDescriptor(t *testing.T) {
	parent, err := Open("/dev/null", unix.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	fd, err := parent.Adopt(p[0], "pipe")
	if err != nil {
		t.Fatal(err)
	}
	if fd.Name() != "pipe" || fd.Raw() != p[0] {
		t.Errorf("Name/Raw = %q %d", fd.Name(), fd.Raw())
	}
	if fl, _ := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0); fl&unix.O_NONBLOCK == 0 {
		t.Error("adopted descriptor is not O_NONBLOCK")
	}
	buf := make([]byte, 8)
	fd.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := fd.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read with nothing queued: %v", err)
	}
	fd.SetReadDeadline(time.Time{})
	unix.Write(p[1], []byte("ev"))
	if n, err := fd.Read(buf); err != nil || string(buf[:n]) != "ev" {
		t.Errorf("Read = %q, %v", buf[:n], err)
	}
	if err := fd.Close(); err != nil {
		t.Fatal(err)
	}
	if len(Live()) != 1 {
		t.Errorf("Live after closing the adopted descriptor: %v", Live())
	}
}

func TestAdoptErrors(t *testing.T) {
	parent, err := Open("/dev/null", unix.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parent.Adopt(-1, "x"); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Adopt(-1) = %v", err)
	}
	parent.Close()
	fake := NewFake("fake", &recordingBackend{})
	if _, err := fake.Adopt(3, "x"); !errors.Is(err, syscall.EBADF) {
		t.Errorf("fake without Adopter: %v", err)
	}
	fake.Close()
	if _, err := fake.Adopt(3, "x"); !errors.Is(err, os.ErrClosed) {
		t.Errorf("closed fake: %v", err)
	}
}

type adoptingBackend struct{ recordingBackend }

func (b *adoptingBackend) Adopt(raw int) (Backend, error) {
	if raw != 100 {
		return nil, syscall.EBADF
	}
	return &recordingBackend{}, nil
}

func TestAdoptFake(t *testing.T) {
	parent := NewFake("fake", &adoptingBackend{})
	defer parent.Close()
	if _, err := parent.Adopt(7, "x"); !errors.Is(err, syscall.EBADF) {
		t.Errorf("unknown descriptor: %v", err)
	}
	fd, err := parent.Adopt(100, "events")
	if err != nil {
		t.Fatal(err)
	}
	if fd.Name() != "events" || fd.Raw() != -1 {
		t.Errorf("Name/Raw = %q %d", fd.Name(), fd.Raw())
	}
	fd.Close()
}
