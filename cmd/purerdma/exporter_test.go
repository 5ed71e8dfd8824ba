package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestExporterPath: `purerdma exporter` finds rdma_exporter next to
// purerdma first, then on PATH, and says how to install it otherwise.
func TestExporterPath(t *testing.T) {
	self, onPath, empty := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{self, onPath} {
		if err := os.WriteFile(filepath.Join(d, exporterName), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", onPath)
	if p, err := exporterPath(self); err != nil || p != filepath.Join(self, exporterName) {
		t.Errorf("next to purerdma: got %q, %v", p, err)
	}
	if p, err := exporterPath(empty); err != nil || p != filepath.Join(onPath, exporterName) {
		t.Errorf("on PATH: got %q, %v", p, err)
	}
	// Not executable next to purerdma: PATH's.
	if err := os.Chmod(filepath.Join(self, exporterName), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := exporterPath(self); err != nil || p != filepath.Join(onPath, exporterName) {
		t.Errorf("not executable next to purerdma: got %q, %v", p, err)
	}
	t.Setenv("PATH", empty)
	_, err := exporterPath(empty)
	if err == nil || !strings.Contains(err.Error(), "go install github.com/purerdma/rdma/cmd/rdma_exporter@latest") {
		t.Errorf("nowhere: %v, want the go install hint", err)
	}
}

// TestToolsDoNotLinkPrometheus: the tools' binary leaves client_golang to
// rdma_exporter (see exporter.go for the start-up time it costs).
func TestToolsDoNotLinkPrometheus(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/purerdma/rdma/cmd/purerdma").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/prometheus/") || p == "github.com/purerdma/rdma/cmd/rdma_exporter/internal/exporter" {
			t.Errorf("cmd/purerdma links %s", p)
		}
	}
}

// TestExporterExec builds purerdma and rdma_exporter into one directory
// and runs `purerdma exporter` with a flag only rdma_exporter knows wrong:
// the answer is rdma_exporter's own, from the same process.
func TestExporterExec(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH:", err)
	}
	if testing.Short() {
		t.Skip("builds two binaries (-short)")
	}
	dir := t.TempDir()
	build := exec.Command(gobin, "build", "-o", dir+"/", "github.com/purerdma/rdma/cmd/purerdma", "github.com/purerdma/rdma/cmd/rdma_exporter")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := exec.Command(filepath.Join(dir, "purerdma"), "version").Run(); errors.Is(err, syscall.ENOEXEC) {
		// make test-arm64 runs this test binary under qemu-user, whose
		// children the host kernel cannot run without binfmt_misc.
		t.Skipf("this machine cannot run the %s binaries it built: %v", runtime.GOARCH, err)
	}
	t.Setenv("PATH", t.TempDir())
	out, err := exec.Command(filepath.Join(dir, "purerdma"), "exporter", "--web.listen-address=no:such:address", "--path.sysfs", t.TempDir()).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() == 0 || !strings.Contains(string(out), "rdma_exporter: ") {
		t.Errorf("purerdma exporter with an address it cannot listen on: %v\n%s", err, out)
	}
}
