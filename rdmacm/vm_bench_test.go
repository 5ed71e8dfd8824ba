//go:build integration

package rdmacm_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/rdmacm"
)

// cmbench is the C peer (integration/cmbench), built on the host by
// make integration-cpeers.
func cmbench(t *testing.T) string {
	t.Helper()
	vmtest.RequireAmd64Peer(t, "cmbench")
	p := filepath.Join(vmtest.Repo(), "integration", ".cache", "cmbench", "cmbench")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no C peer (%v): run sh integration/cmbench/build.sh on the host first", err)
	}
	return p
}

// expect waits for the next event of ch and checks its type.
func expect(ch *rdmacm.EventChannel, want rdmacm.EventType) (*rdmacm.Event, error) {
	ev, err := ch.GetEvent(context.Background())
	if err != nil {
		return nil, err
	}
	if ev.Type != want {
		ev.Ack()
		return nil, fmt.Errorf("event %s, want %s", ev, want)
	}
	return ev, nil
}

// cycle is cmbench.c's cycle in Go: connect a client to the listener on
// sch, accept, disconnect both sides, destroy both IDs.
func cycle(cch, sch *rdmacm.EventChannel, dst netip.AddrPort) error {
	c, err := cch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		return err
	}
	defer c.Close()
	steps := []func() error{
		func() error { return c.ResolveAddr(netip.AddrPort{}, dst, 2*time.Second) },
		func() error { return ack(expect(cch, rdmacm.EventAddrResolved)) },
		func() error { return c.ResolveRoute(2 * time.Second) },
		func() error { return ack(expect(cch, rdmacm.EventRouteResolved)) },
		func() error { _, err := c.CreateQP(nil, qpCap); return err },
		func() error {
			return c.Connect(&rdmacm.ConnParam{ResponderResources: rdmacm.MaxDepth, InitiatorDepth: rdmacm.MaxDepth, RetryCount: 7, RNRRetryCount: 7})
		},
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	ev, err := expect(sch, rdmacm.EventConnectRequest)
	if err != nil {
		return err
	}
	s := ev.ID
	ev.Ack()
	defer s.Close()
	steps = []func() error{
		func() error { _, err := s.CreateQP(nil, qpCap); return err },
		func() error { return s.Accept(nil) },
		func() error { return ack(expect(cch, rdmacm.EventEstablished)) },
		func() error { return ack(expect(sch, rdmacm.EventEstablished)) },
		c.Disconnect,
		func() error { return ack(expect(sch, rdmacm.EventDisconnected)) },
		s.Disconnect,
		func() error { return ack(expect(cch, rdmacm.EventDisconnected)) },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

func ack(ev *rdmacm.Event, err error) error {
	ev.Ack()
	return err
}

// TestVMBenchmarkGoVsC sets up and tears down connections in Go and in C
// (librdmacm, integration/cmbench) in alternating chunks on the same
// kernel, in one process of each side, and reports connections a second
// and the Go/C ratio of each chunk pair. The numbers are TCG's: only the
// ratios mean something. It reports; it never fails on a figure.
func TestVMBenchmarkGoVsC(t *testing.T) {
	vmtest.Require(t)
	const per = 20
	chunks := vmtest.Rounds(3, 11)
	cport, gport := uint16(7490), uint16(7491)
	peer := vmtest.StartPeer(t, cmbench(t), "serve", vmtest.Addr0, strconv.Itoa(int(cport)))
	sch, cch := newChannel(t), newChannel(t)
	l := listen(t, sch, rdmacm.PortSpaceTCP, gport)
	defer l.Close()
	dst := netip.AddrPortFrom(addr0, gport)
	if err := cycle(cch, sch, dst); err != nil { // the first opens the device
		t.Fatal(err)
	}
	var gos, cs, ratios []float64
	for i := 0; i < chunks; i++ {
		start := time.Now()
		for j := 0; j < per; j++ {
			if err := cycle(cch, sch, dst); err != nil {
				t.Fatal(err)
			}
		}
		g := float64(time.Since(start).Nanoseconds()) / per
		c := peer.Ask(t, strconv.Itoa(per))
		gos, cs, ratios = append(gos, g), append(cs, c), append(ratios, g/c)
	}
	med := func(v []float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return s[len(s)/2]
	}
	t.Logf("connection set-up and tear-down, %d chunks of %d, Linux %s (TCG):", chunks, per, vmtest.Kernel())
	t.Logf("        %-10s %12s %12s", "side", "µs/conn", "conn/s")
	t.Logf("        %-10s %12.0f %12.0f", "Go", med(gos)/1e3, 1e9/med(gos))
	t.Logf("        %-10s %12.0f %12.0f", "C", med(cs)/1e3, 1e9/med(cs))
	t.Logf("        Go/C time, median of chunk pairs: %.2f", med(ratios))
}

// BenchmarkVMGetEvent measures GetEvent and Ack of ADDR_RESOLVED events
// of IDs on a device already open; the resolutions that make the events
// are outside the timer. Run with -benchmem: 0 allocations.
func BenchmarkVMGetEvent(b *testing.B) {
	vmtest.Require(b)
	ch, err := rdmacm.NewEventChannel(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ch.Close()
	const batch = 64
	ids := make([]*rdmacm.ID, batch)
	dst := netip.AddrPortFrom(addr0, 7497)
	hold, err := ch.CreateID(rdmacm.PortSpaceTCP) // keeps the device open
	if err != nil {
		b.Fatal(err)
	}
	if err := hold.Bind(netip.AddrPortFrom(addr0, 0)); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.StopTimer()
	for done := 0; done < b.N; {
		for i := range ids {
			if ids[i], err = ch.CreateID(rdmacm.PortSpaceTCP); err != nil {
				b.Fatal(err)
			}
			if err := ids[i].ResolveAddr(netip.AddrPort{}, dst, time.Second); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(5 * time.Millisecond)
		n := min(batch, b.N-done)
		b.StartTimer()
		for range n {
			ev, err := ch.GetEvent(ctx)
			if err != nil {
				b.Fatal(err)
			}
			ev.Ack()
		}
		b.StopTimer()
		for _, id := range ids {
			id.Close()
		}
		done += n
	}
}
