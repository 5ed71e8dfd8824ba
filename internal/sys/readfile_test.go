package sys

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"golang.org/x/sys/unix"
)

// TestReadFileBounds checks every kind of file the bounded readers meet in
// a broken tree: each regular file up to the bound reads whole, one byte
// more is EFBIG, and every non-regular file is refused with its path named,
// without blocking (a FIFO with no writer would block a plain open).
func TestReadFileBounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exact := write("exact", bytes.Repeat([]byte{'a'}, AttrMax))
	over := write("over", bytes.Repeat([]byte{'a'}, AttrMax+1))
	small := write("small", []byte("4: ACTIVE\n"))
	empty := write("empty", nil)
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}

	buf := make([]byte, AttrMax)
	for _, c := range []boundsCase{
		{path: exact, want: strings.Repeat("a", AttrMax), regular: true},
		{path: small, want: "4: ACTIVE\n", regular: true},
		{path: empty, want: "", regular: true},
		{path: over, errno: syscall.EFBIG, regular: true},
		{path: sparse, errno: syscall.EFBIG, regular: true},
		{path: loop, errno: syscall.ELOOP, regular: true},
		{path: filepath.Join(dir, "missing"), errno: syscall.ENOENT, regular: true},
		{path: fifo},
		{path: zero},
		{path: dir},
		{path: "/dev/null"},
	} {
		checkBounded(t, c, func() ([]byte, error) { return ReadFile(c.path, buf) })
		if c.regular && c.errno == nil {
			f, err := OpenFile(c.path)
			if err != nil {
				t.Errorf("OpenFile(%s): %v", c.path, err)
			} else {
				f.Close()
			}
		} else if !c.regular {
			if f, err := OpenFile(c.path); err == nil {
				f.Close()
				t.Errorf("OpenFile(%s) opened a non-regular file", c.path)
			}
		}
	}

	// ReadString with its pooled buffer.
	if s, err := ReadString(small); err != nil || s != "4: ACTIVE\n" {
		t.Errorf("ReadString = %q, %v", s, err)
	}
	if _, err := ReadString(over); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("ReadString(over) = %v, want EFBIG", err)
	}

	// The same through os.DirFS and a MapFS.
	dfs := os.DirFS(dir)
	for name, wantErr := range map[string]bool{"small": false, "over": true, "sparse": true, "fifo": true, "zero": true, "loop": true, ".": true} {
		_, err := ReadFileFS(dfs, name, buf)
		if (err != nil) != wantErr {
			t.Errorf("ReadFileFS(DirFS, %s) = %v, want error %v", name, err, wantErr)
		}
	}
	mfs := fstest.MapFS{
		"a":     {Data: []byte("x\n")},
		"big":   {Data: bytes.Repeat([]byte{'b'}, AttrMax+1)},
		"pipe":  {Mode: fs.ModeNamedPipe},
		"d/one": {Data: []byte("1")},
	}
	if b, err := ReadFileFS(mfs, "a", buf); err != nil || string(b) != "x\n" {
		t.Errorf("ReadFileFS(MapFS, a) = %q, %v", b, err)
	}
	for _, name := range []string{"big", "pipe", "d", "none"} {
		if _, err := ReadFileFS(mfs, name, buf); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("ReadFileFS(MapFS, %s) = %v, want an error naming it", name, err)
		}
	}
}

// TestReadFileAllocs pins what one bounded read of a small file costs.
func TestReadFileAllocs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(p, []byte("4: ACTIVE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, AttrMax)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ReadFile(p, buf); err != nil {
			t.Fatal(err)
		}
	})
	// The path is built on the stack and handed to stat and open as it is.
	if allocs != 0 {
		t.Errorf("ReadFile allocates %.0f times per call, want 0", allocs)
	}
}

// TestReadFileInSysfsAllocatesNothing: under the running system's sysfs
// ReadFileIn builds the path on the stack and opens it as it is.
func TestReadFileInSysfsAllocatesNothing(t *testing.T) {
	if !underSysfs("/sys/kernel/uevent_seqnum") {
		t.Skip("/sys is not a sysfs mount here")
	}
	buf := make([]byte, AttrMax)
	allocs := testing.AllocsPerRun(100, func() {
		if b, err := ReadFileIn("/sys/kernel", "uevent_seqnum", buf); err != nil || len(b) == 0 {
			t.Fatal(b, err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadFileIn under /sys allocates %.0f times per call, want 0", allocs)
	}
	long := strings.Repeat("x/", pathMax)
	if _, err := ReadFileIn("/sys/kernel", long, buf); err == nil || !strings.Contains(err.Error(), long) {
		t.Errorf("ReadFileIn of a path longer than the stack buffer: %v, want an error naming it", err)
	}
}

// TestReadFileSysfs reads under the running system's /sys, where ReadFile
// leaves the stat out: an attribute reads whole, a directory is EISDIR
// (from read(2) now rather than from the check), a missing file ENOENT.
func TestReadFileSysfs(t *testing.T) {
	if !underSysfs("/sys/kernel/uevent_seqnum") {
		t.Skip("/sys is not a sysfs mount here")
	}
	buf := make([]byte, AttrMax)
	b, err := ReadFile("/sys/kernel/uevent_seqnum", buf)
	if err != nil || len(b) == 0 || b[len(b)-1] != '\n' {
		t.Errorf("ReadFile(uevent_seqnum) = %q, %v; want a number and a newline", b, err)
	}
	if _, err := ReadFile("/sys/kernel/", buf); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("ReadFile(/sys/kernel/) = %v, want EISDIR", err)
	}
	if _, err := ReadFile("/sys/kernel/no-such-attribute", buf); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want ENOENT", err)
	}
	small := make([]byte, 1)
	if _, err := ReadFile("/sys/kernel/uevent_seqnum", small); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("ReadFile(uevent_seqnum, 1 byte) = %v, want EFBIG", err)
	}
}

// TestOpenFileReadAt: one pread per ReadAt, a short one ending in io.EOF;
// Stat says regular; reads after Close are fs.ErrClosed; a second Close is
// nil.
func TestOpenFileReadAt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "port_rcv_packets")
	if err := os.WriteFile(p, []byte("12345\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var buf [32]byte
	for i := 0; i < 2; i++ {
		if n, err := f.ReadAt(buf[:], 0); n != 6 || err != io.EOF || string(buf[:n]) != "12345\n" {
			t.Fatalf("ReadAt = %d %q, %v; want 6 bytes and io.EOF", n, buf[:n], err)
		}
	}
	if n, err := f.ReadAt(buf[:3], 1); n != 3 || err != nil || string(buf[:3]) != "234" {
		t.Errorf("ReadAt(3 at 1) = %d %q, %v", n, buf[:n], err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != 6 || fi.Name() != "port_rcv_packets" {
		t.Errorf("Stat = %v, %v", fi, err)
	}
	if n, err := f.Read(buf[:]); n != 6 || err != nil {
		t.Errorf("Read = %d, %v", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(buf[:], 0); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("ReadAt after Close = %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := OpenFile(filepath.Dir(p)); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("OpenFile(dir) = %v, want EISDIR", err)
	}
}

// TestReadFileInRefusesNUL: a NUL inside a path would make the kernel open
// the path up to it, another file; it is EINVAL, as unix.Open says.
func TestReadFileInRefusesNUL(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, AttrMax)
	if _, err := ReadFileIn(dir, "a\x00b", buf); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadFileIn(a NUL b) = %v, want EINVAL", err)
	}
	if _, err := ReadFileIn(dir+"\x00", "a", buf); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadFileIn(dir NUL, a) = %v, want EINVAL", err)
	}
	if _, err := DirNames(dir+"\x00x", ""); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("DirNames(dir NUL x) = %v, want EINVAL", err)
	}
}

// boundsCase is one file of the bounded readers' tests: what reading it
// gives, or the errno it fails with, or (regular false) a refusal as not a
// regular file.
type boundsCase struct {
	path    string
	want    string // contents, when it reads
	errno   error  // the errno errors.Is must match, when it fails
	regular bool   // false: a *NotRegularError
}

// checkBounded runs read, which must return within 30 s whatever the file
// (a FIFO with no writer would block a plain open), and checks what it
// returned against c; errors must name c.path.
func checkBounded(t *testing.T, c boundsCase, read func() ([]byte, error)) {
	t.Helper()
	done := make(chan struct{})
	var got []byte
	var err error
	go func() {
		defer close(done)
		got, err = read()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("reading %s still blocked after 30 s", c.path)
	}
	switch {
	case !c.regular:
		var nr *NotRegularError
		if !errors.As(err, &nr) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("reading %s: %v, want a NotRegularError naming the file", c.path, err)
		}
	case c.errno != nil:
		if !errors.Is(err, c.errno) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("reading %s: %v, want %v naming the file", c.path, err, c.errno)
		}
	case err != nil || string(got) != c.want:
		t.Errorf("reading %s: %q, %v; want %d bytes", c.path, got, err, len(c.want))
	}
}
