package exporter

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/purerdma/rdma/rdmanl"
)

const fixture = "../../../../sysfs/testdata/mlx5-ib"

func gather(t *testing.T, e *Exporter) map[string][]*dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.GetMetric()
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	return out
}

func value(t *testing.T, ms []*dto.Metric, labels map[string]string) float64 {
	t.Helper()
	for _, m := range ms {
		ok := true
		for k, v := range labels {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if ok {
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series with %v in %v", labels, ms)
	return 0
}

func readFixture(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixture, "class/infiniband/mlx5_0", rel))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// node_exporter's infiniband series from the mlx5 fixture: the info
// series, the port's state, physical state and rate, and the PMA
// counters with the 4-octet data conversion.
func TestInfiniBandSeries(t *testing.T) {
	e, err := New(Config{SysfsRoot: fixture})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m := gather(t, e)
	dev := map[string]string{"device": "mlx5_0", "port": "1"}
	if v := value(t, m["node_infiniband_info"], map[string]string{"device": "mlx5_0", "firmware_version": readFixture(t, "fw_ver"), "hca_type": readFixture(t, "hca_type"), "board_id": readFixture(t, "board_id")}); v != 1 {
		t.Errorf("info = %v", v)
	}
	if v := value(t, m["node_infiniband_state_id"], dev); v != 4 {
		t.Errorf("state_id = %v", v)
	}
	var raw float64
	if _, err := fmtSscan(readFixture(t, "ports/1/counters/port_rcv_data"), &raw); err != nil {
		t.Fatal(err)
	}
	if v := value(t, m["node_infiniband_port_data_received_bytes_total"], dev); v != 4*raw {
		t.Errorf("port_data_received_bytes_total = %v, want 4 × %v", v, raw)
	}
	if v := value(t, m["rdma_exporter_source_up"], map[string]string{"source": SourceInfiniBand}); v != 1 {
		t.Errorf("infiniband source up = %v", v)
	}
	if len(m["rdma_hw_stat_total"]) == 0 {
		t.Error("no hw_counters series")
	}
}

// A tree with no RDMA stack is no devices, not a failure; a broken one
// makes its source down without failing the scrape.
func TestSourceErrorsDoNotFailTheScrape(t *testing.T) {
	e, err := New(Config{SysfsRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m := gather(t, e)
	if v := value(t, m["rdma_exporter_source_up"], map[string]string{"source": SourceInfiniBand}); v != 1 {
		t.Errorf("no devices: up = %v", v)
	}
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "class/infiniband/mlx5_0"), 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	e, err = New(Config{SysfsRoot: bad, Logger: newTestLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	m = gather(t, e)
	if v := value(t, m["rdma_exporter_source_up"], map[string]string{"source": SourceInfiniBand}); v != 0 {
		t.Errorf("broken device: up = %v", v)
	}
	if !strings.Contains(logs.String(), "source failed") {
		t.Errorf("log: %q", logs.String())
	}
}

func TestReadFlowsRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"duplicate", `[{"name":"a","device":"mlx5_0"},{"name":"a","device":"mlx5_0"}]`, "two flows are called"},
		{"no name", `[{"device":"mlx5_0"}]`, "has no name"},
		{"no device", `[{"name":"a"}]`, "names no device"},
		{"bad MAC", `[{"name":"a","device":"x","dst_mac":"zz"}]`, "bad MAC"},
		{"bad proto", `[{"name":"a","device":"x","proto":"sctp"}]`, "want tcp or udp"},
		{"ports without proto", `[{"name":"a","device":"x","dst_port":80}]`, "need proto"},
		{"IPv6 ethertype with IP", `[{"name":"a","device":"x","ethertype":34525,"dst_ip":"10.0.0.1"}]`, "only IPv4"},
		{"unknown field", `[{"name":"a","device":"x","color":"red"}]`, "unknown field"},
		{"port", `[{"name":"a","device":"x","port":300}]`, "not a port number"},
	} {
		_, err := ReadFlows(strings.NewReader(tc.json))
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a ConfigError with %q", tc.name, err, tc.want)
		}
	}
	fs, err := ReadFlows(strings.NewReader(`[{"name":"web","device":"mlx5_0","dst_mac":"00:01:02:03:04:05","dst_ip":"10.0.0.0/24","proto":"tcp","dst_port":443}]`))
	if err != nil || len(fs) != 1 || fs[0].Port != 1 {
		t.Fatalf("%v %v", fs, err)
	}
	specs, err := fs[0].specs()
	if err != nil || len(specs) != 3 {
		t.Errorf("specs %v %v", specs, err)
	}
}

// Bad flags and configs exit 2 with one line; an unknown device in the
// flows is a config error too.
func TestMainExitCodes(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "flows.json")
	os.WriteFile(cfg, []byte(`[{"name":"a","device":"nosuch"}]`), 0o644)
	dup := filepath.Join(dir, "dup.json")
	os.WriteFile(dup, []byte(`[{"name":"a","device":"x"},{"name":"a","device":"x"}]`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "unknown long flag"},
		{[]string{"extra"}, "unexpected extra"},
		{[]string{"--config.flows", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"--config.flows", dup}, "two flows are called"},
		{[]string{"--path.sysfs", fixture, "--config.flows", cfg}, "no RDMA device nosuch"},
	} {
		var out, errb bytes.Buffer
		if code := Main(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

type fakeStats struct{}

func (fakeStats) PortStatsByName(dev string, port int) (*rdmanl.Stats, error) {
	return &rdmanl.Stats{Device: dev, Port: port, Counters: []rdmanl.NamedCounter{{Name: "out_of_buffer", Value: 30}}}, nil
}

func (fakeStats) QPCountersByName(dev string) ([]rdmanl.QPCounter, error) {
	return []rdmanl.QPCounter{{Device: dev, Port: 1, ID: 4, Mode: rdmanl.CounterModeAuto,
		Counters: []rdmanl.NamedCounter{{Name: "out_of_buffer", Value: 20}}, QPNs: []uint32{257, 258}}}, nil
}

// QP counters: one series per counter value, one info series per bound QP.
func TestQPCounterSeries(t *testing.T) {
	e, err := New(Config{SysfsRoot: fixture, Netlink: fakeStats{}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m := gather(t, e)
	if v := value(t, m["rdma_qp_statistic_total"], map[string]string{"device": "mlx5_0", "port": "1", "counter_id": "4", "counter": "out_of_buffer"}); v != 20 {
		t.Errorf("qp counter = %v", v)
	}
	if n := len(m["rdma_qp_counter_qp_info"]); n != 2 {
		t.Errorf("%d qp info series, want 2", n)
	}
	if v := value(t, m["rdma_qp_counter_qp_info"], map[string]string{"counter_id": "4", "qpn": "258"}); v != 1 {
		t.Errorf("qp info = %v", v)
	}
	if v := value(t, m["rdma_statistic_total"], map[string]string{"device": "mlx5_0", "counter": "out_of_buffer"}); v != 30 {
		t.Errorf("statistic = %v", v)
	}
}
