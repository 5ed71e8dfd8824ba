package sysfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
)

// PortStatus is the part of a [Port] that changes while the port runs:
// its state, physical state and rate.
type PortStatus struct {
	State     rdma.PortState
	PhysState rdma.PhysState
	// Rate is valid when HasRate is true: false when the port has no rate
	// file or the kernel refused to compute it (see [Port.Rate]).
	Rate    Rate
	HasRate bool
}

// PortStatusReader keeps a port's state, phys_state and rate files open
// so that reading them again costs three preads and, while their text
// does not change, no allocation. Opened through an FS with a [FileLimit],
// it holds only the files the limit has room for, and opens, reads and
// closes the others on each read. It is not safe for concurrent use;
// Close it when done.
type PortStatusReader struct {
	name     string
	closed   bool
	files    [3]statusFile // state, phys_state, rate
	last     PortStatus
	limit    *FileLimit
	nofollow bool // unheld paths are read without following a link
	buf      [64]byte
}

type statusFile struct {
	path   string
	f      io.ReaderAt
	c      io.Closer
	unheld string // the path an unheld file is read by ("" when held or absent)
	raw    []byte // the text the last parse saw
	valid  bool
}

// OpenStatus opens the port's state, phys_state and rate files for
// repeated reading with [PortStatusReader.Read]. state and phys_state must
// exist; rate may not.
func (p *Port) OpenStatus() (*PortStatusReader, error) {
	if p == nil {
		return nil, errNil("read port status")
	}
	return p.fs.openStatus(p.CA, p.Number)
}

// OpenStatus is [Port.OpenStatus] for port of the device ca, without
// reading the port's attributes first (see [FS.PortNumbers]); the error
// matches os.ErrNotExist when there is no such device or port.
func (f *FS) OpenStatus(ca string, port int) (*PortStatusReader, error) {
	if !validName(ca) {
		return nil, errs.New("read port status", portName(ca, port), f.noSuchDevice(classInfiniBand, ca))
	}
	return f.openStatus(ca, port)
}

func (f *FS) openStatus(ca string, port int) (*PortStatusReader, error) {
	dir := portDir(ca, port)
	r := &PortStatusReader{name: portName(ca, port)}
	limited := f.fileLimit() != nil
	var physDir, osDir string
	if limited {
		var err error
		if physDir, err = f.phys(dir); err != nil {
			return nil, errs.New("read port status", r.name, f.fixPathErr(err, dir))
		}
		osDir = f.unheldDir(physDir)
		r.limit = f.limit
	}
	for i, file := range [3]string{"state", "phys_state", "rate"} {
		rel := path.Join(dir, file)
		sf := &r.files[i]
		sf.path = f.display(rel)
		if limited && !f.limit.take() {
			p, nofollow, err := f.unheldPath(osDir, physDir, dir, file)
			if err == nil || !(i == 2 && isAbsent(err)) {
				if err != nil {
					r.Close()
					return nil, errs.New("read port status", r.name, err)
				}
				sf.unheld, r.nofollow = p, nofollow
			}
			continue
		}
		fl, err := f.open(rel)
		if err != nil {
			if limited {
				f.limit.give()
			}
			if i == 2 && isAbsent(err) {
				continue
			}
			if limited {
				// Read by its path on each read, where it fails
				// alone, not the reader.
				if p, nofollow, perr := f.unheldPath(osDir, physDir, dir, file); perr == nil {
					sf.unheld, r.nofollow = p, nofollow
					continue
				}
			}
			r.Close()
			return nil, errs.New("read port status", r.name, err)
		}
		ra, ok := fl.(io.ReaderAt)
		if !ok {
			fl.Close()
			if limited {
				f.limit.give()
			}
			r.Close()
			return nil, errs.New("read port status", r.name, &fs.PathError{Op: "open", Path: sf.path, Err: errors.New("file does not implement io.ReaderAt")})
		}
		sf.f, sf.c = ra, fl
	}
	return r, nil
}

// Read reads the port's status into st. It parses a file's text only when
// it differs from the last Read's.
func (r *PortStatusReader) Read(st *PortStatus) error {
	if r == nil {
		return errNil("read port status")
	}
	if r.name == "" {
		return errs.New("read port status", "", errNotOpened)
	}
	for i := range r.files {
		if err := r.readFile(i); err != nil {
			return err
		}
	}
	*st = r.last
	return nil
}

// ReadEach is [PortStatusReader.Read] where a file that cannot be read or
// parsed does not stop the others: ok says which of st's fields were
// read, in the order State, PhysState, Rate (ok[2] is true, with HasRate
// false, when the port has no rate or the kernel refused to compute it),
// failed how many files failed, and err is the first failure's error.
func (r *PortStatusReader) ReadEach(st *PortStatus) (ok [3]bool, failed int, err error) {
	if r == nil {
		return ok, 0, errNil("read port status")
	}
	if r.name == "" {
		return ok, 0, errs.New("read port status", "", errNotOpened)
	}
	for i := range r.files {
		if ferr := r.readFile(i); ferr != nil {
			if failed == 0 {
				err = ferr
			}
			failed++
			continue
		}
		ok[i] = true
	}
	*st = r.last
	if !ok[2] {
		st.HasRate = false
	}
	return ok, failed, err
}

// readFile reads file i (state, phys_state, rate) into r.last.
func (r *PortStatusReader) readFile(i int) error {
	sf := &r.files[i]
	if r.closed {
		return errs.New("read port status", r.name, &fs.PathError{Op: "read", Path: sf.path, Err: fs.ErrClosed})
	}
	var b []byte
	switch {
	case sf.f != nil:
		n, err := sf.f.ReadAt(r.buf[:], 0)
		if err != nil && err != io.EOF {
			if i == 2 && isEINVAL(err) {
				r.last.HasRate, sf.valid = false, false
				return nil
			}
			return errs.New("read port status", r.name, pathErrAt(err, sf.path))
		}
		b = r.buf[:n]
	case sf.unheld != "":
		read := sys.ReadFileIn
		if r.nofollow {
			read = sys.ReadFileInNoFollow
		}
		var err error
		b, err = read("", sf.unheld, r.buf[:])
		if err != nil {
			var tl *sys.TooLargeError
			switch {
			case errors.As(err, &tl):
				b = r.buf[:]
			case i == 2 && (isEINVAL(err) || isAbsent(err)):
				r.last.HasRate, sf.valid = false, false
				return nil
			default:
				return errs.New("read port status", r.name, pathErrAt(err, sf.path))
			}
		}
	default: // no rate file
		r.last.HasRate = false
		return nil
	}
	if len(b) == len(r.buf) {
		return errs.New("read port status", r.name, parseErr(sf.path, string(b), "at most 63 bytes"))
	}
	b = trimNewline(b)
	if sf.valid && bytes.Equal(b, sf.raw) {
		return nil
	}
	sf.valid = false
	s := string(b)
	switch i {
	case 0, 1:
		num, _, err := parseEnumLine(s)
		if err != nil {
			return errs.New("read port status", r.name, inPath(err, sf.path))
		}
		if i == 0 {
			r.last.State = rdma.PortState(num)
		} else {
			r.last.PhysState = rdma.PhysState(num)
		}
	case 2:
		rate, err := ParseRate(s)
		if err != nil {
			return errs.New("read port status", r.name, inPath(err, sf.path))
		}
		r.last.Rate, r.last.HasRate = rate, true
	}
	sf.raw = append(sf.raw[:0], b...)
	sf.valid = true
	return nil
}

// Close closes the files (and gives their descriptors back to the
// [FileLimit]). It is safe to call more than once; reading a closed reader
// fails with an error matching fs.ErrClosed.
func (r *PortStatusReader) Close() error {
	if r == nil {
		return errNil("close port status")
	}
	var first error
	for i := range r.files {
		if c := r.files[i].c; c != nil {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
			if r.limit != nil {
				r.limit.give()
			}
			r.files[i].c, r.files[i].f = nil, nil
		}
	}
	r.closed = true
	return first
}

// inPath sets the path of a *ParseError returned by a Parse function.
func inPath(err error, p string) error {
	if pe, ok := err.(*ParseError); ok {
		pe.Path = p
	}
	return err
}
