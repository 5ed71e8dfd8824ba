package deploycheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
)

// dashboardExprs returns the PromQL of the dashboard's panels (every
// "expr" in it) and the queries of its template variables.
func dashboardExprs(t *testing.T) (exprs, templates []string) {
	t.Helper()
	var dash map[string]any
	if err := json.Unmarshal(readFile(t, dashboardFile), &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "expr" {
					exprs = append(exprs, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(dash["panels"])
	tmpl, _ := dash["templating"].(map[string]any)
	list, _ := tmpl["list"].([]any)
	for _, v := range list {
		v, _ := v.(map[string]any)
		if v["type"] != "query" {
			continue
		}
		switch q := v["query"].(type) {
		case string:
			templates = append(templates, q)
		case map[string]any:
			s, _ := q["query"].(string)
			templates = append(templates, s)
		default:
			t.Errorf("%s: template variable %v has no query", dashboardFile, v["name"])
		}
	}
	return exprs, templates
}

// TestDashboardMetricNames: every metric the dashboard's panels and
// template variables select is one an exporter makes, and the panels show
// each port's state, rate, throughput, errors and congestion and the
// exporter's health.
func TestDashboardMetricNames(t *testing.T) {
	exprs, templates := dashboardExprs(t)
	if len(exprs) < 20 {
		t.Errorf("%s: %d panel queries", dashboardFile, len(exprs))
	}
	allowed := allowedNames(t)
	used := checkExprNames(t, dashboardFile, exprs, allowed, nil)
	vars := 0
	for _, q := range templates {
		names, err := templateQueryNames(q)
		if err != nil {
			t.Errorf("%s: %v", dashboardFile, err)
		}
		for _, n := range names {
			if !allowed[n] {
				t.Errorf("%s: template query selects %s, which no exporter makes: %s", dashboardFile, n, q)
			}
		}
		for _, v := range []string{"instance)", "device)", "port)"} {
			if strings.HasSuffix(strings.ReplaceAll(q, " ", ""), ","+v) {
				vars++
			}
		}
	}
	if vars != 3 {
		t.Errorf("%s: template queries %q: want instance, device and port variables", dashboardFile, templates)
	}
	for _, n := range []string{
		"node_infiniband_state_id", "node_infiniband_physical_state_id", "node_infiniband_rate_bytes_per_second",
		"node_infiniband_port_data_received_bytes_total", "node_infiniband_port_data_transmitted_bytes_total",
		"node_infiniband_symbol_error_total", "node_infiniband_port_errors_received_total", "node_infiniband_link_downed_total",
		"node_infiniband_np_ecn_marked_roce_packets_received_total", "node_infiniband_np_cnp_packets_sent_total",
		"node_infiniband_rp_cnp_packets_handled_total", "rdma_hw_stat_total",
		"rdma_exporter_source_up", "rdma_exporter_read_errors",
	} {
		if !used[n] {
			t.Errorf("%s does not show %s", dashboardFile, n)
		}
	}
}

// TestPromtoolDashboard: the dashboard's queries are PromQL, as promtool
// checks a recording rule's, once Grafana's variables have values.
func TestPromtoolDashboard(t *testing.T) {
	p := promtool(t)
	exprs, templates := dashboardExprs(t)
	for _, q := range templates {
		if inner, ok := strings.CutPrefix(q, "label_values("); ok {
			if comma := strings.LastIndexByte(inner, ','); comma >= 0 {
				exprs = append(exprs, inner[:comma])
			}
		}
	}
	grafanaVar := regexp.MustCompile(`\$\{?[A-Za-z0-9_]+\}?`)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, e := range exprs {
		e = strings.ReplaceAll(e, "$__rate_interval", "5m")
		e = grafanaVar.ReplaceAllString(e, ".*")
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d", i+1), Expr: e})
	}
	type group struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	}
	b, err := yaml.Marshal(map[string][]group{"groups": {{Name: "dashboard", Rules: rules}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := filepath.Abs(filepath.Join(t.TempDir(), "dashboard.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, p, "check", "rules", f)
}
