package uverbs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/purerdma/rdma"
)

func TestDevicesCapturedRXE(t *testing.T) {
	devs, err := Devices(&Options{SysfsRoot: "testdata/sysfs-rxe"})
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 {
		t.Fatalf("%d devices: %+v", len(devs), devs)
	}
	for i, want := range []struct {
		name, node string
		guid       rdma.GUID
	}{{"rxe0", "uverbs0", 0xacade8fffe375f42}, {"rxe1", "uverbs1", 0xacdf59fffef0895d}} {
		d := devs[i]
		if d.Name != want.name || d.Node != want.node || d.Path != "/dev/infiniband/"+want.node || d.NodeGUID != want.guid ||
			d.DriverID != rdma.DriverRXE || d.DriverID.String() != "rxe" || d.ABIVersion != 2 || d.NodeType != rdma.NodeCA ||
			d.Transport() != TransportIB {
			t.Errorf("device %d: %+v", i, d)
		}
	}
	d, err := LookupDevice("uverbs1", &Options{SysfsRoot: "testdata/sysfs-rxe", DevDir: "/dev/x"})
	if err != nil || d.Name != "rxe1" || d.Path != "/dev/x/uverbs1" {
		t.Errorf("LookupDevice(uverbs1) = %+v, %v", d, err)
	}
	_, err = LookupDevice("mlx5_0", &Options{SysfsRoot: "testdata/sysfs-rxe"})
	if !errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.ENODEV) {
		t.Errorf("LookupDevice of a missing device: %v", err)
	}
}

func TestDevicesEdgeCases(t *testing.T) {
	// No infiniband_verbs class: no devices, no error.
	if devs, err := Devices(&Options{SysfsRoot: t.TempDir()}); err != nil || len(devs) != 0 {
		t.Errorf("empty sysfs: %v, %v", devs, err)
	}
	// Another kernel ABI: ErrNotSupported.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "class", "infiniband_verbs"), 0o755)
	os.WriteFile(filepath.Join(root, "class", "infiniband_verbs", "abi_version"), []byte("5\n"), 0o644)
	if _, err := Devices(&Options{SysfsRoot: root}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("ABI 5: %v", err)
	}
	// Natural order: rxe2 before rxe10; unknown drivers are listed with id 0.
	b := newBed(t, rxeNamed("rxe10"), rxeNamed("rxe2"), rxeNamed("foo0"))
	devs, err := Devices(b.opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range devs {
		names = append(names, d.Name)
	}
	if len(names) != 3 || names[0] != "foo0" || names[1] != "rxe2" || names[2] != "rxe10" || devs[0].DriverID != rdma.DriverUnknown || devs[0].DriverID.String() != "unknown" {
		t.Errorf("order %v, %+v", names, devs[0])
	}
}

func rxeNamed(name string) *fakeVerbs {
	v := rxe0()
	v.Name = name
	return v
}
