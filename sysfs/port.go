package sysfs

import (
	"sort"
	"strconv"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
)

// Port is one port of a CA, /sys/class/infiniband/<ca>/ports/<n>/: what
// libibumad's umad_get_port reads (except the GID, see [Port.GID]) and what
// ibstat and ibstatus print. It describes a port; an open port, to send
// and receive MADs on, is a umad.Port (libibumad's umad_open_port), and
// umad.CAPort is this description in libibumad's umad_port_t shape.
//
// state and phys_state must exist and parse. The other attributes are
// pointers: nil means the file does not exist or, for rate, that the
// kernel refused to compute it (EINVAL, for a port whose link width is
// invalid); never a zero that was not read.
type Port struct {
	// CA is the device's name and Number the port number.
	CA     string
	Number int
	// State is state's number; StateName the kernel's text after it.
	State     rdma.PortState
	StateName string
	// PhysState is phys_state's number; PhysStateName the text after it.
	PhysState     rdma.PhysState
	PhysStateName string
	// Rate is rate, parsed.
	Rate *Rate
	// LID is lid (base LID; 0 on RoCE), LMC is lid_mask_count.
	LID *uint32
	LMC *uint8
	// SMLID is sm_lid and SMSL is sm_sl.
	SMLID *uint32
	SMSL  *uint8
	// CapMask is cap_mask (IBA PortInfo:CapabilityMask, the port_cap_flags
	// of ibv_query_port).
	CapMask *uint32
	// LinkLayer is link_layer parsed (rdma.ParseLinkLayer), and
	// LinkLayerName its text ("InfiniBand", "Ethernet", "Unknown"); nil
	// and rdma.LinkLayerUnspecified when the file does not exist.
	LinkLayer     rdma.LinkLayer
	LinkLayerName *string
	// PKeys is the P_Key table, pkeys/0 … pkeys/N-1 (0x%04x each),
	// indexed by table index; nil when the port has no pkeys/ directory
	// (the kernel creates it only for a table of at least one entry). An
	// index with no file (the kernel leaves no gaps) holds 0, which IBA
	// defines as an invalid P_Key.
	PKeys []uint16
	// Umad and ISSM are the port's umad and issm character devices, nil
	// when there are none (ib_umad not loaded; no issm on ports without
	// an SMI on Linux 6.12, §6.4 of the ABI notes).
	Umad *CharDev
	ISSM *CharDev

	fs *FS
}

// Name returns "ca/port", the notation of iproute2's rdma tool ("rxe0/1").
func (p *Port) Name() string {
	if p == nil {
		return ""
	}
	return portName(p.CA, p.Number)
}

func portName(ca string, n int) string { return ca + "/" + strconv.Itoa(n) }

// dir returns the port's directory under the root.
func (p *Port) dir() string { return portDir(p.CA, p.Number) }

func portDir(ca string, n int) string {
	return classInfiniBand + "/" + ca + "/ports/" + strconv.Itoa(n)
}

// Port reads port n of the RDMA device ca (like umad_get_port with both
// given), with its umad and issm nodes. The error matches os.ErrNotExist
// when there is no such device or port.
func (f *FS) Port(ca string, n int) (*Port, error) { return f.ReadPort(ca, n, PartsAll) }

// ReadPort is [FS.Port] with only the optional parts that parts selects:
// without [PartCharDevs] the character devices are not read and
// [Port.Umad] and [Port.ISSM] are nil (a caller that finds its umad node
// with [FS.FindCharDev] reads one class's entries, not both classes').
func (f *FS) ReadPort(ca string, n int, parts Parts) (*Port, error) {
	p := new(Port)
	if err := f.ReadPortInto(p, ca, n, parts); err != nil {
		return nil, err
	}
	return p, nil
}

// ReadPortInto is [FS.ReadPort] into p, which it overwrites: for a
// caller that keeps the record in an allocation of its own (umad's open
// port). The error matches syscall.EINVAL when p is nil.
func (f *FS) ReadPortInto(p *Port, ca string, n int, parts Parts) error {
	if p == nil {
		return errNil("read port")
	}
	if !validName(ca) {
		return errs.New("read port", portName(ca, n), f.noSuchDevice(classInfiniBand, ca))
	}
	var devs []CharDev
	if parts&PartCharDevs != 0 {
		var err error
		if devs, _, err = f.charDevs(); err != nil {
			return err
		}
	}
	pd, err := f.openDir(classInfiniBand + "/" + ca + "/ports")
	if err != nil {
		return errs.New("read port", portName(ca, n), err)
	}
	defer pd.close()
	return f.readPortInto(&pd, p, ca, n, devs)
}

// readPortInto reads port n of ca, whose ports directory is pd, into p.
func (f *FS) readPortInto(pd *dir, p *Port, ca string, n int, devs []CharDev) error {
	*p = Port{CA: ca, Number: n, fs: f}
	d, err := pd.sub(strconv.Itoa(n))
	if err == nil {
		err = f.readPortAttrs(&d, p)
		d.close()
	}
	if err != nil {
		return errs.New("read port", p.Name(), err)
	}
	for i := range devs {
		d := &devs[i]
		if d.CA != ca || d.Port != n || (d.Kind != KindUmad && d.Kind != KindISSM) {
			continue
		}
		c := *d // a copy only for the port's own nodes
		if d.Kind == KindUmad {
			p.Umad = &c
		} else {
			p.ISSM = &c
		}
	}
	return nil
}

// readPortAttrs reads p's attributes and P_Keys in its directory d.
func (f *FS) readPortAttrs(d *dir, p *Port) error {
	for _, e := range []struct {
		file string
		num  *int
		name *string
	}{
		{"state", (*int)(&p.State), &p.StateName},
		{"phys_state", (*int)(&p.PhysState), &p.PhysStateName},
	} {
		s, err := d.readString(e.file)
		if err != nil {
			return err
		}
		if *e.num, *e.name, err = parseEnumLine(s); err != nil {
			return f.inFile(err, d.relOf(e.file))
		}
	}

	s, err := d.readString("rate")
	switch {
	case err == nil:
		r, err := ParseRate(s)
		if err != nil {
			return f.inFile(err, d.relOf("rate"))
		}
		p.Rate = &r
	case isAbsent(err) || isEINVAL(err):
	default:
		return err
	}

	for _, u := range []struct {
		file string
		bits int
		want string
		set  func(uint64)
	}{
		{"lid", 32, `"0x%x"`, func(v uint64) { x := uint32(v); p.LID = &x }},
		{"sm_lid", 32, `"0x%x"`, func(v uint64) { x := uint32(v); p.SMLID = &x }},
		{"lid_mask_count", 8, `"%u" (0–255)`, func(v uint64) { x := uint8(v); p.LMC = &x }},
		{"sm_sl", 8, `"%u" (0–255)`, func(v uint64) { x := uint8(v); p.SMSL = &x }},
		{"cap_mask", 32, `"0x%08x"`, func(v uint64) { x := uint32(v); p.CapMask = &x }},
	} {
		v, err := d.optUint(u.file, u.bits, u.want)
		if err != nil {
			return err
		}
		if v != nil {
			u.set(*v)
		}
	}

	if p.LinkLayerName, err = d.optString("link_layer"); err != nil {
		return err
	}
	if p.LinkLayerName != nil {
		p.LinkLayer, _ = rdma.ParseLinkLayer(*p.LinkLayerName)
	}
	return f.readPKeys(d, p)
}

// readPKeys reads the P_Key table of the port directory d into p: the
// pkeys directory is listed and its files read relative to it.
func (f *FS) readPKeys(d *dir, p *Port) error {
	pk, err := d.sub("pkeys")
	if err != nil {
		if isAbsent(err) {
			return nil
		}
		return err
	}
	defer pk.close()
	ents, err := pk.names()
	if err != nil {
		if isAbsent(err) {
			return nil
		}
		return err
	}
	type entry struct {
		index int
		value uint16
	}
	var list []entry
	maxIndex := -1
	for _, e := range ents {
		idx, ok := parseIndex(e)
		if !ok {
			continue
		}
		v, err := pk.optUint(e, 16, `"0x%04x"`)
		if err != nil {
			return err
		}
		if v == nil {
			continue
		}
		list = append(list, entry{idx, uint16(*v)})
		maxIndex = max(maxIndex, idx)
	}
	p.PKeys = make([]uint16, maxIndex+1)
	for _, e := range list {
		p.PKeys[e.index] = e.value
	}
	return nil
}

// maxTable bounds the index of a table file (pkeys/N, gids/N): larger
// indexes are ignored rather than allocated for. The kernel's tables are at
// most 65536 entries.
const maxTable = 1 << 16

// parseIndex parses a table file's name: a decimal index below maxTable.
func parseIndex(name string) (int, bool) {
	if !allDigits(name) || (name[0] == '0' && len(name) > 1) || len(name) > 5 {
		return 0, false
	}
	n, _ := strconv.Atoi(name)
	return n, n < maxTable
}

// sortedIndexes returns the table indexes among names, in order.
func sortedIndexes(names []string) []int {
	var idx []int
	for _, n := range names {
		if i, ok := parseIndex(n); ok {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	return idx
}
