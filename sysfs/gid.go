package sysfs

import (
	"path"
	"strconv"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
)

// GIDEntry is one slot of a port's GID table: gids/N with, where the kernel
// has them, gid_attrs/types/N and gid_attrs/ndevs/N (like the GID lines of
// ibv_devinfo -v). uverbs.GIDEntry is the same entry as the kernel's
// QUERY_GID_TABLE ioctl reports it, with the same field types except the
// network device: sysfs has its name (NetDev), the ioctl its ifindex.
type GIDEntry struct {
	// Index is the table index N.
	Index int
	// GID is gids/N; zero for an empty slot.
	GID rdma.GID
	// Type is gid_attrs/types/N, parsed with the port's link layer
	// ([rdma.ParseGIDType]): the kernel writes "IB/RoCE v1" for an
	// InfiniBand GID and for a RoCE v1 GID, which is rdma.GIDTypeRoCEv1 on
	// an Ethernet port and rdma.GIDTypeIB otherwise, as libibverbs decides.
	// nil when the kernel refuses the read (EINVAL: an empty slot) or the
	// file does not exist (kernels before 4.9); text that does not parse
	// is a *ParseError.
	Type *rdma.GIDType
	// NetDev is gid_attrs/ndevs/N, the name of the network device of a
	// RoCE GID; nil when the kernel refuses the read (EINVAL: an empty
	// slot, or a GID with no network device, as on InfiniBand) or there is
	// no such file.
	NetDev *string
}

// GID reads slot index of the port's GID table, with its attributes. GID 0
// of an InfiniBand port is the subnet prefix and the port GUID
// ([GID.Prefix], [GID.InterfaceID]): what libibumad's umad_get_port reads
// for gid_prefix and port_guid, and ibstatus's "default gid". The error
// matches os.ErrNotExist when there is no such slot.
func (p *Port) GID(index int) (GIDEntry, error) {
	if p == nil {
		return GIDEntry{}, errNil("read GID")
	}
	e, err := p.fs.readGID(p.dir(), p.LinkLayer, index)
	if err != nil {
		return GIDEntry{}, errs.New("read GID "+strconv.Itoa(index), p.Name(), err)
	}
	return e, nil
}

// GIDValue reads slot index of the port's GID table without its
// attributes: one file, gids/N, where [Port.GID] reads three. It is what
// libibumad's umad_get_port reads (gids/0, for gid_prefix and port_guid).
// The error matches os.ErrNotExist when there is no such slot.
func (p *Port) GIDValue(index int) (rdma.GID, error) {
	if p == nil {
		return rdma.GID{}, errNil("read GID")
	}
	g, err := p.fs.readGIDValue(p.dir(), index)
	if err != nil {
		return rdma.GID{}, errs.New("read GID "+strconv.Itoa(index), p.Name(), err)
	}
	return g, nil
}

// GIDs reads the port's GID table and returns the slots that hold a GID
// (not all zeros), in index order, with their attributes (like the GID
// lines of ibv_devinfo -v). It reads one file per slot: rxe has 1024
// slots, mlx5 RoCE ports 256 or more. A slot whose gids/N or
// gid_attrs/types/N does not parse is a *ParseError; a GID attribute the kernel refuses (EINVAL) is left nil,
// other read errors are returned (os.ErrPermission, …).
func (p *Port) GIDs() ([]GIDEntry, error) {
	if p == nil {
		return nil, errNil("read GIDs")
	}
	dir := path.Join(p.dir(), "gids")
	names, err := p.fs.readNames(dir)
	if err != nil {
		return nil, errs.New("read GIDs", p.Name(), err)
	}
	var out []GIDEntry
	for _, i := range sortedIndexes(names) {
		g, err := p.fs.readGIDValue(p.dir(), i)
		if err != nil {
			return nil, errs.New("read GIDs", p.Name(), err)
		}
		if g.IsZero() {
			continue
		}
		e := GIDEntry{Index: i, GID: g}
		if err := p.fs.readGIDAttrs(p.dir(), p.LinkLayer, &e); err != nil {
			return nil, errs.New("read GIDs", p.Name(), err)
		}
		out = append(out, e)
	}
	return out, nil
}

func (f *FS) readGID(portDir string, ll rdma.LinkLayer, index int) (GIDEntry, error) {
	g, err := f.readGIDValue(portDir, index)
	if err != nil {
		return GIDEntry{}, err
	}
	e := GIDEntry{Index: index, GID: g}
	if g.IsZero() {
		return e, nil
	}
	return e, f.readGIDAttrs(portDir, ll, &e)
}

func (f *FS) readGIDValue(portDir string, index int) (rdma.GID, error) {
	rel := path.Join(portDir, "gids", strconv.Itoa(index))
	s, err := f.readString(rel)
	if err != nil {
		return rdma.GID{}, err
	}
	g, err := parseGID(s)
	if err != nil {
		return rdma.GID{}, f.inFile(err, rel)
	}
	return g, nil
}

// readGIDAttrs reads gid_attrs/{types,ndevs}/N, the type parsed with the
// port's link layer ll. EINVAL (the kernel's answer for an empty slot, and
// for ndevs of a GID without a netdev) and a missing file both leave the
// attribute nil.
func (f *FS) readGIDAttrs(portDir string, ll rdma.LinkLayer, e *GIDEntry) error {
	n := strconv.Itoa(e.Index)
	rel := path.Join(portDir, "gid_attrs", "types", n)
	s, ok, err := f.readGIDAttr(rel)
	if err != nil {
		return err
	}
	if ok {
		t, ok := rdma.ParseGIDType(s, ll)
		if !ok {
			return parseErr(f.display(rel), s, `"IB/RoCE v1" or "RoCE v2"`)
		}
		e.Type = &t
	}
	s, ok, err = f.readGIDAttr(path.Join(portDir, "gid_attrs", "ndevs", n))
	if err != nil {
		return err
	}
	if ok {
		e.NetDev = &s
	}
	return nil
}

// readGIDAttr reads one gid_attrs file; ok is false when the kernel
// refuses the read (EINVAL) or the file does not exist.
func (f *FS) readGIDAttr(rel string) (s string, ok bool, err error) {
	s, err = f.readString(rel)
	switch {
	case err == nil:
		return s, true, nil
	case isAbsent(err) || isEINVAL(err):
		return "", false, nil
	}
	return "", false, err
}
