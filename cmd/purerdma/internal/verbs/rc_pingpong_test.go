package verbs

import (
	"bytes"
	"strings"
	"testing"
)

// The TCP message is ibv_rc_pingpong's, byte for byte.
func TestRCPingpongWire(t *testing.T) {
	d := ppDest{lid: 0x12, qpn: 0x11, psn: 0xabcdef}
	copy(d.gid[:], []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x01})
	w := d.wire()
	want := "0012:000011:abcdef:fe80000000000000505400fffe123401\x00"
	if string(w) != want || len(w) != ppMsgLen {
		t.Fatalf("wire %q, want %q", w, want)
	}
	got, err := parseDest(w)
	if err != nil || got != d {
		t.Fatalf("parse: %+v, %v", got, err)
	}
	for _, bad := range []string{"", strings.Repeat("x", 52), "0012-000011:abcdef:fe80000000000000505400fffe123401\x00",
		"0012:00001g:abcdef:fe80000000000000505400fffe123401\x00", "0012:000011:abcdef:fe80000000000000505400fffe1234zz\x00"} {
		if _, err := parseDest([]byte(bad)); err == nil {
			t.Errorf("parseDest(%q) accepted", bad)
		}
	}
}

// The pattern names its message and every byte is checked.
func TestRCPingpongPattern(t *testing.T) {
	b := make([]byte, 4096)
	for _, k := range []uint32{0, 1, 9999, 1 << 31} {
		ppFill(b, k)
		if got, err := ppCheck(b); err != nil || got != k {
			t.Fatalf("message %d: %d, %v", k, got, err)
		}
	}
	for _, i := range []int{0, 5, 8, 4095} {
		c := bytes.Clone(b)
		c[i] ^= 1
		if _, err := ppCheck(c); err == nil {
			t.Errorf("a flipped byte %d passed", i)
		}
	}
	fill := bytes.Repeat([]byte{0x7b}, 64)
	if _, err := ppCheck(fill); err == nil {
		t.Error("the C fill passed as a pattern")
	}
}

func TestRCPingpongFlags(t *testing.T) {
	env := DefaultEnv()
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"-m", "999"}, {"-s", "0"}, {"-r", "1"}, {"a", "b"}, {"-s", "4", "--verify"},
		{"-p", "70000"}, {"--ib-port=0"}, {"-o"}, {"--timeout", "soon"}, {"-em999"}, {"a", "--iters", "3", "b"}} {
		out.Reset()
		errb.Reset()
		if err := env.run(append([]string{"purerdma", "rc_pingpong"}, args...), &out, &errb); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
