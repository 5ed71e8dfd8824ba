package sys

import (
	"bytes"
	"encoding/binary"
	"io/fs"

	"golang.org/x/sys/unix"
)

// direntsMax bounds what Dirents reads: a directory whose records take more
// is an error (class/infiniband with 64 devices takes about 2 KiB).
const direntsMax = 1 << 20

var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }() // -100 as the syscall's unsigned word

// Dirents reads the raw getdents64 records of the directory at pathz (a
// path ending in one NUL byte, so that the call converts nothing) into
// buf[:0], growing it as needed, and returns them: a snapshot of the
// entries' names, inode numbers and types, equal from call to call while
// the directory does not change (the kernel leaves the padding after each
// name as the buffer held it; Dirents zeroes it). It allocates only to grow buf. Errors are
// *fs.PathError values.
func Dirents(pathz []byte, buf []byte) ([]byte, error) {
	name := func() string { return string(pathz[:max(len(pathz)-1, 0)]) } // for errors only
	if len(pathz) == 0 || pathz[len(pathz)-1] != 0 {
		return buf, &fs.PathError{Op: "open", Path: name(), Err: unix.EINVAL}
	}
	fd, err := openatZ(atFDCWD, pathz, dirFlags)
	if err != nil {
		return buf, &fs.PathError{Op: "open", Path: name(), Err: err}
	}
	defer unix.Close(fd)
	return direntsFD(fd, buf, name)
}

// direntsFD is Dirents of the open directory fd, from its position; name
// names it in errors.
func direntsFD(fd int, buf []byte, name func() string) ([]byte, error) {
	buf = buf[:0]
	for {
		if cap(buf)-len(buf) < 1024 {
			if cap(buf) >= direntsMax {
				return buf, &fs.PathError{Op: "getdents", Path: name(), Err: &TooLargeError{Limit: direntsMax}}
			}
			nb := make([]byte, len(buf), 2*cap(buf)+4096)
			copy(nb, buf)
			buf = nb
		}
		n, err := unix.Getdents(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf, &fs.PathError{Op: "getdents", Path: name(), Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		zeroPadding(buf[len(buf) : len(buf)+n])
		buf = buf[:len(buf)+n]
	}
}

// zeroPadding zeroes what follows each record's name (see forEachRecord).
func zeroPadding(b []byte) {
	forEachRecord(b, func(_, pad []byte, _ byte) { clear(pad) })
}

// forEachRecord calls fn for each record of b, raw getdents64 output
// (struct linux_dirent64: d_ino 8 bytes, d_off 8, d_reclen 2, d_type 1,
// then the NUL-terminated name padded to 8 bytes), with the name and the
// bytes after it to the record's end (its NUL and padding), and d_type. A
// record that does not fit stops it: the kernel's records always fit.
func forEachRecord(b []byte, fn func(name, pad []byte, typ byte)) {
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return
		}
		rec := b[19:reclen]
		n := len(rec)
		if i := bytes.IndexByte(rec, 0); i >= 0 {
			n = i
		}
		fn(rec[:n], rec[n:], b[18])
		b = b[reclen:]
	}
}

// direntPool holds the record buffers of DirNames.
var direntPool = Spare[[]byte]{New: newDirentBuf}

func newDirentBuf() *[]byte { b := make([]byte, 0, 8192); return &b }

// DirNames returns the names in the directory dir+"/"+name (name alone
// when dir is empty), sorted, without "." and "..": what fs.ReadDir's
// names are, read with one open, getdents64 until the end and one close,
// the path built on the stack, and the names cut from one string (three
// allocations, where os.ReadDir makes several per entry).
// Errors are *fs.PathError values.
func DirNames(dir, name string) ([]string, error) { return dirNames(dir, name, false) }

// DirFileNames is [DirNames] without the entries getdents64 types as
// directories (DT_DIR): the files of a sysfs attribute directory such as
// hw_counters/, told apart without a stat each.
func DirFileNames(dir, name string) ([]string, error) { return dirNames(dir, name, true) }

func dirNames(dir, name string, skipDirs bool) ([]string, error) {
	var stack [pathMax]byte
	pathz, err := appendPathZ(stack[:0], dir, name)
	if err != nil {
		return nil, err
	}
	bp := direntPool.Get()
	defer direntPool.Put(bp)
	recs, err := Dirents(pathz, *bp)
	*bp = recs[:0]
	if err != nil {
		return nil, err
	}
	return namesOf(recs, skipDirs), nil
}

// forEachName calls fn with the name of each record in b but "." and
// "..", and but directories' when skipDirs is set.
func forEachName(b []byte, skipDirs bool, fn func(name []byte)) {
	forEachRecord(b, func(n, _ []byte, typ byte) {
		if skipDirs && typ == unix.DT_DIR {
			return
		}
		if !(len(n) == 1 && n[0] == '.') && !(len(n) == 2 && n[0] == '.' && n[1] == '.') {
			fn(n)
		}
	})
}
