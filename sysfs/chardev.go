package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/internal/errs"
)

// CharDevKind says which kind of RDMA character device a [CharDev] is.
type CharDevKind string

// Character device kinds: the prefix of the device name.
const (
	KindUverbs CharDevKind = "uverbs" // /dev/infiniband/uverbsN, one per CA (ib_uverbs)
	KindUmad   CharDevKind = "umad"   // /dev/infiniband/umadN, one per port (ib_umad)
	KindISSM   CharDevKind = "issm"   // /dev/infiniband/issmN, per port with an SMI (ib_umad)
)

// DevDir is where devtmpfs (and udev) create the RDMA character devices.
const DevDir = "/dev/infiniband"

// CharDev is an RDMA character device as sysfs describes it:
// /sys/class/infiniband_verbs/uverbsN or /sys/class/infiniband_mad/umadN
// and issmN.
type CharDev struct {
	// Kind is KindUverbs, KindUmad or KindISSM; Name is "uverbs0",
	// "umad1", …; Index is N.
	Kind  CharDevKind
	Name  string
	Index int
	// Path is DevDir + "/" + Name, the node devtmpfs creates.
	Path string
	// CA is ibdev, the RDMA device it belongs to.
	CA string
	// Port is port (umad and issm); 0 for uverbs.
	Port int
	// ABIVersion is uverbsN/abi_version, the driver's uverbs ABI (mlx5 1,
	// rxe 2); nil for umad and issm, whose ABI is the class's (see
	// [FS.MadABIVersion]).
	ABIVersion *int
	// Dev is dev, the "major:minor" device number; nil when the file does
	// not exist.
	Dev *DevNumber
}

// DevNumber is a character device's number.
type DevNumber struct {
	Major, Minor uint32
}

// String returns "major:minor", the format of sysfs's dev files.
func (d DevNumber) String() string {
	return strconv.FormatUint(uint64(d.Major), 10) + ":" + strconv.FormatUint(uint64(d.Minor), 10)
}

// CharDevs reads /sys/class/infiniband_verbs and /sys/class/infiniband_mad
// and returns every uverbs, umad and issm device, sorted by kind (uverbs,
// umad, issm) and index. A class directory that does not exist (ib_uverbs or
// ib_umad not loaded) contributes nothing; it is not an error.
//
// This is how libibumad's umad_open_port finds N for a CA and port: by
// scanning umadN/ibdev and umadN/port.
//
// An entry that cannot be read (a port file that is not a number, a
// symbolic link loop, an unreadable ibdev) does not hide the others:
// CharDevs returns every entry it could read together with an error, the
// errors.Join of one *Error per bad entry, naming it. [FS.CA], [FS.CAs]
// and [FS.Port] leave such entries out (they cannot say which port a bad
// entry belongs to), so one bad entry costs no device its discovery.
func (f *FS) CharDevs() ([]CharDev, error) {
	out, bad, err := f.charDevs()
	if err != nil {
		return nil, err
	}
	return out, errors.Join(bad...)
}

// charDevs is CharDevs with the bad entries' errors apart: err is set only
// when a class directory itself cannot be listed.
func (f *FS) charDevs() (out []CharDev, bad []error, err error) {
	for _, c := range []struct {
		class string
		kinds []CharDevKind
	}{
		{classVerbs, []CharDevKind{KindUverbs}},
		{classMad, []CharDevKind{KindUmad, KindISSM}},
	} {
		ents, err := f.readNames(c.class)
		if err != nil {
			if isAbsent(err) {
				continue
			}
			return nil, nil, errs.New("list character devices", "", err)
		}
		for _, e := range ents {
			for _, k := range c.kinds {
				idx, ok := charDevIndex(e, k)
				if !ok {
					continue
				}
				d, err := f.readCharDev(c.class, e, k, idx, true)
				if err != nil {
					bad = append(bad, errs.New("read character device", e, err))
					continue
				}
				out = append(out, d)
			}
		}
	}
	rank := map[CharDevKind]int{KindUverbs: 0, KindUmad: 1, KindISSM: 2}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return rank[out[i].Kind] < rank[out[j].Kind]
		}
		return out[i].Index < out[j].Index
	})
	return out, bad, nil
}

// FindCharDev returns the character device of kind for port of the device
// ca (port 0 for KindUverbs), found as libibumad's umad_open_port finds its
// umad node (dev_to_umad_id): the kind's entries are read in index order,
// from 0 until one is missing, then from the kind's class directory's
// listing, until one names the device and port, where [FS.CharDevs] reads
// every entry of both classes.
// Entries that cannot be read are skipped. The error matches
// os.ErrNotExist when no entry matches (the class does not exist when its
// module, ib_uverbs or ib_umad, is not loaded).
func (f *FS) FindCharDev(kind CharDevKind, ca string, port int) (CharDev, error) {
	return f.findCharDev(kind, ca, port, true)
}

// FindCharDevName is the Name of the character device [FS.FindCharDev]
// returns ("umad0"), found the same way from each entry's ibdev and port
// alone, without its dev and abi_version: what libibumad's dev_to_umad_id
// reads to open a umad port.
func (f *FS) FindCharDevName(kind CharDevKind, ca string, port int) (string, error) {
	d, err := f.findCharDev(kind, ca, port, false)
	return d.Name, err
}

// findCharDev is FindCharDev, reading each entry whole when full is set.
func (f *FS) findCharDev(kind CharDevKind, ca string, port int, full bool) (CharDev, error) {
	const op = "find character device"
	class := classMad
	switch kind {
	case KindUverbs:
		class = classVerbs
	case KindUmad, KindISSM:
	default:
		return CharDev{}, errs.New(op, portName(ca, port), fmt.Errorf("kind %q: want %q, %q or %q: %w", kind, KindUverbs, KindUmad, KindISSM, syscall.EINVAL))
	}
	// libibumad's dev_to_umad_id reads umad0, umad1, ... in turn: the
	// port's node among the first costs no listing of the class. A
	// missing index (past the last entry, or a gap a removed device
	// left) ends the probe, and the listing finds the entries after it.
	probed := 0
	for ; ; probed++ {
		d, err := f.readCharDev(class, string(kind)+strconv.Itoa(probed), kind, probed, full)
		if err == nil && d.CA == ca && d.Port == port {
			return d, nil
		}
		if err != nil && isAbsent(err) {
			break
		}
	}
	ents, err := f.readNames(class)
	if err != nil && !isAbsent(err) {
		return CharDev{}, errs.New(op, portName(ca, port), err)
	}
	type entry struct {
		name string
		idx  int
	}
	var cands []entry
	for _, e := range ents {
		if idx, ok := charDevIndex(e, kind); ok && idx > probed {
			cands = append(cands, entry{e, idx})
		}
	}
	slices.SortFunc(cands, func(a, b entry) int { return a.idx - b.idx })
	for _, c := range cands {
		d, err := f.readCharDev(class, c.name, kind, c.idx, full)
		if err == nil && d.CA == ca && d.Port == port {
			return d, nil
		}
	}
	return CharDev{}, errs.New(op, portName(ca, port), &fs.PathError{Op: "find", Path: f.display(class) + "/" + string(kind) + "*", Err: syscall.ENOENT})
}

// charDevIndex parses "uverbs12" as 12 for kind uverbs.
func charDevIndex(name string, k CharDevKind) (int, bool) {
	num, ok := strings.CutPrefix(name, string(k))
	if !ok || !allDigits(num) || len(num) > 9 || (num[0] == '0' && len(num) > 1) {
		return 0, false
	}
	n, _ := strconv.Atoi(num)
	return n, true
}

// readCharDev reads the entry name of class: its device and port, and
// with full its ABI version (uverbs) and device number.
func (f *FS) readCharDev(class, name string, k CharDevKind, idx int, full bool) (CharDev, error) {
	dir := path.Join(class, name)
	d := CharDev{Kind: k, Name: name, Index: idx, Path: DevDir + "/" + name}
	rel := path.Join(dir, "ibdev")
	ibdev, err := f.readString(rel)
	if err != nil {
		return d, err
	}
	if !validName(ibdev) {
		return d, parseErr(f.display(rel), ibdev, "an RDMA device name")
	}
	d.CA = ibdev
	if k != KindUverbs {
		rel := path.Join(dir, "port")
		s, err := f.readString(rel)
		if err != nil {
			return d, err
		}
		n, err := parsePortName(s)
		if err != nil {
			return d, f.inFile(err, rel)
		}
		d.Port = n
	} else if full {
		v, err := f.optUint(path.Join(dir, "abi_version"), 31, `"%d"`)
		if err != nil {
			return d, err
		}
		if v != nil {
			x := int(*v)
			d.ABIVersion = &x
		}
	}
	if !full {
		return d, nil
	}
	dev, err := f.optString(path.Join(dir, "dev"))
	if err != nil {
		return d, err
	}
	if dev != nil {
		maj, min, ok := strings.Cut(*dev, ":")
		a, ok1 := parseUint(maj, 32)
		b, ok2 := parseUint(min, 32)
		if !ok || !ok1 || !ok2 || strings.HasPrefix(maj, "0x") || strings.HasPrefix(min, "0x") {
			return d, parseErr(f.display(path.Join(dir, "dev")), *dev, `"%u:%u"`)
		}
		d.Dev = &DevNumber{uint32(a), uint32(b)}
	}
	return d, nil
}

// VerbsABIVersion reads /sys/class/infiniband_verbs/abi_version, the uverbs
// core ABI (6 since Linux 2.6.x). The error matches os.ErrNotExist when
// ib_uverbs is not loaded.
func (f *FS) VerbsABIVersion() (int, error) {
	return f.abiVersion(classVerbs + "/abi_version")
}

// MadABIVersion reads /sys/class/infiniband_mad/abi_version, the umad ABI
// (5); libibumad's umad_init and umad_open_port require at least 5. The
// error matches os.ErrNotExist when ib_umad is not loaded.
func (f *FS) MadABIVersion() (int, error) {
	return f.abiVersion(classMad + "/abi_version")
}

func (f *FS) abiVersion(rel string) (int, error) {
	v, err := f.optUint(rel, 31, `a decimal ABI version ("%d")`)
	if err == nil && v == nil {
		_, err = f.readString(rel) // the "does not exist" error, with its path
	}
	if err != nil {
		return 0, errs.New("read ABI version", "", err)
	}
	return int(*v), nil
}
