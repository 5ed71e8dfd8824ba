package verbs

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
	"fmt"
	"io"
	"syscall"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

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

func (env *Env) runUcmatose(args []string, stdout, stderr io.Writer) error {
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
	return cmParse("ucmatose", ucmatoseUsage, o, "tcp", "ib", rdmacm.PortSpaceIB, args, stdout, stderr,
		cli.Option{Short: 'p', Arg: true, Set: func(v string) error { o.port = v; return nil }},
		cli.Option{Short: 'm', Set: func(string) error { o.migrate = true; return nil }},
		cli.Option{Short: 'a', Arg: true, Set: func(v string) error {
			o.setTimeout, o.ackTimeout = true, uint8(cStrtoul(v))
			return nil
		}},
	)
}

type cmatose struct {
	cmTest[*cmNode]
	disc   int // disconnects_left
	listen *rdmacm.ID
}

// runCmatose is cmatose.c's main after the options: the return status.
func runCmatose(o *cmOpts, stdout, stderr io.Writer) int {
	t := &cmatose{}
	t.cmTest = cmTest[*cmNode]{name: "cmatose", cmd: "ucmatose", tool: t}
	return t.run(o, stdout, stderr)
}

func (t *cmatose) newNode() *cmNode { return &cmNode{} }

// destroyNode is destroy_node: the MR, then the ID (with its QP and CQs).
func (t *cmatose) destroyNode(n *cmNode) {
	if n.mr != nil {
		n.mr.Close()
	}
	if n.id != nil {
		n.id.Close()
	}
}

// initNode is init_node: an RC QP with CQs of -C entries that signals
// every send, and the message buffer.
func (t *cmatose) initNode(n *cmNode) error {
	cqe := uint32(max(t.o.count, 1))
	qp, err := n.id.CreateQP(nil, uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SQSigAll: true,
		Cap: uverbs.QPCap{MaxSendWR: cqe, MaxRecvWR: cqe, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		cmPerror(t.out, "cmatose: unable to create QP", err)
		return err
	}
	n.qp = qp
	return t.createMessages(n, t.o.size)
}

// sendAll is post_sends on each node: -C sends of the node's buffer.
func (t *cmatose) sendAll() int {
	return t.postSends(func(n *cmNode) uverbs.SendWR {
		sge, _ := n.mr.SGE(0, t.o.size)
		return uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, SGL: []uverbs.SGE{sge}}
	})
}

func (t *cmatose) routeHandler(n *cmNode) int {
	if t.initNode(n) != nil || t.postRecvs(n, t.o.size) != nil {
		t.left--
		return cmRet
	}
	// conn_param: responder resources and initiator depth 1, retry 5,
	// no RNR retry (memset), no private data.
	return t.connect(n.id, &rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 5})
}

func (t *cmatose) connectHandler(id *rdmacm.ID) int {
	n, ok := t.takeNode(id)
	if !ok {
		return t.reject(id, -int(syscall.ENOMEM))
	}
	ret := 0
	if t.initNode(n) != nil {
		ret = cmRet
	}
	if ret == 0 && t.o.setTimeout {
		if err := id.SetAckTimeout(t.o.ackTimeout); err != nil {
			cmPerror(t.errw, "cmatose: set ack timeout option failed", err)
		}
	}
	if ret == 0 && t.postRecvs(n, t.o.size) != nil {
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
	// err2: the node forgets the ID (which the C tool leaks; here it is
	// closed after the reject).
	if n.mr != nil {
		n.mr.Close()
		n.mr = nil
	}
	n.id, n.qp = nil, nil
	t.left--
	return t.reject(id, ret)
}

// event is the rest of cma_handler: ESTABLISHED and DISCONNECTED.
func (t *cmatose) event(ev *rdmacm.Event, n *cmNode, ok bool) int {
	switch ev.Type {
	case rdmacm.EventEstablished:
		if ok {
			n.connected = true
		}
		t.left--
		t.disc++
	case rdmacm.EventDisconnected:
		ev.ID.Disconnect()
		t.disc--
	}
	return 0
}

// events is connect_events (left) and disconnect_events (disc).
func (t *cmatose) events(count *int, what string) int {
	return t.cmTest.events(count, func(err error) int {
		cmPerror(t.errw, "cmatose: failure in rdma_get_cm_event in "+what, err)
		return int(cli.ErrnoOf(err))
	})
}

// pollAll is poll_cqs: -C completions on each connected node's send or
// receive CQ.
func (t *cmatose) pollAll(recv bool) int {
	return t.pollCQs(func(n *cmNode) *uverbs.CQ {
		if recv {
			return n.qp.RecvCQ()
		}
		return n.qp.SendCQ()
	}, nil)
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
	l, ret := t.startServer()
	if ret != 0 {
		return ret
	}
	t.listen = l
	defer func() { l.Close(); t.listen = nil }()
	if ret = t.events(&t.left, "connect events"); ret != 0 {
		return ret
	}
	if t.o.count > 0 {
		fmt.Fprintln(t.out, "initiating data transfers")
		if ret = t.sendAll(); ret != 0 {
			return ret
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
	if ret := t.startClient(); ret != 0 {
		return ret
	}
	ret := t.events(&t.left, "connect events")
	if ret == 0 && t.o.count > 0 {
		fmt.Fprintln(t.out, "receiving data transfers")
		ret = t.pollAll(true)
		if ret == 0 {
			fmt.Fprintln(t.out, "sending replies")
			ret = t.sendAll()
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
