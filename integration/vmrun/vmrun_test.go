package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// These tests boot VMs, so they run only when VMRUN_HARNESS=1 (make -f
// mk/integration.mk integration-harness sets it).
func requireHarness(t *testing.T) {
	t.Helper()
	if os.Getenv("VMRUN_HARNESS") != "1" {
		t.Skip("boots VMs; run with VMRUN_HARNESS=1 (make -f mk/integration.mk integration-harness)")
	}
}

// vmrun runs vmrun in-process and returns its output.
func vmrun(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = run(args, &o, &e)
	return o.String(), e.String(), err
}

func TestExitStatus(t *testing.T) {
	requireHarness(t)
	_, stderr, err := vmrun(t, "--", "sh", "-c", "exit 3")
	var status exitStatus
	if !errors.As(err, &status) || status != 3 {
		t.Fatalf("run = %v, want exit status 3; stderr:\n%s", err, stderr)
	}
}

func TestOutputStreams(t *testing.T) {
	requireHarness(t)
	stdout, stderr, err := vmrun(t, "--", "sh", "-c", "echo out; echo err >&2; echo $VMRUN_GUEST $VMRUN_KERNEL; pwd")
	if err != nil {
		t.Fatalf("run: %v; stderr:\n%s", err, stderr)
	}
	wd, _ := os.Getwd()
	if want := "out\n1 6.1\n" + wd + "\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	if stderr != "err\n" {
		t.Errorf("stderr = %q, want %q (no console lines)", stderr, "err\n")
	}
}

func TestUser(t *testing.T) {
	requireHarness(t)
	stdout, stderr, err := vmrun(t, "-user", "alice", "--", "sh", "-c", "id -un; id -u; cat /dev/infiniband/umad0")
	var status exitStatus
	if !errors.As(err, &status) || status != 1 {
		t.Errorf("run = %v, want exit status 1 (umad0 is root's)", err)
	}
	if stdout != "alice\n1000\n" {
		t.Errorf("stdout = %q, want alice and 1000", stdout)
	}
	if !strings.Contains(stderr, "Permission denied") {
		t.Errorf("stderr = %q, want Permission denied", stderr)
	}
}

func TestCommandNotFound(t *testing.T) {
	requireHarness(t)
	_, stderr, err := vmrun(t, "--", "no-such-command")
	var status exitStatus
	if !errors.As(err, &status) || status != 127 {
		t.Errorf("run = %v, want exit status 127; stderr:\n%s", err, stderr)
	}
}

func TestTimeout(t *testing.T) {
	requireHarness(t)
	start := time.Now()
	_, _, err := vmrun(t, "-timeout", "12s", "--", "sleep", "600")
	if err == nil || !strings.Contains(err.Error(), "did not finish within 12s") {
		t.Fatalf("run = %v, want a timeout error", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v to give up", d)
	}
}

func TestKernelPanic(t *testing.T) {
	requireHarness(t)
	_, _, err := vmrun(t, "--", "sh", "-c", "echo c > /proc/sysrq-trigger; sleep 60")
	if err == nil || !strings.Contains(err.Error(), "kernel panicked") {
		t.Fatalf("run = %v, want a kernel panic error", err)
	}
}

// TestFailingGuestTest runs a package whose VM test fails through go test
// -exec vmrun: go test must fail and show the test's failure.
func TestFailingGuestTest(t *testing.T) {
	requireHarness(t)
	bin := filepath.Join(t.TempDir(), "vmrun")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command("go", "test", "-tags", "integration", "-count=1", "-exec", bin+" --", "./testdata/failing")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("go test passed, want a failure:\n%s", out)
	}
	if !strings.Contains(string(out), "--- FAIL: TestFailsInGuest") ||
		!strings.Contains(string(out), "this test fails on purpose, in the guest") {
		t.Errorf("go test output lacks the guest test's failure:\n%s", out)
	}
}

func TestHostProgram(t *testing.T) {
	repo := t.TempDir()
	exe := filepath.Join(t.TempDir(), "pkg.test")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		copy bool
	}{
		{exe, true},                                // go test's binary: copied in
		{"sh", false},                              // found on the guest's PATH
		{"/bin/sh", false},                         // the guest's own
		{filepath.Join(repo, "x"), false},          // in the shared repository
		{filepath.Join(repo, "..", "nope"), false}, // does not exist
	} {
		if _, ok := hostProgram(c.name, repo, repo); ok != c.copy {
			t.Errorf("hostProgram(%q) = %v, want %v", c.name, ok, c.copy)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"-kernel", "5.10", "--", "true"}, {"-shell", "--", "true"}, {"-accel", "hvf", "--", "true"}} {
		var usage usageError
		if err := run(args, io.Discard, io.Discard); !errors.As(err, &usage) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
	}
}

// TestArm64 boots the arm64 guest (-arch arm64): the kernel is arm64's,
// both rxe ports are ACTIVE, the project's purerdma and rdma-core's
// ibv_devices (both arm64 programs) print the same, and the exit status
// comes back.
func TestArm64(t *testing.T) {
	requireHarness(t)
	stdout, stderr, err := vmrun(t, "-arch", "arm64", "-kernel", "6.12", "--", "sh", "-c",
		"uname -m; cat /sys/class/infiniband/rxe0/ports/1/state /sys/class/infiniband/rxe1/ports/1/state; "+
			"ibv_devices > /tmp/c; purerdma devices > /tmp/go; cmp /tmp/c /tmp/go && echo same; exit 4")
	var status exitStatus
	if !errors.As(err, &status) || status != 4 {
		t.Fatalf("run = %v, want exit status 4; stderr:\n%s", err, stderr)
	}
	if want := "aarch64\n4: ACTIVE\n4: ACTIVE\nsame\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
}

// TestCheckMachine: a test binary built for the other architecture is
// refused before anything boots; scripts pass.
func TestCheckMachine(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host, other := runtime.GOARCH, "arm64"
	if host == "arm64" {
		other = "amd64"
	}
	if err := checkMachine(exe, host); err != nil {
		t.Errorf("checkMachine(test binary, %s) = %v", host, err)
	}
	if err := checkMachine(exe, other); err == nil || !strings.Contains(err.Error(), "GOARCH="+other) {
		t.Errorf("checkMachine(test binary, %s) = %v, want a refusal naming GOARCH=%s", other, err, other)
	}
	script := filepath.Join(t.TempDir(), "s.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkMachine(script, other); err != nil {
		t.Errorf("checkMachine(script) = %v", err)
	}
}
