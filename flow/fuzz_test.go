package flow

import (
	"bytes"
	"errors"
	"reflect"
	"syscall"
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

// FuzzDecodeSpecs: DecodeSpecs never panics and never allocates for more
// specs than b could hold, whatever n is (negative, or far larger than
// the bytes); what it accepts is exactly n specs filling b, each of which
// DecodeSpec decodes alike.
func FuzzDecodeSpecs(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s, 1)
	}
	f.Add([]byte{}, -1)
	f.Add([]byte{}, 1<<31)
	f.Add(make([]byte, 64), 8)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		specs, err := DecodeSpecs(b, n)
		if err != nil {
			if specs != nil {
				t.Fatalf("specs %v returned with error %v", specs, err)
			}
			if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.EOPNOTSUPP) {
				t.Fatalf("error %v is neither EINVAL nor EOPNOTSUPP", err)
			}
			return
		}
		if n < 0 || len(specs) != n {
			t.Fatalf("DecodeSpecs(%d bytes, %d) = %d specs", len(b), n, len(specs))
		}
		off := 0
		for i, s := range specs {
			s2, size, err := DecodeSpec(b[off:])
			if err != nil || !reflect.DeepEqual(s, s2) {
				t.Fatalf("spec %d: DecodeSpecs gave %#v, DecodeSpec %#v, %v", i, s, s2, err)
			}
			off += size
		}
		if off != len(b) {
			t.Fatalf("specs fill %d of %d bytes", off, len(b))
		}
	})
}

// TestDecodeSpecsCount: the counts the issue found panicking or
// allocating gigabytes are refused with EINVAL before any allocation.
func TestDecodeSpecsCount(t *testing.T) {
	eth, _ := (&Eth{}).MarshalBinary()
	for _, n := range []int{-1, -1 << 62, 1 << 31, len(eth)/SpecHdrSize + 1} {
		allocs := testing.AllocsPerRun(10, func() {
			if _, err := DecodeSpecs(eth, n); !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("DecodeSpecs(%d bytes, %d): %v, want EINVAL", len(eth), n, err)
			}
		})
		// The error message itself allocates; the specs slice must not.
		if allocs > 10 {
			t.Errorf("DecodeSpecs with n=%d allocates %.0f times", n, allocs)
		}
	}
	if specs, err := DecodeSpecs(eth, 1); err != nil || len(specs) != 1 {
		t.Errorf("DecodeSpecs(eth, 1) = %v, %v", specs, err)
	}
}
