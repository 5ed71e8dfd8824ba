//go:build integration

package exporter

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/purerdma/rdma/integration/vmtest"
)

// scrape fetches the exporter's metrics as text lines.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out[l[:i]] = v
	}
	return out
}

// The exporter binary on the real kernel: rxe0's hw_counters and netlink
// statistics as sysfs and `rdma statistic` show them, and a configured
// flow on mock0 counting exactly the frames sent, created with DONT_TRAP
// (the frames still reach the kernel) and destroyed when it stops.
func TestVMExporter(t *testing.T) {
	vmtest.RequireMock(t)
	vmtest.WaitQuiet(t, time.Second)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "flows.json")
	os.WriteFile(cfg, []byte(`[{"name":"probe","device":"mock0","port":1,"dst_mac":"00:01:02:03:04:05"}]`), 0o644)
	cmd := exec.Command("rdma_exporter", "--web.listen-address", "127.0.0.1:0", "--config.flows", cfg)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("exporter said nothing: %v", err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "rdma_exporter: serving "))
	if _, err := net.ResolveTCPAddr("tcp", strings.TrimPrefix(strings.TrimSuffix(url, "/metrics"), "http://")); err != nil {
		t.Fatalf("exporter said %q", line)
	}

	f := &vmtest.Frame{Dst: [6]byte{0, 1, 2, 3, 4, 5}, Len: 100}
	vmtest.SendFrames(t, 20, f)
	m := scrape(t, url)
	if got := m[`rdma_flow_packets_total{device="mock0",flow="probe",port="1"}`]; got != 20 {
		t.Errorf("flow packets %v, want 20", got)
	}
	if got := m[`rdma_flow_bytes_total{device="mock0",flow="probe",port="1"}`]; got != 2000 {
		t.Errorf("flow bytes %v, want 2000", got)
	}
	for _, src := range Sources {
		if m[fmt.Sprintf(`rdma_exporter_source_up{source=%q}`, src)] != 1 {
			t.Errorf("source %s down", src)
		}
	}
	// rxe0: a hw counter and its netlink twin equal what sysfs says (no
	// traffic on rxe0 runs meanwhile).
	sent, err := vmtest.HWCounter(vmtest.Dev0, "sent_pkts")
	if err != nil {
		t.Fatal(err)
	}
	if got := m[`rdma_hw_stat_total{counter="sent_pkts",device="rxe0",port="1"}`]; got != float64(sent) {
		t.Errorf("rxe0 sent_pkts: exporter %v, sysfs %d", got, sent)
	}
	if got := m[`rdma_statistic_total{counter="sent_pkts",device="rxe0",port="1"}`]; got != float64(sent) {
		t.Errorf("rxe0 netlink sent_pkts: exporter %v, sysfs %d", got, sent)
	}
	if m[`node_infiniband_state_id{device="rxe0",port="1"}`] != 4 {
		t.Error("rxe0 state_id")
	}

	vmtest.ClearMockRequests(t)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exporter after SIGTERM: %v", err)
	}
	rec := strings.Join(vmtest.MockRequests(t), "\n")
	if !strings.Contains(rec, "destroy_flow") || !strings.Contains(rec, "destroy_counters") {
		t.Errorf("the flow was not destroyed on exit:\n%s", rec)
	}
	t.Logf("Linux %s: %d series", vmtest.Kernel(), len(m))
}

// A device removed while the exporter runs: its series disappear and the
// exporter keeps serving.
func TestVMExporterDeviceRemoved(t *testing.T) {
	vmtest.Require(t)
	url := startExporter(t, "--no-collector.flows")
	before := scrape(t, url)
	if before[`node_infiniband_state_id{device="rxe1",port="1"}`] != 4 {
		t.Fatalf("rxe1 not exported before its removal")
	}
	if err := netlink.RdmaLinkDel(vmtest.Dev1); err != nil {
		t.Fatal(err)
	}
	var after map[string]float64
	for i := 0; i < 2; i++ { // the first scrape may race the removal
		after = scrape(t, url)
	}
	for k := range after {
		if strings.Contains(k, `device="rxe1"`) {
			t.Errorf("after the removal: %s", k)
		}
	}
	if after[`node_infiniband_state_id{device="rxe0",port="1"}`] != 4 || after[`rdma_exporter_source_up{source="infiniband"}`] != 1 {
		t.Errorf("rxe0 or the source gone after rxe1's removal")
	}
	t.Logf("Linux %s: %d series before, %d after removing %s", vmtest.Kernel(), len(before), len(after), vmtest.Dev1)
}
