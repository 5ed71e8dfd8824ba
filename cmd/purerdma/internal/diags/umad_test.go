package diags

import (
	"strings"
	"testing"
)

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

func TestUmadSubcommand(t *testing.T) {
	_, errs, code := DefaultEnv().runTool("umad", "bogus")
	if code != 2 || !strings.HasPrefix(errs, `umad: unknown subcommand "bogus": send or serve`+"\n") || !strings.Contains(errs, "Usage: umad send") {
		t.Errorf("umad bogus: %d %q", code, errs)
	}
	_, errs, code = DefaultEnv().runTool("umad")
	if code != 2 || !strings.HasPrefix(errs, "umad: missing subcommand: send or serve\n") {
		t.Errorf("umad: %d %q", code, errs)
	}
}
