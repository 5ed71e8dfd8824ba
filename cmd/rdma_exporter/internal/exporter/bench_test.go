package exporter

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

// BenchmarkScrape: one scrape of synthetic hosts of 1, 16 and 64 devices
// (two ports each, with an mlx5 port's counters/ and hw_counters/),
// through the registry as Prometheus would.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			root := b.TempDir()
			if err := sysfstest.Synthetic(root, n, 2); err != nil {
				b.Fatal(err)
			}
			if err := sysfstest.SyntheticCounters(root, n, 2); err != nil {
				b.Fatal(err)
			}
			e, err := New(Config{SysfsRoot: root})
			if err != nil {
				b.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(e)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
