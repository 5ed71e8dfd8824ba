package sys

import (
	"math/rand"
	"testing"
	"unsafe"
)

// The table of a MapSet finds, replaces and forgets mappings like a map
// does, through growth and the backward shifts of deletion; the
// addresses are page numbers that collide on purpose.
func TestMapTable(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var tab mapTable
	ref := map[*byte]int{}
	backing := make([]byte, 301<<12)
	addr := func(k int) []byte {
		// Page-spaced addresses inside backing: only the pointer
		// value is used, as a key.
		return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&backing[0]), k<<12)), 1+k%5)
	}
	for step := 0; step < 20000; step++ {
		k := rng.Intn(300)
		b := addr(k)
		p := unsafe.SliceData(b)
		if rng.Intn(3) > 0 {
			tab.put(mapEnt{b: b, anon: k%2 == 0})
			ref[p] = len(b)
		} else {
			e, ok := tab.take(p)
			n, want := ref[p]
			if ok != want || (ok && (len(e.b) != n || unsafe.SliceData(e.b) != p || e.anon != (k%2 == 0))) {
				t.Fatalf("step %d: take(%d) = %v %v, want %v", step, k, len(e.b), ok, want)
			}
			delete(ref, p)
		}
		if tab.n != len(ref) {
			t.Fatalf("step %d: %d entries, want %d", step, tab.n, len(ref))
		}
	}
	for p, n := range ref {
		if e, ok := tab.take(p); !ok || len(e.b) != n {
			t.Fatalf("take of a recorded mapping: %v", ok)
		}
	}
	if tab.n != 0 {
		t.Fatalf("%d entries left", tab.n)
	}
}

func TestMapSetRecords(t *testing.T) {
	s := NewMapSet()
	before := Mapped()
	var bs [][]byte
	for range 20 {
		b, err := s.Anon(PageSize)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	if s.Len() != 20 || Mapped()-before != int64(20*PageSize) {
		t.Fatalf("Len %d, mapped %d", s.Len(), Mapped()-before)
	}
	for _, b := range bs[:10] {
		if err := s.Unmap(b); err != nil {
			t.Fatal(err)
		}
		if err := s.Unmap(b); err != nil { // forgotten: nothing to do
			t.Fatal(err)
		}
	}
	if s.Len() != 10 {
		t.Fatalf("Len %d after 10 unmaps", s.Len())
	}
	s.UnmapAll()
	if s.Len() != 0 || Mapped() != before {
		t.Fatalf("after UnmapAll: Len %d, mapped %d", s.Len(), Mapped()-before)
	}
}
