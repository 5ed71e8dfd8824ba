package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/purerdma/rdma"
)

// Root, IsHost, CADriver and CAAttrs over the three kinds of FS: the
// host's, a directory (New) and an fs.FS (NewFS).
func TestDriverAndAttrs(t *testing.T) {
	var nilFS *FS
	if nilFS.Root() != DefaultRoot || !nilFS.IsHost() || !new(FS).IsHost() {
		t.Errorf("nil FS: root %q, host %v", nilFS.Root(), nilFS.IsHost())
	}

	dir := t.TempDir()
	dev := filepath.Join(dir, "class/infiniband/mlx5_0")
	drv := filepath.Join(dir, "bus/pci/drivers/mlx5_core")
	for _, d := range []string{filepath.Join(dev, "device"), drv, filepath.Join(dir, "class/infiniband/rxe0")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(drv, filepath.Join(dev, "device", "driver")); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"node_type": "1: CA\n", "node_guid": "0002:c903:0000:0001\n", "sys_image_guid": "0002:c903:0000:0001\n"} {
		if err := os.WriteFile(filepath.Join(dev, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	onDisk, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	mapped := NewFS(fstest.MapFS{
		"class/infiniband/mlx5_0/node_type":      {Data: []byte("1: CA\n")},
		"class/infiniband/mlx5_0/node_guid":      {Data: []byte("0002:c903:0000:0001\n")},
		"class/infiniband/mlx5_0/sys_image_guid": {Data: []byte("0002:c903:0000:0001\n")},
		"class/infiniband/mlx5_0/device/driver":  {Data: []byte("../../../bus/pci/drivers/mlx5_core"), Mode: fs.ModeSymlink},
		"class/infiniband/rxe0/node_type":        {Data: []byte("1: CA\n")},
	})
	if onDisk.Root() != dir || onDisk.IsHost() || mapped.Root() != "" || mapped.IsHost() {
		t.Errorf("roots %q %v, %q %v", onDisk.Root(), onDisk.IsHost(), mapped.Root(), mapped.IsHost())
	}
	for name, f := range map[string]*FS{"New": onDisk, "NewFS": mapped} {
		if d, err := f.CADriver("mlx5_0"); err != nil || d != "mlx5_core" {
			t.Errorf("%s: CADriver(mlx5_0) = %q, %v", name, d, err)
		}
		for _, ca := range []string{"rxe0", "nosuch", "..", ""} {
			if _, err := f.CADriver(ca); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: CADriver(%q) = %v, want ErrNotExist", name, ca, err)
			}
		}
		ca, err := f.CAAttrs("mlx5_0")
		if err != nil || ca.NodeType != rdma.NodeCA || ca.NodeGUID != 0x0002c90300000001 || ca.Ports != nil {
			t.Errorf("%s: CAAttrs = %+v, %v", name, ca, err)
		}
		if _, err := f.CAAttrs("nosuch"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: CAAttrs(nosuch) = %v, want ErrNotExist", name, err)
		}
	}
}
