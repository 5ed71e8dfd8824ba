package sysfs

import (
	"path"
	"strconv"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
)

// GID types, the values of ports/N/gid_attrs/types/M.
const (
	GIDTypeIBRoCEv1 = "IB/RoCE v1" // an InfiniBand GID, or a RoCE v1 GID
	GIDTypeRoCEv2   = "RoCE v2"
)

// GIDEntry is one slot of a port's GID table: gids/N with, where the kernel
// has them, gid_attrs/types/N and gid_attrs/ndevs/N (like the GID lines of
// ibv_devinfo -v).
type GIDEntry struct {
	// Index is the table index N.
	Index int
	// GID is gids/N; zero for an empty slot.
	GID rdma.GID
	// Type is gid_attrs/types/N: GIDTypeIBRoCEv1 or GIDTypeRoCEv2. nil
	// when the kernel refuses the read (EINVAL: an empty slot) or the file
	// does not exist (kernels before 4.9).
	Type *string
	// NetDev is gid_attrs/ndevs/N, the network device of a RoCE GID; nil
	// when the kernel refuses the read (EINVAL: an empty slot, or a GID
	// with no network device, as on InfiniBand) or there is no such file.
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
	e, err := p.fs.readGID(p.dir(), index)
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
// slots, mlx5 RoCE ports 256 or more. A slot whose gids/N does not parse is
// a *ParseError; a GID attribute the kernel refuses (EINVAL) is left nil,
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
		if err := p.fs.readGIDAttrs(p.dir(), &e); err != nil {
			return nil, errs.New("read GIDs", p.Name(), err)
		}
		out = append(out, e)
	}
	return out, nil
}

func (f *FS) readGID(portDir string, index int) (GIDEntry, error) {
	g, err := f.readGIDValue(portDir, index)
	if err != nil {
		return GIDEntry{}, err
	}
	e := GIDEntry{Index: index, GID: g}
	if g.IsZero() {
		return e, nil
	}
	return e, f.readGIDAttrs(portDir, &e)
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

// readGIDAttrs reads gid_attrs/{types,ndevs}/N. EINVAL (the kernel's answer
// for an empty slot, and for ndevs of a GID without a netdev) and a missing
// file both leave the attribute nil.
func (f *FS) readGIDAttrs(portDir string, e *GIDEntry) error {
	for _, a := range []struct {
		dir string
		dst **string
	}{{"types", &e.Type}, {"ndevs", &e.NetDev}} {
		s, err := f.readString(path.Join(portDir, "gid_attrs", a.dir, strconv.Itoa(e.Index)))
		switch {
		case err == nil:
			*a.dst = &s
		case isAbsent(err) || isEINVAL(err):
		default:
			return err
		}
	}
	return nil
}
