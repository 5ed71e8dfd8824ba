// Package verbstest opens uverbs contexts on the fake kernel
// (internal/testmodel/fakekernel) for the unit tests of the packages built on uverbs
// (counters, flow, cmd/purerdma): a sysfs tree naming the fake devices, and
// uverbs options whose device files are the fakes.
package verbstest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/sys/systest"
	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
	"github.com/purerdma/rdma/internal/verbs"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/uverbs"
)

// Bed is a sysfs tree with fake kernels behind the device nodes.
type Bed struct {
	// Root is the sysfs root (class/infiniband, class/infiniband_verbs).
	Root string
	// Opts opens the devices of the tree through their fakes.
	Opts *uverbs.Options
	// Devs are the fakes by device name.
	Devs map[string]*fakekernel.Verbs
	// AllocFree makes opens use fakekernel's OpenAllocFree (counters
	// reads that do not allocate).
	AllocFree bool
}

// New builds the tree for devs (uverbs0, uverbs1, … in order): for each,
// class/infiniband_verbs/uverbsN/{ibdev,abi_version},
// class/infiniband/NAME/{node_type,node_guid}, the PCI driver link of an
// mlx5 device, and ports/N/{state,link_layer} for every port.
func New(t testing.TB, devs ...*fakekernel.Verbs) *Bed {
	t.Helper()
	b := &Bed{Root: t.TempDir(), Devs: map[string]*fakekernel.Verbs{}}
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	class := filepath.Join(b.Root, "class", "infiniband_verbs")
	write(filepath.Join(class, "abi_version"), "6\n")
	paths := map[string]*fakekernel.Verbs{}
	for i, v := range devs {
		node := fmt.Sprintf("uverbs%d", i)
		abiv := "2"
		if v.DriverID == abi.RDMA_DRIVER_MLX5 {
			abiv = "1"
		}
		write(filepath.Join(class, node, "ibdev"), v.Name+"\n")
		write(filepath.Join(class, node, "abi_version"), abiv+"\n")
		dev := filepath.Join(b.Root, "class", "infiniband", v.Name)
		write(filepath.Join(dev, "node_type"), "1: CA\n")
		var g [8]byte
		binary.LittleEndian.PutUint64(g[:], v.Attr.Base.NodeGuid)
		write(filepath.Join(dev, "node_guid"), fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]))
		write(filepath.Join(dev, "sys_image_guid"), fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]))
		for p := range v.Ports {
			pd := filepath.Join(dev, "ports", fmt.Sprint(p+1))
			write(filepath.Join(pd, "state"), "4: ACTIVE\n")
			write(filepath.Join(pd, "phys_state"), "5: LinkUp\n")
			write(filepath.Join(pd, "link_layer"), "Ethernet\n")
		}
		if v.DriverID == abi.RDMA_DRIVER_MLX5 {
			drv := filepath.Join(b.Root, "bus", "pci", "drivers", "mlx5_core")
			if err := os.MkdirAll(drv, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dev, "device"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(drv, filepath.Join(dev, "device", "driver")); err != nil {
				t.Fatal(err)
			}
		}
		paths[filepath.Join("/dev/infiniband", node)] = v
		b.Devs[v.Name] = v
	}
	fs, err := sysfs.New(b.Root)
	if err != nil {
		t.Fatal(err)
	}
	b.Opts = &uverbs.Options{Sysfs: fs, Opener: verbs.NewOpener(func(path string) (*sys.FD, error) {
		v := paths[path]
		if v == nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: syscall.ENOENT}
		}
		if b.AllocFree {
			return v.OpenAllocFree(), nil
		}
		return v.Kernel().Open(), nil
	})}
	return b
}

// Open opens the device called name; the context is closed with the test,
// which then fails if more files of the device are open than before Open.
func (b *Bed) Open(t testing.TB, name string) *uverbs.Context {
	t.Helper()
	before := b.Devs[name].Kernel().OpenFiles()
	c, err := uverbs.Open(name, b.Opts)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
		if n := b.Devs[name].Kernel().OpenFiles(); n > before {
			t.Errorf("%d files of %s still open, %d before", n, name, before)
		}
	})
	return c
}

// MLX5 returns the fake mlx5 device mlx5_0 with CAP_NET_RAW granted.
func MLX5() *fakekernel.Verbs {
	v := fakekernel.MLX5("mlx5_0")
	v.NetRaw = true
	return v
}

// RXE returns the fake rxe device rxe0.
func RXE() *fakekernel.Verbs {
	return fakekernel.RXE("rxe0", 0xacade8fffe375f42, [4]byte{10, 77, 0, 1})
}

// RawQP creates a PD, a CQ and a receive-only RAW_PACKET QP on c, what a
// flow steers to.
func RawQP(t testing.TB, c *uverbs.Context) *uverbs.QP {
	return QP(t, c, uverbs.QPTypeRawPacket)
}

// QP creates a PD, a CQ and a QP of type typ on c.
func QP(t testing.TB, c *uverbs.Context, typ uverbs.QPType) *uverbs.QP {
	t.Helper()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	qcap := uverbs.QPCap{MaxRecvWR: 16, MaxRecvSGE: 1}
	if typ != uverbs.QPTypeRawPacket {
		qcap.MaxSendWR, qcap.MaxSendSGE = 16, 1
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: typ, SendCQ: cq, RecvCQ: cq, Cap: qcap})
	if err != nil {
		t.Fatal(err)
	}
	return qp
}

// TestMain runs the tests and fails when a descriptor leaked.
func TestMain(m *testing.M) int { return systest.Main(m) }
