package umad

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

// LookupCAs reads the character devices once for all the devices, not
// once per device: its allocations grow linearly (LookupCA per name, as
// ibstat did, was quadratic).
func TestLookupCAsScaleLinearly(t *testing.T) {
	allocs := map[int]float64{}
	for _, n := range []int{32, 128} {
		root := t.TempDir()
		if err := sysfstest.Synthetic(root, n, 2); err != nil {
			t.Fatal(err)
		}
		h := &Host{Sysfs: tFS(t, root), DevDir: root}
		cas, errs, err := h.LookupCAs()
		if err != nil || len(cas) != n || errs[n-1] != nil || cas[n-1].Ports[2] == nil {
			t.Fatalf("n=%d: %d CAs, %v", n, len(cas), err)
		}
		allocs[n] = testing.AllocsPerRun(2, func() { h.LookupCAs() })
	}
	if r := allocs[128] / allocs[32]; r > 4*1.25 {
		t.Errorf("allocations %v: ×%.1f for 4× the devices", allocs, r)
	}
}
