//go:build integration

package sysfs_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/sysfs"
)

// These tests run in the Soft-RoCE VM (make -f mk/integration.mk
// integration): rxe0 on veth0 and rxe1 on veth1.

// traffic runs ibv_rc_pingpong between rxe0 and rxe1 so that the hardware
// counters are not all zero.
func traffic(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := (vmtest.Pingpong{Iters: 200}).Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestVMLiveSysfs reads the real tree: GIDs with their attributes (1024
// slots, the empty ones failing EINVAL), the missing PMA, the character
// devices against /dev/infiniband, the ABI versions, and an open
// HwCounterSet seeing new values after traffic (sysfs recomputes a file
// read again from offset 0).
func TestVMLiveSysfs(t *testing.T) {
	vmtest.Require(t)
	fs, err := sysfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := fs.VerbsABIVersion(); err != nil || v != 6 {
		t.Errorf("VerbsABIVersion = %d, %v", v, err)
	}
	if v, err := fs.MadABIVersion(); err != nil || v != 5 {
		t.Errorf("MadABIVersion = %d, %v", v, err)
	}
	for _, want := range []struct{ dev, netdev, gid0 string }{{vmtest.Dev0, vmtest.Net0, vmtest.GID0}, {vmtest.Dev1, vmtest.Net1, vmtest.GID1}} {
		p, err := fs.Port(want.dev, 1)
		if err != nil {
			t.Fatal(err)
		}
		if p.State != rdma.PortActive || p.LinkLayer != rdma.LinkLayerEthernet || deref(p.LinkLayerName) != "Ethernet" || p.Rate == nil {
			t.Errorf("%s: %+v", p.Name(), p)
		}
		gids, err := p.GIDs()
		if err != nil {
			t.Fatal(err)
		}
		if len(gids) < 1 || gids[0].GID.Hex() != want.gid0 || gids[0].Type == nil || *gids[0].Type != rdma.GIDTypeRoCEv2 || deref(gids[0].NetDev) != want.netdev {
			t.Errorf("%s GIDs %+v, want GID 0 %s, RoCE v2, %s", p.Name(), gids, want.gid0, want.netdev)
		}
		empty, err := p.GID(len(gids) + 5)
		if err != nil || !empty.GID.IsZero() || empty.Type != nil || empty.NetDev != nil {
			t.Errorf("%s empty slot: %+v, %v", p.Name(), empty, err)
		}
		if _, err := p.Counters(); !errors.Is(err, sysfs.ErrNotSupported) {
			t.Errorf("%s Counters: %v, want ErrNotSupported (rxe has no PMA)", p.Name(), err)
		}
		for _, d := range []*sysfs.CharDev{p.Umad} {
			if d == nil {
				t.Fatalf("%s has no umad device", p.Name())
			}
			checkDevNode(t, d)
		}
		if p.ISSM != nil {
			checkDevNode(t, p.ISSM)
		}
		t.Logf("%s: %d GIDs, rate %q, umad %s, issm %v (kernel %s)", p.Name(), len(gids), p.Rate.Raw, p.Umad.Name, p.ISSM != nil, vmtest.Kernel())
	}
	ca, err := fs.CA(vmtest.Dev0)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Verbs == nil {
		t.Fatal("rxe0 has no uverbs device")
	}
	checkDevNode(t, ca.Verbs)

	p := ca.Ports[0]
	set, err := p.OpenHwCounters()
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	before := map[string]uint64{}
	if err := set.Read(before); err != nil {
		t.Fatal(err)
	}
	traffic(t)
	lifespan, err := p.HwCountersLifespan()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * lifespan)
	after := map[string]uint64{}
	if err := set.Read(after); err != nil {
		t.Fatal(err)
	}
	if after["sent_pkts"] <= before["sent_pkts"] || after["rcvd_pkts"] <= before["rcvd_pkts"] {
		t.Errorf("open set after traffic: sent_pkts %d -> %d, rcvd_pkts %d -> %d", before["sent_pkts"], after["sent_pkts"], before["rcvd_pkts"], after["rcvd_pkts"])
	}
	t.Logf("open set: sent_pkts %d -> %d (lifespan %v)", before["sent_pkts"], after["sent_pkts"], lifespan)
}

// checkDevNode compares a CharDev's dev file with the node devtmpfs made.
func checkDevNode(t *testing.T, d *sysfs.CharDev) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(d.Path, &st); err != nil {
		t.Errorf("%s: %v", d.Path, err)
		return
	}
	if d.Dev == nil {
		t.Errorf("%s: no dev file in sysfs", d.Name)
		return
	}
	major, minor := unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))
	if major != d.Dev.Major || minor != d.Dev.Minor {
		t.Errorf("%s: sysfs dev %s, %s is %d:%d", d.Name, d.Dev, d.Path, major, minor)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		t.Errorf("%s is not a character device", d.Path)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
