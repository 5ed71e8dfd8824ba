package uverbs

import (
	"encoding/binary"
	"errors"
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
)

func TestMain(m *testing.M) { os.Exit(systest.Main(m)) }

// bed is a sysfs fixture with fake kernels behind the device nodes.
type bed struct {
	opts *Options
	devs map[string]*fakekernel.Verbs
}

// newBed builds a sysfs tree for devs (uverbs0, uverbs1, … in order) and
// routes opens of their nodes to the fake kernels.
func newBed(t testing.TB, devs ...*fakekernel.Verbs) *bed {
	t.Helper()
	root := t.TempDir()
	b := &bed{devs: map[string]*fakekernel.Verbs{}}
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	class := filepath.Join(root, "class", "infiniband_verbs")
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
		dev := filepath.Join(root, "class", "infiniband", v.Name)
		write(filepath.Join(dev, "node_type"), "1: CA\n")
		var g [8]byte
		binary.LittleEndian.PutUint64(g[:], v.Attr.Base.NodeGuid)
		write(filepath.Join(dev, "node_guid"), fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]))
		write(filepath.Join(dev, "sys_image_guid"), fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]))
		if v.DriverID == abi.RDMA_DRIVER_MLX5 {
			drv := filepath.Join(root, "bus", "pci", "drivers", "mlx5_core")
			os.MkdirAll(drv, 0o755)
			os.MkdirAll(filepath.Join(dev, "device"), 0o755)
			if err := os.Symlink(drv, filepath.Join(dev, "device", "driver")); err != nil {
				t.Fatal(err)
			}
		}
		paths[filepath.Join("/dev/infiniband", node)] = v
		b.devs[v.Name] = v
	}
	b.opts = &Options{Sysfs: fsAt(t, root), Opener: verbs.NewOpener(func(path string) (*sys.FD, error) {
		v := paths[path]
		if v == nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: syscall.ENOENT}
		}
		return v.Kernel().Open(), nil
	})}
	return b
}

func rxe0() *fakekernel.Verbs {
	return fakekernel.RXE("rxe0", 0xacade8fffe375f42, [4]byte{10, 77, 0, 1})
}

func rxe1() *fakekernel.Verbs {
	return fakekernel.RXE("rxe1", 0xacdf59fffef0895d, [4]byte{10, 77, 0, 2})
}

// open opens name on the bed; the context is closed with the test.
func (b *bed) open(t testing.TB, name string) *Context {
	t.Helper()
	c, err := Open(name, b.opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if n := b.devs[name].Kernel().OpenFiles(); n != 0 {
			t.Errorf("%d files of %s still open", n, name)
		}
	})
	return c
}

func wantErrno(t testing.TB, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an *uverbs.Error", err)
	}
}

type fakeVerbs = fakekernel.Verbs

// fsAt returns the sysfs tree at root (a fixture or a test's directory).
func fsAt(t testing.TB, root string) *sysfs.FS {
	t.Helper()
	fs, err := sysfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
