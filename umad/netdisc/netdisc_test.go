package netdisc

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
	"github.com/purerdma/rdma/umad"
)

// TestDiscoverSmall walks the small simulated fabric from Hca1: six
// nodes in libibnetdisc's order, every cable found from both ends.
func TestDiscoverSmall(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	p, err := umad.OpenSimPort(f.Sock, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, out := range []int{1, 2, 64} {
		fab, err := Discover(context.Background(), p, Options{MaxOutstanding: out, Timeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		links := 0
		for _, n := range fab.Nodes {
			order = append(order, n.Desc)
			for _, pt := range n.Ports {
				if pt != nil && pt.Remote != nil {
					links++
					if pt.Remote.Remote != pt {
						t.Errorf("%s port %d: the link is one-sided", n.Desc, pt.Num)
					}
				}
			}
		}
		want := []string{"Hca1", "Switch1", "Hca3", "Switch2", "Hca2", "Hca4"}
		if len(order) != len(want) {
			t.Fatalf("outstanding %d: nodes %q", out, order)
		}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("outstanding %d: order %q, want %q", out, order, want)
			}
		}
		// 4 HCA cables and 2 between the switches, each seen from both
		// ends.
		if links != 12 {
			t.Errorf("outstanding %d: %d link ends, want 12", out, links)
		}
		if fab.From.Desc != "Hca1" || fab.FromPort != 1 || fab.MADs == 0 {
			t.Errorf("from %s port %d, %d MADs", fab.From.Desc, fab.FromPort, fab.MADs)
		}
		sw1 := fab.Nodes[1]
		if sw1.Type != TypeSwitch || sw1.SMALID == 0 || sw1.Ports[3].Remote.Node.Desc != "Switch2" {
			t.Errorf("Switch1: %+v", sw1)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Discover(ctx, p, Options{}); err == nil {
		t.Error("a cancelled context discovered")
	}
}

// TestDiscoverNil: a nil port or context is EINVAL, not a panic.
func TestDiscoverNil(t *testing.T) {
	var rerr *rdma.Error
	if _, err := Discover(context.Background(), nil, Options{}); !errors.Is(err, syscall.EINVAL) || !errors.As(err, &rerr) {
		t.Errorf("nil port: %v", err)
	}
	var ctx context.Context
	p := new(umad.Port) // never opened: the context is checked first
	if _, err := Discover(ctx, p, Options{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil context: %v", err)
	}
}

// TestDiscoverStall: ibsim stopped for longer than the SMPs' timeouts
// and retries. With a negative Options.Idle the scan waits and finds
// every node once ibsim runs again (an ibsim port holds timeouts off
// while ibsim is silent); with a bound it gives up, saying why.
func TestDiscoverStall(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	p, err := umad.OpenSimPort(f.Sock, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	o := Options{Timeout: 50 * time.Millisecond, Retries: 1, Idle: -1}
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(time.Second, func() { _ = f.Resume() })
	start := time.Now()
	fab, err := Discover(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(fab.Nodes) != 6 || time.Since(start) < time.Second {
		t.Fatalf("%d nodes after %v, want 6 after the second ibsim was stopped", len(fab.Nodes), time.Since(start))
	}
	o.Idle = 300 * time.Millisecond
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	_, err = Discover(context.Background(), p, o)
	if err := f.Resume(); err != nil {
		t.Fatal(err)
	}
	if err == nil || !strings.Contains(err.Error(), "no answer nor timeout for 300ms") {
		t.Fatalf("bounded wait on a stopped ibsim: %v", err)
	}
}
