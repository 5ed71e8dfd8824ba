package diags

import "testing"

// TestUmadTIDRing: serve tells the kernel's duplicate refusal from other
// EINVALs by the TIDs it answered last: the latest 256 are remembered,
// older ones forgotten, and a TID never answered is not there.
func TestUmadTIDRing(t *testing.T) {
	var r umadTIDRing
	if r.has(0) {
		t.Fatal("an empty ring holds TID 0")
	}
	for tid := uint64(1); tid <= 300; tid++ {
		r.add(tid << 32)
	}
	for tid := uint64(1); tid <= 300; tid++ {
		if want := tid > 300-256; r.has(tid<<32) != want {
			t.Errorf("has(%d) = %v, want %v", tid, !want, want)
		}
	}
	if r.has(301 << 32) {
		t.Error("a TID never answered is remembered")
	}
}
