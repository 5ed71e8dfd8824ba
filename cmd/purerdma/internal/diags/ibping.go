package diags

// ibping: ping a port over the vendor class 0x32 (OpenIB's ping class,
// range 2, with an OUI), like infiniband-diags' ibping (rdma-core 44,
// infiniband-diags/ibping.c). The client sends Gets through libibmad's
// RPC and prints a line a pong and the statistics; the server (-S)
// answers every request with its host and domain name. On an ibsim
// fabric the server attaches as its node's SM client
// (umadenv.OpenServer), the one client ibsim hands vendor requests to; a
// C server there gets none (libumad2sim's clients are not SM clients).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/purerdma/rdma/cmd/internal/umadenv"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
)

const (
	ibpingClass   = umad.MgmtClass(0x32) // IB_VENDOR_OPENIB_PING_CLASS
	ibpingOUI     = 0x001405             // IB_OPENIB_OUI
	vendor2Offset = 40                   // IB_VENDOR_RANGE2_DATA_OFFS
	vendor2Size   = umad.MADSize - vendor2Offset
)

type ibpingOpts struct {
	count  uint32
	flood  bool
	oui    uint32
	server bool
}

// ibpingParse reads ibping's command line: ibdiag_common's options but
// -D, -K and -y (ibping excludes them), and ibping's own; it returns the
// usage too.
func ibpingParse(args []string, stderr io.Writer) (*fabricOpts, *ibpingOpts, diagUsage, error) {
	p := &ibpingOpts{count: ^uint32(0), oui: ibpingOUI}
	o, usage, err := parseDiagSpec(diagSpec{
		tool: "ibping", exclude: "DKy", usageArgs: "<dest lid|guid>",
		custom: []diagOpt{
			{"count", 'c', true, "<num>", "stop after count packets", func(v string) error { p.count = uint32(cli.CStrtol(v)); return nil }},
			{"flood", 'f', false, "", "flood destination", func(string) error { p.flood = true; return nil }},
			{"oui", 'o', true, "", "use specified OUI number", func(v string) error { p.oui = uint32(cli.CStrtol(v)); return nil }},
			{"Server", 'S', false, "", "start in server mode", func(string) error { p.server = true; return nil }},
		},
	}, args, stderr)
	return o, p, usage, err
}

func (env *Env) runIBPing(args []string, stdout, stderr io.Writer) error {
	o, p, usage, err := ibpingParse(args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, "ibping", usage, o, err)
	}
	if len(o.pos) == 0 && !p.server {
		return fabricHelp(stderr, usage.String())
	}
	log := o.madLog(stderr)
	open := umadenv.Open
	if p.server {
		open = umadenv.OpenServer
	}
	port, err := open(env.host(), env.IBSim, env.UmadDebug, o.ca, max(o.port, 0))
	if err != nil {
		return openFailed(stdout, stderr, "ibping", o, err)
	}
	defer port.Close()
	exit := func(format string, args ...any) error {
		return ibexit(stdout, "ibping", o.debug, "main", format, args...)
	}
	if p.server {
		agent, err := port.RegisterOUI(ibpingClass, 0, p.oui, allMethods())
		if err != nil {
			fmt.Fprintf(stderr, "ibping: %v\n", err)
			return exit("can't serve class %d on this port", ibpingClass)
		}
		return env.ibpingServe(port, agent, log)
	}
	c, err := newSMPClient(port, o.timeout, o.tries(), log)
	if err != nil {
		return openFailed(stdout, stderr, "ibping", o, err)
	}
	agent, err := port.RegisterOUI(ibpingClass, 0, p.oui, umad.MethodMask{})
	if err != nil {
		fmt.Fprintf(stderr, "ibping: %v\n", err)
		return exit("can't register ping class %d on this port", ibpingClass)
	}
	dest, err := env.resolveDest(c, o, o.common.dest, o.pos[0])
	if err != nil {
		return exit("can't resolve destination port %s", o.pos[0])
	}
	return ibpingClient(c, agent, dest, p, log, stdout)
}

// allMethods is libibmad's method mask of a server registered without
// one: every bit set.
func allMethods() umad.MethodMask {
	var ms []umad.Method
	for m := 0; m < 128; m++ {
		ms = append(ms, umad.Method(m))
	}
	return umad.MethodMaskOf(ms...)
}

// ibpingTime is ibping.c's time_stamp: seconds in microseconds plus
// nanoseconds in units of 10 µs, on the monotonic clock (here counted
// from its first use; the stamps are only ever subtracted).
func ibpingTime() uint64 {
	pingEpochOnce.Do(func() { pingEpoch = time.Now() })
	t := time.Since(pingEpoch)
	return uint64(t/time.Second)*1000000 + uint64(t%time.Second)/10000
}

var (
	pingEpochOnce sync.Once
	pingEpoch     time.Time
)

// ibpingClient is ibping.c's client loop and report.
func ibpingClient(c *smpClient, agent umad.AgentID, dest smpDest, p *ibpingOpts, log *madLog, stdout io.Writer) error {
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigc)
	var lastHost string
	var ntrans, replied, lost, total, maxRTT uint64
	minRTT := ^uint64(0)
	start := ibpingTime()
	rpc := c.rpc
	rpc.fn = "mad_rpc_rmpp"
	report := func() error {
		elapsed := ibpingTime() - start
		var b strings.Builder
		fmt.Fprintf(&b, "\n--- %s (%s) ibping statistics ---\n", lastHost, dest)
		loss := uint64(0)
		if lost != 0 {
			loss = lost * 100 / ntrans
		}
		fmt.Fprintf(&b, "%d packets transmitted, %d received, %d%% packet loss, time %d ms\n", ntrans, replied, loss, elapsed/1000)
		mn, avg := uint64(0), uint64(0)
		if minRTT != ^uint64(0) {
			mn = minRTT
		}
		if replied > 0 {
			avg = total / replied
		}
		fmt.Fprintf(&b, "rtt min/avg/max = %d.%03d/%d.%03d/%d.%03d ms\n", mn/1000, mn%1000, avg/1000, avg%1000, maxRTT/1000, maxRTT%1000)
		_, err := io.WriteString(stdout, b.String())
		return err
	}
	for count := p.count; count > 0; count-- {
		select {
		case <-sigc:
			return report()
		default:
		}
		ntrans++
		log.dbg("ibping", "Ping..")
		t0 := ibpingTime()
		c.tid++
		m := make([]byte, umad.MADSize)
		m[0], m[1], m[2], m[3] = 1, byte(ibpingClass), 1, byte(umad.MethodGet)
		binary.BigEndian.PutUint64(m[8:], uint64(c.tid))
		m[37], m[38], m[39] = byte(p.oui>>16), byte(p.oui>>8), byte(p.oui)
		r, err := rpc.do(agent, m, func(pk *umad.Packet) error { return pk.SetAddr(dest.lid, 1, dest.sl, 0x80010000) }, dest.String())
		if err != nil || len(r) < umad.MADSize {
			log.dbg("main", "ibping to %s failed", dest)
			lost++
		} else {
			rtt := ibpingTime() - t0
			host := cString(r[vendor2Offset:])
			if lastHost == "" {
				lastHost = host
			}
			if !p.flood {
				fmt.Fprintf(stdout, "Pong from %s (%s): time %d.%03d ms\n", host, dest, rtt/1000, rtt%1000)
			}
			minRTT, maxRTT, total = min(minRTT, rtt), max(maxRTT, rtt), total+rtt
			replied++
		}
		if !p.flood {
			select {
			case <-sigc:
				return report()
			case <-time.After(time.Second):
			}
		}
	}
	return report()
}

// hostAndDomain is ibping.c's get_host_and_domain: "host.domain" (the
// domain getdomainname gives, "(none)" where none is set; no dot when it
// is empty), cut to the data area of a vendor MAD.
func hostAndDomain() []byte {
	b := make([]byte, vendor2Size)
	host, err := os.Hostname()
	if err != nil {
		host = "?hostname?"
	}
	n := copy(b[:vendor2Size-1], host)
	if n >= vendor2Size-1 {
		return b
	}
	var u syscall.Utsname
	dom := "?domainname?"
	if syscall.Uname(&u) == nil {
		var d []byte
		for _, c := range u.Domainname {
			if c == 0 {
				break
			}
			d = append(d, byte(c))
		}
		dom = string(d)
	}
	if dom == "" {
		return b
	}
	b[n] = '.'
	copy(b[n+1:vendor2Size-1], dom)
	return b
}

// ibpingServe is ibping.c's ibping_serv: every request received is
// answered (libibmad's mad_respond_via: the response method, status 0,
// back to its sender) with the host and domain name in its data. It
// serves until SIGINT or SIGTERM (the C server dies of them; ours exits
// with 128 plus the signal's number), or until env.serverStop closes.
func (env *Env) ibpingServe(port *umad.Port, agent umad.AgentID, log *madLog) error {
	data := hostAndDomain()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigc)
	done := make(chan struct{})
	defer close(done)
	var got os.Signal
	go func() {
		select {
		case s := <-sigc:
			got = s
			port.Close()
		case <-env.serverStop:
			port.Close()
		case <-done:
		}
	}()
	log.dbg("ibping_serv", "starting to serve...")
	pkt := umad.NewPacket()
	for {
		if _, err := port.Recv(pkt, -1); err != nil {
			if errors.Is(err, os.ErrClosed) {
				break
			}
			return err
		}
		if pkt.Status() != 0 || pkt.Len() < umad.MADSize {
			continue
		}
		m := append([]byte(nil), pkt.MAD()[:umad.MADSize]...)
		copy(m[vendor2Offset:], data)
		log.dbg("ibping_serv", "Pong: %s", cString(data))
		method := umad.Method(m[3])
		if method == umad.MethodSet {
			method = umad.MethodGet
		}
		if method != umad.Method(0x03) { // Send
			method |= 0x80
		}
		m[3] = byte(method)
		m[4], m[5] = 0, 0 // status
		if err := pkt.SetMAD(m); err != nil {
			return err
		}
		if err := port.Send(agent, pkt, 0, 0); err != nil {
			log.dbg("ibping_serv", "respond failed")
		}
	}
	log.dbg("ibping_serv", "server out")
	if s, ok := got.(syscall.Signal); ok {
		return cli.ExitError{Code: 128 + int(s)}
	}
	return nil
}
