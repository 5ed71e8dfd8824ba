package flow

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "\n", "", "\t", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The wire form of every spec, byte for byte, against struct
// ib_uverbs_flow_spec_* of <rdma/ib_user_verbs.h> (ib_user_verbs.h, ib_uverbs_flow_spec_*; uverbs_cmd.c, kern_spec_to_ib_spec_filter):
// header {type u32, size u16, reserved u16}, then value and mask.
func TestSpecWireForms(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{&Eth{Value: EthFilter{DstMAC: MAC{0, 1, 2, 3, 4, 5}, SrcMAC: MAC{6, 7, 8, 9, 10, 11}, EtherType: 0x0800, VLANTag: 0x0123},
			Mask: EthFilter{DstMAC: MAC{255, 255, 255, 255, 255, 255}}},
			"20000000 2800 0000  000102030405 060708090a0b 0800 0123  ffffffffffff 000000000000 0000 0000"},
		{&Eth{Inner: true}, "20010000 2800 0000" + strings.Repeat("00", 32)},
		{&IPv4{Value: IPv4Filter{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, Proto: 17, TOS: 4, TTL: 64, Flags: 2},
			Mask: IPv4Filter{Dst: [4]byte{255, 255, 255, 255}, Proto: 0xff}},
			"30000000 2000 0000  0a000001 0a000002 11 04 40 02  00000000 ffffffff ff 00 00 00"},
		{&IPv6{Value: IPv6Filter{Dst: [16]byte{0xfe, 0x80, 15: 1}, FlowLabel: 0xabcde, NextHdr: 6, TrafficClass: 1, HopLimit: 255}},
			"31000000 5800 0000" + strings.Repeat("00", 16) + "fe800000000000000000000000000001" + "000abcde 06 01 ff 00" + strings.Repeat("00", 40)},
		{&TCP{Value: PortFilter{DstPort: 80, SrcPort: 1024}, Mask: PortFilter{DstPort: 0xffff}},
			"40000000 1000 0000  0050 0400  ffff 0000"},
		{&UDP{Inner: true, Value: PortFilter{DstPort: 4791}, Mask: PortFilter{DstPort: 0xffff}},
			"41010000 1000 0000  12b7 0000  ffff 0000"},
		{&VXLAN{VNI: 0x123456, Mask: 0xffffff}, "50000000 1000 0000  00123456 00ffffff"},
		{&GRE{Value: GREFilter{CKsRes0Ver: 0x2000, Protocol: 0x6558, Key: 0x01020304}, Mask: GREFilter{Protocol: 0xffff}},
			"51000000 1800 0000  2000 6558 01020304  0000 ffff 00000000"},
		{&MPLS{Label: 0x00064140, Mask: 0xfffff000}, "60000000 1000 0000  00064140 fffff000"},
		{&ESP{Value: ESPFilter{SPI: 0x11223344, Seq: 1}, Mask: ESPFilter{SPI: 0xffffffff}},
			"34000000 1800 0000  44332211 01000000 ffffffff 00000000"},
		{&Tag{ID: 0x00abcdef}, "00100000 1000 0000  efcdab00 00000000"},
		{&Drop{}, "01100000 0800 0000"},
		{&Handle{Handle: 7}, "02100000 1000 0000  07000000 00000000"},
		{&Count{Handle: 3}, "03100000 1000 0000  03000000 00000000"},
	} {
		got, err := tc.spec.MarshalBinary()
		if err != nil {
			t.Fatalf("%v: %v", tc.spec.Type(), err)
		}
		want := unhex(t, tc.want)
		if !bytes.Equal(got, want) {
			t.Errorf("%v:\n got %x\nwant %x", tc.spec.Type(), got, want)
		}
		if len(got) != tc.spec.Len() {
			t.Errorf("%v: Len() = %d, wire form %d bytes", tc.spec.Type(), tc.spec.Len(), len(got))
		}
		back, n, err := DecodeSpec(got)
		if err != nil || n != len(got) || !reflect.DeepEqual(back, tc.spec) {
			t.Errorf("%v: decoded %#v, %d, %v", tc.spec.Type(), back, n, err)
		}
	}
}

// rdma-core's plain IPv4 spec is 24 bytes (the 8-byte legacy filter): it
// decodes, zero-extended, and encodes back in the full 32-byte form.
func TestLegacyIPv4(t *testing.T) {
	legacy := unhex(t, "30000000 1800 0000  0a000001 0a000002  00000000 ffffffff")
	s, n, err := DecodeSpec(legacy)
	if err != nil || n != 24 {
		t.Fatal(n, err)
	}
	want := &IPv4{Value: IPv4Filter{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}}, Mask: IPv4Filter{Dst: [4]byte{255, 255, 255, 255}}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("decoded %#v", s)
	}
	if s.Len() != 32 {
		t.Errorf("re-encoded as %d bytes", s.Len())
	}
}

func TestSpecStrings(t *testing.T) {
	for typ, want := range map[SpecType]string{TypeEth: "eth", TypeUDP | TypeInner: "inner udp", TypeActionCount: "count", 0x77: "SpecType(0x77)"} {
		if got := typ.String(); got != want {
			t.Errorf("%#x: %q", uint32(typ), got)
		}
	}
	if got := (MAC{0, 1, 2, 0xa, 0xb, 0xff}).String(); got != "00:01:02:0a:0b:ff" {
		t.Error(got)
	}
	if AttrSniffer.String() != "SNIFFER" || AttrType(9).String() != "AttrType(9)" {
		t.Error("AttrType.String")
	}
}

func TestEncodeRefusesWhatTheKernelRefuses(t *testing.T) {
	for _, s := range []Spec{
		&IPv6{Value: IPv6Filter{FlowLabel: 1 << 20}},
		&IPv6{Mask: IPv6Filter{FlowLabel: 0xffffffff}},
		&VXLAN{VNI: 1 << 24},
	} {
		if _, err := s.MarshalBinary(); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%v: %v", s.Type(), err)
		}
	}
	a := &Attr{Specs: []Spec{&Drop{}, nil}}
	if _, err := a.MarshalBinary(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil spec: %v", err)
	}
	a = &Attr{Specs: make([]Spec, 256)}
	if _, err := a.MarshalBinary(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("256 specs: %v", err)
	}
}

// The decoder applies the kernel's rules (kern_spec_to_ib_spec).
func TestDecodeRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     string
		errno syscall.Errno
	}{
		{"short header", "200000002800", syscall.EINVAL},
		{"size past the buffer", "20000000 2800 0000", syscall.EINVAL},
		{"reserved", "01100000 0800 0100", syscall.EINVAL},
		{"filter not a multiple of 4", "40000000 0e00 0000  000000000000", syscall.EINVAL},
		{"empty filter", "40000000 0800 0000", syscall.EINVAL},
		{"filter shorter than the header", "40000000 0400 0000", syscall.EINVAL},
		{"inner vxlan", "50010000 1000 0000  00000001 00ffffff", syscall.EINVAL},
		{"vni over 24 bits", "50000000 1000 0000  01000000 00000000", syscall.EINVAL},
		{"unknown filter", "22000000 1000 0000  00000000 00000000", syscall.EINVAL},
		{"unknown action", "04100000 0800 0000", syscall.EINVAL},
		{"drop with payload", "01100000 1000 0000  00000000 00000000", syscall.EINVAL},
		{"tag of 8 bytes", "00100000 0800 0000", syscall.EINVAL},
		{"count of 8 bytes", "03100000 0800 0000", syscall.EINVAL},
		{"handle of 8 bytes", "02100000 0800 0000", syscall.EOPNOTSUPP},
		{"mask past the kernel's filter", "40000000 1800 0000  00500000 00000000  ffff0000 00000001", syscall.EINVAL},
		{"ipv6 reserved mask byte", "31000000 5800 0000" + strings.Repeat("00", 40) + strings.Repeat("00", 39) + "01", syscall.EINVAL},
	} {
		_, _, err := DecodeSpec(unhex(t, tc.b))
		if !errors.Is(err, tc.errno) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.errno)
		}
	}
	// A longer filter with zero mask bytes past the kernel's is fine; its
	// extra value bytes are ignored.
	s, n, err := DecodeSpec(unhex(t, "40000000 1800 0000  00500000 000000ff  ffff0000 00000000"))
	if err != nil || n != 24 || !reflect.DeepEqual(s, &TCP{Value: PortFilter{DstPort: 80}, Mask: PortFilter{DstPort: 0xffff}}) {
		t.Errorf("long TCP filter: %#v %d %v", s, n, err)
	}
}

func TestAttrWireForm(t *testing.T) {
	a := &Attr{Type: AttrNormal, Priority: 3, Port: 1, Flags: FlagDontTrap, Specs: []Spec{
		&Eth{Value: EthFilter{DstMAC: MAC{0, 1, 2, 3, 4, 5}}, Mask: EthFilter{DstMAC: MAC{255, 255, 255, 255, 255, 255}}},
		&Count{Handle: 9},
	}}
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// type 0, size 56 (40 + 16), priority 3, 2 specs, reserved, port 1, flags 2.
	if want := unhex(t, "00000000 3800 0300 02 0000 01 02000000"); !bytes.Equal(b[:16], want) {
		t.Errorf("flow attr %x, want %x", b[:16], want)
	}
	if len(b) != 16+56 || a.Size() != 56 {
		t.Errorf("%d bytes, Size %d", len(b), a.Size())
	}
	var back Attr
	if err := back.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(&back, a) {
		t.Errorf("round trip: %#v, %v", back, err)
	}
	// num_of_specs larger than what follows, bytes left over, reserved.
	bad := append([]byte(nil), b...)
	bad[8] = 3
	if err := back.UnmarshalBinary(bad); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("3 specs announced: %v", err)
	}
	bad = append(append([]byte(nil), b...), 0, 0, 0, 0, 0, 0, 0, 0)
	if err := back.UnmarshalBinary(bad); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("trailing bytes: %v", err)
	}
	bad = append([]byte(nil), b...)
	bad[9] = 1
	if err := back.UnmarshalBinary(bad); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("reserved: %v", err)
	}
}
