package verbs

// udaddy: rdma-core's udaddy (librdmacm/examples/udaddy.c, rdma-core 44)
// over package rdmacm: UD QPs "connected" through the RDMA CM's SIDR
// exchange in the UDP port space, with the same flags, events, messages
// and output as the C tool, so that either side may be the C tool or this
// one.
//
// The client resolves and connects -c IDs; each ESTABLISHED carries the
// server's QP number, Q_Key and address, and the client sends -C messages
// of -S bytes (send with immediate: its QP number) to each. The server
// accepts (the SIDR reply carries its QP number), receives the messages,
// makes the address of its replies from the first receive's completion and
// GRH, and sends -C replies back. As in the C tool, the port is 7174 and
// -p names the port space (0x111 UDP, 0x2 IPoIB); --port, purerdma's
// own, changes the port.

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

const udaddyUsage = `usage: %s
	[-s server_address]
	[-b bind_address]
	[-f address_format]
	    name, ip, ipv6, or gid
	[-P port_space]
	    udp or ipoib
	[-c connections]
	[-C message_count]
	[-S message_size]
	[-t type_of_service]
	[-p port_space - 0x111 for UDP (default), 0x2 for IPOIB]
	[--port port_number]   the port, 7174 by default (purerdma only)
	[--timeout duration]   give up after this long (purerdma only; 0: never)
`

// grhLen is sizeof(struct ibv_grh): what a UD receive gets before the
// message.
const grhLen = 40

func (env *Env) runUdaddy(args []string, stdout, stderr io.Writer) error {
	o, err := parseUdaddy(args, stdout, stderr)
	if err != nil {
		return err
	}
	return cmExit(runUdaddyTest(o, stdout, stderr))
}

// parseUdaddy parses udaddy.c's command line ("s:b:c:C:S:t:p:P:f:").
func parseUdaddy(args []string, stdout, stderr io.Writer) (*cmOpts, error) {
	o := &cmOpts{ps: rdmacm.PortSpaceUDP, conns: 1, count: 10, size: 100, port: "7174"}
	return cmParse("udaddy", udaddyUsage, o, "udp", "ipoib", rdmacm.PortSpaceIPoIB, args, stdout, stderr,
		// -p: the port space, "for backwards compatibility".
		cli.Option{Short: 'p', Arg: true, Set: func(v string) error { o.ps = rdmacm.PortSpace(cli.CStrtol(v)); return nil }},
		cli.Option{Long: "port", Arg: true, Set: func(v string) error {
			if _, err := strconv.ParseUint(v, 10, 16); err != nil {
				return cli.GetoptError("bad --port")
			}
			o.port = v
			return nil
		}},
	)
}

// udNode is one UD "connection" (udaddy's struct cmatest_node).
type udNode struct {
	cmNode
	cq         *uverbs.CQ
	ah         *uverbs.AH
	remoteQPN  uint32
	remoteQKey uint32
}

type udaddy struct {
	cmTest[*udNode]
}

func runUdaddyTest(o *cmOpts, stdout, stderr io.Writer) int {
	t := &udaddy{}
	t.cmTest = cmTest[*udNode]{name: "udaddy", cmd: "udaddy", tool: t}
	return t.run(o, stdout, stderr)
}

func (t *udaddy) newNode() *udNode { return &udNode{} }

// destroyNode is destroy_node: the AH, the QP, the CQ, the MR, the ID.
func (t *udaddy) destroyNode(n *udNode) {
	if n.ah != nil {
		n.ah.Close()
	}
	if n.id != nil {
		n.id.DestroyQP()
	}
	if n.cq != nil {
		n.cq.Close()
	}
	if n.mr != nil {
		n.mr.Close()
	}
	if n.id != nil {
		n.id.Close()
	}
	*n = udNode{}
}

// verifyParams is verify_test_params: a message must fit the port's MTU.
func (t *udaddy) verifyParams(n *udNode) error {
	pa, err := n.id.Verbs().QueryPort(n.id.Port())
	if err != nil {
		return err
	}
	if mtu := pa.ActiveMTU.Bytes(); t.o.count > 0 && t.o.size > mtu {
		fmt.Fprintf(t.out, "udaddy: message_size %d is larger than active mtu %d\n", t.o.size, mtu)
		return syscall.EINVAL
	}
	return nil
}

// initNode is init_node: one CQ for sends and receives, a UD QP, and a
// buffer with room for the GRH.
func (t *udaddy) initNode(n *udNode) error {
	cqe := 2
	if t.o.count > 0 {
		cqe = t.o.count * 2
	}
	var err error
	if n.cq, err = n.id.Verbs().CreateCQ(uverbs.CQAttr{CQE: cqe}); err != nil {
		fmt.Fprintln(t.out, "udaddy: unable to create CQ")
		return err
	}
	wr := uint32(max(t.o.count, 1))
	if n.qp, err = n.id.CreateQP(nil, uverbs.QPInitAttr{Type: uverbs.QPTypeUD, SendCQ: n.cq, RecvCQ: n.cq,
		Cap: uverbs.QPCap{MaxSendWR: wr, MaxRecvWR: wr, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		cmPerror(t.errw, "udaddy: unable to create QP", err)
		return err
	}
	return t.createMessages(&n.cmNode, t.o.size+grhLen)
}

// sendAll is post_sends on each node: -C sends with immediate data (this
// QP's number, which the server answers to) to the node's peer.
func (t *udaddy) sendAll(flags uverbs.SendFlags) int {
	return t.postSends(func(n *udNode) uverbs.SendWR {
		sge, _ := n.mr.SGE(0, t.o.size)
		return uverbs.SendWR{ID: 2, Opcode: uverbs.WRSendWithImm, Flags: flags, SGL: []uverbs.SGE{sge},
			Imm: n.qp.Num(), AH: n.ah, RemoteQPN: n.remoteQPN, RemoteQKey: n.remoteQKey}
	})
}

func (t *udaddy) routeHandler(n *udNode) int {
	if err := t.verifyParams(n); err != nil {
		t.left--
		return -int(cli.ErrnoOf(err))
	}
	if t.initNode(n) != nil || t.postRecvs(&n.cmNode, t.o.size+grhLen) != nil {
		t.left--
		return cmRet
	}
	return t.connect(n.id, &rdmacm.ConnParam{})
}

func (t *udaddy) connectHandler(id *rdmacm.ID) int {
	n, ok := t.takeNode(id)
	if !ok {
		return t.reject(id, -int(syscall.ENOMEM))
	}
	var ret int
	if err := t.verifyParams(n); err != nil {
		ret = -int(cli.ErrnoOf(err))
	} else if t.initNode(n) != nil || t.postRecvs(&n.cmNode, t.o.size+grhLen) != nil {
		ret = cmRet
	} else if err := id.Accept(&rdmacm.ConnParam{QPNum: n.qp.Num()}); err != nil {
		cmPerror(t.errw, "udaddy: failure accepting", err)
		ret = cmRet
	} else {
		n.connected = true
		t.left--
		return 0
	}
	t.left--
	fmt.Fprintln(t.out, "udaddy: failing connection request")
	id.Reject(nil)
	t.destroyNode(n) // the ID too, which the C tool leaks
	return ret
}

// resolvedHandler is resolved_handler: the SIDR reply's QP number, Q_Key
// and address of the server.
func (t *udaddy) resolvedHandler(n *udNode, ev *rdmacm.Event) int {
	n.remoteQPN, n.remoteQKey = ev.UD.QPNum, ev.UD.QKey
	ah, err := n.id.PD().CreateAH(ev.UD.AH)
	if err != nil {
		fmt.Fprintf(t.out, "udaddy: failure creating address handle\n")
		fmt.Fprintf(t.errw, "udaddy: %v\n", err)
		t.left--
		return cmRet
	}
	n.ah = ah
	n.connected = true
	t.left--
	return 0
}

// event is the rest of cma_handler: ESTABLISHED, the SIDR reply.
func (t *udaddy) event(ev *rdmacm.Event, n *udNode, ok bool) int {
	if ev.Type == rdmacm.EventEstablished && ok {
		return t.resolvedHandler(n, ev)
	}
	return 0
}

func (t *udaddy) connectEvents() int {
	return t.events(&t.left, func(err error) int {
		fmt.Fprintf(t.errw, "udaddy: rdma_get_cm_event: %v\n", err)
		return cmRet
	})
}

// replyAH is create_reply_ah: the address of the first message's sender,
// from its completion and GRH; its QP number is the immediate data and
// the Q_Key the one of this QP.
func (t *udaddy) replyAH(n *udNode, wc *uverbs.WC) error {
	attr, err := ahFromWC(n.id.Verbs(), n.id.Port(), wc, n.mr.Buf()[:grhLen])
	if err != nil {
		return err
	}
	if n.ah, err = n.id.PD().CreateAH(attr); err != nil {
		return err
	}
	n.remoteQPN = wc.Imm
	a, _, err := n.qp.Query(uverbs.QPAttrQKey)
	if err != nil {
		return err
	}
	n.remoteQKey = a.QKey
	return nil
}

// pollAll is poll_cqs: -C completions on each connected node's CQ, the
// first of a node without an address making its reply address.
func (t *udaddy) pollAll() int {
	return t.pollCQs(func(n *udNode) *uverbs.CQ { return n.cq }, func(n *udNode, wc *uverbs.WC) error {
		if n.ah != nil {
			return nil
		}
		if err := t.replyAH(n, wc); err != nil {
			fmt.Fprintln(t.out, "udaddy: failed to create reply AH")
			return err
		}
		return nil
	})
}

func (t *udaddy) server() int {
	l, ret := t.startServer()
	if ret != 0 {
		return ret
	}
	defer l.Close()
	t.connectEvents() // as the C server, whatever it returns
	if t.o.count > 0 {
		fmt.Fprintln(t.out, "receiving data transfers")
		if ret = t.pollAll(); ret != 0 {
			return ret
		}
		fmt.Fprintln(t.out, "sending replies")
		if ret = t.sendAll(uverbs.SendSignaled); ret != 0 {
			return ret
		}
		if ret = t.pollAll(); ret != 0 {
			return ret
		}
		fmt.Fprintln(t.out, "data transfers complete")
	}
	return 0
}

func (t *udaddy) client() int {
	if ret := t.startClient(); ret != 0 {
		return ret
	}
	if ret := t.connectEvents(); ret != 0 {
		return ret
	}
	if t.o.count > 0 {
		fmt.Fprintln(t.out, "initiating data transfers")
		if ret := t.sendAll(0); ret != 0 {
			return ret
		}
		fmt.Fprintln(t.out, "receiving data transfers")
		if ret := t.pollAll(); ret != 0 {
			return ret
		}
		fmt.Fprintln(t.out, "data transfers complete")
	}
	return 0
}

// ahFromWC is ibv_init_ah_from_wc: the address that answers a UD receive,
// from its completion and the 40 bytes before the message. On RoCE v2
// over IPv4 the last 20 of them are the IPv4 header (version 4, checked
// by its checksum where the first word also reads as IPv6); otherwise
// they are a GRH (an IPv6 header: RoCE v2 over IPv6 when the next header
// is UDP, RoCE v1 for 0x1b). The source GID index is the one of the
// packet's destination, of the matching type.
func ahFromWC(c *uverbs.Context, port int, wc *uverbs.WC, grh []byte) (uverbs.AHAttr, error) {
	a := uverbs.AHAttr{DLID: wc.SLID, SL: wc.SL, SrcPathBits: wc.DLIDPathBits, Port: port}
	if len(grh) < grhLen {
		return a, syscall.EINVAL
	}
	vtf := binary.BigEndian.Uint32(grh[0:4])
	a.GRH.FlowLabel = vtf & 0xfffff
	if wc.Flags&uverbs.WCWithGRH == 0 {
		return a, nil
	}
	a.IsGlobal = true
	var dgid rdma.GID // the packet's destination: ours
	var typ uverbs.GIDType
	switch grhVersion(grh) {
	case 4:
		ip := grh[20:40]
		daddr := netip.AddrFrom4([4]byte(ip[16:20]))
		if daddr.IsMulticast() {
			return a, syscall.EINVAL
		}
		dgid, typ = daddr.As16(), uverbs.GIDTypeRoCEv2
		a.GRH.DGID = netip.AddrFrom4([4]byte(ip[12:16])).As16()
		a.GRH.HopLimit, a.GRH.TrafficClass = ip[8], ip[1]
	case 6:
		if grh[24] == 0xff {
			return a, syscall.EINVAL
		}
		switch grh[6] { // next header
		case syscall.IPPROTO_UDP:
			typ = uverbs.GIDTypeRoCEv2
		case 0x1b:
			typ = uverbs.GIDTypeRoCEv1
		default:
			return a, syscall.EPROTONOSUPPORT
		}
		copy(a.GRH.DGID[:], grh[8:24])
		copy(dgid[:], grh[24:40])
		a.GRH.HopLimit, a.GRH.TrafficClass = grh[7], uint8(vtf>>20)
	default:
		return a, syscall.EPROTONOSUPPORT
	}
	gids, err := c.QueryGIDTable()
	if err != nil {
		return a, err
	}
	for _, g := range gids {
		// An IB port's GIDs have the IB type; ibv_find_gid_index takes
		// them for RoCE v1's.
		if g.Port == port && g.GID == dgid && (g.Type == typ || typ == uverbs.GIDTypeRoCEv1 && g.Type == uverbs.GIDTypeIB) {
			a.GRH.SGIDIndex = uint8(g.Index)
			return a, nil
		}
	}
	return a, fmt.Errorf("no GID %s of type %s on port %d: %w", dgid, typ, port, syscall.ENOENT)
}

// grhVersion is get_grh_header_version: 4 or 6, 0 for neither.
func grhVersion(grh []byte) int {
	ip := grh[20:40]
	if grh[0]>>4 != 6 {
		if ip[0]>>4 == 4 {
			return 4
		}
		return 0
	}
	if ip[0]&0xf != 5 {
		return 6
	}
	var sum uint32
	for i := 0; i < 20; i += 2 {
		if i != 10 { // the checksum field, counted as zero
			sum += uint32(binary.BigEndian.Uint16(ip[i:]))
		}
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	if uint16(^sum) == binary.BigEndian.Uint16(ip[10:]) {
		return 4
	}
	return 6
}
