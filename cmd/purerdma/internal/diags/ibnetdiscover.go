package diags

// ibnetdiscover: the fabric's topology, like infiniband-diags'
// ibnetdiscover (rdma-core 44, infiniband-diags/ibnetdiscover.c, with all
// its options: lists, the ports report, grouping, the node name map, the
// cache, --diff), from package umad/netdisc. The output is the C tool's
// byte for byte but for the "generated on" time (and, under -d, C's heap
// addresses).

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/purerdma/rdma/cmd/internal/linkspeed"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
	"github.com/purerdma/rdma/umad/netdisc"
)

// discoverFabric walks the fabric from the open port p.
func discoverFabric(p *umad.Port, o *fabricOpts, outstanding int) (*netdisc.Fabric, error) {
	opts := netdisc.Options{MaxOutstanding: outstanding, Timeout: o.timeout, Retries: o.retries, MKey: o.common.mkey}
	if isSim(p) {
		// libibnetdisc waits for every answer (umad_recv with no
		// timeout), and over libumad2sim no timeout ever comes: a
		// stopped ibsim delays the scan, it does not end it.
		opts.Idle = -1
	}
	return netdisc.Discover(context.Background(), p, opts)
}

// discoverDefaults sets what the discovery tools take from libibnetdisc
// rather than libibmad: -t (or the config file's timeout) else 200 ms
// (DEFAULT_TIMEOUT), and the kernel retries a try 3 times
// (DEFAULT_RETRIES).
func discoverDefaults(o *fabricOpts) {
	o.ibdTimeout()
	if !o.timeoutSet {
		o.timeout = 200 * time.Millisecond
	}
	o.retries = 3
}

// outstandingOpt is -o, --outstanding_smps: SMPs in flight at once
// (libibnetdisc's max_smps; 0 or garbage is the default, 64 here where
// libibnetdisc's is 2: the output does not depend on it).
func outstandingOpt(n *int) diagOpt {
	return diagOpt{"outstanding_smps", 'o', true, "", "specify the number of outstanding SMP's which should be issued during the scan", func(v string) error {
		*n = int(int32(cStrtoull(v)))
		if *n <= 0 {
			*n = 64
		}
		return nil
	}}
}

// discover opens the port and walks the fabric. A port that does not open
// or a scan that fails ends the tool as the C tool ends: ibnetdiscover
// with IBEXIT("discover failed\n"), iblinkinfo with "discover failed" on
// standard error and exit status 1; our explanation follows on standard
// error. A nil fabric means the tool is done and returns err.
func (env *Env) discover(tool string, o *fabricOpts, outstanding int, stdout, stderr io.Writer) (*netdisc.Fabric, error) {
	// libibumad takes a port number below 1 for "the first active".
	p, err := env.openPort(env.host(), o.ca, max(o.port, 0))
	if err != nil {
		return nil, openFailed(stdout, stderr, tool, o, err)
	}
	defer p.Close()
	if tool == "ibnetdiscover" && o.common.debugN > 0 {
		// ibnd_discover_fabric's ib_resolve_self_via, with libibmad's
		// debugging on.
		for _, attr := range []int{0x11, 0x15} {
			fmt.Fprintf(stderr, "ibwarn: [%d] smp_query_status_via: attr 0x%x mod 0x0 route DR path slid 0; dlid 0; 0\n", os.Getpid(), attr)
		}
	}
	f, err := discoverFabric(p, o, outstanding)
	if err != nil {
		if tool == "iblinkinfo" {
			fmt.Fprintf(stderr, "discover failed\n%s: %v\n", tool, err)
			return nil, cli.ExitError{Code: 1}
		}
		fmt.Fprintf(stderr, "%s: %v\n", tool, err)
		return nil, ibexit(stdout, tool, o.debug, "main", "discover failed\n")
	}
	return f, nil
}

// ibnetdiscover's -l, -H, -S, -R: which node types to list (1 << type).
const (
	listCA     = 1 << netdisc.TypeCA
	listSwitch = 1 << netdisc.TypeSwitch
	listRouter = 1 << netdisc.TypeRouter
)

// ibnetdiscover's --diffcheck keys.
const (
	ndDiffSwitch = 1 << iota
	ndDiffCA
	ndDiffRouter
	ndDiffPort
	ndDiffLID
	ndDiffDesc
	ndDiffDefault = ndDiffSwitch | ndDiffCA | ndDiffRouter | ndDiffPort
)

// netdiscover is one ibnetdiscover run: its options and where its output
// goes.
type netdiscover struct {
	o                                     *fabricOpts
	full, show, group, ports, reportHops  bool
	list                                  int
	nameMapFile, cache, loadCache, diffTo string
	diffFlags                             int
	outstanding                           int
	names                                 *nodeNameMap
	w                                     *strings.Builder
}

func (env *Env) runIBNetDiscover(args []string, stdout, stderr io.Writer) error {
	const tool = "ibnetdiscover"
	nd := &netdiscover{diffFlags: ndDiffDefault, outstanding: 64}
	flag := func(p *bool) func(string) error { return func(string) error { *p = true; return nil } }
	listOf := func(l int) func(string) error { return func(string) error { nd.list = l; return nil } }
	str := func(p *string) func(string) error { return func(v string) error { *p = v; return nil } }
	custom := []diagOpt{
		{"full", 'f', false, "", "show full information (ports' speed and width, vlcap)", flag(&nd.full)},
		{"show", 's', false, "", "show more information", flag(&nd.show)},
		{"list", 'l', false, "", "list of connected nodes", listOf(listCA | listSwitch | listRouter)},
		{"grouping", 'g', false, "", "show grouping", flag(&nd.group)},
		{"Hca_list", 'H', false, "", "list of connected CAs", listOf(listCA)},
		{"Switch_list", 'S', false, "", "list of connected switches", listOf(listSwitch)},
		{"Router_list", 'R', false, "", "list of connected routers", listOf(listRouter)},
		{"node-name-map", 1, true, "<file>", "node name map file", str(&nd.nameMapFile)},
		{"cache", 2, true, "<file>", "filename to cache ibnetdiscover data to", str(&nd.cache)},
		{"load-cache", 3, true, "<file>", "filename of ibnetdiscover cache to load", str(&nd.loadCache)},
		{"diff", 4, true, "<file>", "filename of ibnetdiscover cache to diff", str(&nd.diffTo)},
		{"diffcheck", 5, true, "<key(s)>", "specify checks to execute for --diff", func(v string) error {
			return parseDiffCheck(v, &nd.diffFlags, map[string]int{"sw": ndDiffSwitch, "ca": ndDiffCA, "router": ndDiffRouter,
				"port": ndDiffPort, "lid": ndDiffLID, "nodedesc": ndDiffDesc})
		}},
		{"ports", 'p', false, "", "obtain a ports report", flag(&nd.ports)},
		{"max_hops", 'm', false, "", "report max hops discovered by the library", flag(&nd.reportHops)},
		outstandingOpt(&nd.outstanding),
	}
	o, usage, err := parseDiagOpts(tool, "DGKLs", "[topology-file]", custom, args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, tool, usage, o, err)
	}
	nd.o = o
	discoverDefaults(o)
	out := stdout
	if len(o.pos) > 0 {
		file, err := os.Create(o.pos[0])
		if err != nil {
			return ibexit(stdout, tool, o.debug, "main", "can't open file %s for writing", o.pos[0])
		}
		defer file.Close()
		out = file
	}
	nd.names = openNodeNameMap(nd.nameMapFile, nd.nameMapFile != "", stderr)
	var old *netdisc.Fabric
	if nd.diffTo != "" {
		lf, err := loadCache(nd.diffTo)
		if err != nil {
			nd.cacheDebug(stdout, err)
			return ibexit(stdout, tool, o.debug, "main", "loading cached fabric for diff failed\n")
		}
		old = lf.f
	}
	var f *netdisc.Fabric
	var scan scanReplay
	if nd.loadCache != "" {
		lf, err := loadCache(nd.loadCache)
		if err != nil {
			nd.cacheDebug(stdout, err)
			return ibexit(stdout, tool, o.debug, "main", "loading cached fabric failed\n")
		}
		f, scan = lf.f, lf.scan
	} else {
		if f, err = env.discover(tool, o, nd.outstanding, stdout, stderr); f == nil {
			return err
		}
		scan, _ = replayWalk(f, nil, walk{show: nd.show, debug: o.common.debugN > 0})
		fmt.Fprint(stderr, scan.errors)
	}
	if nd.loadCache == "" {
		if _, err := io.WriteString(stdout, scan.progress); err != nil {
			return err
		}
	}
	var b strings.Builder
	nd.w = &b
	switch {
	case nd.ports:
		for i := len(f.Nodes) - 1; i >= 0; i-- {
			nd.portsReport(f.Nodes[i])
		}
		if _, err := io.WriteString(stdout, b.String()); err != nil {
			return err
		}
		b.Reset()
	case nd.list != 0:
		for _, typ := range []uint8{netdisc.TypeCA, netdisc.TypeSwitch, netdisc.TypeRouter} {
			if nd.list&(1<<typ) != 0 {
				nd.listNodes(f, typ)
			}
		}
	case old != nil:
		nd.diff(old, f)
	default:
		nd.topology(f, scan, time.Now())
	}
	if _, err := io.WriteString(out, b.String()); err != nil {
		return err
	}
	if nd.cache != "" {
		if err := writeCache(nd.cache, f, scan.maxHops, cachePorts(scan.ports)); err != nil {
			nd.cacheDebug(stdout, err)
			return ibexit(stdout, tool, o.debug, "main", "caching ibnetdiscover data failed\n")
		}
	}
	return nil
}

// cacheDebug prints, under -d, libibnetdisc's line on a cache it refused.
func (nd *netdiscover) cacheDebug(stdout io.Writer, err error) {
	if nd.o.common.debugN > 0 {
		fmt.Fprint(stdout, cacheDebugLine(err))
	}
}

// parseDiffCheck reads --diffcheck's comma-separated keys (any case) into
// flags, refusing an unknown key with C's line (the usage follows).
func parseDiffCheck(v string, flags *int, keys map[string]int) error {
	*flags = 0
	for _, k := range strings.Split(v, ",") {
		if k == "" {
			continue // strtok skips empty fields
		}
		f, ok := keys[strings.ToLower(k)]
		if !ok {
			return diagRefused(fmt.Sprintf("invalid diff check key: %s\n", k))
		}
		*flags |= f
	}
	return nil
}

// byType is libibnetdisc's per-type list: the nodes of type typ, last
// created first.
func byType(f *netdisc.Fabric, typ uint8) []*netdisc.Node {
	var ns []*netdisc.Node
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		if f.Nodes[i].Type == typ {
			ns = append(ns, f.Nodes[i])
		}
	}
	return ns
}

// listNodes is list_node over the nodes of one type.
func (nd *netdiscover) listNodes(f *netdisc.Fabric, typ uint8) {
	for _, n := range byType(f, typ) {
		kind := "???"
		switch n.Type {
		case netdisc.TypeSwitch:
			kind = "Switch"
		case netdisc.TypeCA:
			kind = "Ca"
		case netdisc.TypeRouter:
			kind = "Router"
		}
		fmt.Fprintf(nd.w, "%s\t : 0x%016x ports %d devid 0x%x vendid 0x%x \"%s\"\n", kind, n.GUID, n.NumPorts,
			binary.BigEndian.Uint16(n.Info[30:32]), bits(n.Info[:], 296, 24), nd.names.remapNode(n))
	}
}

// portsReport is dump_ports_report: a node's ports, last first.
func (nd *netdiscover) portsReport(n *netdisc.Node) {
	for i := n.NumPorts; i > 0; i-- {
		p := n.Ports[i]
		if p == nil {
			continue
		}
		lid := p.BaseLID
		if n.Type == netdisc.TypeSwitch {
			lid = n.SMALID
		}
		fmt.Fprintf(nd.w, "%2s %5d %2d 0x%016x %s %s", typeAbbrev(n), lid, p.Num, p.GUID, compatWidth(portWidth(p)), portRate(p))
		if r := p.Remote; r != nil {
			fmt.Fprintf(nd.w, " - %2s %5d %2d 0x%016x ( '%s' - '%s' )\n", typeAbbrev(r.Node), remoteLID(r), r.Num, r.GUID,
				nd.names.remapNode(n), nd.names.remapNode(r.Node))
		} else {
			fmt.Fprintf(nd.w, "%36s'%s'\n", "", nd.names.remapNode(n))
		}
	}
}

// typeAbbrev is ports_nt_str_compat.
func typeAbbrev(n *netdisc.Node) string {
	switch n.Type {
	case netdisc.TypeSwitch:
		return "SW"
	case netdisc.TypeCA:
		return "CA"
	case netdisc.TypeRouter:
		return "RT"
	}
	return "??"
}

// portWidth and portRate are dump_ports_report's width and speed of p:
// both 0 where the capability mask that counts (port 0's on a switch) is
// not known.
func portWidth(p *netdisc.Port) uint64 {
	if capInfo(p) == nil {
		return 0
	}
	return bits(p.Info[:], 248, 8)
}

func portRate(p *netdisc.Port) string {
	ci := capInfo(p)
	if ci == nil {
		return compatSpeed(0)
	}
	speed := bits(p.Info[:], 280, 4)
	var espeed uint64
	if hasExtSpeeds(ci) {
		espeed = bits(p.Info[:], 496, 4)
	}
	if speed != 4 && espeed == 0 {
		return compatSpeed(speed)
	}
	return compatSpeedExt(espeed, speed)
}

// ctime is C's ctime(3): "Tue Nov 24 01:04:19 2026\n".
func ctime(t time.Time) string { return t.Format("Mon Jan _2 15:04:05 2006") + "\n" }

// nodeName is ibnetdiscover's node_name: "S-<guid>" in quotes.
func nodeName(n *netdisc.Node) string {
	c := "?"
	switch n.Type {
	case netdisc.TypeSwitch:
		c = "S"
	case netdisc.TypeCA:
		c = "H"
	case netdisc.TypeRouter:
		c = "R"
	}
	return fmt.Sprintf("\"%s-%016x\"", c, n.GUID)
}

// cleanDesc is clean_nodedesc: the text up to its first NUL, each byte
// that is not printable a space.
func cleanDesc(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = ' '
		}
	}
	return string(b)
}

func compatWidth(w uint64) string {
	switch w {
	case 1:
		return "1x"
	case 2:
		return "4x"
	case 4:
		return "8x"
	case 8:
		return "12x"
	case 16:
		return "2x"
	}
	return "??"
}

// compatSpeed and compatSpeedExt are dump_linkspeed_compat and
// dump_linkspeedext_compat.
func compatSpeed(s uint64) string { return linkspeed.Name(s) }

func compatSpeedExt(e, s uint64) string {
	if e == 0 {
		return linkspeed.Name(s)
	}
	return linkspeed.ExtName(e)
}

// linkRate is ibnetdiscover's "4xSDR" of a port, espeed read where the
// capability mask (capInfo's) has extended speeds.
func linkRate(info, capInfo []byte) string {
	width := bits(info, 248, 8)
	speed := bits(info, 280, 4)
	var espeed uint64
	if capInfo != nil && bits(capInfo, 160, 32)&(1<<14) != 0 {
		espeed = bits(info, 496, 4)
	}
	if speed != 4 && espeed == 0 {
		return compatWidth(width) + compatSpeed(speed)
	}
	return compatWidth(width) + compatSpeedExt(espeed, speed)
}

func remoteLID(p *netdisc.Port) uint16 {
	if p.Node.Type == netdisc.TypeSwitch {
		return p.Node.SMALID
	}
	return p.BaseLID
}

// topology is dump_topology: the header, the switches, the CAs and the
// routers; with -g (grouping) the chassis first, then the nodes in none.
// Chassis are libibnetdisc's group_nodes: nodes that share a
// SystemImageGUID (Voltaire's and Mellanox's chassis layouts, which need
// their vendors' devices, are not known here).
func (nd *netdiscover) topology(f *netdisc.Fabric, scan scanReplay, now time.Time) {
	w := nd.w
	fmt.Fprintf(w, "#\n# Topology file: generated on %s#\n", ctime(now))
	if nd.reportHops {
		fmt.Fprintf(w, "# Reported max hops discovered: %d\n# Total MADs used: %d\n", scan.maxHops, scan.mads)
	}
	fmt.Fprintf(w, "# Initiated from node %016x port %016x\n", f.From.GUID, binary.BigEndian.Uint64(f.From.Info[20:28]))
	var chassis map[*netdisc.Node]int
	if nd.group {
		var list []*sysChassis
		list, chassis = groupChassis(f)
		for _, ch := range list {
			fmt.Fprintf(w, "\nChassis %d", ch.num)
			if ch.guid != 0 {
				fmt.Fprintf(w, " (guid 0x%x)", ch.guid)
			}
			w.WriteString("\n\n# Spine Nodes\n# Line Nodes\n# Chassis Switches")
			for _, n := range ch.nodes {
				if n.Type == netdisc.TypeSwitch {
					nd.outSwitch(n, chassis)
				}
			}
			w.WriteString("\n# Chassis CAs")
			for _, n := range ch.nodes {
				if n.Type == netdisc.TypeCA {
					nd.outCA(n, chassis)
				}
			}
		}
		w.WriteString("\nNon-Chassis Nodes\n")
	}
	for _, typ := range []uint8{netdisc.TypeSwitch, netdisc.TypeCA, netdisc.TypeRouter} {
		for _, n := range byType(f, typ) {
			if chassis[n] != 0 {
				continue
			}
			switch typ {
			case netdisc.TypeSwitch:
				nd.debugf("switch_iter_func", "SWITCH: node %s\n", fakeNodePtr(n))
			case netdisc.TypeCA:
				nd.debugf("ca_iter_func", "CA: node %s\n", fakeNodePtr(n))
			default:
				nd.debugf("router_iter_func", "RT: node %s\n", fakeNodePtr(n))
			}
			if typ == netdisc.TypeSwitch {
				nd.outSwitch(n, chassis)
			} else {
				nd.outCA(n, chassis)
			}
		}
	}
}

// sysChassis is a chassis of group_nodes: nodes sharing a
// SystemImageGUID.
type sysChassis struct {
	num   int
	guid  uint64
	nodes []*netdisc.Node
}

// groupChassis is group_nodes for nodes of no Voltaire chassis: a
// SystemImageGUID shared by more than one node makes a chassis, numbered
// in the order of libibnetdisc's node list (last created first); a
// chassis lists its nodes last added first.
func groupChassis(f *netdisc.Fabric) ([]*sysChassis, map[*netdisc.Node]int) {
	const voltaire = 0x08f1
	byGUID := map[uint64]*sysChassis{}
	var order []*sysChassis
	count := map[*sysChassis]int{}
	var all []*netdisc.Node
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		all = append(all, f.Nodes[i])
	}
	for _, n := range all {
		sys := binary.BigEndian.Uint64(n.Info[4:12])
		if bits(n.Info[:], 296, 24) == voltaire || sys == 0 {
			continue
		}
		ch := byGUID[sys]
		if ch == nil {
			ch = &sysChassis{guid: sys}
			byGUID[sys] = ch
			order = append(order, ch)
		}
		count[ch]++
	}
	num := 0
	member := map[*netdisc.Node]int{}
	for _, n := range all {
		sys := binary.BigEndian.Uint64(n.Info[4:12])
		if bits(n.Info[:], 296, 24) == voltaire || sys == 0 {
			continue
		}
		ch := byGUID[sys]
		if count[ch] < 2 {
			continue
		}
		if ch.num == 0 {
			num++
			ch.num = num
		}
		if member[n] == 0 {
			member[n] = ch.num
			ch.nodes = append([]*netdisc.Node{n}, ch.nodes...)
		}
	}
	var list []*sysChassis
	for _, ch := range order {
		if ch.num != 0 {
			list = append(list, ch)
		}
	}
	return list, member
}

// outIDs is out_ids: the vendor, device and system image lines, and with
// -g the chassis a node is in.
func (nd *netdiscover) outIDs(n *netdisc.Node, chassis map[*netdisc.Node]int, prefix string) {
	w := nd.w
	fmt.Fprintf(w, "\n%svendid=0x%x\n%sdevid=0x%x\n", prefix, bits(n.Info[:], 296, 24), prefix, binary.BigEndian.Uint16(n.Info[30:32]))
	sys := binary.BigEndian.Uint64(n.Info[4:12])
	if sys != 0 {
		fmt.Fprintf(w, "%ssysimgguid=0x%x", prefix, sys)
	}
	if nd.group && chassis[n] != 0 {
		fmt.Fprintf(w, "\t\t# Chassis %d", chassis[n])
	}
	if sys != 0 || (nd.group && chassis[n] != 0) {
		w.WriteString("\n")
	}
}

// outSwitch is out_switch and its linked ports (out_switch_port).
func (nd *netdiscover) outSwitch(n *netdisc.Node, chassis map[*netdisc.Node]int) {
	nd.outSwitchHead(n, chassis, "", "")
	for _, p := range n.Ports[1:] {
		if p != nil && p.Remote != nil {
			nd.outSwitchPort(p, "")
		}
	}
}

func (nd *netdiscover) outSwitchHead(n *netdisc.Node, chassis map[*netdisc.Node]int, idPrefix, swPrefix string) {
	w := nd.w
	nd.outIDs(n, chassis, idPrefix)
	fmt.Fprintf(w, "%sswitchguid=0x%x(%x)", idPrefix, n.GUID, binary.BigEndian.Uint64(n.Info[20:28]))
	if nd.group {
		w.WriteString("\t# ")
	}
	w.WriteString("\n")
	nd.outSwitchDetail(n, swPrefix)
	w.WriteString("\n")
}

// outSwitchDetail is out_switch_detail.
func (nd *netdiscover) outSwitchDetail(n *netdisc.Node, prefix string) {
	kind := "base"
	if n.EnhancedPort0 {
		kind = "enhanced"
	}
	fmt.Fprintf(nd.w, "%sSwitch\t%d %s\t\t# \"%s\" %s port 0 lid %d lmc %d", prefix, n.NumPorts, nodeName(n), nd.names.remapNode(n), kind, n.SMALID, n.SMALMC)
}

// debugf is ibnetdiscover's DEBUG (libibmad's IBDEBUG, with -d): on
// standard output, with the pid and the function, and the blank line its
// format's own newline makes.
func (nd *netdiscover) debugf(fn, format string, args ...any) {
	if nd.o != nil && nd.o.common.debugN > 0 {
		fmt.Fprintf(nd.w, "ibdebug: [%d] %s: %s\n", os.Getpid(), fn, fmt.Sprintf(format, args...))
	}
}

func (nd *netdiscover) outSwitchPort(p *netdisc.Port, prefix string) {
	w := nd.w
	n, r := p.Node, p.Remote
	nd.debugf("out_switch_port", "port %s:%d remoteport %s\n", fakePortPtr(n, p.Num), p.Num, fakePortPtr(r.Node, r.Num))
	fmt.Fprintf(w, "%s[%d]\t%s[%d]", prefix, p.Num, nodeName(r.Node), r.Num)
	if r.Node.Type != netdisc.TypeSwitch {
		fmt.Fprintf(w, "(%x) ", r.GUID)
	}
	var port0 []byte
	if n.Ports[0] != nil {
		port0 = n.Ports[0].Info[:]
	}
	width, speed := bits(p.Info[:], 248, 8), bits(p.Info[:], 280, 4)
	rate := linkRate(p.Info[:], port0)
	if port0 == nil {
		speed = 0
		rate = compatWidth(width) + compatSpeed(0)
	}
	fmt.Fprintf(w, "\t\t# \"%s\" lid %d %s", nd.names.remapNode(r.Node), remoteLID(r), rate)
	if nd.full {
		fmt.Fprintf(w, " s=%d w=%d v=%d", speed, width, bits(p.Info[:], 296, 4))
	}
	w.WriteString("\n")
}

// outCA is out_ca and its linked ports (out_ca_port).
func (nd *netdiscover) outCA(n *netdisc.Node, chassis map[*netdisc.Node]int) {
	nd.outCAHead(n, chassis, "", "")
	for _, p := range n.Ports[1:] {
		if p != nil && p.Remote != nil {
			nd.outCAPort(p, "")
		}
	}
}

func (nd *netdiscover) outCAHead(n *netdisc.Node, chassis map[*netdisc.Node]int, idPrefix, caPrefix string) {
	nd.outIDs(n, chassis, idPrefix)
	typ := "ca"
	if n.Type == netdisc.TypeRouter {
		typ = "rt"
	}
	fmt.Fprintf(nd.w, "%s%sguid=0x%x\n", idPrefix, typ, n.GUID)
	nd.outCADetail(n, caPrefix)
	nd.w.WriteString("\n")
}

// outCADetail is out_ca_detail (the description not remapped, as C).
func (nd *netdiscover) outCADetail(n *netdisc.Node, prefix string) {
	long := "Ca"
	if n.Type == netdisc.TypeRouter {
		long = "Rt"
	}
	fmt.Fprintf(nd.w, "%s%s\t%d %s\t\t# \"%s\"", prefix, long, n.NumPorts, nodeName(n), cleanDesc(n.Desc))
}

func (nd *netdiscover) outCAPort(p *netdisc.Port, prefix string) {
	w := nd.w
	r := p.Remote
	fmt.Fprintf(w, "%s[%d]", prefix, p.Num)
	if p.Node.Type != netdisc.TypeSwitch {
		fmt.Fprintf(w, "(%x) ", p.GUID)
	}
	fmt.Fprintf(w, "\t%s[%d]", nodeName(r.Node), r.Num)
	if r.Node.Type != netdisc.TypeSwitch {
		fmt.Fprintf(w, " (%x) ", r.GUID)
	}
	fmt.Fprintf(w, "\t\t# lid %d lmc %d \"%s\" lid %d %s", p.BaseLID, p.LMC, nd.names.remapNode(r.Node), remoteLID(r), linkRate(p.Info[:], p.Info[:]))
	if nd.full {
		fmt.Fprintf(w, " s=%d w=%d v=%d", bits(p.Info[:], 280, 4), bits(p.Info[:], 248, 8), bits(p.Info[:], 296, 4))
	}
	w.WriteString("\n")
}

// diff is ibnetdiscover --diff: what differs between the cached fabric old
// and cur, by node type, as C's diff_common prints it ("<" old, ">"
// cur).
func (nd *netdiscover) diff(old, cur *netdisc.Fabric) {
	nd.group = false // diff_common's headers are ungrouped
	for _, t := range []struct {
		flag int
		typ  uint8
	}{{ndDiffSwitch, netdisc.TypeSwitch}, {ndDiffCA, netdisc.TypeCA}, {ndDiffRouter, netdisc.TypeRouter}} {
		if nd.diffFlags&t.flag == 0 {
			continue
		}
		nd.diffIter(old, cur, t.typ, nd.diffFlags, "< ", "> ")
		nd.diffIter(cur, old, t.typ, nd.diffFlags&^(ndDiffPort|ndDiffLID|ndDiffDesc), "> ", "< ")
	}
}

func findNode(f *netdisc.Fabric, guid uint64) *netdisc.Node {
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		if f.Nodes[i].GUID == guid {
			return f.Nodes[i]
		}
	}
	return nil
}

// diffHead, diffDetail and diffPort are diff_common's out_header,
// out_header_detail and out_port for n's type.
func (nd *netdiscover) diffHead(n *netdisc.Node, idPrefix, prefix string) {
	if n.Type == netdisc.TypeSwitch {
		nd.outSwitchHead(n, nil, idPrefix, prefix)
	} else {
		nd.outCAHead(n, nil, idPrefix, prefix)
	}
}

func (nd *netdiscover) diffDetail(n *netdisc.Node, prefix string) {
	if n.Type == netdisc.TypeSwitch {
		nd.outSwitchDetail(n, prefix)
	} else {
		nd.outCADetail(n, prefix)
	}
}

func (nd *netdiscover) diffPort(p *netdisc.Port, prefix string) {
	if p == nil || p.Remote == nil {
		return // C dereferences the missing remote port here
	}
	if p.Node.Type == netdisc.TypeSwitch {
		nd.outSwitchPort(p, prefix)
	} else {
		nd.outCAPort(p, prefix)
	}
}

// diffIter is diff_iter_func over a's nodes of type typ.
func (nd *netdiscover) diffIter(a, b *netdisc.Fabric, typ uint8, flags int, p1, p2 string) {
	for _, n1 := range byType(a, typ) {
		nd.debugf("diff_iter_func", "DEBUG: fabric1_node %s\n", fakeNodePtr(n1))
		n2 := findNode(b, n1.GUID)
		if n2 == nil {
			nd.diffHead(n1, p1, p1)
			for _, p := range n1.Ports[1:] {
				if p != nil && p.Remote != nil {
					nd.diffPort(p, p1)
				}
			}
			continue
		}
		if flags&(ndDiffPort|ndDiffLID|ndDiffDesc) == 0 {
			continue
		}
		head := false
		if (flags&ndDiffLID != 0 && smaLID(n1) != smaLID(n2)) || (flags&ndDiffDesc != 0 && n1.Desc != n2.Desc) {
			nd.diffHead(n1, "", p1)
			nd.diffDetail(n2, p2)
			nd.w.WriteString("\n")
			head = true
		}
		header := func() {
			if !head {
				nd.diffHead(n1, "", "")
				head = true
			}
		}
		if n1.NumPorts != n2.NumPorts {
			header()
			fmt.Fprintf(nd.w, "%snumports = %d\n%snumports = %d\n", p1, n1.NumPorts, p2, n2.NumPorts)
			continue
		}
		if flags&(ndDiffPort|ndDiffLID) == 0 {
			continue
		}
		for i := 1; i <= n1.NumPorts; i++ {
			a, b := n1.Ports[i], n2.Ports[i]
			o1, o2 := false, false
			if flags&ndDiffPort != 0 {
				switch {
				case (a != nil && b == nil) || (a != nil && b != nil && a.Remote != nil && b.Remote == nil):
					o1 = true
				case (a == nil && b != nil) || (a != nil && b != nil && a.Remote == nil && b.Remote != nil):
					o2 = true
				case a != nil && b != nil && (a.GUID != b.GUID || (a.Remote != nil && b.Remote != nil && a.Remote.GUID != b.Remote.GUID)):
					o1, o2 = true, true
				}
			}
			if flags&ndDiffLID != 0 && a != nil && b != nil && a.BaseLID != b.BaseLID {
				o1, o2 = true, true
			}
			both := a != nil && b != nil && a.Remote != nil && b.Remote != nil
			if flags&ndDiffPort != 0 && flags&ndDiffDesc != 0 && both && a.Remote.Node.Desc != b.Remote.Node.Desc {
				o1, o2 = true, true
			}
			if flags&ndDiffPort != 0 && flags&ndDiffLID != 0 && both && a.Remote.BaseLID != b.Remote.BaseLID {
				o1, o2 = true, true
			}
			if o1 {
				header()
				nd.diffPort(a, p1)
			}
			if o2 {
				header()
				nd.diffPort(b, p2)
			}
		}
	}
}

// smaLID is libibnetdisc's node smalid: port 0's LID, on a switch only
// (netdisc.Node's SMALID on a CA is its port's).
func smaLID(n *netdisc.Node) uint16 {
	if n.Type != netdisc.TypeSwitch {
		return 0
	}
	return n.SMALID
}
