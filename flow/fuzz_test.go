package flow

import (
	"bytes"
	"reflect"
	"testing"
)

// seeds are the wire forms of every spec type and a full flow attribute.
func seeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, s := range []Spec{
		&Eth{Value: EthFilter{DstMAC: MAC{0, 1, 2, 3, 4, 5}, EtherType: 0x86dd}, Mask: EthFilter{DstMAC: MAC{255, 255, 255, 255, 255, 255}, EtherType: 0xffff}},
		&IPv4{Inner: true, Value: IPv4Filter{Dst: [4]byte{10, 0, 0, 1}}, Mask: IPv4Filter{Dst: [4]byte{255, 255, 255, 0}}},
		&IPv6{Value: IPv6Filter{FlowLabel: 5, NextHdr: 17}, Mask: IPv6Filter{FlowLabel: 0xfffff}},
		&TCP{Value: PortFilter{DstPort: 22}}, &UDP{Inner: true, Mask: PortFilter{SrcPort: 1}},
		&VXLAN{VNI: 42, Mask: 0xffffff}, &GRE{Value: GREFilter{Protocol: 0x0800}}, &MPLS{Label: 0x100}, &ESP{Value: ESPFilter{SPI: 9}},
		&Tag{ID: 1}, &Drop{}, &Handle{Handle: 2}, &Count{Handle: 3},
	} {
		b, err := s.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	a := &Attr{Port: 1, Specs: []Spec{&Eth{}, &IPv4{}, &UDP{}, &Count{Handle: 1}}}
	b, err := a.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	return append(out, b)
}

// DecodeSpec never panics, and what it accepts re-encodes to a form that
// decodes to the same value (decode → encode → decode is stable; the
// re-encoded form is the canonical full-length one).
func FuzzDecodeSpec(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, err := DecodeSpec(b)
		if err != nil {
			return
		}
		if n < SpecHdrSize || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		enc, err := s.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", s, err)
		}
		if len(enc) != s.Len() {
			t.Fatalf("Len %d, encoded %d", s.Len(), len(enc))
		}
		s2, n2, err := DecodeSpec(enc)
		if err != nil || n2 != len(enc) || !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip: %#v → %x → %#v, %v", s, enc, s2, err)
		}
		enc2, _ := s2.MarshalBinary()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %x vs %x", enc, enc2)
		}
	})
}

// Attr.UnmarshalBinary never panics, and a decoded attribute re-encodes to
// bytes that decode to the same attribute.
func FuzzAttr(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Attr
		if err := a.UnmarshalBinary(b); err != nil {
			return
		}
		enc, err := a.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", a, err)
		}
		if len(enc) != AttrHdrSize+a.Size() {
			t.Fatalf("%d bytes, Size %d", len(enc), a.Size())
		}
		var a2 Attr
		if err := a2.UnmarshalBinary(enc); err != nil || !reflect.DeepEqual(a, a2) {
			t.Fatalf("round trip: %#v → %#v, %v", a, a2, err)
		}
	})
}
