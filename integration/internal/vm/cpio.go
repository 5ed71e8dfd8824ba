package vm

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// rootfs is an in-memory file tree that is written out as the initramfs, a
// cpio archive in the kernel's "newc" format.
type rootfs struct {
	entries map[string]*entry // by path without a leading slash
}

type entry struct {
	mode   uint32 // file type and permission bits
	data   []byte // file contents or symlink target
	rdev   [2]uint32
	source string // file contents come from this host file when data is nil
}

const (
	sIFDIR = 0o040000
	sIFREG = 0o100000
	sIFLNK = 0o120000
	sIFCHR = 0o020000
)

func newRootfs() *rootfs { return &rootfs{entries: map[string]*entry{}} }

func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

func (r *rootfs) mkdirAll(p string, perm uint32) {
	p = clean(p)
	for p != "" && p != "." {
		if _, ok := r.entries[p]; !ok {
			r.entries[p] = &entry{mode: sIFDIR | perm}
		}
		p = path.Dir(p)
		if p == "." {
			break
		}
	}
}

func (r *rootfs) add(p string, e *entry) {
	p = clean(p)
	r.mkdirAll(path.Dir(p), 0o755)
	r.entries[p] = e
}

func (r *rootfs) file(p string, data []byte, perm uint32) {
	r.add(p, &entry{mode: sIFREG | perm, data: data})
}

func (r *rootfs) hostFile(p, source string, perm uint32) {
	r.add(p, &entry{mode: sIFREG | perm, source: source})
}

func (r *rootfs) symlink(p, target string) {
	r.add(p, &entry{mode: sIFLNK | 0o777, data: []byte(target)})
}

func (r *rootfs) charDev(p string, major, minor uint32, perm uint32) {
	r.add(p, &entry{mode: sIFCHR | perm, rdev: [2]uint32{major, minor}})
}

// writeCPIO writes the tree, parents before children, with zero times and
// root ownership so that the same inputs give the same bytes.
func (r *rootfs) writeCPIO(w io.Writer, open func(string) (io.ReadCloser, int64, error)) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	names := make([]string, 0, len(r.entries))
	for p := range r.entries {
		names = append(names, p)
	}
	sort.Strings(names)
	ino := uint32(1)
	var written int64
	pad := func() error {
		if n := (4 - written%4) % 4; n > 0 {
			m, err := bw.Write(make([]byte, n))
			written += int64(m)
			return err
		}
		return nil
	}
	header := func(name string, mode uint32, size int64, nlink uint32, rdev [2]uint32) error {
		n, err := fmt.Fprintf(bw, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%s\x00",
			ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev[0], rdev[1], len(name)+1, 0, name)
		written += int64(n)
		ino++
		if err != nil {
			return err
		}
		return pad()
	}
	for _, name := range names {
		e := r.entries[name]
		nlink := uint32(1)
		if e.mode&0o170000 == sIFDIR {
			nlink = 2
		}
		if e.source != "" {
			rc, size, err := open(e.source)
			if err != nil {
				return err
			}
			if err := header(name, e.mode, size, nlink, e.rdev); err != nil {
				rc.Close()
				return err
			}
			n, err := io.Copy(bw, rc)
			rc.Close()
			written += n
			if err != nil {
				return err
			}
			if n != size {
				return fmt.Errorf("%s changed size while the image was written", e.source)
			}
		} else {
			if err := header(name, e.mode, int64(len(e.data)), nlink, e.rdev); err != nil {
				return err
			}
			n, err := bw.Write(e.data)
			written += int64(n)
			if err != nil {
				return err
			}
		}
		if err := pad(); err != nil {
			return err
		}
	}
	if err := header("TRAILER!!!", 0, 0, 1, [2]uint32{}); err != nil {
		return err
	}
	return bw.Flush()
}
