package abi

import "testing"

// The umad header is encoded for every MAD sent and decoded for every MAD
// received; these must not allocate.

func BenchmarkMadHdrEncode(b *testing.B) {
	buf := make([]byte, MadHdrSize+256)
	h := grhSendHdr
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := h.Encode(buf, MadHdrSize); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMadHdrAppendTo(b *testing.B) {
	buf := make([]byte, 0, MadHdrSize+256)
	h := grhSendHdr
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = h.AppendTo(buf[:0], MadHdrSize); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMadHdrDecode(b *testing.B) {
	buf := make([]byte, MadHdrSize+256)
	h := grhSendHdr
	if err := h.Encode(buf, MadHdrSize); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := h.Decode(buf, MadHdrSize); err != nil {
			b.Fatal(err)
		}
	}
}
