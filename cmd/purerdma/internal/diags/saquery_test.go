package diags

import (
	"net/netip"
	"strings"
	"testing"
)

// TestInetNtop6 checks inetNtop6 against glibc's inet_ntop rules: the
// longest run of two or more zero words (the first of equal ones) as
// "::", lowercase hex without leading zeros, and the IPv4 forms.
func TestInetNtop6(t *testing.T) {
	for in, want := range map[string]string{
		"::": "::", "::1": "::1", "fe80::20:0": "fe80::20:0", "::ffff:1.2.3.4": "::ffff:1.2.3.4",
		"::1.2.3.4": "::1.2.3.4", "1:0:0:1:0:0:0:1": "1:0:0:1::1", "1:0:0:2:0:0:3:4": "1::2:0:0:3:4",
		"0:0:1::": "0:0:1::", "1:0:2:0:3:0:4:0": "1:0:2:0:3:0:4:0", "ff12:401b:ffff::1": "ff12:401b:ffff::1",
		"fe80::2:c903:1:abcd": "fe80::2:c903:1:abcd",
	} {
		a := netip.MustParseAddr(in).As16()
		if got := inetNtop6(a[:]); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	if _, ok := inetPton6("1.2.3.4"); ok {
		t.Error("inet_pton(AF_INET6) takes no IPv4 address")
	}
	if _, ok := inetPton6("fe80::1%eth0"); ok {
		t.Error("inet_pton takes no zone")
	}
}

// TestCStrtoul checks C's strtoul(s, &end, 0) as the tools read numbers.
func TestCStrtoul(t *testing.T) {
	for _, tc := range []struct {
		in   string
		v    uint64
		read int
	}{
		{"12", 12, 2}, {"0x1f", 31, 4}, {"010", 8, 3}, {"0", 0, 1}, {"0x", 0, 1}, {"09", 0, 1},
		{" -1", ^uint64(0), 3}, {"abc", 0, 0}, {"", 0, 0}, {"12x", 12, 2}, {"99999999999999999999", ^uint64(0), 20},
	} {
		v, n := cStrtoulN(tc.in)
		if v != tc.v || n != tc.read {
			t.Errorf("%q: %d, %d bytes; want %d, %d", tc.in, v, n, tc.v, tc.read)
		}
	}
	for _, tc := range []struct {
		in string
		v  int64
		ok bool
	}{{"5", 5, true}, {"-5", -5, true}, {"0x10", 16, true}, {"9223372036854775808", 1<<63 - 1, false}, {"x", 0, true}} {
		if v, ok := cStrtol(tc.in); v != tc.v || ok != tc.ok {
			t.Errorf("strtol %q: %d, %v", tc.in, v, ok)
		}
	}
}

// TestSAQueryNoPanic runs saquery on command lines it must refuse or
// answer without a fabric, and never panics.
func TestSAQueryNoPanic(t *testing.T) {
	env := &Env{IBSim: "purerdma-no-such-ibsim:x"}
	for _, args := range [][]string{{}, {"-p", "--sgid", "::"}, {"-L"}, {"--src-to-dst", ":"}, {"-t", "-1"}, {"PIR", "//"}} {
		_, _, code := env.runTool(append([]string{"saquery"}, args...)...)
		if code == 0 {
			t.Errorf("%v: status 0 without a fabric", args)
		}
	}
	var b strings.Builder
	if prettyPrint(&b, 10, 20, "a bb ccccccccccccc dd"); b.String() != "a bb \n          ccccccccccccc\n          dd" {
		t.Errorf("prettyPrint: %q", b.String())
	}
}
