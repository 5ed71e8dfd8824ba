package exporter

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/purerdma/rdma/internal/sysfstest"
)

var update = flag.Bool("update", false, "rewrite the golden scrapes in testdata")

// scrapeText is one scrape of e in Prometheus's text format.
func scrapeText(t testing.TB, e *Exporter) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// The scrape of the sysfs fixtures and of a synthetic host with counters
// is byte for byte the golden one (written by the exporter that read
// everything afresh on each scrape), on the first scrape and the next.
func TestScrapeGolden(t *testing.T) {
	synth := t.TempDir()
	if err := sysfstest.Synthetic(synth, 3, 2); err != nil {
		t.Fatal(err)
	}
	if err := sysfstest.SyntheticCounters(synth, 3, 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, root string }{
		{"mlx5-ib", fixture},
		{"mlx5-eth", "../../sysfs/testdata/mlx5-eth"},
		{"hfi1", "../../sysfs/testdata/hfi1"},
		{"ib-switch", "../../sysfs/testdata/ib-switch"},
		{"iwarp-old", "../../sysfs/testdata/iwarp-old"},
		{"rxe-6.12-vm", "../../sysfs/testdata/rxe-6.12-vm"},
		{"broken", "../../sysfs/testdata/broken"},
		{"synthetic", synth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Config{SysfsRoot: tc.root})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			golden := filepath.Join("testdata", tc.name+".prom")
			got := scrapeText(t, e)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if !bytes.Equal(got, want) {
					t.Fatalf("scrape %d differs from %s:\n%s", i+1, golden, got)
				}
				got = scrapeText(t, e)
			}
		})
	}
}
