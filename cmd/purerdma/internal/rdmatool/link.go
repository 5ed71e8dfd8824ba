package rdmatool

// link add / link delete: iproute2's `rdma link add NAME type TYPE netdev
// NETDEV` and `rdma link delete NAME` (rdma/link.c, iproute2 6.1) through
// RDMA netlink (rdmanl.Conn.LinkAdd, LinkDelete), with its messages and
// exit statuses.

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/rdmanl"
)

// LinkNetlink is how link talks to the kernel (tests: a fake).
type LinkNetlink interface {
	Devices() ([]rdmanl.Device, error)
	Port(devIndex uint32, port int) (*rdmanl.Port, error)
	LinkAdd(name, linkType, netdev string) error
	LinkDelete(devIndex uint32) error
}

// linkUsage is rdma's link_help, which it prints on standard output.
const linkUsage = `Usage: rdma link show [DEV/PORT_INDEX]
Usage: rdma link add NAME type TYPE netdev NETDEV
Usage: rdma link delete NAME
`

func (env *Env) runLink(args []string, stdout, stderr io.Writer) error {
	asJSON := false
	for len(args) > 0 && (args[0] == "-j" || args[0] == "--json") {
		asJSON, args = true, args[1:]
	}
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, linkUsage)
		return nil
	}
	if len(args) == 0 {
		return env.linkShow(nil, asJSON, stdout, stderr)
	}
	switch args[0] {
	case "show", "list":
		return env.linkShow(args[1:], asJSON, stdout, stderr)
	case "add":
		return env.linkAdd(args[1:], stdout, stderr)
	case "delete", "del":
		return env.linkDelete(args[1:], stderr)
	}
	fmt.Fprintf(stderr, "Unknown parameter '%s'.\n", args[0])
	return nil // rdma 6.1 exits 0 here
}

// rdma's link.c names of port states and physical states.
var (
	linkStates     = []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
	linkPhysStates = []string{"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP", "LINK_ERROR_RECOVER", "PHY_TEST", "UNKNOWN", "OPA_OFFLINE", "UNKNOWN", "OPA_TEST"}
)

func linkName(table []string, v int) string {
	if v >= 0 && v < len(table) {
		return table[v]
	}
	return "UNKNOWN"
}

// linkShow is rdma link show [DEV[/PORT]]: every port of every device (or
// of one), one PORT_GET each, as rd_exec_link does.
func (env *Env) linkShow(args []string, asJSON bool, stdout, stderr io.Writer) error {
	nlc, done := keepSocket(env.Link)
	defer done()
	devs, err := nlc.Devices()
	if err != nil {
		return kernelErr(stderr, err)
	}
	// link show DEV/PORT: rd_exec_link wants both, and says "Wrong device
	// name" for a device without a valid port as for an unknown device.
	only, port := "", uint32(0)
	if len(args) > 0 {
		name, p, ok := devPort(devs, args[0], true)
		if !ok {
			return wrongDevice(asJSON, stdout, stderr)
		}
		only, port = name, p
	}
	lines := []*resLine{}
	for _, d := range devs {
		if only != "" && d.Name != only {
			continue
		}
		for p := uint32(1); p <= uint32(d.NumPorts); p++ {
			if port != 0 && p != port {
				continue
			}
			np, err := nlc.Port(d.Index, int(p))
			if err != nil {
				return kernelErr(stderr, err)
			}
			lines = append(lines, linkLine(np))
		}
	}
	if asJSON {
		b, err := json.Marshal(lines)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return nil
	}
	for _, l := range lines {
		fmt.Fprintf(stdout, "%s\n", l.text.String())
	}
	return nil
}

// linkLine is link_parse_cb's line for one port.
func linkLine(p *rdmanl.Port) *resLine {
	l := &resLine{}
	l.keys, l.vals = append(l.keys, "ifindex"), append(l.vals, p.Index)
	l.add("ifname", "link "+p.Device+"/", p.Device)
	l.add("port", fmt.Sprintf("%d ", p.Port), p.Port)
	if p.SubnetPrefix != nil {
		// The u64 in host order read as four u16s, highest first.
		v := *p.SubnetPrefix
		s := fmt.Sprintf("%04x:%04x:%04x:%04x", uint16(v>>48), uint16(v>>32), uint16(v>>16), uint16(v))
		l.add("subnet_prefix", "subnet_prefix "+s+" ", s)
	}
	if p.LID != nil {
		l.add("lid", fmt.Sprintf("lid %d ", *p.LID), *p.LID)
	}
	if p.SMLID != nil {
		l.add("sm_lid", fmt.Sprintf("sm_lid %d ", *p.SMLID), *p.SMLID)
	}
	if p.LMC != nil {
		l.add("lmc", fmt.Sprintf("lmc %d ", *p.LMC), *p.LMC)
	}
	st, ph := linkName(linkStates, int(p.State)), linkName(linkPhysStates, int(p.PhysState))
	l.add("state", "state "+st+" ", st)
	l.add("physical_state", "physical_state "+ph+" ", ph)
	if p.Netdev != nil && p.NetdevIndex != nil {
		l.add("netdev", "netdev "+*p.Netdev+" ", *p.Netdev)
		l.keys, l.vals = append(l.keys, "netdev_index"), append(l.vals, *p.NetdevIndex)
	}
	return l
}

// linkAdd: NAME, then the keywords "type" and "netdev" with their values
// in that order, as link_add's parsers take them; anything else prints the
// usage (and rdma exits 0).
func (env *Env) linkAdd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Please provide a link name to add.")
		return cli.ExitError{Code: 1}
	}
	if len(args) != 5 || args[1] != "type" || args[3] != "netdev" {
		fmt.Fprint(stdout, linkUsage)
		return nil
	}
	if err := env.Link.LinkAdd(args[0], args[2], args[4]); err != nil {
		return kernelErr(stderr, err)
	}
	return nil
}

func (env *Env) linkDelete(args []string, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Please provide device name.")
		return cli.ExitError{Code: 1}
	}
	devs, err := env.Link.Devices()
	if err != nil {
		return kernelErr(stderr, err)
	}
	for _, d := range devs {
		if d.Name == args[0] {
			if err := env.Link.LinkDelete(d.Index); err != nil {
				return kernelErr(stderr, err)
			}
			return nil
		}
	}
	fmt.Fprintf(stderr, "Wrong device name - %s\n", args[0])
	return cli.ExitError{Code: 1}
}
