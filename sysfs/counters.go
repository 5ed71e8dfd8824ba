package sysfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
)

// Names of the PMA data counters, whose values count 4-octet words.
const (
	CounterXmitData = "port_xmit_data"
	CounterRcvData  = "port_rcv_data"
)

// naPMA is what counters/ files held on older kernels for a driver without
// a PMA (Linux since 2018 creates no counters/ for such drivers).
const naPMA = "N/A (no PMA)"

// Counters are a port's PMA counters (ports/N/counters/, IBA PortCounters
// and PortCountersExtended, read by the kernel with a Get MAD to the
// driver on every read): file name → value exactly as the file reads
// ("symbol_error", "port_xmit_data", …). A counter that reads
// "N/A (no PMA)" or that the driver fails to fetch is left out: absent,
// not zero.
//
// port_xmit_data and port_rcv_data are kept raw, in IBA's units of 4
// octets; [Counters.XmitOctets] and [Counters.RcvOctets] convert them.
type Counters map[string]uint64

// XmitOctets returns port_xmit_data in octets (see [DataOctets]).
func (c Counters) XmitOctets() (uint64, bool) { return c.octets(CounterXmitData) }

// RcvOctets returns port_rcv_data in octets (see [DataOctets]).
func (c Counters) RcvOctets() (uint64, bool) { return c.octets(CounterRcvData) }

func (c Counters) octets(name string) (uint64, bool) {
	v, ok := c[name]
	if !ok {
		return 0, false
	}
	return DataOctets(v), true
}

// DataOctets converts a PortXmitData or PortRcvData value (the
// port_xmit_data and port_rcv_data files, and the same fields of the
// PortCounters and PortCountersExtended MADs) to octets. IBA defines these
// counters in units of 4 octets ("divided by 4"), so this multiplies by 4,
// saturating at math.MaxUint64. It is the one place this package converts
// them; [Counters] keeps the raw values.
func DataOctets(words uint64) uint64 {
	if words > math.MaxUint64/4 {
		return math.MaxUint64
	}
	return words * 4
}

// HwCounters are a port's (or a device's) hw_counters/ directory: the
// driver's counter name → value ("%llu"), without lifespan, which is a
// setting (see [Port.HwCountersLifespan]). Optional counters enabled
// through netlink are not listed in sysfs (rdmanl's Conn.PortStats shows
// them).
type HwCounters map[string]uint64

// lifespanFile is hw_counters/lifespan: how long, in milliseconds, the
// kernel reuses values it read from the driver.
const lifespanFile = "lifespan"

// Counters reads the port's PMA counters (counters/). The error matches
// [ErrNotSupported] when the port has no counters/ directory (a driver
// without a PMA, such as rxe), and os.ErrPermission when a file is
// unreadable.
func (p *Port) Counters() (Counters, error) {
	if p == nil {
		return nil, errNil("read PMA counters")
	}
	f := p.fs
	dir := path.Join(p.dir(), "counters")
	ents, err := f.readDir(dir)
	if err != nil {
		if isAbsent(err) {
			err = fmt.Errorf("%s does not exist, the driver has no PMA: %w", f.display(dir), ErrNotSupported)
		}
		return nil, errs.New("read PMA counters", p.Name(), err)
	}
	buf := bufPool.Get()
	defer bufPool.Put(buf)
	c := make(Counters, len(ents))
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		rel := path.Join(dir, e.Name())
		b, err := f.readInto(rel, buf[:])
		if err != nil {
			if pmaUnavailable(err) {
				continue
			}
			return nil, errs.New("read PMA counters", p.Name(), err)
		}
		v, ok := parseCounter(b)
		if !ok {
			if string(b) == naPMA {
				continue
			}
			return nil, errs.New("read PMA counters", p.Name(), parseErr(f.display(rel), string(b), `a decimal counter ("%llu") or "N/A (no PMA)"`))
		}
		c[e.Name()] = v
	}
	return c, nil
}

// pmaUnavailable reports whether a counters/ file read failed because the
// kernel could not get the value from the driver (the PMA query failed) or
// the file went away, rather than because of the caller (permissions).
func pmaUnavailable(err error) bool {
	return isAbsent(err) || isEINVAL(err) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS)
}

// HwCounters reads the port's hw_counters/ once. For repeated reads use
// [Port.OpenHwCounters], which does not allocate. The error matches
// [ErrNotSupported] when the port has no hw_counters/ directory.
func (p *Port) HwCounters() (HwCounters, error) {
	if p == nil {
		return nil, errNil("read hw counters")
	}
	return p.fs.hwCounters(p.dir(), p.Name())
}

func (f *FS) hwCounters(parent, dev string) (HwCounters, error) {
	s, err := f.openHwCounters(parent, dev)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	m := make(HwCounters, len(s.names))
	if err := s.Read(m); err != nil {
		return nil, err
	}
	return m, nil
}

// HwCountersLifespan reads hw_counters/lifespan: how long the kernel serves
// cached values before it asks the driver again (default 10 ms, rounded to
// jiffies: 12 ms with HZ=250). The error matches [ErrNotSupported] when
// the port has no hw_counters/ and os.ErrNotExist when there is no lifespan.
func (p *Port) HwCountersLifespan() (time.Duration, error) {
	if p == nil {
		return 0, errNil("read hw counters lifespan")
	}
	return p.fs.hwCountersLifespan(p.CA, p.Number)
}

// HwCountersLifespan is [Port.HwCountersLifespan] for port of the device
// ca, without reading the port's attributes first; the error matches
// os.ErrNotExist when there is no such device or port.
func (f *FS) HwCountersLifespan(ca string, port int) (time.Duration, error) {
	if !validName(ca) {
		return 0, errs.New("read hw counters lifespan", portName(ca, port), f.noSuchDevice(classInfiniBand, ca))
	}
	return f.hwCountersLifespan(ca, port)
}

func (f *FS) hwCountersLifespan(ca string, port int) (time.Duration, error) {
	dir := path.Join(portDir(ca, port), "hw_counters")
	rel := path.Join(dir, lifespanFile)
	s, err := f.readString(rel)
	if err != nil {
		// Which is absent, the file or its directory, is looked at only
		// then: the common case costs no stat.
		if isAbsent(err) {
			if ok, serr := f.exists(dir); serr != nil {
				err = serr
			} else if !ok {
				err = fmt.Errorf("%s does not exist: %w", f.display(dir), ErrNotSupported)
				if nerr := f.noSuchPort(ca, port); nerr != nil {
					err = nerr
				}
			}
		}
		return 0, errs.New("read hw counters lifespan", portName(ca, port), err)
	}
	v, ok := parseUint(s, 32)
	if !ok {
		return 0, errs.New("read hw counters lifespan", portName(ca, port), parseErr(f.display(rel), s, `milliseconds ("%d")`))
	}
	return time.Duration(v) * time.Millisecond, nil
}

// HwCounterSet keeps a hw_counters/ directory's files open so that reading
// them again costs one pread per counter and no allocation: sysfs
// recomputes an attribute file whenever it is read from offset 0. A set
// opened through an FS with a [FileLimit] holds only the files the limit
// has room for, and opens, reads and closes the others on each read. A set
// is not safe for concurrent use; Close it when done (it holds up to one
// descriptor per counter).
type HwCounterSet struct {
	dev   string
	op    string
	names []string
	paths []string
	files []io.ReaderAt // nil: not held, read by its path in unheld
	close []io.Closer
	// unheld is the path each file that is not held is read by, and
	// nofollow whether those paths are read without following a link
	// (a confined root's, resolved at open).
	unheld   []string
	nofollow bool
	limit    *FileLimit
	closed   bool
	buf      [32]byte
}

// OpenHwCounters opens the port's hw_counters/ files (lifespan excepted)
// for repeated reading with [HwCounterSet.Read]. The error matches
// [ErrNotSupported] when the port has no hw_counters/ directory.
func (p *Port) OpenHwCounters() (*HwCounterSet, error) {
	if p == nil {
		return nil, errNil("read hw counters")
	}
	return p.fs.openHwCounters(p.dir(), p.Name())
}

// OpenHwCounters is [Port.OpenHwCounters] for port of the device ca,
// without reading the port's attributes first (see [FS.PortNumbers]). The
// error matches os.ErrNotExist when there is no such device or port, and
// [ErrNotSupported] when the port has no hw_counters/.
func (f *FS) OpenHwCounters(ca string, port int) (*HwCounterSet, error) {
	return f.openPortCounterFiles(ca, port, "hw_counters", "read hw counters", "the driver has no hardware counters here")
}

// openPortCounterFiles opens the counter files of directory sub of port of
// the device ca. A device or port that is not there is os.ErrNotExist; a
// port without sub is ErrNotSupported (absent says why).
func (f *FS) openPortCounterFiles(ca string, port int, sub, op, absent string) (*HwCounterSet, error) {
	if !validName(ca) {
		return nil, errs.New(op, portName(ca, port), f.noSuchDevice(classInfiniBand, ca))
	}
	s, err := f.openCounterFiles(path.Join(portDir(ca, port), sub), op, portName(ca, port), absent)
	if errors.Is(err, ErrNotSupported) {
		if nerr := f.noSuchPort(ca, port); nerr != nil {
			return nil, errs.New(op, portName(ca, port), nerr)
		}
	}
	return s, err
}

// noSuchPort returns the error of a port directory that does not exist,
// nil when it does: what the FS forms say for a device or port that is not
// there, where Port's cannot be asked about one.
func (f *FS) noSuchPort(ca string, port int) error {
	ok, err := f.exists(portDir(ca, port))
	if err != nil {
		return err
	}
	if !ok {
		return &fs.PathError{Op: "open", Path: f.display(portDir(ca, port)), Err: syscall.ENOENT}
	}
	return nil
}

func (f *FS) openHwCounters(parent, dev string) (*HwCounterSet, error) {
	return f.openCounterFiles(path.Join(parent, "hw_counters"), "read hw counters", dev, "the driver has no hardware counters here")
}

// openCounterFiles opens the files of dir (lifespan and directories
// excepted) for repeated reading; a missing dir matches ErrNotSupported,
// with absent saying why.
func (f *FS) openCounterFiles(dir, op, dev, absent string) (*HwCounterSet, error) {
	names, err := f.fileNames(dir)
	if err != nil {
		if isAbsent(err) {
			err = fmt.Errorf("%s does not exist, %s: %w", f.display(dir), absent, ErrNotSupported)
		}
		return nil, errs.New(op, dev, err)
	}
	s := &HwCounterSet{dev: dev, op: op}
	physDir, err := f.phys(dir) // once for the directory, not once a file
	if err != nil {
		return nil, errs.New(op, dev, f.fixPathErr(err, dir))
	}
	var osDir string
	limited := f.fileLimit() != nil
	if limited {
		osDir = f.unheldDir(physDir)
		s.limit = f.limit
	}
	for _, name := range names {
		if name == lifespanFile {
			continue
		}
		rel := path.Join(dir, name)
		if limited && !f.limit.take() {
			p, nofollow, err := f.unheldPath(osDir, physDir, dir, name)
			if err != nil {
				s.Close()
				return nil, errs.New(op, dev, err)
			}
			s.nofollow = nofollow
			s.add(name, f.display(rel), nil, nil, p)
			continue
		}
		file, err := f.openIn(physDir, rel, name)
		if err != nil && limited {
			// Under a limit the file is read by its path on each read,
			// where it fails alone, not the set.
			f.limit.give()
			p, nofollow, perr := f.unheldPath(osDir, physDir, dir, name)
			if perr == nil {
				s.nofollow = nofollow
				s.add(name, f.display(rel), nil, nil, p)
				continue
			}
		}
		if err != nil {
			s.Close()
			return nil, errs.New(op, dev, err)
		}
		ra, ok := file.(io.ReaderAt)
		if !ok {
			file.Close()
			if limited {
				f.limit.give()
			}
			s.Close()
			return nil, errs.New(op, dev, &fs.PathError{Op: "open", Path: f.display(rel), Err: errors.New("file does not implement io.ReaderAt")})
		}
		s.add(name, f.display(rel), ra, file, "")
	}
	return s, nil
}

func (s *HwCounterSet) add(name, display string, ra io.ReaderAt, c io.Closer, unheld string) {
	s.names = append(s.names, name)
	s.paths = append(s.paths, display)
	s.files = append(s.files, ra)
	s.close = append(s.close, c)
	s.unheld = append(s.unheld, unheld)
}

// Names returns the counter names in the set, sorted. The slice belongs to
// the set.
func (s *HwCounterSet) Names() []string {
	if s == nil {
		return nil
	}
	return s.names
}

// Read reads every counter into dst, keyed by name. Once dst holds every
// name (after the first Read into it) a Read allocates nothing. On error
// dst may hold some new values.
func (s *HwCounterSet) Read(dst map[string]uint64) error {
	if s == nil {
		return errNil("read hw counters")
	}
	for i, name := range s.names {
		v, err := s.read(i)
		if err != nil {
			return err
		}
		dst[name] = v
	}
	return nil
}

// ReadValues reads every counter into dst[i], in the order of
// [HwCounterSet.Names]; dst must be at least that long.
func (s *HwCounterSet) ReadValues(dst []uint64) error {
	if s == nil {
		return errNil("read hw counters")
	}
	if len(dst) < len(s.names) {
		return errs.New(s.op, s.dev, fmt.Errorf("destination holds %d values, the set has %d counters", len(dst), len(s.names)))
	}
	for i := range s.names {
		v, err := s.read(i)
		if err != nil {
			return err
		}
		dst[i] = v
	}
	return nil
}

func (s *HwCounterSet) read(i int) (uint64, error) {
	b, err := s.readRaw(i)
	if err != nil {
		return 0, err
	}
	v, ok := parseCounter(b)
	if !ok {
		text := strings.TrimSuffix(string(b), "\n")
		return 0, errs.New(s.op, s.dev, parseErr(s.paths[i], text, `a decimal 64-bit counter ("%llu")`))
	}
	return v, nil
}

// readRaw reads counter i's file from offset 0 into the set's buffer:
// one pread of a held file, or an open, read and close of one that is not.
func (s *HwCounterSet) readRaw(i int) ([]byte, error) {
	if s.closed {
		return nil, errs.New(s.op, s.dev, &fs.PathError{Op: "read", Path: s.paths[i], Err: fs.ErrClosed})
	}
	if f := s.files[i]; f != nil {
		n, err := f.ReadAt(s.buf[:], 0)
		if err != nil && err != io.EOF {
			return nil, errs.New(s.op, s.dev, pathErrAt(err, s.paths[i]))
		}
		return s.buf[:n], nil
	}
	read := sys.ReadFileIn
	if s.nofollow {
		read = sys.ReadFileInNoFollow
	}
	b, err := read("", s.unheld[i], s.buf[:])
	if err != nil {
		var tl *sys.TooLargeError
		if errors.As(err, &tl) {
			// As a held file's pread of a full buffer: the text is
			// not a counter, which the caller's parse says.
			return s.buf[:], nil
		}
		return nil, errs.New(s.op, s.dev, pathErrAt(err, s.paths[i]))
	}
	return b, nil
}

// ReadAll reads every counter into dst[i], in the order of
// [HwCounterSet.Names], and sets ok[i] to whether it has a value: a
// counter whose file cannot be read or parsed does not stop the others.
// It returns how many failed and the first failure's error. dst and ok
// must be at least as long as Names. It allocates nothing while every
// counter reads well.
func (s *HwCounterSet) ReadAll(dst []uint64, ok []bool) (failed int, err error) {
	if s == nil {
		return 0, errNil("read hw counters")
	}
	if len(dst) < len(s.names) || len(ok) < len(s.names) {
		return 0, errs.New(s.op, s.dev, fmt.Errorf("destination holds %d values and %d flags, the set has %d counters", len(dst), len(ok), len(s.names)))
	}
	for i := range s.names {
		v, rerr := s.read(i)
		if rerr != nil {
			ok[i] = false
			if failed == 0 {
				err = rerr
			}
			failed++
			continue
		}
		dst[i], ok[i] = v, true
	}
	return failed, err
}

func pathErrAt(err error, p string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return &fs.PathError{Op: "read", Path: p, Err: err}
}

// Close closes the files (and gives their descriptors back to the
// [FileLimit]). It is safe to call more than once; reading a closed set
// fails with an error matching fs.ErrClosed.
func (s *HwCounterSet) Close() error {
	if s == nil {
		return errNil("close hw counters")
	}
	var first error
	for i, c := range s.close {
		if c == nil {
			continue
		}
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
		if s.limit != nil {
			s.limit.give()
		}
		s.close[i] = nil
		s.files[i] = nil
	}
	s.closed = true
	return first
}

// CounterSet keeps a port's counters/ files (its PMA counters, see
// [Counters]) open so that reading them again costs one pread per counter
// and no allocation. A set is not safe for concurrent use; Close it when
// done (it holds one descriptor per counter).
type CounterSet struct{ s *HwCounterSet }

// OpenCounters opens the port's counters/ files for repeated reading with
// [CounterSet.ReadValues]. The error matches [ErrNotSupported] when the
// port has no counters/ directory (a driver without a PMA).
func (p *Port) OpenCounters() (*CounterSet, error) {
	if p == nil {
		return nil, errNil("read PMA counters")
	}
	s, err := p.fs.openCounterFiles(path.Join(p.dir(), "counters"), "read PMA counters", p.Name(), "the driver has no PMA")
	if err != nil {
		return nil, err
	}
	return &CounterSet{s: s}, nil
}

// OpenCounters is [Port.OpenCounters] for port of the device ca, without
// reading the port's attributes first (see [FS.PortNumbers]). The error
// matches os.ErrNotExist when there is no such device or port, and
// [ErrNotSupported] when the port has no counters/.
func (f *FS) OpenCounters(ca string, port int) (*CounterSet, error) {
	s, err := f.openPortCounterFiles(ca, port, "counters", "read PMA counters", "the driver has no PMA")
	if err != nil {
		return nil, err
	}
	return &CounterSet{s: s}, nil
}

// OpenCountersExt is [FS.OpenCounters] of the port's counters_ext/
// directory: the 64-bit PMA counters (port_rcv_data_64, …) that kernels
// before 4.5 exposed apart from counters/, which node_exporter still
// reads. The error matches [ErrNotSupported] when the port has no
// counters_ext/ (every kernel since 4.5).
func (f *FS) OpenCountersExt(ca string, port int) (*CounterSet, error) {
	s, err := f.openPortCounterFiles(ca, port, "counters_ext", "read PMA counters", "the kernel has 64-bit counters in counters/ (since Linux 4.5)")
	if err != nil {
		return nil, err
	}
	return &CounterSet{s: s}, nil
}

// Names returns the counter (file) names in the set, sorted. The slice
// belongs to the set.
func (c *CounterSet) Names() []string {
	if c == nil {
		return nil
	}
	if c.s == nil {
		return nil
	}
	return c.s.names
}

// ReadValues reads every counter into dst[i], in the order of
// [CounterSet.Names], and sets ok[i] to whether it has a value: false,
// as [Port.Counters] leaves such a counter out, when the file reads
// "N/A (no PMA)" or the kernel could not get the value from the driver.
// dst and ok must be at least as long as Names. It allocates nothing.
func (c *CounterSet) ReadValues(dst []uint64, ok []bool) error {
	if c == nil {
		return errNil("read PMA counters")
	}
	s := c.s
	if s == nil {
		return errs.New("read PMA counters", "", errNotOpened)
	}
	if len(dst) < len(s.names) || len(ok) < len(s.names) {
		return errs.New(s.op, s.dev, fmt.Errorf("destination holds %d values and %d flags, the set has %d counters", len(dst), len(ok), len(s.names)))
	}
	for i := range s.names {
		v, has, err := s.readPMA(i)
		if err != nil {
			return err
		}
		dst[i], ok[i] = v, has
	}
	return nil
}

// readPMA reads counter i of a PMA counter set: has is false, with no
// error, for a counter the driver cannot fetch (see ReadValues).
func (s *HwCounterSet) readPMA(i int) (v uint64, has bool, err error) {
	b, err := s.readRaw(i)
	if err != nil {
		if !s.closed && pmaUnavailable(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	b = trimNewline(b)
	v, good := parseCounter(b)
	if !good {
		if string(b) == naPMA {
			return 0, false, nil
		}
		return 0, false, errs.New(s.op, s.dev, parseErr(s.paths[i], string(b), `a decimal counter ("%llu") or "N/A (no PMA)"`))
	}
	return v, true, nil
}

// ReadAll is [CounterSet.ReadValues] where a counter whose file cannot be
// read or parsed does not stop the others: its ok[i] is false too, and it
// is counted in failed (a counter the driver cannot fetch is not a
// failure); err is the first failure's error. It allocates nothing while
// every counter reads well.
func (c *CounterSet) ReadAll(dst []uint64, ok []bool) (failed int, err error) {
	if c == nil {
		return 0, errNil("read PMA counters")
	}
	s := c.s
	if s == nil {
		return 0, errs.New("read PMA counters", "", errNotOpened)
	}
	if len(dst) < len(s.names) || len(ok) < len(s.names) {
		return 0, errs.New(s.op, s.dev, fmt.Errorf("destination holds %d values and %d flags, the set has %d counters", len(dst), len(ok), len(s.names)))
	}
	for i := range s.names {
		v, has, rerr := s.readPMA(i)
		if rerr != nil {
			if failed == 0 {
				err = rerr
			}
			failed++
		}
		dst[i], ok[i] = v, has
	}
	return failed, err
}

// Keep narrows the set to the counters whose keep[i] is true (i in the
// order of [CounterSet.Names]) and closes the other files: pass the ok
// flags of a [CounterSet.ReadValues] to stop reading counters the driver
// cannot fetch, each read of which costs the kernel a PMA query. keep must
// be at least as long as Names; Names shrinks to the kept counters.
func (c *CounterSet) Keep(keep []bool) error {
	if c == nil {
		return errNil("keep PMA counters")
	}
	s := c.s
	if s == nil {
		return errs.New("read PMA counters", "", errNotOpened)
	}
	if len(keep) < len(s.names) {
		return errs.New(s.op, s.dev, fmt.Errorf("%d flags for a set of %d counters", len(keep), len(s.names)))
	}
	n := 0
	for i := range s.names {
		if !keep[i] {
			if s.close[i] != nil {
				s.close[i].Close()
				if s.limit != nil {
					s.limit.give()
				}
			}
			continue
		}
		s.names[n], s.paths[n], s.files[n], s.close[n], s.unheld[n] = s.names[i], s.paths[i], s.files[i], s.close[i], s.unheld[i]
		n++
	}
	clear(s.files[n:])
	clear(s.close[n:])
	s.names, s.paths, s.files, s.close, s.unheld = s.names[:n], s.paths[:n], s.files[:n], s.close[:n], s.unheld[:n]
	return nil
}

// Close closes the files. It is safe to call more than once; reading a
// closed set fails with an error matching fs.ErrClosed.
func (c *CounterSet) Close() error {
	if c == nil {
		return errNil("close PMA counters")
	}
	if c.s == nil {
		return nil
	}
	return c.s.Close()
}

var errNotOpened = errors.New("not opened (a zero value)")

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}
