package diags

// ibtracert: the route between two ports, hop by hop through the
// switches' forwarding tables, unicast or (with -m) multicast, like
// infiniband-diags' (rdma-core 44, infiniband-diags/ibtracert.c),
// through package umad. The output is the C tool's, byte for byte (the
// tests compare them on simulated fabrics). The walk keeps C's shapes
// where they show: the node and port being left are overwritten by the
// next ones read (their messages name what was read last), and the
// multicast search is C's breadth-first one, newest node first at each
// distance.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/purerdma/rdma/umad"
)

const trMaxHops = 63

var trNodeTypes = []string{"???", "ca", "switch", "router", "iwarp rnic"}

func trTypeStr(t int) string {
	if t >= 0 && t < len(trNodeTypes) {
		return trNodeTypes[t]
	}
	return "???"
}

type trPort struct {
	portguid                         uint64
	portnum, lid, lmc, state, physst int
	remote                           *trPort
}

type trNode struct {
	ports    []*trPort // link_port's list: the last linked first
	path     smpDest
	typ      int
	dist     int
	numports int
	upport   int
	upnode   *trNode
	nodeguid uint64
	nodedesc string
	dnext    *trNode
}

type trSwitch struct {
	linearcap, linearFDBtop int
	enhsp0                  bool
}

// tracer is one run: the options, the output, and the multicast search's
// tables, which C keeps static across the pairs of a ports file.
type tracer struct {
	c         *smpClient
	log       *madLog
	resolve   func(string) (smpDest, error)
	o         *fabricOpts
	names     *nodeNameMap
	out       *strings.Builder
	stderr    io.Writer
	force     bool
	dumplevel int
	multicast bool
	mlid      int
	target    uint64
	nodesdist [trMaxHops]*trNode
	known     map[uint64]bool
}

var ibtracertExamples = []string{
	"- Unicast examples:",
	"4 16\t\t\t# show path between lids 4 and 16",
	"-n 4 16\t\t# same, but using simple output format",
	"-G 0x8f1040396522d 0x002c9000100d051\t# use guid addresses",
	" - Multicast examples:",
	"-m 0xc000 4 16\t# show multicast path of mlid 0xc000 between lids 4 and 16",
}

func (env *Env) runIBTracert(args []string, stdout, stderr io.Writer) error {
	tr := &tracer{out: &strings.Builder{}, stderr: stderr, dumplevel: 2, known: map[uint64]bool{}}
	var mapFile, portsFile string
	var mapSet, portsSet bool
	custom := []diagOpt{
		{"force", 'f', false, "", "force", func(string) error { tr.force = true; return nil }},
		{"no_info", 'n', false, "", "simple format", func(string) error { tr.dumplevel = 1; return nil }},
		{"mlid", 'm', true, "<mlid>", "multicast trace of the mlid", func(v string) error {
			tr.multicast, tr.mlid = true, int(int32(uint32(cStrtoul(v))))
			return nil
		}},
		{"node-name-map", 1, true, "<file>", "node name map file", func(v string) error { mapFile, mapSet = v, true; return nil }},
		{"ports-file", 2, true, "<file>", "port pairs file", func(v string) error { portsFile, portsSet = v, true; return nil }},
	}
	o, usageText, err := parseDiagSpec(diagSpec{tool: "ibtracert", exclude: "DK", usageArgs: "<src-addr> <dest-addr>",
		examples: ibtracertExamples, custom: custom}, args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, "ibtracert", usageText, o, err)
	}
	usage := func() error { return fabricHelp(stderr, usageText.String()) }
	if len(o.pos) < 2 && !portsSet {
		return usage()
	}
	tr.o = o
	flush := func() { io.WriteString(stdout, tr.out.String()); tr.out.Reset() }
	exit := func(format string, a ...any) error {
		flush()
		return ibexit(stdout, "ibtracert", o.debug, "main", format, a...)
	}
	log := o.madLog(stderr)
	log.out, log.verbose = tr.out, o.common.verbose > 0
	c, err := env.openSMP(o.ca, o.port, o.timeout, o.tries(), log)
	if err != nil {
		return openFailed(stdout, stderr, "ibtracert", o, err)
	}
	defer c.Close()
	c.mkey = o.common.mkey
	tr.c, tr.log = c, log
	tr.resolve = func(s string) (smpDest, error) { return env.resolveDest(c, o, o.common.dest, s) }
	tr.names = openNodeNameMap(mapFile, mapSet, stderr)
	if !portsSet {
		if rc, err := tr.getRoute(o.pos[0], o.pos[1], usage); err != nil {
			flush()
			return err
		} else if rc != 0 {
			return exit("Failed to get route information")
		}
		flush()
		return nil
	}
	f, err := os.Open(portsFile)
	if err != nil {
		return exit("cannot open ports-file %s", portsFile)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	lineCount, pairs := 0, 0
	for {
		// fgets into 80 bytes: a longer line is read in pieces.
		line, err := readCLine(r, 79)
		if line == "" && err != nil {
			break
		}
		lineCount++
		first, _, _ := strings.Cut(line, "\n")
		if strings.TrimLeft(first, " \t\n\v\f\r") == "" {
			continue
		}
		if strings.TrimLeft(first, " \t\n\v\f\r")[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return exit("ports-file, %s, at line %d contains bad data", portsFile, lineCount)
		}
		src, dst := fields[0], fields[1]
		if len(src) > 20 {
			// sscanf's %20s: the rest is the next field.
			src, dst = src[:20], src[20:]
		}
		if len(dst) > 20 {
			dst = dst[:20]
		}
		pairs++
		if rc, err := tr.getRoute(src, dst, usage); err != nil {
			flush()
			return err
		} else if rc != 0 {
			return exit("Failed to get route information at line %d", lineCount)
		}
	}
	fmt.Fprintf(tr.out, "%d lid/guid pairs processed from %s\n", pairs, portsFile)
	flush()
	return nil
}

func (tr *tracer) debug(fn, format string, a ...any) { tr.log.ibdebug(fn, format, a...) }

func (tr *tracer) verbose(fn, format string, a ...any) { tr.log.ibverbose(fn, format, a...) }

// getNode is get_node: NodeInfo, NodeDescription and PortInfo (port 0)
// of the node at d, into node and port; on a failure they keep what
// they had.
func (tr *tracer) getNode(node *trNode, port *trPort, d *smpDest) bool {
	ni, err := tr.c.get(*d, umad.SMAttrNodeInfo, 0)
	if err != nil {
		return false
	}
	nd, err := tr.c.get(*d, umad.SMAttrNodeDescription, 0)
	if err != nil {
		node.nodedesc = ""
		return false
	}
	desc := cleanDesc(string(nd))
	pi, err := tr.c.get(*d, umad.SMAttrPortInfo, 0)
	if err != nil {
		node.nodedesc = desc
		return false
	}
	node.nodedesc = desc
	node.nodeguid = binary.BigEndian.Uint64(ni[12:20])
	node.typ = int(ni[2])
	node.numports = int(ni[3])
	port.portguid = binary.BigEndian.Uint64(ni[20:28])
	port.portnum = int(ni[36])
	port.lid = int(binary.BigEndian.Uint16(pi[16:18]))
	port.lmc = int(pi[34] & 7)
	port.state = int(pi[32] & 0xf)
	tr.debug("get_node", "portid %s: got node %x '%s'", d, node.nodeguid, node.nodedesc)
	return true
}

// switchLookup is switch_lookup: the out port of lid at the switch at d,
// -1 when SwitchInfo fails, lid is beyond the table, or its block fails.
func (tr *tracer) switchLookup(sw *trSwitch, d *smpDest, lid int) int {
	si, err := tr.c.get(*d, umad.SMAttrSwitchInfo, 0)
	if err != nil {
		return -1
	}
	var s umad.SwitchInfo
	_ = s.Decode(si)
	sw.linearcap, sw.linearFDBtop, sw.enhsp0 = int(s.LinearFDBCap), int(s.LinearFDBTop), s.EnhancedPort0
	if lid >= sw.linearcap && lid > sw.linearFDBtop {
		return -1
	}
	b, err := tr.c.get(*d, umad.SMAttrLinearForwardingTable, uint32(lid/64))
	if err != nil {
		return -1
	}
	tr.debug("switch_lookup", "portid %s: forward lid %d to port %d", d, lid, b[lid%64])
	return int(b[lid%64])
}

func (tr *tracer) samePort(a, b *trPort) bool {
	return a.portguid == b.portguid || (tr.force && a.lid == b.lid)
}

// isPortInactive is is_port_inactive: a port not Active, but a switch's
// port 0 without enhanced port 0.
func isPortInactive(node *trNode, port *trPort, sw *trSwitch) bool {
	return port.state != 4 && (node.typ != 2 || sw.enhsp0)
}

// extendDPath is extend_dpath: port added to d's route, unless the
// route has 62 hops already.
func extendDPath(d *smpDest, port int) bool {
	if len(d.path)+2 >= 64 {
		return false
	}
	d.extend(uint8(port))
	return true
}

func (tr *tracer) dumpEndnode(dump int, prompt string, node *trNode, port *trPort) {
	if dump == 0 {
		return
	}
	num := port.portnum
	if node.typ == 2 {
		num = 0
	}
	if dump == 1 {
		fmt.Fprintf(tr.out, "%s {0x%016x}[%d]\n", prompt, node.nodeguid, num)
		return
	}
	fmt.Fprintf(tr.out, "%s %s {0x%016x} portnum %d lid %d-%d \"%s\"\n", prompt, trTypeStr(node.typ), node.nodeguid,
		num, port.lid, port.lid+(1<<port.lmc)-1, tr.names.remap(node.nodeguid, []byte(node.nodedesc)))
}

func (tr *tracer) dumpRoute(dump int, node *trNode, outport int, port *trPort) {
	if dump == 0 && tr.o.common.verbose == 0 {
		return
	}
	if dump == 1 {
		fmt.Fprintf(tr.out, "[%d] -> {0x%016x}[%d]\n", outport, port.portguid, port.portnum)
		return
	}
	fmt.Fprintf(tr.out, "[%d] -> %s port {0x%016x}[%d] lid %d-%d \"%s\"\n", outport, trTypeStr(node.typ), port.portguid,
		port.portnum, port.lid, port.lid+(1<<port.lmc)-1, tr.names.remap(node.nodeguid, []byte(node.nodedesc)))
}

// findRoute is find_route: from from (a directed route it extends) to the
// port of to's LID, printing the hops at dump's level.
func (tr *tracer) findRoute(from, to *smpDest, dump int) int {
	var fromnode, tonode, nextnode trNode
	var fromport, toport, nextport trPort
	var sw trSwitch
	maxhops := trMaxHops
	outport, nextOut := 255, 255
	warn := func(format string, a ...any) { tr.log.warn("find_route", format, a...) }
	tr.debug("find_route", "from %s", from)
	if !tr.getNode(&fromnode, &fromport, from) || !tr.getNode(&tonode, &toport, to) {
		warn("can't reach to/from ports")
		if !tr.force {
			return -1
		}
		if to.lid > 0 {
			toport.lid = int(to.lid)
		}
		warn("Force: look for lid %d", to.lid)
	}
	node, port := &fromnode, &fromport
	portnum := port.portnum
	badtbl := func() int {
		warn("Bad forwarding table entry found at: node \"%s\" lid entry %d is %d (top %d)",
			cleanDesc(node.nodedesc), to.lid, outport, sw.linearFDBtop)
		return -1
	}
	badpath := func() int { warn("Direct path too long!"); return -1 }
	tr.dumpEndnode(dump, "From", node, port)
	if node.typ == 2 {
		nextOut = tr.switchLookup(&sw, from, int(to.lid))
		if nextOut < 0 || nextOut > node.numports {
			outport = nextOut
			return badtbl()
		}
	}
loop:
	for {
		more := maxhops > 0
		maxhops--
		if !more {
			break
		}
		if isPortInactive(node, port, &sw) {
			warn("Bad port state found: node \"%s\" port %d state %d", cleanDesc(node.nodedesc), portnum, port.state)
			return -1
		}
		if tr.samePort(port, &toport) {
			break // found
		}
		switch node.typ {
		case 2:
			tr.debug("find_route", "switch node")
			outport = nextOut
			if !extendDPath(from, outport) {
				return badpath()
			}
			if !tr.getNode(&nextnode, &nextport, from) {
				warn("can't reach port at %s", from)
				return -1
			}
			if outport == 0 {
				if !tr.samePort(&nextport, &toport) {
					return badtbl()
				}
				break loop // the SMA port
			}
		case 1, 3:
			caSrc := false
			outport = portnum
			tr.debug("find_route", "ca or router node")
			if !tr.samePort(port, &fromport) {
				warn("can't continue: reached CA or router port %x, lid %d", port.portguid, port.lid)
				return -1
			}
			var back uint8 // the hop returned on, C's p[cnt+1] after cnt--
			if len(from.path) > 0 {
				tr.debug("find_route", "ca or router node - return back 1 hop")
				back = from.back()
			} else {
				caSrc = true
				if portnum != 0 && !extendDPath(from, portnum) {
					return badpath()
				}
			}
			if !tr.getNode(&nextnode, &nextport, from) {
				warn("can't reach port at %s", from)
				return -1
			}
			if !caSrc {
				nextport.portnum = int(back)
			}
		}
		if nextnode.typ == 2 {
			nextOut = tr.switchLookup(&sw, from, int(to.lid))
			if nextOut < 0 || nextOut > nextnode.numports {
				outport = nextOut
				return badtbl()
			}
		}
		port = &nextport
		if isPortInactive(&nextnode, port, &sw) {
			warn("Bad out port state found: node \"%s\" outport %d state %d", cleanDesc(node.nodedesc), outport, port.state)
			return -1
		}
		node = &nextnode
		portnum = port.portnum
		tr.dumpRoute(dump, node, outport, port)
	}
	if maxhops <= 0 {
		warn("no route found after %d hops", trMaxHops)
		return -1
	}
	tr.dumpEndnode(dump, "To", node, port)
	return 0
}

// getRoute is get_route: the route between two addresses; 0, or -1
// after its warnings. A zero LID is C's usage (err set).
func (tr *tracer) getRoute(srcid, dstid string, usage func() error) (int, error) {
	warn := func(format string, a ...any) { tr.log.warn("get_route", format, a...) }
	src, err := tr.resolve(srcid)
	if err != nil {
		warn("can't resolve source port %s", srcid)
		return -1, nil
	}
	dst, err := tr.resolve(dstid)
	if err != nil {
		warn("can't resolve destination port %s", dstid)
		return -1, nil
	}
	if dst.lid == 0 || src.lid == 0 {
		warn("bad src/dest lid")
		return 0, usage()
	}
	my := smpDest{dr: true, zeroDR: true} // ib_portid_t my = { 0 }
	if tr.findRoute(&my, &src, 0) < 0 {
		warn("can't find a route to the src port")
		return -1, nil
	}
	src = my.clone()
	if !tr.multicast {
		if tr.findRoute(&src, &dst, tr.dumplevel) < 0 {
			warn("can't find a route from src to dest")
			return -1, nil
		}
		return 0, nil
	}
	if tr.mlid < 0xc000 {
		warn("invalid MLID; must be 0xc000 or larger")
	}
	var tonode trNode
	var toport trPort
	if !tr.getNode(&tonode, &toport, &dst) {
		tr.log.warn("find_target_portguid", "can't find to port\n")
		tr.target = ^uint64(0)
	} else {
		tr.target = toport.portguid
	}
	if tr.target == 0 {
		warn("can't reach target lid %d", dst.lid)
		return -1, nil
	}
	end := tr.findMCPath(&src, tr.mlid)
	if end == nil {
		warn("can't find a multicast route from src to dest")
		return -1, nil
	}
	tr.dumpMCPath(end, tr.dumplevel)
	return 0, nil
}

// getPort is get_port: PortInfo of port portnum of the node at d.
func (tr *tracer) getPort(port *trPort, portnum int, d *smpDest) bool {
	port.portnum = portnum
	pi, err := tr.c.get(*d, umad.SMAttrPortInfo, uint32(portnum))
	if err != nil {
		return false
	}
	port.lid = int(binary.BigEndian.Uint16(pi[16:18]))
	port.lmc = int(pi[34] & 7)
	port.state = int(pi[32] & 0xf)
	port.physst = int(pi[33] >> 4)
	tr.verbose("get_port", "portid %s portnum %d: lid %d state %d physstate %d", d, portnum, port.lid, port.state, port.physst)
	return true
}

// newNode is new_node: 1 for the target, -1 for a node already known,
// else 0 after queueing it at distance dist.
func (tr *tracer) newNode(node *trNode, port *trPort, path *smpDest, dist int) int {
	if port.portguid == tr.target {
		node.dist = -1
		node.ports = append([]*trPort{port}, node.ports...)
		tr.dumpEndnode(tr.o.common.verbose, "found target", node, port)
		return 1
	}
	if tr.known[node.nodeguid] {
		tr.debug("insert_node", "node %x already exists", node.nodeguid)
		return -1
	}
	tr.known[node.nodeguid] = true
	tr.verbose("new_node", "insert dist %d node %p port %d lid %d", dist, node, port.portnum, port.lid)
	node.ports = append([]*trPort{port}, node.ports...)
	node.dist = dist
	node.path = path.clone()
	node.dnext = tr.nodesdist[dist]
	tr.nodesdist[dist] = node
	return 0
}

// switchMCLookup is switch_mclookup: the ports mlid goes out of the
// switch at d, in map (set per 16 ports as C reads them).
func (tr *tracer) switchMCLookup(node *trNode, d *smpDest, mlid int, m *[256]bool) int {
	*m = [256]bool{}
	si, err := tr.c.get(*d, umad.SMAttrSwitchInfo, 0)
	if err != nil {
		return -1
	}
	mlid -= 0xc000
	var s umad.SwitchInfo
	_ = s.Decode(si)
	if mlid >= int(s.MulticastFDBCap) {
		return -1
	}
	block := mlid / 32
	maxsets := (node.numports + 15) / 16
	idx := mlid % 32
	k := 0
	for set := 0; set < maxsets; set++ {
		b, err := tr.c.get(*d, umad.SMAttrMulticastForwardingTable, uint32(int32(block))|uint32(set)<<28)
		if err != nil {
			return -1
		}
		if idx < 0 {
			// An MLID below 0xC000 whose block a switch answers: C
			// reads before its table here (what lies there on its
			// stack); we take it as no port.
			k += 16
			continue
		}
		var mft umad.MulticastForwardingTable
		_ = mft.Decode(b)
		for i := 0; i < 16; i, k = i+1, k+1 {
			if mft[idx]&(1<<i) == 0 || k >= len(m) {
				continue
			}
			m[k] = true
			tr.verbose("switch_mclookup", "Switch guid 0x%x: mlid 0x%x is forwarded to port %d", node.nodeguid, mlid+0xc000, i+set*16)
		}
	}
	return 0
}

// findMCPath is find_mcpath: a breadth-first search from from along the
// switches' multicast tables to the target port.
func (tr *tracer) findMCPath(from *smpDest, mlid int) *trNode {
	warn := func(format string, a ...any) { tr.log.warn("find_mcpath", format, a...) }
	tr.debug("find_mcpath", "from %s", from)
	node, port := &trNode{}, &trPort{}
	if !tr.getNode(node, port, from) {
		warn("can't reach node %s", from)
		return nil
	}
	var m [256]bool
	if r := tr.newNode(node, port, from, 0); r > 0 {
		if node.typ != 2 {
			warn("ibtracert from CA to CA is unsupported")
			return nil
		}
		if tr.switchMCLookup(node, from, mlid, &m) < 0 || !m[0] {
			return nil
		}
		return node
	}
	leafport := 0
	for dist := 0; dist < trMaxHops; dist++ {
		for node := tr.nodesdist[dist]; node != nil; node = node.dnext {
			path := &node.path
			tr.verbose("find_mcpath", "dist %d node %p", dist, node)
			tr.dumpEndnode(tr.o.common.verbose, "processing", node, node.ports[0])
			m = [256]bool{}
			if node.typ != 2 {
				if dist != 0 {
					continue
				}
				leafport = int(path.last())
				if port.portnum >= 0 && port.portnum < len(m) {
					m[port.portnum] = true
				}
				node.upport = 0
				tr.debug("find_mcpath", "Starting from CA 0x%x lid %d port %d (leafport %d)", node.nodeguid, port.lid, port.portnum, leafport)
			} else {
				if dist == 1 && leafport != 0 {
					node.upport = leafport
				}
				if tr.switchMCLookup(node, path, mlid, &m) < 0 {
					warn("skipping bad Switch 0x%x", node.nodeguid)
					continue
				}
			}
			for i := 1; i <= node.numports && i < len(m); i++ {
				if !m[i] || i == node.upport {
					continue
				}
				if dist == 0 && leafport != 0 {
					if len(from.path) > 0 {
						path.back()
					}
				} else {
					port = &trPort{}
					if !tr.getPort(port, i, path) {
						warn("can't reach node %s port %d", path, i)
						return nil
					}
					if port.physst != 5 {
						continue
					}
					if !extendDPath(path, i) {
						return nil
					}
				}
				rnode, rport := &trNode{}, &trPort{}
				if !tr.getNode(rnode, rport, path) {
					warn("NodeInfo on %s port %d failed, skipping port", path, i)
					path.back()
					continue
				}
				rnode.upnode = node
				rnode.upport = rport.portnum
				rport.remote = port
				r := tr.newNode(rnode, rport, path, dist+1)
				if r > 0 {
					return rnode
				}
				if r == 0 {
					tr.dumpEndnode(tr.o.common.verbose, "new remote", rnode, rport)
				} else if rnode.typ == 2 {
					tr.dumpEndnode(2, "ERR: circle discovered at", rnode, rport)
				}
				path.back()
			}
		}
	}
	return nil
}

// dumpMCPath is dump_mcpath: the nodes from the source down to node.
func (tr *tracer) dumpMCPath(node *trNode, dumplevel int) {
	if node.upnode != nil {
		tr.dumpMCPath(node.upnode, dumplevel)
	}
	name := tr.names.remap(node.nodeguid, []byte(node.nodedesc))
	p := node.ports[0]
	if node.dist == 0 {
		fmt.Fprintf(tr.out, "From %s 0x%x port %d lid %d-%d \"%s\"\n", trTypeStr(node.typ), node.nodeguid, p.portnum, p.lid, p.lid+(1<<p.lmc)-1, name)
		return
	}
	rnum := 0
	if p.remote != nil {
		rnum = p.remote.portnum
	}
	if dumplevel == 1 {
		fmt.Fprintf(tr.out, "[%d] -> %s {0x%016x}[%d]\n", rnum, trTypeStr(node.typ), node.nodeguid, node.upport)
	} else {
		fmt.Fprintf(tr.out, "[%d] -> %s 0x%x[%d] lid %d \"%s\"\n", rnum, trTypeStr(node.typ), node.nodeguid, node.upport, p.lid, name)
	}
	if node.dist < 0 {
		fmt.Fprintf(tr.out, "To %s 0x%x port %d lid %d-%d \"%s\"\n", trTypeStr(node.typ), node.nodeguid, p.portnum, p.lid, p.lid+(1<<p.lmc)-1, name)
	}
}
