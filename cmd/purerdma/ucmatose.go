package main

// ucmatose: rdma-core's ucmatose (librdmacm/examples/cmatose.c, rdma-core
// 44) over package rdmacm: the same flags and defaults, the same RDMA CM
// events in the same order, the same sends and receives after connecting
// and the same lines on standard output, so that either side may be the C
// tool or this one.
//
// The server listens, accepts -c connections, sends -C messages of -S
// bytes on each, waits for their completions and for as many replies,
// then disconnects. The client resolves and connects -c IDs, waits for the
// server's messages, sends its replies and answers the server's
// disconnect. Like the C tool, the exit status is the low byte of the
// "return status" line: 0, a negative errno or -1 for a failed call, or
// the status of a failed event (the reject reason of REJECTED).

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

func init() {
	register("ucmatose", "RDMA CM connection and RC data test, like rdma-core's ucmatose (interoperates with it)", runUcmatose)
	register("cmatose", "the same as ucmatose, under the name of its source", runUcmatose)
}

const ucmatoseUsage = `usage: %s
	[-s server_address]
	[-b bind_address]
	[-f address_format]
	    name, ip, ipv6, or gid
	[-P port_space]
	    tcp or ib
	[-c connections]
	[-C message_count]
	[-S message_size]
	[-t type_of_service]
	[-p port_number]
	[-m(igrate)]
	[-a ack_timeout]
	[--timeout duration]   give up after this long (purerdma only; 0: never)
`

func runUcmatose(args []string, stdout, stderr io.Writer) error {
	o, err := parseUcmatose(args, stdout, stderr)
	if err != nil {
		return err
	}
	return cmExit(runCmatose(o, stdout, stderr))
}

// parseUcmatose parses cmatose.c's command line ("s:b:f:P:c:C:S:t:p:a:m").
// Bad usage prints the usage on standard output and exits 1, as the C
// tool does.
func parseUcmatose(args []string, stdout, stderr io.Writer) (*cmOpts, error) {
	o := &cmOpts{ps: rdmacm.PortSpaceTCP, conns: 1, count: 10, size: 100, port: "7471"}
	opts := cmOptions(o,
		getoptOption{short: 'f', arg: true, set: func(v string) error { return cmAddrFormat(v, stderr) }},
		getoptOption{short: 'P', arg: true, set: func(v string) error {
			switch {
			case strings.HasPrefix(strings.ToLower(v), "ib"):
				o.ps = rdmacm.PortSpaceIB
			case !strings.HasPrefix(strings.ToLower(v), "tcp"):
				fmt.Fprintln(stderr, "Warning: unknown port space format")
			}
			return nil
		}},
		getoptOption{short: 'p', arg: true, set: func(v string) error { o.port = v; return nil }},
		getoptOption{short: 'm', set: func(string) error { o.migrate = true; return nil }},
		getoptOption{short: 'a', arg: true, set: func(v string) error {
			o.setTimeout, o.ackTimeout = true, uint8(cStrtoul(v))
			return nil
		}},
		getoptOption{short: 'h', set: func(string) error { return errDevinfoHelp }},
	)
	if err := getopt("ucmatose", args, opts, stderr); err != nil {
		fmt.Fprintf(stdout, ucmatoseUsage, "ucmatose")
		return nil, exitError{1}
	}
	return o, nil
}

// cmatoseNode is one connection (struct cmatest_node).
type cmatoseNode struct {
	id        *rdmacm.ID
	qp        *uverbs.QP
	mr        *uverbs.MR
	connected bool
}

type cmatose struct {
	o      *cmOpts
	ctx    context.Context
	out    io.Writer
	errw   io.Writer
	ch     *rdmacm.EventChannel
	nodes  []*cmatoseNode
	byID   map[*rdmacm.ID]*cmatoseNode
	index  int // conn_index: the next node of the server
	left   int // connects_left
	disc   int // disconnects_left
	src    netip.AddrPort
	dst    netip.AddrPort
	listen *rdmacm.ID
}

// runCmatose is cmatose.c's main after the options: the return status.
func runCmatose(o *cmOpts, stdout, stderr io.Writer) int {
	ctx := context.Background()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if o.size <= 0 {
		o.count = 0 // create_message: no message without a size
	}
	t := &cmatose{o: o, ctx: ctx, out: stdout, errw: stderr, left: o.conns, byID: map[*rdmacm.ID]*cmatoseNode{}}
	ch, err := rdmacm.NewEventChannel(nil)
	if err != nil {
		cmChannelError(stderr, err)
		return 1
	}
	t.ch = ch
	if o.conns < 0 { // malloc of a negative count
		fmt.Fprintln(stdout, "cmatose: unable to allocate memory for test nodes")
		ch.Close()
		return 1
	}
	// alloc_nodes: a client's IDs exist from the start.
	for i := 0; i < o.conns; i++ {
		n := &cmatoseNode{}
		if o.haveDst {
			if n.id, err = ch.CreateID(o.ps); err != nil {
				fmt.Fprintf(stderr, "ucmatose: %v\n", err)
				t.destroy()
				return 1
			}
			t.byID[n.id] = n
		}
		t.nodes = append(t.nodes, n)
	}
	var ret int
	if o.haveDst {
		ret = t.client()
	} else {
		ret = t.server()
	}
	fmt.Fprintln(stdout, "test complete")
	t.destroy()
	fmt.Fprintf(stdout, "return status %d\n", ret)
	return ret
}

// destroy is destroy_nodes and rdma_destroy_event_channel: each node's
// MR, then its ID (with its QP and CQs), then the channel.
func (t *cmatose) destroy() {
	for _, n := range t.nodes {
		if n.mr != nil {
			n.mr.Close()
		}
		if n.id != nil {
			n.id.Close()
		}
	}
	t.ch.Close()
}

// initNode is init_node: an RC QP with CQs of -C entries that signals
// every send, and the message buffer.
func (t *cmatose) initNode(n *cmatoseNode) error {
	cqe := uint32(max(t.o.count, 1))
	qp, err := n.id.CreateQP(nil, uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SQSigAll: true,
		Cap: uverbs.QPCap{MaxSendWR: cqe, MaxRecvWR: cqe, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		cmPerror(t.out, "cmatose: unable to create QP", err)
		return err
	}
	n.qp = qp
	if t.o.count == 0 {
		return nil
	}
	if n.mr, err = n.id.PD().AllocMR(t.o.size, uverbs.AccessLocalWrite); err != nil {
		fmt.Fprintln(t.out, "failed to reg MR")
		fmt.Fprintf(t.out, "cmatose: failed to create messages: %d\n", -1)
		return err
	}
	return nil
}

func (t *cmatose) sge(n *cmatoseNode) uverbs.SGE {
	s, _ := n.mr.SGE(0, t.o.size)
	return s
}

// postRecvs is post_recvs: -C receives into the node's one buffer.
func (t *cmatose) postRecvs(n *cmatoseNode) error {
	if t.o.count == 0 {
		return nil
	}
	wr := []uverbs.RecvWR{{ID: 1, SGL: []uverbs.SGE{t.sge(n)}}}
	for i := 0; i < t.o.count; i++ {
		if _, err := n.qp.PostRecv(wr); err != nil {
			fmt.Fprintf(t.out, "failed to post receives: %d\n", -int(errnoOf(err)))
			return err
		}
	}
	return nil
}

// postSends is post_sends: -C sends of the node's buffer.
func (t *cmatose) postSends(n *cmatoseNode) error {
	if !n.connected || t.o.count == 0 {
		return nil
	}
	wr := []uverbs.SendWR{{ID: 2, Opcode: uverbs.WRSend, SGL: []uverbs.SGE{t.sge(n)}}}
	for i := 0; i < t.o.count; i++ {
		if _, err := n.qp.PostSend(wr); err != nil {
			fmt.Fprintf(t.out, "failed to post sends: %d\n", -int(errnoOf(err)))
			return err
		}
	}
	return nil
}

func (t *cmatose) addrHandler(n *cmatoseNode) int {
	if t.o.setTOS {
		if err := n.id.SetTOS(t.o.tos); err != nil {
			cmPerror(t.errw, "cmatose: set TOS option failed", err)
		}
	}
	if t.o.setTimeout {
		if err := n.id.SetAckTimeout(t.o.ackTimeout); err != nil {
			cmPerror(t.errw, "cmatose: set ack timeout option failed", err)
		}
	}
	if err := n.id.ResolveRoute(2000 * time.Millisecond); err != nil {
		cmPerror(t.errw, "cmatose: resolve route failed", err)
		t.left--
		return cmRet
	}
	return 0
}

func (t *cmatose) routeHandler(n *cmatoseNode) int {
	if t.initNode(n) != nil || t.postRecvs(n) != nil {
		t.left--
		return cmRet
	}
	// conn_param: responder resources and initiator depth 1, retry 5,
	// no RNR retry (memset), no private data.
	p := &rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 5}
	if err := n.id.Connect(p); err != nil {
		cmPerror(t.errw, "cmatose: failure connecting", err)
		t.left--
		return cmRet
	}
	return 0
}

func (t *cmatose) connectHandler(id *rdmacm.ID) int {
	ret := -int(syscall.ENOMEM)
	if t.index < t.o.conns {
		n := t.nodes[t.index]
		t.index++
		n.id = id
		t.byID[id] = n
		ret = 0
		if t.initNode(n) != nil {
			ret = cmRet
		}
		if ret == 0 && t.o.setTimeout {
			if err := id.SetAckTimeout(t.o.ackTimeout); err != nil {
				cmPerror(t.errw, "cmatose: set ack timeout option failed", err)
			}
		}
		if ret == 0 && t.postRecvs(n) != nil {
			ret = cmRet
		}
		if ret == 0 {
			if err := id.Accept(nil); err != nil {
				cmPerror(t.errw, "cmatose: failure accepting", err)
				ret = cmRet
			}
		}
		if ret == 0 {
			return 0
		}
		// err2: the node forgets the ID (which the C tool leaks; here
		// it is closed after the reject).
		if n.mr != nil {
			n.mr.Close()
			n.mr = nil
		}
		n.id, n.qp = nil, nil
		t.left--
	}
	fmt.Fprintln(t.out, "cmatose: failing connection request")
	id.Reject(nil)
	id.Close()
	return ret
}

// handle is cma_handler.
func (t *cmatose) handle(ev *rdmacm.Event) int {
	n := t.byID[ev.ID]
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		if n != nil {
			return t.addrHandler(n)
		}
	case rdmacm.EventRouteResolved:
		if n != nil {
			return t.routeHandler(n)
		}
	case rdmacm.EventConnectRequest:
		return t.connectHandler(ev.ID)
	case rdmacm.EventEstablished:
		if n != nil {
			n.connected = true
		}
		t.left--
		t.disc++
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventConnectError,
		rdmacm.EventUnreachable, rdmacm.EventRejected:
		fmt.Fprintf(t.out, "cmatose: event: %s, error: %d\n", ev.Type, ev.Status)
		t.left--
		return int(ev.Status)
	case rdmacm.EventDisconnected:
		ev.ID.Disconnect()
		t.disc--
	}
	return 0
}

// events is connect_events (left) and disconnect_events (disc): handle
// events while *count is not zero and no handler failed.
func (t *cmatose) events(count *int, what string) int {
	ret := 0
	for *count > 0 && ret == 0 {
		ev, err := t.ch.GetEvent(t.ctx)
		if err != nil {
			cmPerror(t.errw, "cmatose: failure in rdma_get_cm_event in "+what, err)
			return int(errnoOf(err))
		}
		ret = t.handle(ev)
		ev.Ack()
	}
	return ret
}

// pollAll is poll_cqs: -C completions on each connected node's send or
// receive CQ.
func (t *cmatose) pollAll(recv bool) int {
	for _, n := range t.nodes {
		if !n.connected {
			continue
		}
		cq := n.qp.SendCQ()
		if recv {
			cq = n.qp.RecvCQ()
		}
		if err := cmPoll(t.ctx, cq, softDevice(n.id.Verbs()), t.o.count, nil); err != nil {
			fmt.Fprintf(t.out, "cmatose: failed polling CQ: %v\n", err)
			return cmRet
		}
	}
	return 0
}

func (t *cmatose) migrateChannel() int {
	fmt.Fprintln(t.out, "migrating to new event channel")
	ch, err := rdmacm.NewEventChannel(nil)
	if err != nil {
		cmChannelError(t.errw, err)
		return cmRet
	}
	ids := []*rdmacm.ID{}
	if t.listen != nil {
		ids = append(ids, t.listen)
	}
	for _, n := range t.nodes {
		if n.id != nil {
			ids = append(ids, n.id)
		}
	}
	for _, id := range ids {
		if err := id.Migrate(ch); err != nil {
			cmPerror(t.errw, "cmatose: failure migrating to channel", err)
			ch.Close()
			return cmRet
		}
	}
	t.ch.Close()
	t.ch = ch
	return 0
}

func (t *cmatose) server() int {
	fmt.Fprintln(t.out, "cmatose: starting server")
	l, err := t.ch.CreateID(t.o.ps)
	if err != nil {
		cmPerror(t.errw, "cmatose: listen request failed", err)
		return cmRet
	}
	t.listen = l
	defer func() { l.Close(); t.listen = nil }()
	var ret int
	if _, t.dst, ret = cmAddrs(t.ctx, t.o, t.out); ret != 0 {
		return ret
	}
	if err := l.Bind(t.dst); err != nil {
		cmPerror(t.errw, "cmatose: bind address failed", err)
		return cmRet
	}
	if err := l.Listen(0); err != nil {
		cmPerror(t.errw, "cmatose: failure trying to listen", err)
		return cmRet
	}
	if ret = t.events(&t.left, "connect events"); ret != 0 {
		return ret
	}
	if t.o.count > 0 {
		fmt.Fprintln(t.out, "initiating data transfers")
		for _, n := range t.nodes {
			if t.postSends(n) != nil {
				return cmRet
			}
		}
		fmt.Fprintln(t.out, "completing sends")
		if ret = t.pollAll(false); ret != 0 {
			return ret
		}
		fmt.Fprintln(t.out, "receiving data transfers")
		if ret = t.pollAll(true); ret != 0 {
			return ret
		}
		fmt.Fprintln(t.out, "data transfers complete")
	}
	if t.o.migrate {
		if ret = t.migrateChannel(); ret != 0 {
			return ret
		}
	}
	fmt.Fprintln(t.out, "cmatose: disconnecting")
	for _, n := range t.nodes {
		if !n.connected {
			continue
		}
		n.connected = false
		n.id.Disconnect()
	}
	ret = t.events(&t.disc, "disconnect events")
	fmt.Fprintln(t.out, "disconnected")
	return ret
}

func (t *cmatose) client() int {
	fmt.Fprintln(t.out, "cmatose: starting client")
	var ret int
	if t.src, t.dst, ret = cmAddrs(t.ctx, t.o, t.out); ret != 0 {
		return ret
	}
	fmt.Fprintln(t.out, "cmatose: connecting")
	for _, n := range t.nodes {
		if err := n.id.ResolveAddr(t.src, t.dst, 2000*time.Millisecond); err != nil {
			cmPerror(t.errw, "cmatose: failure getting addr", err)
			t.left--
			return cmRet
		}
	}
	ret = t.events(&t.left, "connect events")
	if ret == 0 && t.o.count > 0 {
		fmt.Fprintln(t.out, "receiving data transfers")
		ret = t.pollAll(true)
		if ret == 0 {
			fmt.Fprintln(t.out, "sending replies")
			for _, n := range t.nodes {
				if t.postSends(n) != nil {
					ret = cmRet
					break
				}
			}
		}
		if ret == 0 {
			fmt.Fprintln(t.out, "data transfers complete")
		}
	}
	if ret == 0 && t.o.migrate {
		if ret = t.migrateChannel(); ret != 0 {
			return ret
		}
	}
	if ret2 := t.events(&t.disc, "disconnect events"); ret2 != 0 {
		ret = ret2
	}
	return ret
}
