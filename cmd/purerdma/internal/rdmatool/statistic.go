package rdmatool

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/rdmanl"
)

// StatNetlink is how statistic talks to the kernel (tests: a fake).
type StatNetlink interface {
	Devices() ([]rdmanl.Device, error)
	PortStats(devIndex uint32, port int) (*rdmanl.Stats, error)
	QPCounters(devIndex uint32) ([]rdmanl.QPCounter, error)
	CounterMode(devIndex uint32, port uint32) (*rdmanl.PortCounterMode, error)
}

const statUsage = `Usage: purerdma statistic [-j] [show [link DEV/PORT]]
       purerdma statistic [-j] qp [show [link DEV/PORT]]
       purerdma statistic [-j] qp mode [link DEV/PORT]

Like iproute2's rdma statistic (-j: rdma -j's JSON): a port's hardware counters
(the port's own plus those of its QP counters, as the kernel sums them),
the QP counters (rdma_counters: id, QP type of an auto counter, owner,
values and the QPs bound to them) and each port's QP counter mode. Every
port of every device unless link DEV or link DEV/PORT names some. qp
show's filters (cntn, lqpn, pid, qp-type) are not supported.
`

func (env *Env) runStatistic(args []string, stdout, stderr io.Writer) error {
	asJSON := false
	for len(args) > 0 && (args[0] == "-j" || args[0] == "--json") {
		asJSON, args = true, args[1:]
	}
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, statUsage)
		return nil
	}
	// rd_exec_cmd: an unknown word is one line on stderr, and rdma 6.1
	// exits 0.
	unknown := func(what, arg string) error {
		fmt.Fprintf(stderr, "Unknown %s '%s'.\n", what, arg)
		return nil
	}
	qp, verb := false, "show"
	switch {
	case len(args) == 0:
	case args[0] == "show" || args[0] == "list":
		args = args[1:]
	case args[0] == "qp":
		qp, args = true, args[1:]
		if len(args) > 0 {
			switch args[0] {
			case "show", "list":
				args = args[1:]
			case "mode":
				verb, args = "mode", args[1:]
			default:
				return unknown("parameter", args[0])
			}
		}
	default:
		return unknown("statistic command", args[0])
	}
	if len(args) > 0 && args[0] != "link" {
		return unknown("parameter", args[0])
	}
	nlc, done := keepSocket(env.Statistic)
	defer done()
	devs, err := nlc.Devices()
	if err != nil {
		return kernelErr(stderr, err)
	}
	// rd_exec_link: "link" alone is every port of every device; DEV is
	// every port of DEV; DEV/N port N (what atoi reads; not a number is a
	// wrong device name, as rdma says in the VM test). Words
	// after it are ignored (qp show would take them as filters: not
	// supported here).
	only, port := "", uint32(0)
	if len(args) > 1 {
		if qp && verb == "show" && len(args) > 2 {
			fmt.Fprintf(stderr, "purerdma statistic qp show: filters (%s) are not supported\n", strings.Join(args[2:], " "))
			return cli.ExitError{Code: 1}
		}
		name, p, ok := devPort(devs, args[1], false)
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
		var counters []rdmanl.QPCounter
		if qp && verb != "mode" {
			if counters, err = nlc.QPCounters(d.Index); err != nil {
				return kernelErr(stderr, err)
			}
		}
		for p := uint32(1); p <= uint32(d.NumPorts); p++ {
			if port != 0 && p != port {
				continue
			}
			switch {
			case !qp:
				st, err := nlc.PortStats(d.Index, int(p))
				if err != nil {
					return kernelErr(stderr, err)
				}
				lines = append(lines, statLine(st))
			case verb == "mode":
				m, err := nlc.CounterMode(d.Index, p)
				if err != nil {
					return kernelErr(stderr, err)
				}
				lines = append(lines, statModeLine(m))
			default:
				for i := range counters {
					if counters[i].Port == p {
						lines = append(lines, env.statQPLine(&counters[i]))
					}
				}
			}
		}
	}
	if asJSON {
		b, err := json.Marshal(lines)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	var out strings.Builder
	for _, l := range lines {
		out.WriteString(l.text.String())
		out.WriteString("\n")
	}
	_, err = io.WriteString(stdout, out.String())
	return err
}

// statLine is stat_show_parse_cb's line (rdma/stat.c): "link DEV/PORT "
// and "NAME VALUE " per counter; JSON ifname, port and the counters.
func statLine(s *rdmanl.Stats) *resLine {
	l := &resLine{}
	l.add("ifname", "link "+s.Device+"/", s.Device)
	l.add("port", fmt.Sprintf("%d ", s.Port), s.Port)
	for _, c := range s.Counters {
		l.add(c.Name, fmt.Sprintf("%s %d ", c.Name, c.Value), c.Value)
	}
	return l
}

// statLink is print_link: JSON ifindex, ifname, port; text "link DEV/PORT ".
func statLink(l *resLine, index uint32, dev string, port uint32) {
	l.keys = append(l.keys, "ifindex")
	l.vals = append(l.vals, index)
	l.add("ifname", "link "+dev+"/", dev)
	l.add("port", fmt.Sprintf("%d ", port), port)
}

// statModeLine is qp_link_get_mode_parse_cb's line: "mode qp auto off",
// or "qp auto" and the rule's names (type, pid) joined by commas, then
// "on" (prepare_auto_mode_str).
func statModeLine(m *rdmanl.PortCounterMode) *resLine {
	mode := "qp auto off"
	if m.Mode == rdmanl.CounterModeAuto {
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
		}
	}
	l := &resLine{}
	statLink(l, m.Index, m.Device, m.Port)
	l.add("mode", "mode "+mode+" ", mode)
	return l
}

// statQPLine is res_counter_line's: link, cntn, qp-type (an auto counter
// by type), pid and comm (print_comm: a kernel owner in brackets, at most
// 17 characters; JSON gets the name whole), the counters, then the bound
// QPs on a line of their own, "    LQPN: <N,N>" (JSON: lqpn, a list).
func (env *Env) statQPLine(c *rdmanl.QPCounter) *resLine {
	l := &resLine{}
	statLink(l, c.Index, c.Device, c.Port)
	l.add("cntn", fmt.Sprintf("cntn %d ", c.ID), c.ID)
	if c.QPType != nil {
		t := resName(resQPTypes, *c.QPType)
		l.add("qp-type", "qp-type "+t+" ", t)
	}
	comm, have := "", false
	if c.PID != nil {
		l.add("pid", fmt.Sprintf("pid %d ", *c.PID), *c.PID)
		comm, have = env.Comm(*c.PID)
	}
	if c.KernName != nil {
		comm, have = *c.KernName, true
	}
	if have {
		text := comm
		if c.PID == nil {
			text = "[" + comm + "]"
		}
		if len(text) > 17 {
			text = text[:17]
		}
		l.add("comm", "comm "+text+" ", comm)
	}
	for _, hc := range c.Counters {
		l.add(hc.Name, fmt.Sprintf("%s %d ", hc.Name, hc.Value), hc.Value)
	}
	var q strings.Builder
	q.WriteString("\n    LQPN: <")
	qpns := make([]int32, len(c.QPNs))
	for i, n := range c.QPNs {
		if i > 0 {
			q.WriteString(",")
		}
		fmt.Fprintf(&q, "%d", int32(n))
		qpns[i] = int32(n)
	}
	q.WriteString(">")
	l.add("lqpn", q.String(), qpns)
	return l
}
