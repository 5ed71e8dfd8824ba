//go:build integration

package exporter

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// startExporter runs the rdma_exporter binary and returns its metrics URL.
func startExporter(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("rdma_exporter", append([]string{"--web.listen-address", "127.0.0.1:0"}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("exporter said nothing: %v", err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "rdma_exporter: serving "))
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	var last error
	for i := 0; i < 100; i++ {
		resp, err := http.Get(u)
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 {
				return b
			}
			last = fmt.Errorf("%d %v", resp.StatusCode, err)
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("GET %s: %v", u, last)
	return nil
}

// nodeExporter runs Debian's node_exporter with only its infiniband
// collector on a sysfs tree and returns its metrics and whether the
// collector succeeded.
func nodeExporter(t *testing.T, sysfs string) (string, bool) {
	t.Helper()
	ne := exec.Command(vmtest.Extra("usr/bin/prometheus-node-exporter"), "--collector.disable-defaults", "--collector.infiniband",
		"--path.sysfs="+sysfs, "--web.listen-address=127.0.0.1:9100")
	if err := ne.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { ne.Process.Kill(); ne.Wait() }()
	out := string(get(t, "http://127.0.0.1:9100/metrics"))
	return out, strings.Contains(out, `node_scrape_collector_success{collector="infiniband"} 1`)
}

// Side by side with Debian's node_exporter on the same VM: every
// infiniband series it exports, ours exports with the same name, labels
// and value; promtool accepts our exposition; a real Prometheus scrapes
// the exporter and sees a configured flow count the frames sent.
func TestVMPrometheusAndNodeExporter(t *testing.T) {
	vmtest.RequireMock(t)
	for _, p := range []string{"usr/bin/prometheus", "usr/bin/promtool", "usr/bin/prometheus-node-exporter"} {
		if _, err := os.Stat(vmtest.Extra(p)); err != nil {
			t.Fatalf("%s: %v (vmrun -prepare unpacks it)", p, err)
		}
	}
	vmtest.WaitQuiet(t, time.Second)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "flows.json")
	os.WriteFile(cfg, []byte(`[{"name":"probe","device":"mock0","port":1,"dst_mac":"00:01:02:03:04:06"}]`), 0o644)
	ours := startExporter(t, "--config.flows", cfg)

	// node_exporter 1.5.0 (Debian 12) cannot read Soft-RoCE or mock0
	// (its infiniband collector fails: node_scrape_collector_success 0),
	// so the comparison runs on the project's mlx5 fixture tree, which both
	// read through --path.sysfs; on the real /sys the failure is logged.
	for _, tree := range []struct {
		sysfs    string
		required bool
	}{
		{"/sys", false},
		{filepath.Join(vmtest.Repo(), "sysfs", "testdata", "mlx5-ib"), true},
	} {
		theirs, ok := nodeExporter(t, tree.sysfs)
		mine := string(get(t, startExporter(t, "--path.sysfs", tree.sysfs, "--no-collector.flows", "--no-collector.netlink")))
		have := map[string]bool{}
		for _, l := range strings.Split(mine, "\n") {
			have[l] = true
		}
		n := 0
		for _, l := range strings.Split(theirs, "\n") {
			if !strings.HasPrefix(l, "node_infiniband_") {
				continue
			}
			n++
			if !have[l] {
				t.Errorf("%s: node_exporter exports %q; we do not (same name, labels and value)", tree.sysfs, l)
			}
		}
		switch {
		case !ok && !tree.required:
			t.Logf("%s: node_exporter 1.5.0's infiniband collector fails here (success 0); ours exports %d node_infiniband lines", tree.sysfs, strings.Count(mine, "\nnode_infiniband_"))
		case !ok || n == 0:
			t.Errorf("%s: node_exporter exported no infiniband series", tree.sysfs)
		default:
			t.Logf("%s: %d node_infiniband series of node_exporter 1.5.0, all equal in ours", tree.sysfs, n)
		}
	}
	mine := string(get(t, ours))

	check := exec.Command(vmtest.Extra("usr/bin/promtool"), "check", "metrics")
	check.Stdin = strings.NewReader(mine)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	// A real Prometheus scraping the exporter every second.
	conf := fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: rdma\n    metrics_path: /metrics\n    static_configs: [{targets: [%q]}]\n",
		strings.TrimSuffix(strings.TrimPrefix(ours, "http://"), "/metrics"))
	os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o644)
	prom := exec.Command(vmtest.Extra("usr/bin/prometheus"), "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address=127.0.0.1:9090")
	var promLog bytes.Buffer
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { prom.Process.Signal(syscall.SIGTERM); prom.Wait() }()
	f := &vmtest.Frame{Dst: [6]byte{0, 1, 2, 3, 4, 6}, Len: 128}
	vmtest.SendFrames(t, 7, f)
	q := "http://127.0.0.1:9090/api/v1/query?query=" + url.QueryEscape(`rdma_flow_bytes_total{flow="probe"}`)
	deadline := time.Now().Add(120 * time.Second)
	for {
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		resp, err := http.Get(q)
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if len(r.Data.Result) == 1 && r.Data.Result[0].Value[1] == "896" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not see rdma_flow_bytes_total 896 (7 × 128) within 120 s: %+v %v\n%s", r, err, promLog.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("Linux %s: Prometheus scraped rdma_flow_bytes_total{flow=\"probe\"} = 896 (7 frames of 128 bytes)", vmtest.Kernel())
}
