package sysfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
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
// does not change, no allocation. It is not safe for concurrent use;
// Close it when done.
type PortStatusReader struct {
	name   string
	closed bool
	files  [3]statusFile // state, phys_state, rate
	last   PortStatus
	buf    [64]byte
}

type statusFile struct {
	path  string
	f     io.ReaderAt
	c     io.Closer
	raw   []byte // the text the last parse saw
	valid bool
}

// OpenStatus opens the port's state, phys_state and rate files for
// repeated reading with [PortStatusReader.Read]. state and phys_state must
// exist; rate may not.
func (p *Port) OpenStatus() (*PortStatusReader, error) {
	if p == nil {
		return nil, errNil("read port status")
	}
	f := p.fs
	r := &PortStatusReader{name: p.Name()}
	for i, file := range [3]string{"state", "phys_state", "rate"} {
		rel := path.Join(p.dir(), file)
		r.files[i].path = f.display(rel)
		fl, err := f.open(rel)
		if err != nil {
			if i == 2 && isAbsent(err) {
				continue
			}
			r.Close()
			return nil, errs.New("read port status", r.name, err)
		}
		ra, ok := fl.(io.ReaderAt)
		if !ok {
			fl.Close()
			r.Close()
			return nil, errs.New("read port status", r.name, &fs.PathError{Op: "open", Path: r.files[i].path, Err: errors.New("file does not implement io.ReaderAt")})
		}
		r.files[i].f, r.files[i].c = ra, fl
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
		sf := &r.files[i]
		if r.closed {
			return errs.New("read port status", r.name, &fs.PathError{Op: "read", Path: sf.path, Err: fs.ErrClosed})
		}
		if sf.f == nil { // no rate file
			r.last.HasRate = false
			continue
		}
		n, err := sf.f.ReadAt(r.buf[:], 0)
		if err != nil && err != io.EOF {
			if i == 2 && isEINVAL(err) {
				r.last.HasRate, sf.valid = false, false
				continue
			}
			return errs.New("read port status", r.name, pathErrAt(err, sf.path))
		}
		if n == len(r.buf) {
			return errs.New("read port status", r.name, parseErr(sf.path, string(r.buf[:n]), "at most 63 bytes"))
		}
		b := trimNewline(r.buf[:n])
		if sf.valid && bytes.Equal(b, sf.raw) {
			continue
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
	}
	*st = r.last
	return nil
}

// Close closes the files. It is safe to call more than once; reading a
// closed reader fails with an error matching fs.ErrClosed.
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
