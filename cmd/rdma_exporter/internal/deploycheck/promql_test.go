package deploycheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// promqlKeywords are the identifiers of PromQL that are not metric names
// when they are not followed by "(" (functions and aggregations are).
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "atan2": true,
	"by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "offset": true, "bool": true,
	"inf": true, "nan": true,
}

var (
	// A grouping or matching clause and its label list.
	groupingRE = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	// Tokens: a Grafana variable, an identifier, a number or duration, or
	// any other character.
	tokenRE = regexp.MustCompile(`\$\{?[A-Za-z0-9_]+\}?|[A-Za-z_:][A-Za-z0-9_:]*|[0-9][A-Za-z0-9_.]*|\S`)
)

// metricNames returns the metric names an expression selects: the
// identifiers left when strings, label matchers, ranges, grouping clauses,
// function names and keywords are taken out. It is not a PromQL parser
// (promtool checks the syntax); it is strict enough that a name it misses
// would be a syntax error there.
func metricNames(expr string) ([]string, error) {
	var b strings.Builder
	depth := map[byte]int{}
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch c {
		case '"', '\'', '`':
			j := i + 1
			for ; j < len(expr) && expr[j] != c; j++ {
				if expr[j] == '\\' && c != '`' {
					j++
				}
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string in %q", expr)
			}
			i = j
			b.WriteByte(' ')
			continue
		case '{', '[':
			depth[c]++
			b.WriteByte(' ')
			continue
		case '}':
			if depth['{']--; depth['{'] < 0 {
				return nil, fmt.Errorf("unbalanced } in %q", expr)
			}
			b.WriteByte(' ')
			continue
		case ']':
			if depth['[']--; depth['['] < 0 {
				return nil, fmt.Errorf("unbalanced ] in %q", expr)
			}
			b.WriteByte(' ')
			continue
		}
		if depth['{'] == 0 && depth['['] == 0 {
			b.WriteByte(c)
		}
	}
	if depth['{'] != 0 || depth['['] != 0 {
		return nil, fmt.Errorf("unbalanced brackets in %q", expr)
	}
	rest := groupingRE.ReplaceAllString(b.String(), " ")
	var names []string
	locs := tokenRE.FindAllStringIndex(rest, -1)
	for k, loc := range locs {
		tok := rest[loc[0]:loc[1]]
		switch {
		case tok[0] == '$':
			return nil, fmt.Errorf("variable %s outside a label matcher or range in %q", tok, expr)
		case !(tok[0] == '_' || tok[0] == ':' || tok[0] >= 'A' && tok[0] <= 'Z' || tok[0] >= 'a' && tok[0] <= 'z'):
			continue
		case k+1 < len(locs) && rest[locs[k+1][0]] == '(':
			continue // a function or an aggregation
		case promqlKeywords[strings.ToLower(tok)]:
			continue
		}
		names = append(names, tok)
	}
	return names, nil
}

// templateQueryNames returns the metric names of a Grafana template
// variable's query: label_values(SELECTOR, LABEL) or label_values(LABEL).
func templateQueryNames(q string) ([]string, error) {
	q = strings.TrimSpace(q)
	inner, ok := strings.CutPrefix(q, "label_values(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return nil, fmt.Errorf("template query %q: want label_values(...)", q)
	}
	inner = strings.TrimSuffix(inner, ")")
	comma := strings.LastIndexByte(inner, ',')
	if comma < 0 {
		return nil, nil // label_values(LABEL): no metric
	}
	return metricNames(inner[:comma])
}

// TestExtractMetricNames: the name extraction the other tests rely on.
func TestExtractMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`rate(a_total{job="x",le=~"a|b"}[5m]) > 0.01`, []string{"a_total"}},
		{`sum without (counter) (rate(b_total{counter="on(x)"}[$__rate_interval])) or c`, []string{"b_total", "c"}},
		{`x != 4 and on(instance, port) group_left(name) y == 5`, []string{"x", "y"}},
		{`a:b:rate5m / (c > 0) offset 5m`, []string{"a:b:rate5m", "c"}},
		{`absent(d) unless e * 1e-3 + Inf`, []string{"d", "e"}},
		{`label_replace(f, "dst", "$1", "src", "(.*)")`, []string{"f"}},
		{`increase(g[15m:1m]) by (a)`, []string{"g"}},
	} {
		got, err := metricNames(c.expr)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("metricNames(%q) = %q, %v; want %q", c.expr, got, err, c.want)
		}
	}
	for _, bad := range []string{`a{b="c"`, `a[5m`, `"x`, `a > $threshold`} {
		if got, err := metricNames(bad); err == nil {
			t.Errorf("metricNames(%q) = %q, want an error", bad, got)
		}
	}
	for q, want := range map[string][]string{
		`label_values(node_infiniband_state_id{instance=~"$instance",device=~"$device"}, port)`: {"node_infiniband_state_id"},
		`label_values(instance)`: nil,
	} {
		if got, err := templateQueryNames(q); err != nil || !slices.Equal(got, want) {
			t.Errorf("templateQueryNames(%q) = %q, %v; want %q", q, got, err, want)
		}
	}
	if _, err := templateQueryNames(`metrics(node_.*)`); err == nil {
		t.Error("templateQueryNames(metrics(...)): no error")
	}
}
