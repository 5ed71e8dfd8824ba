package rdma_test

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The module paths of the repository: the library's and the exporter's.
const modulePath = "github.com/purerdma/rdma"

// TestLayering checks the import graph against the layering table of
// docs/architecture.md ("## Layering"): every import of a project
// package by a non-test file is an arrow the table allows, and every arrow
// the table allows exists, so the table stays true in both directions.
// Test files may import any project package but cmd/...; the test models
// (internal/testmodel/...) are imported by test files and by each other
// only. It also checks the rule that only internal/sys imports
// golang.org/x/sys/unix (test files and the VM harness under integration/,
// which are test infrastructure, excepted).
func TestLayering(t *testing.T) {
	for _, e := range checkLayering(".") {
		t.Error(e)
	}
}

// TestLayeringCatchesNewArrow adds an arrow the table does not name, in a
// small tree of its own, and expects the check to report it.
func TestLayeringCatchesNewArrow(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"docs/architecture.md": "## Layering\n\n| package | may import |\n|---|---|\n| `abi` | — |\n| `uverbs` | `abi` |\n",
		"abi/abi.go":           "package abi\n\nimport _ \"" + modulePath + "/uverbs\"\n",
		"uverbs/uverbs.go":     "package uverbs\n\nimport _ \"" + modulePath + "/abi\"\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	errs := checkLayering(dir)
	want := "abi imports uverbs: an arrow docs/architecture.md's layering table does not allow"
	if len(errs) != 1 || errs[0] != want {
		t.Errorf("checkLayering = %q, want [%q]", errs, want)
	}
}

// checkLayering compares the import graph of the tree at root with the
// layering table of its docs/architecture.md and returns what differs.
func checkLayering(root string) []string {
	var errs []string
	report := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	allowed, err := readLayering(filepath.Join(root, "docs/architecture.md"))
	if err != nil {
		return []string{err.Error()}
	}
	graph, testImports, unixUsers, err := importGraph(root)
	if err != nil {
		return []string{err.Error()}
	}
	for _, pkg := range sortedKeys(graph) {
		if strings.HasPrefix(pkg, "integration/") || pkg == "integration" {
			continue // the VM harness: test infrastructure, not layered
		}
		rule, ok := allowed[pkg]
		if !ok {
			report("package %s is not in docs/architecture.md's layering table", pkg)
			continue
		}
		for _, imp := range sortedKeys(graph[pkg]) {
			if !rule[imp] {
				report("%s imports %s: an arrow docs/architecture.md's layering table does not allow", pkg, imp)
			}
		}
		for _, imp := range sortedKeys(rule) {
			if !graph[pkg][imp] {
				report("docs/architecture.md allows %s -> %s, which no file has: remove it from the table", pkg, imp)
			}
		}
	}
	for _, pkg := range sortedKeys(allowed) {
		if _, ok := graph[pkg]; !ok {
			report("docs/architecture.md's layering table names %s, which has no non-test Go file", pkg)
		}
	}
	for _, pkg := range sortedKeys(graph) {
		for _, imp := range sortedKeys(graph[pkg]) {
			if strings.HasPrefix(imp, "internal/testmodel/") && !strings.HasPrefix(pkg, "internal/testmodel/") {
				report("%s (not a test file) imports the test model %s", pkg, imp)
			}
		}
	}
	for _, pkg := range sortedKeys(testImports) {
		for _, imp := range sortedKeys(testImports[pkg]) {
			if strings.HasPrefix(imp, "cmd/") && !strings.HasPrefix(pkg, "cmd/") {
				report("a test of %s imports the command %s", pkg, imp)
			}
		}
	}
	for _, f := range unixUsers {
		report("%s imports golang.org/x/sys/unix: only internal/sys may (docs/architecture.md)", f)
	}
	return errs
}

// readLayering reads the table under "## Layering": rows of
// | `pkg` | `imp`, `imp` | (or "—" for none), paths relative to the module.
func readLayering(path string) (map[string]map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rules := map[string]map[string]bool{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Layering"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			return nil, fmt.Errorf("%s: bad layering row %q", path, line)
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		set := map[string]bool{}
		for _, imp := range strings.Split(cells[2], ",") {
			imp = strings.Trim(strings.TrimSpace(imp), "`")
			if imp != "" && imp != "—" {
				set[imp] = true
			}
		}
		if _, dup := rules[pkg]; dup {
			return nil, fmt.Errorf("%s: %s listed twice", path, pkg)
		}
		rules[pkg] = set
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s: no layering table under \"## Layering\"", path)
	}
	return rules, sc.Err()
}

// importGraph parses every Go file of the repository and returns the
// project imports of non-test files and of test files per package
// directory ("." for the root), and the non-test files outside
// internal/sys and integration/ that import golang.org/x/sys/unix.
func importGraph(root string) (graph, tests map[string]map[string]bool, unixUsers []string, err error) {
	graph = map[string]map[string]bool{}
	tests = map[string]map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			if cg.Pos() < f.Package && strings.Contains(cg.Text(), "go:build ignore") {
				return nil // generator inputs, not part of a package
			}
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		isTest := strings.HasSuffix(name, "_test.go")
		m := graph
		if isTest {
			m = tests
		}
		if m[dir] == nil {
			m[dir] = map[string]bool{}
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if imp == "golang.org/x/sys/unix" && !isTest && dir != "internal/sys" && !strings.HasPrefix(dir, "internal/sys/") && !strings.HasPrefix(dir, "integration") {
				unixUsers = append(unixUsers, path)
			}
			if imp == modulePath {
				m[dir]["."] = true
			} else if rel, ok := strings.CutPrefix(imp, modulePath+"/"); ok && rel != dir {
				m[dir][rel] = true
			}
		}
		return nil
	})
	return graph, tests, unixUsers, err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
