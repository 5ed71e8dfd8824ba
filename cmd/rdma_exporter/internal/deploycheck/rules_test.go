package deploycheck

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
)

// nodeExporterInfiniband is every series node_exporter 1.12's infiniband
// collector exports: node_exporter v1.12.1, collector/infiniband_linux.go,
// the keys of NewInfiniBandCollector's descriptions map (each named
// node_infiniband_KEY) and the info series Update makes.
var nodeExporterInfiniband = []string{
	"node_infiniband_info",
	"node_infiniband_legacy_multicast_packets_received_total",
	"node_infiniband_legacy_multicast_packets_transmitted_total",
	"node_infiniband_legacy_data_received_bytes_total",
	"node_infiniband_legacy_packets_received_total",
	"node_infiniband_legacy_unicast_packets_received_total",
	"node_infiniband_legacy_unicast_packets_transmitted_total",
	"node_infiniband_legacy_data_transmitted_bytes_total",
	"node_infiniband_legacy_packets_transmitted_total",
	"node_infiniband_excessive_buffer_overrun_errors_total",
	"node_infiniband_link_downed_total",
	"node_infiniband_link_error_recovery_total",
	"node_infiniband_local_link_integrity_errors_total",
	"node_infiniband_multicast_packets_received_total",
	"node_infiniband_multicast_packets_transmitted_total",
	"node_infiniband_physical_state_id",
	"node_infiniband_port_constraint_errors_received_total",
	"node_infiniband_port_constraint_errors_transmitted_total",
	"node_infiniband_port_data_received_bytes_total",
	"node_infiniband_port_data_transmitted_bytes_total",
	"node_infiniband_port_discards_received_total",
	"node_infiniband_port_discards_transmitted_total",
	"node_infiniband_port_errors_received_total",
	"node_infiniband_port_packets_received_total",
	"node_infiniband_port_packets_transmitted_total",
	"node_infiniband_port_transmit_wait_total",
	"node_infiniband_rate_bytes_per_second",
	"node_infiniband_state_id",
	"node_infiniband_unicast_packets_received_total",
	"node_infiniband_unicast_packets_transmitted_total",
	"node_infiniband_port_receive_remote_physical_errors_total",
	"node_infiniband_port_receive_switch_relay_errors_total",
	"node_infiniband_symbol_error_total",
	"node_infiniband_vl15_dropped_total",
	"node_infiniband_duplicate_requests_packets_total",
	"node_infiniband_implied_nak_seq_errors_total",
	"node_infiniband_lifespan_seconds",
	"node_infiniband_local_ack_timeout_errors_total",
	"node_infiniband_np_cnp_packets_sent_total",
	"node_infiniband_np_ecn_marked_roce_packets_received_total",
	"node_infiniband_out_of_buffer_drops_total",
	"node_infiniband_out_of_sequence_packets_received_total",
	"node_infiniband_packet_sequence_errors_total",
	"node_infiniband_req_cqes_errors_total",
	"node_infiniband_req_cqes_flush_errors_total",
	"node_infiniband_req_remote_access_errors_total",
	"node_infiniband_req_remote_invalid_request_errors_total",
	"node_infiniband_resp_cqes_errors_total",
	"node_infiniband_resp_cqes_flush_errors_total",
	"node_infiniband_resp_local_length_errors_total",
	"node_infiniband_resp_remote_access_errors_total",
	"node_infiniband_rnr_nak_retry_packets_received_total",
	"node_infiniband_roce_adp_retransmits_total",
	"node_infiniband_roce_adp_retransmits_timeout_total",
	"node_infiniband_roce_slow_restart_used_total",
	"node_infiniband_roce_slow_restart_cnps_total",
	"node_infiniband_roce_slow_restart_total",
	"node_infiniband_rp_cnp_packets_handled_total",
	"node_infiniband_rp_cnp_ignored_packets_received_total",
	"node_infiniband_rx_atomic_requests_total",
	"node_infiniband_rx_dct_connect_requests_total",
	"node_infiniband_rx_read_requests_total",
	"node_infiniband_rx_write_requests_total",
	"node_infiniband_rx_icrc_encapsulated_errors_total",
}

// exporterGauges are rdma_exporter's series not (yet) in the Series table
// of docs/exporter.md: the read errors of the last scrape per source and
// device, and the build.
var exporterGauges = []string{"rdma_exporter_read_errors", "rdma_exporter_build_info"}

// hwCounterFiles are the hw_counters files node_exporter's names stand for
// (procfs, sysfs/class_infiniband.go, parseHwCounters): the values a
// counter="..." matcher on rdma_hw_stat_total may name.
var hwCounterFiles = []string{
	"duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err",
	"np_cnp_sent", "np_ecn_marked_roce_packets", "out_of_buffer",
	"out_of_sequence", "packet_seq_err", "req_cqe_error", "req_cqe_flush_error",
	"req_remote_access_errors", "req_remote_invalid_request", "resp_cqe_error",
	"resp_cqe_flush_error", "resp_local_length_error", "resp_remote_access_errors",
	"rnr_nak_retry_err", "roce_adp_retrans", "roce_adp_retrans_to",
	"roce_slow_restart", "roce_slow_restart_cnps", "roce_slow_restart_trans",
	"rp_cnp_handled", "rp_cnp_ignored", "rx_atomic_requests", "rx_dct_connect",
	"rx_icrc_encapsulated", "rx_read_requests", "rx_write_requests",
}

// seriesTableNames returns the series of docs/exporter.md's Series table.
func seriesTableNames(t *testing.T) []string {
	t.Helper()
	var names []string
	in := false
	row := regexp.MustCompile("^\\| `([a-z_:][a-z0-9_:]*)` \\|")
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, exporterDoc)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Series"
			continue
		}
		if m := row.FindStringSubmatch(line); in && m != nil {
			names = append(names, m[1])
		}
	}
	if len(names) < 20 {
		t.Fatalf("%s: found %d series in the Series table (%v); has the table moved?", exporterDoc, len(names), names)
	}
	return names
}

// allowedNames: the names rules and dashboards may select.
func allowedNames(t *testing.T) map[string]bool {
	allowed := map[string]bool{}
	for _, list := range [][]string{nodeExporterInfiniband, seriesTableNames(t), exporterGauges} {
		for _, n := range list {
			allowed[n] = true
		}
	}
	return allowed
}

// Rules files, as promtool reads them (the fields checked here).
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record      string            `yaml:"record"`
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type ruleTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromQLExprTest []struct {
			Expr string `yaml:"expr"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	var rf ruleFile
	if err := yaml.UnmarshalStrict(readFile(t, rulesFile), &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

// checkExprNames checks the metric names the expressions select: each one
// an exporter makes (allowed) or one of also; counter="..." on
// rdma_hw_stat_total names a hw counter file. It returns the names used.
func checkExprNames(t *testing.T, file string, exprs []string, allowed, also map[string]bool) map[string]bool {
	t.Helper()
	counterRE := regexp.MustCompile(`rdma_hw_stat_total\{[^}]*\bcounter="([^"]*)"`)
	used := map[string]bool{}
	for _, e := range exprs {
		names, err := metricNames(e)
		if err != nil {
			t.Errorf("%s: %v", file, err)
		}
		if len(names) == 0 {
			t.Errorf("%s: query selects no metric: %s", file, e)
		}
		for _, n := range names {
			used[n] = true
			if !allowed[n] && !also[n] {
				t.Errorf("%s: selects %s, which no exporter makes: %s", file, n, e)
			}
		}
		for _, m := range counterRE.FindAllStringSubmatch(e, -1) {
			if !slices.Contains(hwCounterFiles, m[1]) {
				t.Errorf("%s: rdma_hw_stat_total{counter=%q} is not a hw counter node_exporter names: %s", file, m[1], e)
			}
		}
	}
	return used
}

// TestRuleMetricNames: every metric the rules select is one an exporter
// makes (node_exporter 1.12's infiniband collector, the Series table of
// docs/exporter.md, the two exporter gauges) or one a recording rule of
// the file makes, whose name has colons so that it cannot be mistaken for
// an exporter's.
func TestRuleMetricNames(t *testing.T) {
	rf := loadRules(t)
	recorded := map[string]bool{}
	var exprs []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
			if r.Record == "" {
				continue
			}
			if !strings.Contains(r.Record, ":") {
				t.Errorf("%s: recording rule %s: want a level:metric:operations name", rulesFile, r.Record)
			}
			recorded[r.Record] = true
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("%s: %d rules", rulesFile, len(exprs))
	}
	used := checkExprNames(t, rulesFile, exprs, allowedNames(t), recorded)
	for _, n := range []string{
		"node_infiniband_state_id", "node_infiniband_physical_state_id",
		"node_infiniband_link_downed_total", "node_infiniband_symbol_error_total",
		"node_infiniband_port_errors_received_total",
		"node_infiniband_np_ecn_marked_roce_packets_received_total",
		"node_infiniband_rp_cnp_packets_handled_total", "node_infiniband_np_cnp_packets_sent_total",
		"node_infiniband_out_of_buffer_drops_total", "node_infiniband_local_ack_timeout_errors_total",
		"node_infiniband_port_data_received_bytes_total", "node_infiniband_port_data_transmitted_bytes_total",
		"rdma_exporter_source_up", "rdma_exporter_read_errors", "rdma_hw_stat_total",
	} {
		if !used[n] {
			t.Errorf("%s does not use %s", rulesFile, n)
		}
	}
}

// TestRulesTestCoverage: the promtool unit tests load the rules file, see
// every alert both firing and not firing, and evaluate every recording
// rule.
func TestRulesTestCoverage(t *testing.T) {
	rf := loadRules(t)
	var tf ruleTestFile
	if err := yaml.Unmarshal(readFile(t, rulesTestFile), &tf); err != nil {
		t.Fatalf("%s: %v", rulesTestFile, err)
	}
	if want := filepath.Base(rulesFile); !slices.Equal(tf.RuleFiles, []string{want}) {
		t.Errorf("%s: rule_files %q, want [%s]", rulesTestFile, tf.RuleFiles, want)
	}
	fires, quiet := map[string]int{}, map[string]int{}
	var exprs []string
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname]++
			} else {
				quiet[a.Alertname]++
			}
		}
		for _, e := range tc.PromQLExprTest {
			exprs = append(exprs, e.Expr)
		}
	}
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			switch {
			case r.Alert != "":
				alerts[r.Alert] = true
				if fires[r.Alert] == 0 {
					t.Errorf("%s: no test where %s fires", rulesTestFile, r.Alert)
				}
				if quiet[r.Alert] == 0 {
					t.Errorf("%s: no test where %s does not fire", rulesTestFile, r.Alert)
				}
				if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
					t.Errorf("%s: alert %s wants a severity label and summary and description annotations", rulesFile, r.Alert)
				}
			case r.Record != "":
				if !slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, r.Record) }) {
					t.Errorf("%s: no promql_expr_test evaluates %s", rulesTestFile, r.Record)
				}
			}
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("%s: tests alert %s, which %s does not define", rulesTestFile, name, rulesFile)
		}
	}
	if len(alerts) < 10 {
		t.Errorf("%s: %d alerts", rulesFile, len(alerts))
	}
}

// promtool returns the promtool on PATH, or skips the test.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH (Debian's prometheus package has it; make deps-apt installs it)")
	}
	if out, err := exec.Command(p, "--version").CombinedOutput(); err == nil {
		t.Logf("%s", bytes.SplitN(out, []byte("\n"), 2)[0])
	}
	return p
}

// runPromtool runs promtool in the repository's root; a failure is the
// test's, with promtool's output.
func runPromtool(t *testing.T, promtool string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		return
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

// TestPromtoolRules: promtool check rules and promtool test rules pass.
func TestPromtoolRules(t *testing.T) {
	p := promtool(t)
	runPromtool(t, p, "check", "rules", filepath.FromSlash(rulesFile))
	runPromtool(t, p, "test", "rules", filepath.FromSlash(rulesTestFile))
}
