package main

import (
	"os"
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

// TestStartupBuildsNoTables: every start of every tool runs the
// initialization of every package the binary links, and the code of an
// init function maps its package's pages of text, so none of the
// project's packages may have initialization code (an init function of
// more than a RET, or a PKG.map.init.N of a package-level map) except
// internal/sys, which every tool uses anyway (the page size, the table
// of open descriptors), and the binary links no regexp (compiled
// patterns, and the unicode tables regexp/syntax makes reachable, are
// built at start). docs/performance.md ("Per tool") has what they cost.
func TestStartupBuildsNoTables(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH:", err)
	}
	bin := t.TempDir() + "/purerdma"
	build := exec.Command(gobin, "build", "-o", bin, ".")
	// For linux/amd64 whatever the test runs as, where an empty init
	// function is one RET byte (arm64 pads it to 16).
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(gobin, "tool", "nm", "-size", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l) // address, size, type, name
		if len(f) < 4 || (f[2] != "T" && f[2] != "t") {
			continue
		}
		n++
		sym := f[3]
		if strings.HasPrefix(sym, "github.com/purerdma/rdma") && strings.Contains(sym, ".map.init.") {
			t.Errorf("%s: a package-level map, built at every start of the binary", sym)
		}
		if strings.HasPrefix(sym, "github.com/purerdma/rdma") && strings.HasSuffix(sym, ".init") &&
			f[1] != "1" && sym != "github.com/purerdma/rdma/internal/sys.init" {
			t.Errorf("%s: %s bytes of initialization code, run at every start of the binary", sym, f[1])
		}
		if strings.HasPrefix(sym, "regexp.") {
			t.Errorf("the binary links regexp (%s)", sym)
			break
		}
	}
	if n < 1000 {
		t.Fatalf("go tool nm listed %d functions", n)
	}
}
