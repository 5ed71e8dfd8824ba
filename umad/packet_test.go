package umad

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/abi"
)

func TestPacketMAD(t *testing.T) {
	p := NewPacket()
	if p.Len() != 256 || len(p.MAD()) != 256 || p.Size() != 64+256 {
		t.Fatalf("new packet: len %d size %d", p.Len(), p.Size())
	}
	p.MAD()[0] = 9
	if err := p.SetLen(1000); err != nil || p.MAD()[0] != 9 || p.MAD()[999] != 0 {
		t.Fatal("growing keeps the contents and zeroes the rest", err)
	}
	p.MAD()[999] = 1
	p.SetLen(10)
	p.SetLen(1000)
	if p.MAD()[999] != 0 {
		t.Fatal("bytes past a shrunk length read back as zero")
	}
	for _, n := range []int{-1, 64<<20 + 1} {
		if err := p.SetLen(n); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("SetLen(%d): %v", n, err)
		}
	}
	if err := p.SetMAD([]byte{1, 2, 3}); err != nil || !bytes.Equal(p.MAD(), []byte{1, 2, 3}) {
		t.Fatal(err)
	}
	var zero Packet // the zero Packet is usable
	if len(zero.MAD()) != 0 || zero.SetLen(256) != nil || len(zero.MAD()) != 256 {
		t.Fatal("zero packet")
	}
}

func TestPacketAddressing(t *testing.T) {
	p := NewPacket()
	if err := p.SetAddr(0x1234, 1, 3, QP1QKey); err != nil {
		t.Fatal(err)
	}
	q := NewPacket()
	if err := q.SetAddrNet([2]byte{0x12, 0x34}, [4]byte{0, 0, 0, 1}, 3, [4]byte{0x80, 0x01, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != q.Addr() {
		t.Fatalf("SetAddr %v != SetAddrNet %v", p.Addr(), q.Addr())
	}
	g := GRH{GID: [16]byte{0xfe, 0x80, 15: 1}, GIDIndex: 1, HopLimit: 64, TrafficClass: 3, FlowLabel: 0xabcde}
	if err := p.SetGRH(g); err != nil {
		t.Fatal(err)
	}
	if err := q.SetGRHNet(g.GID, 1, 64, 3, [4]byte{0, 0x0a, 0xbc, 0xde}); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != q.Addr() || !p.Addr().GRHPresent || p.Addr().GRH != g {
		t.Fatalf("SetGRH %v != SetGRHNet %v", p.Addr(), q.Addr())
	}
	p.SetPKeyIndex(2)
	a := p.Addr()
	r := NewPacket()
	if err := r.SetAddress(a); err != nil || r.Addr() != a {
		t.Fatal(err)
	}
	p.ClearGRH()
	if p.Addr().GRHPresent {
		t.Fatal("ClearGRH")
	}
	// Values that do not fit are refused, and change nothing.
	for name, err := range map[string]error{
		"qpn":        p.SetAddr(1, 1<<24, 0, 0),
		"sl":         p.SetAddr(1, 1, 16, 0),
		"flow label": p.SetGRH(GRH{FlowLabel: 1 << 20}),
		"address":    p.SetAddress(Addr{GRHPresent: true, GRH: GRH{FlowLabel: 1 << 20}}),
		"address 2":  p.SetAddress(Addr{QPN: 1 << 24}),
	} {
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if p.Addr().QPN != 1 || p.Addr().SL != 3 {
		t.Fatal("a refused setter changed the packet")
	}
}

// TestPacketWire checks the bytes a send writes, for both header sizes:
// the header directly in front of the MAD.
func TestPacketWire(t *testing.T) {
	p := NewPacket()
	p.SetAddr(0x0102, 0x000001, 5, QP1QKey)
	p.SetGRH(GRH{GID: [16]byte{0xfe, 0x80, 15: 7}, GIDIndex: 2, HopLimit: 9, TrafficClass: 4, FlowLabel: 0x12345})
	p.MAD()[0] = 0xaa
	p.hdr.AgentID, p.hdr.TimeoutMs, p.hdr.Retries = 3, 100, 2
	for _, hs := range []int{64, 56} {
		if hs == 64 {
			p.SetPKeyIndex(6)
		} else {
			p.SetPKeyIndex(0)
		}
		b, err := p.wire(hs)
		if err != nil || len(b) != hs+256 || b[hs] != 0xaa {
			t.Fatalf("hs %d: %d bytes, %v", hs, len(b), err)
		}
		var h abi.MadHdr
		h.Decode(b, hs)
		want := p.hdr
		if hs == 56 {
			want.PKeyIndex = 0
		}
		if h != want {
			t.Fatalf("hs %d: header\n got %+v\nwant %+v", hs, h, want)
		}
		if b[20] != 0 || b[23] != 1 || b[24] != 0x80 || b[25] != 0x01 || b[28] != 1 || b[29] != 2 { // qpn, qkey, lid big-endian
			t.Fatalf("byte order: % x", b[20:30])
		}
	}
	p.SetPKeyIndex(1)
	if _, err := p.wire(56); err == nil {
		t.Fatal("a P_Key index cannot go into the 56-byte header")
	}
}

func TestPacketFormat(t *testing.T) {
	p := NewPacket()
	p.SetAddr(0, 1, 0, QP1QKey)
	p.SetGRH(GRH{GID: [16]byte{0xfe, 0x80, 15: 1}, HopLimit: 64})
	m := p.MAD()
	m[0], m[1], m[2], m[3] = 1, 0x30, 1, 0x81
	m[15] = 0x42
	s := p.String()
	for _, want := range []string{"agent 0 status 0", "qpn 1 qkey 0x80010000 lid 0 sl 0", "grh gid fe80::1", "hop_limit 64",
		"class 0x30", "method 0x81", "tid 0x0000000000000042"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, missing %q", s, want)
		}
	}
	if v := fmt.Sprintf("%v", p); v != s {
		t.Errorf("%%v = %q", v)
	}
	full := fmt.Sprintf("%+v", p)
	if !strings.HasPrefix(full, s+"\n") || !strings.Contains(full, "00000000  01 30 01 81") || strings.Count(full, "\n") != 16 {
		t.Errorf("%%+v = %q", full)
	}
	p.hdr.Status = uint32(syscall.ETIMEDOUT)
	if !strings.Contains(p.String(), "status 110 (connection timed out)") || !p.TimedOut() {
		t.Error(p.String())
	}
	if d := fmt.Sprintf("%d", p); !strings.HasPrefix(d, "%!d(*umad.Packet=") {
		t.Error(d)
	}
	if a := (Addr{QPN: 1, PathBits: 2}).String(); a != "qpn 1 qkey 0x0 lid 0 sl 0 path_bits 2 pkey_index 0" {
		t.Error(a)
	}
}

func TestDebugLogging(t *testing.T) {
	old := SetDebug(-1)
	defer SetDebug(old)
	var buf bytes.Buffer
	SetLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer SetLogger(nil)

	if SetDebug(2) != 2 || SetDebug(-5) != 2 {
		t.Fatal("SetDebug")
	}
	_, cli, ca, srv, _, gid1 := rxeSetup(t)
	pkt := NewPacket()
	tRequest(t, pkt, 0x01, 1, &gid1, 0)
	cli.Send(ca, pkt, 0, 0)
	srv.Recv(pkt, time.Second)
	cli.Register(0x81, 1, MethodMask{})
	out := buf.String()
	for _, want := range []string{"umad: opened port", "umad: registered agent", "umad: send", "umad: received", "umad: register failed", "not supported on RoCE"} {
		if !strings.Contains(out, want) {
			t.Errorf("debug log lacks %q:\n%s", want, out)
		}
	}
	SetDebug(0)
	buf.Reset()
	cli.Send(ca, pkt, 0, 0)
	if buf.Len() != 0 {
		t.Fatalf("level 0 logged %q", buf.String())
	}
}

// FuzzPacketSetLen: SetLen takes any length from its caller; out of range
// (negative, past 64 MiB) it fails with EINVAL and leaves the packet as
// it was, in range it zero-fills what it adds.
func FuzzPacketSetLen(f *testing.F) {
	for _, n := range []int{0, 36, 256, -1, pktMaxMAD, pktMaxMAD + 1, 1 << 62} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int) {
		if n > 1<<20 && n <= pktMaxMAD {
			n = 1 << 20 // keep the fuzzer's memory small: in range is in range
		}
		p := NewPacket()
		if err := p.SetMAD([]byte{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		err := p.SetLen(n)
		if n < 0 || n > pktMaxMAD {
			if !errors.Is(err, syscall.EINVAL) || p.Len() != 3 {
				t.Fatalf("SetLen(%d) = %v, Len %d; want EINVAL and the packet unchanged", n, err, p.Len())
			}
			return
		}
		if err != nil || p.Len() != n {
			t.Fatalf("SetLen(%d) = %v, Len %d", n, err, p.Len())
		}
		if n > 3 && bytes.ContainsFunc(p.MAD()[3:], func(r rune) bool { return r != 0 }) {
			t.Fatalf("SetLen(%d) did not zero-fill", n)
		}
	})
}

// A MAD encoded into the packet's own buffer (m.Append(p.MAD()[:0])) is
// set whole, even when the packet's length was shorter: a send that timed
// out comes back as a 24-byte header, and the next request built in its
// place kept only its first 24 bytes (the fabric scan's PMA queries went
// out with PortSelect 0).
func TestSetMADOwnBuffer(t *testing.T) {
	p := NewPacket()
	if err := p.SetLen(24); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, MADSize)
	for i := range want {
		want[i] = byte(i + 1)
	}
	b := append(p.MAD()[:0], want...)
	if err := p.SetMAD(b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.MAD(), want) {
		t.Errorf("MAD after SetMAD of its own buffer:\n%x\nwant\n%x", p.MAD(), want)
	}
	if err := p.SetMAD(make([]byte, pktMaxMAD+1)); err == nil {
		t.Error("SetMAD past the largest MAD succeeded")
	}
}
