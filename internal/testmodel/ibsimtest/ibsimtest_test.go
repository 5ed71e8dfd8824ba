package ibsimtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestFatTreeFile checks that the committed 1,052-node net file is what
// FatTree writes (`go test -run TestFatTreeFile -update` rewrites it).
func TestFatTreeFile(t *testing.T) {
	want := FatTree(BigSpines, BigLeaves, BigHCAs, BigPorts)
	if len(os.Args) > 0 && update {
		if err := os.WriteFile("testdata/net.fattree1k", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if Big != want {
		t.Fatal("testdata/net.fattree1k is not FatTree(BigSpines, BigLeaves, BigHCAs, BigPorts); rerun with -update")
	}
	if n := strings.Count(Big, "Switch\t") + strings.Count(Big, "Hca\t"); n != 1052 {
		t.Fatalf("%d nodes, want 1052", n)
	}
	if FatTree(40, 1, 1, 36) != "" {
		t.Fatal("FatTree accepted more spines than ports")
	}
}

// TestSmallFabric starts the small fabric and finds its six nodes with
// LIDs through infiniband-diags' ibnetdiscover.
func TestSmallFabric(t *testing.T) {
	f := Start(t, Small, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lids, err := f.LIDs(ctx, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"Switch1", "Switch2", "Hca1", "Hca2", "Hca3", "Hca4"} {
		if lids[n] == 0 {
			t.Errorf("%s has no LID: %v", n, lids)
		}
	}
	f.Stop()
	f.Stop() // idempotent
	if f.listening() {
		t.Fatal("ibsim still listening after Stop")
	}
}

// TestOwnFabrics starts the ring, line and wide fabrics and finds every
// node of each, with a LID, through infiniband-diags' ibnetdiscover.
func TestOwnFabrics(t *testing.T) {
	for _, c := range []struct {
		name, net, at string
		nodes         []string
	}{
		{"ring", Ring, "h1", []string{"Ring1", "Ring2", "Ring3", "Ring4", "Ring5", "Ring6", "h1", "h2", "h3", "h4", "h5", "h6", "Dual"}},
		{"line", Line, "Head", []string{"Line1", "Line8", "Line16", "Head", "Mid", "Tail"}},
		{"wide", Wide, "w1", []string{"Wide36", "Edge", "w1", "w12", "w24", "e1", "e2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := Start(t, c.net, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lids, err := f.LIDs(ctx, c.at)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range c.nodes {
				if lids[n] == 0 {
					t.Errorf("%s has no LID: %v", n, lids)
				}
			}
		})
	}
}
