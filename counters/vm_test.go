//go:build integration

package counters_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/internal/sys/systest"
	"github.com/purerdma/rdma/uverbs"
)

// rxe has no counters object: the kernel answers EPROTONOSUPPORT (the
// COUNTERS object is pruned for drivers without destroy_counters), which
// is ErrNotSupported, and the message names the driver.
func TestVMCreateCountersOnRxe(t *testing.T) {
	vmtest.Require(t)
	c, err := uverbs.Open(vmtest.Dev0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = counters.Create(c, nil)
	if !errors.Is(err, counters.ErrNotSupported) || !errors.Is(err, syscall.EPROTONOSUPPORT) || !strings.Contains(err.Error(), "rxe driver") {
		t.Fatalf("Create on %s: %v", vmtest.Dev0, err)
	}
	t.Logf("%s: %v", vmtest.Kernel(), err)
}

// setsByName describes dev and returns its sets by source, failing when a
// set appears that rxe cannot have.
func describeRxe(t *testing.T, dev string) map[counters.Source]*counters.Set {
	t.Helper()
	sets, err := counters.Describe(dev)
	if err != nil {
		t.Fatal(err)
	}
	bySource := map[counters.Source]*counters.Set{}
	for _, s := range sets {
		t.Cleanup(func() { s.Close() })
		if s.Counted == counters.CountedFlow || s.Source == counters.SourcePMA {
			t.Errorf("rxe offers no %v/%v set: %+v", s.Counted, s.Source, s)
		}
		bySource[s.Source] = s
	}
	return bySource
}

func valueOf(t *testing.T, s *counters.Set, name string) uint64 {
	t.Helper()
	vals := make([]uint64, len(s.Names))
	if err := s.Read(vals); err != nil {
		t.Fatal(err)
	}
	for i, n := range s.Names {
		if n == name {
			return vals[i]
		}
	}
	t.Fatalf("no %s in %v set %v", name, s.Source, s.Names)
	return 0
}

// Describe lists rxe's hardware counters twice per port: from sysfs
// hw_counters/ (cached) and from netlink (fresh), with the same names.
func TestVMDescribeRxe(t *testing.T) {
	vmtest.Require(t)
	for _, dev := range []string{vmtest.Dev0, vmtest.Dev1} {
		sets := describeRxe(t, dev)
		hw, nl := sets[counters.SourceHwSysfs], sets[counters.SourceNetlink]
		if hw == nil || nl == nil {
			t.Fatalf("%s: sets %v", dev, sets)
		}
		if !hw.Cached || nl.Cached || hw.Port != 1 || hw.Counted != counters.CountedPort {
			t.Errorf("%s: hw %+v, netlink %+v", dev, hw, nl)
		}
		for _, want := range []string{"sent_pkts", "rcvd_pkts"} {
			if !contains(hw.Names, want) || !contains(nl.Names, want) {
				t.Errorf("%s: %s missing: hw %v, netlink %v", dev, want, hw.Names, nl.Names)
			}
		}
		t.Logf("%s on %s: hw_counters %d names (lifespan %v), netlink %d names", dev, vmtest.Kernel(), len(hw.Names), hw.Lifespan, len(nl.Names))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// rdmaStat returns a counter of `rdma statistic show link DEV/1`.
func rdmaStat(t *testing.T, dev, name string) uint64 {
	t.Helper()
	out, err := exec.Command("rdma", "statistic", "show", "link", dev+"/1").Output()
	if err != nil {
		t.Fatalf("rdma statistic: %v", err)
	}
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == name {
			v, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in %q", name, out)
	return 0
}

// After ibv_rc_pingpong traffic between rxe0 and rxe1, both sets show
// sent_pkts and rcvd_pkts grown by at least the number of messages, and
// agree with sysfs and with `rdma statistic show`.
func TestVMReadAfterPingpong(t *testing.T) {
	vmtest.Require(t)
	const iters = 200
	type snap map[string]uint64
	take := func(dev string) snap {
		sets := describeRxe(t, dev)
		time.Sleep(50 * time.Millisecond) // past hw_counters' lifespan
		s := snap{}
		for _, n := range []string{"sent_pkts", "rcvd_pkts"} {
			hw := valueOf(t, sets[counters.SourceHwSysfs], n)
			nl := valueOf(t, sets[counters.SourceNetlink], n)
			file, err := vmtest.HWCounter(dev, n)
			if err != nil {
				t.Fatal(err)
			}
			tool := rdmaStat(t, dev, n)
			if hw != nl || hw != file || hw != tool {
				t.Errorf("%s %s: hw_counters set %d, netlink set %d, sysfs %d, rdma statistic %d", dev, n, hw, nl, file, tool)
			}
			s[n] = hw
		}
		return s
	}
	before := map[string]snap{vmtest.Dev0: take(vmtest.Dev0), vmtest.Dev1: take(vmtest.Dev1)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := (vmtest.Pingpong{Iters: iters, Size: 1024}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{vmtest.Dev0, vmtest.Dev1} {
		after := take(dev)
		for _, n := range []string{"sent_pkts", "rcvd_pkts"} {
			grew := after[n] - before[dev][n]
			if grew < iters {
				t.Errorf("%s %s grew by %d, want at least %d", dev, n, grew, iters)
			}
			t.Logf("%s %s: %d → %d (+%d) on %s", dev, n, before[dev][n], after[n], grew, vmtest.Kernel())
		}
	}
}

// BenchmarkVMPortSetRead reads rxe0's port sets from the guest's kernel:
// hw_counters (sysfs, 0 B/op) and netlink (a STAT_GET round trip).
func BenchmarkVMPortSetRead(b *testing.B) {
	if !vmtest.InGuest() {
		b.Skip("runs in the vmrun guest")
	}
	sets, err := counters.Describe(vmtest.Dev0)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range sets {
		defer s.Close()
		b.Run(s.Source.String(), func(b *testing.B) {
			vals := make([]uint64, len(s.Names))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := s.Read(vals); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestVMDescribeMock0: mock0's driver is learnt from netlink (GET_CHARDEV
// "uverbs": mlx5), so its description starts with the flow set; the
// netlink sets of rxe0 share one socket, which is closed with the last of
// them (no descriptor left behind).
func TestVMDescribeMock0(t *testing.T) {
	vmtest.RequireMock(t)
	sets, err := counters.Describe(vmtest.MockDev)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) == 0 || sets[0].Counted != counters.CountedFlow || sets[0].Source != counters.SourceVerbs {
		t.Errorf("mock0's first set %+v, want the flow set of a driver with verbs counters", sets)
	}
	for _, s := range sets {
		s.Close()
	}

	before := systest.OpenFDs(t)
	sets, err = counters.Describe(vmtest.Dev0)
	if err != nil {
		t.Fatal(err)
	}
	nl := 0
	for _, s := range sets {
		if s.Source == counters.SourceNetlink {
			nl++
			vals := make([]uint64, len(s.Names))
			if err := s.Read(vals); err != nil {
				t.Errorf("netlink set of port %d: %v", s.Port, err)
			}
		}
	}
	if nl == 0 {
		t.Fatalf("no netlink set for %s: %+v", vmtest.Dev0, sets)
	}
	for _, s := range sets {
		s.Close()
	}
	if after := systest.OpenFDs(t); after != before {
		t.Errorf("%d descriptors open before Describe, %d after its sets were closed", before, after)
	}
}
