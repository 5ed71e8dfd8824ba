package diags

// iblinkinfo: every port of the fabric and its link, like
// infiniband-diags' iblinkinfo (rdma-core 44, infiniband-diags/
// iblinkinfo.c, with all its options; get_max_msg in ibdiag_common.c),
// from package umad/netdisc. Partial scans (-D, -S, -n) are libibnetdisc's
// walk replayed over a full scan (replayWalk).

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad/netdisc"
)

// iblinkinfo's --diffcheck keys.
const (
	liDiffPort = 1 << iota
	liDiffState
	liDiffLID
	liDiffDesc
	liDiffDefault = liDiffPort | liDiffState
)

// linkinfo is one iblinkinfo run: its options and its output.
type linkinfo struct {
	o                             *fabricOpts
	nameMapFile, guidStr, drPath  string
	guidSet, drSet                bool
	loadCache, diffTo, filterFile string
	all, down, line, additional   bool
	onlyType                      uint8
	hops, outstanding, diffFlags  int
	names                         *nodeNameMap
	filter                        *netdisc.Fabric
	w                             *strings.Builder
}

func (env *Env) runIBLinkInfo(args []string, stdout, stderr io.Writer) error {
	const tool = "iblinkinfo"
	li := &linkinfo{diffFlags: liDiffDefault, outstanding: 64}
	flag := func(p *bool) func(string) error { return func(string) error { *p = true; return nil } }
	str := func(p *string) func(string) error { return func(v string) error { *p = v; return nil } }
	guid := func(v string) error { li.guidStr, li.guidSet = v, true; return nil }
	only := func(t uint8) func(string) error { return func(string) error { li.onlyType = t; return nil } }
	custom := []diagOpt{
		{"node-name-map", 1, true, "<file>", "node name map file", str(&li.nameMapFile)},
		{"switch", 'S', true, "<port_guid>", "start partial scan at the port specified by <port_guid> (hex format)", guid},
		{"port-guid", 'G', true, "<port_guid>", "(same as -S)", guid},
		{"Direct", 'D', true, "<dr_path>", "start partial scan at the port specified by <dr_path>", func(v string) error {
			li.drPath, li.drSet = v, true
			return nil
		}},
		{"all", 'a', false, "", "print all nodes found in a partial fabric scan", flag(&li.all)},
		{"hops", 'n', true, "<hops>", "Number of hops to include away from specified node", func(v string) error {
			li.hops = int(uint32(cStrtoull(v))) // ibnd_config's max_hops is unsigned
			return nil
		}},
		{"down", 'd', false, "", "print only down links", flag(&li.down)},
		{"line", 'l', false, "", "(line mode) print all information for each link on a single line", flag(&li.line)},
		{"additional", 'p', false, "", "print additional port settings (PktLifeTime, HoqLife, VLStallCount)", flag(&li.additional)},
		{"load-cache", 2, true, "<file>", "filename of ibnetdiscover cache to load", str(&li.loadCache)},
		{"diff", 3, true, "<file>", "filename of ibnetdiscover cache to diff", str(&li.diffTo)},
		{"diffcheck", 4, true, "<key(s)>", "specify checks to execute for --diff", func(v string) error {
			return parseDiffCheck(v, &li.diffFlags, map[string]int{"port": liDiffPort, "state": liDiffState, "lid": liDiffLID, "nodedesc": liDiffDesc})
		}},
		{"filterdownports", 5, true, "<file>", "filename of ibnetdiscover cache to filter downports", str(&li.filterFile)},
		outstandingOpt(&li.outstanding),
		{"switches-only", 6, false, "", "Output only switches", only(netdisc.TypeSwitch)},
		{"cas-only", 7, false, "", "Output only CAs", only(netdisc.TypeCA)},
	}
	o, usage, err := parseDiagOpts(tool, "aDdGgKLlnpRS", "", custom, args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, tool, usage, o, err)
	}
	li.o = o
	discoverDefaults(o)
	// mad_rpc_open_port comes first, whatever the options.
	p, err := env.openPort(env.host(), o.ca, max(o.port, 0))
	if err != nil {
		return openFailed(stdout, stderr, tool, o, err)
	}
	p.Close()
	li.names = openNodeNameMap(li.nameMapFile, li.nameMapFile != "", stderr)
	if li.drSet && li.loadCache != "" {
		fmt.Fprint(stderr, "Cannot specify cache and direct route path\n")
		return cli.ExitError{Code: 1}
	}
	// The start of a partial scan: C resolves -D's route (and reads the
	// node there unless -a) or -S's GUID (through the SA) before it
	// loads a cache or scans; here a full scan answers both, and the
	// partial scan is replayed over it.
	var full *netdisc.Fabric
	scanned := func() (*netdisc.Fabric, error) {
		if full == nil {
			f, err := env.discover(tool, o, li.outstanding, stdout, stderr)
			if f == nil {
				return nil, err
			}
			full = f
		}
		return full, nil
	}
	var startNode *netdisc.Node
	var startEntry int
	var startPath []uint8
	resolved, byGUID := false, false
	var targetGUID uint64
	switch {
	case li.drSet:
		p0, path, ok := strDRPath(li.drPath)
		if !ok {
			fmt.Fprintf(stderr, "ibwarn: [%d] main: Failed to resolve %s; attempting full scan\n", os.Getpid(), li.drPath)
			p0, path = 0, nil
		}
		f, err := scanned()
		if f == nil {
			return err
		}
		n, entry := followDRPath(f, path)
		if !ok {
			// str2drpath left the route with no hops at all (count
			// -1): the NodeInfo query cannot go out.
			n = nil
		}
		if n == nil && !li.all {
			if o.errs {
				// libibmad's RPC, with -e: its tries, each timing out.
				ms := 1000
				if o.timeoutSet {
					ms = int(o.timeout.Milliseconds())
				}
				for try := 1; try < madDefTries; try++ {
					fmt.Fprintf(stderr, "ibwarn: [%d] _do_madrpc: retry %d (timeout %d ms)\n", os.Getpid(), try, ms)
				}
				fmt.Fprintf(stderr, "ibwarn: [%d] _do_madrpc: timeout after %d retries, %d ms\n", os.Getpid(), madDefTries, ms*madDefTries)
			}
			fmt.Fprintf(stderr, "ibwarn: [%d] mad_rpc: _do_madrpc failed; dport (DR path slid 65535; dlid 65535; %s)\n", os.Getpid(), drPathDigits(p0, path))
			fmt.Fprint(stderr, "Failed to get local Node Info\n")
			return cli.ExitError{Code: 1}
		}
		if n != nil {
			targetGUID = binary.BigEndian.Uint64(n.Info[20:28])
			if n.Type != netdisc.TypeSwitch && n.Ports[entry] != nil {
				targetGUID = n.Ports[entry].GUID
			}
		}
		startNode, startEntry, startPath, resolved = n, entry, path, ok
	case li.guidSet:
		byGUID = true
		targetGUID = cStrtoull(li.guidStr)
		if targetGUID != 0 {
			f, err := scanned()
			if f == nil {
				return err
			}
			if p := findPortGUID(f, targetGUID); p != nil {
				// A switch's walk is replayed from the route the scan
				// first reached it by.
				startNode, startEntry, startPath, resolved = p.Node, p.Num, p.Node.Path, true
			} else {
				if o.errs {
					// The SA (at the local port's MasterSMLID)
					// has no PathRecord to that GUID.
					fmt.Fprintf(stderr, "ibwarn: [%d] mad_rpc_rmpp: MAD completed with error status 0x300; dport (Lid %d)\n", os.Getpid(), masterSMLID(f))
				}
				fmt.Fprintf(stderr, "ibwarn: [%d] ib_path_query_via: sa call path_query failed\n", os.Getpid())
			}
		}
		if !resolved {
			fmt.Fprintf(stderr, "ibwarn: [%d] main: Failed to resolve %s; attempting full scan\n\n", os.Getpid(), li.guidStr)
		}
	}
	var old *netdisc.Fabric
	if li.diffTo != "" {
		lf, err := loadCache(li.diffTo)
		if err != nil {
			return ibexit(stdout, tool, o.debug, "main", "loading cached fabric for diff failed\n")
		}
		old = lf.f
	}
	if li.filterFile != "" {
		lf, err := loadCache(li.filterFile)
		if err != nil {
			return ibexit(stdout, tool, o.debug, "main", "loading cached fabric for filterdownports failed\n")
		}
		li.filter = lf.f
	}
	var f *netdisc.Fabric
	switch {
	case li.loadCache != "":
		lf, err := loadCache(li.loadCache)
		if err != nil {
			fmt.Fprint(stderr, "loading cached fabric failed\n")
			return cli.ExitError{Code: 1}
		}
		f = lf.f
	case resolved && byGUID && startNode.Type != netdisc.TypeSwitch:
		// A LID-routed start at a CA: libibnetdisc reads its NodeInfo,
		// NodeDescription and the port's PortInfo, and goes no further
		// (no directed route extends a LID route through a CA).
		f = lidCAFabric(startNode, startEntry)
	case resolved:
		// A switch reached by LID walks on with directed routes (ibsim
		// answers none of those: C's scan waits for ever there); -D's
		// route is replayed as such.
		hops := li.hops
		if hops == 0 {
			hops = 1
		}
		full, err := scanned()
		if full == nil {
			return err
		}
		var r scanReplay
		r, f = replayWalk(full, startPath, walk{maxHops: hops, build: true, partial: true})
		fmt.Fprint(stderr, r.errors)
	default:
		full, err := scanned()
		if full == nil {
			return err
		}
		f = full
		if li.hops != 0 {
			var r scanReplay
			r, f = replayWalk(full, nil, walk{maxHops: li.hops, build: true})
			fmt.Fprint(stderr, r.errors)
		}
	}
	var b strings.Builder
	li.w = &b
	var target *netdisc.Node
	selected := !li.all && (li.guidSet || li.drSet)
	if selected {
		// The GUID names the node to print when both are given.
		name := li.drPath
		if li.guidSet {
			name, targetGUID = li.guidStr, cStrtoull(li.guidStr)
		}
		if p := findPortGUID(f, targetGUID); p != nil && (li.onlyType == 0 || p.Node.Type == li.onlyType) && targetGUID != 0 {
			target = p.Node
		} else {
			defer fmt.Fprintf(stderr, "Failed to find port: %s\n", name)
		}
	}
	switch {
	case selected && target == nil:
	case selected && old != nil:
		li.diffNodes([]*netdisc.Node{target}, old, f)
	case selected:
		li.printNode(target, "")
	case old != nil:
		li.diffNodes(nil, old, f)
	default:
		for i := len(f.Nodes) - 1; i >= 0; i-- {
			if li.onlyType == 0 || f.Nodes[i].Type == li.onlyType {
				li.printNode(f.Nodes[i], "")
			}
		}
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// masterSMLID is the local port's MasterSMLID.
func masterSMLID(f *netdisc.Fabric) int {
	n := f.From
	num := f.FromPort
	if n.Type == netdisc.TypeSwitch {
		num = 0
	}
	if num >= len(n.Ports) || n.Ports[num] == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(n.Ports[num].Info[18:20]))
}

// lidCAFabric is what libibnetdisc finds from a CA's port reached by
// LID: the node and that port, linked to nothing.
func lidCAFabric(n *netdisc.Node, entry int) *netdisc.Fabric {
	c := &netdisc.Node{GUID: n.GUID, Type: n.Type, NumPorts: n.NumPorts, Info: n.Info, Desc: n.Desc,
		Ports: make([]*netdisc.Port, n.NumPorts+1)}
	if p := n.Ports[entry]; p != nil {
		c.Ports[entry] = &netdisc.Port{Node: c, Num: entry, GUID: p.GUID, Info: p.Info, HasInfo: p.HasInfo, BaseLID: p.BaseLID, LMC: p.LMC}
	}
	return &netdisc.Fabric{From: c, FromPort: entry, Nodes: []*netdisc.Node{c}}
}

// strDRPath is str2drpath: comma-separated numbers (atoi each), the first
// the route's source placeholder, the others its out ports; an empty
// string is refused.
func strDRPath(s string) (p0 uint8, path []uint8, ok bool) {
	if s == "" {
		return 0, nil, false
	}
	for i, f := range strings.Split(s, ",") {
		v := uint8(cli.CStrtol(f))
		if i == 0 {
			p0 = v
		} else {
			path = append(path, v)
		}
		if i == 63 {
			break
		}
	}
	return p0, path, true
}

// drPathDigits is drpath2str's list of a route.
func drPathDigits(p0 uint8, path []uint8) string {
	s := fmt.Sprint(p0)
	for _, p := range path {
		s += fmt.Sprintf(",%d", p)
	}
	return s
}

// findPortGUID is ibnd_find_port_guid.
func findPortGUID(f *netdisc.Fabric, guid uint64) *netdisc.Port {
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		for _, p := range f.Nodes[i].Ports {
			if p != nil && p.GUID == guid {
				return p
			}
		}
	}
	return nil
}

// followDRPath is the node a directed route from the local port reaches
// and the port it arrives at (nil where it leads nowhere: an uncabled
// port, or on through a CA).
func followDRPath(f *netdisc.Fabric, path []uint8) (*netdisc.Node, int) {
	n, entry := f.From, f.FromPort
	for i, k := range path {
		if (i > 0 && n.Type != netdisc.TypeSwitch) || int(k) >= len(n.Ports) || n.Ports[k] == nil || n.Ports[k].Remote == nil {
			return nil, 0
		}
		r := n.Ports[k].Remote
		n, entry = r.Node, r.Num
	}
	return n, entry
}

// printNode is print_node: the node's ports (with -d only the down ones)
// under its header.
func (li *linkinfo) printNode(n *netdisc.Node, prefix string) {
	head := false
	for _, p := range n.Ports[1:] {
		if p == nil {
			continue
		}
		if !li.down || bits(p.Info[:], 260, 4) == 1 {
			li.nodeHeader(n, &head, prefix)
			li.printPort(n, p, prefix)
		}
	}
}

// nodeHeader is print_node_header (none in line mode).
func (li *linkinfo) nodeHeader(n *netdisc.Node, done *bool, prefix string) {
	if (done != nil && *done) || li.line {
		return
	}
	if n.Type == netdisc.TypeSwitch {
		guid := binary.BigEndian.Uint64(n.Info[20:28])
		if p0 := n.Ports[0]; p0 != nil {
			guid = p0.GUID
		}
		fmt.Fprintf(li.w, "%sSwitch: 0x%016x %s:\n", prefix, guid, li.names.remapNode(n))
	} else {
		typ := "CA"
		if n.Type == netdisc.TypeRouter {
			typ = "Router"
		} else if n.Type != netdisc.TypeCA {
			typ = "??"
		}
		fmt.Fprintf(li.w, "%s%s: %s:\n", prefix, typ, li.names.remapNode(n))
	}
	if done != nil {
		*done = true
	}
}

// filteredDown is filterdownport_check: the port is down in the
// --filterdownports fabric too.
func (li *linkinfo) filteredDown(n *netdisc.Node, p *netdisc.Port) bool {
	fn := findNode(li.filter, n.GUID)
	if fn == nil || p.Num > fn.NumPorts || fn.Ports[p.Num] == nil {
		return false
	}
	return bits(fn.Ports[p.Num].Info[:], 260, 4) == 1
}

// capInfo is the PortInfo whose capability mask counts for p: port 0's
// on a switch, the port's own on a CA (nil when not known).
func capInfo(p *netdisc.Port) []byte {
	if p.Node.Type == netdisc.TypeSwitch {
		if p0 := p.Node.Ports[0]; p0 != nil && p0.HasInfo {
			return p0.Info[:]
		}
		return nil
	}
	return p.Info[:]
}

func hasExtSpeeds(info []byte) bool { return info != nil && bits(info, 160, 32)&(1<<14) != 0 }

// printPort is print_port.
func (li *linkinfo) printPort(n *netdisc.Node, p *netdisc.Port, prefix string) {
	w := li.w
	info := p.Info[:]
	width, speed := bits(info, 248, 8), bits(info, 280, 4)
	var espeed uint64
	ci := capInfo(p)
	if ci == nil {
		width, speed = 0, 0
	} else if hasExtSpeeds(ci) {
		espeed = bits(info, 496, 4)
	}
	state, phys := bits(info, 260, 4), bits(info, 264, 4)
	if state == 1 && li.filter != nil && li.filteredDown(n, p) {
		return
	}
	var link string
	if state != 1 {
		sp := dumpLinkSpeed(speed, 4)
		if espeed != 0 {
			sp = dumpLinkSpeedExt(espeed, 4)
		}
		link = fmt.Sprintf("(%3s %18s %6s/%8s)", dumpLinkWidth(width, 8), sp, dumpPortState(state, 4), dumpPhysState(phys, 4))
		if li.additional {
			link += fmt.Sprintf(" (HOQ:%d VL_Stall:%d)", bits(info, 339, 5), bits(info, 336, 3))
		}
	} else {
		link = fmt.Sprintf("(              %6s/%8s)", dumpPortState(state, 4), dumpPhysState(phys, 4))
	}
	var remote string
	if r := p.Remote; r != nil {
		lid := r.BaseLID
		if lid == 0 && r.Node.Type == netdisc.TypeSwitch {
			lid = r.Node.SMALID
		}
		wmsg, smsg := maxMsg(p)
		guid := ""
		if li.line {
			guid = fmt.Sprintf("0x%016x ", r.GUID)
		}
		remote = fmt.Sprintf("%s%6d %4d[%2s] \"%s\" (%s %s)\n", guid, lid, r.Num, "", li.names.remapNode(r.Node), wmsg, smsg)
	} else if state == 1 {
		remote = "           [  ] \"\" ( )\n"
	} else {
		remote = "    \"Port not available\"\n"
	}
	if li.line {
		fmt.Fprintf(w, "%s0x%016x \"%30s\" ", prefix, p.GUID, li.names.remapNode(n))
	} else {
		fmt.Fprintf(w, "%s      ", prefix)
	}
	if n.Type != netdisc.TypeSwitch {
		if !li.line {
			fmt.Fprintf(w, "0x%016x ", p.GUID)
		}
		fmt.Fprintf(w, "%6d %4d[%2s] ==%s==>  %s", p.BaseLID, p.Num, "", link, remote)
	} else {
		fmt.Fprintf(w, "%6d %4d[%2s] ==%s==>  %s", n.SMALID, p.Num, "", link, remote)
	}
}

// diffNodes is diff_node: over only (all of a fabric's nodes, or one's
// when given), what differs between old and cur, "<" old, ">" cur.
func (li *linkinfo) diffNodes(only []*netdisc.Node, old, cur *netdisc.Fabric) {
	nodes := func(f *netdisc.Fabric) []*netdisc.Node {
		if only != nil {
			return only
		}
		var ns []*netdisc.Node
		for i := len(f.Nodes) - 1; i >= 0; i-- {
			if li.onlyType == 0 || f.Nodes[i].Type == li.onlyType {
				ns = append(ns, f.Nodes[i])
			}
		}
		return ns
	}
	for _, n := range nodes(old) {
		li.diffNode(n, cur, li.diffFlags, "< ", "> ")
	}
	for _, n := range nodes(cur) {
		li.diffNode(n, old, li.diffFlags&^(liDiffPort|liDiffState|liDiffLID|liDiffDesc), "> ", "< ")
	}
}

// diffNode is diff_node_iter.
func (li *linkinfo) diffNode(n1 *netdisc.Node, other *netdisc.Fabric, flags int, p1, p2 string) {
	n2 := findNode(other, n1.GUID)
	if n2 == nil {
		li.printNode(n1, p1)
		return
	}
	if flags == 0 {
		return
	}
	head := false
	if (n1.Type == netdisc.TypeSwitch && flags&liDiffLID != 0 && n1.SMALID != n2.SMALID) ||
		(flags&liDiffDesc != 0 && n1.Desc != n2.Desc) {
		li.nodeHeader(n1, nil, p1)
		li.nodeHeader(n2, nil, p2)
		head = true
	}
	if n1.NumPorts != n2.NumPorts {
		li.nodeHeader(n1, &head, "")
		fmt.Fprintf(li.w, "%snumports = %d\n%snumports = %d\n", p1, n1.NumPorts, p2, n2.NumPorts)
		return
	}
	for i := 1; i <= n1.NumPorts; i++ {
		a, b := n1.Ports[i], n2.Ports[i]
		if a == nil && b == nil {
			continue
		}
		out := false
		if flags&liDiffPort != 0 {
			switch {
			case a == nil || b == nil:
				out = true
			case (a.Remote != nil) != (b.Remote != nil):
				out = true
			case a.Remote != nil && a.Remote.GUID != b.Remote.GUID:
				out = true
			}
		}
		if flags&liDiffState != 0 && a != nil && b != nil && bits(a.Info[:], 260, 4) != bits(b.Info[:], 260, 4) {
			out = true
		}
		both := a != nil && b != nil && a.Remote != nil && b.Remote != nil
		if flags&liDiffPort != 0 && flags&liDiffLID != 0 && both && a.Remote.BaseLID != b.Remote.BaseLID {
			out = true
		}
		if flags&liDiffPort != 0 && flags&liDiffDesc != 0 && both && a.Remote.Node.Desc != b.Remote.Node.Desc {
			out = true
		}
		if out && a != nil {
			li.nodeHeader(n1, &head, "")
			li.printPort(n1, a, p1)
		}
		if out && b != nil {
			li.nodeHeader(n1, &head, "")
			li.printPort(n2, b, p2)
		}
	}
}

// maxMsg is get_max_msg: what the link could run at, where it does not.
func maxMsg(p *netdisc.Port) (width, speed string) {
	r := p.Remote
	pi, ri := p.Info[:], r.Info[:]
	sup := bits(pi, 240, 8) & bits(ri, 240, 8)
	maxW := uint64(1)
	switch {
	case sup&8 != 0:
		maxW = 8
	case sup&4 != 0:
		maxW = 4
	case sup&2 != 0:
		maxW = 2
	case sup&0x10 != 0:
		maxW = 0x10
	}
	if maxW&bits(pi, 248, 8) == 0 {
		width = "Could be " + dumpLinkWidth(maxW, 8)
	}
	getMax := func(v uint64) uint64 {
		r := uint64(1)
		for v >>= 1; v != 0; v >>= 1 {
			r <<= 1
		}
		return r
	}
	if hasExtSpeeds(capInfo(p)) && hasExtSpeeds(capInfo(r)) && bits(pi, 500, 4) != 0 && bits(ri, 500, 4) != 0 {
		m := getMax(bits(pi, 500, 4) & bits(ri, 500, 4))
		if m&bits(pi, 496, 4) == 0 {
			speed = "Could be " + dumpLinkSpeedExt(m, 4)
		}
		return width, speed
	}
	m := getMax(bits(pi, 256, 4) & bits(ri, 256, 4))
	if m&bits(pi, 280, 4) == 0 {
		speed = "Could be " + dumpLinkSpeed(m, 4)
	}
	return width, speed
}
