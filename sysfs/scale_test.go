package sysfs_test

import (
	"fmt"
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
	"github.com/purerdma/rdma/sysfs"
)

func synthetic(tb testing.TB, n int) *sysfs.FS {
	tb.Helper()
	root := tb.TempDir()
	if err := sysfstest.Synthetic(root, n, 2); err != nil {
		tb.Fatal(err)
	}
	fs, err := sysfs.New(root)
	if err != nil {
		tb.Fatal(err)
	}
	return fs
}

// Discovery reads each directory once: the allocations of CAs grow
// linearly with the devices (the per-port copy of every character device
// made it quadratic).
func TestCAsScaleLinearly(t *testing.T) {
	allocs := map[int]float64{}
	for _, n := range []int{32, 128} {
		fs := synthetic(t, n)
		cas, err := fs.CAs()
		if err != nil || len(cas) != n || cas[n-1].Ports[1].Umad == nil {
			t.Fatalf("n=%d: %d CAs, %v", n, len(cas), err)
		}
		allocs[n] = testing.AllocsPerRun(3, func() { fs.CAs() })
	}
	if r := allocs[128] / allocs[32]; r > 4*1.25 {
		t.Errorf("allocations %v: ×%.1f for 4× the devices", allocs, r)
	}
}

func BenchmarkDiscovery(b *testing.B) {
	for _, n := range []int{1, 16, 64, 256, 1024} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			fs := synthetic(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := fs.CAs(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1e6, "ms/device")
		})
	}
}
