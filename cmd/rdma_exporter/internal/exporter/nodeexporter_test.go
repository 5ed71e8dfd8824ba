package exporter

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

// NodeExporterVersion is the node_exporter release the parity test runs
// (make unit builds it with go install and names it in NODE_EXPORTER).
const nodeExporterVersion = "v1.12.1"

// runNodeExporter runs node_exporter with only its infiniband collector on
// the sysfs tree root and returns one scrape.
func runNodeExporter(t *testing.T, bin, root string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--collector.disable-defaults", "--collector.infiniband",
		"--path.sysfs="+root, "--web.listen-address="+addr)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 {
				return string(b)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node_exporter did not answer on %s: %v\n%s", addr, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Side by side with the current node_exporter release on the same trees:
// every node_infiniband series it exports (name, labels, value) we export
// too, with its HELP and TYPE. The trees are the sysfs fixtures, a
// synthetic host with every counter node_exporter names (hw_counters,
// lifespan and the counters_ext of kernels before 4.5), and the fault
// table's bad files, where node_exporter's collector fails as a whole.
func TestNodeExporterParity(t *testing.T) {
	bin := os.Getenv("NODE_EXPORTER")
	if bin == "" {
		t.Skip("NODE_EXPORTER is not set: `make unit` builds node_exporter " + nodeExporterVersion + " and names it there")
	}
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "version "+strings.TrimPrefix(nodeExporterVersion, "v")) {
		t.Fatalf("%s --version: %v\n%s(want %s)", bin, err, out, nodeExporterVersion)
	}
	synth := t.TempDir()
	if err := sysfstest.Synthetic(synth, 3, 2); err != nil {
		t.Fatal(err)
	}
	if err := sysfstest.SyntheticCounters(synth, 3, 2); err != nil {
		t.Fatal(err)
	}
	// Every hw_counters file node_exporter names, and counters_ext.
	for d := 0; d < 3; d++ {
		for p := 1; p <= 2; p++ {
			port := filepath.Join(synth, fmt.Sprintf("class/infiniband/mlx5_%d/ports/%d", d, p))
			i := 0
			for file := range hwMetrics {
				i++
				if err := os.WriteFile(filepath.Join(port, "hw_counters", file), []byte(fmt.Sprintf("%d\n", 1000*d+100*p+i)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(port, "hw_counters", "lifespan"), []byte("12000\n"), 0o644)
			for file := range pmaMetrics {
				if _, err := os.Stat(filepath.Join(port, "counters", file)); err != nil {
					i++
					os.WriteFile(filepath.Join(port, "counters", file), []byte(fmt.Sprintf("%d\n", i)), 0o644)
				}
			}
			if err := os.MkdirAll(filepath.Join(port, "counters_ext"), 0o755); err != nil {
				t.Fatal(err)
			}
			for file := range legacyMetrics {
				i++
				os.WriteFile(filepath.Join(port, "counters_ext", file), []byte(fmt.Sprintf("%d\n", 1<<40+i)), 0o644)
			}
		}
	}
	trees := []struct {
		name, root string
	}{
		{"mlx5-ib", fixture},
		{"mlx5-eth", "../../../../sysfs/testdata/mlx5-eth"},
		{"hfi1", "../../../../sysfs/testdata/hfi1"},
		{"ib-switch", "../../../../sysfs/testdata/ib-switch"},
		{"iwarp-old", "../../../../sysfs/testdata/iwarp-old"},
		{"rxe-6.1", "../../../../sysfs/testdata/rxe-6.1"},
		{"broken", "../../../../sysfs/testdata/broken"},
		{"synthetic-all-counters", synth},
	}
	compared := map[string]bool{}
	for _, tc := range trees {
		t.Run(tc.name, func(t *testing.T) {
			root, err := filepath.Abs(tc.root)
			if err != nil {
				t.Fatal(err)
			}
			theirs := runNodeExporter(t, bin, root)
			e, err := New(Config{SysfsRoot: root, Logger: newTestLogger(io.Discard)})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			mine := string(scrapeText(t, e))
			have := map[string]bool{}
			for _, l := range strings.Split(mine, "\n") {
				have[l] = true
			}
			ok := strings.Contains(theirs, `node_scrape_collector_success{collector="infiniband"} 1`)
			names := map[string]bool{}
			n := 0
			for _, l := range strings.Split(theirs, "\n") {
				name := l
				if strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(l, "# TYPE ") {
					name = l[len("# HELP "):]
				}
				if !strings.HasPrefix(name, "node_infiniband_") {
					continue
				}
				if l[0] != '#' {
					n++
					names[strings.FieldsFunc(l, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
				}
				if !have[l] {
					t.Errorf("node_exporter %s exports %q; we do not", nodeExporterVersion, l)
				}
			}
			switch {
			case !ok:
				t.Logf("node_exporter %s's infiniband collector fails on %s (success 0: it drops every device); ours exports %d node_infiniband series",
					nodeExporterVersion, tc.name, strings.Count(mine, "\nnode_infiniband_"))
				if !strings.Contains(mine, "\nnode_infiniband_") {
					t.Error("and so do we")
				}
			case n == 0:
				t.Errorf("node_exporter exported no infiniband series on %s", tc.name)
			default:
				for n := range names {
					compared[n] = true
				}
				t.Logf("%s: %d node_infiniband series (%d names) of node_exporter %s, all equal in ours", tc.name, n, len(names), nodeExporterVersion)
			}
		})
	}
	// Every name node_exporter's infiniband collector can emit was compared
	// on some tree: 22 PMA and 8 legacy counters, 29 hw counters, lifespan,
	// info, state, physical state and rate.
	if want := len(pmaMetrics) + len(legacyMetrics) + len(hwMetrics) + 5; len(compared) != want {
		t.Errorf("%d node_infiniband names compared over the trees, want all %d", len(compared), want)
	}
}
