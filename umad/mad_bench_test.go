package umad

import (
	"fmt"
	"testing"
)

// MADs are encoded for every send and decoded for every receive: the
// header and the PerfMgmt PortCounters MAD (perfquery's hot path) must not
// allocate. Run with -benchmem.

func BenchmarkMADHeaderAppend(b *testing.B) {
	h := madHeaderVec
	buf := make([]byte, 0, MADSize)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = h.Append(buf[:0])
	}
}

func BenchmarkMADHeaderDecode(b *testing.B) {
	in := madPerfRespBytes(b)
	var h MADHeader
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := h.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPortCountersMADAppend encodes a whole PerfMgmt MAD carrying
// PortCounters: the attribute into the MAD's data area, the MAD into a
// reused send buffer.
func BenchmarkPortCountersMADAppend(b *testing.B) {
	m := madPerfResp
	pc := madPortCountersVec
	buf := make([]byte, 0, MADSize)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		pc.Append(m.Data[:0])
		buf = m.Append(buf[:0])
	}
}

// BenchmarkPortCountersMADSetAttribute is the same through SetAttribute,
// which takes the attribute as an interface.
func BenchmarkPortCountersMADSetAttribute(b *testing.B) {
	m := madPerfResp
	pc := madPortCountersVec
	buf := make([]byte, 0, MADSize)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := m.SetAttribute(&pc); err != nil {
			b.Fatal(err)
		}
		buf = m.Append(buf[:0])
	}
}

// BenchmarkPortCountersMADDecode decodes a received PerfMgmt GetResp and
// its PortCounters.
func BenchmarkPortCountersMADDecode(b *testing.B) {
	in := madPerfRespBytes(b)
	var (
		m  PerfMAD
		pc PortCounters
	)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := m.Decode(in); err != nil {
			b.Fatal(err)
		}
		if err := pc.Decode(m.Data[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPortCountersExtendedMADDecode(b *testing.B) {
	in := madPerfRespBytes(b)
	copy(in[PerfDataOffset:], madHex(b, madPortCountersExtHex))
	var (
		m  PerfMAD
		pc PortCountersExtended
	)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := m.Decode(in); err != nil {
			b.Fatal(err)
		}
		if err := pc.Decode(m.Data[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSMPPortInfoDecode decodes a directed-route SMP and a PortInfo
// from its data.
func BenchmarkSMPPortInfoDecode(b *testing.B) {
	in := madDRSMPBytes(b)
	copy(in[64:128], madHex(b, madPortInfoHex))
	var (
		s  SMP
		pi PortInfo
	)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := s.Decode(in); err != nil {
			b.Fatal(err)
		}
		if err := pi.Decode(s.Data[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeMAD is the dispatcher, which allocates the message it
// returns (one allocation per MAD).
func BenchmarkDecodeMAD(b *testing.B) {
	in := madPerfRespBytes(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeMAD(in); err != nil {
			b.Fatal(err)
		}
	}
}

// The receive path decodes without allocating through a MADDecoder
// (DecodeMAD allocates the message it returns).
func TestMADDecoderAllocatesNothing(t *testing.T) {
	var d MADDecoder
	for _, class := range []MgmtClass{ClassSubnMgmt, ClassPerfMgmt, 0x30, 0x09} {
		b := make([]byte, MADSize)
		b[0], b[1], b[2] = BaseVersion, uint8(class), 1
		want, err := DecodeMAD(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Decode(b)
		if err != nil || fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", want, want) {
			t.Fatalf("class %#x: Decode = %T %v, %v; DecodeMAD %T %v", class, got, got, err, want, want)
		}
		if a := testing.AllocsPerRun(100, func() { d.Decode(b) }); a != 0 {
			t.Errorf("class %#x: %v allocations per Decode", class, a)
		}
	}
}

func BenchmarkMADDecoder(b *testing.B) {
	buf := make([]byte, MADSize)
	buf[0], buf[1], buf[2] = BaseVersion, uint8(ClassPerfMgmt), 1
	var d MADDecoder
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := d.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}
