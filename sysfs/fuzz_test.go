package sysfs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/purerdma/rdma"
)

// Fuzz targets for every parser and decoder. The properties: no panic on
// any input; what parses formats back (in the kernel's format) to text that
// parses to the same value. The netlink decoders' targets are in package
// rdmanl.

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (4X)", "56 Gb/sec (4X FDR)",
		"10 Gb/sec (1X FDR10)", "0.125 Gb/sec (12X XDR)", "010 Gb/sec (4X)", "fast", "1 Gb/sec (0X)", "1. Gb/sec (1X)", " Gb/sec (1X)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r.Raw != s || r.Width <= 0 {
			t.Fatalf("ParseRate(%q) = %+v", s, r)
		}
		r2, err := ParseRate(r.String())
		if err != nil {
			t.Fatalf("ParseRate(String() = %q): %v", r.String(), err)
		}
		r2.Raw = r.Raw
		if r2 != r {
			t.Fatalf("round trip of %q: %+v, then %+v", s, r, r2)
		}
	})
}

// TestParseSysfsForms: sysfs's parsers take only the kernel's forms (the
// root package's parsers, which they call, also take compressed IPv6).
func TestParseSysfsForms(t *testing.T) {
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{"fe80:0000:0000:0000:acad:e8ff:fe37:5f42", true},
		{"1:2:3:4:5:6:7:8", true},
		{"FE80:0:0:0:0:0:0:1", true},
		{"fe80::1", false},
		{"::ffff:10.0.0.1", false},
		{"1:2:3:4:5:6:7:8:", false},
		{"12345:0:0:0:0:0:0:0", false},
		{"fe80:0:0:0:0:0:0:1%eth0", false},
	} {
		_, err := parseGID(c.s)
		var pe *ParseError
		if (err == nil) != c.ok || (err != nil && !errors.As(err, &pe)) {
			t.Errorf("parseGID(%q) = %v, want ok %v (a *ParseError otherwise)", c.s, err, c.ok)
		}
	}
	for _, c := range []struct {
		s  string
		ok bool
	}{{"acad:e8ff:fe37:5f42", true}, {"0:0:0:1", true}, {"0c42:a103:0016", false}, {"a:b:c:d:e", false}, {"x", false}} {
		_, err := parseGUID(c.s)
		var pe *ParseError
		if (err == nil) != c.ok || (err != nil && !errors.As(err, &pe)) {
			t.Errorf("parseGUID(%q) = %v, want ok %v (a *ParseError otherwise)", c.s, err, c.ok)
		}
	}
}

func TestGUIDRoundTrip(t *testing.T) {
	for _, g := range []rdma.GUID{0, 1, 0xacade8fffe375f42, math.MaxUint64} {
		got, err := parseGUID(g.String())
		if err != nil || got != g {
			t.Errorf("parseGUID(%q) = %#x, %v", g.String(), got, err)
		}
		b, _ := g.MarshalText()
		var u rdma.GUID
		if err := u.UnmarshalText(b); err != nil || u != g {
			t.Errorf("text round trip of %#x: %#x, %v", g, u, err)
		}
	}
	if err := new(rdma.GUID).UnmarshalText([]byte("nope")); err == nil {
		t.Error("UnmarshalText accepted nope")
	}
}

func FuzzParseEnumLine(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", "7: Phy Test", "1: CA", "6: usNIC UDP", "-1: UNKNOWN",
		"04: x", "08: x", "-0: x", "4:ACTIVE", "ACTIVE", ": x", "+4: x", "99999999999: x", "4: "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, name, err := parseEnumLine(s)
		if err != nil {
			return
		}
		n2, name2, err := parseEnumLine(fmt.Sprintf("%d: %s", n, name))
		if err != nil || n2 != n || name2 != name {
			t.Fatalf("round trip of %q: (%d, %q), then (%d, %q), %v", s, n, name, n2, name2, err)
		}
	})
}

func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0", "25019\n", "18446744073709551615", "18446744073709551616", "N/A (no PMA)\n", "-1", "", "\n", "0x10"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := parseCounter(b)
		s := strings.TrimSuffix(string(b), "\n")
		want, err := strconv.ParseUint(s, 10, 64)
		plain := err == nil
		if ok != plain || (ok && v != want) {
			t.Fatalf("parseCounter(%q) = %d, %v; strconv: %d, %v", b, v, ok, want, err)
		}
		if ok {
			if v2, ok2 := parseCounter([]byte(strconv.FormatUint(v, 10))); !ok2 || v2 != v {
				t.Fatalf("round trip of %d", v)
			}
		}
	})
}

func FuzzParsePortName(f *testing.F) {
	for _, s := range []string{"1", "2", "255", "256", "0", "01", "x", "4294967295", "4294967296", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parsePortName(s)
		if err != nil {
			return
		}
		if n < 0 || strconv.Itoa(n) != s {
			t.Fatalf("parsePortName(%q) = %d", s, n)
		}
	})
}
