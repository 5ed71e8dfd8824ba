package sys

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// AttrMax is the most a sysfs attribute file holds: one page. The kernel
// formats an attribute into a buffer of PAGE_SIZE (fs/sysfs/file.c,
// sysfs_kf_seq_show; drivers' show functions use sysfs_emit, which stops at
// PAGE_SIZE). 4096 is the smallest page of the architectures this library
// builds for; a bigger page size only lets the kernel write more, which a
// reader bounded by AttrMax reports as too large.
const AttrMax = 4096

// NotRegularError says a file expected to be a regular file (every sysfs
// attribute is one) is something else: a FIFO, a device node, a directory
// or a socket. Reading those could block forever (a FIFO with no writer),
// never end (/dev/zero) or act on a device (opening a watchdog starts it),
// so the bounded readers refuse them before opening.
type NotRegularError struct {
	Mode fs.FileMode // the file's type bits
}

func (e *NotRegularError) Error() string {
	if e.Mode.IsDir() {
		return "is a directory, not a regular file"
	}
	what := "special file"
	switch t := e.Mode.Type(); {
	case t&fs.ModeNamedPipe != 0:
		what = "named pipe (FIFO)"
	case t&fs.ModeCharDevice != 0:
		what = "character device"
	case t&fs.ModeDevice != 0:
		what = "block device"
	case t&fs.ModeSocket != 0:
		what = "socket"
	case t&fs.ModeSymlink != 0:
		what = "symbolic link"
	}
	return "not a regular file: a " + what
}

// Unwrap returns syscall.EISDIR for a directory (what read(2) would have
// said), nothing otherwise.
func (e *NotRegularError) Unwrap() error {
	if e.Mode.IsDir() {
		return syscall.EISDIR
	}
	return nil
}

// TooLargeError says a file holds more than the reader's bound.
type TooLargeError struct {
	Limit int // the bound, in bytes
}

func (e *TooLargeError) Error() string {
	return "holds more than " + strconv.Itoa(e.Limit) + " bytes, more than a sysfs attribute can"
}

// Unwrap returns syscall.EFBIG, so errors.Is matches the errno.
func (e *TooLargeError) Unwrap() error { return syscall.EFBIG }

// attrPool holds AttrMax-sized buffers for ReadString.
var attrPool Spare[[AttrMax]byte]

// ReadString reads the whole file at path as [ReadFile] does with an
// AttrMax buffer (taken from a pool) and returns its text.
func ReadString(path string) (string, error) {
	buf := attrPool.Get()
	defer attrPool.Put(buf)
	b, err := ReadFile(path, buf[:])
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ReadFile reads the whole file at path, a file the caller did not create
// (a sysfs attribute), into buf and returns buf[:n]. It reads at most
// len(buf) bytes plus one:
//
//   - path must name a regular file (after symbolic links): it is checked
//     with stat(2) before opening, and anything else gives a *fs.PathError
//     wrapping a [*NotRegularError] without the file being opened (opening
//     a device node can act on the device);
//   - it is opened O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC, so a FIFO put in
//     its place between the check and the open cannot block the open or the
//     read, and the bound below stops a device that never ends;
//   - a file holding more than len(buf) bytes gives a *fs.PathError wrapping
//     a [*TooLargeError] (which matches syscall.EFBIG).
//
// Under the running system's sysfs (path starting "/sys/" while /sys is a
// sysfs mount, checked once per process with statfs(2)), the stat is left
// out: kernfs holds only directories, regular files and symbolic links to
// its own nodes (fs/kernfs/symlink.c, kernfs_create_link), so a path there
// that opens is a regular file, and the read is open, read, close: the
// three calls rdma-core makes (libibumad's sysfs.c, sys_read_string).
//
// The file is read with one read(2) into buf: a regular file's read returns
// less than asked only at end of file (filemap_read for page-cache files;
// for sysfs, seq_read_iter copies the whole attribute, formatted by
// sysfs_kf_seq_show on the first read, up to the count asked), so a short
// read ends the file, and only a read that fills buf costs a second, of one
// byte, to tell a full buffer from a file too large. A kernel attribute whose
// show function fails (EINVAL for an uncomputable rate) reports that errno.
// Other errors are *fs.PathError values wrapping the errno.
func ReadFile(path string, buf []byte) ([]byte, error) {
	return ReadFileIn("", path, buf)
}

// pathMax is the longest dir/name ReadFileIn builds on the stack; a longer
// one is built on the heap.
const pathMax = 512

// ReadFileIn is [ReadFile] of dir+"/"+name (of name alone when dir is
// empty). The path is built, NUL-terminated, in a buffer on the stack when
// it fits in 512 bytes, and handed to stat(2) and open(2) as it is: a
// successful read allocates nothing (a sysfs walk reads thousands of
// attributes; each path string and its NUL-terminated copy were two
// allocations, issue 11).
func ReadFileIn(dir, name string, buf []byte) ([]byte, error) {
	var stack [pathMax]byte
	pathz, err := appendPathZ(stack[:0], dir, name)
	if err != nil {
		return nil, err
	}
	return readFileAt(atFDCWD, pathz, underSysfsZ(pathz), false, buf)
}

// ReadFileInNoFollow is [ReadFileIn] that does not follow a symbolic link
// at the path's last component (as [Dir.ReadFileNoFollow]): such a link is
// a *fs.PathError wrapping a [*NotRegularError] of mode fs.ModeSymlink. It
// always stats first. The sysfs package reads a confined root's counter
// files with it by the paths it resolved inside the root once, so that a
// file replaced by a link since is refused, not followed out of the root.
func ReadFileInNoFollow(dir, name string, buf []byte) ([]byte, error) {
	var stack [pathMax]byte
	pathz, err := appendPathZ(stack[:0], dir, name)
	if err != nil {
		return nil, err
	}
	return readFileAt(atFDCWD, pathz, false, true, buf)
}

// readFileAt is the read of ReadFileIn and Dir.ReadFile: pathz relative to
// the directory descriptor at (atFDCWD for a path), stat first unless
// sysfs, then open, one read, close. With nofollow a symbolic link at
// pathz's last component is not followed (it is a *NotRegularError of
// ModeSymlink). Errors name pathz.
func readFileAt(at uintptr, pathz []byte, sysfs, nofollow bool, buf []byte) ([]byte, error) {
	statFlags, openFlags := 0, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC
	if nofollow {
		statFlags, openFlags = unix.AT_SYMLINK_NOFOLLOW, openFlags|unix.O_NOFOLLOW
		sysfs = false
	}
	if !sysfs {
		var st unix.Stat_t
		if err := fstatatZ(at, pathz, &st, statFlags); err != nil {
			return nil, &fs.PathError{Op: "stat", Path: zpath(pathz), Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, checkRegular(zpath(pathz), st.Mode)
		}
	}
	raw, err := openatZ(at, pathz, openFlags)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: zpath(pathz), Err: err}
	}
	b, err := readBounded(fdReader(raw), buf, true)
	unix.Close(raw)
	if err != nil {
		return nil, pathErr("read", zpath(pathz), err)
	}
	return b, nil
}

// appendPathZ appends dir+"/"+name (name alone when dir is empty) and a
// NUL to b. A NUL inside dir or name is EINVAL, as unix.Open says: the
// kernel would read the path only up to it, another file.
func appendPathZ(b []byte, dir, name string) ([]byte, error) {
	if strings.IndexByte(dir, 0) >= 0 || strings.IndexByte(name, 0) >= 0 {
		return nil, &fs.PathError{Op: "open", Path: path.Join(dir, name), Err: unix.EINVAL}
	}
	if dir != "" {
		b = append(append(b, dir...), '/')
	}
	return append(append(b, name...), 0), nil
}

// zpath is the path of a NUL-terminated pathz, for errors.
func zpath(pathz []byte) string { return string(pathz[:len(pathz)-1]) }

// fdReader reads a descriptor with read(2), again on EINTR, with io.Reader's
// convention for end of file.
type fdReader int

func (fd fdReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(fd), p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 && len(p) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// readBounded reads r into buf until end of file and returns buf[:n], or
// an error: a [*TooLargeError] when r holds more than len(buf) bytes, or
// r's. With shortIsEOF (a regular file read with read(2), see [ReadFile]) a
// read that returns less than it was asked for ends the file; otherwise (an
// fs.File, whose Read may return any amount) only io.EOF or an empty read
// does. It is the one read loop of ReadFileIn and ReadFileFS, which name
// the file in the error.
func readBounded[R io.Reader](r R, buf []byte, shortIsEOF bool) ([]byte, error) {
	n := 0
	for {
		if n == len(buf) {
			// Full: one more byte tells a file of exactly len(buf)
			// bytes from a larger one.
			var one [1]byte
			m, err := r.Read(one[:])
			if m > 0 {
				return nil, &TooLargeError{Limit: len(buf)}
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return buf[:n], nil
		}
		m, err := r.Read(buf[n:])
		if m > 0 {
			n += m
		}
		if err == io.EOF || (err == nil && m <= 0) {
			return buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
		if shortIsEOF && n < len(buf) {
			return buf[:n], nil
		}
	}
}

// sysfsMagic is SYSFS_MAGIC (include/uapi/linux/magic.h).
const sysfsMagic = 0x62656572

var (
	sysfsOnce    sync.Once
	sysfsMounted bool
)

// underSysfsZ is underSysfs of a NUL-terminated path.
func underSysfsZ(pathz []byte) bool {
	return len(pathz) >= 5 && string(pathz[:5]) == "/sys/" && sysfsIsSysfs()
}

// underSysfs reports whether path is under /sys and /sys is a sysfs mount
// (one statfs(2) per process, on the first call).
func underSysfs(path string) bool {
	return len(path) >= 5 && path[:5] == "/sys/" && sysfsIsSysfs()
}

// sysfsIsSysfs reports whether /sys is a sysfs mount, asked once.
func sysfsIsSysfs() bool {
	sysfsOnce.Do(func() {
		var st unix.Statfs_t
		if ignoringEINTR(func() error { return unix.Statfs("/sys", &st) }) == nil {
			sysfsMounted = uint32(st.Type) == sysfsMagic
		}
	})
	return sysfsMounted
}

// OpenFile opens the regular file at path for reading, with the checks of
// [ReadFile] (a stat before the open except under the running system's
// sysfs; O_NONBLOCK|O_NOCTTY|O_CLOEXEC), for a caller that reads it again
// and again with ReadAt, bounded by its own buffer: hw_counters and PMA
// counter files.
func OpenFile(path string) (*File, error) {
	if !underSysfs(path) {
		var st unix.Stat_t
		if err := ignoringEINTR(func() error { return unix.Stat(path, &st) }); err != nil {
			return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
		}
		if err := checkRegular(path, st.Mode); err != nil {
			return nil, err
		}
	}
	var raw int
	err := ignoringEINTR(func() error {
		var err error
		raw, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := &File{name: path, raw: raw}
	f.cleanup = runtime.AddCleanup(f, func(raw int) { unix.Close(raw) }, raw)
	return f, nil
}

// File is a regular file opened by [OpenFile]: a descriptor read with
// pread(2) and read(2) directly. It is not an os.File because os.NewFile
// on an O_NONBLOCK descriptor tries the runtime poller first (fcntl, an
// epoll_ctl that fails with EPERM for a regular file, two more fcntl to
// make it blocking again): four calls a file for nothing. Its methods are
// safe for concurrent use; Close waits for reads in flight, so the number
// cannot be reused under them.
type File struct {
	name    string
	raw     int
	mu      sync.RWMutex
	closed  bool
	cleanup runtime.Cleanup
}

// Name returns the path the file was opened with.
func (f *File) Name() string { return f.name }

// ReadAt reads len(p) bytes from offset off with one pread(2). A regular
// file's read returns less than asked only at end of file (see
// [ReadFile]), so a short read returns io.EOF with the bytes read, as
// io.ReaderAt asks, without a second call to find the end.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EINVAL}
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrClosed}
	}
	for {
		n, err := unix.Pread(f.raw, p, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
}

// Read reads from the file's offset with read(2), io.EOF at its end.
func (f *File) Read(p []byte) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrClosed}
	}
	n, err := fdReader(f.raw).Read(p)
	if err != nil && err != io.EOF {
		return n, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	return n, err
}

// Stat returns the file's information from fstat(2).
func (f *File) Stat() (fs.FileInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: fs.ErrClosed}
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(f.raw, &st) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	return &fileInfo{name: f.name, st: st}, nil
}

// Close closes the file; later calls return nil.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	f.cleanup.Stop()
	if err := unix.Close(f.raw); err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// fileInfo is fs.FileInfo from a stat(2) result.
type fileInfo struct {
	name string
	st   unix.Stat_t
}

func (i *fileInfo) Name() string {
	for j := len(i.name) - 1; j >= 0; j-- {
		if i.name[j] == '/' {
			return i.name[j+1:]
		}
	}
	return i.name
}
func (i *fileInfo) Size() int64 { return i.st.Size }
func (i *fileInfo) Mode() fs.FileMode {
	return fileType(i.st.Mode)&^fs.ModeIrregular | fs.FileMode(i.st.Mode&0o777)
}
func (i *fileInfo) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }
func (i *fileInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i *fileInfo) Sys() any           { return &i.st }

// ReadFileFS is [ReadFile] for a file of an fs.FS (a test tree, or a
// caller's copy of sysfs): the file must be regular by fs.Stat before it is
// opened and by its own Stat after, and may hold at most len(buf) bytes.
// Errors are *fs.PathError values naming name.
func ReadFileFS(fsys fs.FS, name string, buf []byte) ([]byte, error) {
	f, err := OpenFS(fsys, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readBounded(f, buf, false)
	if err != nil {
		return nil, pathErr("read", name, err)
	}
	return b, nil
}

// OpenFS opens name in fsys for reading once fs.Stat says it is a regular
// file, and checks the opened file's Stat again.
func OpenFS(fsys fs.FS, name string) (fs.File, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: &NotRegularError{Mode: fi.Mode().Type()}}
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, pathErr("stat", name, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: &NotRegularError{Mode: fi.Mode().Type()}}
	}
	return f, nil
}

func pathErr(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func checkRegular(path string, mode uint32) error {
	if mode&unix.S_IFMT == unix.S_IFREG {
		return nil
	}
	return &fs.PathError{Op: "open", Path: path, Err: &NotRegularError{Mode: fileType(mode)}}
}

// fileType converts stat's type bits to fs.FileMode's.
func fileType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if err != unix.EINTR {
			return err
		}
	}
}
