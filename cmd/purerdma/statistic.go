package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/sysfs"
)

func init() {
	register("statistic", "port and QP counter statistics over RDMA netlink, like iproute2's rdma statistic [show [link DEV/PORT]] / qp show [link DEV/PORT] / qp mode [link DEV/PORT]", runStatistic)
}

// statNetlink is how statistic talks to the kernel (tests: a fake).
var statNetlink interface {
	Devices() ([]sysfs.NetlinkDevice, error)
	PortStats(devIndex uint32, port int) (*sysfs.PortStats, error)
	QPCounters(devIndex uint32) ([]sysfs.QPCounter, error)
	CounterMode(devIndex uint32, port uint32) (*sysfs.PortCounterMode, error)
} = sysfs.NewNetlink()

const statUsage = `Usage: purerdma statistic [show [link DEV/PORT]]
       purerdma statistic qp [show [link DEV/PORT]]
       purerdma statistic qp mode [link DEV/PORT]

Like iproute2's rdma statistic (text output): a port's hardware counters
(the port's own plus those of its QP counters, as the kernel sums them),
the QP counters (rdma_counters: id, QP type of an auto counter, owner,
values and the QPs bound to them) and each port's QP counter mode. Every
port of every device unless link DEV/PORT names one.
`

func runStatistic(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, statUsage)
		return nil
	}
	qp := false
	if len(args) > 0 && args[0] == "qp" {
		qp, args = true, args[1:]
	}
	verb := "show"
	if len(args) > 0 && (args[0] == "show" || args[0] == "list" || (qp && args[0] == "mode")) {
		verb, args = args[0], args[1:]
	}
	only, port := "", uint32(0)
	if len(args) > 0 {
		if args[0] != "link" || len(args) > 2 {
			fmt.Fprintf(stderr, "Unknown parameter '%s'.\n", args[0])
			return exitError{1}
		}
		if len(args) == 2 {
			name, p, _ := strings.Cut(args[1], "/")
			n, err := strconv.ParseUint(p, 10, 32)
			if err != nil || n == 0 {
				fmt.Fprintln(stderr, "Wrong device name")
				return exitError{1}
			}
			only, port = name, uint32(n)
		}
	}
	devs, err := statNetlink.Devices()
	if err != nil {
		return linkKernelErr(stderr, err)
	}
	if only != "" {
		found := false
		for _, d := range devs {
			if d.Name == only && port <= uint32(d.NumPorts) {
				found = true
			}
		}
		if !found {
			fmt.Fprintln(stderr, "Wrong device name")
			return exitError{1}
		}
	}
	var out strings.Builder
	for _, d := range devs {
		if only != "" && d.Name != only {
			continue
		}
		var counters []sysfs.QPCounter
		if qp && verb != "mode" {
			if counters, err = statNetlink.QPCounters(d.Index); err != nil {
				return linkKernelErr(stderr, err)
			}
		}
		for p := uint32(1); p <= uint32(d.NumPorts); p++ {
			if port != 0 && p != port {
				continue
			}
			switch {
			case !qp:
				st, err := statNetlink.PortStats(d.Index, int(p))
				if err != nil {
					return linkKernelErr(stderr, err)
				}
				out.WriteString(statLine(st))
			case verb == "mode":
				m, err := statNetlink.CounterMode(d.Index, p)
				if err != nil {
					return linkKernelErr(stderr, err)
				}
				out.WriteString(statModeLine(m))
			default:
				for i := range counters {
					if counters[i].Port == p {
						out.WriteString(statQPLine(&counters[i]))
					}
				}
			}
		}
	}
	_, err = io.WriteString(stdout, out.String())
	return err
}

// statLine is stat_show_parse_cb's line (rdma/stat.c): "link DEV/PORT "
// and "NAME VALUE " per counter.
func statLine(s *sysfs.PortStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "link %s/%d ", s.Device, s.Port)
	for _, c := range s.Counters {
		fmt.Fprintf(&b, "%s %d ", c.Name, c.Value)
	}
	b.WriteString("\n")
	return b.String()
}

// statModeLine is qp_link_get_mode_parse_cb's line: "mode qp auto off",
// or "qp auto" and the rule's names (type, pid) joined by commas, then
// "on" (prepare_auto_mode_str).
func statModeLine(m *sysfs.PortCounterMode) string {
	mode := "qp auto off"
	if m.Mode == sysfs.CounterModeAuto {
		var mask uint32
		if m.Mask != nil {
			mask = *m.Mask
		}
		var names []string
		if mask&abi.RDMA_COUNTER_MASK_QP_TYPE != 0 {
			names = append(names, "type")
		}
		if mask&abi.RDMA_COUNTER_MASK_PID != 0 {
			names = append(names, "pid")
		}
		if len(names) > 0 {
			mode = "qp auto " + strings.Join(names, ",") + " on"
		} else {
			mode = "qp auto off"
		}
	}
	return fmt.Sprintf("link %s/%d mode %s \n", m.Device, m.Port, mode)
}

// statQPLine is res_counter_line's text: link, cntn, qp-type (an auto
// counter by type), pid and comm (print_comm: a kernel owner in
// brackets, at most 17 characters), the counters, then the bound QPs on
// a line of their own: "    LQPN: <N,N>".
func statQPLine(c *sysfs.QPCounter) string {
	var b strings.Builder
	fmt.Fprintf(&b, "link %s/%d cntn %d ", c.Device, c.Port, c.ID)
	if c.QPType != nil {
		fmt.Fprintf(&b, "qp-type %s ", resName(resQPTypes, *c.QPType))
	}
	comm, have := "", false
	if c.PID != nil {
		fmt.Fprintf(&b, "pid %d ", *c.PID)
		comm, have = resourceComm(*c.PID)
	}
	if c.KernName != nil {
		comm, have = *c.KernName, true
	}
	if have {
		if c.PID == nil {
			comm = "[" + comm + "]"
		}
		if len(comm) > 17 {
			comm = comm[:17]
		}
		fmt.Fprintf(&b, "comm %s ", comm)
	}
	for _, hc := range c.Counters {
		fmt.Fprintf(&b, "%s %d ", hc.Name, hc.Value)
	}
	b.WriteString("\n    LQPN: <")
	for i, q := range c.QPNs {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%d", int32(q))
	}
	b.WriteString(">\n")
	return b.String()
}
