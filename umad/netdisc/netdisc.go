// Package netdisc discovers an InfiniBand fabric from a umad port, like
// rdma-core's libibnetdisc (libibnetdisc/ibnetdisc.c): directed-route
// SMPs walk out from the local port, NodeInfo, NodeDescription,
// SwitchInfo and PortInfo of every node found, and the links between
// their ports. Many SMPs are in flight at once (Options.MaxOutstanding);
// the order in which Fabric lists nodes does not depend on the order the
// answers came in: it is the order libibnetdisc, whose engine answers its
// queue first in, first out, creates them in, which tools print (see
// Fabric.Nodes).
package netdisc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/umad"
)

// Node types (NodeInfo's NodeType).
const (
	TypeCA     = 1
	TypeSwitch = 2
	TypeRouter = 3
)

// maxHops is the longest directed route an SMP can carry.
const maxHops = 63

// Node is one node of the fabric.
type Node struct {
	// GUID is the node GUID; Type, NumPorts and Info come from NodeInfo
	// (Info is its 64-byte attribute).
	GUID     uint64
	Type     uint8
	NumPorts int
	Info     [64]byte
	// Desc is the NodeDescription, up to its first NUL.
	Desc string
	// SwitchInfo is a switch's SwitchInfo attribute.
	SwitchInfo [64]byte
	// Path is the directed route (out ports) the node was first reached
	// by.
	Path []uint8
	// Ports holds the ports found, by number (0: a switch's management
	// port); nil where none was.
	Ports []*Port
	// SMALID and SMALMC are port 0's LID and LMC on a switch, the LID
	// and LMC of the port reached on a CA; EnhancedPort0 is SwitchInfo's.
	SMALID        uint16
	SMALMC        uint8
	EnhancedPort0 bool

	entry int // the port the first route arrived at
}

// Port is one port of a node.
type Port struct {
	Node *Node
	Num  int
	// GUID is the port GUID (a switch's ports share the node's).
	GUID uint64
	// Info is the PortInfo attribute; HasInfo says whether it came.
	Info    [64]byte
	HasInfo bool
	// BaseLID and LMC are the port's; a switch's external ports have
	// port 0's.
	BaseLID uint16
	LMC     uint8
	// Remote is the port at the other end of the link, nil when none was
	// found.
	Remote *Port
}

// Fabric is what Discover found.
type Fabric struct {
	// From is the local node, FromPort the local port's number.
	From     *Node
	FromPort int
	// Nodes are the nodes in libibnetdisc's creation order: the local
	// node first, then breadth first, as its first-in first-out engine
	// finds them. libibnetdisc's per-type lists (and so ibnetdiscover's
	// output) are this order reversed.
	Nodes []*Node
	// MADs is the number of SMPs sent.
	MADs int
}

// Options tune Discover.
type Options struct {
	// MaxOutstanding is how many SMPs are in flight at once (default
	// 64).
	MaxOutstanding int
	// Timeout and Retries are each SMP's (default 200 ms, 3).
	Timeout time.Duration
	Retries int
	// MaxHops stops the walk at routes this long (default and at most
	// 63).
	MaxHops int
	// Idle bounds how long the scan waits with SMPs in flight and
	// neither an answer nor a timeout coming back. 0 means
	// (Retries+1)·Timeout plus a second, by when a kernel port has
	// reported every timeout; a negative Idle waits as long as ctx
	// allows, for an ibsim port (umad.OpenSimPort), whose timeouts wait
	// while ibsim is stopped or busy, as libibnetdisc over libumad2sim
	// waits for every answer.
	Idle time.Duration
	// MKey is the M_Key every SMP carries (libibnetdisc's
	// ibnd_config.mkey, which it passes to smp_mkey_set; 0 by default).
	MKey uint64
}

type reqKind uint8

const (
	reqNodeInfo reqKind = iota
	reqNodeDesc
	reqSwitchInfo
	reqPortInfo
)

type request struct {
	kind reqKind
	path []uint8
	node *Node // NodeDesc, SwitchInfo, PortInfo: whose
	port int   // PortInfo: which; NodeInfo: the port of from it leaves
	from *Node // NodeInfo: the node the route leaves from (nil: start)
}

type scan struct {
	ctx    context.Context
	p      *umad.Port
	agent  umad.AgentID
	o      Options
	queue  []*request
	flight map[uint32]*request
	tid    uint32
	pkt    *umad.Packet
	out    []byte
	byGUID map[uint64]*Node
	fab    *Fabric
	// links found: (node, port) → (node, port), from NodeInfo answers.
	links map[*Port]linkEnd
}

type linkEnd struct {
	node *Node
	port int
}

// Discover walks the fabric from p. It needs a port with an SMI (an
// InfiniBand port: on a kernel port, root or access to the umad node;
// or an ibsim port, umad.OpenSimPort). SMPs that time out leave out
// what lies behind them, as libibnetdisc does; the error is for the
// local node not answering, ctx, and the port.
//
// A nil ctx or port is refused with an error matching syscall.EINVAL.
func Discover(ctx context.Context, p *umad.Port, o Options) (*Fabric, error) {
	if ctx == nil || p == nil {
		return nil, errs.New("discover", p.String(), fmt.Errorf("nil context or port: %w", syscall.EINVAL))
	}
	if o.MaxOutstanding <= 0 {
		o.MaxOutstanding = 64
	}
	if o.Timeout <= 0 {
		o.Timeout = 200 * time.Millisecond
	}
	if o.Retries < 0 {
		o.Retries = 0
	} else if o.Retries == 0 {
		o.Retries = 3
	}
	if o.MaxHops <= 0 || o.MaxHops > maxHops {
		o.MaxHops = maxHops
	}
	agent, err := p.Register(umad.ClassSubnMgmtDirectedRoute, 1, umad.MethodMask{})
	if err != nil {
		return nil, errs.New("discover", p.String(), err)
	}
	defer p.Unregister(agent)
	s := &scan{ctx: ctx, p: p, agent: agent, o: o, flight: map[uint32]*request{}, pkt: umad.NewPacket(),
		out: make([]byte, umad.MADSize), byGUID: map[uint64]*Node{}, fab: &Fabric{}, links: map[*Port]linkEnd{}}
	s.queue = append(s.queue, &request{kind: reqNodeInfo})
	if err := s.run(); err != nil {
		return nil, errs.New("discover", p.String(), err)
	}
	if s.fab.From == nil {
		return nil, errs.New("discover", p.String(), errors.New("the local port's SMA did not answer NodeInfo"))
	}
	s.link()
	s.order()
	return s.fab, nil
}

// run sends and receives until nothing is queued or in flight.
func (s *scan) run() error {
	for len(s.queue) > 0 || len(s.flight) > 0 {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		for len(s.queue) > 0 && len(s.flight) < s.o.MaxOutstanding {
			r := s.queue[0]
			s.queue = s.queue[1:]
			if err := s.send(r); err != nil {
				return err
			}
		}
		if len(s.flight) == 0 {
			continue
		}
		ctx, cancel := s.ctx, context.CancelFunc(func() {})
		wait := s.o.Idle
		if wait == 0 {
			wait = time.Duration(s.o.Retries+1)*s.o.Timeout + time.Second
		}
		if wait > 0 {
			ctx, cancel = context.WithTimeout(s.ctx, wait)
		}
		_, err := s.p.RecvContext(ctx, s.pkt)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && s.ctx.Err() == nil {
				return fmt.Errorf("%d SMPs in flight and no answer nor timeout for %v (Options.Idle)", len(s.flight), wait)
			}
			return err
		}
		mad := s.pkt.MAD()
		if len(mad) < 24 {
			continue
		}
		tid := uint32(binary.BigEndian.Uint64(mad[8:16]))
		r := s.flight[tid]
		if r == nil {
			continue
		}
		delete(s.flight, tid)
		if s.pkt.TimedOut() || len(mad) < 128 || binary.BigEndian.Uint16(mad[4:6])&0x7fff != 0 {
			continue // nothing there: libibnetdisc leaves it out too
		}
		s.answer(r, mad[64:128])
	}
	return nil
}

func (s *scan) send(r *request) error {
	s.tid++
	if s.tid == 0 {
		s.tid = 1
	}
	m := s.out
	clear(m)
	m[0], m[1], m[2], m[3] = 1, byte(umad.ClassSubnMgmtDirectedRoute), 1, byte(umad.MethodGet)
	m[7] = byte(len(r.path))
	binary.BigEndian.PutUint64(m[8:], uint64(s.tid))
	attr, mod := umad.SMAttrNodeInfo, uint32(0)
	switch r.kind {
	case reqNodeDesc:
		attr = umad.SMAttrNodeDescription
	case reqSwitchInfo:
		attr = umad.SMAttrSwitchInfo
	case reqPortInfo:
		attr, mod = umad.SMAttrPortInfo, uint32(r.port)
	}
	binary.BigEndian.PutUint16(m[16:], uint16(attr))
	binary.BigEndian.PutUint32(m[20:], mod)
	binary.BigEndian.PutUint64(m[24:], s.o.MKey)
	binary.BigEndian.PutUint16(m[32:], 0xffff)
	binary.BigEndian.PutUint16(m[34:], 0xffff)
	copy(m[129:], r.path)
	if err := s.pkt.SetMAD(m); err != nil {
		return err
	}
	if err := s.pkt.SetAddr(0xffff, 0, 0, 0); err != nil {
		return err
	}
	if err := s.p.Send(s.agent, s.pkt, s.o.Timeout, s.o.Retries); err != nil {
		return err
	}
	s.flight[s.tid] = r
	s.fab.MADs++
	return nil
}

// answer handles one attribute that came back.
func (s *scan) answer(r *request, data []byte) {
	switch r.kind {
	case reqNodeInfo:
		guid := binary.BigEndian.Uint64(data[12:20])
		entry := int(data[36])
		n := s.byGUID[guid]
		isNew := n == nil
		if isNew {
			nports := int(data[3])
			n = &Node{GUID: guid, Type: data[2], NumPorts: nports, Path: r.path, entry: entry,
				Ports: make([]*Port, nports+1)}
			copy(n.Info[:], data)
			s.byGUID[guid] = n
		}
		if entry > n.NumPorts {
			return
		}
		pt := n.port(entry)
		pt.GUID = binary.BigEndian.Uint64(data[20:28])
		if r.from == nil {
			if s.fab.From == nil {
				s.fab.From, s.fab.FromPort = n, entry
			}
		} else {
			s.links[r.from.port(r.port)] = linkEnd{n, entry}
		}
		if isNew {
			s.queue = append(s.queue, &request{kind: reqNodeDesc, path: r.path, node: n})
			if n.Type == TypeSwitch {
				s.queue = append(s.queue, &request{kind: reqSwitchInfo, path: r.path, node: n},
					&request{kind: reqPortInfo, path: r.path, node: n, port: 0})
			}
		}
		if n.Type != TypeSwitch {
			s.queue = append(s.queue, &request{kind: reqPortInfo, path: r.path, node: n, port: entry})
		}
	case reqNodeDesc:
		r.node.Desc = cstring(data)
	case reqSwitchInfo:
		copy(r.node.SwitchInfo[:], data)
		r.node.EnhancedPort0 = data[16]&0x08 != 0
	case reqPortInfo:
		n := r.node
		if r.port > n.NumPorts {
			return
		}
		pt := n.port(r.port)
		if pt.GUID == 0 {
			pt.GUID = binary.BigEndian.Uint64(n.Info[20:28])
		}
		copy(pt.Info[:], data)
		pt.HasInfo = true
		pt.BaseLID = binary.BigEndian.Uint16(data[16:18])
		pt.LMC = data[34] & 0x7
		if r.port == 0 {
			n.SMALID, n.SMALMC = pt.BaseLID, pt.LMC
			for i := 1; i <= n.NumPorts; i++ {
				s.queue = append(s.queue, &request{kind: reqPortInfo, path: r.path, node: n, port: i})
			}
			return
		}
		if n.Type == TypeSwitch {
			pt.BaseLID, pt.LMC = n.SMALID, n.SMALMC
		} else if n.SMALID == 0 {
			n.SMALID, n.SMALMC = pt.BaseLID, pt.LMC
		}
		if follow(n, pt, s.fab) && len(r.path) < s.o.MaxHops && (n.Type == TypeSwitch || len(r.path) == 0) {
			path := append(append(make([]uint8, 0, len(r.path)+1), r.path...), uint8(r.port))
			s.queue = append(s.queue, &request{kind: reqNodeInfo, path: path, from: n, port: r.port})
		}
	}
}

// follow is recv_port_info's test for walking out of a port: the link is
// up, and the port is a switch's other than the one the route came in
// by, or the local port.
func follow(n *Node, pt *Port, f *Fabric) bool {
	linkUp := pt.Info[33]>>4 == 5
	local := int(pt.Info[28])
	return pt.Num != 0 && linkUp && ((n.Type == TypeSwitch && pt.Num != local) || (n == f.From && pt.Num == f.FromPort))
}

func (n *Node) port(i int) *Port {
	if n.Ports[i] == nil {
		n.Ports[i] = &Port{Node: n, Num: i}
	}
	return n.Ports[i]
}

// link joins the ports the NodeInfo answers found at each other's ends.
func (s *scan) link() {
	for a, e := range s.links {
		b := e.node.port(e.port)
		a.Remote, b.Remote = b, a
	}
}

// order replays libibnetdisc's first-in first-out walk over what was
// found (no MADs) to list the nodes in the order it creates them.
func (s *scan) order() {
	type item struct {
		kind  reqKind
		node  *Node
		port  int
		entry int
	}
	from := s.fab.From
	seen := map[*Node]bool{}
	q := []item{{kind: reqNodeInfo, node: from, entry: s.fab.FromPort}}
	for len(q) > 0 {
		it := q[0]
		q = q[1:]
		n := it.node
		switch it.kind {
		case reqNodeInfo:
			if !seen[n] {
				seen[n] = true
				s.fab.Nodes = append(s.fab.Nodes, n)
				if n.Type == TypeSwitch {
					q = append(q, item{kind: reqPortInfo, node: n, port: 0})
				}
			}
			if n.Type != TypeSwitch {
				q = append(q, item{kind: reqPortInfo, node: n, port: it.entry})
			}
		case reqPortInfo:
			if it.port == 0 {
				for i := 1; i <= n.NumPorts; i++ {
					q = append(q, item{kind: reqPortInfo, node: n, port: i})
				}
				continue
			}
			pt := n.Ports[it.port]
			if pt == nil || !pt.HasInfo || !follow(n, pt, s.fab) || pt.Remote == nil {
				continue
			}
			if _, ok := s.links[pt]; !ok {
				continue
			}
			e := s.links[pt]
			q = append(q, item{kind: reqNodeInfo, node: e.node, entry: e.port})
		}
	}
	// Nodes the replay did not reach (it should reach all) go last.
	for _, n := range s.byGUID {
		if !seen[n] {
			s.fab.Nodes = append(s.fab.Nodes, n)
		}
	}
}

func cstring(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}
