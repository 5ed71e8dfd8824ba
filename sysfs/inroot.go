package sysfs

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/internal/errs"
)

// A root other than the running system's /sys is read confined to it: a
// path under it is resolved in Go, component by component, the way
// openat2(2) resolves with RESOLVE_IN_ROOT: a symbolic link's absolute
// target starts again at the root, and ".." at the root stays there. A
// fixture tree whose rate is a link to /etc/passwd, or whose ports/ is a
// link to ../../../../etc, is read as the tree's own etc/passwd or etc (not
// there: os.ErrNotExist), never the host's files.
//
// The running system's tree (root "" or "/sys") is read as the kernel
// resolves it: sysfs (kernfs) holds only directories, attributes and
// symbolic links to its own nodes (fs/kernfs/symlink.c, relative links such
// as class/infiniband/X -> ../../devices/...), which resolve inside /sys
// with or without confinement (TestResolveInRootHostSys).
//
// The confinement is of the tree's contents as read: a tree changed while
// it is read (a directory swapped for a link between the resolution and the
// open) is not defended against; the tree is the caller's.

// maxLinks is the kernel's MAXSYMLINKS: more links on one path is ELOOP.
const maxLinks = 40

// confinedRoot reports whether a tree at root (as given to New) is read
// confined to it: every root but the running system's /sys.
func confinedRoot(root string) bool {
	return filepath.Clean(root) != DefaultRoot
}

// resolveIn returns rel (a slash-separated path relative to root) with its
// symbolic links resolved inside root, as a path relative to root without
// links ("." for the root itself). The errors are *fs.PathError values
// naming rel: the errno of a component that cannot be looked at (ENOENT,
// EACCES, ENOTDIR) or ELOOP for more than maxLinks links.
func resolveIn(root, rel string) (string, error) { return resolveAt(root, "", rel) }

// resolveAt is resolveIn of base+"/"+rel where base is already resolved
// (a path relative to root without links, as resolveIn returns, or ""):
// only rel's components are looked at. It allocates a path and a lstat a
// component, and a string a link.
func resolveAt(root, base, rel string) (string, error) {
	buf := make([]byte, 0, len(root)+len(base)+len(rel)+16)
	buf = append(buf, root...)
	rootLen := len(buf)
	if base != "" && base != "." {
		buf = append(append(buf, '/'), base...)
	}
	todo, links := rel, 0
	for todo != "" {
		c := todo
		if i := strings.IndexByte(todo, '/'); i >= 0 {
			c, todo = todo[:i], todo[i+1:]
		} else {
			todo = ""
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if len(buf) > rootLen {
				buf = buf[:rootLen+bytes.LastIndexByte(buf[rootLen:], '/')]
			}
			continue
		}
		n := len(buf)
		buf = append(append(buf, '/'), c...)
		p := string(buf)
		fi, err := os.Lstat(p)
		if err != nil {
			return "", &fs.PathError{Op: "stat", Path: rel, Err: underlying(err)}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if todo != "" && !fi.IsDir() {
				return "", &fs.PathError{Op: "open", Path: rel, Err: syscall.ENOTDIR}
			}
			continue
		}
		if links++; links > maxLinks {
			return "", &fs.PathError{Op: "open", Path: rel, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", &fs.PathError{Op: "open", Path: rel, Err: underlying(err)}
		}
		buf = buf[:n]
		if strings.HasPrefix(target, "/") {
			buf = buf[:rootLen] // re-rooted: the tree's root, not the host's
		}
		if todo != "" {
			target += "/" + todo
		}
		todo = target
	}
	if len(buf) == rootLen {
		return ".", nil
	}
	return string(buf[rootLen+1:]), nil
}

// underlying returns the errno inside an *fs.PathError, or err.
func underlying(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// phys returns the path to hand the seam for rel: rel itself on the running
// system's tree and on an fs.FS, rel resolved inside the root on a confined
// tree (see resolveIn).
func (f *FS) phys(rel string) (string, error) {
	if !f.isConfined() {
		return rel, nil
	}
	return resolveIn(f.osRoot, rel)
}

// inRootFS is the fs.FS of a confined root: os.DirFS's, with every name
// resolved inside the root first.
type inRootFS struct{ root string }

func (r inRootFS) resolve(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	p, err := resolveIn(r.root, name)
	if err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: underlying(err)}
	}
	return r.root + "/" + p, nil
}

// Open opens name, resolved inside the root.
func (r inRootFS) Open(name string) (fs.File, error) {
	p, err := r.resolve("open", name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: underlying(err)}
	}
	return f, nil
}

// Stat stats name, resolved inside the root.
func (r inRootFS) Stat(name string) (fs.FileInfo, error) {
	p, err := r.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: underlying(err)}
	}
	return namedInfo{fi, path.Base(name)}, nil
}

// ReadDir lists name, resolved inside the root. The entries' types are
// lstat's: a link in the listing is a link.
func (r inRootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := r.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: underlying(err)}
	}
	return ents, nil
}

// namedInfo is a FileInfo under the name it was asked by (the link's, not
// its target's).
type namedInfo struct {
	fs.FileInfo
	name string
}

func (n namedInfo) Name() string { return n.name }

// ReadAttr reads the attribute file rel, a slash-separated path under the
// root (such as "class/infiniband/mlx5_0/ports/1/rate"), as this package's
// readers do: bounded to a page, a regular file only, its links resolved
// inside the root (see [New]), minus one trailing newline. It is for tools
// that print a file as it is, like ibstatus's cat. Errors are *Error
// values naming the file.
func (f *FS) ReadAttr(rel string) (string, error) {
	s, err := f.readString(rel)
	if err != nil {
		return "", errs.New("read attribute", "", err)
	}
	return s, nil
}

// DirNames lists the directory rel under the root, sorted, its links
// resolved inside the root. The error matches os.ErrNotExist when rel does
// not exist and syscall.ENOTDIR when it is not a directory.
func (f *FS) DirNames(rel string) ([]string, error) {
	names, err := f.readNames(rel)
	if err != nil {
		return nil, errs.New("list directory", "", err)
	}
	return names, nil
}

// isConfined reports whether f reads a confined root (see resolveIn); a
// nil or zero FS reads the running system's /sys, which is not.
func (f *FS) isConfined() bool { return f != nil && f.confined }
