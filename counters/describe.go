package counters

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/rdmanl"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/uverbs"
)

// Counted is what a counter set counts: the verbs object or resource its
// values belong to (the RFC's counted_type).
type Counted int

// What counter sets count.
const (
	// CountedFlow: flows; the values of a counters object bound to flows.
	CountedFlow Counted = iota + 1
	// CountedPort: a port of the device, all its traffic.
	CountedPort
)

// String returns "flow" or "port".
func (k Counted) String() string {
	switch k {
	case CountedFlow:
		return "flow"
	case CountedPort:
		return "port"
	}
	return fmt.Sprintf("Counted(%d)", int(k))
}

// MarshalText implements encoding.TextMarshaler (for JSON).
func (k Counted) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Source is where a counter set's values come from.
type Source int

// The sources.
const (
	// SourceVerbs: a verbs counters object (UVERBS_METHOD_COUNTERS_READ,
	// ibv_read_counters).
	SourceVerbs Source = iota + 1
	// SourcePMA: sysfs ports/N/counters/, the IBA PortCounters the kernel
	// reads from the driver's PMA with a MAD on every read.
	SourcePMA
	// SourceHwSysfs: sysfs ports/N/hw_counters/, the driver's counters,
	// which the kernel caches for hw_counters/lifespan.
	SourceHwSysfs
	// SourceNetlink: RDMA netlink statistics (RDMA_NLDEV_CMD_STAT_GET,
	// "rdma statistic show link"), the same driver counters read fresh,
	// optional counters that were enabled included.
	SourceNetlink
)

// String names the source ("verbs", "pma", "hw_counters", "netlink").
func (s Source) String() string {
	switch s {
	case SourceVerbs:
		return "verbs"
	case SourcePMA:
		return "pma"
	case SourceHwSysfs:
		return "hw_counters"
	case SourceNetlink:
		return "netlink"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// MarshalText implements encoding.TextMarshaler (for JSON).
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Set is one counter set (the RFC's struct ibv_counter_set_description,
// with its Read): what it counts, whether its values are cached, and the
// names of its counters, which Read fills in order. Close it when done:
// sets that read sysfs keep its files open so that a Read does not
// allocate.
type Set struct {
	// ID is the set's position in Describe's list (the RFC's
	// counter_set_id); -1 for the set of a counters object.
	ID int `json:"id"`
	// Device is the IB device; Port the port (0 for flow sets).
	Device string `json:"device"`
	Port   int    `json:"port,omitempty"`
	// Counted is what the values belong to; Source where they come from.
	Counted Counted `json:"counted"`
	Source  Source  `json:"source"`
	// Cached says that a Read may return values up to Lifespan old (the
	// RFC's IBV_COUNTER_ATTR_CACHED) rather than the device's current
	// ones.
	Cached   bool          `json:"cached"`
	Lifespan time.Duration `json:"lifespan_ns,omitempty"`
	// Names are the counters' names, in Read's order: the driver's names
	// for port sets, "packets" and "bytes" for flow sets.
	Names []string `json:"names"`
	// Units are, for each counter, what it counts: "packets", "octets",
	// or "" for a plain count of events.
	Units []string `json:"units"`
	// Note says what a Read of the set needs, when it cannot be read
	// as described (a flow set without a counters object).
	Note string `json:"note,omitempty"`

	read  func(dst []uint64) error
	close func() error
}

// Read reads the set's values into dst, in the order of Names: one
// uniform call for every kind of set. dst must hold at least len(Names)
// values (EINVAL otherwise); entries past that are left as they are. Port
// sets read from sysfs do not allocate; a counters object's set
// (Object.AsSet) does not either.
//
// Errors: an *Error wrapping EINVAL for a short dst or for the flow set
// Describe lists (a flow set is read through a counters object bound to a
// flow: see Object.AsSet); the read's error otherwise; os.ErrClosed after
// Close.
func (s *Set) Read(dst []uint64) error {
	if s == nil {
		return errs.New("read counter set", "", errArg("nil set"))
	}
	if len(dst) < len(s.Names) {
		return errs.New("read counter set", s.Device, errArg("room for %d values, the set has %d", len(dst), len(s.Names)))
	}
	if s.read == nil {
		return errs.New("read counter set", s.Device, os.ErrClosed)
	}
	return s.read(dst)
}

// Close releases what the set holds (open sysfs files). It is safe to call
// more than once.
func (s *Set) Close() error {
	if s == nil {
		return errs.New("close counter set", "", errArg("nil counter set"))
	}
	s.read = nil
	if s.close == nil {
		return nil
	}
	err := s.close()
	s.close = nil
	return err
}

// StatsSource reads a port's statistics over RDMA netlink; *rdmanl.Conn
// is one.
type StatsSource interface {
	PortStatsByName(device string, port int) (*rdmanl.Stats, error)
}

// Options say where Describe looks. A nil *Options means the running
// system.
type Options struct {
	// Sysfs is the sysfs tree to read; nil means the running system's
	// (/sys).
	Sysfs *sysfs.FS
	// Netlink reads the netlink statistics; nil means rdmanl.New()
	// when Sysfs is the host's /sys (a fixture describes no running
	// system) and none otherwise.
	Netlink StatsSource
	// NoNetlink leaves the netlink sets out.
	NoNetlink bool
	// DriverID is the device's driver; rdma.DriverUnknown means ask
	// uverbs.LookupDevice (netlink, or the sysfs driver link).
	DriverID rdma.DriverID
}

// Describe lists every counter set the device offers, like the RFC's
// ibv_query_counter_set_description for every counter_set_id:
//
//   - the flow set (packets, bytes) when the device's driver has verbs
//     counters (mlx5); it describes what a counters object counts and is
//     read through one (Object.AsSet);
//   - for every port, the PMA counters of sysfs counters/, when the driver
//     has a PMA (not rxe); port_xmit_data and port_rcv_data are converted
//     from 4-octet words to octets by sysfs.DataOctets, the one place
//     that does it;
//   - for every port, the driver's hardware counters of sysfs
//     hw_counters/ (cached for the lifespan the kernel reports);
//   - for every port, the same counters from RDMA netlink, read fresh, with
//     the optional counters that were enabled.
//
// Close the sets when done.
//
// Errors: an *Error matching os.ErrNotExist when there is no such device,
// or the sysfs error.
func Describe(device string) ([]*Set, error) { return DescribeWith(device, nil) }

// DescribeWith is Describe with options.
//
// On the running system it reads no more than it describes: the port
// numbers (ports/), each port's hw_counters/ and counters/, and, over one
// netlink socket that the netlink sets keep until they are closed, the
// device's index and driver and each port's statistics; not the device's
// or its ports' attributes.
func DescribeWith(device string, opts *Options) (sets []*Set, err error) {
	var fsys *sysfs.FS // nil: the running system's
	var nl StatsSource
	if opts != nil {
		fsys = opts.Sysfs
	}
	var kept *keptNetlink
	switch {
	case opts != nil && opts.NoNetlink:
	case opts != nil && opts.Netlink != nil:
		nl = opts.Netlink
	case fsys.IsHost():
		// One socket for every request of the description and of the
		// netlink sets' reads; without RDMA netlink (no ib_core) there
		// are no netlink sets, as before.
		if n, err := rdmanl.Open(); err == nil {
			kept = &keptNetlink{n: n}
			kept.refs.Store(1) // Describe's own, released on return
			defer kept.release()
			nl = n
		}
	}
	ports, err := fsys.PortNumbers(device)
	if err != nil {
		return nil, errs.New("describe counters", device, err)
	}
	add := func(s *Set) {
		s.ID = len(sets)
		s.Device = device
		sets = append(sets, s)
	}
	drv := rdma.DriverUnknown
	if opts != nil {
		drv = opts.DriverID
	}
	index := -1 // the device's netlink index, when known
	if kept != nil {
		// The uverbs node's driver id, as uverbs.Devices learns it:
		// GET_CHARDEV "uverbs" of the device's index.
		if d, err := kept.n.Device(device); err == nil {
			index = int(d.Index)
			if drv == rdma.DriverUnknown {
				if c, err := kept.n.Chardev(d.Index, sysfs.KindUverbs, 0); err == nil && c.DriverID != nil {
					drv = *c.DriverID
				}
			}
		}
	}
	if drv == rdma.DriverUnknown {
		if d, err := uverbs.LookupDevice(device, &uverbs.Options{Sysfs: fsys}); err == nil {
			drv = d.DriverID
		}
	}
	if Supported(drv) {
		add(&Set{
			Counted: CountedFlow, Source: SourceVerbs,
			Names: []string{Packets.String(), Bytes.String()},
			Units: []string{"packets", "octets"},
			Note:  "read through a counters object bound to a flow: counters.Create, Attach, flow.Create with flow.Count, Object.AsSet",
			read: func([]uint64) error {
				return errs.New("read counter set", device, errArg("a flow counter set is read through a counters object bound to a flow (Object.AsSet)"))
			},
		})
	}
	fail := func(err error) ([]*Set, error) {
		for _, s := range sets {
			s.Close()
		}
		return nil, errs.New("describe counters", device, err)
	}
	for _, port := range ports {
		if s, err := openPMA(fsys, device, port); err == nil {
			add(s)
		} else if !errors.Is(err, ErrNotSupported) {
			return fail(err)
		}
		hw, err := fsys.OpenHwCounters(device, port)
		switch {
		case err == nil:
			s := &Set{Port: port, Counted: CountedPort, Source: SourceHwSysfs, Cached: true,
				Names: hw.Names(), Units: make([]string, len(hw.Names())), read: hw.ReadValues, close: hw.Close}
			s.Lifespan, _ = fsys.HwCountersLifespan(device, port)
			add(s)
		case !errors.Is(err, sysfs.ErrNotSupported):
			return fail(err)
		}
		if nl != nil {
			if s := netlinkSet(nl, device, port, index); s != nil {
				if kept != nil {
					kept.refs.Add(1)
					s.close = func() error { kept.release(); return nil }
				}
				add(s)
			}
		}
	}
	return sets, nil
}

// keptNetlink is DescribeWith's netlink client, closed when Describe has
// returned and every netlink set it made is closed.
type keptNetlink struct {
	n    *rdmanl.Conn
	refs atomic.Int32
}

func (k *keptNetlink) release() {
	if k.refs.Add(-1) == 0 {
		k.n.Close()
	}
}

// indexedStats is a StatsSource that also reads by the device's index
// (*rdmanl.Conn): one request a read instead of two (the name's lookup,
// then the statistics).
type indexedStats interface {
	PortStats(devIndex uint32, port int) (*rdmanl.Stats, error)
}

// Supported reports whether devices of the driver have verbs counters in
// Linux 6.12 (only mlx5 registers the COUNTERS object).
func Supported(driverID rdma.DriverID) bool {
	return abi.APIFor(uint32(driverID)).Method(abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_CREATE) != nil
}

// openPMA describes the port's counters/ (the PMA's), kept open: the
// counters that read a value now; one the driver cannot fetch ("N/A (no
// PMA)" on older kernels, a failing PMA query) is left out, as
// sysfs.Port.Counters leaves it, and its file closed, so that no read
// asks the kernel for it again. The data counters are converted to
// octets.
func openPMA(fsys *sysfs.FS, device string, port int) (*Set, error) {
	cs, err := fsys.OpenCounters(device, port)
	if err != nil {
		return nil, err
	}
	vals, ok := make([]uint64, len(cs.Names())), make([]bool, len(cs.Names()))
	err = cs.ReadValues(vals, ok)
	if err == nil {
		err = cs.Keep(ok)
	}
	if err != nil {
		cs.Close()
		return nil, err
	}
	names := cs.Names()
	if len(names) == 0 {
		cs.Close()
		return nil, fmt.Errorf("the counters of %s port %d read no value: %w", device, port, ErrNotSupported)
	}
	octets := make([]bool, len(names)) // a data counter, converted
	s := &Set{Port: port, Counted: CountedPort, Source: SourcePMA, Names: names, Units: make([]string, len(names)), close: cs.Close}
	for i, name := range names {
		switch {
		case name == sysfs.CounterXmitData || name == sysfs.CounterRcvData:
			octets[i], s.Units[i] = true, "octets"
		case strings.HasSuffix(name, "_packets"):
			s.Units[i] = "packets"
		}
	}
	s.read = func(dst []uint64) error {
		if err := cs.ReadValues(dst, ok); err != nil {
			return err
		}
		for i := range names {
			if !ok[i] {
				return errs.New("read PMA counters", device, fmt.Errorf("%s no longer reads a value", names[i]))
			}
			if octets[i] {
				dst[i] = sysfs.DataOctets(dst[i])
			}
		}
		return nil
	}
	return s, nil
}

// netlinkSet describes a port's netlink statistics, or returns nil when
// netlink does not answer for the port. index is the device's netlink
// index, -1 when unknown.
func netlinkSet(nl StatsSource, device string, port, index int) *Set {
	ix, byIndex := nl.(indexedStats)
	stats := func() (*rdmanl.Stats, error) {
		if byIndex && index >= 0 {
			return ix.PortStats(uint32(index), port)
		}
		return nl.PortStatsByName(device, port)
	}
	st, err := stats()
	if err != nil || len(st.Counters) == 0 {
		return nil
	}
	index = int(st.Index) // the reads go by index from here on
	s := &Set{Port: port, Counted: CountedPort, Source: SourceNetlink}
	pos := make(map[string]int, len(st.Counters))
	for i, c := range st.Counters {
		s.Names = append(s.Names, c.Name)
		pos[c.Name] = i
	}
	s.Units = make([]string, len(s.Names))
	s.read = func(dst []uint64) error {
		st, err := stats()
		if err != nil {
			return errs.New("read netlink statistics", device, err)
		}
		for _, c := range st.Counters {
			if i, ok := pos[c.Name]; ok {
				dst[i] = c.Value
			}
		}
		return nil
	}
	return s
}

// Set returns the flow counter set of the object: one counter per index up
// to the largest attached one, named after the descriptions attached there
// ("packets", "bytes", "packets+bytes" for an index set more than once,
// "" for an index nothing is attached to), read with PreferCached (the
// example of ibv_read_counters(3)). The set reads what the object holds
// at Read time; attaching more points afterwards (after its flows are
// gone) is not reflected in Names.
func (cs *Object) AsSet() *Set {
	if cs == nil {
		return nil
	}
	pts := cs.Points()
	n := 0
	for _, p := range pts {
		n = max(n, int(p.Index)+1)
	}
	names := make([]string, n)
	units := make([]string, n)
	for _, p := range pts {
		if names[p.Index] != "" {
			names[p.Index] += "+"
		}
		names[p.Index] += p.Desc.String()
		unit := "packets"
		if p.Desc == Bytes {
			unit = "octets"
		}
		if units[p.Index] != "" && units[p.Index] != unit {
			unit = "packets+octets"
		}
		units[p.Index] = unit
	}
	return &Set{ID: -1, Device: cs.c.Device().Name, Counted: CountedFlow, Source: SourceVerbs, Names: names, Units: units,
		read: func(dst []uint64) error { return cs.Read(dst[:n], PreferCached) }}
}
