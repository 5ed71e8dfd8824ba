package main

import (
	"sort"
	"strings"
	"testing"
)

// The exit-code policy (README, "Exit status"): tools that imitate an
// rdma-core tool keep its codes; the others exit 0 when they did their
// work, 1 on a runtime failure, 2 on a command line they cannot use.

// `purerdma help TOOL` prints that tool's own help on standard output and
// exits 0, for every tool (ibstatus's -h exits 255 as the script does;
// help still exits 0).
func TestHelpTool(t *testing.T) {
	tools := registry(defaultEnv())
	names := make([]string, 0, len(toolFamilies))
	for _, tool := range tools.all() {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	list, _, _ := runTool("help")
	for _, n := range names {
		out, errs, code := runTool("help", n)
		if code != 0 || errs != "" || !strings.Contains(strings.ToLower(out), "usage") {
			t.Errorf("help %s: exit %d, stderr %q, stdout %q", n, code, errs, out)
		}
		if out == list {
			t.Errorf("help %s printed the tool list", n)
		}
	}
	out, _, _ := runTool("help", "devinfo")
	if !strings.HasPrefix(out, "Usage: ibv_devinfo") || !strings.Contains(out, "--ib-port") {
		t.Errorf("help devinfo:\n%s", out)
	}
	if _, errs, code := runTool("help", "nosuch"); code != 2 || !strings.Contains(errs, `unknown tool "nosuch"`) {
		t.Errorf("help nosuch: %d %q", code, errs)
	}
	if _, errs, code := runTool("help", "devinfo", "ibstat"); code != 2 || !strings.Contains(errs, "one tool at a time") {
		t.Errorf("help devinfo ibstat: %d %q", code, errs)
	}
}

func TestVersionArgs(t *testing.T) {
	out, errs, code := runTool("version", "--bogus")
	if code != 2 || out != "" || !strings.Contains(errs, "unknown argument --bogus") || !strings.Contains(errs, "Usage: purerdma version") {
		t.Errorf("version --bogus: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if out, _, code := runTool("version", "--help"); code != 0 || !strings.HasPrefix(out, "Usage: purerdma version") {
		t.Errorf("version --help: %d %q", code, out)
	}
	if out, _, code := runTool("version"); code != 0 || !strings.HasPrefix(out, "purerdma ") {
		t.Errorf("version: %d %q", code, out)
	}
}

// TestToolNamesUnique: no two tools share a name (toolSet.lookup takes
// the first).
func TestToolNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, tool := range registry(defaultEnv()).all() {
		if seen[tool.Name] {
			t.Errorf("tool %q registered twice", tool.Name)
		}
		seen[tool.Name] = true
	}
	if len(seen) < 40 {
		t.Errorf("%d tools registered", len(seen))
	}
}

// TestToolFamilies: toolFamilies, by which a run builds only its tool's
// family, names each family's tools, no more, no fewer.
func TestToolFamilies(t *testing.T) {
	ts := registry(defaultEnv())
	listed := map[string]family{}
	for _, n := range toolFamilies {
		listed[n.name] = n.fam
	}
	n := 0
	for f := range numFamilies {
		for _, tool := range ts.family(f) {
			n++
			if got, ok := listed[tool.Name]; !ok || got != f {
				t.Errorf("tool %q of family %d: toolFamilies has %d (listed: %v)", tool.Name, f, got, ok)
			}
		}
	}
	if n != len(toolFamilies) {
		t.Errorf("the families have %d tools, toolFamilies %d", n, len(toolFamilies))
	}
}
