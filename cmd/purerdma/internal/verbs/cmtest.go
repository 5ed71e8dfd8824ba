package verbs

// What ucmatose and udaddy share, as rdma-core's cmatose.c and udaddy.c
// share their options, their harness and librdmacm/examples/common.c.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

// cmOpts are the options ucmatose and udaddy share.
type cmOpts struct {
	dst, src   string
	haveDst    bool
	ps         rdmacm.PortSpace
	conns      int
	count      int
	size       int
	port       string
	setTOS     bool
	tos        uint8
	migrate    bool
	setTimeout bool
	ackTimeout uint8
	timeout    time.Duration
}

// cmParse parses a tool's command line: the options both tools take,
// with -P's port space (a name starting with alt is altPS, one starting
// with def the default), and extra, the tool's own. Bad usage prints
// usage, named for tool, on standard output and exits 1, as the C tools
// do.
func cmParse(tool, usage string, o *cmOpts, def, alt string, altPS rdmacm.PortSpace,
	args []string, stdout, stderr io.Writer, extra ...cli.Option) (*cmOpts, error) {
	opts := []cli.Option{
		{Short: 's', Arg: true, Set: func(v string) error { o.dst, o.haveDst = v, true; return nil }},
		{Short: 'b', Arg: true, Set: func(v string) error { o.src = v; return nil }},
		{Short: 'f', Arg: true, Set: func(v string) error { return cmAddrFormat(v, stderr) }},
		{Short: 'P', Arg: true, Set: func(v string) error {
			switch {
			case strings.HasPrefix(strings.ToLower(v), alt):
				o.ps = altPS
			case !strings.HasPrefix(strings.ToLower(v), def):
				fmt.Fprintln(stderr, "Warning: unknown port space format")
			}
			return nil
		}},
		{Short: 'c', Arg: true, Set: func(v string) error { o.conns = int(int32(cli.Atoi(v))); return nil }},
		{Short: 'C', Arg: true, Set: func(v string) error { o.count = int(int32(cli.Atoi(v))); return nil }},
		{Short: 'S', Arg: true, Set: func(v string) error { o.size = int(int32(cli.Atoi(v))); return nil }},
		{Short: 't', Arg: true, Set: func(v string) error { o.setTOS, o.tos = true, uint8(cStrtoul(v)); return nil }},
		{Short: 'h', Set: func(string) error { return cli.ErrHelp }},
		{Long: "timeout", Arg: true, Set: func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return cli.GetoptError("bad --timeout")
			}
			o.timeout = d
			return nil
		}},
	}
	if err := cli.Getopt(tool, args, append(opts, extra...), stderr); err != nil {
		fmt.Fprintf(stdout, usage, tool)
		return nil, cli.ExitError{Code: 1}
	}
	return o, nil
}

// cStrtoul is strtoul(s, NULL, 0): as strtol, a negative number wrapping.
func cStrtoul(s string) uint64 { return uint64(cli.CStrtol(s)) }

// cmAddrFormat is -f: ip and name are what this tool resolves; gid (AF_IB
// addresses) it does not.
func cmAddrFormat(v string, stderr io.Writer) error {
	l := strings.ToLower(v)
	switch {
	case strings.HasPrefix(l, "ip"), strings.HasPrefix(l, "name"):
		return nil
	case strings.HasPrefix(l, "gid"):
		fmt.Fprintln(stderr, "AF_IB (gid) addresses are not supported")
		return cli.GetoptError("gid")
	}
	fmt.Fprintln(stderr, "Warning: unknown address format")
	return nil
}

// cmExit turns a "return status" into the tool's exit: the C tools return
// it from main, so the status is its low byte.
func cmExit(ret int) error {
	if ret == 0 {
		return nil
	}
	if ret&0xff == 0 {
		return cli.ExitError{Code: 1}
	}
	return cli.ExitError{Code: ret & 0xff}
}

// cmRet is what a failed librdmacm or verbs call leaves in ret: -1 (with
// errno set, which perror prints).
const cmRet = -1

// cmPerror prints what perror(msg) does: msg, ": ", and the errno's text.
func cmPerror(w io.Writer, msg string, err error) {
	if n := errs.Errno(err); n != 0 {
		fmt.Fprintf(w, "%s: %s\n", msg, cmStrerror(n))
		return
	}
	fmt.Fprintf(w, "%s: %v\n", msg, err)
}

// cmStrerror is strerror: glibc's text starts with a capital letter.
func cmStrerror(n syscall.Errno) string {
	s := n.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// gaiError is a resolution error worded as glibc's gai_strerror words it,
// which the C tools print.
type gaiError string

func (e gaiError) Error() string { return string(e) }

// cmResolve is get_rdma_addr for an IP address or host name and a port
// number or service name. host "" is the wildcard address (a server with
// no -b).

func cmResolve(ctx context.Context, host, port string) (netip.AddrPort, error) {
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		n, lerr := net.DefaultResolver.LookupPort(ctx, "tcp", port)
		if lerr != nil {
			return netip.AddrPort{}, gaiError("Servname not supported for ai_socktype")
		}
		p = uint64(n)
	}
	if host == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(p)), nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return netip.AddrPort{}, gaiError("Name or service not known")
	}
	a := addrs[0]
	for _, x := range addrs {
		if x.Unmap().Is4() {
			a = x
			break
		}
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
}

// cmAddrs resolves the tool's addresses, printing rdma_getaddrinfo's
// error: src (for a client, -b with port 0) and dst (the server's, or
// the address a server binds).
func cmAddrs(ctx context.Context, o *cmOpts, stdout io.Writer) (src, dst netip.AddrPort, ret int) {
	var err error
	if !o.haveDst {
		if dst, err = cmResolve(ctx, o.src, o.port); err != nil {
			fmt.Fprintf(stdout, "rdma_getaddrinfo error: %v\n", err)
			return src, dst, -2 // EAI_NONAME
		}
		return src, dst, 0
	}
	if o.src != "" {
		if src, err = cmResolve(ctx, o.src, "0"); err != nil {
			fmt.Fprintf(stdout, "rdma_getaddrinfo error: %v\n", err)
			return src, dst, -2
		}
	}
	if dst, err = cmResolve(ctx, o.dst, o.port); err != nil {
		fmt.Fprintf(stdout, "rdma_getaddrinfo error: %v\n", err)
		return src, dst, -2
	}
	return src, dst, 0
}

// cmPoll polls cq until it has given want completions, as the tools'
// poll_cqs, calling each for every completion (nil: none). Unlike the C
// tools, a completion with an error status is an error. Between empty
// polls it yields the CPU on rxe and siw (see rc_pingpong).
func cmPoll(ctx context.Context, cq *uverbs.CQ, yield bool, want int, each func(*uverbs.WC) error) error {
	var wc [8]uverbs.WC
	spins := 0
	for done := 0; done < want; {
		n, err := cq.Poll(wc[:])
		if err != nil {
			return err
		}
		if n == 0 {
			if spins++; spins&0xfff == 0 && ctx.Err() != nil {
				return fmt.Errorf("after %d of %d completions: %w", done, want, ctx.Err())
			}
			if yield {
				sys.Yield()
			}
			continue
		}
		for i := range wc[:n] {
			if wc[i].Status != uverbs.WCSuccess {
				return fmt.Errorf("completion %d: status %s", done+i, wc[i].Status)
			}
			if each != nil {
				if err := each(&wc[i]); err != nil {
					return err
				}
			}
		}
		done += n
	}
	return nil
}

// softDevice reports whether c's device is software (rxe, siw), whose
// completions need a CPU: polls yield between empty tries.
func softDevice(c *uverbs.Context) bool {
	return c != nil && (c.DriverID() == rdma.DriverRXE || c.DriverID() == rdma.DriverSIW)
}

// cmChannelError is create_event_channel's message.
func cmChannelError(stderr io.Writer, err error) {
	if errs.Errno(err) == syscall.ENODEV {
		fmt.Fprintln(stderr, "No RDMA devices were detected")
		return
	}
	cmPerror(stderr, "failed to create RDMA CM event channel", err)
}

// cmNode is what a test node of either tool has (struct cmatest_node's
// common part).
type cmNode struct {
	id        *rdmacm.ID
	qp        *uverbs.QP
	mr        *uverbs.MR
	connected bool
}

func (n *cmNode) base() *cmNode { return n }

// cmTool is what a tool adds to cmTest: its nodes, its handlers of the
// RDMA CM's events, and its server and client.
type cmTool[N any] interface {
	newNode() N
	destroyNode(N)
	routeHandler(N) int
	connectHandler(*rdmacm.ID) int
	// event handles the events cmTest.handle leaves to the tool; n is
	// the event's node where ok.
	event(ev *rdmacm.Event, n N, ok bool) int
	server() int
	client() int
}

// cmTest is the harness that cmatose.c and udaddy.c share: their globals
// and what the two do alike, with messages that start with name. N is
// the tool's node: a *cmNode, or a pointer to a struct that has one.
type cmTest[N interface{ base() *cmNode }] struct {
	name  string // the messages' "cmatose" or "udaddy"
	cmd   string // the command: ucmatose or udaddy
	tool  cmTool[N]
	o     *cmOpts
	ctx   context.Context
	out   io.Writer
	errw  io.Writer
	ch    *rdmacm.EventChannel
	nodes []N
	byID  map[*rdmacm.ID]N
	index int // conn_index: the next node of the server
	left  int // connects_left
}

// run is main after the options: the event channel, the nodes (a
// client's with their IDs), the server or the client, and the end: the
// return status.
func (t *cmTest[N]) run(o *cmOpts, stdout, stderr io.Writer) int {
	ctx := context.Background()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if o.size <= 0 {
		o.count = 0 // create_message: no message without a size
	}
	t.o, t.ctx, t.out, t.errw, t.left, t.byID = o, ctx, stdout, stderr, o.conns, map[*rdmacm.ID]N{}
	ch, err := rdmacm.NewEventChannel(nil)
	if err != nil {
		cmChannelError(stderr, err)
		return 1
	}
	t.ch = ch
	if o.conns < 0 { // malloc of a negative count
		fmt.Fprintf(stdout, "%s: unable to allocate memory for test nodes\n", t.name)
		ch.Close()
		return 1
	}
	// alloc_nodes: a client's IDs exist from the start.
	for i := 0; i < o.conns; i++ {
		n := t.tool.newNode()
		if o.haveDst {
			id, err := ch.CreateID(o.ps)
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", t.cmd, err)
				t.destroy()
				return 1
			}
			n.base().id = id
			t.byID[id] = n
		}
		t.nodes = append(t.nodes, n)
	}
	var ret int
	if o.haveDst {
		ret = t.tool.client()
	} else {
		ret = t.tool.server()
	}
	fmt.Fprintln(stdout, "test complete")
	t.destroy()
	fmt.Fprintf(stdout, "return status %d\n", ret)
	return ret
}

// destroy is destroy_nodes and rdma_destroy_event_channel.
func (t *cmTest[N]) destroy() {
	for _, n := range t.nodes {
		t.tool.destroyNode(n)
	}
	t.ch.Close()
}

// createMessages is create_message: the node's buffer of size bytes,
// none without messages.
func (t *cmTest[N]) createMessages(n *cmNode, size int) error {
	if t.o.count == 0 {
		return nil
	}
	var err error
	if n.mr, err = n.id.PD().AllocMR(size, uverbs.AccessLocalWrite); err != nil {
		fmt.Fprintln(t.out, "failed to reg MR")
		fmt.Fprintf(t.out, "%s: failed to create messages: %d\n", t.name, -1)
		return err
	}
	return nil
}

// postRecvs is post_recvs: -C receives of size bytes into the node's one
// buffer.
func (t *cmTest[N]) postRecvs(n *cmNode, size int) error {
	if t.o.count == 0 {
		return nil
	}
	sge, _ := n.mr.SGE(0, size)
	wr := []uverbs.RecvWR{{ID: 1, SGL: []uverbs.SGE{sge}}}
	for i := 0; i < t.o.count; i++ {
		if _, err := n.qp.PostRecv(wr); err != nil {
			fmt.Fprintf(t.out, "failed to post receives: %d\n", -int(cli.ErrnoOf(err)))
			return err
		}
	}
	return nil
}

// postSends is post_sends on each node: -C sends of the request wr makes
// for each connected node. It stops at the first failure: cmRet.
func (t *cmTest[N]) postSends(wr func(N) uverbs.SendWR) int {
	if t.o.count == 0 {
		return 0
	}
	for _, n := range t.nodes {
		if !n.base().connected {
			continue
		}
		wrs := []uverbs.SendWR{wr(n)}
		for i := 0; i < t.o.count; i++ {
			if _, err := n.base().qp.PostSend(wrs); err != nil {
				fmt.Fprintf(t.out, "failed to post sends: %d\n", -int(cli.ErrnoOf(err)))
				return cmRet
			}
		}
	}
	return 0
}

// pollCQs is poll_cqs: -C completions on the CQ that cq gives of each
// connected node, each (nil: none) called for every one.
func (t *cmTest[N]) pollCQs(cq func(N) *uverbs.CQ, each func(N, *uverbs.WC) error) int {
	for _, n := range t.nodes {
		if !n.base().connected {
			continue
		}
		var f func(*uverbs.WC) error
		if each != nil {
			f = func(wc *uverbs.WC) error { return each(n, wc) }
		}
		if err := cmPoll(t.ctx, cq(n), softDevice(n.base().id.Verbs()), t.o.count, f); err != nil {
			fmt.Fprintf(t.out, "%s: failed polling CQ: %v\n", t.name, err)
			return cmRet
		}
	}
	return 0
}

// addrHandler is addr_handler: the ID's options, then the route.
func (t *cmTest[N]) addrHandler(id *rdmacm.ID) int {
	if t.o.setTOS {
		if err := id.SetTOS(t.o.tos); err != nil {
			cmPerror(t.errw, t.name+": set TOS option failed", err)
		}
	}
	if t.o.setTimeout {
		if err := id.SetAckTimeout(t.o.ackTimeout); err != nil {
			cmPerror(t.errw, t.name+": set ack timeout option failed", err)
		}
	}
	if err := id.ResolveRoute(2000 * time.Millisecond); err != nil {
		cmPerror(t.errw, t.name+": resolve route failed", err)
		t.left--
		return cmRet
	}
	return 0
}

// connect is the end of route_handler: rdma_connect with p.
func (t *cmTest[N]) connect(id *rdmacm.ID, p *rdmacm.ConnParam) int {
	if err := id.Connect(p); err != nil {
		cmPerror(t.errw, t.name+": failure connecting", err)
		t.left--
		return cmRet
	}
	return 0
}

// takeNode is the start of connect_handler: the next node takes a
// connection request's id; false when all are taken.
func (t *cmTest[N]) takeNode(id *rdmacm.ID) (N, bool) {
	if t.index >= t.o.conns {
		var none N
		return none, false
	}
	n := t.nodes[t.index]
	t.index++
	n.base().id = id
	t.byID[id] = n
	return n, true
}

// reject is the end of a failed connect_handler: the request's
// rejection, with ret.
func (t *cmTest[N]) reject(id *rdmacm.ID, ret int) int {
	fmt.Fprintf(t.out, "%s: failing connection request\n", t.name)
	id.Reject(nil)
	id.Close()
	return ret
}

// handle is cma_handler: the events both tools handle alike; the others
// go to the tool's event.
func (t *cmTest[N]) handle(ev *rdmacm.Event) int {
	n, ok := t.byID[ev.ID]
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		if ok {
			return t.addrHandler(ev.ID)
		}
		return 0
	case rdmacm.EventRouteResolved:
		if ok {
			return t.tool.routeHandler(n)
		}
		return 0
	case rdmacm.EventConnectRequest:
		return t.tool.connectHandler(ev.ID)
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventConnectError,
		rdmacm.EventUnreachable, rdmacm.EventRejected:
		fmt.Fprintf(t.out, "%s: event: %s, error: %d\n", t.name, ev.Type, ev.Status)
		t.left--
		return int(ev.Status)
	}
	return t.tool.event(ev, n, ok)
}

// events handles events while *count is not zero and no handler failed;
// a failed rdma_get_cm_event returns what fail makes of it.
func (t *cmTest[N]) events(count *int, fail func(error) int) int {
	ret := 0
	for *count > 0 && ret == 0 {
		ev, err := t.ch.GetEvent(t.ctx)
		if err != nil {
			return fail(err)
		}
		ret = t.handle(ev)
		ev.Ack()
	}
	return ret
}

// startServer is the start of run_server: the listening ID, bound and
// listening, or the return status.
func (t *cmTest[N]) startServer() (*rdmacm.ID, int) {
	fmt.Fprintf(t.out, "%s: starting server\n", t.name)
	l, err := t.ch.CreateID(t.o.ps)
	if err != nil {
		cmPerror(t.errw, t.name+": listen request failed", err)
		return nil, cmRet
	}
	_, addr, ret := cmAddrs(t.ctx, t.o, t.out)
	if ret != 0 {
		l.Close()
		return nil, ret
	}
	if err := l.Bind(addr); err != nil {
		cmPerror(t.errw, t.name+": bind address failed", err)
		l.Close()
		return nil, cmRet
	}
	if err := l.Listen(0); err != nil {
		cmPerror(t.errw, t.name+": failure trying to listen", err)
		l.Close()
		return nil, cmRet
	}
	return l, 0
}

// startClient is the start of run_client: each node's ID resolves the
// server's address.
func (t *cmTest[N]) startClient() int {
	fmt.Fprintf(t.out, "%s: starting client\n", t.name)
	src, dst, ret := cmAddrs(t.ctx, t.o, t.out)
	if ret != 0 {
		return ret
	}
	fmt.Fprintf(t.out, "%s: connecting\n", t.name)
	for _, n := range t.nodes {
		if err := n.base().id.ResolveAddr(src, dst, 2000*time.Millisecond); err != nil {
			cmPerror(t.errw, t.name+": failure getting addr", err)
			t.left--
			return cmRet
		}
	}
	return 0
}
