package verbs

// rc_pingpong: rdma-core's ibv_rc_pingpong (libibverbs/examples/rc_pingpong.c,
// rdma-core 44) through purerdma's data path: the same flags, the same TCP
// exchange of LID, QPN, PSN and GID, the same RC connection and the same
// ping-pong of send/receive, so that either side may be the C tool or this
// one. Unlike the C tool it sends a pattern it can check (a message
// number, then bytes derived from it) and, with --verify, checks every byte
// of every message it receives: a purerdma peer's pattern, or the C
// tool's echo of ours (ibv_rc_pingpong sends from the buffer it receives
// into, so it sends back what it last received; its first message as a
// client is its 0x7b fill).

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/uverbs"
)

const (
	ppRecvWRID = 1
	ppSendWRID = 2
)

// ppUsage is ibv_rc_pingpong's usage(), which it prints on standard
// output, with purerdma's own options (-o and -t, on-demand paging and
// completion timestamps, are not implemented: refused as unknown).
const ppUsage = `Usage:
  ibv_rc_pingpong            start a server and wait for connection
  ibv_rc_pingpong <host>     connect to server at <host>

Options:
  -p, --port=<port>      listen on/connect to port <port> (default 18515)
  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)
  -i, --ib-port=<port>   use port <port> of IB device (default 1)
  -s, --size=<size>      size of message to exchange (default 4096)
  -m, --mtu=<size>       path MTU (default 1024)
  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)
  -n, --iters=<iters>    number of exchanges (default 1000)
  -l, --sl=<sl>          service level value
  -e, --events           sleep on CQ events (default poll)
  -g, --gid-idx=<gid index> local port gid index

purerdma only:
  --verify               check every byte of every message received
  --spin                 poll without ever yielding the CPU, as rdma-core's tool
                         does (the default yields between empty polls on rxe and siw)
  --timeout=<duration>   give up after this long (default: never)
  -h, --help             print this help
`

type ppOpts struct {
	ud      bool // ud_pingpong: a UD QP, an AH, the GRH before each message
	chk     bool // ud_pingpong -c: validate_buf, as the C tool does it
	port    int
	dev     string
	ibPort  int
	size    int
	mtu     int
	rxDepth int
	iters   int
	sl      int
	events  bool
	gidx    int
	verify  bool
	spin    bool
	timeout time.Duration
	server  string
}

func (env *Env) runRCPingpong(args []string, stdout, stderr io.Writer) error {
	o := ppOpts{port: 18515, ibPort: 1, size: 4096, mtu: 1024, rxDepth: 500, iters: 1000, gidx: -1}
	num := func(p *int) func(string) error {
		return func(v string) error { *p = int(cli.CStrtol(v)); return nil }
	}
	opts := []cli.Option{
		{Short: 'p', Long: "port", Arg: true, Set: func(v string) error {
			if o.port = int(cli.CStrtol(v)); o.port < 0 || o.port > 65535 {
				return cli.ErrUsage
			}
			return nil
		}},
		{Short: 'd', Long: "ib-dev", Arg: true, Set: func(v string) error { o.dev = v; return nil }},
		{Short: 'i', Long: "ib-port", Arg: true, Set: func(v string) error {
			if o.ibPort = int(cli.CStrtol(v)); o.ibPort < 1 {
				return cli.ErrUsage
			}
			return nil
		}},
		{Short: 's', Long: "size", Arg: true, Set: num(&o.size)},
		{Short: 'm', Long: "mtu", Arg: true, Set: num(&o.mtu)},
		{Short: 'r', Long: "rx-depth", Arg: true, Set: num(&o.rxDepth)},
		{Short: 'n', Long: "iters", Arg: true, Set: num(&o.iters)},
		{Short: 'l', Long: "sl", Arg: true, Set: num(&o.sl)},
		{Short: 'e', Long: "events", Set: func(string) error { o.events = true; return nil }},
		{Short: 'g', Long: "gid-idx", Arg: true, Set: num(&o.gidx)},
		{Long: "verify", Set: func(string) error { o.verify = true; return nil }},
		{Long: "spin", Set: func(string) error { o.spin = true; return nil }},
		{Long: "timeout", Arg: true, Set: func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				fmt.Fprintf(stderr, "ibv_rc_pingpong: bad --timeout %q\n", v)
				return cli.ErrUsage
			}
			o.timeout = d
			return nil
		}},
		{Short: 'h', Long: "help", Set: func(string) error { return cli.ErrHelp }},
	}
	operands, err := cli.GetoptOperands("ibv_rc_pingpong", args, opts, stderr)
	switch {
	case errors.Is(err, cli.ErrHelp):
		fmt.Fprint(stdout, ppUsage)
		return nil
	case err != nil || len(operands) > 1:
		fmt.Fprint(stdout, ppUsage)
		return cli.ExitError{Code: 1}
	}
	if len(operands) == 1 {
		o.server = operands[0]
	}
	mtu, ok := map[int]uverbs.MTU{256: uverbs.MTU256, 512: uverbs.MTU512, 1024: uverbs.MTU1024, 2048: uverbs.MTU2048, 4096: uverbs.MTU4096}[o.mtu]
	if !ok || o.size < 1 || o.rxDepth < 2 || o.iters < 1 {
		fmt.Fprint(stdout, ppUsage)
		return cli.ExitError{Code: 1}
	}
	if o.verify && o.size < 8 {
		fmt.Fprintln(stderr, "--verify needs messages of 8 bytes or more")
		return cli.ExitError{Code: 1}
	}
	ctx := context.Background()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if err := rcPingpong(ctx, &o, mtu, stdout); err != nil {
		fmt.Fprintln(stderr, "rc_pingpong:", err)
		return cli.ExitError{Code: 1}
	}
	return nil
}

// udUsage is ibv_ud_pingpong's usage() (rdma-core 44, which says the
// default size is 2048 where it is 1024), with purerdma's own options.
const udUsage = `Usage:
  ibv_ud_pingpong            start a server and wait for connection
  ibv_ud_pingpong <host>     connect to server at <host>

Options:
  -p, --port=<port>      listen on/connect to port <port> (default 18515)
  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)
  -i, --ib-port=<port>   use port <port> of IB device (default 1)
  -s, --size=<size>      size of message to exchange (default 2048)
  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)
  -n, --iters=<iters>    number of exchanges (default 1000)
  -l, --sl=<SL>          send messages with service level <SL> (default 0)
  -e, --events           sleep on CQ events (default poll)
  -g, --gid-idx=<gid index> local port gid index
  -c, --chk              validate received buffer

purerdma only:
  --verify               check every byte of every message received
  --spin                 poll without ever yielding the CPU, as rdma-core's tool
                         does (the default yields between empty polls on rxe and siw)
  --timeout=<duration>   give up after this long (default: never)
  -h, --help             print this help
`

// runUDPingpong is rdma-core's ibv_ud_pingpong
// (libibverbs/examples/ud_pingpong.c): rc_pingpong's exchange and loop
// over a UD QP (Q_Key 0x11111111), each side sending to the other's QP
// through an AH, each receive starting with the 40 bytes of GRH.
func (env *Env) runUDPingpong(args []string, stdout, stderr io.Writer) error {
	o := ppOpts{ud: true, port: 18515, ibPort: 1, size: 1024, rxDepth: 500, iters: 1000, gidx: -1}
	num := func(p *int) func(string) error {
		return func(v string) error { *p = int(cli.CStrtol(v)); return nil }
	}
	opts := []cli.Option{
		{Short: 'p', Long: "port", Arg: true, Set: func(v string) error {
			if o.port = int(cli.CStrtol(v)); o.port < 0 || o.port > 65535 {
				return cli.ErrUsage
			}
			return nil
		}},
		{Short: 'd', Long: "ib-dev", Arg: true, Set: func(v string) error { o.dev = v; return nil }},
		{Short: 'i', Long: "ib-port", Arg: true, Set: func(v string) error {
			if o.ibPort = int(cli.CStrtol(v)); o.ibPort < 1 {
				return cli.ErrUsage
			}
			return nil
		}},
		{Short: 's', Long: "size", Arg: true, Set: num(&o.size)},
		{Short: 'r', Long: "rx-depth", Arg: true, Set: num(&o.rxDepth)},
		{Short: 'n', Long: "iters", Arg: true, Set: num(&o.iters)},
		{Short: 'l', Long: "sl", Arg: true, Set: num(&o.sl)},
		{Short: 'e', Long: "events", Set: func(string) error { o.events = true; return nil }},
		{Short: 'g', Long: "gid-idx", Arg: true, Set: num(&o.gidx)},
		{Short: 'c', Long: "chk", Set: func(string) error { o.chk = true; return nil }},
		{Long: "verify", Set: func(string) error { o.verify = true; return nil }},
		{Long: "spin", Set: func(string) error { o.spin = true; return nil }},
		{Long: "timeout", Arg: true, Set: func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				fmt.Fprintf(stderr, "ibv_ud_pingpong: bad --timeout %q\n", v)
				return cli.ErrUsage
			}
			o.timeout = d
			return nil
		}},
		{Short: 'h', Long: "help", Set: func(string) error { return cli.ErrHelp }},
	}
	operands, err := cli.GetoptOperands("ibv_ud_pingpong", args, opts, stderr)
	switch {
	case errors.Is(err, cli.ErrHelp):
		fmt.Fprint(stdout, udUsage)
		return nil
	case err != nil || len(operands) > 1:
		fmt.Fprint(stdout, udUsage)
		return cli.ExitError{Code: 1}
	}
	if len(operands) == 1 {
		o.server = operands[0]
	}
	if o.size < 1 || o.rxDepth < 2 || o.iters < 1 {
		fmt.Fprint(stdout, udUsage)
		return cli.ExitError{Code: 1}
	}
	if o.verify && (o.size < 8 || o.chk) {
		fmt.Fprintln(stderr, "--verify needs messages of 8 bytes or more, and not -c (which overwrites bytes)")
		return cli.ExitError{Code: 1}
	}
	ctx := context.Background()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if err := rcPingpong(ctx, &o, 0, stdout); err != nil {
		fmt.Fprintln(stderr, "ud_pingpong:", err)
		return cli.ExitError{Code: 1}
	}
	return nil
}

// ppDest is what the two sides exchange over TCP.
type ppDest struct {
	lid, qpn, psn uint32
	gid           rdma.GID
}

// wire is the C tool's message: "%04x:%06x:%06x:%s" with the GID as 32 hex
// digits (gid_to_wire_gid: each 32-bit word through htobe32, that is the
// raw bytes in order), 52 bytes with the NUL (sizeof msg).
func (d ppDest) wire() []byte {
	m := fmt.Sprintf("%04x:%06x:%06x:%s", d.lid, d.qpn, d.psn, hex.EncodeToString(d.gid[:]))
	return append([]byte(m), 0)
}

func parseDest(b []byte) (ppDest, error) {
	var d ppDest
	if len(b) != 52 || b[4] != ':' || b[11] != ':' || b[18] != ':' {
		return d, fmt.Errorf("bad remote address %q", b)
	}
	for i, f := range []struct {
		p *uint32
		s string
	}{{&d.lid, string(b[0:4])}, {&d.qpn, string(b[5:11])}, {&d.psn, string(b[12:18])}} {
		v, err := strconv.ParseUint(f.s, 16, 32)
		if err != nil {
			return d, fmt.Errorf("bad remote address field %d %q", i, f.s)
		}
		*f.p = uint32(v)
	}
	if _, err := hex.Decode(d.gid[:], b[19:51]); err != nil {
		return d, fmt.Errorf("bad remote GID %q", b[19:51])
	}
	return d, nil
}

const ppMsgLen = 52

func ppExchangeClient(ctx context.Context, o *ppOpts, my ppDest) (ppDest, error) {
	// Unlike the C tool, wait up to 10 s for a server that does not
	// listen yet (a refused connection).
	var d net.Dialer
	var conn net.Conn
	var err error
	for try := 0; ; try++ {
		conn, err = d.DialContext(ctx, "tcp", net.JoinHostPort(o.server, strconv.Itoa(o.port)))
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || try == 100 || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return ppDest{}, fmt.Errorf("couldn't connect to %s:%d: %w", o.server, o.port, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write(my.wire()); err != nil {
		return ppDest{}, err
	}
	msg := make([]byte, ppMsgLen)
	if _, err := io.ReadFull(conn, msg); err != nil {
		return ppDest{}, fmt.Errorf("couldn't read remote address: %w", err)
	}
	if _, err := conn.Write([]byte("done\x00")); err != nil {
		return ppDest{}, err
	}
	return parseDest(msg)
}

func ppExchangeServer(ctx context.Context, o *ppOpts, my ppDest, connect func(ppDest) error) (ppDest, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", ":"+strconv.Itoa(o.port))
	if err != nil {
		return ppDest{}, fmt.Errorf("couldn't listen to port %d: %w", o.port, err)
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	conn, err := ln.Accept()
	ln.Close()
	if err != nil {
		return ppDest{}, fmt.Errorf("accept: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	msg := make([]byte, ppMsgLen)
	if _, err := io.ReadFull(conn, msg); err != nil {
		return ppDest{}, fmt.Errorf("couldn't read remote address: %w", err)
	}
	rem, err := parseDest(msg)
	if err != nil {
		return ppDest{}, err
	}
	if err := connect(rem); err != nil {
		return ppDest{}, err
	}
	if _, err := conn.Write(my.wire()); err != nil {
		return ppDest{}, err
	}
	done := make([]byte, 5)
	if _, err := io.ReadFull(conn, done); err != nil {
		return ppDest{}, fmt.Errorf("couldn't read \"done\": %w", err)
	}
	return rem, nil
}

// ppFill writes message k of the pattern: k, then bytes that depend on k
// and the position.
func ppFill(b []byte, k uint32) {
	binary.LittleEndian.PutUint32(b, k)
	binary.LittleEndian.PutUint32(b[4:], ^k)
	for i := 8; i < len(b); i++ {
		b[i] = byte(uint32(i)*31 + k*7 + 1)
	}
}

// ppCheck checks a received message against the pattern: it returns the
// message number it carries, or an error naming the first bad byte.
func ppCheck(b []byte) (uint32, error) {
	k := binary.LittleEndian.Uint32(b)
	if binary.LittleEndian.Uint32(b[4:]) != ^k {
		return 0, fmt.Errorf("header % x is not a message number and its complement", b[:8])
	}
	for i := 8; i < len(b); i++ {
		if want := byte(uint32(i)*31 + k*7 + 1); b[i] != want {
			return k, fmt.Errorf("message %d: byte %d is %#02x, want %#02x", k, i, b[i], want)
		}
	}
	return k, nil
}

func rcPingpong(ctx context.Context, o *ppOpts, mtu uverbs.MTU, stdout io.Writer) error {
	if o.dev == "" {
		devs, err := uverbs.Devices(nil)
		if err != nil {
			return err
		}
		if len(devs) == 0 {
			return errors.New("no IB devices found")
		}
		o.dev = devs[0].Name
	}
	c, err := uverbs.Open(o.dev, nil)
	if err != nil {
		return fmt.Errorf("couldn't get context for %s: %w", o.dev, err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		return fmt.Errorf("couldn't allocate PD: %w", err)
	}
	// Receives land in the first half, sends come from the second. A UD
	// receive starts with the 40-byte GRH; the message follows.
	grh := 0
	if o.ud {
		grh = 40
	}
	half := (grh + o.size + 4095) &^ 4095
	mr, err := pd.AllocMR(2*half, uverbs.AccessLocalWrite)
	if err != nil {
		return fmt.Errorf("couldn't register MR: %w", err)
	}
	rbuf, sbuf := mr.Buf()[grh:grh+o.size], mr.Buf()[half:half+o.size]
	for i := range rbuf {
		rbuf[i], sbuf[i] = 0x7b, 0x7b // rc_pingpong's memset(ctx->buf, 0x7b, size)
	}
	var ch *uverbs.CompChannel
	// waitCtx is GetEvent's context: one that is never done, so that
	// GetEvent waits in a blocking epoll_wait(2), as ibv_get_cq_event's read,
	// without the runtime poller and a wake-up registered per call. When
	// ctx ends (--timeout), closing the device context wakes it
	// (os.ErrClosed): the channel alone cannot be closed while the CQ
	// uses it.
	waitCtx := context.WithoutCancel(ctx)
	if o.events {
		defer eventWaitProcs()()
	}
	if o.events {
		if ch, err = c.CreateCompChannel(); err != nil {
			return fmt.Errorf("couldn't create completion channel: %w", err)
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
	}
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: o.rxDepth + 1, Channel: ch})
	if err != nil {
		return fmt.Errorf("couldn't create CQ: %w", err)
	}
	typ := uverbs.QPTypeRC
	if o.ud {
		typ = uverbs.QPTypeUD
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: typ, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: uint32(o.rxDepth), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return fmt.Errorf("couldn't create QP: %w", err)
	}
	if o.ud {
		err = qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateInit, Port: o.ibPort, QKey: udQKey},
			uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrQKey)
	} else {
		err = qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateInit, Port: o.ibPort},
			uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrAccessFlags)
	}
	if err != nil {
		return fmt.Errorf("failed to modify QP to INIT: %w", err)
	}
	rsge, _ := mr.SGE(0, grh+o.size)
	ssge, _ := mr.SGE(half, o.size)
	recv := []uverbs.RecvWR{{ID: ppRecvWRID, SGL: []uverbs.SGE{rsge}}}
	postRecv := func(n int) int {
		i := 0
		for ; i < n; i++ {
			if k, _ := qp.PostRecv(recv); k != 1 {
				break
			}
		}
		return i
	}
	routs := postRecv(o.rxDepth)
	if routs < o.rxDepth {
		return fmt.Errorf("couldn't post receive (%d)", routs)
	}
	if o.events {
		if err := cq.ReqNotify(false); err != nil {
			return fmt.Errorf("couldn't request CQ notification: %w", err)
		}
	}
	pa, err := c.QueryPort(o.ibPort)
	if err != nil {
		return fmt.Errorf("couldn't get port info: %w", err)
	}
	if mtu := 128 << pa.ActiveMTU; o.ud && o.size > mtu {
		return fmt.Errorf("requested size larger than port MTU (%d)", mtu)
	}
	my := ppDest{lid: uint32(pa.LID), qpn: qp.Num(), psn: rand.Uint32() & 0xffffff}
	if pa.LinkLayer != rdma.LinkLayerEthernet && pa.LID == 0 {
		return errors.New("couldn't get local LID")
	}
	if o.gidx >= 0 {
		g, err := c.QueryGID(o.ibPort, o.gidx)
		if err != nil {
			return fmt.Errorf("can't read sgid of index %d: %w", o.gidx, err)
		}
		my.gid = g.GID
	}
	if o.ud {
		// ud_pingpong.c's line has a colon before the GID.
		fmt.Fprintf(stdout, "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x: GID %s\n", my.lid, my.qpn, my.psn, my.gid)
	} else {
		fmt.Fprintf(stdout, "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", my.lid, my.qpn, my.psn, my.gid)
	}

	var ah *uverbs.AH
	connect := func(rem ppDest) error {
		if o.ud {
			return udConnect(pd, qp, o, my, rem, &ah)
		}
		a := &uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: mtu, DestQPNum: rem.qpn, RQPSN: rem.psn,
			MaxDestRdAtomic: 1, MinRNRTimer: 12,
			AH: uverbs.AHAttr{DLID: uint16(rem.lid), SL: uint8(o.sl), Port: o.ibPort}}
		// rc_pingpong goes global when the remote GID's interface id is set.
		if binary.BigEndian.Uint64(rem.gid[8:]) != 0 {
			a.AH.IsGlobal = true
			a.AH.GRH = uverbs.GlobalRoute{HopLimit: 1, DGID: rem.gid, SGIDIndex: uint8(max(o.gidx, 0))}
		}
		if err := qp.Modify(a, uverbs.QPAttrState|uverbs.QPAttrAV|uverbs.QPAttrPathMTU|uverbs.QPAttrDestQPN|
			uverbs.QPAttrRQPSN|uverbs.QPAttrMaxDestRdAtomic|uverbs.QPAttrMinRNRTimer); err != nil {
			return fmt.Errorf("failed to modify QP to RTR: %w", err)
		}
		a.State, a.Timeout, a.RetryCnt, a.RNRRetry, a.SQPSN, a.MaxRdAtomic = uverbs.QPStateRTS, 14, 7, 7, my.psn, 1
		if err := qp.Modify(a, uverbs.QPAttrState|uverbs.QPAttrTimeout|uverbs.QPAttrRetryCnt|
			uverbs.QPAttrRNRRetry|uverbs.QPAttrSQPSN|uverbs.QPAttrMaxQPRdAtomic); err != nil {
			return fmt.Errorf("failed to modify QP to RTS: %w", err)
		}
		return nil
	}
	var rem ppDest
	if o.server != "" {
		if rem, err = ppExchangeClient(ctx, o, my); err != nil {
			return err
		}
	} else if rem, err = ppExchangeServer(ctx, o, my, connect); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", rem.lid, rem.qpn, rem.psn, rem.gid)
	if o.server != "" {
		if err := connect(rem); err != nil {
			return err
		}
	}

	send := []uverbs.SendWR{{ID: ppSendWRID, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{ssge}}}
	if o.ud {
		send[0].AH, send[0].RemoteQPN, send[0].RemoteQKey = ah, rem.qpn, udQKey
	}
	scnt, rcnt := 0, 0
	var last uint32 // the number of the last message checked
	verified := 0
	postSend := func() error {
		if o.verify {
			ppFill(sbuf, uint32(scnt))
		}
		if o.chk {
			// validate_buf: the first byte of each page is 0
			// (i / page_size % sizeof(char)).
			for i := 0; i < o.size; i += sys.PageSize {
				sbuf[i] = 0
			}
		}
		if _, err := qp.PostSend(send); err != nil {
			return fmt.Errorf("couldn't post send: %w", err)
		}
		return nil
	}
	check := func() error {
		if o.chk {
			for i := 0; i < o.size; i += sys.PageSize {
				if rbuf[i] != 0 {
					return errors.New("incorrect received buffer")
				}
			}
		}
		if !o.verify {
			return nil
		}
		// The C tool's first message as a client is its fill.
		if rcnt == 0 && o.server == "" && rbuf[0] == 0x7b && rbuf[4] == 0x7b {
			for i, b := range rbuf {
				if b != 0x7b {
					return fmt.Errorf("message 0: byte %d is %#02x, want the 0x7b fill", i, b)
				}
			}
			verified++
			return nil
		}
		k, err := ppCheck(rbuf)
		if err != nil {
			return fmt.Errorf("receive %d: %w", rcnt, err)
		}
		// A purerdma peer's message r is r; the C tool's echo of ours is
		// r as a server's peer, r-1 as a client's.
		if k != uint32(rcnt) && k+1 != uint32(rcnt) || (verified > 0 && k < last) {
			return fmt.Errorf("receive %d carries message %d", rcnt, k)
		}
		last = k
		verified++
		return nil
	}
	pending := ppRecvWRID
	if o.server != "" {
		if err := postSend(); err != nil {
			return err
		}
		pending |= ppSendWRID
	}
	// Between empty polls the loop yields the CPU (sched_yield) when the
	// device is software: rxe's and siw's "hardware" is kernel code — the
	// responder and completer tasks, a workqueue on 6.12 and after, the
	// softirq of the veth or NIC below — that needs a CPU to produce the
	// completion this loop waits for. rdma-core's tool spins, which on a
	// machine with few CPUs keeps that work waiting for the spinner's time
	// slice to end. sched_yield returns at once when nothing else is
	// runnable, so it costs one system call per empty poll and nothing
	// more. Hardware needs no CPU to complete, so there the loop spins.
	yield := !o.spin && (c.DriverID() == rdma.DriverRXE || c.DriverID() == rdma.DriverSIW)
	start := time.Now()
	var wc [2]uverbs.WC
	spins := 0
	for rcnt < o.iters || scnt < o.iters {
		var ne int
		if o.events {
			got, err := ch.GetEvent(waitCtx)
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("after %d sends and %d receives: %w", scnt, rcnt, ctx.Err())
				}
				return fmt.Errorf("failed to get cq_event: %w", err)
			}
			if got != cq {
				return errors.New("CQ event for unknown CQ")
			}
			if err := cq.ReqNotify(false); err != nil {
				return fmt.Errorf("couldn't request CQ notification: %w", err)
			}
		}
		for {
			if ne, err = cq.Poll(wc[:]); err != nil {
				return fmt.Errorf("poll CQ failed: %w", err)
			}
			if ne > 0 || o.events {
				break
			}
			if spins++; spins&0xffff == 0 && ctx.Err() != nil {
				return fmt.Errorf("after %d sends and %d receives: %w", scnt, rcnt, ctx.Err())
			}
			if yield {
				sys.Yield()
			}
		}
		for _, w := range wc[:ne] {
			if w.Status != uverbs.WCSuccess {
				return fmt.Errorf("failed status %s (%d) for wr_id %d", w.Status, uint32(w.Status), w.ID)
			}
			switch w.ID {
			case ppSendWRID:
				scnt++
			case ppRecvWRID:
				if routs--; routs <= 1 {
					if routs += postRecv(o.rxDepth - routs); routs < o.rxDepth {
						return fmt.Errorf("couldn't post receive (%d)", routs)
					}
				}
				if err := check(); err != nil {
					return err
				}
				rcnt++
			default:
				return fmt.Errorf("completion for unknown wr_id %d", w.ID)
			}
			pending &^= int(w.ID)
			if scnt < o.iters && pending == 0 {
				if err := postSend(); err != nil {
					return err
				}
				pending = ppRecvWRID | ppSendWRID
			}
		}
	}
	usec := float64(time.Since(start).Microseconds())
	bytes := int64(o.size) * int64(o.iters) * 2
	fmt.Fprintf(stdout, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec/1e6, float64(bytes)*8/usec)
	fmt.Fprintf(stdout, "%d iters in %.2f seconds = %.2f usec/iter\n", o.iters, usec/1e6, usec/float64(o.iters))
	if o.verify {
		fmt.Fprintf(stdout, "verified %d messages of %d bytes: every byte\n", verified, o.size)
	}
	if err := qp.Close(); err != nil {
		return fmt.Errorf("couldn't destroy QP: %w", err)
	}
	if ah != nil {
		if err := ah.Close(); err != nil {
			return fmt.Errorf("couldn't destroy AH: %w", err)
		}
	}
	if err := cq.Close(); err != nil {
		return fmt.Errorf("couldn't destroy CQ: %w", err)
	}
	if err := mr.Close(); err != nil {
		return fmt.Errorf("couldn't deregister MR: %w", err)
	}
	return pd.Close()
}

// udQKey is ud_pingpong.c's Q_Key.
const udQKey = 0x11111111

// udConnect is ud_pingpong.c's pp_connect_ctx: the QP to RTR and RTS
// (with the local PSN), and an AH to the remote side, global when the
// remote GID's interface id is set.
func udConnect(pd *uverbs.PD, qp *uverbs.QP, o *ppOpts, my, rem ppDest, ah **uverbs.AH) error {
	if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState); err != nil {
		return fmt.Errorf("failed to modify QP to RTR: %w", err)
	}
	if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateRTS, SQPSN: my.psn}, uverbs.QPAttrState|uverbs.QPAttrSQPSN); err != nil {
		return fmt.Errorf("failed to modify QP to RTS: %w", err)
	}
	a := uverbs.AHAttr{DLID: uint16(rem.lid), SL: uint8(o.sl), Port: o.ibPort}
	if binary.BigEndian.Uint64(rem.gid[8:]) != 0 {
		a.IsGlobal = true
		a.GRH = uverbs.GlobalRoute{HopLimit: 1, DGID: rem.gid, SGIDIndex: uint8(max(o.gidx, 0))}
	}
	h, err := pd.CreateAH(a)
	if err != nil {
		return fmt.Errorf("failed to create AH: %w", err)
	}
	*ah = h
	return nil
}

// eventWaitProcs gives the runtime a second P while the event loop runs,
// when it has one only (the process may use one CPU: taskset, a cgroup
// quota) and GOMAXPROCS is not set, and returns what restores it.
//
// The loop waits for each event in a blocking epoll_wait(2) (GetEvent with a
// context that is never done). With a single P there is never an idle
// one, so the runtime's sysmon takes the P from the waiting thread at
// every wait longer than its 20 µs tick (retake) and hands it to another
// thread, which looks for work and parks; the waiting thread must take
// the P back when the event comes, and the wake-ups keep sysmon ticking
// at 20 µs. On one CPU those are extra thread switches and system calls
// at every event: an iteration of rc_pingpong -e pinned to one CPU under
// TCG took 2-7 ms against C's 0.6 ms, and 6.0k user and 58-72k kernel
// instructions, against 4.5-4.6k and 42-45k with two Ps (C: 1.3k and
// 25k). With an idle second P, sysmon leaves a thread blocked in a system
// call alone for 10 ms and backs off to ticks of 10 ms.
func eventWaitProcs() (restore func()) {
	if runtime.GOMAXPROCS(0) != 1 || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	runtime.GOMAXPROCS(2)
	return func() { runtime.GOMAXPROCS(1) }
}
