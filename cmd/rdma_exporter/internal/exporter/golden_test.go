package exporter

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
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
		{"mlx5-eth", "../../../../sysfs/testdata/mlx5-eth"},
		{"hfi1", "../../../../sysfs/testdata/hfi1"},
		{"ib-switch", "../../../../sysfs/testdata/ib-switch"},
		{"iwarp-old", "../../../../sysfs/testdata/iwarp-old"},
		{"broken", "../../../../sysfs/testdata/broken"},
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

// The exporter keeps its devices between scrapes, yet a device removed or
// added shows at the next scrape, and so do a port's new state and
// counter values.
func TestScrapeSeesChanges(t *testing.T) {
	root := t.TempDir()
	if err := sysfstest.Synthetic(root, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := sysfstest.SyntheticCounters(root, 2, 1); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{SysfsRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	count := func(dev string) int {
		n := 0
		for _, ms := range gather(t, e) {
			for _, m := range ms {
				for _, l := range m.GetLabel() {
					if l.GetName() == "device" && l.GetValue() == dev {
						n++
					}
				}
			}
		}
		return n
	}
	// info; state, physical state, rate; 21 PMA counters; 19 hw counters
	// as rdma_hw_stat_total and under node_exporter's names, and the
	// lifespan; rdma_exporter_read_errors for the three sources.
	if n, want := count("mlx5_1"), 1+3+21+19+19+1+3; n != want {
		t.Fatalf("mlx5_1 has %d series, want %d", n, want)
	}
	port := filepath.Join(root, "class/infiniband/mlx5_0/ports/1")
	os.WriteFile(filepath.Join(port, "state"), []byte("1: DOWN\n"), 0o644)
	os.WriteFile(filepath.Join(port, "counters/symbol_error"), []byte("4242\n"), 0o644)
	os.WriteFile(filepath.Join(port, "hw_counters/out_of_buffer"), []byte("77\n"), 0o644)
	m := gather(t, e)
	dev := map[string]string{"device": "mlx5_0", "port": "1"}
	if v := value(t, m["node_infiniband_state_id"], dev); v != 1 {
		t.Errorf("state_id = %v after the port went down", v)
	}
	if v := value(t, m["node_infiniband_symbol_error_total"], dev); v != 4242 {
		t.Errorf("symbol_error_total = %v", v)
	}
	if v := value(t, m["rdma_hw_stat_total"], map[string]string{"device": "mlx5_0", "counter": "out_of_buffer"}); v != 77 {
		t.Errorf("out_of_buffer = %v", v)
	}
	if err := os.RemoveAll(filepath.Join(root, "class/infiniband/mlx5_1")); err != nil {
		t.Fatal(err)
	}
	if n := count("mlx5_1"); n != 0 {
		t.Errorf("mlx5_1 removed: %d series left", n)
	}
	if err := sysfstest.Synthetic(root, 2, 1); err != nil { // mlx5_1 again, without counters
		t.Fatal(err)
	}
	if n := count("mlx5_1"); n != 1+3+3 {
		t.Errorf("mlx5_1 back without counters: %d series, want 7", n)
	}
}
