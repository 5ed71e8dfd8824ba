package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
)

// DefaultRoot is where sysfs is mounted.
const DefaultRoot = "/sys"

// Paths of the class directories under the root.
const (
	classInfiniBand = "class/infiniband"
	classVerbs      = "class/infiniband_verbs"
	classMad        = "class/infiniband_mad"
)

// FS reads the RDMA part of a sysfs tree. Its methods are safe for
// concurrent use; every call reads the files afresh (nothing is cached).
// The zero FS (and a nil *FS) reads the running system's, [DefaultRoot].
type FS struct {
	fsys   fs.FS
	root   string // shown in error messages; empty for NewFS
	osRoot string // the directory files are read from through the seam; empty for NewFS
	// confined: paths under osRoot are resolved inside it (resolveIn)
	// before the seam reads them; every root but the running system's.
	confined bool
	// limit bounds the descriptors the counter sets hold (WithFileLimit).
	limit *FileLimit
}

// New returns an FS reading the sysfs tree mounted at root ("" means
// [DefaultRoot]). Tests and tools point root at a copy of the tree, such as
// the fixtures in this package's testdata. Such a tree is never left: its
// symbolic links are resolved inside root, as openat2(2)'s
// RESOLVE_IN_ROOT does (an absolute target starts again at root, ".."
// stops at it); /sys itself is read as the kernel resolves it. The error
// matches os.ErrNotExist when root does not exist.
func New(root string) (*FS, error) {
	if root == "" {
		root = DefaultRoot
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, errs.New("open sysfs", "", err)
	}
	if !fi.IsDir() {
		return nil, errs.New("open sysfs", "", &fs.PathError{Op: "open", Path: root, Err: syscall.ENOTDIR})
	}
	if confinedRoot(root) {
		return &FS{fsys: inRootFS{root: root}, root: root, osRoot: root, confined: true}, nil
	}
	return &FS{fsys: os.DirFS(root), root: root, osRoot: root}, nil
}

// NewFS returns an FS reading the tree fsys, whose root stands for /sys
// (it holds class/infiniband, class/infiniband_verbs and
// class/infiniband_mad). With an [testing/fstest.MapFS] other packages can
// test their use of this package without files on disk.
func NewFS(fsys fs.FS) *FS { return &FS{fsys: fsys} }

var defaultFS = os.DirFS(DefaultRoot)

// files returns the tree to read: fsys, or DefaultRoot's for the zero FS.
func (f *FS) files() fs.FS {
	if f == nil || f.fsys == nil {
		return defaultFS
	}
	return f.fsys
}

// osRoot0 returns the directory of the running system's tree that reads go
// to through the seam, or "" when the tree is an fs.FS given to NewFS.
func (f *FS) osRoot0() string {
	if f == nil || f.fsys == nil {
		return DefaultRoot
	}
	return f.osRoot
}

// open opens rel for repeated reading, refusing anything but a regular
// file (sys.OpenFile, sys.OpenFS).
func (f *FS) open(rel string) (fs.File, error) {
	if root := f.osRoot0(); root != "" {
		p, err := f.phys(rel)
		if err != nil {
			return nil, f.fixPathErr(err, rel)
		}
		file, err := sys.OpenFile(root + "/" + p)
		if err != nil {
			return nil, f.fixPathErr(err, rel)
		}
		return file, nil
	}
	file, err := sys.OpenFS(f.fsys, rel)
	if err != nil {
		return nil, f.fixPathErr(err, rel)
	}
	return file, nil
}

// openIn is open of rel, the file name in a directory whose path under the
// root, resolved (f.phys), is physDir: on a confined root only name is
// resolved.
func (f *FS) openIn(physDir, rel, name string) (fs.File, error) {
	if !f.isConfined() {
		return f.open(rel)
	}
	p, err := resolveAt(f.osRoot, physDir, name)
	if err != nil {
		return nil, f.fixPathErr(err, rel)
	}
	file, err := sys.OpenFile(f.osRoot + "/" + p)
	if err != nil {
		return nil, f.fixPathErr(err, rel)
	}
	return file, nil
}

// display returns the path shown in messages for rel.
func (f *FS) display(rel string) string {
	if f == nil || f.fsys == nil {
		return DefaultRoot + "/" + rel
	}
	if f.root == "" {
		return rel
	}
	return strings.TrimSuffix(f.root, "/") + "/" + rel
}

// fixPathErr makes a *fs.PathError show the full path. A file the caller
// may not read (EACCES, EPERM) gets a hint naming it (permError).
func (f *FS) fixPathErr(err error, rel string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe = &fs.PathError{Op: pe.Op, Path: f.display(rel), Err: pe.Err}
	} else {
		pe = &fs.PathError{Op: "read", Path: f.display(rel), Err: err}
	}
	if errors.Is(pe.Err, syscall.EACCES) || errors.Is(pe.Err, syscall.EPERM) {
		return &permError{pe}
	}
	return pe
}

// permError is a sysfs file or directory the caller may not read. Its hint
// (errs.Hinter) names the file's permissions as the remedy: reading sysfs
// needs no capability, only the file's mode (the errno's generic hint speaks
// of CAP_NET_RAW and /dev/infiniband, which do not apply).
type permError struct{ pe *fs.PathError }

func (e *permError) Error() string { return e.pe.Error() }

// Unwrap returns the *fs.PathError (errors.As finds it, errors.Is its
// errno).
func (e *permError) Unwrap() error { return e.pe }

// Hint names the remedy.
func (e *permError) Hint() string {
	return "check the permissions of " + e.pe.Path + ", or run as a user who may read it"
}

// maxAttr is the most a sysfs attribute file holds (one page).
const maxAttr = sys.AttrMax

// readInto reads the file rel into buf and returns the bytes read, minus one
// trailing newline. The read is bounded (sys.ReadFile): a file that is not
// regular (a FIFO, a device node, a directory) or holds more than len(buf)
// bytes is an error naming it.
func (f *FS) readInto(rel string, buf []byte) ([]byte, error) {
	d := dir{f: f}
	return d.readInto(rel, buf)
}

// bufPool holds attribute-sized read buffers.
var bufPool sys.Spare[[maxAttr]byte]

// readString reads a whole attribute file, minus one trailing newline.
func (f *FS) readString(rel string) (string, error) {
	d := dir{f: f}
	return d.readString(rel)
}

// dir reads the files of one directory of the tree. On the running
// system's tree, once opened with [FS.openDir], it holds the directory
// open (sys.Dir) and opens each file relative to it, so that the kernel
// walks the directory's path once, not once a file: a port directory
// (class/infiniband/NAME, a symbolic link into /sys/devices, then
// ports/N) has ten attributes and a P_Key table; reading each by its
// whole path, as rdma-core does, costs about half as much again as
// reading it relative to the open directory (sys.Dir). The zero dir{f: f}
// is the root, read by path; so is every dir of an fs.FS.
//
// On a confined root (see resolveIn) the directory is opened at its path
// resolved inside the root (phys), and its files are read without
// following a link at the file's name (sys.Dir.ReadFileNoFollow): a file
// that is a link is resolved inside the root and read by that path.
type dir struct {
	f    *FS
	rel  string  // the directory relative to the root; "" for the root
	d    sys.Dir // open when on the running system's tree or a confined root
	open bool
	phys string // on a confined root: rel resolved inside it
}

// openDir opens the directory rel to read its files. On the running
// system's tree a directory that does not exist is an error here,
// matching os.ErrNotExist; on an fs.FS, at the first read in it.
func (f *FS) openDir(rel string) (dir, error) {
	root := f.osRoot0()
	if root == "" {
		return dir{f: f, rel: rel}, nil
	}
	phys := rel
	if f.isConfined() {
		var err error
		if phys, err = resolveIn(root, rel); err != nil {
			return dir{}, f.fixPathErr(err, rel)
		}
	}
	d, err := sys.OpenDir(root, phys)
	if err != nil {
		return dir{}, f.fixPathErr(err, rel)
	}
	return dir{f: f, rel: rel, d: d, open: true, phys: phys}, nil
}

// sub opens the directory name in d, as openDir does.
func (d *dir) sub(name string) (dir, error) {
	rel := d.relOf(name)
	if !d.open {
		return d.f.openDir(rel)
	}
	if d.f.isConfined() {
		phys, err := resolveAt(d.f.osRoot, d.phys, name)
		if err != nil {
			return dir{}, d.f.fixPathErr(err, rel)
		}
		sd, err := sys.OpenDir(d.f.osRoot, phys)
		if err != nil {
			return dir{}, d.f.fixPathErr(err, rel)
		}
		return dir{f: d.f, rel: rel, d: sd, open: true, phys: phys}, nil
	}
	sd, err := d.d.OpenDir(name)
	if err != nil {
		return dir{}, d.f.fixPathErr(err, rel)
	}
	return dir{f: d.f, rel: rel, d: sd, open: true}, nil
}

// close closes the directory, if open.
func (d *dir) close() {
	if d.open {
		d.d.Close()
		d.open = false
	}
}

// relOf returns the path of name in d relative to the root.
func (d *dir) relOf(name string) string {
	if d.rel == "" {
		return name
	}
	return d.rel + "/" + name
}

// readInto reads the file name in d into buf, as [FS.readInto] does.
func (d *dir) readInto(name string, buf []byte) ([]byte, error) {
	var b []byte
	var err error
	switch root := d.f.osRoot0(); {
	case d.open && d.f.isConfined():
		b, err = d.readConfined(name, buf)
	case d.open:
		b, err = d.d.ReadFile(name, buf)
	case root != "":
		var p string
		if p, err = d.f.phys(d.relOf(name)); err == nil {
			b, err = sys.ReadFileIn(root, p, buf)
		}
	default:
		b, err = sys.ReadFileFS(d.f.fsys, d.relOf(name), buf)
	}
	if err != nil {
		return nil, d.f.fixPathErr(err, d.relOf(name))
	}
	n := len(b)
	if n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return b, nil
}

// readConfined reads the file name in the open directory d of a confined
// root: by name when it is not a link (no allocation), else at its path
// resolved inside the root.
func (d *dir) readConfined(name string, buf []byte) ([]byte, error) {
	if !strings.Contains(name, "/") {
		b, err := d.d.ReadFileNoFollow(name, buf)
		var nr *sys.NotRegularError
		if !(errors.As(err, &nr) && nr.Mode&fs.ModeSymlink != 0) && !errors.Is(err, syscall.ELOOP) {
			return b, err
		}
	}
	phys, err := resolveAt(d.f.osRoot, d.phys, name)
	if err != nil {
		return nil, err
	}
	return sys.ReadFileIn(d.f.osRoot, phys, buf)
}

// readString reads the whole attribute file name in d, minus one trailing
// newline.
func (d *dir) readString(name string) (string, error) {
	buf := bufPool.Get()
	defer bufPool.Put(buf)
	b, err := d.readInto(name, buf[:])
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// names lists d, sorted.
func (d *dir) names() ([]string, error) {
	if !d.open {
		return d.f.readNames(d.rel)
	}
	names, err := d.d.Names()
	if err != nil {
		return nil, d.f.fixPathErr(err, d.rel)
	}
	return names, nil
}

// optString reads an optional text attribute of d: nil when the file does
// not exist.
func (d *dir) optString(name string) (*string, error) {
	s, err := d.readString(name)
	if err != nil {
		if isAbsent(err) {
			return nil, nil
		}
		return nil, err
	}
	return &s, nil
}

// optUint reads an optional "0x%x" or "%u" attribute of d: nil when the
// file does not exist.
func (d *dir) optUint(name string, bits int, want string) (*uint64, error) {
	s, err := d.readString(name)
	if err != nil {
		if isAbsent(err) {
			return nil, nil
		}
		return nil, err
	}
	v, ok := parseUint(s, bits)
	if !ok {
		return nil, parseErr(d.f.display(d.relOf(name)), s, want)
	}
	return &v, nil
}

// readDir lists a directory, sorted by name.
func (f *FS) readDir(rel string) ([]fs.DirEntry, error) {
	ents, err := fs.ReadDir(f.files(), rel)
	if err != nil {
		return nil, f.fixPathErr(err, rel)
	}
	return ents, nil
}

// readNames lists the names in a directory, sorted: sys.DirNames on the
// running system's tree (no fs.DirEntry per entry), fs.ReadDir's names on
// an fs.FS.
func (f *FS) readNames(rel string) ([]string, error) { return f.listNames(rel, false) }

// fileNames is readNames without the directory's subdirectories
// (sys.DirFileNames: getdents64's d_type, no stat).
func (f *FS) fileNames(rel string) ([]string, error) { return f.listNames(rel, true) }

func (f *FS) listNames(rel string, skipDirs bool) ([]string, error) {
	if root := f.osRoot0(); root != "" {
		list := sys.DirNames
		if skipDirs {
			list = sys.DirFileNames
		}
		p, err := f.phys(rel)
		if err != nil {
			return nil, f.fixPathErr(err, rel)
		}
		names, err := list(root, p)
		if err != nil {
			return nil, f.fixPathErr(err, rel)
		}
		return names, nil
	}
	ents, err := f.readDir(rel)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if !skipDirs || !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// exists reports whether rel exists; errors other than "does not exist"
// are returned.
func (f *FS) exists(rel string) (bool, error) {
	_, err := fs.Stat(f.files(), rel)
	if err == nil {
		return true, nil
	}
	if isAbsent(err) {
		return false, nil
	}
	return false, f.fixPathErr(err, rel)
}

// isAbsent reports whether err says the file does not exist.
func isAbsent(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// isEINVAL reports whether the read failed with EINVAL, the kernel's answer
// for gid_attrs of an empty GID slot and for a rate it cannot compute.
func isEINVAL(err error) bool { return errors.Is(err, syscall.EINVAL) }

// validName reports whether name can be a single directory entry, so that
// a caller-supplied CA name cannot reach outside class/infiniband.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// noSuchDevice is the cause for a name that cannot be a device name (empty,
// "." or "..", or with a slash): ENOENT, without looking.
func (f *FS) noSuchDevice(dir, name string) error {
	return &fs.PathError{Op: "open", Path: f.display(dir) + "/" + name, Err: syscall.ENOENT}
}

// optString reads an optional text attribute: nil when the file does not
// exist.
func (f *FS) optString(rel string) (*string, error) {
	d := dir{f: f}
	return d.optString(rel)
}

// optUint reads an optional "0x%x" or "%u" attribute: nil when the file
// does not exist.
func (f *FS) optUint(rel string, bits int, want string) (*uint64, error) {
	d := dir{f: f}
	return d.optUint(rel, bits, want)
}
