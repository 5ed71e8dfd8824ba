package diags

// What ibnetdiscover and iblinkinfo share beyond the scan: the replay of
// libibnetdisc's walk that -s, -m and the cache need, and the tools'
// option refusals (the node name map is nodenamemap.go's).

import (
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/umad/netdisc"
)

// diagRefusedError is an option the tool's handler refused after printing
// its line (C's process_opt returning -1): the usage follows, status 2.
type diagRefusedError string

func (e diagRefusedError) Error() string { return string(e) }

func diagRefused(line string) error { return diagRefusedError(line) }

// cStrerror is strerror(3)'s text of errno (Go's are lower case).
func cStrerror(e syscall.Errno) string {
	s := e.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// scanReplay is what libibnetdisc's walk reports beyond the fabric: what
// it prints on standard output (progress: the -s lines, dump_endnode as
// each NodeInfo answer is handled, and the -d trace), the
// longest route it sent a NodeInfo on (maxhops_discovered) and the SMPs
// it sent (total_mads_used).
type scanReplay struct {
	progress string
	maxHops  int
	mads     int
	// ports are the ports in the order their PortInfo first came
	// (libibnetdisc adds them to its port GUID table so).
	ports []*netdisc.Port
	// errors are libibnetdisc's complaints on standard error (a
	// port's PortInfo read twice).
	errors string
}

// walk is what a replayed walk does and prints: ibnd_config's max_hops
// (0: no limit); build: the fabric it finds; partial: a route from the
// command line; show: the -s lines (show_progress); debug: libibnetdisc's
// IBND_DEBUG trace (ibdebug, -d), with stand-ins for C's heap addresses.
type walk struct {
	maxHops                     int
	build, partial, show, debug bool
}

// fakeNodePtr and fakePortPtr stand for the heap addresses (%p) of
// libibnetdisc's node and port records in its debug lines.
func fakeNodePtr(n *netdisc.Node) string {
	return fmt.Sprintf("0x%012x", 0x555500000000|(n.GUID&0xffffff)<<16)
}

func fakePortPtr(n *netdisc.Node, num int) string {
	return fmt.Sprintf("0x%012x", 0x555500000000|(n.GUID&0xffffff)<<16|0x1000|uint64(num&0xff)<<4)
}

// replayWalk replays libibnetdisc's walk over the fabric f (a full scan)
// from the node the directed route path reaches, with ibnd_config's
// max_hops (0: no limit): the walk iblinkinfo's -D and -n make. Each
// NodeInfo answer is what its route reaches in f, as the fabric would
// answer it (a route libibnetdisc shortens, retract_dpath, can reach
// another port than the one it links, as in C). With build it returns
// the fabric that walk finds: copies of the nodes it reaches, with the
// ports it learns of and the links it makes.
//
// A partial scan's routes come from the command line (str2drpath), with
// 0xffff for their LIDs where a full scan's have 0.
func replayWalk(f *netdisc.Fabric, path []uint8, w walk) (scanReplay, *netdisc.Fabric) {
	maxHopsCfg, build, partial := w.maxHops, w.build, w.partial
	type item struct {
		kind int // 0 NodeInfo, 1 NodeDesc, 2 SwitchInfo, 3 PortInfo
		path []uint8
		node *netdisc.Node // PortInfo, NodeDesc: whose; NodeInfo: from
		port int
	}
	var r scanReplay
	if f.From == nil {
		return r, nil
	}
	var out *netdisc.Fabric
	copies := map[*netdisc.Node]*netdisc.Node{}
	cp := func(n *netdisc.Node, num int) *netdisc.Port {
		c := copies[n]
		if c.Ports[num] == nil {
			c.Ports[num] = &netdisc.Port{Node: c, Num: num}
		}
		return c.Ports[num]
	}
	if build {
		out = &netdisc.Fabric{}
	}
	initial := len(path)
	var from *netdisc.Node
	fromPort := 0
	var b, errb strings.Builder
	seen := map[*netdisc.Node]bool{}
	descKnown := map[*netdisc.Node]bool{}
	infoKnown := map[*netdisc.Port]bool{}
	var q []item
	queue := func(its ...item) {
		for _, it := range its {
			if w.debug {
				switch it.kind {
				case 0:
					fmt.Fprintf(&b, "./libibnetdisc/ibnetdisc.c:612; Query Node Info; %s\n", drPathString(it.path, partial))
				case 3:
					fmt.Fprintf(&b, "./libibnetdisc/ibnetdisc.c:456; Query Port Info; %s (0x%x):%d\n", drPathString(it.path, partial), it.node.GUID, it.port)
				}
			}
			q = append(q, it)
		}
	}
	if w.debug {
		fmt.Fprintf(&b, "./libibnetdisc/ibnetdisc.c:821; from %s\n", drPathString(path, partial))
	}
	queue(item{kind: 0, path: path})
	for len(q) > 0 {
		it := q[0]
		q = q[1:]
		r.mads++
		switch it.kind {
		case 0:
			n, e := followDRPath(f, it.path)
			if n == nil {
				// No answer: libibnetdisc's engine reports the
				// timeout.
				fmt.Fprintf(&errb, "./libibnetdisc/query_smp.c:186; umad (%s Attr 0x11:0) bad status 110; Connection timed out\n", drPathString(it.path, partial))
				continue
			}
			isNew := !seen[n]
			seen[n] = true
			if w.debug {
				age := "old"
				if isNew {
					age = "new"
				}
				fmt.Fprintf(&b, "./libibnetdisc/ibnetdisc.c:558; Found %s node GUID 0x%x (%s)\n", age, n.GUID, drPathString(it.path, partial))
			}
			if isNew && build {
				c := &netdisc.Node{GUID: n.GUID, Type: n.Type, NumPorts: n.NumPorts, Info: n.Info, Path: it.path,
					Ports: make([]*netdisc.Port, n.NumPorts+1)}
				// NodeInfo as this route reads it.
				c.Info[36] = uint8(e)
				if n.Ports[e] != nil {
					binary.BigEndian.PutUint64(c.Info[20:28], n.Ports[e].GUID)
				}
				copies[n] = c
				out.Nodes = append(out.Nodes, c)
			}
			if build {
				pc := cp(n, e)
				if n.Ports[e] != nil {
					pc.GUID = n.Ports[e].GUID
				}
				if it.node == nil {
					out.From, out.FromPort = pc.Node, e
				} else {
					rc := cp(it.node, it.port)
					if rc.Remote != nil {
						rc.Remote.Remote = nil
					}
					if pc.Remote != nil {
						pc.Remote.Remote = nil
					}
					pc.Remote, rc.Remote = rc, pc
				}
			}
			if it.node == nil {
				from, fromPort = n, e
			}
			port := n.Ports[e]
			var lid, lmc int
			if port != nil && infoKnown[port] {
				lid, lmc = int(port.BaseLID), int(port.LMC)
			}
			desc := ""
			if descKnown[n] {
				desc = n.Desc
			}
			kind := "known"
			if isNew {
				kind = "new"
			}
			pnum := e
			if n.Type == netdisc.TypeSwitch {
				pnum = 0
			}
			if w.show {
				fmt.Fprintf(&b, "%s -> %s %s {%016x} portnum %d lid %d-%d \"%s\"\n", drPathString(it.path, partial), kind,
					dumpNodeType(uint64(n.Type), 0), n.GUID, pnum, lid, lid+(1<<lmc)-1, desc)
			}
			if w.debug && it.node != nil {
				fmt.Fprintf(&b, "./libibnetdisc/ibnetdisc.c:505; linking: 0x%x %s->%s:%d and 0x%x %s->%s:%d\n", n.GUID, fakeNodePtr(n), fakePortPtr(n, e), e,
					it.node.GUID, fakeNodePtr(it.node), fakePortPtr(it.node, it.port), it.port)
			}
			if isNew {
				queue(item{kind: 1, path: it.path, node: n})
				if n.Type == netdisc.TypeSwitch {
					queue(item{kind: 2, path: it.path, node: n}, item{kind: 3, path: it.path, node: n, port: 0})
				}
			}
			if n.Type != netdisc.TypeSwitch {
				queue(item{kind: 3, path: it.path, node: n, port: e})
			}
		case 1:
			descKnown[it.node] = true
			if build {
				copies[it.node].Desc = it.node.Desc
			}
		case 2:
			if build {
				copies[it.node].SwitchInfo = it.node.SwitchInfo
				copies[it.node].EnhancedPort0 = it.node.EnhancedPort0
			}
		case 3:
			n := it.node
			pt := n.Ports[it.port]
			if pt == nil || !pt.HasInfo {
				continue
			}
			if !infoKnown[pt] {
				r.ports = append(r.ports, pt)
			} else {
				// add_to_portguid_hash finds the port in its table.
				fmt.Fprintf(&errb, "./libibnetdisc/ibnetdisc.c:667; Duplicate Port: Port with guid 0x%016x already exists in ports DB\n", pt.GUID)
				fmt.Fprintf(&errb, "./libibnetdisc/ibnetdisc.c:379; Error Occurred when trying to insert new port guid 0x%016x to DB\n", pt.GUID)
			}
			infoKnown[pt] = true
			if build {
				pc := cp(n, it.port)
				if pc.GUID == 0 {
					pc.GUID = binary.BigEndian.Uint64(n.Info[20:28])
				}
				pc.Info, pc.HasInfo, pc.BaseLID, pc.LMC = pt.Info, true, pt.BaseLID, pt.LMC
				if _, local := followDRPath(f, it.path); local != 0 {
					pc.Info[28] = uint8(local)
				}
				if it.port == 0 {
					copies[n].SMALID, copies[n].SMALMC = pt.BaseLID, pt.LMC
				}
			}
			if w.debug {
				// debug_port: C's two speed dumps share one buffer,
				// so LinkSpeedActive shows for both.
				speed := dumpLinkSpeed(bits(pt.Info[:], 280, 4), 4)
				fmt.Fprintf(&b, "./libibnetdisc/ibnetdisc.c:184; portid %s portnum %d: base lid %d state %d physstate %d %s %s  %s\n",
					drPathString(it.path, partial), it.port, pt.BaseLID, bits(pt.Info[:], 260, 4), bits(pt.Info[:], 264, 4),
					dumpLinkWidth(bits(pt.Info[:], 248, 8), 8), speed, speed)
			}
			if it.port == 0 {
				for i := 1; i <= n.NumPorts; i++ {
					queue(item{kind: 3, path: it.path, node: n, port: i})
				}
				continue
			}
			phys := bits(pt.Info[:], 264, 4)
			// PortInfo's LocalPortNum is the port the query came in
			// by on this route.
			_, local := followDRPath(f, it.path)
			if phys != 5 || !((n.Type == netdisc.TypeSwitch && it.port != local) || (n == from && it.port == fromPort)) {
				continue
			}
			if maxHopsCfg != 0 && r.maxHops > maxHopsCfg {
				continue
			}
			var next []uint8
			if n.Type != netdisc.TypeSwitch && n == from && len(it.path) > 1 {
				// retract_dpath: back to the node the route came
				// through, which counts as a hop.
				r.maxHops++
				next = it.path[:len(it.path)-1]
			} else {
				if len(it.path) >= 63 {
					continue
				}
				next = append(append(make([]uint8, 0, len(it.path)+1), it.path...), uint8(it.port))
				if len(next)-initial > r.maxHops {
					r.maxHops++
				}
			}
			queue(item{kind: 0, path: next, node: n, port: it.port})
		}
	}
	r.progress, r.errors = b.String(), errb.String()
	return r, out
}

// drPathString is portid2str of a directed route from the local port
// (its LIDs 0xffff in a partial scan's).
func drPathString(path []uint8, partial bool) string {
	var b strings.Builder
	if partial {
		b.WriteString("DR path slid 65535; dlid 65535; 0")
	} else {
		b.WriteString("DR path slid 0; dlid 0; 0")
	}
	for _, p := range path {
		fmt.Fprintf(&b, ",%d", p)
	}
	return b.String()
}
