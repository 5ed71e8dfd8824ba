package diags

// perfquery: a port's PortCounters or PortCountersExtended from its PMA
// (performance management agent), like infiniband-diags' perfquery
// (rdma-core 44, infiniband-diags/perfquery.c), through package umad.
//
// Differences from rdma-core's: only QP1 is used (rdma-core's also opens
// an SMI agent, which is why it cannot run on RoCE ports at all); the local
// port's own address comes from sysfs instead of an SMP; a RoCE port is
// addressed by GID (--dgid, or the local GID 0 by default); and a port
// whose PMA does not answer gives a timeout error after the retries, never
// a hang.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
)

// perfqueryExamples are perfquery.c's usage_examples.
var perfqueryExamples = []string{
	"\t\t# read local port's performance counters",
	"32 1\t\t# read performance counters from lid 32, port 1",
	"-x 32 1\t# read extended performance counters from lid 32, port 1",
	"-a 32\t\t# read performance counters from lid 32, all ports",
	"-r 32 1\t# read performance counters and reset",
	"-x -r 32 1\t# read extended performance counters and reset",
	"-R 0x20 1\t# reset performance counters of port 1 only",
	"-x -R 0x20 1\t# reset extended performance counters of port 1 only",
	"-R -a 32\t# reset performance counters of all ports",
	"-R 32 2 0x0fff\t# reset only error counters of port 2",
	"-R 32 2 0xf000\t# reset only non-error counters of port 2",
	"-a 32 1-10\t# read performance counters from lid 32, port 1-10, aggregate output",
	"-l 32 1-10\t# read performance counters from lid 32, port 1-10, output each port",
	"-a 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, aggregate output",
	"-l 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, output each port",
}

type perfqueryOpts struct {
	// fab are the common options as parseDiagSpec read them (ca ...
	// debug below are copied from there); usage is the usage it made.
	fab       *fabricOpts
	usage     diagUsage
	ca        string
	port      int
	extended  bool
	timeout   time.Duration
	retries   int
	dgid      string
	json      bool
	lid       int // -1: the local port
	dport     int // 0: the local port's number
	all       bool
	loop      bool // -l
	reset     bool // -r
	resetOnly bool // -R
	mask      uint64
	maskSet   bool
	// guid is the destination with -G, a port GUID; badDest a LID
	// resolve_portid_str refuses (C says so once the port is open).
	guid, badDest string
	errs          bool // -e
	debug         bool // -d
	// groups are the counter groups asked for (-X, -S, ...), bit i for
	// pmGroups[i]; smplctl is -c.
	groups  uint32
	smplctl bool
	// ports is the list or range of <port(s)>; rangeBad is a range
	// whose maximum is not above its minimum (perfquery refuses it
	// before it opens the port).
	ports    []int
	rangeBad bool
	// custom is perfquery.c's option table; fabv, ours and getopt are
	// the common options, ours and the getopt table parseDiagSpec makes
	// of them all. They are kept here so that the parse allocates them
	// with the options, in one size class (perfqueryParse).
	custom [6 + len(pmGroups)]diagOpt
	fabv   fabricOpts
	ours   [3]cli.Option
	getopt [6 + len(pmGroups) + 3 + len(commonDiagOpts)]cli.Option
}

// wantsGroup is whether the command line asks for pmGroups[i].
func (o *perfqueryOpts) wantsGroup(i int) bool { return o.groups&(1<<i) != 0 }

// perfqueryOpts.groups has a bit for each group: a 33rd group does not
// compile.
var _ [32 - len(pmGroups)]struct{}

// cPort is strtoul(s, NULL, 0) stored in an int, as perfquery keeps a
// port number.
func cPort(s string) int { return int(int32(uint32(cli.CStrtol(s)))) }

// perfqueryArgsError is an operand perfqueryParse refuses: the message
// and the usage.
type perfqueryArgsError struct{ error }

// perfqueryParse reads perfquery's command line (ibdiag_process_opts
// with perfquery.c's table and exclude string "DK": -D is --xmtdisc);
// --retries, --dgid and --json are ours. On an error from the options,
// the result carries fab and usage for diagOptsFailed.
func perfqueryParse(args []string, stderr io.Writer) (*perfqueryOpts, error) {
	// One allocation holds the options and the tables the parse makes,
	// each at its full size: a slice grown by append takes a fresh size
	// class, so a fresh heap page, at each growth, and each table
	// allocated apart one of its own (docs/performance.md, "Per tool").
	o := &perfqueryOpts{lid: -1}
	flag := func(p *bool) func(string) error { return func(string) error { *p = true; return nil } }
	custom := append(o.custom[:0], diagOpt{"extended", 'x', false, "", "show extended port counters", flag(&o.extended)})
	for i, g := range pmGroups {
		letter := g.short
		if letter == 0 {
			letter = byte(len(custom) - 5) // C numbers the long ones from 1
		}
		custom = append(custom, diagOpt{g.long, letter, false, "", g.desc, func(string) error { o.groups |= 1 << i; return nil }})
	}
	custom = append(custom,
		diagOpt{"smplctl", 'c', false, "", "show samples control", flag(&o.smplctl)},
		diagOpt{"all_ports", 'a', false, "", "show aggregated counters", flag(&o.all)},
		diagOpt{"loop_ports", 'l', false, "", "iterate through each port", flag(&o.loop)},
		diagOpt{"reset_after_read", 'r', false, "", "reset counters after read", flag(&o.reset)},
		diagOpt{"Reset_only", 'R', false, "", "only reset counters", flag(&o.resetOnly)},
	)
	o.fabv = defaultFabricOpts()
	o.ours = [...]cli.Option{retriesOption(&o.fabv),
		{Long: "json", Set: flag(&o.json)},
		{Long: "dgid", Arg: true, Set: func(v string) error { o.dgid = v; return nil }}}
	fo, usage, err := parseDiagSpec(diagSpec{
		tool: "perfquery", exclude: "DK", usageArgs: " [<lid|guid> [[port(s)] [reset_mask]]]",
		examples: perfqueryExamples, custom: custom, o: &o.fabv, ours: o.ours[:], getopt: o.getopt[:0],
	}, args, stderr)
	o.fab, o.usage = fo, usage
	if err != nil {
		return o, err
	}
	o.ca, o.port, o.timeout, o.retries, o.errs, o.debug = fo.ca, fo.port, fo.timeout, fo.retries, fo.errs, fo.debug
	if ms := fo.common.timeoutMS; ms > 0 {
		// The PMA queries carry ibd_timeout (-t's or the config
		// file's); the SMPs libibmad's own (-t's: fo.timeout).
		o.timeout = time.Duration(ms) * time.Millisecond
	}
	pos := fo.pos // operands past the third are not looked at, as in C
	if len(pos) > 2 {
		// strtoull: what does not parse is 0 (every counter).
		o.mask, o.maskSet = uint64(cli.CStrtol(pos[2])), true
		if m, err := strconv.ParseUint(pos[2], 0, 64); err == nil {
			o.mask = m
		}
	}
	if len(pos) > 0 && fo.common.dest == destGUID {
		o.guid = pos[0] // resolved through the SA once the port is open
	} else if len(pos) > 0 && o.dgid != "" {
		// A LID with --dgid (ours): a number it must be.
		n, err := strtoulArg(pos[0], "lid")
		if err != nil || n > 0xffff {
			return o, perfqueryArgsError{fmt.Errorf("invalid LID %q", pos[0])}
		}
		o.lid = n
	} else if len(pos) > 0 {
		// resolve_portid_str's IB_DEST_LID: strtol into an int, a
		// unicast LID or IBEXIT once the port is open.
		lid := int(int32(cli.CStrtol(pos[0])))
		if lid < 1 || lid > 0xbfff {
			o.badDest = pos[0]
		} else {
			o.lid = lid
		}
	}
	if o.all {
		o.dport = perfqueryAllPorts
	}
	if len(pos) > 1 {
		arg := pos[1]
		switch {
		case strings.Contains(arg, ","):
			for _, p := range strings.Split(arg, ",") {
				if p != "" && len(o.ports) < 255 {
					o.ports = append(o.ports, cPort(p))
				}
			}
			o.dport = 0
			if len(o.ports) > 0 {
				o.dport = o.ports[0]
			}
		case strings.Contains(arg, "-"):
			lo, hi, _ := strings.Cut(arg, "-")
			pmin, pmax := cPort(lo), cPort(hi)
			if pmin >= pmax {
				o.rangeBad = true
				break
			}
			for p := pmin; p <= pmax && len(o.ports) < 255; p++ {
				o.ports = append(o.ports, p)
			}
			o.dport = pmin
		default:
			o.dport = cPort(arg)
		}
	}
	return o, nil
}

// perfqueryFail prints an error the way the tool reports them: IBEXIT's
// line on standard output (what failed, fn the C function with -d), our
// explanation on standard error, exit status 255.
//
// It formats nothing with fmt: on a device without a PMA (rxe) this is
// every run's end, and fmt's formatting and the heap its buffer grows
// through cost the run about 0.1 M instructions (docs/performance.md,
// "Per tool").
//
// The line is made in one buffer (appendError) where the error chain's
// Error methods would make a string at each level, each a heap size
// class of its own. The buffer's 320 bytes hold the failure on rxe, and
// are the size of a umad packet's, whose span the run has open.
func perfqueryFail(stdout, stderr io.Writer, o *perfqueryOpts, fn, what string, err error) error {
	line := append(make([]byte, 0, 320), "perfquery: "...)
	stderr.Write(append(appendError(line, err), '\n'))
	return ibexitMsg(stdout, "perfquery", o.debug, fn, what)
}

// appendError appends err's text to b: a prefixError's and a
// pmaStatusError's parts in place, others' Error.
func appendError(b []byte, err error) []byte {
	switch e := err.(type) {
	case prefixError:
		return appendError(append(append(b, e.prefix...), ": "...), e.err)
	case *pmaStatusError:
		return e.append(b)
	}
	return append(b, err.Error()...)
}

// pmaStatusError is a PMA's answer with a MAD status other than 0.
type pmaStatusError struct {
	display string // portid2str's text of the PMA's port
	status  umad.MADStatus
}

func (e *pmaStatusError) Error() string { return string(e.append(nil)) }

func (e *pmaStatusError) append(b []byte) []byte {
	b = append(append(append(b, "the PMA of "...), e.display...), " answered with MAD status "...)
	b = append(b, e.status.String()...)
	if e.status.Code() == umad.StatusMethodAttrUnsupported {
		b = append(b, "; no PMA took the query, so the kernel's MAD layer answered it: the device has no PMA (rxe and other software devices have none)"...)
	}
	return b
}

// prefixError is fmt.Errorf("%s: %w", prefix, err) made without fmt's
// formatting (perfqueryFail).
type prefixError struct {
	prefix string
	err    error
}

func (e prefixError) Error() string { return e.prefix + ": " + e.err.Error() }
func (e prefixError) Unwrap() error { return e.err }

// perfqueryTarget is where the queries go.
type perfqueryTarget struct {
	lid     uint16
	grh     bool
	gid     [16]byte
	port    int    // the PortSelect
	display string // libibmad's portid2str
}

// perfqueryAllPorts is the PortSelect of every port (AllPortSelect).
const perfqueryAllPorts = 0xff

// PerfMgmt ClassPortInfo capability bits perfquery looks at (IBA
// 16.1.3.1; infiniband-diags' IB_PM_*).
const (
	pmCapAllPortSelect = 0x0100
	pmCapQP1Drop       = 0x4000
)

func (env *Env) runPerfquery(args []string, stdout, stderr io.Writer) error {
	o, err := perfqueryParse(args, stderr)
	var bad perfqueryArgsError
	if errors.As(err, &bad) {
		return fabricUsage(stderr, "perfquery", o.usage, bad.error)
	}
	if err != nil {
		return diagOptsFailed(stdout, stderr, "perfquery", o.usage, o.fab, err)
	}
	if o.rangeBad {
		return ibexit(stdout, "perfquery", o.debug, "main", "max port must be greater than min port in range")
	}
	log := &madLog{w: stderr, errs: o.errs || o.debug, debug: o.debug}
	h := env.host()
	port, err := env.openPort(h, o.ca, max(o.port, 0))
	if err != nil {
		return openFailed(stdout, stderr, "perfquery", o.fab, err)
	}
	defer port.Close()
	// What failed, as infiniband-diags' IBEXIT says it on standard
	// output (fn: the C function, shown with -d); our explanation goes
	// to standard error after libibmad's warnings.
	ibexit := func(fn, what string, err error) error { return perfqueryFail(stdout, stderr, o, fn, what, err) }
	if o.badDest != "" {
		return ibexit("main", "can't resolve destination port "+o.badDest, fmt.Errorf("%q is not a unicast LID", o.badDest))
	}
	local, err := localPort(h, port, o.fab.timeout, o.retries+1)
	if err == nil && o.lid < 0 && o.guid == "" && o.dgid == "" && !selfResolves(o.port, local) {
		err = fmt.Errorf("resolve_self: no port %d", uint8(o.port))
	}
	if err != nil {
		return ibexit("main", "can't resolve self port (null)", err)
	}
	// The SMP client of -G's resolution and of the loop over a node's
	// ports, made on first use.
	var smp *smpClient
	smpClient := func() (*smpClient, error) {
		if smp == nil {
			c, err := newSMPClient(port, o.fab.timeout, o.retries+1, log)
			if err != nil {
				return nil, err
			}
			c.mkey = o.fab.common.mkey
			smp = c
		}
		return smp, nil
	}
	if o.guid != "" {
		// -G: resolve_portid_str asks the SA (-s: at that LID) for the
		// GUID's path.
		c, err := smpClient()
		if err != nil {
			return ibexit("main", "can't resolve destination port "+o.guid, err)
		}
		d, err := env.resolveDest(c, o.fab, destGUID, o.guid)
		if err != nil {
			return ibexit("main", "can't resolve destination port "+o.guid, err)
		}
		o.lid = int(d.lid)
	}
	tgt, err := perfqueryResolve(o, local)
	if err != nil {
		return ibexit("main", "can't resolve destination port", err)
	}
	agent, err := port.Register(umad.ClassPerfMgmt, umad.PerfClassVersion, umad.MethodMask{})
	if err != nil {
		return ibexit("main", "Failed to open '(null)' port '0'", err)
	}
	q := &perfqueryQuerier{rpc: newMadRPC(port, o.timeout, o.retries+1, log), agent: agent, tgt: tgt, out: stdout}

	// ClassPortInfo is mandatory; its capability masks say which counters
	// are valid.
	data, err := q.get(umad.AttrClassPortInfo, tgt.port)
	if err != nil {
		return ibexit("main", "classportinfo query", prefixError{"classportinfo query", err})
	}
	var cpi umad.ClassPortInfo
	if err := cpi.Decode(data); err != nil {
		return ibexit("main", "classportinfo query", prefixError{"classportinfo query", err})
	}
	capMask, capMask2 := cpi.CapabilityMask, cpi.CapabilityMask2

	allPortsLoop := false
	if capMask&pmCapAllPortSelect == 0 && tgt.port == perfqueryAllPorts {
		if !o.all {
			return ibexit("main", "AllPortSelect not supported", errors.New("the PMA has no AllPortSelect"))
		}
		allPortsLoop = true
	}

	// One counter group other than the port counters: the first asked
	// for, in perfquery's order.
	for i, g := range pmGroups {
		if o.wantsGroup(i) {
			return perfqueryGroup(q, o, &g, capMask, ibexit, stdout, stderr)
		}
	}
	if o.smplctl {
		data, err := q.get(umad.PMAttrPortSamplesControl, tgt.port)
		if err != nil {
			return ibexit("dump_portsamples_control", "sampctlquery", err)
		}
		lines, err := psControlLines(data)
		if err != nil {
			return ibexit("dump_portsamples_control", "sampctlquery", err)
		}
		fmt.Fprintf(stdout, "# PortSamplesControl: %s port %d\n%s", tgt.display, tgt.port, cDump(lines, 1280))
		return nil
	}

	// Every port of the node: emulating AllPortSelect, or -l.
	loopAll := allPortsLoop || (o.loop && (o.all || tgt.port == perfqueryAllPorts))
	aggregate := false
	var ports []int
	switch {
	case loopAll:
		c, err := smpClient()
		if err != nil {
			return ibexit("main", "smp query nodeinfo failed", err)
		}
		d := smpDest{lid: tgt.lid}
		ni, err := c.get(d, umad.SMAttrNodeInfo, 0)
		if err != nil {
			return ibexit("main", "smp query nodeinfo failed", err)
		}
		n, start := int(ni[3]), 1
		if n == 0 {
			return ibexit("main", "smp query nodeinfo: num ports invalid", errors.New("no ports"))
		}
		if ni[2] == 2 {
			si, err := c.get(d, umad.SMAttrSwitchInfo, 0)
			if err != nil {
				return ibexit("main", "smp query nodeinfo failed", err)
			}
			if bits(si, 132, 1) != 0 {
				start = 0
			}
		}
		if allPortsLoop && !o.loop {
			fmt.Fprintf(stderr, "ibwarn: [%d] main: Emulating AllPortSelect by iterating through all ports\n", os.Getpid())
		}
		for i := start; i <= n; i++ {
			ports = append(ports, i)
		}
		aggregate = allPortsLoop && !o.loop
	case len(o.ports) > 1:
		ports = o.ports
		aggregate = o.all && !o.loop
	default:
		ports = []int{tgt.port}
	}

	if !o.resetOnly {
		var sum perfquerySum
		for _, p := range ports {
			fields, header, err := perfqueryRead(q, o.extended, p, capMask, capMask2, stderr)
			if err != nil {
				what := "perfquery"
				if o.extended {
					what = "perfextquery"
				}
				return ibexit("dump_perfcounters", what, err)
			}
			if aggregate {
				sum.add(fields)
				continue
			}
			if o.json {
				counters := map[string]uint64{}
				for _, f := range fields {
					counters[f.name] = f.value
				}
				if err := ibJSON(stdout, map[string]any{
					"port_id": tgt.display, "port": p, "extended": o.extended,
					"cap_mask": fmt.Sprintf("0x%04x", capMask), "cap_mask2": fmt.Sprintf("0x%07x", capMask2),
					"counters": counters,
				}); err != nil {
					return err
				}
				continue
			}
			fmt.Fprint(stdout, header)
			for _, f := range fields {
				fmt.Fprintln(stdout, f.String())
			}
		}
		if aggregate {
			fields := sum.fields(perfqueryAllPorts)
			if o.extended {
				fmt.Fprintf(stdout, "# Port extended counters: %s port %d (CapMask: 0x%02X CapMask2: 0x%07X)\n",
					tgt.display, perfqueryAllPorts, capMask, capMask2)
			} else {
				fmt.Fprintf(stdout, "# Port counters: %s port %d (CapMask: 0x%02X)\n", tgt.display, perfqueryAllPorts, capMask)
			}
			for _, f := range fields {
				fmt.Fprintln(stdout, f.String())
			}
		}
		if !o.reset {
			return nil
		}
	}

	// The reset: perfquery's mask (counter select bits, CounterSelect2
	// above bit 16), widened as perfquery.c's do_reset does.
	mask := uint32(0xffff)
	if o.maskSet {
		mask = uint32(o.mask)
	}
	if !o.maskSet && !o.extended {
		if capMask&umad.PMCapPortCountersXmitWait != 0 {
			mask |= 1 << 16
		}
		if capMask&pmCapQP1Drop != 0 {
			mask |= 1 << 17
		}
	}
	attr, what := umad.PMAttrPortCounters, "perf reset"
	if o.extended {
		attr, what = umad.PMAttrPortCountersExtended, "perf ext reset"
		mask |= 0xfff0000
		if capMask&umad.PMCapPortCountersXmitWait != 0 {
			mask |= 1 << 28
		}
		if capMask&pmCapQP1Drop != 0 {
			mask |= 1 << 29
		}
	}
	for _, p := range ports {
		if err := q.reset(attr, p, mask); err != nil {
			return ibexit("reset_counters", what, err)
		}
	}
	return nil
}

// perfqueryGroup is common_func for group g: the query and dump (unless
// -R), then the reset with -r or -R; PortExtendedSpeedsCounters has its
// own (extended_speeds_query).
func perfqueryGroup(q *perfqueryQuerier, o *perfqueryOpts, g *pmGroup, capMask uint16, ibexit func(fn, what string, err error) error, stdout, stderr io.Writer) error {
	tgt := q.tgt
	if g.attr == umad.PMAttrPortExtendedSpeedsCounters {
		if !o.resetOnly {
			name := g.name
			rsfec, err := perfqueryRSFEC(q, o, capMask, stderr)
			if err != nil {
				return err
			}
			if rsfec {
				name = g.name + " with RS-FEC Active"
			}
			data, err := q.get(g.attr, tgt.port)
			if err != nil {
				return ibexit("common_func", "cannot query "+name, err)
			}
			lines, err := pescLines(data, rsfec)
			if err != nil {
				return ibexit("common_func", "cannot query "+name, err)
			}
			fmt.Fprint(stdout, pmGroupDump(name, tgt.display, tgt.port, lines))
		}
		if o.reset || o.resetOnly {
			mask := ^uint64(0)
			if o.maskSet {
				mask = o.mask
			}
			if _, err := q.resetExtSpeeds(tgt.port, mask); err != nil {
				return ibexit("extended_speeds_query", "cannot reset "+g.name, err)
			}
		}
		return nil
	}
	if !o.resetOnly {
		data, err := q.get(g.attr, tgt.port)
		if err != nil {
			return ibexit("common_func", "cannot query "+g.name, err)
		}
		lines, err := g.dump(data)
		if err != nil {
			return ibexit("common_func", "cannot query "+g.name, err)
		}
		fmt.Fprint(stdout, pmGroupDump(g.name, tgt.display, tgt.port, lines))
	}
	if o.reset || o.resetOnly {
		mask := uint32(0xffff)
		if o.maskSet {
			mask = uint32(o.mask)
		}
		if err := q.reset(g.attr, tgt.port, mask); err != nil {
			return ibexit("common_func", "cannot reset "+g.name, err)
		}
	}
	return nil
}

// perfqueryRSFEC is perfquery's is_rsfec_mode_active: whether the port's
// PortInfoExtended says RS-FEC is active, asked only where the PMA's
// capability mask has bit 14 (IS_PM_RSFEC_COUNTERS_SUP), through SMPs
// (NodeInfo and PortInfo first: is_port_info_extended_supported). An
// error it ends the run with is returned already reported.
func perfqueryRSFEC(q *perfqueryQuerier, o *perfqueryOpts, capMask uint16, stderr io.Writer) (bool, error) {
	if capMask&(1<<14) == 0 {
		return false, nil
	}
	fail := func(fn, what string, err error) (bool, error) {
		return false, perfqueryFail(q.out, stderr, o, fn, what, err)
	}
	c, err := newSMPClient(q.rpc.port, o.fab.timeout, o.retries+1, q.rpc.log)
	if err != nil {
		return fail("is_port_info_extended_supported", "node info query failed", err)
	}
	d := smpDest{lid: q.tgt.lid}
	ok, err := portInfoExtSupported(c, d, q.tgt.port)
	var x opExit
	if errors.As(err, &x) {
		return fail(x.fn, x.what, x.cause)
	}
	if !ok {
		c.rpc.log.warn("is_rsfec_mode_active", "Port Info Extended not supported")
		return false, nil
	}
	pie, err := c.get(d, umad.SMAttrPortInfoExtended, uint32(q.tgt.port))
	if err != nil {
		return fail("is_rsfec_mode_active", "smp query portinfo extended failed", err)
	}
	fec := bits(pie, 32, 16)
	return bits(pie, 0, 32)&1 != 0 && (fec == 2 || fec == 4), nil
}

// perfqueryRead reads one port's counters and returns them with the
// header perfquery prints above them.
func perfqueryRead(q *perfqueryQuerier, extended bool, port int, capMask uint16, capMask2 uint32, stderr io.Writer) ([]perfqueryField, string, error) {
	tgt := q.tgt
	if extended {
		if capMask&(umad.PMCapExtendedWidth|umad.PMCapExtendedWidthNoIETF) == 0 {
			fmt.Fprintf(stderr, "ibwarn: [%d] dump_perfcounters: PerfMgt ClassPortInfo CapMask 0x%02X; No extended counter support indicated\n\n",
				os.Getpid(), capMask)
		}
		data, err := q.get(umad.PMAttrPortCountersExtended, port)
		if err != nil {
			return nil, "", fmt.Errorf("perfextquery: %w", err)
		}
		var pc umad.PortCountersExtended
		if err := pc.Decode(data); err != nil {
			return nil, "", fmt.Errorf("perfextquery: %w", err)
		}
		return perfqueryExtFields(&pc, capMask, capMask2), fmt.Sprintf("# Port extended counters: %s port %d (CapMask: 0x%02X CapMask2: 0x%07X)\n",
			tgt.display, port, capMask, capMask2), nil
	}
	data, err := q.get(umad.PMAttrPortCounters, port)
	if err != nil {
		return nil, "", fmt.Errorf("perfquery: %w", err)
	}
	var pc umad.PortCounters
	if err := pc.Decode(data); err != nil {
		return nil, "", fmt.Errorf("perfquery: %w", err)
	}
	if capMask&umad.PMCapPortCountersXmitWait == 0 {
		pc.PortXmitWait = 0 // not supported: perfquery clears it
	}
	return perfqueryFields(&pc), fmt.Sprintf("# Port counters: %s port %d (CapMask: 0x%02X)\n", tgt.display, port, capMask), nil
}

// perfquerySum is perfquery.c's aggregation of ports: counters summed,
// each saturating at its width (aggregate_perfcounters).
type perfquerySum struct {
	names []perfqueryField
	sums  []uint64
}

// perfqueryWidths are the PortCounters fields' widths in bits, by name
// (PortCountersExtended's are all 64).
func perfqueryWidth(name string) int {
	switch name {
	case "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors":
		return 4
	case "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortXmitConstraintErrors", "PortRcvConstraintErrors":
		return 8
	case "SymbolErrorCounter", "PortRcvErrors", "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards", "QP1Dropped", "VL15Dropped":
		return 16
	case "PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait":
		return 32
	}
	return 0
}

func (s *perfquerySum) add(fields []perfqueryField) {
	if s.names == nil {
		s.names = append([]perfqueryField(nil), fields...)
		s.sums = make([]uint64, len(fields))
	}
	for i, f := range fields {
		if i >= len(s.sums) {
			break
		}
		switch f.name {
		case "PortSelect":
			continue
		case "CounterSelect", "CounterSelect2":
			s.sums[i] = f.value // the last port's, as perfquery keeps it
			continue
		}
		w := perfqueryWidth(f.name)
		if w == 0 || s.names[0].name != "PortSelect" || len(fields) != 21 {
			w = 64
		}
		max := uint64(1)<<w - 1
		if w == 64 {
			max = ^uint64(0)
		}
		if s.sums[i] > max-f.value {
			s.sums[i] = max
		} else {
			s.sums[i] += f.value
		}
	}
}

func (s *perfquerySum) fields(portSelect uint64) []perfqueryField {
	out := append([]perfqueryField(nil), s.names...)
	for i := range out {
		switch out[i].name {
		case "PortSelect":
			out[i].value = portSelect
		default:
			out[i].value = s.sums[i]
		}
	}
	return out
}

// perfqueryResolve turns the options into a destination. The local port
// is the default: by LID on InfiniBand, by GID 0 on RoCE.
func perfqueryResolve(o *perfqueryOpts, local *umad.CAPort) (*perfqueryTarget, error) {
	// resolve_self gives the local port's number (with -a too); a LID
	// given is queried at the port given, 0 without one, as perfquery
	// does. --dgid (ours) defaults to the local port's number.
	t := &perfqueryTarget{port: o.dport}
	if (o.lid < 0 && o.dgid == "") || (o.dgid != "" && o.dport == 0) {
		t.port = local.Number
	}
	roce := local.LinkLayer == rdma.LinkLayerEthernet
	switch {
	case o.dgid != "":
		a, err := netip.ParseAddr(o.dgid)
		if err != nil || !a.Is6() {
			return nil, fmt.Errorf("invalid GID %q (an IPv6-style address such as fe80::1)", o.dgid)
		}
		t.grh, t.gid = true, a.As16()
		if o.lid >= 0 {
			t.lid = uint16(o.lid)
		}
	case o.lid >= 0 && roce:
		return nil, fmt.Errorf("%s/%d is a RoCE port: it addresses by GID, not LID; use --dgid", local.CA, local.Number)
	case o.lid >= 0:
		t.lid = uint16(o.lid)
	case roce:
		t.grh = true
		binary.BigEndian.PutUint64(t.gid[:8], local.GIDPrefix)
		binary.BigEndian.PutUint64(t.gid[8:], uint64(local.PortGUID))
	default:
		t.lid = uint16(ibU32(local.LID))
	}
	// "Lid N[ Gid G]", built in one buffer: fmt's first use in a run
	// costs its printer pool's per-P array, a fresh heap span.
	var b [64]byte
	d := strconv.AppendUint(append(b[:0], "Lid "...), uint64(t.lid), 10)
	if t.grh {
		d = netip.AddrFrom16(t.gid).AppendTo(append(d, " Gid "...))
	}
	t.display = string(d)
	return t, nil
}

// perfqueryQuerier sends PerfMgmt Gets and Sets through libibmad's RPC
// and waits for their GetResps.
type perfqueryQuerier struct {
	rpc   *madRPC
	agent umad.AgentID
	tgt   *perfqueryTarget
	tid   uint32
	out   io.Writer // standard output, for IBEXIT's line
}

// get is libibmad's pma_query_via: a Get of attr for port (its
// PortSelect byte set in data otherwise zero); it returns the response's
// data area.
func (q *perfqueryQuerier) get(attr umad.AttrID, port int) ([]byte, error) {
	q.rpc.log.dbg("pma_query_via", "lid %d port %d", q.tgt.lid, port)
	var data [umad.PerfDataSize]byte
	data[1] = byte(port)
	return q.query(attr, umad.MethodGet, &data)
}

// reset is libibmad's performance_reset_via: a Set of attr for port with
// the counter select mask (0: every counter), its low 16 bits in
// CounterSelect, the rest in CounterSelect2 (PortCounters' 8-bit one at
// byte 18 for every attribute but PortCountersExtended's 32-bit one).
func (q *perfqueryQuerier) reset(attr umad.AttrID, port int, mask uint32) error {
	q.rpc.log.dbg("performance_reset_via", "lid %d port %d mask 0x%x", q.tgt.lid, port, mask)
	if mask == 0 {
		mask = ^uint32(0)
	}
	var data [umad.PerfDataSize]byte
	data[1] = byte(port)
	binary.BigEndian.PutUint16(data[2:], uint16(mask))
	if attr == umad.PMAttrPortCountersExtended {
		binary.BigEndian.PutUint32(data[4:], mask>>16)
	} else {
		data[18] = byte(mask >> 16)
	}
	_, err := q.query(attr, umad.MethodSet, &data)
	return err
}

// resetExtSpeeds is perfquery's ext_speeds_reset_via: a Set of
// PortExtendedSpeedsCounters with its 64-bit CounterSelect (0: all).
func (q *perfqueryQuerier) resetExtSpeeds(port int, mask uint64) ([]byte, error) {
	q.rpc.log.dbg("ext_speeds_reset_via", "lid %d port %d mask 0x%x", q.tgt.lid, port, mask)
	if mask == 0 {
		mask = ^uint64(0)
	}
	var data [umad.PerfDataSize]byte
	data[1] = byte(port)
	binary.BigEndian.PutUint64(data[8:], mask)
	return q.query(umad.PMAttrPortExtendedSpeedsCounters, umad.MethodSet, &data)
}

// query sends method (Get or Set) of attr with data, the attribute's
// bytes, and returns the response's data area. The request is built on
// the stack: through umad.Attribute's interface it took three heap
// allocations, each of a size class of its own (docs/performance.md,
// "Per tool"). A response with a non-zero status
// and no response after the tries (or no timeout either: a stopped
// ibsim) fail.
func (q *perfqueryQuerier) query(attr umad.AttrID, method umad.Method, data *[umad.PerfDataSize]byte) ([]byte, error) {
	q.tid++
	m := umad.PerfMAD{Header: umad.NewMADHeader(umad.ClassPerfMgmt, method, attr, 0, uint64(q.tid)), Data: *data}
	req := m.Append(make([]byte, 0, umad.MADSize))
	tgt := q.tgt
	addr := func(p *umad.Packet) error {
		if err := p.SetAddr(tgt.lid, 1, 0, umad.QP1QKey); err != nil {
			return err
		}
		if tgt.grh {
			p.SetGRH(umad.GRH{GID: tgt.gid, HopLimit: 64})
		} else {
			p.ClearGRH()
		}
		return nil
	}
	r, err := q.rpc.do(q.agent, req, addr, tgt.display)
	var na *errNoAnswer
	var st *errMADStatus
	switch {
	case errors.As(err, &na):
		na.dest = "the PMA of " + tgt.display
		na.hint = " (the port has no PMA answering, or nothing is at that address)"
		return nil, err
	case errors.As(err, &st):
		return nil, &pmaStatusError{display: tgt.display, status: st.status}
	case err != nil:
		return nil, err
	}
	var resp umad.PerfMAD
	if err := resp.Decode(r[:min(len(r), umad.MADSize)]); err != nil {
		return nil, fmt.Errorf("the PMA of %s: %w", tgt.display, err)
	}
	return resp.Data[:], nil
}

// perfqueryField is one line of libibmad's dump: "Name:....value".
type perfqueryField struct {
	name  string
	value uint64
	hex   int // 0: decimal; else the number of bytes shown in hex
}

func (f perfqueryField) String() string {
	dots := ""
	if len(f.name) < 32 {
		dots = strings.Repeat(".", 32-len(f.name))
	}
	if f.hex > 0 {
		return fmt.Sprintf("%s:%s0x%0*x", f.name, dots, 2*f.hex, f.value)
	}
	return fmt.Sprintf("%s:%s%d", f.name, dots, f.value)
}

// perfqueryFields is mad_dump_perfcounters' order: QP1Dropped between
// ExcessiveBufferOverrunErrors and VL15Dropped.
func perfqueryFields(pc *umad.PortCounters) []perfqueryField {
	return []perfqueryField{
		{"PortSelect", uint64(pc.PortSelect), 0},
		{"CounterSelect", uint64(pc.CounterSelect), 2},
		{"SymbolErrorCounter", uint64(pc.SymbolErrorCounter), 0},
		{"LinkErrorRecoveryCounter", uint64(pc.LinkErrorRecoveryCounter), 0},
		{"LinkDownedCounter", uint64(pc.LinkDownedCounter), 0},
		{"PortRcvErrors", uint64(pc.PortRcvErrors), 0},
		{"PortRcvRemotePhysicalErrors", uint64(pc.PortRcvRemotePhysicalErrors), 0},
		{"PortRcvSwitchRelayErrors", uint64(pc.PortRcvSwitchRelayErrors), 0},
		{"PortXmitDiscards", uint64(pc.PortXmitDiscards), 0},
		{"PortXmitConstraintErrors", uint64(pc.PortXmitConstraintErrors), 0},
		{"PortRcvConstraintErrors", uint64(pc.PortRcvConstraintErrors), 0},
		{"CounterSelect2", uint64(pc.CounterSelect2), 1},
		{"LocalLinkIntegrityErrors", uint64(pc.LocalLinkIntegrityErrors), 0},
		{"ExcessiveBufferOverrunErrors", uint64(pc.ExcessiveBufferOverrunErrors), 0},
		{"QP1Dropped", uint64(pc.QP1Dropped), 0},
		{"VL15Dropped", uint64(pc.VL15Dropped), 0},
		{"PortXmitData", uint64(pc.PortXmitData), 0},
		{"PortRcvData", uint64(pc.PortRcvData), 0},
		{"PortXmitPkts", uint64(pc.PortXmitPkts), 0},
		{"PortRcvPkts", uint64(pc.PortRcvPkts), 0},
		{"PortXmitWait", uint64(pc.PortXmitWait), 0},
	}
}

// perfqueryExtFields is dump_perfcounters_ext: the unicast and multicast
// counters where the PMA has extended width, the error counters where it
// has the additional PortCountersExtended counters.
func perfqueryExtFields(pc *umad.PortCountersExtended, capMask uint16, capMask2 uint32) []perfqueryField {
	f := []perfqueryField{
		{"PortSelect", uint64(pc.PortSelect), 0},
		{"CounterSelect", uint64(pc.CounterSelect), 2},
		{"PortXmitData", pc.PortXmitData, 0},
		{"PortRcvData", pc.PortRcvData, 0},
		{"PortXmitPkts", pc.PortXmitPkts, 0},
		{"PortRcvPkts", pc.PortRcvPkts, 0},
	}
	if capMask&umad.PMCapExtendedWidth != 0 {
		f = append(f,
			perfqueryField{"PortUnicastXmitPkts", pc.PortUnicastXmitPkts, 0},
			perfqueryField{"PortUnicastRcvPkts", pc.PortUnicastRcvPkts, 0},
			perfqueryField{"PortMulticastXmitPkts", pc.PortMulticastXmitPkts, 0},
			perfqueryField{"PortMulticastRcvPkts", pc.PortMulticastRcvPkts, 0})
	}
	if capMask2&umad.PMCap2AdditionalPortCountersExtended != 0 {
		f = append(f,
			perfqueryField{"CounterSelect2", uint64(pc.CounterSelect2), 4},
			perfqueryField{"SymbolErrorCounter", pc.SymbolErrorCounter, 0},
			perfqueryField{"LinkErrorRecoveryCounter", pc.LinkErrorRecoveryCounter, 0},
			perfqueryField{"LinkDownedCounter", pc.LinkDownedCounter, 0},
			perfqueryField{"PortRcvErrors", pc.PortRcvErrors, 0},
			perfqueryField{"PortRcvRemotePhysicalErrors", pc.PortRcvRemotePhysicalErrors, 0},
			perfqueryField{"PortRcvSwitchRelayErrors", pc.PortRcvSwitchRelayErrors, 0},
			perfqueryField{"PortXmitDiscards", pc.PortXmitDiscards, 0},
			perfqueryField{"PortXmitConstraintErrors", pc.PortXmitConstraintErrors, 0},
			perfqueryField{"PortRcvConstraintErrors", pc.PortRcvConstraintErrors, 0},
			perfqueryField{"LocalLinkIntegrityErrors", pc.LocalLinkIntegrityErrors, 0},
			perfqueryField{"ExcessiveBufferOverrunErrors", pc.ExcessiveBufferOverrunErrors, 0},
			perfqueryField{"VL15Dropped", pc.VL15Dropped, 0},
			perfqueryField{"PortXmitWait", pc.PortXmitWait, 0},
			perfqueryField{"QP1Dropped", pc.QP1Dropped, 0})
	}
	return f
}
