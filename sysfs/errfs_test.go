package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/purerdma/rdma"
)

// errFS is a tree whose chosen files fail the way the kernel makes sysfs
// files fail: at open (EACCES for a file the caller may not read) or at
// read (EINVAL from a show function: an empty GID slot's gid_attrs, a rate
// with an invalid width, a PMA query the driver refused; EIO).
type errFS struct {
	fs.FS
	open map[string]syscall.Errno
	read map[string]syscall.Errno
}

func (e errFS) Open(name string) (fs.File, error) {
	if errno, ok := e.open[name]; ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errno}
	}
	f, err := e.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if errno, ok := e.read[name]; ok {
		return errFile{f, name, errno}, nil
	}
	return f, nil
}

type errFile struct {
	fs.File
	name  string
	errno syscall.Errno
}

func (f errFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: f.name, Err: f.errno}
}

func (f errFile) ReadAt([]byte, int64) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: f.name, Err: f.errno}
}

const rxe0Port = "class/infiniband/rxe0/ports/1/"

func TestInjectedErrno(t *testing.T) {
	skipInVM(t)
	rxe := os.DirFS("testdata/rxe-6.1")
	mlx := os.DirFS("testdata/mlx5-eth")
	const mlxPort = "class/infiniband/mlx5_0/ports/1/"

	t.Run("EACCES on an optional port file", func(t *testing.T) {
		f := NewFS(errFS{FS: rxe, open: map[string]syscall.Errno{rxe0Port + "lid": syscall.EACCES}})
		_, err := f.Port("rxe0", 1)
		if !errors.Is(err, os.ErrPermission) || !errors.Is(err, syscall.EACCES) {
			t.Fatalf("error %v does not match os.ErrPermission", err)
		}
		// The remedy is the file's permissions, not a capability:
		// reading sysfs needs none.
		if !strings.Contains(err.Error(), "(check the permissions of "+rxe0Port+"lid, or run as a user who may read it)") || strings.Contains(err.Error(), "CAP_NET_RAW") {
			t.Errorf("message %q does not name the file and its permissions as the remedy", err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != rxe0Port+"lid" {
			t.Errorf("error %v: no *fs.PathError naming the file", err)
		}
		if _, err := f.CAs(); !errors.Is(err, os.ErrPermission) {
			t.Errorf("CAs: %v, want os.ErrPermission", err)
		}
	})
	t.Run("EACCES on a hw counter", func(t *testing.T) {
		f := NewFS(errFS{FS: rxe, open: map[string]syscall.Errno{rxe0Port + "hw_counters/sent_pkts": syscall.EACCES}})
		p, err := f.Port("rxe0", 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.HwCounters(); !errors.Is(err, os.ErrPermission) {
			t.Errorf("HwCounters: %v, want os.ErrPermission", err)
		}
	})
	t.Run("EACCES on a PMA counter", func(t *testing.T) {
		f := NewFS(errFS{FS: mlx, open: map[string]syscall.Errno{mlxPort + "counters/symbol_error": syscall.EACCES}})
		p, err := f.Port("mlx5_0", 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Counters(); !errors.Is(err, os.ErrPermission) {
			t.Errorf("Counters: %v, want os.ErrPermission", err)
		}
	})
	t.Run("EINVAL from rate is absent", func(t *testing.T) {
		f := NewFS(errFS{FS: rxe, read: map[string]syscall.Errno{rxe0Port + "rate": syscall.EINVAL}})
		p, err := f.Port("rxe0", 1)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rate != nil {
			t.Errorf("Rate = %+v, want nil", *p.Rate)
		}
	})
	t.Run("EINVAL from gid_attrs is absent", func(t *testing.T) {
		f := NewFS(errFS{FS: rxe, read: map[string]syscall.Errno{
			rxe0Port + "gid_attrs/types/1": syscall.EINVAL,
			rxe0Port + "gid_attrs/ndevs/1": syscall.EINVAL,
		}})
		p, err := f.Port("rxe0", 1)
		if err != nil {
			t.Fatal(err)
		}
		gids, err := p.GIDs()
		if err != nil {
			t.Fatal(err)
		}
		if len(gids) != 2 || gids[1].Type != nil || gids[1].NetDev != nil || gids[0].Type == nil {
			t.Errorf("GIDs = %+v", gids)
		}
	})
	t.Run("EIO from gid_attrs is an error", func(t *testing.T) {
		f := NewFS(errFS{FS: rxe, read: map[string]syscall.Errno{rxe0Port + "gid_attrs/ndevs/0": syscall.EIO}})
		p, err := f.Port("rxe0", 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.GIDs(); !errors.Is(err, syscall.EIO) {
			t.Errorf("GIDs: %v, want EIO", err)
		}
	})
	t.Run("EINVAL from a PMA counter is absent", func(t *testing.T) {
		f := NewFS(errFS{FS: mlx, read: map[string]syscall.Errno{mlxPort + "counters/port_xmit_data": syscall.EINVAL}})
		p, err := f.Port("mlx5_0", 1)
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Counters()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c[CounterXmitData]; ok || len(c) != 20 {
			t.Errorf("Counters = %v, want port_xmit_data left out", c)
		}
	})
	t.Run("EIO from a hw counter in an open set", func(t *testing.T) {
		f := NewFS(errFS{FS: rxe, read: map[string]syscall.Errno{rxe0Port + "hw_counters/rcvd_pkts": syscall.EIO}})
		p, err := f.Port("rxe0", 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.OpenHwCounters()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		err = s.Read(map[string]uint64{})
		if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "rcvd_pkts") {
			t.Errorf("Read: %v, want EIO naming rcvd_pkts", err)
		}
	})
	t.Run("EACCES on a umad entry", func(t *testing.T) {
		f := NewFS(errFS{FS: rxe, open: map[string]syscall.Errno{"class/infiniband_mad/umad1/port": syscall.EACCES}})
		if _, err := f.CharDevs(); !errors.Is(err, os.ErrPermission) {
			t.Errorf("CharDevs: %v, want os.ErrPermission", err)
		}
	})
}

// TestPermission makes a file unreadable with chmod 000 in a copy of the
// rxe fixture. Root reads it anyway (CAP_DAC_OVERRIDE), so the test skips
// as root; TestInjectedErrno covers the same path with an injected EACCES,
// and TestBroken's EISDIR and ELOOP cases are unreadable for root too.
func TestPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which reads a mode-000 file; TestInjectedErrno covers EACCES as root")
	}
	skipInVM(t)
	root := copyTree(t, "testdata/rxe-6.1")
	file := filepath.Join(root, "devices/virtual/infiniband/rxe0/ports/1/lid")
	if err := os.Chmod(file, 0); err != nil {
		t.Fatal(err)
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Port("rxe0", 1)
	if !errors.Is(err, os.ErrPermission) {
		t.Fatalf("Port: %v, want os.ErrPermission", err)
	}
	if !strings.Contains(err.Error(), "ports/1/lid") {
		t.Errorf("message %q does not name the file", err)
	}
	if !strings.Contains(err.Error(), "check the permissions of "+root+"/class/infiniband/rxe0/ports/1/lid") || strings.Contains(err.Error(), "CAP_NET_RAW") {
		t.Errorf("message %q does not name the file's permissions as the remedy", err)
	}
	if _, err := f.Port("rxe1", 1); err != nil {
		t.Errorf("the other CA: %v", err)
	}
}

// copyTree copies a fixture, symlinks included, into a temporary directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "root")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestMapFS reads a tree held in memory, the way other packages can test
// their use of this one.
func TestMapFS(t *testing.T) {
	const ca = "class/infiniband/mlx5_3/"
	tree := fstest.MapFS{
		ca + "node_type":                       {Data: []byte("1: CA\n")},
		ca + "node_guid":                       {Data: []byte("0c42:a103:0016:054e\n")},
		ca + "sys_image_guid":                  {Data: []byte("0c42:a103:0016:054e\n")},
		ca + "ports/1/state":                   {Data: []byte("2: INIT\n")},
		ca + "ports/1/phys_state":              {Data: []byte("5: LinkUp\n")},
		ca + "ports/1/rate":                    {Data: []byte("2.5 Gb/sec (1X SDR)\n")},
		ca + "ports/1/hw_counters/lifespan":    {Data: []byte("10\n")},
		ca + "ports/1/hw_counters/out_of_seq":  {Data: []byte("7\n")},
		"class/infiniband_mad/umad3/ibdev":     {Data: []byte("mlx5_3\n")},
		"class/infiniband_mad/umad3/port":      {Data: []byte("1\n")},
		"class/infiniband_mad/abi_version":     {Data: []byte("5\n")},
		"class/infiniband_verbs/uverbs3/ibdev": {Data: []byte("mlx5_3\n")},
	}
	f := NewFS(tree)
	cas, err := f.CAs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cas) != 1 || len(cas[0].Ports) != 1 {
		t.Fatalf("CAs = %+v", cas)
	}
	p := cas[0].Ports[0]
	if p.State != rdma.PortInit || p.Rate.Mbps != 2500 || p.LID != nil || p.Umad == nil || p.Umad.Name != "umad3" || cas[0].Verbs.Name != "uverbs3" {
		t.Errorf("port %+v", p)
	}
	s, err := p.OpenHwCounters()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := map[string]uint64{}
	if err := s.Read(m); err != nil || len(m) != 1 || m["out_of_seq"] != 7 {
		t.Errorf("Read = %v, %v", m, err)
	}
	if _, err := f.CA("mlx5_4"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CA(mlx5_4): %v, want os.ErrNotExist", err)
	}
}
