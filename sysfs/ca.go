package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
)

// CA is one RDMA device of /sys/class/infiniband/<name>/: what
// libibumad's umad_get_ca reads, and what ibstat prints before the ports.
//
// Optional attributes are pointers: nil means the file does not exist (rxe
// has no hca_type, hw_rev or board_id), which is not the same as an empty
// value (rxe's fw_ver exists and is empty).
type CA struct {
	// Name is the device name, the directory's name ("mlx5_0", "rxe0").
	Name string
	// NodeType is node_type's number, and NodeTypeName the text after it
	// as the kernel printed it ("1: CA" gives NodeCA and "CA").
	NodeType     rdma.NodeType
	NodeTypeName string
	// NodeGUID is node_guid.
	NodeGUID rdma.GUID
	// SysImageGUID is sys_image_guid.
	SysImageGUID rdma.GUID
	// FWVersion is fw_ver (empty on rxe; created by the core since
	// Linux 4.10, so nil only on older kernels).
	FWVersion *string
	// HCAType is hca_type (mlx4, mlx5: "MT4123"; ibstat's "CA type").
	HCAType *string
	// HWRev is hw_rev (ibstat's "Hardware version").
	HWRev *string
	// BoardID is board_id.
	BoardID *string
	// NodeDesc is node_desc (up to 64 characters; writable by root).
	NodeDesc *string
	// Parent is parent, the network device a software device sits on
	// (rxe, siw).
	Parent *string
	// Ports are the ports/ entries in increasing order: 1 to N on a CA,
	// router or RNIC; 0 alone (the management port) on a switch.
	Ports []*Port
	// Verbs is the uverbs character device of this CA, nil when there is
	// none (ib_uverbs not loaded).
	Verbs *CharDev

	fs *FS
}

// NumPorts returns the highest port number, the kernel's rdma_end_port
// (ibstat's "Number of ports", netlink's port count): the number of ports
// of a CA, whose ports are 1 to N, and 0 for a switch, whose only port is
// its management port 0.
func (c *CA) NumPorts() int {
	if c == nil {
		return 0
	}
	n := 0
	for _, p := range c.Ports {
		n = max(n, p.Number)
	}
	return n
}

// Port returns the port numbered n, or nil.
func (c *CA) Port(n int) *Port {
	if c == nil {
		return nil
	}
	for _, p := range c.Ports {
		if p.Number == n {
			return p
		}
	}
	return nil
}

// HwCounters reads the device-wide hw_counters/ directory, which only some
// drivers provide (hfi1; most drivers have per-port counters only, see
// [Port.HwCounters]). Its error matches [ErrNotSupported] when the directory
// does not exist.
func (c *CA) HwCounters() (HwCounters, error) {
	if c == nil {
		return nil, errNil("read hw counters")
	}
	return c.fs.hwCounters(path.Join(classInfiniBand, c.Name), c.Name)
}

// CANames returns the names of the RDMA devices, the entries of
// /sys/class/infiniband, sorted (what umad_get_cas_names lists, before its
// filter: libibumad keeps names shorter than 20 characters whose node type
// is 1 to 3). An empty list means no devices; when class/infiniband itself
// does not exist (ib_core is not loaded) the error matches os.ErrNotExist.
func (f *FS) CANames() ([]string, error) {
	names, err := f.readNames(classInfiniBand)
	if err != nil {
		return nil, errs.New("list CAs", "", err)
	}
	return names, nil
}

// CAs reads every RDMA device, in name order, with its ports (like
// ibstat with no arguments). A device that cannot be read does not hide
// the others: CAs returns every device it could read and, when some could
// not, an error that is the errors.Join of one *Error per bad device
// (errors.Is and errors.As see each). A device removed while CAs runs gives
// an error matching os.ErrNotExist, and calling again skips it.
func (f *FS) CAs() ([]*CA, error) {
	names, err := f.CANames()
	if err != nil {
		return nil, err
	}
	devs, _, err := f.charDevs()
	if err != nil {
		return nil, err
	}
	cas := make([]*CA, 0, len(names))
	var bad []error
	for _, name := range names {
		ca, err := f.readCA(name, devs, PartsAll)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		cas = append(cas, ca)
	}
	return cas, errors.Join(bad...)
}

// CA reads the RDMA device name and its ports (like umad_get_ca, or ibstat
// NAME). The error matches os.ErrNotExist when there is no such device.
// Files the kernel always creates (node_type, node_guid, sys_image_guid,
// ports/) must exist and parse; the others are optional.
func (f *FS) CA(name string) (*CA, error) {
	devs, _, err := f.charDevs()
	if err != nil {
		return nil, err
	}
	return f.readCA(name, devs, PartsAll)
}

// PortNumbers lists the port numbers of the device name (its ports/
// directory), in order, without reading the ports: what a caller that
// goes on to one file or directory of each port needs, such as
// [FS.OpenHwCounters]. The error matches os.ErrNotExist when there is no
// such device.
func (f *FS) PortNumbers(name string) ([]int, error) {
	const op = "read CA ports"
	if !validName(name) {
		return nil, errs.New(op, name, f.noSuchDevice(classInfiniBand, name))
	}
	ents, err := f.readNames(classInfiniBand + "/" + name + "/ports")
	if err != nil {
		return nil, errs.New(op, name, err)
	}
	ports := make([]int, 0, len(ents))
	for _, e := range ents {
		n, err := f.portNumber(name, e)
		if err != nil {
			return nil, errs.New(op, name, err)
		}
		ports = append(ports, n)
	}
	slices.Sort(ports)
	return ports, nil
}

// portNumber parses e, an entry of the ports/ directory of the device
// name; a parse error names the entry's path.
func (f *FS) portNumber(name, e string) (int, error) {
	n, err := parsePortName(e)
	if err != nil {
		pe := err.(*ParseError)
		pe.Path = f.display(path.Join(classInfiniBand, name, "ports", e))
		return 0, pe
	}
	return n, nil
}

// Parts selects the optional parts of a device that [FS.ReadCAs] reads, on
// top of what libibumad's umad_get_ca reads (node type, GUIDs, fw_ver,
// hw_rev, hca_type and every port's attributes and P_Keys). [FS.CA] and
// [FS.CAs] read them all.
type Parts uint

const (
	// PartDescription is board_id, node_desc and parent ([CA.BoardID],
	// [CA.NodeDesc], [CA.Parent]): three files a device.
	PartDescription Parts = 1 << iota
	// PartCharDevs is the character devices ([CA.Verbs], [Port.Umad],
	// [Port.ISSM]): class/infiniband_verbs and class/infiniband_mad are
	// listed, and three files read for each of their devices.
	PartCharDevs
	// PartsAll is every part.
	PartsAll = PartDescription | PartCharDevs
)

// ReadCAs reads the RDMA devices names with their ports, and of the
// optional parts only those parts selects: with parts 0 it reads the files
// libibumad's umad_get_ca reads and no others (a tool that prints what
// ibstat prints needs no more), and the fields of the parts left out are
// nil. The character devices, when asked for, are listed once for all the
// names. The result holds a CA or nil per name, in order, and errs the
// error of each name that could not be read (matching os.ErrNotExist when
// there is no such device), nil where it could; err is set only when the
// character devices cannot be listed.
func (f *FS) ReadCAs(names []string, parts Parts) (cas []*CA, errs []error, err error) {
	var devs []CharDev
	if parts&PartCharDevs != 0 {
		if devs, _, err = f.charDevs(); err != nil {
			return nil, nil, err
		}
	}
	cas, errs = make([]*CA, len(names)), make([]error, len(names))
	for i, n := range names {
		cas[i], errs[i] = f.readCA(n, devs, parts)
	}
	return cas, errs, nil
}

// readCA reads the device name; devs are the character devices, nil
// unless parts has PartCharDevs.
func (f *FS) readCA(name string, devs []CharDev, parts Parts) (*CA, error) {
	if !validName(name) {
		return nil, errs.New("read CA", name, f.noSuchDevice(classInfiniBand, name))
	}
	// The device's directory is opened once and its files and ports read
	// relative to it (see dir).
	cd, err := f.openDir(classInfiniBand + "/" + name)
	if err != nil {
		return nil, errs.New("read CA", name, f.dangling(classInfiniBand+"/"+name, err))
	}
	defer cd.close()
	ca, err := f.readCAAttrs(&cd, name, parts)
	if err != nil {
		return nil, errs.New("read CA", name, err)
	}
	pd, err := cd.sub("ports")
	if err != nil {
		return nil, errs.New("read CA", name, err)
	}
	defer pd.close()
	ents, err := pd.names()
	if err != nil {
		return nil, errs.New("read CA", name, err)
	}
	for _, e := range ents {
		n, err := f.portNumber(name, e)
		if err == nil && n == 0 && ca.NodeType != rdma.NodeSwitch {
			err = parseErr(f.display(path.Join(classInfiniBand, name, "ports", e)), e, fmt.Sprintf("a port number from 1: port 0 exists only on a switch (node type %d), this is a %s (%d)",
				rdma.NodeSwitch, ca.NodeType, ca.NodeType))
		}
		if err != nil {
			return nil, errs.New("read CA", name, err)
		}
		p := new(Port)
		if err := f.readPortInto(&pd, p, name, n, devs); err != nil {
			return nil, err
		}
		ca.Ports = append(ca.Ports, p)
	}
	sort.Slice(ca.Ports, func(i, j int) bool { return ca.Ports[i].Number < ca.Ports[j].Number })
	for i := range devs {
		if devs[i].Kind == KindUverbs && devs[i].CA == name {
			d := devs[i]
			ca.Verbs = &d
			break
		}
	}
	return ca, nil
}

// readCAAttrs reads the attributes of the device name in its directory d.
func (f *FS) readCAAttrs(d *dir, name string, parts Parts) (*CA, error) {
	ca := &CA{Name: name, fs: f}
	s, err := d.readString("node_type")
	if err != nil {
		// A device that does not exist is named by its directory, not
		// by node_type (on the running system's tree, openDir already
		// said so); the directory is looked at only then, which saves a
		// stat a device.
		if !d.open {
			if _, serr := fs.Stat(f.files(), d.rel); serr != nil {
				return nil, f.dangling(d.rel, f.fixPathErr(serr, d.rel))
			}
		}
		return nil, err
	}
	n, typeName, err := parseEnumLine(s)
	if err != nil {
		return nil, f.inFile(err, d.relOf("node_type"))
	}
	ca.NodeType, ca.NodeTypeName = rdma.NodeType(n), typeName
	for _, g := range []struct {
		file string
		dst  *rdma.GUID
	}{{"node_guid", &ca.NodeGUID}, {"sys_image_guid", &ca.SysImageGUID}} {
		s, err := d.readString(g.file)
		if err != nil {
			return nil, err
		}
		if *g.dst, err = parseGUID(s); err != nil {
			return nil, f.inFile(err, d.relOf(g.file))
		}
	}
	type opt struct {
		file string
		dst  **string
	}
	all := [...]opt{
		{"fw_ver", &ca.FWVersion},
		{"hca_type", &ca.HCAType},
		{"hw_rev", &ca.HWRev},
		// PartDescription:
		{"board_id", &ca.BoardID},
		{"node_desc", &ca.NodeDesc},
		{"parent", &ca.Parent},
	}
	opts := all[:3]
	if parts&PartDescription != 0 {
		opts = all[:]
	}
	for _, o := range opts {
		if *o.dst, err = d.optString(o.file); err != nil {
			return nil, err
		}
	}
	return ca, nil
}

// DanglingLinkError says that a device's entry in class/infiniband is a
// symbolic link to nothing: the device directory it names does not exist.
// A device removed while it is read leaves no entry behind; a dangling one
// is a broken tree (a driver that failed half-way, a copied tree missing
// its devices/), which libibumad's umad_get_cas_names skips without a
// word. Discovery reports it instead, so that ibstat fails, naming it. It
// matches os.ErrNotExist (ENOENT).
type DanglingLinkError struct {
	// Path is the link, Target what it points at.
	Path, Target string
}

// Error names the link and its target.
func (e *DanglingLinkError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return e.Path + " is a dangling symbolic link: its target " + e.Target + " does not exist"
}

// Unwrap returns ENOENT (nil for a nil *DanglingLinkError).
func (e *DanglingLinkError) Unwrap() error {
	if e == nil {
		return nil
	}
	return syscall.ENOENT
}

// dangling returns err, or a *DanglingLinkError when err says rel does not
// exist and rel is a symbolic link (on a tree read from a directory; an
// fs.FS given to NewFS has no links to look at).
func (f *FS) dangling(rel string, err error) error {
	root := f.osRoot0()
	if root == "" || !isAbsent(err) {
		return err
	}
	p := root + "/" + rel
	if fi, lerr := os.Lstat(p); lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return err
	}
	target, lerr := os.Readlink(p)
	if lerr != nil {
		return err
	}
	return &DanglingLinkError{Path: f.display(rel), Target: target}
}

// inFile sets the path of a *ParseError returned by a Parse function.
func (f *FS) inFile(err error, rel string) error {
	if pe, ok := err.(*ParseError); ok {
		pe.Path = f.display(rel)
	}
	return err
}

// parsePortName parses the name of a ports/ entry, or a umad or issm
// node's port file: a decimal port number without leading zeros, as the
// kernel names them (u32; an mlx5 device in switchdev mode has one port per
// representor, so numbers above 255 occur). "0" parses: it is the
// management port of a switch, the only port the kernel gives a device of
// node type 2 (rdma_start_port and rdma_end_port are 0 for a switch, 1 and
// the port count otherwise). Whether 0 is valid depends on the node type,
// which a name alone does not tell: [FS.CA] accepts ports/0 only on a
// switch ([NodeSwitch]) and fails on it elsewhere. libibumad refuses a CA
// with a non-numeric port entry; so does [FS.CA]. (libibumad also caps the
// port number, and takes "0" on any node type; that is its business, not
// this package's.)
func parsePortName(name string) (int, error) {
	const want = "a decimal port number from 0 to 4294967295 without leading zeros"
	if !allDigits(name) || (name[0] == '0' && len(name) > 1) {
		return 0, parseErr("", name, want)
	}
	n, err := strconv.ParseUint(name, 10, 32)
	if err != nil {
		return 0, parseErr("", name, want)
	}
	return int(n), nil
}
