package diags

// ibstat: infiniband-diags' ibstat (rdma-core 44, infiniband-diags/ibstat.c)
// through package umad, text for text, plus --json.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
)

// ibstat's tables (ibstat.c).
var (
	ibstatNodeTypes = []string{"???", "CA", "Switch", "Router", "iWARP RNIC"}
	ibstatStates    = []string{"???", "Down", "Initializing", "Armed", "Active"}
	ibstatPhys      = []string{"No state change", "Sleep", "Polling", "Disabled",
		"PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"}
)

func ibstatName(table []string, v uint64) string {
	if v < uint64(len(table)) {
		return table[v]
	}
	return "???"
}

const ibstatUsage = `Usage: ibstat [options] <ca_name> [portnum]

Like infiniband-diags' ibstat: the RDMA devices and their ports, as
libibumad sees them in sysfs.

Options:
  -l, --list_of_cas   list all IB devices
  -s, --short         short output
  -p, --port_list     show port list
      --json          print JSON instead of text
  -h, --help          this help

Examples:
  ibstat -l       # list all IB devices
  ibstat mthca0 2 # stat port 2 of 'mthca0'
`

// ibstatPanic is libibmad's IBPANIC (libibmad/mad.h): the message, then
// ": " and strerror(errno) (glibc's "%m"), on standard error, and exit
// status 255 (exit(-1)). errno is what the C tool's errno holds at that
// point; 0 prints "Success".
func ibstatPanic(stderr io.Writer, errno syscall.Errno, format string, args ...any) error {
	fmt.Fprintf(stderr, "ibpanic: [%d] main: %s: %s\n", os.Getpid(), fmt.Sprintf(format, args...), cli.Strerror(errno))
	return cli.ExitError{Code: 255}
}

func (env *Env) runIbstat(args []string, stdout, stderr io.Writer) error {
	var listOnly, short, listPorts, asJSON bool
	set := func(p *bool) func(string) error { return func(string) error { *p = true; return nil } }
	pos, err := cli.GetoptOperands("ibstat", args, []cli.Option{
		{Short: 'l', Long: "list_of_cas", Set: set(&listOnly)},
		{Short: 's', Long: "short", Set: set(&short)},
		{Short: 'p', Long: "port_list", Set: set(&listPorts)},
		{Long: "json", Set: set(&asJSON)},
		{Short: 'h', Long: "help", Set: func(string) error { return errHelp }},
	}, stderr)
	if errors.Is(err, errHelp) {
		return fabricHelp(stderr, ibstatUsage)
	}
	if err != nil {
		fmt.Fprint(stderr, ibstatUsage)
		return cli.ExitError{Code: 2}
	}
	if len(pos) > 2 {
		fmt.Fprint(stderr, ibstatUsage)
		return cli.ExitError{Code: 2}
	}
	devPort := -1
	if len(pos) > 1 {
		// dev_port = strtol(argv[1], 0, 0), an int: "x" is port 0, which
		// ca_stat then refuses; a negative number shows every port.
		devPort = int(int32(cli.CStrtol(pos[1])))
	}
	// On an ibsim fabric, the device libumad2sim shows instead of the
	// host's.
	env, done, err := env.simView()
	if err != nil {
		fmt.Fprintf(stderr, "ibstat: %v\n", err)
		return cli.ExitError{Code: 255}
	}
	defer done()
	// rdma-core's umad_init checks nothing, so neither does ibstat: it
	// only reads sysfs, and works without ib_umad.
	h := env.host()
	names, err := env.ibstatDevices()
	if err != nil {
		return ibstatPanic(stderr, cli.ErrnoOf(err), "can't list IB device names")
	}
	if len(pos) > 0 {
		found := false
		for _, n := range names {
			if n == pos[0] {
				found = true
			}
		}
		if !found {
			// rdma-core 44's umad_get_cas_names leaves errno 0 here.
			return ibstatPanic(stderr, 0, "'%s' IB device can't be found", pos[0])
		}
		names = []string{pos[0]}
	}

	switch {
	case listPorts:
		// umad_get_ca_portguids per device, from one read of sysfs
		// (LookupCAs), not a LookupCA each, which lists every character
		// device again.
		var guids []string
		var all []*umad.CA
		var errs []error
		if len(names) > 0 {
			if all, errs, err = h.LookupCAs(names...); err != nil {
				return ibstatPanic(stderr, cli.ErrnoOf(err), "can't list ports")
			}
		}
		for i := range names {
			if errs[i] != nil {
				return ibstatPanic(stderr, cli.ErrnoOf(errs[i]), "can't list ports")
			}
			for _, p := range all[i].Ports {
				if p != nil && p.PortGUID != 0 {
					guids = append(guids, fmt.Sprintf("0x%016x", p.PortGUID))
				}
			}
		}
		if asJSON {
			return ibJSON(stdout, ibstatNonNil(guids))
		}
		for _, g := range guids {
			fmt.Fprintln(stdout, g)
		}
		return nil
	case listOnly:
		if asJSON {
			return ibJSON(stdout, ibstatNonNil(names))
		}
		for _, n := range names {
			fmt.Fprintln(stdout, n)
		}
		return nil
	}

	var cas []*umad.CA
	var all []*umad.CA
	var errs []error
	if len(names) > 0 {
		if all, errs, err = h.LookupCAs(names...); err != nil {
			return ibstatPanic(stderr, cli.ErrnoOf(err), "can't list IB device names")
		}
	}
	for i, n := range names {
		ca, err := all[i], errs[i]
		if err != nil {
			var dl *sysfs.DanglingLinkError
			if errors.As(err, &dl) {
				fmt.Fprintf(stderr, "ibwarn: [%d] main: %v\n", os.Getpid(), dl)
			}
			return ibstatPanic(stderr, cli.ErrnoOf(err), "stat of IB device '%s' failed", n)
		}
		if ca.NodeType == 0 {
			continue
		}
		if !short && devPort >= 0 && (devPort > ca.NumPorts() || ca.Ports[devPort] == nil) {
			fmt.Fprintf(stderr, "ibwarn: [%d] ca_stat: %s: '%s' has no port number %d - max (%d)\n",
				os.Getpid(), ibstatName(ibstatNodeTypes, uint64(ca.NodeType)), n, devPort, ca.NumPorts())
			// umad_get_ca found no such port directory: ENOENT.
			return ibstatPanic(stderr, syscall.ENOENT, "stat of IB device '%s' failed", n)
		}
		cas = append(cas, ca)
	}
	if asJSON {
		return ibJSON(stdout, ibstatJSONOf(cas, devPort, short))
	}
	var buf []byte
	for _, ca := range cas {
		buf = ibstatCA(buf[:0], ca, devPort, short)
		stdout.Write(buf) // as Fprintf was, and ibstat's printf: errors show at the flush

	}
	return nil
}

func ibstatNonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ibstatDevices is umad_get_ca_device_list sorted by name: every entry of
// class/infiniband whose node type (read as strtoul does) is 1 to 3.
func (env *Env) ibstatDevices() ([]string, error) {
	// Through package sysfs, which keeps a tree given as the root inside
	// it (a node_type that is a link to a host file is not read).
	var ents []string
	fsys, err := sysfs.New(env.SysfsRoot)
	if err == nil {
		ents, err = fsys.DirNames("class/infiniband")
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // no devices: ibstat prints nothing
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		b, err := fsys.ReadAttr("class/infiniband/" + e + "/node_type")
		if err != nil {
			// libibumad skips an entry whose node_type it cannot
			// read (is_ib_type); an entry whose directory is not
			// there (a dangling link, X -> a device directory
			// that is missing) is kept, so that the device's read
			// fails and ibstat says so rather than print nothing.
			if _, derr := fsys.DirNames("class/infiniband/" + e); errors.Is(derr, os.ErrNotExist) {
				names = append(names, e)
			}
			continue
		}
		if t, _ := strconv.ParseUint(strings.TrimSpace(strings.SplitN(b, ":", 2)[0]), 0, 32); t >= 1 && t <= 3 {
			names = append(names, e)
		}
	}
	sort.Strings(names)
	return names, nil
}

// ibstatCA is ca_stat. It appends to b, with strconv rather than fmt
// (ibstat on hundreds of devices formats thousands of lines), and returns
// the extended buffer.
func ibstatCA(b []byte, ca *umad.CA, devPort int, short bool) []byte {
	typ := ibstatName(ibstatNodeTypes, uint64(ca.NodeType))
	if !short && devPort >= 0 {
		b = append(append(append(append(b, typ...), ": '"...), ca.Name...), "'\n"...)
		return ibstatPort(b, ca.Ports[devPort], true)
	}
	b = append(append(append(append(b, typ...), " '"...), ca.Name...), "'\n"...)
	b = append(append(append(append(append(b, '\t'), typ...), " type: "...), ibStr(ca.HCAType)...), '\n')
	b = strconv.AppendInt(append(b, "\tNumber of ports: "...), int64(ca.NumPorts()), 10)
	b = append(append(append(b, "\n\tFirmware version: "...), ibStr(ca.FWVersion)...), '\n')
	b = append(append(append(b, "\tHardware version: "...), ibStr(ca.HWRev)...), '\n')
	b = appendHex(append(b, "\tNode GUID: 0x"...), uint64(ca.NodeGUID), 16)
	b = appendHex(append(b, "\n\tSystem image GUID: 0x"...), uint64(ca.SysImageGUID), 16)
	b = append(b, '\n')
	if short {
		return b
	}
	for _, p := range ca.Ports {
		if p != nil {
			b = ibstatPort(b, p, false)
		}
	}
	return b
}

// ibstatPort is port_dump, appended to b.
func ibstatPort(b []byte, p *umad.CAPort, alone bool) []byte {
	pre, hdrpre := "\t\t", "\t"
	if alone {
		pre, hdrpre = "", ""
	}
	line := func(b []byte, label string) []byte { return append(append(b, pre...), label...) }
	b = strconv.AppendInt(append(append(b, hdrpre...), "Port "...), int64(p.Number), 10)
	b = append(b, ":\n"...)
	b = append(append(line(b, "State: "), ibstatName(ibstatStates, uint64(p.State))...), '\n')
	b = append(append(line(b, "Physical state: "), ibstatName(ibstatPhys, uint64(p.PhysState))...), '\n')
	b = append(ibstatAppendRate(line(b, "Rate: "), p), '\n')
	b = append(strconv.AppendInt(line(b, "Base lid: "), int64(int32(ibU32(p.LID))), 10), '\n')
	b = append(strconv.AppendInt(line(b, "LMC: "), int64(int32(ibU32(p.LMC))), 10), '\n')
	b = append(strconv.AppendInt(line(b, "SM lid: "), int64(int32(ibU32(p.SMLID))), 10), '\n')
	b = append(appendHex(line(b, "Capability mask: 0x"), uint64(ibU32(p.CapMask)), 8), '\n')
	b = append(appendHex(line(b, "Port GUID: 0x"), uint64(p.PortGUID), 16), '\n')
	return append(append(line(b, "Link layer: "), ibLinkLayer(p)...), '\n')
}

// appendHex appends v in lower-case hex, zero-padded to width digits
// (printf's "%0*x").
func appendHex(b []byte, v uint64, width int) []byte {
	var d [16]byte
	h := strconv.AppendUint(d[:0], v, 16)
	for i := len(h); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, h...)
}

// ibstatRate is port_dump's rate: "N (FDR10)" when the rate file's speed
// is FDR10, "2.5" for the integer rate 2 (1X SDR), else the integer.
func ibstatRate(p *umad.CAPort) string { return string(ibstatAppendRate(nil, p)) }

func ibstatAppendRate(b []byte, p *umad.CAPort) []byte {
	if ibstatIsFDR10(p) {
		return append(strconv.AppendInt(b, int64(int32(ibRate(p))), 10), " (FDR10)"...)
	}
	if ibRate(p) == 2 {
		return append(b, "2.5"...)
	}
	return strconv.AppendInt(b, int64(int32(ibRate(p))), 10)
}

// ibstatIsFDR10 is is_fdr10: the five characters before the first ')' of
// the rate file (its first 31 bytes) are "fdr10", in any case. ibstat reads
// the rate file again for it; the text read with the port is the same.
func ibstatIsFDR10(p *umad.CAPort) bool {
	if p.Rate == nil {
		return false
	}
	b := p.Rate.Raw
	if len(b) > 31 {
		b = b[:31]
	}
	i := strings.IndexByte(b, ')')
	return i >= 5 && strings.EqualFold(b[i-5:i], "fdr10")
}

// JSON forms.

type ibstatJSONPort struct {
	Port              int    `json:"port"`
	State             uint32 `json:"state"`
	StateName         string `json:"state_name"`
	PhysicalState     uint32 `json:"physical_state"`
	PhysicalStateName string `json:"physical_state_name"`
	Rate              string `json:"rate"`
	BaseLID           uint32 `json:"base_lid"`
	LMC               uint32 `json:"lmc"`
	SMLID             uint32 `json:"sm_lid"`
	CapabilityMask    string `json:"capability_mask"`
	PortGUID          string `json:"port_guid"`
	LinkLayer         string `json:"link_layer"`
}

type ibstatJSONCA struct {
	Name            string           `json:"name"`
	NodeType        string           `json:"node_type"`
	Type            string           `json:"type"`
	NumPorts        int              `json:"num_ports"`
	FirmwareVersion string           `json:"firmware_version"`
	HardwareVersion string           `json:"hardware_version"`
	NodeGUID        string           `json:"node_guid"`
	SystemImageGUID string           `json:"system_image_guid"`
	Ports           []ibstatJSONPort `json:"ports,omitempty"`
}

func ibstatJSONOf(cas []*umad.CA, devPort int, short bool) []ibstatJSONCA {
	out := []ibstatJSONCA{}
	for _, ca := range cas {
		j := ibstatJSONCA{
			Name: ca.Name, NodeType: ibstatName(ibstatNodeTypes, uint64(ca.NodeType)), Type: ibStr(ca.HCAType),
			NumPorts: ca.NumPorts(), FirmwareVersion: ibStr(ca.FWVersion), HardwareVersion: ibStr(ca.HWRev),
			NodeGUID: fmt.Sprintf("0x%016x", ca.NodeGUID), SystemImageGUID: fmt.Sprintf("0x%016x", ca.SysImageGUID),
		}
		if !short {
			for i, p := range ca.Ports {
				if p == nil || (devPort >= 0 && i != devPort) {
					continue
				}
				j.Ports = append(j.Ports, ibstatJSONPort{
					Port: p.Number, State: uint32(p.State), StateName: ibstatName(ibstatStates, uint64(p.State)),
					PhysicalState: uint32(p.PhysState), PhysicalStateName: ibstatName(ibstatPhys, uint64(p.PhysState)),
					Rate: ibstatRate(p), BaseLID: ibU32(p.LID), LMC: ibU32(p.LMC), SMLID: ibU32(p.SMLID),
					CapabilityMask: fmt.Sprintf("0x%08x", ibU32(p.CapMask)), PortGUID: fmt.Sprintf("0x%016x", p.PortGUID),
					LinkLayer: ibLinkLayer(p),
				})
			}
		}
		out = append(out, j)
	}
	return out
}

// libibumad's values of a port's fields (umad_port_t's): 0 or "" where the
// file is missing, the rate's integer Gb/s (strtoul of the rate file), and
// "IB" for a port without link_layer.
func ibU32[T uint8 | uint32](v *T) uint32 {
	if v == nil {
		return 0
	}
	return uint32(*v)
}

func ibStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ibRate(p *umad.CAPort) uint32 {
	if p.Rate == nil {
		return 0
	}
	return uint32(p.Rate.Mbps / 1000)
}

func ibLinkLayer(p *umad.CAPort) string {
	if p.LinkLayerName == nil {
		return "IB"
	}
	return *p.LinkLayerName
}
