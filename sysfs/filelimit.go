package sysfs

import (
	"path"
	"path/filepath"
	"sync/atomic"
)

// A FileLimit bounds how many descriptors the counter sets and status
// readers opened through an FS of [FS.WithFileLimit] hold together
// ([HwCounterSet], [CounterSet], [PortStatusReader]). A file opened while
// the limit has room is held, and read again with one pread; one opened
// after the limit is reached is opened, read and closed on each read (what
// rdma-core and node_exporter do for every file), so a program that reads
// the counters of a thousand devices holds at most the limit, whatever the
// number of files. Held files are first come, first served, and stay held
// until their set is closed: a set read in a cycle gains nothing from an
// LRU, which would evict each file just before it is read again.
//
// Under a limit, a file that cannot be opened does not fail the set: it
// is read by its path on each read, and fails alone (see
// [HwCounterSet.ReadAll], [CounterSet.ReadAll], [PortStatusReader.ReadEach]).
//
// A FileLimit is safe for concurrent use. The zero FileLimit holds
// nothing.
type FileLimit struct {
	max  int64
	held atomic.Int64
}

// NewFileLimit returns a FileLimit of n descriptors (n <= 0: none are
// held, every read opens its file).
func NewFileLimit(n int) *FileLimit { return &FileLimit{max: int64(max(n, 0))} }

// Held returns how many descriptors the sets hold under l now.
func (l *FileLimit) Held() int {
	if l == nil {
		return 0
	}
	return int(l.held.Load())
}

// Max returns the limit.
func (l *FileLimit) Max() int {
	if l == nil {
		return 0
	}
	return int(l.max)
}

// take reserves one descriptor; false when the limit is reached. A nil
// FileLimit (no limit) always has room.
func (l *FileLimit) take() bool {
	if l == nil {
		return true
	}
	for {
		n := l.held.Load()
		if n >= l.max {
			return false
		}
		if l.held.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// give returns a descriptor taken with take.
func (l *FileLimit) give() {
	if l != nil {
		l.held.Add(-1)
	}
}

// WithFileLimit returns a copy of f whose counter sets and status readers
// hold at most what l allows (see [FileLimit]); l nil means no limit, as
// for f itself. An FS made by [NewFS] reads an fs.FS, whose files are
// always held: the limit does not apply to it.
func (f *FS) WithFileLimit(l *FileLimit) *FS {
	var c FS
	if f != nil {
		c = *f
	}
	c.limit = l
	return &c
}

// fileLimit returns the limit f's sets hold their files under, nil for
// none (and for an FS of NewFS, whose files are always held).
func (f *FS) fileLimit() *FileLimit {
	if f == nil || f.osRoot0() == "" {
		return nil
	}
	return f.limit
}

// unheldDir returns the directory an unheld file of physDir (a path
// under the root, resolved as f.phys resolves it) is read in, on a root
// that is not confined: its path with its links resolved once, so that
// path lookup walks no link on each read. On a confined root it is "":
// each file's path is resolved inside the root (unheldPath).
func (f *FS) unheldDir(physDir string) string {
	if f.isConfined() {
		return ""
	}
	dir := f.osRoot0() + "/" + physDir
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	return dir
}

// unheldPath returns the path to read the file name of the directory rel
// (physDir resolved) by when it is not held, and whether it must be read
// without following a link: on a confined root the path resolved inside
// the root (read without following, so that a link put there later is
// refused, not followed out of the root); otherwise dir (unheldDir's) and
// name.
func (f *FS) unheldPath(dir, physDir, rel, name string) (string, bool, error) {
	if !f.isConfined() {
		return dir + "/" + name, false, nil
	}
	p, err := resolveAt(f.osRoot, physDir, name)
	if err != nil {
		return "", false, f.fixPathErr(err, path.Join(rel, name))
	}
	return f.osRoot + "/" + p, true, nil
}
