package sys

import (
	"testing"
)

// A MapRef names its mapping until it is unmapped: a second Unmap, a
// MapRef of another mapping, one from before UnmapAll, or one of a slot
// used again, even for the same address, unmaps nothing.
func TestMapSetRefs(t *testing.T) {
	s := NewMapSet()
	before := Mapped()
	a, ra, err := s.Anon(PageSize)
	if err != nil {
		t.Fatal(err)
	}
	b, rb, err := s.Anon(PageSize)
	if err != nil {
		t.Fatal(err)
	}
	if ra == 0 || rb == 0 || ra == rb {
		t.Fatalf("refs %#x and %#x", ra, rb)
	}
	if err := s.Unmap(b, ra); err != nil || s.Len() != 2 {
		t.Fatalf("Unmap with another mapping's ref: %v, Len %d", err, s.Len())
	}
	if err := s.Unmap(a, ra); err != nil || s.Len() != 1 {
		t.Fatalf("Unmap: %v, Len %d", err, s.Len())
	}
	// The slot serves again; the old ref names nothing, even when the
	// kernel hands out the same address.
	c, rc, err := s.Anon(PageSize)
	if err != nil {
		t.Fatal(err)
	}
	if uint32(rc) != uint32(ra) || rc == ra {
		t.Errorf("slot not reused with a new generation: %#x after %#x", rc, ra)
	}
	if err := s.Unmap(c, ra); err != nil || s.Len() != 2 {
		t.Fatalf("Unmap with a stale ref: %v, Len %d", err, s.Len())
	}
	s.UnmapAll()
	if s.Len() != 0 || Mapped() != before {
		t.Fatalf("after UnmapAll: Len %d, mapped %d", s.Len(), Mapped()-before)
	}
	d, rd, err := s.Anon(PageSize)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []MapRef{ra, rb, rc, 0, MapRef(1 << 40), ^MapRef(0)} {
		if err := s.Unmap(d, r); err != nil || s.Len() != 1 {
			t.Fatalf("Unmap with ref %#x from before UnmapAll: %v, Len %d", r, err, s.Len())
		}
	}
	if err := s.Unmap(d, rd); err != nil || s.Len() != 0 || Mapped() != before {
		t.Fatalf("Unmap: %v, Len %d, mapped %d", err, s.Len(), Mapped()-before)
	}
	var nilSet *MapSet
	e, r, err := nilSet.Anon(PageSize)
	if err != nil || r != 0 {
		t.Fatalf("nil set Anon: %v, ref %#x", err, r)
	}
	if err := nilSet.Unmap(e, 0); err != nil || IsMapped(e) {
		t.Fatalf("nil set Unmap: %v", err)
	}
}

func TestMapSetRecords(t *testing.T) {
	s := NewMapSet()
	before := Mapped()
	var bs [][]byte
	var rs []MapRef
	for range 20 {
		b, r, err := s.Anon(PageSize)
		if err != nil {
			t.Fatal(err)
		}
		bs, rs = append(bs, b), append(rs, r)
	}
	if s.Len() != 20 || Mapped()-before != int64(20*PageSize) {
		t.Fatalf("Len %d, mapped %d", s.Len(), Mapped()-before)
	}
	for i, b := range bs[:10] {
		if err := s.Unmap(b, rs[i]); err != nil {
			t.Fatal(err)
		}
		if err := s.Unmap(b, rs[i]); err != nil { // forgotten: nothing to do
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
