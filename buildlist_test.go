package rdma_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildListHasNoPrometheus builds, outside the repository, a module
// that imports uverbs and counters (the library pointed at this tree by a
// replace) and wants no Prometheus module in its `go list -m all`: the
// exporter is a module of its own (cmd/rdma_exporter) so that importing
// the library does not bring the Prometheus client into a program's build
// list.
func TestBuildListHasNoPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/user\n\ngo 1.24\n\nrequire github.com/purerdma/rdma v0.0.0-00010101000000-000000000000\n\nreplace github.com/purerdma/rdma => " + repo + "\n",
		"main.go": `package main

import (
	"fmt"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/uverbs"
)

func main() {
	devs, err := uverbs.Devices(nil)
	fmt.Println(len(devs), err, counters.MaxValues)
}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mod", "tidy")
	list := run("list", "-m", "all")
	if !strings.Contains(list, "github.com/purerdma/rdma ") {
		t.Fatalf("the library is not in the build list:\n%s", list)
	}
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "prometheus") {
			t.Errorf("a program importing uverbs and counters has %q in its build list:\n%s", line, list)
		}
	}
}
