//go:build integration

package uverbs

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMLookupDeviceAsDevices: LookupDevice's netlink path (one dump and
// one chardev query) describes each device exactly as Devices' full
// sysfs and netlink discovery does, and a uverbs node name still finds it.
func TestVMLookupDeviceAsDevices(t *testing.T) {
	vmtest.Require(t)
	devs, err := Devices(nil)
	if err != nil || len(devs) == 0 {
		t.Fatalf("Devices: %v, %v", devs, err)
	}
	for _, want := range devs {
		got, ok := lookupNetlink(want.Name, nil)
		if !ok {
			t.Errorf("%s: the netlink lookup gave up", want.Name)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: netlink lookup differs from Devices (-want +got):\n%s", want.Name, diff)
		}
		if byNode, err := LookupDevice(want.Node, nil); err != nil || byNode != want {
			t.Errorf("LookupDevice(%s) = %+v, %v; want %+v", want.Node, byNode, err, want)
		}
	}
	if _, err := LookupDevice("nosuchdev9", nil); err == nil {
		t.Error("LookupDevice of a missing device succeeded")
	}
}
