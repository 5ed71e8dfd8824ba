package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTestPackagesLinked: the production binaries link no package of
// the unit tests' machinery. internal/testmodel/fakekernel (the strict fake kernel),
// internal/testmodel/verbstest, internal/testmodel/sysfstest, internal/testmodel/ibsimtest and the like
// are for tests; code they share with production (umad/internal/umadmodel, the
// umad device umad's ibsim transport runs on) lives in packages of its
// own. It asks the go command, as `go list -deps` would be asked by hand,
// for every package other than the standard library's (whose
// internal/testlog and internal/synctest os and sync link anyway).
func TestNoTestPackagesLinked(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH:", err)
	}
	bins := []string{"github.com/purerdma/rdma/cmd/purerdma", "github.com/purerdma/rdma/cmd/rdma_exporter"}
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, bins...)
	out, err := exec.Command(gobin, args...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) == 0 {
		t.Fatal("go list listed no packages")
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p] = true
		l := strings.ToLower(p)
		if strings.Contains(l, "fake") || strings.Contains(l, "test") {
			t.Errorf("%s links %s, a package for tests", strings.Join(bins, " or "), p)
		}
	}
	// The list is the one asked for: it holds the binaries themselves and
	// the umad model they do need.
	for _, p := range append(bins, "github.com/purerdma/rdma/umad/internal/umadmodel") {
		if !seen[p] {
			t.Errorf("go list -deps does not list %s", p)
		}
	}
}
