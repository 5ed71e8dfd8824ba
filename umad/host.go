package umad

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"

	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/sysfs"
)

// ABIVersion is the umad ABI this package speaks
// (/sys/class/infiniband_mad/abi_version, IB_USER_MAD_ABI_VERSION).
const ABIVersion = 5

// Node types and port states libibumad's port selection looks at.
const (
	hostNodeSwitch   = 2 // node_type "2: switch"
	hostPortActive   = 4 // state "4: ACTIVE"
	hostPhysLinkUp   = 5 // phys_state "5: LinkUp"
	hostPhysDisabled = 3 // phys_state "3: Disabled"
	hostCANameLen    = 20
)

// Host is where umad finds RDMA devices: a sysfs tree and the directory of
// the umad device nodes. The zero value reads /sys and opens nodes under
// /dev/infiniband, like libibumad; tests and tools point it elsewhere. The
// package-level functions (Init, CANames, LookupCA, OpenPort, …) use the
// zero Host. A Host is safe for concurrent use; every call reads sysfs
// afresh.
type Host struct {
	// Sysfs is the sysfs tree read; nil means the host's /sys (as for
	// uverbs.Options and counters.Options).
	Sysfs *sysfs.FS
	// DevDir is the directory of the umadN nodes; "" means
	// /dev/infiniband.
	DevDir string

	// open replaces sys.Open in tests: it returns a descriptor on a model
	// umad device (umad/internal/umadmodel), which is pollable through the
	// same FD methods as a real one (sys.Waiter), so a Port runs the same
	// code on both.
	open func(path string) (*sys.FD, error)
}

var defaultHost Host

func (h *Host) devDir() string {
	if h.DevDir == "" {
		return sysfs.DevDir
	}
	return h.DevDir
}

// fs is the tree the Host reads; a nil *sysfs.FS reads /sys.
func (h *Host) fs() *sysfs.FS { return h.Sysfs }

// Init checks that the kernel speaks umad ABI 5, as libibumad's umad_init
// is documented to: it reads class/infiniband_mad/abi_version under the
// Host's sysfs root. The error matches os.ErrNotExist when the file is
// missing (ib_umad is not loaded) and ErrNotSupported when the version is
// not ABIVersion. Nothing else needs initializing; calling Init is
// optional, since OpenPort makes the same check.
func (h *Host) Init() error {
	if h == nil {
		return errs.New("check umad ABI", "", errNilHost)
	}
	if err := h.checkABI(); err != nil {
		return errs.New("check umad ABI", "", err)
	}
	return nil
}

func (h *Host) checkABI() error {
	v, err := h.fs().MadABIVersion()
	if err != nil {
		return detail(nil, "cannot read the umad ABI version (is the ib_umad module loaded? modprobe ib_umad)", err)
	}
	if v != ABIVersion {
		return detail(nil, fmt.Sprintf("the kernel's umad ABI is version %d, this library speaks %d", v, ABIVersion),
			syscall.EOPNOTSUPP)
	}
	return nil
}

// CA is an RDMA device as libibumad's umad_get_ca fills a umad_ca_t: the
// record package sysfs reads (name, node type, GUIDs, fw_ver, hw_rev,
// hca_type, NumPorts, the ports in order), with the ports in libibumad's
// view, indexed by number. There is no umad_release_ca: a CA is an
// ordinary Go value.
type CA struct {
	sysfs.CA
	// Ports is indexed by port number: len(Ports) is NumPorts()+1, and an
	// index without a port (0, on a CA) holds nil. It shadows sysfs.CA's
	// Ports, which lists the same ports in order (ca.CA.Ports).
	Ports []*CAPort
}

// CAPort is a port as libibumad's umad_get_port fills a umad_port_t: the
// record package sysfs reads (state, phys_state, rate, LIDs, SM, cap_mask,
// link layer, P_Keys) and the two halves of GID 0. There is no
// umad_release_port: a CAPort is an ordinary Go value.
//
// Where libibumad fails the whole port because a file is missing or
// unreadable (a rate the kernel refuses to compute, no pkeys/), the field
// here is nil instead; a missing link_layer reads as
// rdma.LinkLayerUnspecified, which libibumad reports as "IB" and treats as
// InfiniBand.
type CAPort struct {
	sysfs.Port
	// GIDPrefix and PortGUID are the two halves of GID 0 (umad_port_t's
	// gid_prefix and port_guid); zero when GID 0 cannot be read.
	GIDPrefix uint64
	PortGUID  rdma.GUID
}

// CANames returns the names of the RDMA devices, sorted, that libibumad's
// umad_get_cas_names lists: names shorter than 20 characters whose node
// type is 1 to 3 (CA, switch, router). A device whose record sysfs cannot
// read is listed too (LookupCA then says why), unless it has gone. The
// error matches os.ErrNotExist when there is no /sys/class/infiniband
// (ib_core not loaded).
func (h *Host) CANames() ([]string, error) {
	if h == nil {
		return nil, errs.New("list CAs", "", errNilHost)
	}
	f := h.fs()
	all, err := f.CANames()
	if err != nil {
		return nil, errs.New("list CAs", "", err)
	}
	var names []string
	for _, n := range all {
		if len(n) >= hostCANameLen {
			continue
		}
		// libibumad's is_ib_type reads node_type alone; a device whose
		// node_type cannot be read or parsed is still listed (its read
		// fails later, naming the file), unless it went away.
		s, err := f.ReadAttr("class/infiniband/" + n + "/node_type")
		if err != nil {
			if !h.gone(f, n) {
				names = append(names, n)
			}
			continue
		}
		num, _, _ := strings.Cut(s, ":")
		t, err := strconv.ParseUint(strings.TrimSpace(num), 10, 8)
		if err != nil || isIBType(rdma.NodeType(t)) {
			names = append(names, n)
		}
	}
	return names, nil
}

// listCAs reads the devices CANames lists, each as readCA does: the names,
// and per name the device or the error reading it.
func (h *Host) listCAs() (names []string, cas []*CA, bad []error, err error) {
	f := h.fs()
	all, err := f.CANames()
	if err != nil {
		return nil, nil, nil, err
	}
	short := all[:0:0]
	for _, n := range all {
		if len(n) < hostCANameLen {
			short = append(short, n)
		}
	}
	scs, serrs, err := f.ReadCAs(short, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	for i, n := range short {
		switch {
		case serrs[i] != nil:
			// libibumad's is_ib_type reads node_type alone; where the
			// record fails elsewhere the device is still listed.
			if h.gone(f, n) {
				continue
			}
			names, cas, bad = append(names, n), append(cas, nil), append(bad, serrs[i])
		case isIBType(scs[i].NodeType):
			names, cas, bad = append(names, n), append(cas, convertCA(scs[i])), append(bad, nil)
		}
	}
	return names, cas, bad, nil
}

// isIBType is libibumad's is_ib_type: node type 1–3 (CA, switch, router).
func isIBType(t rdma.NodeType) bool { return t >= 1 && t <= 3 }

// LookupCA reads the device name (umad_get_ca). An empty name means the
// default device, chosen as OpenPort chooses it. The error matches
// ErrNoDevice when there is no such device (or, for "", none usable).
func (h *Host) LookupCA(name string) (*CA, error) {
	if h == nil {
		return nil, errs.New("get CA", name, errNilHost)
	}
	if name == "" {
		ca, _, err := h.resolve("", 0)
		if err != nil {
			return nil, errs.New("get CA", "", err)
		}
		name = ca
	}
	ca, err := h.readCA(name)
	if err != nil {
		return nil, errs.New("get CA", name, err)
	}
	return ca, nil
}

// LookupPort reads a port (umad_get_port), choosing it as the seed's
// umad_get_port describes: with both a CA name and a port number, that
// port; with a CA name and port 0, the best port of that CA; with no CA
// name and a port number, that port on any CA ("a port from any of the
// local devices, as long as it is port N"); with neither, the default CA
// and port. "Best" is libibumad's choice (see OpenPort). The error matches
// ErrNoDevice when nothing fits and ErrInvalidPort when the CA has no such
// port.
func (h *Host) LookupPort(ca string, port int) (*CAPort, error) {
	if h == nil {
		return nil, errs.New("get port", portName(ca, port), errNilHost)
	}
	if port < 0 {
		return nil, errs.New("get port", ca, invalid(fmt.Sprintf("port number %d is negative", port)))
	}
	name, num, err := h.resolve(ca, port)
	if err != nil {
		return nil, errs.New("get port", portName(ca, port), err)
	}
	c, err := h.readCA(name)
	if err != nil {
		return nil, errs.New("get port", resolvedName(name, num), err)
	}
	if num >= len(c.Ports) || c.Ports[num] == nil {
		return nil, errs.New("get port", resolvedName(name, num), detail(ErrInvalidPort, fmt.Sprintf("%s has no port %d", name, num), nil))
	}
	return c.Ports[num], nil
}

// CAPortGUIDs returns the port GUIDs of the device name
// (umad_get_ca_portguids), or of the default device when name is "": the
// slice is indexed by port number, so element 0 is 0 on a CA (whose ports
// start at 1) and len is NumPorts+1.
func (h *Host) CAPortGUIDs(name string) ([]rdma.GUID, error) {
	if h == nil {
		return nil, errNil("Host.CAPortGUIDs")
	}
	ca, err := h.LookupCA(name)
	if err != nil {
		return nil, err
	}
	guids := make([]rdma.GUID, len(ca.Ports))
	for i, p := range ca.Ports {
		if p != nil {
			guids[i] = p.PortGUID
		}
	}
	return guids, nil
}

// resolvedName names a port once resolve has chosen it: "ca/port", port 0
// (a switch's) included.
//
// Made with strconv, not fmt: every tool that opens a port names it, and
// fmt's formatting is code and heap a run need not otherwise touch
// (docs/performance.md, "Per tool").
func resolvedName(ca string, port int) string { return ca + "/" + strconv.Itoa(port) }

// portName names what a caller asked for, where port 0 means "any port".
func portName(ca string, port int) string {
	switch {
	case ca == "" && port == 0:
		return ""
	case ca == "":
		return "*/" + strconv.Itoa(port)
	case port == 0:
		return ca
	}
	return resolvedName(ca, port)
}

// LookupCAs reads the devices names (all of CANames when none are given),
// each as LookupCA does: the files libibumad's umad_get_ca reads and no
// others, so the cost grows linearly with the devices (ibstat on hundreds
// of devices). The result holds a CA or nil per name, in order, and errs
// the error of each name that could not be read (nil where it could).
func (h *Host) LookupCAs(names ...string) (cas []*CA, errs []error, err error) {
	if h == nil {
		return nil, nil, &Error{Op: "get CAs", Err: errNilHost}
	}
	if len(names) == 0 {
		_, cas, errs, err = h.listCAs()
		if err != nil {
			return nil, nil, &Error{Op: "list CAs", Err: err}
		}
		return cas, errs, nil
	}
	f := h.fs()
	cas, errs = make([]*CA, len(names)), make([]error, len(names))
	for i, n := range names {
		cas[i], errs[i] = h.readCAFrom(f, n)
	}
	return cas, errs, nil
}

// readCA reads a device and its ports through package sysfs. A missing
// device matches ErrNoDevice.
func (h *Host) readCA(name string) (*CA, error) { return h.readCAFrom(h.fs(), name) }

func validCAName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "/\x00") && name != "." && name != ".."
}

func invalidCAName(name string) error {
	return detail(ErrNoDevice, fmt.Sprintf("invalid device name %q", name), nil)
}

// readCAFrom is readCA on f. It reads what umad_get_ca reads
// (sysfs.ReadCAs with no optional parts): not the device's description
// files and not the character devices, which a umad_ca_t does not hold.
func (h *Host) readCAFrom(f *sysfs.FS, name string) (*CA, error) {
	if !validCAName(name) {
		return nil, invalidCAName(name)
	}
	scs, bad, err := f.ReadCAs([]string{name}, 0)
	if err == nil {
		err = bad[0]
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && h.gone(f, name) {
			return nil, detail(ErrNoDevice, "", err)
		}
		return nil, err
	}
	return convertCA(scs[0]), nil
}

// gone reports whether the device name is not (or no longer) in
// class/infiniband.
func (h *Host) gone(f *sysfs.FS, name string) bool {
	names, err := f.CANames()
	return err != nil || !slices.Contains(names, name)
}

// readPortInto reads port num of the device name into cp, what
// umad_get_port reads (without the device's own files or the character
// devices: OpenPort needs the port), into the Port OpenPort returns. The
// error matches ErrNoDevice when there is no such device and
// ErrInvalidPort when it has no such port.
func (h *Host) readPortInto(cp *CAPort, name string, num int) error {
	if !validCAName(name) {
		return invalidCAName(name)
	}
	f := h.fs()
	if err := f.ReadPortInto(&cp.Port, name, num, 0); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if h.gone(f, name) {
			return detail(ErrNoDevice, "", err)
		}
		return detail(ErrInvalidPort, fmt.Sprintf("%s has no port %d", name, num), nil)
	}
	cp.setGID0()
	return nil
}

// setGID0 sets GIDPrefix and PortGUID from the port's GID 0, to zero
// when it cannot be read.
func (cp *CAPort) setGID0() {
	cp.GIDPrefix, cp.PortGUID = 0, 0
	if g, err := cp.Port.GIDValue(0); err == nil {
		cp.GIDPrefix, cp.PortGUID = g.Prefix(), rdma.GUID(g.InterfaceID())
	}
}

// UmadNode returns the umad device node of port port of the device ca
// ("/dev/infiniband/umad0" under the Host's DevDir), found as
// libibumad's umad_open_port finds it (dev_to_umad_id): by the umadN
// entries of class/infiniband_mad whose ibdev and port name the port. The
// error matches ErrInvalidPort when the port has no umad device (ib_umad
// is not loaded).
func (h *Host) UmadNode(ca string, port int) (string, error) {
	if h == nil {
		return "", errs.New("find umad node", resolvedName(ca, port), errNilHost)
	}
	node, err := h.umadNode(ca, port)
	if err != nil {
		return "", errs.New("find umad node", resolvedName(ca, port), err)
	}
	return node, nil
}

func (h *Host) umadNode(ca string, port int) (string, error) {
	// Only class/infiniband_mad's umadN entries, in order, until the
	// port's (entries it cannot read belong to no port); their ibdev and
	// port alone, as dev_to_umad_id reads them.
	if name, err := h.fs().FindCharDevName(sysfs.KindUmad, ca, port); err == nil {
		return filepath.Join(h.devDir(), name), nil
	}
	return "", detail(ErrInvalidPort, "the port has no umad device (is the ib_umad module loaded? modprobe ib_umad)", nil)
}

// convertCA is umad's view of a device sysfs read: its ports indexed by
// number.
func convertCA(sc *sysfs.CA) *CA {
	ca := &CA{CA: *sc}
	ca.Ports = make([]*CAPort, sc.NumPorts()+1)
	for _, sp := range sc.Ports {
		if sp != nil && sp.Number >= 0 && sp.Number < len(ca.Ports) {
			ca.Ports[sp.Number] = convertPort(sp)
		}
	}
	return ca
}

// convertPort is umad's view of a port sysfs read: the record and the
// halves of GID 0.
func convertPort(sp *sysfs.Port) *CAPort {
	p := &CAPort{Port: *sp}
	p.setGID0()
	return p
}

// isIBLink is libibumad's test for an InfiniBand port: link_layer
// "InfiniBand", or no link_layer file (libibumad's "IB").
func isIBLink(l rdma.LinkLayer) bool {
	return l == rdma.LinkLayerInfiniBand || l == rdma.LinkLayerUnspecified
}

// Port kinds resolveCAPort reports.
const (
	hostNoPort     = -1
	hostPortUp     = 0
	hostPortActiv  = 1
	hostAnyPortNum = 0
)

// resolveCAPort is libibumad's resolve_ca_port: with want > 0 it judges
// that port, otherwise it picks the first ACTIVE InfiniBand port, else the
// first InfiniBand port that is LinkUp, else the first port of any link
// layer that is not Disabled. It returns the port and hostPortActiv,
// hostPortUp or hostNoPort.
//
// One deliberate difference: libibumad refuses an explicitly numbered
// port that is not InfiniBand; here such a port qualifies (ACTIVE, or at
// least not Disabled), since umad works on RoCE ports too (QP1 only).
func resolveCAPort(ca *CA, want int) (int, int) {
	if ca.NodeType == hostNodeSwitch {
		return 0, hostPortActiv // a switch's management port 0
	}
	if want > 0 {
		if want >= len(ca.Ports) || ca.Ports[want] == nil {
			return want, hostNoPort
		}
		p := ca.Ports[want]
		switch {
		case p.State == hostPortActive:
			return want, hostPortActiv
		case p.PhysState != hostPhysDisabled:
			return want, hostPortUp
		}
		return want, hostNoPort
	}
	up := -1
	for i, p := range ca.Ports {
		if p == nil || !isIBLink(p.LinkLayer) {
			continue
		}
		if up < 0 && p.PhysState == hostPhysLinkUp {
			up = i
		}
		if p.State == hostPortActive {
			return i, hostPortActiv
		}
	}
	if up >= 0 {
		return up, hostPortUp
	}
	for i, p := range ca.Ports {
		if p != nil && p.PhysState != hostPhysDisabled {
			return i, hostPortUp
		}
	}
	return 0, hostNoPort
}

// resolve is libibumad's resolve_ca_name with resolve_ca_port: it turns a
// possibly empty CA name and a possibly zero port number into a device and
// port. Devices are tried in name order (libibumad walks readdir order).
// Where libibumad falls back to the name "mthca0" when nothing fits, this
// returns ErrNoDevice.
func (h *Host) resolve(ca string, port int) (string, int, error) {
	if ca != "" && port != hostAnyPortNum {
		return ca, port, nil
	}
	if ca != "" {
		c, err := h.readCA(ca)
		if err != nil {
			return "", 0, err
		}
		num, kind := resolveCAPort(c, 0)
		if kind == hostNoPort {
			return "", 0, detail(ErrNoDevice, fmt.Sprintf("%s has no usable port (every port is Disabled)", ca), nil)
		}
		return ca, num, nil
	}
	names, cas, _, err := h.listCAs()
	if err != nil {
		return "", 0, detail(ErrNoDevice, "", err)
	}
	found, foundPort := "", 0
	for i, name := range names {
		c := cas[i]
		if c == nil {
			continue // as libibumad: a device it cannot read is skipped
		}
		num, kind := resolveCAPort(c, port)
		switch kind {
		case hostPortActiv:
			return name, num, nil
		case hostPortUp:
			if found == "" {
				found, foundPort = name, num
			}
		}
	}
	if found != "" {
		return found, foundPort, nil
	}
	what := "no RDMA device has a usable port"
	if port != 0 {
		what = fmt.Sprintf("no RDMA device has a usable port %d", port)
	}
	if len(names) == 0 {
		what = "no RDMA devices"
	}
	return "", 0, detail(ErrNoDevice, what, nil)
}

// The package-level functions use the zero Host: /sys and /dev/infiniband.

// Init is Host.Init on /sys (umad_init): it checks the umad ABI version.
func Init() error { return defaultHost.Init() }

// CANames is Host.CANames on /sys (umad_get_cas_names).
func CANames() ([]string, error) { return defaultHost.CANames() }

// LookupCA is Host.LookupCA on /sys (umad_get_ca).
func LookupCA(name string) (*CA, error) { return defaultHost.LookupCA(name) }

// LookupPort is Host.LookupPort on /sys (umad_get_port).
func LookupPort(ca string, port int) (*CAPort, error) { return defaultHost.LookupPort(ca, port) }

// CAPortGUIDs is Host.CAPortGUIDs on /sys (umad_get_ca_portguids).
func CAPortGUIDs(name string) ([]rdma.GUID, error) { return defaultHost.CAPortGUIDs(name) }

// OpenPort is Host.OpenPort on /sys and /dev/infiniband (umad_open_port).
func OpenPort(ca string, port int) (*Port, error) { return defaultHost.OpenPort(ca, port) }
