package sysfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
	"github.com/purerdma/rdma/sysfs"
)

// TestDirReadsMatchPathReads: an FS on a directory (New), which reads a
// device's and a port's files relative to their open directories
// (sys.Dir), and an FS on the same tree through fs.FS (NewFS), which reads
// each by its path, see the same devices and fail alike on a broken tree:
// a missing attribute, a FIFO in an attribute's place (refused, not
// blocked on), a missing P_Key directory, a device that does not exist.
func TestDirReadsMatchPathReads(t *testing.T) {
	root := t.TempDir()
	if err := sysfstest.Synthetic(root, 3, 2); err != nil {
		t.Fatal(err)
	}
	byDir, err := sysfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	byPath := sysfs.NewFS(os.DirFS(root))
	// Every directory opened is closed again, on errors too.
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip(err)
		}
		return len(ents)
	}
	before := fds()
	defer func() {
		if after := fds(); after != before {
			t.Errorf("%d descriptors open before the reads, %d after", before, after)
		}
	}()
	same := func(what string) {
		t.Helper()
		done := make(chan struct{})
		var a, b []*sysfs.CA
		var errA, errB error
		go func() {
			defer close(done)
			a, errA = byDir.CAs()
			b, errB = byPath.CAs()
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: CAs still blocked after 30 s", what)
		}
		if d := cmp.Diff(b, a, cmpopts.IgnoreUnexported(sysfs.CA{}, sysfs.Port{})); d != "" {
			t.Errorf("%s: New and NewFS differ (-NewFS +New):\n%s", what, d)
		}
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s: New says %v, NewFS %v", what, errA, errB)
		}
		// New names files by their whole path, NewFS relative to the
		// tree; the rest of the messages must agree.
		if errA != nil && strings.ReplaceAll(errA.Error(), root+"/", "") != errB.Error() {
			t.Errorf("%s: New says %q, NewFS %q", what, errA, errB)
		}
	}
	same("the whole tree")
	if cas, _ := byDir.CAs(); len(cas) != 3 || len(cas[2].Ports) != 2 || len(cas[2].Ports[1].PKeys) != 1 {
		t.Fatalf("CAs through New: %d devices, want 3 of 2 ports with one P_Key", len(cas))
	}

	dev := filepath.Join(root, "class/infiniband")
	if err := os.RemoveAll(filepath.Join(dev, "mlx5_0/ports/2/pkeys")); err != nil {
		t.Fatal(err)
	}
	same("no pkeys directory")
	if err := os.Remove(filepath.Join(dev, "mlx5_1/ports/1/state")); err != nil {
		t.Fatal(err)
	}
	same("a missing port attribute")
	fw := filepath.Join(dev, "mlx5_2/fw_ver")
	if err := os.Remove(fw); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fw, 0o644); err != nil {
		t.Fatal(err)
	}
	same("a FIFO as fw_ver")
	if _, err := byDir.CA("mlx5_2"); err == nil || !strings.Contains(err.Error(), "mlx5_2/fw_ver") || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("CA(mlx5_2) with a FIFO for fw_ver = %v, want a refusal naming the file", err)
	}
	for _, f := range []*sysfs.FS{byDir, byPath} {
		_, err := f.CA("nope")
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "class/infiniband/nope") {
			t.Errorf("CA(nope) = %v, want os.ErrNotExist naming the directory", err)
		}
		if _, err := f.Port("mlx5_0", 7); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "ports/7") {
			t.Errorf("Port(mlx5_0, 7) = %v, want os.ErrNotExist naming the port", err)
		}
	}
	if p, err := byDir.Port("mlx5_0", 2); err != nil || p.PKeys != nil || p.StateName != "ACTIVE" {
		t.Errorf("Port(mlx5_0, 2) without pkeys/ = %+v, %v", p, err)
	}
}
