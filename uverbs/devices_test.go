package uverbs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/sysfs"
)

func TestDevicesCapturedRXE(t *testing.T) {
	devs, err := Devices(&Options{Sysfs: fsAt(t, "testdata/sysfs-rxe")})
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
	d, err := LookupDevice("uverbs1", &Options{Sysfs: fsAt(t, "testdata/sysfs-rxe"), DevDir: "/dev/x"})
	if err != nil || d.Name != "rxe1" || d.Path != "/dev/x/uverbs1" {
		t.Errorf("LookupDevice(uverbs1) = %+v, %v", d, err)
	}
	_, err = LookupDevice("mlx5_0", &Options{Sysfs: fsAt(t, "testdata/sysfs-rxe")})
	if !errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.ENODEV) {
		t.Errorf("LookupDevice of a missing device: %v", err)
	}
}

func TestDevicesEdgeCases(t *testing.T) {
	// No infiniband_verbs class: no devices, no error.
	if devs, err := Devices(&Options{Sysfs: fsAt(t, t.TempDir())}); err != nil || len(devs) != 0 {
		t.Errorf("empty sysfs: %v, %v", devs, err)
	}
	// Another kernel ABI: ErrNotSupported.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "class", "infiniband_verbs"), 0o755)
	os.WriteFile(filepath.Join(root, "class", "infiniband_verbs", "abi_version"), []byte("5\n"), 0o644)
	if _, err := Devices(&Options{Sysfs: fsAt(t, root)}); !errors.Is(err, ErrNotSupported) {
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

// Discovery reads the tree Options.Sysfs holds, whatever it is made of: a
// tree without a directory (sysfs.NewFS) gives no SysfsPath, and the PCI
// driver link names mlx5.
func TestDevicesSysfsFS(t *testing.T) {
	tree := fstest.MapFS{
		"class/infiniband_verbs/abi_version":         {Data: []byte("6\n")},
		"class/infiniband_verbs/uverbs3/ibdev":       {Data: []byte("mlx5_2\n")},
		"class/infiniband_verbs/uverbs3/abi_version": {Data: []byte("1\n")},
		"class/infiniband/mlx5_2/node_type":          {Data: []byte("1: CA\n")},
		"class/infiniband/mlx5_2/node_guid":          {Data: []byte("0002:c903:0000:0001\n")},
		"class/infiniband/mlx5_2/sys_image_guid":     {Data: []byte("0002:c903:0000:0001\n")},
		"class/infiniband/mlx5_2/device/driver":      {Data: []byte("../../../../bus/pci/drivers/mlx5_core"), Mode: fs.ModeSymlink},
	}
	devs, err := Devices(&Options{Sysfs: sysfs.NewFS(tree), DevDir: "/dev/x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 {
		t.Fatalf("%d devices: %+v", len(devs), devs)
	}
	d := devs[0]
	if d.Name != "mlx5_2" || d.Node != "uverbs3" || d.Path != "/dev/x/uverbs3" || d.SysfsPath != "" || d.ABIVersion != 1 ||
		d.DriverID != rdma.DriverMLX5 || d.NodeType != rdma.NodeCA || d.NodeGUID != 0x0002c90300000001 {
		t.Errorf("device %+v", d)
	}
}
