package umad

import (
	"os"
	"strings"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/errs/model"
)

// Error is purerdma's one error type (rdma.Error): the operation, the
// device or port, and the cause. Match it with errors.As and its cause
// with errors.Is (the errno, os.ErrPermission, os.ErrNotExist,
// ErrNotSupported, os.ErrClosed); see rdma.Error.
type Error = rdma.Error

// ErrNotSupported is the library-wide "not supported" sentinel (see
// rdma.ErrNotSupported). In this package it also matches a QP0 (SMI) agent
// on a port without an SMI, such as every RoCE port, and a umad ABI other
// than 5.
var ErrNotSupported error = &model.NotSupportedValue

// kindError is a sentinel of this package. When errno is set, errors.Is
// also matches the sentinel against that errno (and the classes it is in).
type kindError struct {
	msg   string
	errno syscall.Errno
}

func (k *kindError) Error() string { return k.msg }

func (k *kindError) Unwrap() error {
	if k.errno == 0 {
		return nil
	}
	return k.errno
}

// The sentinels. OpenPort's three failures are libibumad's -ENODEV,
// -EINVAL and -EIO; each is a distinct value errors.Is can tell apart.
var (
	// ErrNoDevice: no RDMA device (or no usable port) could be found for
	// the CA name and port number given (umad_open_port's -ENODEV). It
	// also matches syscall.ENODEV and os.ErrNotExist.
	ErrNoDevice error = &kindError{"no such RDMA device or usable port", syscall.ENODEV}

	// ErrInvalidPort: the device exists but the port does not, or it has
	// no umad device (umad_open_port's -EINVAL). It also matches
	// syscall.EINVAL.
	ErrInvalidPort error = &kindError{"no such port, or the port has no umad device", syscall.EINVAL}

	// ErrOpenFailed: the port's /dev/infiniband/umadN could not be opened
	// (umad_open_port's -EIO). The error also matches the open's own
	// errno: os.ErrPermission when the node is not accessible (the kernel
	// creates umad nodes root-only), os.ErrNotExist when the node is
	// missing.
	ErrOpenFailed error = &kindError{"cannot open the umad device", 0}

	// ErrWouldBlock: a non-blocking receive (timeout 0) found nothing
	// queued (umad_recv's -EWOULDBLOCK). It also matches syscall.EAGAIN,
	// which is syscall.EWOULDBLOCK.
	ErrWouldBlock error = &kindError{"no MAD queued", syscall.EAGAIN}

	// ErrTimeout: a receive or poll with a timeout found nothing in time
	// (umad_poll's -ETIMEDOUT). It also matches syscall.ETIMEDOUT and
	// os.ErrDeadlineExceeded.
	ErrTimeout error = &timeoutError{}
)

// timeoutError is ErrTimeout: it matches ETIMEDOUT and
// os.ErrDeadlineExceeded, and says so through Timeout, like net errors.
type timeoutError struct{}

func (*timeoutError) Error() string   { return "timed out" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Unwrap() []error { return []error{syscall.ETIMEDOUT, os.ErrDeadlineExceeded} }

// detailError adds a detail to a cause and ties it to a sentinel (kind);
// errors.Is and errors.As see both, the cause first, so its errno (EACCES
// from open, …) is the one purerdma's error model reports.
type detailError struct {
	kind   error  // one of the sentinels, or nil
	detail string // shown before the cause; may be empty
	cause  error  // may be nil
}

func (d *detailError) Error() string {
	switch {
	case d.cause == nil && d.detail == "":
		return d.kind.Error()
	case d.cause == nil:
		return d.detail
	case d.detail == "":
		return d.cause.Error()
	}
	return d.detail + ": " + d.cause.Error()
}

func (d *detailError) Unwrap() []error {
	out := make([]error, 0, 2)
	if d.cause != nil {
		out = append(out, d.cause)
	}
	if d.kind != nil {
		out = append(out, d.kind)
	}
	return out
}

func detail(kind error, text string, cause error) error {
	// An *Error cause (sysfs's) joins the text: one Error never wraps
	// another, and the device and the hint show once.
	if ce, ok := cause.(*Error); ok && ce != nil {
		in := strings.TrimSpace(ce.Op + " " + ce.Device)
		if text == "" {
			text = in
		} else if in != "" {
			text += ": " + in
		}
		cause = ce.Err
	}
	return &detailError{kind: kind, detail: text, cause: cause}
}

// invalid returns an EINVAL cause with a message, for arguments a call
// refuses before asking the kernel.
func invalid(text string) error { return detail(nil, text, syscall.EINVAL) }

// errClosed reports a call on a closed Port.
var errClosed error = &portClosedError{}

// portClosedError is errClosed, detail(nil, "port closed", os.ErrClosed)
// as data: os.ErrClosed is read when asked for, not copied at start.
type portClosedError struct{}

func (*portClosedError) Error() string { return "port closed: " + os.ErrClosed.Error() }

// Unwrap returns os.ErrClosed.
func (*portClosedError) Unwrap() error { return os.ErrClosed }

// errNilHost is the cause of a call on a nil *Host: EINVAL, as uverbs,
// counters and flow answer.
var errNilHost error = &detailError{detail: "nil *umad.Host", cause: syscall.EINVAL}

// errNoSMI builds the cause of a QP0 agent on a port without an SMI.
func errNoSMI(class MgmtClass, linkLayer rdma.LinkLayer) error {
	what := "the port has no SMI (QP0)"
	if linkLayer == rdma.LinkLayerEthernet {
		what = "not supported on RoCE (no SMI)"
	}
	return detail(nil, "class "+hex8(uint8(class))+" needs QP0: "+what, syscall.EPROTONOSUPPORT)
}

func hex8(v uint8) string {
	const digits = "0123456789abcdef"
	return string([]byte{'0', 'x', digits[v>>4], digits[v&15]})
}

// errNil is the error of a method called on a nil receiver (method is
// "Port.Send"): an *Error wrapping EINVAL, as uverbs, counters and flow
// answer.
func errNil(method string) error {
	return errs.New(method, "", invalid("nil receiver"))
}
