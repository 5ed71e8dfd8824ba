package sysfs

import (
	"bytes"
	"io/fs"
	"strings"

	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
)

// CAWatch tells cheaply whether the RDMA devices changed, so that a caller
// that keeps what it read of them (open counter sets, say) reads them again
// only then: one open and getdents of class/infiniband, and no allocation
// while nothing changes. A device added, removed or renamed changes the
// directory's entries; so does one removed and added again under the same
// name (its entry gets a new inode number). A CAWatch is not safe for
// concurrent use.
type CAWatch struct {
	f     *FS
	pathz []byte
	prev  []byte
	cur   []byte
	read  bool
}

// WatchCAs returns a CAWatch of f's devices.
func (f *FS) WatchCAs() *CAWatch {
	w := &CAWatch{f: f}
	w.resolve()
	return w
}

// resolve sets pathz, the NUL-terminated path that snapshot lists, on the
// running system's tree or a root given to New; on a confined root (see
// resolveIn) class/infiniband is resolved inside it first, and until that
// succeeds (the directory may come later) snapshot tries again each call.
func (w *CAWatch) resolve() {
	f := w.f
	root := f.osRoot0()
	if root == "" {
		return
	}
	rel, err := f.phys(classInfiniBand)
	if err != nil {
		return
	}
	w.pathz = append([]byte(strings.TrimSuffix(root, "/")+"/"+rel), 0)
}

// Changed reports whether class/infiniband lists other entries than at the
// last call; the first call reports true. A missing class/infiniband (no
// RDMA stack) lists no entries. On error (the directory cannot be read) it
// reports true with the error, and the next call compares against an
// unknown state, reporting true again.
func (w *CAWatch) Changed() (bool, error) {
	if w == nil {
		return true, errNil("watch CAs")
	}
	cur, err := w.snapshot(w.cur)
	if err != nil {
		w.read = false
		return true, errs.New("watch CAs", "", err)
	}
	changed := !w.read || !bytes.Equal(cur, w.prev)
	w.prev, w.cur = cur, w.prev
	w.read = true
	return changed, nil
}

func (w *CAWatch) snapshot(buf []byte) ([]byte, error) {
	if w.pathz == nil && w.f.isConfined() {
		w.resolve()
	}
	if w.pathz == nil { // an fs.FS (or unresolved): its names, one per line
		ents, err := fs.ReadDir(w.f.files(), classInfiniBand)
		buf = buf[:0]
		if err != nil {
			if isAbsent(err) {
				return buf, nil
			}
			return buf, w.f.fixPathErr(err, classInfiniBand)
		}
		for _, e := range ents {
			buf = append(append(buf, e.Name()...), '\n')
		}
		return buf, nil
	}
	b, err := sys.Dirents(w.pathz, buf)
	if err != nil {
		if isAbsent(err) {
			return b[:0], nil
		}
		return b, w.f.fixPathErr(err, classInfiniBand)
	}
	return b, nil
}
