package rdmanl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/purerdma/rdma/internal/sys"
)

// The netlink transport: one request, its replies, as libnl's nl_send_auto
// and nl_recvmsgs do for rdma-core and iproute2. The wire format is
// include/uapi/linux/netlink.h's: a 16-byte struct nlmsghdr (length, type,
// flags, sequence number, port id) and, for nldev, struct nlattr
// attributes (length, type, value padded to 4 bytes) right after it.

// nlTimeout bounds a wait for the kernel's reply.
const nlTimeout = 60 * time.Second

const (
	nlmsgHdrLen = 16
	nlmsgError  = 0x2 // NLMSG_ERROR
	nlmsgDone   = 0x3 // NLMSG_DONE
	nlmFMulti   = 0x2 // NLM_F_MULTI
	nlmFDumpInt = 0x10
)

// errDumpInterrupted is a dump the kernel marked NLM_F_DUMP_INTR: the
// device set changed while it ran; the request is sent again.
var errDumpInterrupted = errors.New("netlink dump interrupted")

// rxBufs are receive buffers, 32 KiB: the most the kernel puts in one
// datagram of a dump (netlink_dump sizes its buffers up to the reader's
// largest, capped there). Pooled, so that a request does not allocate
// and clear one.
var rxBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// socket is one netlink socket and its sequence numbers.
type socket struct {
	mu  sync.Mutex // one exchange at a time
	fd  *sys.FD
	seq uint32
}

func openSocket() (*socket, error) {
	fd, err := sys.OpenNetlink(netlinkRDMA, nlTimeout)
	if err != nil {
		return nil, err
	}
	return &socket{fd: fd, seq: uint32(time.Now().UnixNano())}, nil
}

func (s *socket) close() error { return s.fd.Close() }

// exchange sends the request and returns the payloads of the replies of
// type resType (without their nlmsghdr), retrying an interrupted dump.
func (s *socket) exchange(cmd, flags uint16, attrs []nlAttr, resType uint16) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for try := 0; ; try++ {
		msgs, err := s.once(cmd, flags, attrs, resType)
		if err == errDumpInterrupted && try < 3 {
			continue
		}
		return msgs, err
	}
}

func (s *socket) once(cmd, flags uint16, attrs []nlAttr, resType uint16) ([][]byte, error) {
	s.seq++
	seq := s.seq
	n := nlmsgHdrLen
	for _, a := range attrs {
		n += align4(4 + len(a.data))
	}
	req := make([]byte, n)
	binary.NativeEndian.PutUint32(req[0:], uint32(n))
	binary.NativeEndian.PutUint16(req[4:], nlType(cmd))
	binary.NativeEndian.PutUint16(req[6:], flags|syscall.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], seq)
	off := nlmsgHdrLen
	for _, a := range attrs {
		binary.NativeEndian.PutUint16(req[off:], uint16(4+len(a.data)))
		binary.NativeEndian.PutUint16(req[off+2:], a.typ)
		copy(req[off+4:], a.data)
		off += align4(4 + len(a.data))
	}
	if _, err := s.fd.Write(req); err != nil {
		return nil, err
	}
	buf := rxBufs.Get().(*[32 << 10]byte)
	defer rxBufs.Put(buf)
	var out [][]byte
	for {
		got, err := s.fd.Read(buf[:])
		if err != nil {
			return nil, err
		}
		var done bool
		if out, done, err = parseReplies(buf[:got], seq, resType, out); err != nil || done {
			return out, err
		}
	}
}

// parseReplies reads the netlink messages of one datagram b: it appends
// to out a copy of the payload of each reply of type resType to request
// seq (messages of other sequence numbers are late replies to earlier
// requests, skipped), and reports done at the end of the reply: an
// NLMSG_DONE, an NLMSG_ERROR (its errno, none for an acknowledgement), or
// a reply without NLM_F_MULTI. It trusts no length.
func parseReplies(b []byte, seq uint32, resType uint16, out [][]byte) (_ [][]byte, done bool, err error) {
	for len(b) >= nlmsgHdrLen {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		if l < nlmsgHdrLen || l > len(b) {
			return nil, true, fmt.Errorf("netlink reply with length %d in %d bytes: %w", l, len(b), syscall.EPROTO)
		}
		typ, fl := binary.NativeEndian.Uint16(b[4:]), binary.NativeEndian.Uint16(b[6:])
		mseq, data := binary.NativeEndian.Uint32(b[8:]), b[nlmsgHdrLen:l]
		b = b[min(align4(l), len(b)):]
		if mseq != seq {
			continue
		}
		switch typ {
		case nlmsgError:
			if len(data) < 4 {
				return nil, true, fmt.Errorf("short netlink error reply: %w", syscall.EPROTO)
			}
			if e := int32(binary.NativeEndian.Uint32(data)); e != 0 {
				return nil, true, syscall.Errno(-e)
			}
			return out, true, nil // an acknowledgement
		case nlmsgDone:
			if len(data) >= 4 {
				if e := int32(binary.NativeEndian.Uint32(data)); e < 0 {
					return nil, true, syscall.Errno(-e)
				}
			}
			if fl&nlmFDumpInt != 0 {
				return nil, true, errDumpInterrupted
			}
			return out, true, nil
		}
		if typ == resType {
			out = append(out, append([]byte(nil), data...))
		}
		if fl&nlmFMulti == 0 {
			return out, true, nil
		}
	}
	return out, false, nil
}

func align4(n int) int { return (n + 3) &^ 3 }
