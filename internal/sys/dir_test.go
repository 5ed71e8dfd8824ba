package sys

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirReadFile reads every kind of file of TestReadFileBounds relative
// to an open Dir: the same bounds and refusals, each error naming the
// file, nothing blocking.
func TestDirReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("exact", bytes.Repeat([]byte{'a'}, AttrMax))
	write("over", bytes.Repeat([]byte{'a'}, AttrMax+1))
	write("small", []byte("4: ACTIVE\n"))
	write("empty", nil)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("sub/inner", []byte("1\n"))
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", filepath.Join(dir, "loop")); err != nil {
		t.Fatal(err)
	}

	d, err := OpenDir(filepath.Dir(dir), filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.sysfs {
		t.Fatalf("a directory under %s taken for sysfs", dir)
	}
	buf := make([]byte, AttrMax)
	for _, c := range []boundsCase{
		{path: "exact", want: strings.Repeat("a", AttrMax), regular: true},
		{path: "small", want: "4: ACTIVE\n", regular: true},
		{path: "empty", want: "", regular: true},
		{path: "sub/inner", want: "1\n", regular: true},
		{path: "over", errno: syscall.EFBIG, regular: true},
		{path: "loop", errno: syscall.ELOOP, regular: true},
		{path: "missing", errno: syscall.ENOENT, regular: true},
		{path: "fifo"},
		{path: "zero"},
		{path: "sub"},
	} {
		checkBounded(t, c, func() ([]byte, error) { return d.ReadFile(c.path, buf) })
	}

	// Names twice: the second seeks back and lists the same.
	want := []string{"empty", "exact", "fifo", "loop", "over", "small", "sub", "zero"}
	for i := range 2 {
		names, err := d.Names()
		if err != nil || !slices.Equal(names, want) {
			t.Errorf("Names (call %d) = %q, %v; want %q", i+1, names, err, want)
		}
	}

	// A directory relative to d, and what is not one.
	sub, err := d.OpenDir("sub")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := sub.ReadFile("inner", buf); err != nil || string(b) != "1\n" {
		t.Errorf("sub.ReadFile(inner) = %q, %v", b, err)
	}
	sub.Close()
	for name, errno := range map[string]error{"small": syscall.ENOTDIR, "fifo": syscall.ENOTDIR, "missing": syscall.ENOENT} {
		if _, err := d.OpenDir(name); !errors.Is(err, errno) || !strings.Contains(err.Error(), name) {
			t.Errorf("OpenDir(%s) = %v, want %v naming it", name, err, errno)
		}
	}
	if _, err := d.ReadFile("a\x00b", buf); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadFile of a name with a NUL = %v, want EINVAL", err)
	}

	// Closed and zero Dirs: EBADF, and Close stays nil.
	var zero Dir
	closed, err := OpenDir("", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Dir{&zero, &closed} {
		if _, err := x.ReadFile("small", buf); !errors.Is(err, syscall.EBADF) {
			t.Errorf("ReadFile on a closed Dir = %v, want EBADF", err)
		}
		if _, err := x.OpenDir("sub"); !errors.Is(err, syscall.EBADF) {
			t.Errorf("OpenDir on a closed Dir = %v, want EBADF", err)
		}
		if _, err := x.Names(); !errors.Is(err, syscall.EBADF) {
			t.Errorf("Names on a closed Dir = %v, want EBADF", err)
		}
		if err := x.Close(); err != nil {
			t.Errorf("Close of a closed Dir = %v", err)
		}
	}
	if _, err := OpenDir(dir, "missing"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Errorf("OpenDir(missing) = %v, want ENOENT naming the path", err)
	}
}

// TestDirSysfsAllocatesNothing: under the running system's sysfs a Dir is
// opened, read and closed without an allocation, the stat left out.
func TestDirSysfsAllocatesNothing(t *testing.T) {
	if !underSysfs("/sys/kernel/uevent_seqnum") {
		t.Skip("/sys is not a sysfs mount here")
	}
	buf := make([]byte, AttrMax)
	allocs := testing.AllocsPerRun(100, func() {
		d, err := OpenDir("/sys", "kernel")
		if err != nil {
			t.Fatal(err)
		}
		if !d.sysfs {
			t.Fatal("/sys/kernel not taken for sysfs")
		}
		if b, err := d.ReadFile("uevent_seqnum", buf); err != nil || len(b) == 0 {
			t.Fatal(b, err)
		}
		d.Close()
	})
	if allocs != 0 {
		t.Errorf("OpenDir, ReadFile and Close under /sys allocate %.0f times, want 0", allocs)
	}
}

// BenchmarkDirRead compares reading sysfs attributes by their whole path
// (what rdma-core does) with reading them relative to their open
// directory, and what the directory's open and close cost.
func BenchmarkDirRead(b *testing.B) {
	const dir, name = "/sys/class/net/lo", "mtu"
	if _, err := os.Stat(dir + "/" + name); err != nil {
		b.Skip(err)
	}
	buf := make([]byte, AttrMax)
	b.Run("path", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadFileIn(dir, name, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dir", func(b *testing.B) {
		d, err := OpenDir("", dir)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		for b.Loop() {
			if _, err := d.ReadFile(name, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open-close", func(b *testing.B) {
		for b.Loop() {
			d, err := OpenDir("", dir)
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
}

// TestDirReadFileNoFollow: a regular file reads as with ReadFile; a link
// at the name is refused as a symbolic link (not followed), whatever it
// points at; ReadFile follows it.
func TestDirReadFileNoFollow(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rate"), []byte("100 Gb/sec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("rate", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir("", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var buf [AttrMax]byte
	if b, err := d.ReadFileNoFollow("rate", buf[:]); err != nil || string(b) != "100 Gb/sec\n" {
		t.Errorf("ReadFileNoFollow(rate) = %q, %v", b, err)
	}
	var nr *NotRegularError
	var pe *fs.PathError
	if _, err := d.ReadFileNoFollow("link", buf[:]); !errors.As(err, &nr) || nr.Mode&fs.ModeSymlink == 0 || !errors.As(err, &pe) || pe.Path != "link" {
		t.Errorf("ReadFileNoFollow(link) = %v, want a *NotRegularError of a symbolic link naming it", err)
	}
	if b, err := d.ReadFile("link", buf[:]); err != nil || string(b) != "100 Gb/sec\n" {
		t.Errorf("ReadFile(link) = %q, %v; want the target", b, err)
	}
	if _, err := d.ReadFileNoFollow("nope", buf[:]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFileNoFollow(nope) = %v, want ENOENT", err)
	}
}
