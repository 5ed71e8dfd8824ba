package verbs

// rping: rdma-core's rping (librdmacm/examples/rping.c, rdma-core 44,
// Debian's rdmacm-utils) over purerdma's connection manager (rdmacm) and
// data path (uverbs): the same flags, the same wire protocol and the same
// ping-pong, so that either side may be the C tool or this one.
//
// The protocol, each iteration: the client fills its start buffer with
// "rdma-ping-N: " and a rotating run of printable characters and SENDs a
// struct rping_rdma_info {be64 buf; be32 rkey; be32 size} naming it; the
// server RDMA-READs it and SENDs a "go ahead"; the client advertises its
// rdma buffer the same way; the server RDMA-WRITEs what it read into it
// and SENDs a "go ahead". With -V the client compares the two buffers,
// with -v each side prints what it got. The server runs until the client
// disconnects.
//
// As the C tool, one goroutine reads the connection manager's events and
// one per connection sleeps on the completion channel; both hand their
// news to the main goroutine through a state and a counting semaphore.
// Its messages and exit statuses are the C tool's (an event the C tool
// exit()s on ends the run with status 255). It differs where the C tool
// would hang: a second connection request to a server without -P is
// rejected rather than left blocking the event thread.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

const (
	rpingBufSize    = 64 * 1024
	rpingSQDepth    = 16
	rpingMinBufSize = 8 + 15 // sizeof(stringify(INT_MAX)) + sizeof(RPING_MSG_FMT): 23 in Debian's build, where INT_MAX is not defined there
	rpingInfoSize   = 16     // struct rping_rdma_info
	rpingDefPort    = 7174
	rpingDefSize    = 64
)

// The states of rping.c's enum test_state, with its numbers (its messages
// print them).
const (
	stIdle int32 = 1 + iota
	stConnectRequest
	stAddrResolved
	stRouteResolved
	stConnected
	stReadAdv
	stReadComplete
	stWriteAdv
	stWriteComplete
	stDisconnected
	stError
)

// rpingOpts are the command line's settings.
type rpingOpts struct {
	server     int // -1: neither -s nor -c; 0: client; 1: server
	addr       netip.Addr
	src        netip.Addr // -I; invalid when absent
	port       uint16
	count      int32
	size       int
	verbose    int
	validate   int
	debug      int
	persistent bool
	selfQP     bool
}

func rpingUsage(w io.Writer) {
	const name = "rping"
	fmt.Fprintf(w, "%s -s [-vVd] [-S size] [-C count] [-a addr] [-p port]\n", name)
	fmt.Fprintf(w, "%s -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]\n", name)
	fmt.Fprintf(w, "\t-c\t\tclient side\n")
	fmt.Fprintf(w, "\t-I\t\tSource address to bind to for client.\n")
	fmt.Fprintf(w, "\t-s\t\tserver side.  To bind to any address with IPv6 use -a ::0\n")
	fmt.Fprintf(w, "\t-v\t\tdisplay ping data to stdout\n")
	fmt.Fprintf(w, "\t-V\t\tvalidate ping data\n")
	fmt.Fprintf(w, "\t-d\t\tdebug printfs\n")
	fmt.Fprintf(w, "\t-S size \tping data size\n")
	fmt.Fprintf(w, "\t-C count\tping count times\n")
	fmt.Fprintf(w, "\t-a addr\t\taddress\n")
	fmt.Fprintf(w, "\t-p port\t\tport\n")
	fmt.Fprintf(w, "\t-P\t\tpersistent server mode allowing multiple connections\n")
	fmt.Fprintf(w, "\t-q\t\tuse self-created, self-modified QP\n")
}

// catoi is C's atoi: leading blanks, a sign, digits, and 0 for anything
// else; it wraps as a 32-bit int.
func catoi(s string) int32 {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var n int32
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int32(s[i]-'0')
	}
	if neg {
		n = -n
	}
	return n
}

// rpingGetAddr is get_addr: an address netip parses (IPv6 with its zone),
// else a host name's first address. It prints the C tool's message and
// returns getaddrinfo's EAI_NONAME (-2) on failure.
func rpingGetAddr(s string, stdout io.Writer) (netip.Addr, int) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a, 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	as, err := net.DefaultResolver.LookupNetIP(ctx, "ip", s)
	if err != nil || len(as) == 0 {
		fmt.Fprintf(stdout, "getaddrinfo failed (%s) - invalid hostname or IP address\n", "Name or service not known")
		return netip.Addr{}, -2
	}
	return as[0].Unmap(), 0
}

// parseRpingArgs parses the command line as rping's getopt loop (GNU
// getopt: options may follow operands, which are ignored; "--" ends the
// options). It returns the options and 0, or the exit status after
// printing the usage or the error.
func parseRpingArgs(args []string, stdout, stderr io.Writer) (*rpingOpts, int) {
	o := &rpingOpts{server: -1, addr: netip.IPv4Unspecified(), port: rpingDefPort, size: rpingDefSize}
	dbg := func(format string, a ...any) {
		if o.debug > 0 {
			fmt.Fprintf(stdout, format, a...)
		}
	}
	ret := 0
	usage := func() (*rpingOpts, int) {
		rpingUsage(stdout)
		return nil, int(syscall.EINVAL)
	}
	// getopt(argc, argv, "a:I:Pp:C:S:t:scvVdq"), and rping sets opterr to 0: getopt's refusals print nothing, the usage
	// follows.
	flag := func(f func()) func(string) error { return func(string) error { f(); return nil } }
	_, err := cli.GetoptOperands("rping", args, []cli.Option{
		{Short: 'a', Arg: true, Set: func(v string) error {
			var a netip.Addr
			if a, ret = rpingGetAddr(v, stdout); ret == 0 {
				o.addr = a
			}
			return nil
		}},
		{Short: 'I', Arg: true, Set: func(v string) error {
			var a netip.Addr
			if a, ret = rpingGetAddr(v, stdout); ret == 0 {
				o.src = a
			}
			return nil
		}},
		{Short: 'P', Set: flag(func() { o.persistent = true })},
		{Short: 'p', Arg: true, Set: func(v string) error {
			o.port = uint16(catoi(v))
			dbg("port %d\n", catoi(v))
			return nil
		}},
		{Short: 'C', Arg: true, Set: func(v string) error {
			o.count = catoi(v)
			if o.count < 0 {
				fmt.Fprintf(stderr, "Invalid count %d\n", o.count)
				ret = int(syscall.EINVAL)
			} else {
				dbg("count %d\n", o.count)
			}
			return nil
		}},
		{Short: 'S', Arg: true, Set: func(v string) error {
			n := catoi(v)
			o.size = int(n)
			if n < rpingMinBufSize || n > rpingBufSize-1 {
				fmt.Fprintf(stderr, "Invalid size %d (valid range is %d to %d)\n", n, rpingMinBufSize, rpingBufSize)
				ret = int(syscall.EINVAL)
			} else {
				dbg("size %d\n", n)
			}
			return nil
		}},
		// -t: the C tool's getopt takes it (with an argument) and its
		// switch does not: the usage.
		{Short: 't', Arg: true, Set: func(string) error { return cli.ErrUsage }},
		{Short: 's', Set: flag(func() { o.server = 1; dbg("server\n") })},
		{Short: 'c', Set: flag(func() { o.server = 0; dbg("client\n") })},
		{Short: 'v', Set: flag(func() { o.verbose++; dbg("verbose\n") })},
		{Short: 'V', Set: flag(func() { o.validate++; dbg("validate data\n") })},
		{Short: 'd', Set: flag(func() { o.debug++ })},
		{Short: 'q', Set: flag(func() { o.selfQP = true })},
		// -h is not rping's either; "Usage:" first for `purerdma help
		// rping` (the C tool prints its usage alone).
		{Short: 'h', Set: func(string) error { return cli.ErrHelp }},
	}, io.Discard)
	if errors.Is(err, cli.ErrHelp) {
		fmt.Fprintln(stdout, "Usage:")
	}
	if err != nil {
		return usage()
	}
	if ret != 0 {
		return nil, ret & 0xff
	}
	if o.server == -1 {
		return usage()
	}
	return o, 0
}

// rpingFill writes ping number ping into buf as rping_test_client does:
// "rdma-ping-N: ", then characters from start on, 'A' to 'z' and round
// again, and a NUL at the end. It returns the next ping's start.
func rpingFill(buf []byte, ping int32, start byte) byte {
	var msg [32]byte
	m := append(strconv.AppendInt(append(msg[:0], "rdma-ping-"...), int64(ping), 10), ": "...)
	n := copy(buf[:len(buf)-1], m) // snprintf(buf, size, ...)
	c := start
	for i := n; i < len(buf); i++ {
		buf[i] = c
		if c++; c > 122 {
			c = 65
		}
	}
	buf[len(buf)-1] = 0
	if start++; start > 122 {
		start = 65
	}
	return start
}

// cstr is the C string at the start of b: up to its first NUL.
func cstr(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// perrorText is perror's text for err: its errno's message (strerror),
// or the error itself when it carries none.
func perrorText(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		return cli.Strerror(en)
	}
	return err.Error()
}

// errnoRet is the C function's return for err: its errno, or -1.
func errnoRet(err error) int {
	if e := errs.Errno(err); e != 0 {
		return int(e)
	}
	return -1
}

// syncWriter serializes the goroutines' writes to one writer.
type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// rping is the process: rping.c's globals and main's control block parts
// that the connections share.
type rping struct {
	o              *rpingOpts
	stdout, stderr io.Writer
	ch             *rdmacm.EventChannel

	mu  sync.Mutex
	cbs map[*rdmacm.ID]*rpingCB // cm_id->context

	dead     chan struct{} // closed when the event goroutine "exit()s"
	deadOnce sync.Once
	code     int
}

// rpingCB is struct rping_cb: one connection's (or the listener's) state.
type rpingCB struct {
	p      *rping
	server bool
	state  atomic.Int32
	sem    chan struct{} // a counting semaphore
	// acceptReady is the listener's: a token while it may take the next
	// connection request.
	acceptReady chan struct{}

	id    *rdmacm.ID // the client's ID, or the listener
	child *rdmacm.ID // the server's connection

	cc                              *uverbs.CompChannel
	cq                              *uverbs.CQ
	qp                              *uverbs.QP
	recvMR, sendMR, rdmaMR, startMR *uverbs.MR
	mem                             *uverbs.MR // the memory the four are in
	recvWR                          []uverbs.RecvWR
	sendWR, rdmaWR                  []uverbs.SendWR

	remoteRKey uint32
	remoteAddr uint64
	remoteLen  uint32

	cqCancel context.CancelFunc
	cqDone   chan struct{}
}

func (p *rping) newCB(server bool) *rpingCB {
	cb := &rpingCB{p: p, server: server, sem: make(chan struct{}, 1024), acceptReady: make(chan struct{}, 1)}
	cb.state.Store(stIdle)
	cb.acceptReady <- struct{}{}
	return cb
}

func (p *rping) dbg(format string, a ...any) {
	if p.o.debug > 0 && !p.exited() {
		fmt.Fprintf(p.stdout, format, a...)
	}
}

// errf prints to stderr, unless the run has "exit()ed": the C tool's
// process is gone by then (or racing to go), and this one stays quiet.
func (p *rping) errf(format string, a ...any) {
	if !p.exited() {
		fmt.Fprintf(p.stderr, format, a...)
	}
}

func (p *rping) exited() bool {
	select {
	case <-p.dead:
		return true
	default:
		return false
	}
}

// exit is the event thread's exit(code): the run ends with code.
func (p *rping) exit(code int) {
	p.deadOnce.Do(func() {
		p.code = code & 0xff
		close(p.dead)
	})
}

func (p *rping) setCB(id *rdmacm.ID, cb *rpingCB) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cb == nil {
		delete(p.cbs, id)
	} else {
		p.cbs[id] = cb
	}
}

func (p *rping) cbOf(id *rdmacm.ID) *rpingCB {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cbs[id]
}

func (cb *rpingCB) post() { cb.sem <- struct{}{} }

// wait is sem_wait; it returns false when the run is ending (the event
// goroutine exit()ed).
func (cb *rpingCB) wait() bool {
	select {
	case <-cb.sem:
	case <-cb.p.dead:
		return false
	}
	// An event that ends the run posts too: the end goes first, as the
	// C tool's exit() beats its main thread.
	select {
	case <-cb.p.dead:
		return false
	default:
		return true
	}
}

// await is sem_wait and the check of the state that rping.c makes after
// it: ok when the state is want. Otherwise it prints "<what> state N"
// where the state is another; ended reports that the wait gave up
// because the run is ending.
func (cb *rpingCB) await(want int32, what string) (ok, ended bool) {
	if !cb.wait() {
		return false, true
	}
	if s := cb.state.Load(); s != want {
		cb.p.errf("%s state %d\n", what, s)
		return false, false
	}
	return true, false
}

func (env *Env) runRping(args []string, stdout, stderr io.Writer) error {
	var mu sync.Mutex
	stdout, stderr = syncWriter{&mu, stdout}, syncWriter{&mu, stderr}
	o, code := parseRpingArgs(args, stdout, stderr)
	if code != 0 {
		return cli.ExitError{Code: code & 0xff}
	}
	p := &rping{o: o, stdout: stdout, stderr: stderr, cbs: map[*rdmacm.ID]*rpingCB{}, dead: make(chan struct{})}
	if ret := p.main(); ret != 0 {
		return cli.ExitError{Code: ret & 0xff}
	}
	return nil
}

// main is rping.c's main after the options.
func (p *rping) main() int {
	ch, err := rdmacm.NewEventChannel(nil)
	if err != nil {
		// create_event_channel (common.c)
		if errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENOENT) {
			p.errf("No RDMA devices were detected\n")
		} else {
			p.errf("Failed to create RDMA CM event channel: %s\n", perrorText(err))
		}
		return errnoRet(err)
	}
	p.ch = ch
	defer ch.Close()
	cb := p.newCB(p.o.server == 1)
	id, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		p.errf("rdma_create_id: %s\n", perrorText(err))
		return -1
	}
	cb.id = id
	p.setCB(id, cb)
	p.dbg("created cm_id %p\n", id)

	ctx, cancel := context.WithCancel(context.Background())
	cmDone := make(chan struct{})
	go func() {
		defer close(cmDone)
		p.cmThread(ctx)
	}()

	var ret int
	switch {
	case cb.server && p.o.persistent:
		ret = p.runPersistentServer(cb)
	case cb.server:
		ret = p.runServer(cb)
	default:
		ret = p.runClient(cb)
	}
	p.dbg("destroy cm_id %p\n", id)
	id.Close()
	cancel()
	<-cmDone
	select {
	case <-p.dead:
		return p.code
	default:
	}
	return ret
}

// cmThread is cm_thread: it reads and handles the connection manager's
// events until ctx is done or a handler fails.
func (p *rping) cmThread(ctx context.Context) {
	for {
		ev, err := p.ch.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.errf("rdma_get_cm_event: %s\n", perrorText(err))
			p.exit(-1)
			return
		}
		ret := p.cmaEvent(ctx, ev)
		ev.Ack()
		if ret != 0 {
			p.exit(ret)
			return
		}
	}
}

// cmaEvent is rping_cma_event_handler.
func (p *rping) cmaEvent(ctx context.Context, ev *rdmacm.Event) int {
	id := ev.ID
	cb := p.cbOf(id)
	if ev.Type == rdmacm.EventConnectRequest {
		cb = p.cbOf(ev.ListenID)
	}
	if cb == nil {
		return 0 // an ID rping has let go of
	}
	who := "child"
	if id == cb.id {
		who = "parent"
	}
	p.dbg("cma_event type %s cma_id %p (%s)\n", ev.Type, id, who)
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		cb.state.Store(stAddrResolved)
		if err := id.ResolveRoute(2000 * time.Millisecond); err != nil {
			cb.state.Store(stError)
			p.errf("rdma_resolve_route: %s\n", perrorText(err))
			cb.post()
		}
	case rdmacm.EventRouteResolved:
		cb.state.Store(stRouteResolved)
		cb.post()
	case rdmacm.EventConnectRequest:
		if !p.o.persistent {
			select {
			case <-cb.acceptReady:
			default:
				// The C tool would block here for good; turn the
				// request away instead.
				p.errf("rping: connection request while serving another one: rejected\n")
				id.Reject(nil)
				id.Close()
				return 0
			}
		} else {
			select {
			case <-cb.acceptReady:
			case <-ctx.Done():
				id.Close()
				return 0
			}
		}
		cb.state.Store(stConnectRequest)
		cb.child = id
		p.setCB(id, cb)
		p.dbg("child cma %p\n", id)
		cb.post()
	case rdmacm.EventConnectResponse:
		p.dbg("CONNECT_RESPONSE\n")
		cb.state.Store(stConnected)
		cb.post()
	case rdmacm.EventEstablished:
		p.dbg("ESTABLISHED\n")
		// The server wakes up when the first RECV completes.
		if !cb.server {
			cb.state.Store(stConnected)
		}
		cb.post()
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventConnectError,
		rdmacm.EventUnreachable, rdmacm.EventRejected:
		p.errf("cma event %s, error %d\n", ev.Type, ev.Status)
		p.exit(-1)
		cb.post()
		return -1
	case rdmacm.EventDisconnected:
		side := "client"
		if cb.server {
			side = "server"
		}
		p.errf("%s DISCONNECT EVENT...\n", side)
		cb.state.Store(stDisconnected)
		cb.post()
	case rdmacm.EventDeviceRemoval:
		p.errf("cma detected device removal!!!!\n")
		cb.state.Store(stError)
		p.exit(-1)
		cb.post()
		return -1
	default:
		p.errf("unhandled event: %s, ignoring\n", ev.Type)
	}
	return 0
}

// cqThread is cq_thread: it sleeps on the completion channel and handles
// the completions until ctx is done, a completion fails or is flushed.
func (p *rping) cqThread(ctx context.Context, cb *rpingCB) {
	defer close(cb.cqDone)
	p.dbg("cq_thread started.\n")
	for {
		cq, err := cb.cc.GetEvent(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.errf("Failed to get cq event!\n")
			}
			return
		}
		if cq != cb.cq {
			p.errf("Unknown CQ!\n")
			return
		}
		if err := cb.cq.ReqNotify(false); err != nil {
			p.errf("Failed to set notify!\n")
			return
		}
		if ret := p.cqEvents(cb); ret != 0 {
			return
		}
	}
}

// cqEvents is rping_cq_event_handler: it returns 1 when a work request
// was flushed (the connection is going), -1 on an error, 0 otherwise.
func (p *rping) cqEvents(cb *rpingCB) int {
	var wc [1]uverbs.WC
	flushed := 0
	fail := func() int {
		cb.state.Store(stError)
		cb.post()
		return -1
	}
	for {
		n, err := cb.cq.Poll(wc[:])
		if err != nil {
			p.errf("poll error %d\n", -errnoRet(err))
			return fail()
		}
		if n == 0 {
			return flushed
		}
		w := &wc[0]
		if w.Status != uverbs.WCSuccess {
			if w.Status == uverbs.WCWRFlushErr {
				flushed = 1
				continue
			}
			p.errf("cq completion failed status %d\n", uint32(w.Status))
			return fail()
		}
		switch w.Opcode {
		case uverbs.WCSend:
			p.dbg("send completion\n")
		case uverbs.WCRDMAWrite:
			p.dbg("rdma write completion\n")
			cb.state.Store(stWriteComplete)
			cb.post()
		case uverbs.WCRDMARead:
			p.dbg("rdma read completion\n")
			cb.state.Store(stReadComplete)
			cb.post()
		case uverbs.WCRecv:
			p.dbg("recv completion\n")
			var ret int
			if cb.server {
				ret = p.serverRecv(cb, w)
			} else {
				ret = p.clientRecv(cb, w)
			}
			if ret != 0 {
				p.errf("recv wc error: %d\n", ret)
				return fail()
			}
			if _, err := cb.qp.PostRecv(cb.recvWR); err != nil {
				p.errf("post recv error: %d\n", errnoRet(err))
				return fail()
			}
			cb.post()
		default:
			p.dbg("unknown!!!!! completion\n")
			return fail()
		}
	}
}

func (p *rping) serverRecv(cb *rpingCB, w *uverbs.WC) int {
	if w.ByteLen != rpingInfoSize {
		p.errf("Received bogus data, size %d\n", w.ByteLen)
		return -1
	}
	b := cb.recvMR.Buf()
	cb.remoteAddr = binary.BigEndian.Uint64(b[0:])
	cb.remoteRKey = binary.BigEndian.Uint32(b[8:])
	cb.remoteLen = binary.BigEndian.Uint32(b[12:])
	p.dbg("Received rkey %x addr %x len %d from peer\n", cb.remoteRKey, cb.remoteAddr, cb.remoteLen)
	if s := cb.state.Load(); s <= stConnected || s == stWriteComplete {
		cb.state.Store(stReadAdv)
	} else {
		cb.state.Store(stWriteAdv)
	}
	return 0
}

func (p *rping) clientRecv(cb *rpingCB, w *uverbs.WC) int {
	if w.ByteLen != rpingInfoSize {
		p.errf("Received bogus data, size %d\n", w.ByteLen)
		return -1
	}
	if cb.state.Load() == stReadAdv {
		cb.state.Store(stWriteAdv)
	} else {
		cb.state.Store(stWriteComplete)
	}
	return 0
}

// setupQP is rping_setup_qp: a completion channel, a CQ on it, armed, and
// the RC QP on the ID (with the device's PD, which the IDs share).
func (p *rping) setupQP(cb *rpingCB, id *rdmacm.ID) int {
	c := id.Verbs()
	var err error
	if cb.cc, err = c.CreateCompChannel(); err != nil {
		p.errf("ibv_create_comp_channel failed\n")
		return errnoRet(err)
	}
	p.dbg("created channel %p\n", cb.cc)
	if cb.cq, err = c.CreateCQ(uverbs.CQAttr{CQE: rpingSQDepth * 2, Channel: cb.cc}); err != nil {
		p.errf("ibv_create_cq failed\n")
		cb.cc.Close()
		return errnoRet(err)
	}
	p.dbg("created cq %p\n", cb.cq)
	if err := cb.cq.ReqNotify(false); err != nil {
		p.errf("ibv_create_cq failed\n")
		cb.cq.Close()
		cb.cc.Close()
		return errnoRet(err)
	}
	attr := uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cb.cq, RecvCQ: cb.cq,
		Cap: uverbs.QPCap{MaxSendWR: rpingSQDepth, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}}
	if p.o.selfQP {
		// -q: the program's own QP, which the ID does not know of.
		if cb.qp, err = id.PD().CreateQP(attr); err != nil {
			p.errf("ibv_create_qp: %s\n", perrorText(err))
			cb.cq.Close()
			cb.cc.Close()
			return -1
		}
		err = cb.qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateInit, Port: id.Port()},
			uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrAccessFlags)
		if err != nil {
			p.errf("ibv_modify_qp: %s\n", perrorText(err))
			cb.qp.Close()
			cb.cq.Close()
			cb.cc.Close()
			return -1
		}
		p.dbg("created qp %p\n", cb.qp)
		return 0
	}
	cb.qp, err = id.CreateQP(nil, attr)
	if err != nil {
		p.errf("rdma_create_qp: %s\n", perrorText(err))
		cb.cq.Close()
		cb.cc.Close()
		return -1
	}
	p.dbg("created qp %p\n", cb.qp)
	return 0
}

// freeQP is rping_free_qp.
func (p *rping) freeQP(cb *rpingCB, id *rdmacm.ID) {
	if p.o.selfQP {
		cb.qp.Close()
	} else {
		id.DestroyQP()
	}
	cb.cq.Close()
	cb.cc.Close()
}

// setupBuffers is rping_setup_buffers and rping_setup_wr.
func (p *rping) setupBuffers(cb *rpingCB, id *rdmacm.ID) int {
	p.dbg("rping_setup_buffers called on cb %p\n", cb)
	pd := id.PD()
	const remote = uverbs.AccessLocalWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteWrite
	var err error
	fail := func(what string) int {
		p.errf("%s reg_mr failed\n", what)
		p.freeBuffers(cb)
		return errnoRet(err)
	}
	// One mapping holds the four buffers, each registered at its exact
	// size as the C tool's malloc'd ones, so that the device bounds an
	// access to one as it does there (a peer's longer read fails).
	size := (p.o.size + 63) &^ 63
	if cb.mem, err = pd.AllocMR(128+2*size, uverbs.AccessLocalWrite); err != nil {
		p.errf("rdma_buf malloc failed\n")
		return errnoRet(err)
	}
	m := cb.mem.Buf()
	if cb.recvMR, err = pd.RegMR(m[0:rpingInfoSize], uverbs.AccessLocalWrite); err != nil {
		return fail("recv_buf")
	}
	if cb.sendMR, err = pd.RegMR(m[64:64+rpingInfoSize], 0); err != nil {
		return fail("send_buf")
	}
	if cb.rdmaMR, err = pd.RegMR(m[128:128+p.o.size], remote); err != nil {
		return fail("rdma_buf")
	}
	if !cb.server {
		if cb.startMR, err = pd.RegMR(m[128+size:128+size+p.o.size], remote); err != nil {
			return fail("start_buf")
		}
	}
	rsge, _ := cb.recvMR.SGE(0, rpingInfoSize)
	ssge, _ := cb.sendMR.SGE(0, rpingInfoSize)
	cb.recvWR = []uverbs.RecvWR{{SGL: []uverbs.SGE{rsge}}}
	cb.sendWR = []uverbs.SendWR{{Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{ssge}}}
	// The RDMA SGE's length is set per request; its address and key are
	// the rdma buffer's (the C tool sets no bound of its own either: a
	// longer read than the buffer is the device's error to report).
	cb.rdmaWR = []uverbs.SendWR{{Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{{Addr: cb.rdmaMR.Addr(), LKey: cb.rdmaMR.LKey()}}}}
	p.dbg("allocated & registered buffers...\n")
	return 0
}

// freeBuffers is rping_free_buffers.
func (p *rping) freeBuffers(cb *rpingCB) {
	p.dbg("rping_free_buffers called on cb %p\n", cb)
	for _, mr := range []**uverbs.MR{&cb.recvMR, &cb.sendMR, &cb.rdmaMR, &cb.startMR, &cb.mem} {
		if *mr != nil {
			(*mr).Close()
			*mr = nil
		}
	}
}

// formatSend is rping_format_send: the send buffer names mr's memory.
func (p *rping) formatSend(cb *rpingCB, mr *uverbs.MR) {
	b := cb.sendMR.Buf()
	binary.BigEndian.PutUint64(b[0:], mr.Addr())
	binary.BigEndian.PutUint32(b[8:], mr.RKey())
	binary.BigEndian.PutUint32(b[12:], uint32(p.o.size))
	p.dbg("RDMA addr %x rkey %x len %d\n", mr.Addr(), mr.RKey(), p.o.size)
}

// startCQ starts the connection's cq_thread.
func (p *rping) startCQ(cb *rpingCB) {
	ctx, cancel := context.WithCancel(context.Background())
	cb.cqCancel, cb.cqDone = cancel, make(chan struct{})
	go p.cqThread(ctx, cb)
}

// joinCQ is pthread_join of the cq thread, which ends by itself once the
// disconnection flushes the receive; the wait is bounded, then cancelled.
func (p *rping) joinCQ(cb *rpingCB) {
	if cb.cqDone == nil {
		return
	}
	select {
	case <-cb.cqDone:
	case <-time.After(2 * time.Second):
	}
	cb.cqCancel()
	<-cb.cqDone
}

func (p *rping) postSend(cb *rpingCB, wr []uverbs.SendWR) int {
	if _, err := cb.qp.PostSend(wr); err != nil {
		p.errf("post send error %d\n", errnoRet(err))
		return errnoRet(err)
	}
	return 0
}

// testServer is rping_test_server: serve pings until the client goes.
func (p *rping) testServer(cb *rpingCB) int {
	rbuf := cb.rdmaMR.Buf()
	for {
		// Wait for the client's start buffer.
		if ok, ended := cb.await(stReadAdv, "wait for RDMA_READ_ADV"); !ok {
			return cb.testEnd(-1, ended)
		}
		p.dbg("server received sink adv\n")
		wr := &cb.rdmaWR[0]
		wr.Opcode, wr.RKey, wr.RemoteAddr, wr.SGL[0].Length = uverbs.WRRDMARead, cb.remoteRKey, cb.remoteAddr, cb.remoteLen
		if ret := p.postSend(cb, cb.rdmaWR); ret != 0 {
			return cb.testEnd(ret, false)
		}
		p.dbg("server posted rdma read req \n")
		if ok, ended := cb.await(stReadComplete, "wait for RDMA_READ_COMPLETE"); !ok {
			return cb.testEnd(-1, ended)
		}
		p.dbg("server received read complete\n")
		if p.o.verbose > 0 {
			fmt.Fprintf(p.stdout, "server ping data: %s\n", cstr(rbuf))
		}
		// Tell the client to go on.
		if ret := p.postSend(cb, cb.sendWR); ret != 0 {
			return cb.testEnd(ret, false)
		}
		p.dbg("server posted go ahead\n")
		// Wait for the client's rdma buffer.
		if ok, ended := cb.await(stWriteAdv, "wait for RDMA_WRITE_ADV"); !ok {
			return cb.testEnd(-1, ended)
		}
		p.dbg("server received sink adv\n")
		wr.Opcode, wr.RKey, wr.RemoteAddr = uverbs.WRRDMAWrite, cb.remoteRKey, cb.remoteAddr
		wr.SGL[0].Length = uint32(min(len(cstr(rbuf))+1, len(rbuf))) // strlen(rdma_buf) + 1
		p.dbg("rdma write from lkey %x laddr %x len %d\n", wr.SGL[0].LKey, wr.SGL[0].Addr, wr.SGL[0].Length)
		if ret := p.postSend(cb, cb.rdmaWR); ret != 0 {
			return cb.testEnd(ret, false)
		}
		if ok, ended := cb.await(stWriteComplete, "wait for RDMA_WRITE_COMPLETE"); !ok {
			return cb.testEnd(-1, ended)
		}
		p.dbg("server rdma write complete \n")
		// Tell the client to begin again.
		if ret := p.postSend(cb, cb.sendWR); ret != 0 {
			return cb.testEnd(ret, false)
		}
		p.dbg("server posted go ahead\n")
	}
}

// testEnd is how rping_test_server and rping_test_client end on a
// failure ret: 0 all the same when the peer disconnected, except where
// the run is ending (the wait gave up): -1.
func (cb *rpingCB) testEnd(ret int, ended bool) int {
	if ended {
		return -1
	}
	if cb.state.Load() == stDisconnected {
		return 0
	}
	return ret
}

// bindServer is rping_bind_server.
func (p *rping) bindServer(cb *rpingCB) int {
	if err := cb.id.Bind(netip.AddrPortFrom(p.o.addr, p.o.port)); err != nil {
		p.errf("rdma_bind_addr: %s\n", perrorText(err))
		return -1
	}
	p.dbg("rdma_bind_addr successful\n")
	p.dbg("rdma_listen\n")
	if err := cb.id.Listen(3); err != nil {
		p.errf("rdma_listen: %s\n", perrorText(err))
		return -1
	}
	return 0
}

// serveConn is the part rping_run_server and the persistent server's
// thread share: set up the connection of cb.child, accept it and serve
// it. It returns rping_test_server's result, or the setup's failure.
func (p *rping) serveConn(cb *rpingCB, report bool) int {
	child := cb.child
	if ret := p.setupQP(cb, child); ret != 0 {
		p.errf("setup_qp failed: %d\n", ret)
		return ret
	}
	if ret := p.setupBuffers(cb, child); ret != 0 {
		p.errf("rping_setup_buffers failed: %d\n", ret)
		p.freeQP(cb, child)
		return ret
	}
	cleanup := func() {
		p.freeBuffers(cb)
		p.freeQP(cb, child)
	}
	if _, err := cb.qp.PostRecv(cb.recvWR); err != nil {
		p.errf("ibv_post_recv failed: %d\n", errnoRet(err))
		cleanup()
		return errnoRet(err)
	}
	p.startCQ(cb)
	if ret := p.accept(cb); ret != 0 {
		p.errf("connect error %d\n", ret)
		cb.cqCancel()
		<-cb.cqDone
		cleanup()
		return ret
	}
	ret := p.testServer(cb)
	if ret != 0 && report {
		p.errf("rping server failed: %d\n", ret)
	}
	p.disconnect(cb, child)
	p.joinCQ(cb)
	cleanup()
	p.setCB(child, nil)
	child.Close()
	return ret
}

// connParam is rping_init_conn_param.
func (p *rping) connParam(cb *rpingCB) *rdmacm.ConnParam {
	cp := &rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	if p.o.selfQP {
		cp.QPNum = cb.qp.Num()
	}
	return cp
}

// selfModifyQP is rping_self_modify_qp: -q's QP to INIT, RTR and RTS with
// the attributes the connection manager gives.
func (p *rping) selfModifyQP(cb *rpingCB, id *rdmacm.ID) error {
	for _, st := range []uverbs.QPState{uverbs.QPStateInit, uverbs.QPStateRTR, uverbs.QPStateRTS} {
		a, m, err := id.InitQPAttr(st)
		if err != nil {
			return err
		}
		if err := cb.qp.Modify(&a, m); err != nil {
			return err
		}
	}
	return nil
}

// disconnect is rping_disconnect: -q's QP goes to ERR first (the ID's own
// QP goes there in Disconnect).
func (p *rping) disconnect(cb *rpingCB, id *rdmacm.ID) {
	if p.o.selfQP {
		if err := cb.qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateErr}, uverbs.QPAttrState); err != nil {
			return
		}
	}
	id.Disconnect()
}

// accept is rping_accept.
func (p *rping) accept(cb *rpingCB) int {
	p.dbg("accepting client connection request\n")
	var cp *rdmacm.ConnParam
	if p.o.selfQP {
		if err := p.selfModifyQP(cb, cb.child); err != nil {
			return errnoRet(err)
		}
		cp = p.connParam(cb)
	}
	if err := cb.child.Accept(cp); err != nil {
		p.errf("rdma_accept: %s\n", perrorText(err))
		return -1
	}
	if !cb.wait() {
		return -1
	}
	if s := cb.state.Load(); s == stError {
		p.errf("wait for CONNECTED state %d\n", s)
		return -1
	}
	return 0
}

// runServer is rping_run_server: one connection.
func (p *rping) runServer(cb *rpingCB) int {
	if ret := p.bindServer(cb); ret != 0 {
		return ret
	}
	if ok, _ := cb.await(stConnectRequest, "wait for CONNECT_REQUEST"); !ok {
		return -1
	}
	return p.serveConn(cb, true)
}

// runPersistentServer is rping_run_persistent_server: each connection is
// served by a goroutine of its own, until the event goroutine fails.
func (p *rping) runPersistentServer(listen *rpingCB) int {
	if ret := p.bindServer(listen); ret != 0 {
		return ret
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		if ok, _ := listen.await(stConnectRequest, "wait for CONNECT_REQUEST"); !ok {
			return -1
		}
		// clone_cb: the connection's own control block, which the
		// child's events go to from now on.
		cb := p.newCB(true)
		cb.state.Store(stConnectRequest)
		cb.id, cb.child = listen.id, listen.child
		p.setCB(cb.child, cb)
		listen.acceptReady <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ret := p.serveConn(cb, false); ret != 0 {
				// A failed set-up leaves the connection's ID (the C
				// tool leaks it); Close is safe to repeat.
				p.setCB(cb.child, nil)
				cb.child.Close()
			}
		}()
	}
}

// testClient is rping_test_client.
func (p *rping) testClient(cb *rpingCB) int {
	start := byte(65)
	sbuf, rbuf := cb.startMR.Buf(), cb.rdmaMR.Buf()
	for ping := int32(0); p.o.count == 0 || ping < p.o.count; ping++ {
		cb.state.Store(stReadAdv)
		start = rpingFill(sbuf, ping, start)
		p.formatSend(cb, cb.startMR)
		if ret := p.postSend(cb, cb.sendWR); ret != 0 {
			return cb.testEnd(ret, false)
		}
		// Wait for the server's go ahead.
		if ok, ended := cb.await(stWriteAdv, "wait for RDMA_WRITE_ADV"); !ok {
			return cb.testEnd(-1, ended)
		}
		p.formatSend(cb, cb.rdmaMR)
		if ret := p.postSend(cb, cb.sendWR); ret != 0 {
			return cb.testEnd(ret, false)
		}
		// Wait for the server to say the RDMA write is complete.
		if ok, ended := cb.await(stWriteComplete, "wait for RDMA_WRITE_COMPLETE"); !ok {
			return cb.testEnd(-1, ended)
		}
		if p.o.validate > 0 && string(sbuf) != string(rbuf) {
			p.errf("data mismatch!\n")
			return cb.testEnd(-1, false)
		}
		if p.o.verbose > 0 {
			fmt.Fprintf(p.stdout, "ping data: %s\n", cstr(rbuf))
		}
	}
	return 0
}

// connectClient is rping_connect_client.
func (p *rping) connectClient(cb *rpingCB) int {
	err := cb.id.Connect(p.connParam(cb))
	if err != nil {
		p.errf("rdma_connect: %s\n", perrorText(err))
		return -1
	}
	if ok, _ := cb.await(stConnected, "wait for CONNECTED"); !ok {
		return -1
	}
	if p.o.selfQP {
		if err := p.selfModifyQP(cb, cb.id); err != nil {
			p.errf("rping_modify_qp: %s\n", perrorText(err))
			return errnoRet(err)
		}
		if err := cb.id.Establish(); err != nil {
			p.errf("rdma_establish: %s\n", perrorText(err))
			return -1
		}
	}
	p.dbg("rdma_connect successful\n")
	return 0
}

// bindClient is rping_bind_client: resolve the address and the route.
func (p *rping) bindClient(cb *rpingCB) int {
	var src netip.AddrPort
	if p.o.src.IsValid() {
		src = netip.AddrPortFrom(p.o.src, 0)
	}
	if err := cb.id.ResolveAddr(src, netip.AddrPortFrom(p.o.addr, p.o.port), 2000*time.Millisecond); err != nil {
		p.errf("rdma_resolve_addr: %s\n", perrorText(err))
		return -1
	}
	if ok, _ := cb.await(stRouteResolved, "waiting for addr/route resolution"); !ok {
		return -1
	}
	p.dbg("rdma_resolve_addr - rdma_resolve_route successful\n")
	return 0
}

// runClient is rping_run_client.
func (p *rping) runClient(cb *rpingCB) int {
	if ret := p.bindClient(cb); ret != 0 {
		return ret
	}
	id := cb.id
	if ret := p.setupQP(cb, id); ret != 0 {
		p.errf("setup_qp failed: %d\n", ret)
		return ret
	}
	defer p.freeQP(cb, id)
	if ret := p.setupBuffers(cb, id); ret != 0 {
		p.errf("rping_setup_buffers failed: %d\n", ret)
		return ret
	}
	defer p.freeBuffers(cb)
	if _, err := cb.qp.PostRecv(cb.recvWR); err != nil {
		p.errf("ibv_post_recv failed: %d\n", errnoRet(err))
		return errnoRet(err)
	}
	p.startCQ(cb)
	defer p.joinCQ(cb)
	if ret := p.connectClient(cb); ret != 0 {
		p.errf("connect error %d\n", ret)
		cb.cqCancel()
		return ret
	}
	ret := p.testClient(cb)
	if ret != 0 {
		p.errf("rping client failed: %d\n", ret)
	}
	p.disconnect(cb, id)
	return ret
}
