// Package vmtest helps tests that run inside the vmrun guest, a qemu VM
// with Debian's kernel and two Soft-RoCE devices: rxe0 on veth0
// (10.77.0.1) and rxe1 on veth1 (10.77.0.2), both ACTIVE.
//
// Such tests carry the build tag "integration" and run through
//
//	make -f mk/integration.mk integration
//
// which runs go test -tags integration -exec 'vmrun --' for every package
// that has them, once per kernel. Start each test with [Require], so that
// the test skips (rather than fails) when someone runs it on the host.
//
// The package itself has no build tag: any package's integration tests can
// import it.
package vmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/purerdma/rdma/integration/internal/vmproto"
	"github.com/purerdma/rdma/internal/sys"
)

// The guest's RDMA devices, the network devices under them and their IPv4
// addresses (GID 1); GID 0 is the fe80:: link-local address.
const (
	Dev0  = "rxe0"
	Dev1  = "rxe1"
	Net0  = "veth0"
	Net1  = "veth1"
	Addr0 = "10.77.0.1"
	Addr1 = "10.77.0.2"
)

// SysfsRoot is where the RDMA devices appear in sysfs.
const SysfsRoot = "/sys/class/infiniband"

// InGuest reports whether the process runs inside the vmrun guest.
func InGuest() bool { return os.Getenv(vmproto.EnvGuest) == "1" }

// Require skips the test unless it runs inside the vmrun guest.
func Require(t testing.TB) {
	t.Helper()
	if !InGuest() {
		t.Skip("needs the vmrun guest; run: make -f mk/integration.mk integration " +
			"(or go test -tags integration -exec 'go run ./integration/vmrun --' PACKAGE)")
	}
}

// Kernel returns the guest's -kernel label ("6.1" or "6.12"), or "" on the
// host.
func Kernel() string { return os.Getenv(vmproto.EnvKernel) }

// Repo returns the repository root, which the guest mounts at the same
// path as the host.
func Repo() string { return os.Getenv(vmproto.EnvRepo) }

// ReadSysfs reads a sysfs attribute of an RDMA device, relative to
// /sys/class/infiniband/DEV, without the trailing newline.
func ReadSysfs(dev, rel string) (string, error) {
	s, err := sys.ReadString(filepath.Join(SysfsRoot, dev, rel))
	if err != nil {
		return "", err
	}
	return strings.TrimRight(s, "\n"), nil
}

// PortState returns port 1's state as sysfs spells it, e.g. "4: ACTIVE".
func PortState(dev string) (string, error) { return ReadSysfs(dev, "ports/1/state") }

// HWCounter reads one of port 1's hw_counters, e.g. "sent_pkts" (rxe has
// no PMA, hence no ports/1/counters directory).
func HWCounter(dev, name string) (uint64, error) {
	s, err := ReadSysfs(dev, "ports/1/hw_counters/"+name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("hw_counters/%s of %s: %w", name, dev, err)
	}
	return v, nil
}

// The veth MAC addresses are fixed, so these are the same on every boot.
const (
	MAC0  = "52:54:00:12:34:01"
	MAC1  = "52:54:00:12:34:02"
	GUID0 = "5054:00ff:fe12:3401" // rxe0's node GUID, as sysfs spells it
	GUID1 = "5054:00ff:fe12:3402"
	GID0  = "fe80:0000:0000:0000:5054:00ff:fe12:3401" // rxe0's GID 0
	GID1  = "fe80:0000:0000:0000:5054:00ff:fe12:3402" // rxe1's GID 0
)

// Extra returns the path in the guest of a program from the packages the
// test bed unpacks on the host but leaves out of the image (Prometheus,
// node_exporter): rel is its path inside the package, "usr/bin/promtool".
func Extra(rel string) string {
	return filepath.Join(Repo(), "integration", ".cache", "extras", rel)
}

// Count returns the integer in the environment variable name, or def when
// it is unset. A run that must be shorter (make integration-arm64 on the
// emulated arm64 guest) sets it with vmrun -env NAME=N; the tests log the
// count they used. A value that is not a positive integer is def too.
func Count(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Rounds returns how many rounds (or chunks) a test that measures, Go
// against C, takes: bench when it runs for make bench (mk/bench-vm.sh
// sets PURERDMA_BENCH=1), test under make test, where a short run shows
// that the measurement still works and costs the suite little.
func Rounds(test, bench int) int {
	if os.Getenv("PURERDMA_BENCH") == "1" {
		return bench
	}
	return test
}

// Slice reports whether this kernel runs make test's slice of the VM
// tests (vmrun -env VMRUN_SLICE=1: mk/integration.mk's
// INTEGRATION_SLICE_ENV, for 6.1): a matrix that the other kernel runs
// whole runs a named part here, and the test logs which. make
// integration-full runs every kernel whole.
func Slice() bool { return os.Getenv("VMRUN_SLICE") == "1" }

// RequireAmd64Peer skips the test on a guest other than amd64 (vmrun -arch
// arm64) when it needs one of the project's C test peers (integration/NAME,
// built on the host by integration/NAME/build.sh, for amd64 only). The
// rdma-core tools the guest image carries (ibv_rc_pingpong, rping,
// ibstat, ...) are the guest's own architecture's and need no skip.
func RequireAmd64Peer(t testing.TB, name string) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("needs the C test peer %s, which integration/%s/build.sh builds on the host for amd64 only (this guest is %s)",
			name, name, runtime.GOARCH)
	}
}
