package rdmanl

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"
)

// msg encodes one netlink message.
func msg(typ, flags uint16, seq uint32, data []byte) []byte {
	b := make([]byte, align4(nlmsgHdrLen+len(data)))
	binary.NativeEndian.PutUint32(b[0:], uint32(nlmsgHdrLen+len(data)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	copy(b[nlmsgHdrLen:], data)
	return b
}

func errno(e int32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, uint32(e))
	return b
}

func cat(bs ...[]byte) (out []byte) {
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

func TestParseReplies(t *testing.T) {
	const seq, typ = 7, 0x1401
	for _, c := range []struct {
		name string
		b    []byte
		n    int
		done bool
		err  error
	}{
		{"one reply", msg(typ, 0, seq, []byte{1, 2, 3}), 1, true, nil},
		{"dump, more to come", cat(msg(typ, nlmFMulti, seq, []byte{1}), msg(typ, nlmFMulti, seq, []byte{2})), 2, false, nil},
		{"dump end", cat(msg(typ, nlmFMulti, seq, []byte{1}), msg(nlmsgDone, nlmFMulti, seq, errno(0))), 1, true, nil},
		{"late reply skipped", cat(msg(typ, 0, seq-1, []byte{9}), msg(typ, 0, seq, []byte{1})), 1, true, nil},
		{"other type skipped", msg(typ+1, 0, seq, []byte{1}), 0, true, nil},
		{"errno", msg(nlmsgError, 0, seq, errno(-int32(syscall.EINVAL))), 0, true, syscall.EINVAL},
		{"ack", msg(nlmsgError, 0, seq, errno(0)), 0, true, nil},
		{"short error", msg(nlmsgError, 0, seq, nil), 0, true, syscall.EPROTO},
		{"done with errno", msg(nlmsgDone, nlmFMulti, seq, errno(-int32(syscall.EOPNOTSUPP))), 0, true, syscall.EOPNOTSUPP},
		{"interrupted dump", msg(nlmsgDone, nlmFMulti|nlmFDumpInt, seq, errno(0)), 0, true, errDumpInterrupted},
		{"length past the end", msg(typ, 0, seq, []byte{1})[:16], 0, true, syscall.EPROTO},
		{"length below the header", cat(errno(4), make([]byte, 12)), 0, true, syscall.EPROTO},
		{"short datagram", []byte{1, 2, 3}, 0, false, nil},
	} {
		out, done, err := parseReplies(c.b, seq, typ, nil)
		if len(out) != c.n || done != c.done || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: %d replies, done %v, %v; want %d, %v, %v", c.name, len(out), done, err, c.n, c.done, c.err)
		}
	}
	// The payloads are copies: the receive buffer is reused.
	b := msg(typ, 0, seq, []byte{5})
	out, _, _ := parseReplies(b, seq, typ, nil)
	b[nlmsgHdrLen] = 6
	if len(out) != 1 || out[0][0] != 5 {
		t.Errorf("payload %v, want a copy [5]", out)
	}
}

func FuzzParseReplies(f *testing.F) {
	f.Add(msg(0x1401, nlmFMulti, 1, []byte{1, 2, 3, 4}), uint32(1))
	f.Add(msg(nlmsgError, 0, 1, errno(-22)), uint32(1))
	f.Fuzz(func(t *testing.T, b []byte, seq uint32) {
		out, _, err := parseReplies(b, seq, 0x1401, nil)
		if err != nil && out != nil {
			t.Fatalf("replies %v with error %v", out, err)
		}
	})
}
