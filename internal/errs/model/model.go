// Package model is the bottom of purerdma's error model: the errno
// classification behind errors.Is and the message format (operation,
// device, errno, and what to do next). It imports only the standard
// library, so the root package rdma, which defines the Error type, builds
// on it, and internal/errs, which builds Errors, re-exports it.
package model

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"unicode/utf8"
)

// ErrNotSupported is the sentinel that EPROTONOSUPPORT, EOPNOTSUPP and
// ENOTSUP match. rdma.ErrNotSupported is this value, and every public package re-exports it.
var ErrNotSupported error = &NotSupportedValue

// NotSupportedValue is what ErrNotSupported points at. The packages that
// re-export the sentinel point at it too (&model.NotSupportedValue), an
// address the linker fills in: copying ErrNotSupported instead would be
// code that every program linking the package runs at start.
var NotSupportedValue = sentinel{"operation not supported by this kernel or device"}

// sentinel is a fixed error text.
type sentinel struct{ text string }

func (e *sentinel) Error() string { return e.text }

// Errno returns the errno inside err, or 0 when there is none.
func Errno(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return 0
}

// Match reports whether an error whose errno is errno matches target in
// purerdma's model: besides syscall.Errno's own rules, os.ErrPermission
// matches EPERM and EACCES; os.ErrNotExist matches ENOENT, ENODEV and ENXIO;
// ErrNotSupported and errors.ErrUnsupported match EPROTONOSUPPORT,
// EOPNOTSUPP and ENOTSUP.
func Match(errno syscall.Errno, target error) bool {
	if errno == 0 {
		return false
	}
	switch target {
	case ErrNotSupported, errors.ErrUnsupported:
		return isNotSupported(errno)
	case os.ErrPermission:
		return errno == syscall.EPERM || errno == syscall.EACCES
	case os.ErrNotExist:
		return errno == syscall.ENOENT || errno == syscall.ENODEV || errno == syscall.ENXIO
	}
	return errno.Is(target)
}

// Is is Match applied to the errno found inside err.
func Is(err, target error) bool { return Match(Errno(err), target) }

func isNotSupported(errno syscall.Errno) bool {
	// On Linux ENOTSUP and EOPNOTSUPP are the same number; both are listed
	// so the rule reads as documented.
	return errno == syscall.EPROTONOSUPPORT || errno == syscall.EOPNOTSUPP || errno == syscall.ENOTSUP
}

// Message formats an error the same way in every package:
//
//	op dev: errno text (what to do next)
//
// dev may be empty. The hint is chosen from the errno; an error without an
// errno gets none.
//
// The device and every word of the cause are capped (see [Cap]): a name of
// thousands of bytes, which a caller or a broken tree can hand in and a
// path in the cause repeats, shows as its start and its length.
func Message(op, dev string, err error) string {
	s := op
	if dev != "" {
		s += " " + Cap(dev)
	}
	if err == nil {
		return s
	}
	s += ": " + Cap(err.Error())
	if h := hintOf(err); h != "" {
		s += " (" + h + ")"
	}
	return s
}

// Hinter is implemented by causes that name their own remedy (a package
// that knows it better than the errno does: the file whose permissions to
// check); Message prefers it to the errno's hint.
type Hinter interface{ Hint() string }

// hintOf returns the hint of err's first Hinter, or Hint of its errno.
func hintOf(err error) string {
	var h Hinter
	if errors.As(err, &h) {
		if s := h.Hint(); s != "" {
			return s
		}
	}
	return Hint(Errno(err))
}

// Hint says, for the errnos users meet most, what to do next.
func Hint(errno syscall.Errno) string {
	switch {
	case errno == syscall.EPERM || errno == syscall.EACCES:
		return "run as root, or grant access to /dev/infiniband and CAP_NET_RAW where the operation needs it"
	case errno == syscall.ENOENT || errno == syscall.ENODEV || errno == syscall.ENXIO:
		return "check that the RDMA device exists and its kernel modules are loaded: ls /sys/class/infiniband"
	case isNotSupported(errno):
		return "this kernel or this device's driver does not support it; see the support table in the README"
	case errno == syscall.EBUSY:
		return "the object is still in use; destroy what refers to it first"
	case errno == syscall.ENOTTY:
		return "the device does not implement this ioctl; is this the right device node?"
	case errno == syscall.EIO:
		return "the device was removed or disassociated; reopen it"
	}
	return ""
}

// MaxWord is the longest run of text (a device name, a path component, a
// quoted value) an error message shows whole: IB_DEVICE_NAME_MAX, the
// kernel's limit on a device name (include/rdma/ib_verbs.h), is 64.
const MaxWord = 64

// Cap returns s with every run longer than MaxWord bytes of characters
// other than separators (space, '/', ':', quotes, parentheses, ',', '=')
// cut to its first MaxWord/2 bytes (at a character boundary) followed by
// "…(N bytes)". s is returned as is, without allocating, when no run is
// that long.
func Cap(s string) string {
	if len(s) <= MaxWord {
		return s
	}
	long := false
	for run, i := 0, 0; i < len(s); i++ {
		if isSep(s[i]) {
			run = 0
			continue
		}
		if run++; run > MaxWord {
			long = true
			break
		}
	}
	if !long {
		return s
	}
	b := make([]byte, 0, 256)
	for i := 0; i < len(s); {
		if isSep(s[i]) {
			b = append(b, s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && !isSep(s[j]) {
			j++
		}
		w := s[i:j]
		if len(w) > MaxWord {
			cut := MaxWord / 2
			for cut > 0 && !utf8.RuneStart(w[cut]) {
				cut--
			}
			b = append(b, w[:cut]...)
			b = append(b, "…("...)
			b = strconv.AppendInt(b, int64(len(w)), 10)
			b = append(b, " bytes)"...)
		} else {
			b = append(b, w...)
		}
		i = j
	}
	return string(b)
}

func isSep(c byte) bool {
	switch c {
	case ' ', '/', ':', '"', '\'', '(', ')', ',', '=', '\t', '\n':
		return true
	}
	return false
}

// NotSupported is a cause without an errno that still means "not
// supported" (a driver purerdma has no provider for): it matches
// ErrNotSupported and errors.ErrUnsupported.
type NotSupported string

func (n NotSupported) Error() string { return string(n) }

// Is reports whether target is ErrNotSupported or errors.ErrUnsupported.
func (n NotSupported) Is(target error) bool {
	return target == ErrNotSupported || target == errors.ErrUnsupported
}
