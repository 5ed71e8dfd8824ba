//go:build integration

package rdmanl_test

import (
	"context"
	"errors"
	"os"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/rdmanl"
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

// TestVMNetlinkAgreesWithSysfs compares the two sources: the device list
// (names, GUIDs, firmware, ports, node type) and every port's hardware
// counters. Counter names must be equal; since sysfs is read first (and may
// serve values up to hw_counters/lifespan old) and netlink asks the driver
// afresh, each netlink value must be at least the sysfs one.
func TestVMNetlinkAgreesWithSysfs(t *testing.T) {
	vmtest.Require(t)
	traffic(t)

	fs, err := sysfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	cas, err := fs.CAs()
	if err != nil {
		t.Fatal(err)
	}
	nl := rdmanl.New()
	devs, err := nl.Devices()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]rdmanl.Device{}
	for _, d := range devs {
		byName[d.Name] = d
	}
	if len(cas) != len(devs) {
		t.Errorf("sysfs has %d CAs, netlink %d devices", len(cas), len(devs))
	}
	for _, want := range []struct{ name, guid string }{{vmtest.Dev0, vmtest.GUID0}, {vmtest.Dev1, vmtest.GUID1}} {
		var ca *sysfs.CA
		for _, c := range cas {
			if c.Name == want.name {
				ca = c
			}
		}
		d, ok := byName[want.name]
		if ca == nil || !ok {
			t.Fatalf("%s: sysfs %v, netlink %v", want.name, ca != nil, ok)
		}
		if ca.NodeGUID.String() != want.guid || d.NodeGUID != ca.NodeGUID || d.SysImageGUID != ca.SysImageGUID {
			t.Errorf("%s GUIDs: sysfs %s %s, netlink %s %s, want %s", want.name, ca.NodeGUID, ca.SysImageGUID, d.NodeGUID, d.SysImageGUID, want.guid)
		}
		if d.NumPorts != ca.NumPorts() {
			t.Errorf("%s ports: sysfs %d, netlink %d", want.name, ca.NumPorts(), d.NumPorts)
		}
		if d.NodeType == nil || *d.NodeType != ca.NodeType {
			t.Errorf("%s node type: sysfs %v, netlink %v", want.name, ca.NodeType, d.NodeType)
		}
		// rxe has no firmware: fw_ver exists and is empty in sysfs,
		// netlink leaves the attribute out.
		if ca.FWVersion == nil || *ca.FWVersion != "" || d.FWVersion != nil {
			t.Errorf("%s firmware: sysfs %v, netlink %v", want.name, ca.FWVersion, d.FWVersion)
		}
		if d.Protocol != nil && *d.Protocol != "roce" {
			t.Errorf("%s protocol %q, want roce", want.name, *d.Protocol)
		}
		t.Logf("%s: index %d, node GUID %s, %d port(s), protocol %v", d.Name, d.Index, d.NodeGUID, d.NumPorts, deref(d.Protocol))

		for _, p := range ca.Ports {
			fromSysfs, err := p.HwCounters()
			if err != nil {
				t.Fatal(err)
			}
			stats, err := nl.PortStats(d.Index, p.Number)
			if err != nil {
				t.Fatal(err)
			}
			fromNetlink := stats.Map()
			if stats.Device != d.Name || stats.Port != p.Number {
				t.Errorf("reply for %s/%d, asked %s/%d", stats.Device, stats.Port, d.Name, p.Number)
			}
			if diff := cmp.Diff(keys(fromSysfs), keys(fromNetlink)); diff != "" {
				t.Errorf("%s: counter names differ (-sysfs +netlink):\n%s", p.Name(), diff)
			}
			nonzero := 0
			for name, sv := range fromSysfs {
				nv, ok := fromNetlink[name]
				if ok && nv < sv {
					t.Errorf("%s %s: netlink %d < sysfs %d", p.Name(), name, nv, sv)
				}
				if sv != 0 {
					nonzero++
				}
			}
			if nonzero == 0 {
				t.Errorf("%s: every counter is 0 after the pingpong", p.Name())
			}
			t.Logf("%s: %d counters; sent_pkts sysfs %d netlink %d; rcvd_pkts sysfs %d netlink %d", p.Name(), len(fromNetlink),
				fromSysfs["sent_pkts"], fromNetlink["sent_pkts"], fromSysfs["rcvd_pkts"], fromNetlink["rcvd_pkts"])
		}
	}
}

// TestVMVishvanandaNetlinkAgrees checks that vishvananda/netlink's own calls
// see the same devices, port counts and counter names, and logs how it
// renders the GUIDs (byte-reversed, from the host-order u64).
func TestVMVishvanandaNetlinkAgrees(t *testing.T) {
	vmtest.Require(t)
	ours, err := rdmanl.New().Devices()
	if err != nil {
		t.Fatal(err)
	}
	links, err := netlink.RdmaLinkList()
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != len(ours) {
		t.Fatalf("vishvananda: %d links, ours %d", len(links), len(ours))
	}
	for i, l := range links {
		d := ours[i]
		if l.Attrs.Name != d.Name || l.Attrs.Index != d.Index || int(l.Attrs.NumPorts) != d.NumPorts {
			t.Errorf("vishvananda %+v, ours %+v", l.Attrs, d)
		}
		t.Logf("%s: vishvananda NodeGuid %q, ours %s", d.Name, l.Attrs.NodeGuid, d.NodeGUID)
		st, err := netlink.RdmaPortStatisticList(l, 1)
		s, ourErr := rdmanl.New().PortStats(d.Index, 1)
		// mock0 has port statistics too (its out_of_buffer q counter,
		// alloc_hw_port_stats), so every device is compared.
		if err != nil {
			t.Fatal(err)
		}
		if ourErr != nil {
			t.Fatal(ourErr)
		}
		if diff := cmp.Diff(keys(st.Statistics), keys(s.Map())); diff != "" {
			t.Errorf("%s counter names (-vishvananda +ours):\n%s", d.Name, diff)
		}
	}
}

// TestVMOpenNetlinkAgrees: a client that keeps one socket answers as one
// that opens a socket a request, for several requests in a row (each
// reply matched to its request on the shared socket), and after Close
// (twice) fails with os.ErrClosed.
func TestVMOpenNetlinkAgrees(t *testing.T) {
	vmtest.Require(t)
	kept, err := rdmanl.Open()
	if err != nil {
		t.Fatal(err)
	}
	fresh := rdmanl.New()
	for range 3 {
		a, err := kept.Devices()
		if err != nil {
			t.Fatal(err)
		}
		b, err := fresh.Devices()
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(b, a); d != "" {
			t.Fatalf("Devices (-fresh +kept):\n%s", d)
		}
		for _, dev := range a {
			c1, err1 := kept.Chardev(dev.Index, sysfs.KindUverbs, 0)
			c2, err2 := fresh.Chardev(dev.Index, sysfs.KindUverbs, 0)
			if (err1 == nil) != (err2 == nil) || (err1 == nil && !cmp.Equal(c1, c2)) {
				t.Errorf("%s chardev: kept %+v, %v; fresh %+v, %v", dev.Name, c1, err1, c2, err2)
			}
			s1, err1 := kept.PortStats(dev.Index, 1)
			s2, err2 := fresh.PortStats(dev.Index, 1)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s port stats: kept %v, fresh %v", dev.Name, err1, err2)
			}
			if d := cmp.Diff(keys(s2.Map()), keys(s1.Map())); d != "" {
				t.Errorf("%s counter names (-fresh +kept):\n%s", dev.Name, d)
			}
		}
	}
	if _, err := kept.PortStats(1<<30, 1); !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENODEV) {
		t.Errorf("an unknown index: %v, want the kernel's EINVAL", err)
	}
	if _, err := kept.Devices(); err != nil {
		t.Errorf("the socket after an error reply: %v", err)
	}
	if err := kept.Close(); err != nil {
		t.Fatal(err)
	}
	if err := kept.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := kept.Devices(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Devices after Close: %v, want os.ErrClosed", err)
	}
	if err := fresh.Close(); err != nil {
		t.Errorf("Close of a New client: %v", err)
	}
}

func keys[M ~map[string]uint64](m M) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestVMNetlinkChardevAgreesWithSysfs asks GET_CHARDEV for every uverbs, umad
// and issm node sysfs lists and compares name, device number and ABI; the
// uverbs driver id must be rxe's. RoCE ports have no SMI, so the kernel
// answers EOPNOTSUPP for their issm nodes where sysfs lists them (6.1).
func TestVMNetlinkChardevAgreesWithSysfs(t *testing.T) {
	vmtest.Require(t)
	fs, err := sysfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	cds, err := fs.CharDevs()
	if err != nil {
		t.Fatal(err)
	}
	madABI, err := fs.MadABIVersion()
	if err != nil {
		t.Fatal(err)
	}
	nl := rdmanl.New()
	kinds := map[sysfs.CharDevKind]int{}
	for i := range cds {
		cd := &cds[i]
		d, err := nl.Device(cd.CA)
		if err != nil {
			t.Fatal(err)
		}
		got, err := nl.Chardev(d.Index, cd.Kind, cd.Port)
		if cd.Kind == sysfs.KindISSM {
			if !errors.Is(err, sysfs.ErrNotSupported) {
				t.Errorf("%s of a RoCE port: %v, want ErrNotSupported", cd.Name, err)
			}
			kinds[cd.Kind]++
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", cd.Name, err)
			continue
		}
		kinds[cd.Kind]++
		want := rdmanl.Chardev{Name: cd.Name, Dev: *cd.Dev, ABI: uint64(madABI)}
		if cd.Kind == sysfs.KindUverbs {
			want.ABI = uint64(*cd.ABIVersion)
			id := rdma.DriverRXE
			if cd.CA == vmtest.MockDev {
				id = rdma.DriverMLX5 // the test device says mlx5
			}
			want.DriverID = &id
		}
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Errorf("%s (-sysfs +netlink):\n%s", cd.Name, diff)
		}
	}
	// Linux 6.1 creates issm0/1 for rxe's ports, 6.12 none; mock0 has a
	// uverbs node and, being a raw Ethernet port without MADs, no umad.
	wantVerbs := 2
	if vmtest.HasMock() {
		wantVerbs = 3
	}
	if kinds[sysfs.KindUverbs] != wantVerbs || kinds[sysfs.KindUmad] != 2 {
		t.Errorf("compared %v, want %d uverbs and two umad", kinds, wantVerbs)
	}
	t.Logf("compared %v", kinds)
	if _, err := nl.Chardev(0, sysfs.KindUmad, 2); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("umad of port 2 of a one-port device: %v, want EINVAL", err)
	}
}
