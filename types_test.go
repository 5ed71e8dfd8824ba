package rdma

import (
	"fmt"
	"math"
	"testing"
)

func TestGIDFormats(t *testing.T) {
	for _, tc := range []struct {
		hex, ntop string
	}{
		{"fe80:0000:0000:0000:acad:e8ff:fe37:5f42", "fe80::acad:e8ff:fe37:5f42"},
		{"0000:0000:0000:0000:0000:ffff:0a4d:0001", "::ffff:10.77.0.1"},
		{"0000:0000:0000:0000:0000:0000:0a4d:0001", "::10.77.0.1"},
		{"0000:0000:0000:0000:0000:0000:0000:0001", "::1"},
		{"0000:0000:0000:0000:0000:0000:0000:0000", "::"},
		{"2001:0db8:0000:0001:0000:0000:0000:0001", "2001:db8:0:1::1"},
		{"2001:0db8:0000:0000:0001:0000:0000:0001", "2001:db8::1:0:0:1"},
		{"fe80:0000:0001:0000:0000:0000:0000:0000", "fe80:0:1::"},
		{"0001:0000:0001:0000:0001:0000:0001:0000", "1:0:1:0:1:0:1:0"},
	} {
		g, err := ParseGID(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		if g.Hex() != tc.hex || g.String() != tc.ntop {
			t.Errorf("%s: Hex %s, String %s (want %s)", tc.hex, g.Hex(), g.String(), tc.ntop)
		}
		if g2, err := ParseGID(tc.ntop); err != nil || g2 != g {
			t.Errorf("ParseGID(%q) = %v, %v; want %v", tc.ntop, g2, err, g)
		}
	}
	for _, bad := range []string{"", "fe80", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0", "10.0.0.1", "12345::"} {
		if _, err := ParseGID(bad); err == nil {
			t.Errorf("ParseGID(%q) succeeded", bad)
		}
	}
}

func FuzzParseGID(f *testing.F) {
	for _, s := range []string{"fe80:0000:0000:0000:acad:e8ff:fe37:5f42", "::ffff:10.77.0.1", "fe80::1", "1:2:3:4:5:6:7:8", "x", "::10.0.0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGID(s)
		if err != nil {
			return
		}
		for _, out := range []string{g.Hex(), g.String()} {
			if g2, err := ParseGID(out); err != nil || g2 != g {
				t.Fatalf("round trip of %q via %q: %v, %v", s, out, g2, err)
			}
		}
		var g3 GID
		b, _ := g.MarshalText()
		if err := g3.UnmarshalText(b); err != nil || g3 != g || len(b) != 39 {
			t.Fatalf("text round trip of %v: %v, %v", g, g3, err)
		}
		if g.Addr().As16() != [16]byte(g) {
			t.Fatalf("Addr of %v", g)
		}
	})
}

func FuzzParseGUID(f *testing.F) {
	for _, s := range []string{"acad:e8ff:fe37:5f42", "0:0:0:1", "0c42:a103:0016", "ffff:ffff:ffff:ffff", "a:b:c:d:e", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGUID(s)
		if err != nil {
			return
		}
		out := g.String()
		if g2, err := ParseGUID(out); err != nil || g2 != g || len(out) != 19 {
			t.Fatalf("round trip of %q via %q: %v, %v", s, out, g2, err)
		}
	})
}

func TestGUIDText(t *testing.T) {
	for _, g := range []GUID{0, 1, 0xacade8fffe375f42, math.MaxUint64} {
		b, _ := g.MarshalText()
		var u GUID
		if err := u.UnmarshalText(b); err != nil || u != g {
			t.Errorf("text round trip of %#x: %#x, %v", g, u, err)
		}
	}
	if s := fmt.Sprintf("0x%016x %v %s %d", GUID(0xacade8fffe375f42), GUID(1), GUID(2), GUID(3)); s != "0xacade8fffe375f42 0000:0000:0000:0001 0000:0000:0000:0002 3" {
		t.Errorf("formatted %q", s)
	}
	for _, bad := range []string{"", "1:2:3", "zz:0:0:0", "10000:0:0:0", "1:2:3:4:"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) succeeded", bad)
		}
	}
	if g, err := ParseGUID("acad:e8ff:fe37:5f42"); err != nil || g != 0xacade8fffe375f42 || g.String() != "acad:e8ff:fe37:5f42" {
		t.Errorf("ParseGUID = %#x, %v", g, err)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		got  interface{ String() string }
		want string
	}{
		{NodeCA, "CA"}, {NodeUSNICUDP, "usNIC UDP"}, {NodeUnknown, "unknown"}, {NodeType(9), "NodeType(9)"},
		{PortActive, "ACTIVE"}, {PortActiveDefer, "ACTIVE_DEFER"}, {PortState(6), "PortState(6)"},
		{PhysLinkUp, "LinkUp"}, {PhysPhyTest, "Phy Test"}, {PhysState(0), "PhysState(0)"},
		{LinkLayerEthernet, "Ethernet"}, {LinkLayerUnspecified, "Unspecified"},
		{DriverMLX5, "mlx5"}, {DriverRXE, "rxe"}, {DriverMANA, "mana"}, {DriverID(99), "driver id 99"},
		{GIDTypeIB, "IB"}, {GIDTypeRoCEv1, "RoCE v1"}, {GIDTypeRoCEv2, "RoCE v2"}, {GIDType(3), "GIDType(3)"},
	} {
		if s := tc.got.String(); s != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.got, s, tc.want)
		}
	}
	for text, want := range map[string]LinkLayer{"InfiniBand": LinkLayerInfiniBand, "Ethernet": LinkLayerEthernet, "Unknown": LinkLayerUnspecified} {
		if l, ok := ParseLinkLayer(text); !ok || l != want {
			t.Errorf("ParseLinkLayer(%q) = %v, %v", text, l, ok)
		}
	}
	if _, ok := ParseLinkLayer("IB"); ok {
		t.Error(`ParseLinkLayer("IB") succeeded`)
	}
}

// TestParseGIDType: the kernel writes "IB/RoCE v1" for IB and RoCE v1
// GIDs; the link layer decides, as in libibverbs' sysfs fallback.
func TestParseGIDType(t *testing.T) {
	for _, tc := range []struct {
		s    string
		ll   LinkLayer
		want GIDType
		ok   bool
	}{
		{"IB/RoCE v1", LinkLayerInfiniBand, GIDTypeIB, true},
		{"IB/RoCE v1", LinkLayerUnspecified, GIDTypeIB, true},
		{"IB/RoCE v1", LinkLayerEthernet, GIDTypeRoCEv1, true},
		{"RoCE v2", LinkLayerEthernet, GIDTypeRoCEv2, true},
		{"RoCE v2", LinkLayerInfiniBand, GIDTypeRoCEv2, true},
		{"RoCE v1", LinkLayerEthernet, 0, false},
		{"IB", LinkLayerInfiniBand, 0, false},
		{"Invalid GID type", LinkLayerEthernet, 0, false},
		{"RoCE v2\n", LinkLayerEthernet, 0, false},
		{"", LinkLayerEthernet, 0, false},
	} {
		got, ok := ParseGIDType(tc.s, tc.ll)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseGIDType(%q, %v) = %v, %v; want %v, %v", tc.s, tc.ll, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseGIDType: what parses is one of the kernel's two texts, and the
// kernel's text for the type (gid_type_str in drivers/infiniband/core/
// cache.c) parses back to the same type on the same link layer.
func FuzzParseGIDType(f *testing.F) {
	for _, s := range []string{"IB/RoCE v1", "RoCE v2", "RoCE v1", "IB", "", "RoCE v2\n", "Invalid GID type"} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, s string, ll int) {
		l := LinkLayer(ll)
		g, ok := ParseGIDType(s, l)
		if !ok {
			if s == "IB/RoCE v1" || s == "RoCE v2" {
				t.Fatalf("ParseGIDType(%q, %v) failed", s, l)
			}
			return
		}
		kernel := "IB/RoCE v1"
		if g == GIDTypeRoCEv2 {
			kernel = "RoCE v2"
		}
		if kernel != s || (g == GIDTypeRoCEv1) != (s == "IB/RoCE v1" && l == LinkLayerEthernet) {
			t.Fatalf("ParseGIDType(%q, %v) = %v", s, l, g)
		}
		if g2, ok := ParseGIDType(kernel, l); !ok || g2 != g {
			t.Fatalf("round trip of %v via %q: %v, %v", g, kernel, g2, ok)
		}
	})
}
