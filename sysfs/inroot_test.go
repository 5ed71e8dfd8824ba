package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// escapeTree is the mlx5-ib fixture with links that leave the root when
// followed as the host resolves them: the port's rate is a link to
// /etc/passwd, and a second device, esc, has its ports/ a link to
// ../../../../../../../../../../etc (far enough up to reach the host's /etc
// from any temporary directory). The tree has its own etc/: etc/passwd holds
// a rate, and etc/1 is a link to the port, so that the links resolved in the
// root read the tree's files, which a test can tell from the host's.
func escapeTree(t *testing.T) string {
	t.Helper()
	root := copyTree(t, "testdata/mlx5-ib")
	dev, err := filepath.EvalSymlinks(filepath.Join(root, "class/infiniband/mlx5_0"))
	if err != nil {
		t.Fatal(err)
	}
	rate := filepath.Join(dev, "ports/1/rate")
	if err := os.Remove(rate); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", rate); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("25 Gb/sec (1X EDR)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// esc: a device of its own (a directory, not a link) whose ports/
	// climbs out of the tree.
	esc := filepath.Join(root, "class/infiniband/esc")
	if err := os.MkdirAll(esc, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"node_type", "node_guid", "sys_image_guid"} {
		b, err := os.ReadFile(filepath.Join(dev, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(esc, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(strings.Repeat("../", 10)+"etc", filepath.Join(esc, "ports")); err != nil {
		t.Fatal(err)
	}
	// The tree's etc/1: port 1, its rate a plain file.
	if err := os.Symlink("../class/infiniband/mlx5_0/ports/1", filepath.Join(root, "etc/1")); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestReadsStayInRoot: a root given to New is never left: an absolute link
// (rate -> /etc/passwd) starts again at the root, and "../" past the root
// stays at it, as openat2's RESOLVE_IN_ROOT does, so the tree's own
// etc/passwd and etc/ are read, not the host's.
func TestReadsStayInRoot(t *testing.T) {
	root := escapeTree(t)
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Port("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rate == nil || p.Rate.Mbps != 25000 {
		t.Errorf("rate -> /etc/passwd read %+v, want the tree's etc/passwd (25 Gb/sec)", p.Rate)
	}
	r, err := p.OpenStatus()
	if err != nil {
		t.Fatal(err)
	}
	var st PortStatus
	if err := r.Read(&st); err != nil || st.Rate.Mbps != 25000 {
		t.Errorf("PortStatusReader through rate -> /etc/passwd: %+v, %v; want the tree's etc/passwd", st.Rate, err)
	}
	r.Close()

	// ports -> ../../../../../../../../../../etc: the tree's etc/, whose
	// only entry, once passwd is gone, is the port 1; the host's /etc
	// would not parse.
	if err := os.Remove(filepath.Join(root, "etc/passwd")); err != nil {
		t.Fatal(err)
	}
	ca, err := f.CA("esc")
	if err != nil {
		t.Fatalf("CA(esc) with ports -> ../…/etc: %v", err)
	}
	if len(ca.Ports) != 1 || ca.Ports[0].Number != 1 {
		t.Errorf("CA(esc) ports = %+v, want the tree's etc/1", ca.Ports)
	}

	// Without the tree's etc/ the links lead nowhere: not the host's files.
	if err := os.RemoveAll(filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	p, err = f.Port("mlx5_0", 1)
	if err != nil || p.Rate != nil {
		t.Errorf("rate -> /etc/passwd, no etc/ in the tree: rate %+v, %v; want none", p.Rate, err)
	}
	if _, err := f.CA("esc"); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "class/infiniband/esc/ports") {
		t.Errorf("CA(esc), no etc/ in the tree: %v, want os.ErrNotExist naming its ports", err)
	}
	if _, err := f.readString("class/infiniband/mlx5_0/ports/1/rate"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading rate -> /etc/passwd: %v, want os.ErrNotExist", err)
	}
	if names, err := f.readNames("class/infiniband/esc/ports"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("listing ports -> ../…/etc: %v %v, want os.ErrNotExist", names, err)
	}
	if ok, err := f.exists("class/infiniband/esc/ports"); ok || err != nil {
		t.Errorf("exists(ports -> ../…/etc) = %v, %v; want false", ok, err)
	}
}

// TestResolveIn: the resolution of paths under a root, link by link.
func TestResolveIn(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b", "devices/x", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a/b/f", "devices/x/attr", "etc/passwd"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"a/abs":   "/etc/passwd",
		"a/up":    "../../../../../etc",
		"a/dev":   "../devices/x",
		"a/loop":  "loop",
		"a/absup": "/../../etc",
		"a/chain": "dev",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		rel, want string
		err       error
	}{
		{"a/b/f", "a/b/f", nil},
		{"a/abs", "etc/passwd", nil},
		{"a/up/passwd", "etc/passwd", nil},
		{"a/dev/attr", "devices/x/attr", nil},
		{"a/chain/attr", "devices/x/attr", nil},
		{"a/absup/passwd", "etc/passwd", nil},
		{"../../a/b/f", "a/b/f", nil},
		{"a/..", ".", nil},
		{"a/loop", "", syscall.ELOOP},
		{"a/nope/f", "", syscall.ENOENT},
		{"a/b/f/g", "", syscall.ENOTDIR},
	} {
		got, err := resolveIn(root, c.rel)
		if got != c.want || (c.err == nil) != (err == nil) || (c.err != nil && !errors.Is(err, c.err)) {
			t.Errorf("resolveIn(%q) = %q, %v; want %q, %v", c.rel, got, err, c.want, c.err)
		}
		var pe *fs.PathError
		if err != nil && (!errors.As(err, &pe) || pe.Path != c.rel) {
			t.Errorf("resolveIn(%q): error %v does not name the path", c.rel, err)
		}
	}
}

// TestResolveInRootHostSys: sysfs' own links are relative and stay in /sys,
// so the running system's tree reads the same confined or not; New of
// "/sys" (and of "") is not confined.
func TestResolveInRootHostSys(t *testing.T) {
	for _, root := range []string{"", "/sys", "/sys/", "/sys/."} {
		if root == "" {
			root = DefaultRoot
		}
		if confinedRoot(root) {
			t.Errorf("confinedRoot(%q) = true, want the host's /sys read as the kernel resolves it", root)
		}
	}
	if !confinedRoot("testdata/mlx5-ib") || !confinedRoot("/") {
		t.Error("a fixture root is not confined")
	}
	const rel = "class/net/lo/mtu"
	want, err := filepath.EvalSymlinks("/sys/" + rel)
	if err != nil {
		t.Skipf("no %s here: %v", "/sys/"+rel, err)
	}
	got, err := resolveIn("/sys", rel)
	if err != nil || "/sys/"+got != want {
		t.Errorf("resolveIn(/sys, %s) = %q, %v; want %s", rel, got, err, want)
	}
	// The nil FS (the running system's) reads through an open directory
	// and by path, as before.
	var nilFS *FS
	d, err := nilFS.openDir("class/net/lo")
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if s, err := d.readString("mtu"); err != nil || s == "" {
		t.Errorf("nil FS, class/net/lo/mtu through the directory: %q, %v", s, err)
	}
	if s, err := nilFS.ReadAttr(rel); err != nil || s == "" {
		t.Errorf("nil FS ReadAttr(%s): %q, %v", rel, s, err)
	}
}

// TestDanglingDevice: a class/infiniband entry that is a link to nothing
// is reported by discovery as a *DanglingLinkError naming the link and its
// target (matching os.ErrNotExist), on a confined root and on a root read
// as the kernel resolves it, by CAs, CA and ReadCAs.
func TestDanglingDevice(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	if err := os.MkdirAll(filepath.Join(root, "class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	const target = "../../devices/nowhere/X"
	if err := os.Symlink(target, filepath.Join(root, "class/infiniband/X")); err != nil {
		t.Fatal(err)
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	unconfined := &FS{fsys: os.DirFS(root), root: root, osRoot: root}
	for _, fsys := range []*FS{f, unconfined} {
		check := func(what string, err error) {
			t.Helper()
			var dl *DanglingLinkError
			if !errors.As(err, &dl) || dl.Target != target || dl.Path != root+"/class/infiniband/X" || !errors.Is(err, os.ErrNotExist) {
				t.Errorf("confined %v: %s: %v, want a *DanglingLinkError of class/infiniband/X -> %s", fsys.confined, what, err, target)
				return
			}
			if !strings.Contains(err.Error(), "class/infiniband/X is a dangling symbolic link: its target "+target+" does not exist") {
				t.Errorf("%s: message %q", what, err)
			}
		}
		cas, err := fsys.CAs()
		if len(cas) != 0 {
			t.Errorf("CAs read %d devices", len(cas))
		}
		check("CAs", err)
		_, err = fsys.CA("X")
		check("CA", err)
		_, errs, err := fsys.ReadCAs([]string{"X"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		check("ReadCAs", errs[0])
		// A device that is not there at all stays a plain "no such
		// device".
		if _, err := fsys.CA("Y"); !errors.Is(err, os.ErrNotExist) || errors.As(err, new(*DanglingLinkError)) {
			t.Errorf("CA(Y): %v", err)
		}
	}
}

// TestReadAttrDirNames: the exported path readers resolve inside the root
// too, and name what they could not read.
func TestReadAttrDirNames(t *testing.T) {
	root := escapeTree(t)
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := f.ReadAttr("class/infiniband/mlx5_0/ports/1/rate"); err != nil || s != "25 Gb/sec (1X EDR)" {
		t.Errorf("ReadAttr(rate -> /etc/passwd) = %q, %v; want the tree's etc/passwd", s, err)
	}
	if names, err := f.DirNames("class/infiniband/esc/ports"); err != nil || strings.Join(names, " ") != "1 passwd" {
		t.Errorf("DirNames(ports -> ../…/etc) = %v, %v; want the tree's etc: [1 passwd]", names, err)
	}
	if _, err := f.ReadAttr("class/infiniband/mlx5_0/nope"); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "class/infiniband/mlx5_0/nope") {
		t.Errorf("ReadAttr(nope) = %v", err)
	}
	if _, err := f.DirNames("class/infiniband/mlx5_0/node_type"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("DirNames(a file) = %v, want ENOTDIR", err)
	}
	var nilFS *FS
	if _, err := nilFS.ReadAttr("class/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("nil FS ReadAttr: %v", err)
	}
}
