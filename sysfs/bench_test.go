package sysfs

import "testing"

// BenchmarkHwCounterSetRead reads one port's hw_counters (rxe: 15 files)
// into a caller's map through a set opened once: after the first Read the
// map holds every name, and a Read allocates nothing.
func BenchmarkHwCounterSetRead(b *testing.B) {
	p, err := fixture(b, "rxe-6.1").Port("rxe0", 1)
	if err != nil {
		b.Fatal(err)
	}
	s, err := p.OpenHwCounters()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m := make(map[string]uint64, len(s.Names()))
	if err := s.Read(m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Read(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHwCounterSetReadValues is the same into a []uint64 indexed like
// Names.
func BenchmarkHwCounterSetReadValues(b *testing.B) {
	p, err := fixture(b, "rxe-6.1").Port("rxe0", 1)
	if err != nil {
		b.Fatal(err)
	}
	s, err := p.OpenHwCounters()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	v := make([]uint64, len(s.Names()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.ReadValues(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPortHwCounters is the one-shot read: list the directory, open,
// read and close every file, build a new map.
func BenchmarkPortHwCounters(b *testing.B) {
	p, err := fixture(b, "rxe-6.1").Port("rxe0", 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.HwCounters(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCAs reads the whole rxe tree (two CAs, their ports and
// character devices), as ibstat does.
func BenchmarkCAs(b *testing.B) {
	f := fixture(b, "rxe-6.1")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := f.CAs(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHwCounterSetReadAllocs pins the zero-allocation claim.
func TestHwCounterSetReadAllocs(t *testing.T) {
	p, err := fixture(t, "rxe-6.1").Port("rxe0", 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.OpenHwCounters()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := map[string]uint64{}
	if err := s.Read(m); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Read(m) }); n != 0 {
		t.Errorf("HwCounterSet.Read allocates %v times per call, want 0", n)
	}
}
