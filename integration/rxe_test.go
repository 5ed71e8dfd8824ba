//go:build integration

package integration_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/purerdma/rdma/integration/vmtest"
)

func TestVMPortsActive(t *testing.T) {
	vmtest.Require(t)
	for _, dev := range []string{vmtest.Dev0, vmtest.Dev1} {
		state, err := vmtest.PortState(dev)
		if err != nil {
			t.Fatal(err)
		}
		if state != "4: ACTIVE" {
			t.Errorf("%s port 1 state = %q, want %q", dev, state, "4: ACTIVE")
		}
		gid, err := vmtest.ReadSysfs(dev, "ports/1/gids/0")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(gid, "fe80:") {
			t.Errorf("%s GID 0 = %q, want the fe80:: link-local address", dev, gid)
		}
	}
}

func TestVMCharDevices(t *testing.T) {
	vmtest.Require(t)
	for _, name := range []string{"uverbs0", "uverbs1", "umad0", "umad1"} {
		st, err := os.Stat("/dev/infiniband/" + name)
		if err != nil {
			t.Error(err)
			continue
		}
		if st.Mode()&os.ModeCharDevice == 0 {
			t.Errorf("/dev/infiniband/%s is %v, want a character device", name, st.Mode())
		}
	}
}

func TestVMABIVersions(t *testing.T) {
	vmtest.Require(t)
	for file, want := range map[string]string{
		"/sys/class/infiniband_verbs/abi_version": "6",
		"/sys/class/infiniband_mad/abi_version":   "5",
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Error(err)
			continue
		}
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}

func TestVMPingpongMovesCounters(t *testing.T) {
	vmtest.Require(t)
	before, err := vmtest.HWCounter(vmtest.Dev0, "sent_pkts")
	if err != nil {
		t.Fatal(err)
	}
	res, err := vmtest.Pingpong{Iters: 100}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after, err := vmtest.HWCounter(vmtest.Dev0, "sent_pkts")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kernel %s: %d bytes at %.0f Mbit/s; rxe0 sent_pkts %d -> %d", vmtest.Kernel(), res.Bytes, res.Mbps, before, after)
	if after < before+100 {
		t.Errorf("rxe0 sent_pkts went from %d to %d, want at least 100 more", before, after)
	}
}

func TestVMFixedAddresses(t *testing.T) {
	vmtest.Require(t)
	for dev, want := range map[string][2]string{
		vmtest.Dev0: {vmtest.GUID0, vmtest.GID0},
		vmtest.Dev1: {vmtest.GUID1, vmtest.GID1},
	} {
		guid, err := vmtest.ReadSysfs(dev, "node_guid")
		if err != nil {
			t.Fatal(err)
		}
		gid, err := vmtest.ReadSysfs(dev, "ports/1/gids/0")
		if err != nil {
			t.Fatal(err)
		}
		if guid != want[0] || gid != want[1] {
			t.Errorf("%s: node_guid %s, GID 0 %s; want %s and %s", dev, guid, gid, want[0], want[1])
		}
	}
}

// TestVMCaptureGolden captures ibv_devinfo -d rxe0 and compares what it asked
// the kernel for with the capture stored in testdata (made on 6.1).
func TestVMCaptureGolden(t *testing.T) {
	vmtest.Require(t)
	got, err := vmtest.Capture(context.Background(), "ibv_devinfo", "-d", vmtest.Dev0)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/captures/ibv_devinfo-rxe0.txt")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(vmtest.Requests(golden), vmtest.Requests(got)); diff != "" {
		t.Errorf("ibv_devinfo's requests differ from testdata/captures/ibv_devinfo-rxe0.txt (-golden +now):\n%s\ncapture now:\n%s", diff, got)
	}
}
