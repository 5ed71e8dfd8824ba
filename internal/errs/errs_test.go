package errs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// testError is shaped like every package's Error type.
type testError struct {
	Op, Device string
	Err        error
}

func (e *testError) Error() string        { return Message(e.Op, e.Device, e.Err) }
func (e *testError) Unwrap() error        { return e.Err }
func (e *testError) Is(target error) bool { return Is(e.Err, target) }

func TestMatchTable(t *testing.T) {
	for _, tc := range []struct {
		errno  syscall.Errno
		target error
		want   bool
	}{
		{syscall.EPERM, os.ErrPermission, true},
		{syscall.EACCES, os.ErrPermission, true},
		{syscall.EINVAL, os.ErrPermission, false},
		{syscall.ENOENT, os.ErrNotExist, true},
		{syscall.ENODEV, os.ErrNotExist, true},
		{syscall.ENXIO, os.ErrNotExist, true},
		{syscall.EBUSY, os.ErrNotExist, false},
		{syscall.EPROTONOSUPPORT, ErrNotSupported, true},
		{syscall.EOPNOTSUPP, ErrNotSupported, true},
		{syscall.ENOTSUP, ErrNotSupported, true},
		{syscall.EPROTONOSUPPORT, errors.ErrUnsupported, true},
		{syscall.ENOTTY, ErrNotSupported, false},
		{syscall.EINVAL, ErrNotSupported, false},
		{syscall.EEXIST, os.ErrExist, true},
		{syscall.ETIMEDOUT, os.ErrDeadlineExceeded, false},
		{0, os.ErrNotExist, false},
	} {
		if got := Match(tc.errno, tc.target); got != tc.want {
			t.Errorf("Match(%v, %v) = %v, want %v", tc.errno, tc.target, got, tc.want)
		}
	}
}

// TestNoCallerNeedsEquality shows that a wrapped error answers errors.Is for
// the errno itself and for each sentinel, through any number of wrappings, so
// no caller has to compare errnos with ==.
func TestNoCallerNeedsEquality(t *testing.T) {
	base := &testError{Op: "create counters", Device: "rxe0", Err: syscall.EPROTONOSUPPORT}
	wrapped := fmt.Errorf("attach: %w", base)
	for _, target := range []error{syscall.EPROTONOSUPPORT, ErrNotSupported, errors.ErrUnsupported} {
		if !errors.Is(wrapped, target) {
			t.Errorf("errors.Is(%v, %v) = false", wrapped, target)
		}
	}
	if errors.Is(wrapped, os.ErrPermission) || errors.Is(wrapped, syscall.EINVAL) {
		t.Errorf("%v matches an unrelated target", wrapped)
	}
	var te *testError
	if !errors.As(wrapped, &te) || te.Device != "rxe0" {
		t.Errorf("errors.As lost the device: %+v", te)
	}
	if Errno(wrapped) != syscall.EPROTONOSUPPORT {
		t.Errorf("Errno(%v) = %v", wrapped, Errno(wrapped))
	}
	if Errno(errors.New("plain")) != 0 {
		t.Error("Errno of an error without errno is not 0")
	}
}

func TestMessage(t *testing.T) {
	got := Message("open", "uverbs0", syscall.EACCES)
	if !strings.HasPrefix(got, "open uverbs0: permission denied (") || !strings.Contains(got, "root") {
		t.Errorf("Message = %q", got)
	}
	if got := Message("parse", "", errors.New("short buffer")); got != "parse: short buffer" {
		t.Errorf("Message without errno = %q", got)
	}
	if got := Message("close", "", nil); got != "close" {
		t.Errorf("Message(nil) = %q", got)
	}
	for _, e := range []syscall.Errno{syscall.EPERM, syscall.ENODEV, syscall.EOPNOTSUPP, syscall.EBUSY, syscall.ENOTTY, syscall.EIO} {
		if Hint(e) == "" {
			t.Errorf("no hint for %v", e)
		}
	}
}

// TestMessageCapped: a 5,000-character device name, repeated by the cause
// (a path, a quoted name), gives a message of a few hundred bytes that
// still shows the start of the name, its length and the errno.
func TestMessageCapped(t *testing.T) {
	name := strings.Repeat("x", 5000)
	cause := fmt.Errorf("invalid device name %q: %w", name, &os.PathError{Op: "open", Path: "/sys/class/infiniband/" + name + "/node_type", Err: syscall.ENOENT})
	msg := Message("get CA", name, cause)
	if len(msg) > 600 {
		t.Errorf("message is %d bytes: %.200s…", len(msg), msg)
	}
	for _, want := range []string{"get CA xxxxxxxx", "…(5000 bytes)", "/sys/class/infiniband/", "/node_type", "no such file or directory", "ls /sys/class/infiniband"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	// Short messages are untouched, and cost nothing.
	short := "read port rxe0/1: open /sys/class/infiniband/rxe0/ports/1/state: permission denied"
	if got := Cap(short); got != short {
		t.Errorf("Cap changed %q to %q", short, got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Cap(short) }); n != 0 {
		t.Errorf("Cap of a short message allocates %.0f times", n)
	}
	// A multi-byte character is never cut in half.
	if got := Cap(strings.Repeat("é", 100)); !utf8.ValidString(got) {
		t.Errorf("Cap cut a character: %q", got)
	}
}

// hinted is a cause that names its own remedy.
type hinted struct{ err error }

func (h hinted) Error() string { return h.err.Error() }
func (h hinted) Unwrap() error { return h.err }
func (h hinted) Hint() string  { return "check the permissions of /x" }

// TestMessageOwnHint: a cause with a Hint method gives its hint instead of
// the errno's; an empty one falls back to the errno's.
func TestMessageOwnHint(t *testing.T) {
	err := &os.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}
	got := New("read", "dev", hinted{err}).Error()
	if want := "read dev: open /x: permission denied (check the permissions of /x)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if e := New("read", "dev", fmt.Errorf("wrapped: %w", hinted{err})); !errors.Is(e, os.ErrPermission) || !strings.Contains(e.Error(), "(check the permissions of /x)") {
		t.Errorf("wrapped: %v", e)
	}
	if got := New("read", "dev", err).Error(); !strings.Contains(got, Hint(syscall.EACCES)) {
		t.Errorf("no Hinter: %q, want the errno's hint", got)
	}
}
