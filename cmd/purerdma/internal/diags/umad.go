package diags

// umad send / umad serve: vendor-class MADs (range 2, with an OUI) between
// two ports, through package umad. rdma-core has no direct equivalent
// (ibping is the closest, with its own vendor class 0x32 protocol).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
)

const umadToolUsage = `Usage: umad send  [options] [--dgid GID | --dlid LID]
       umad serve [options]

umad serve registers a replier for a vendor class (range 2, 0x30–0x4f) and
an OUI on a local port and answers every request it receives with the
response method (request method | 0x80), the same TID, and its data
(or --data); a resent request whose first answer the kernel is still
sending is counted as already answered (the kernel refuses a second
answer then). umad send sends requests (method Get by default) and prints
each response and the round-trip time; a request nobody answers comes
back as a timeout after its retries, which is an error.

Options (both):
  -C, --Ca <ca>          local device (default: as libibumad chooses)
  -P, --Port <port>      local port (default: as libibumad chooses)
      --class <class>    vendor class, 0x30–0x4f (default 0x30)
      --oui <oui>        24-bit OUI (default 0x001405, OpenIB)
      --method <m>       the request method (default 0x01, Get)
      --data <text>      data to send (send) or to answer with (serve)
  -c, --count <n>        requests to send (default 1) / to answer (default: until interrupted)
  -q, --quiet            print only the summary
Options (send):
      --dgid <gid>       destination GID (RoCE needs one; default: the local port's GID 0 on RoCE)
      --dlid <lid>       destination LID (InfiniBand; default: the local port's LID)
  -t, --timeout <ms>     response timeout per try (default 1000)
      --retries <n>      resends after a timeout (default 3)
`

type umadToolOpts struct {
	ca, dgid, data    string
	port, count, dlid int
	class, method     uint8
	oui               uint32
	timeout           time.Duration
	retries           int
	quiet, countGiven bool
}

func umadToolParse(prog string, args []string, stderr io.Writer) (*umadToolOpts, error) {
	o := &umadToolOpts{class: 0x30, oui: 0x001405, method: 0x01, count: 1, dlid: -1, timeout: time.Second, retries: 3}
	num := func(name, s string, max uint64) (uint64, error) {
		n, err := strconv.ParseUint(s, 0, 64)
		if err != nil || n > max {
			return 0, fmt.Errorf("invalid value %q for %s", s, name)
		}
		return n, nil
	}
	pos, err := cli.GetoptOperands(prog, args, []cli.Option{
		{Short: 'C', Long: "Ca", Arg: true, Set: func(v string) error { o.ca = v; return nil }},
		{Short: 'P', Long: "Port", Arg: true, Set: func(v string) error {
			n, err := num("--Port", v, 255)
			o.port = int(n)
			return err
		}},
		{Long: "class", Arg: true, Set: func(v string) error {
			n, err := num("--class", v, 0x4f)
			if err == nil && n < 0x30 {
				err = fmt.Errorf("class %#x is not in vendor range 2 (0x30–0x4f)", n)
			}
			o.class = uint8(n)
			return err
		}},
		{Long: "oui", Arg: true, Set: func(v string) error {
			n, err := num("--oui", v, 1<<24-1)
			if err == nil && n == 0 {
				err = errors.New("the OUI must not be 0")
			}
			o.oui = uint32(n)
			return err
		}},
		{Long: "method", Arg: true, Set: func(v string) error {
			n, err := num("--method", v, 0x7f)
			if err == nil && n == 0 {
				err = errors.New("method 0 is reserved")
			}
			o.method = uint8(n)
			return err
		}},
		{Long: "data", Arg: true, Set: func(v string) error { o.data = v; return nil }},
		{Short: 'c', Long: "count", Arg: true, Set: func(v string) error {
			n, err := num("--count", v, 1<<30)
			o.count, o.countGiven = int(n), true
			return err
		}},
		{Short: 'q', Long: "quiet", Set: func(string) error { o.quiet = true; return nil }},
		{Long: "dgid", Arg: true, Set: func(v string) error { o.dgid = v; return nil }},
		{Long: "dlid", Arg: true, Set: func(v string) error {
			n, err := num("--dlid", v, 0xffff)
			o.dlid = int(n)
			return err
		}},
		{Short: 't', Long: "timeout", Arg: true, Set: func(v string) error {
			n, err := num("--timeout", v, 1<<31)
			if err == nil && n == 0 {
				err = errors.New("the timeout must be at least 1 ms")
			}
			o.timeout = time.Duration(n) * time.Millisecond
			return err
		}},
		{Long: "retries", Arg: true, Set: func(v string) error {
			n, err := num("--retries", v, 1<<20)
			o.retries = int(n)
			return err
		}},
		{Short: 'h', Long: "help", Set: func(string) error { return errHelp }},
	}, stderr)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, fmt.Errorf("unknown argument %s", pos[0])
	}
	if len(o.data) > umad.VendorDataSize {
		return nil, fmt.Errorf("--data holds at most %d bytes", umad.VendorDataSize)
	}
	return o, nil
}

func (env *Env) runUmadTool(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "send" && args[0] != "serve") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, umadToolUsage)
			return nil
		}
		if len(args) == 0 {
			fmt.Fprintln(stderr, "umad: missing subcommand: send or serve")
		} else {
			fmt.Fprintf(stderr, "umad: unknown subcommand %q: send or serve\n", args[0])
		}
		fmt.Fprint(stderr, umadToolUsage)
		return cli.ExitError{Code: 2}
	}
	o, err := umadToolParse("umad "+args[0], args[1:], stderr)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, umadToolUsage)
		return nil
	}
	if err != nil {
		var ge cli.GetoptError
		if !errors.As(err, &ge) { // getopt said it already
			fmt.Fprintf(stderr, "umad %s: %v\n", args[0], err)
		}
		return cli.ExitError{Code: 2}
	}
	h := env.host()
	port, err := env.openPort(h, o.ca, o.port)
	if err != nil {
		return err
	}
	defer port.Close()
	if args[0] == "serve" {
		if !o.countGiven {
			o.count = -1
		}
		return umadServe(port, o, stdout)
	}
	local, err := h.LookupPort(port.CA(), port.PortNum())
	if err != nil {
		return err
	}
	return umadSend(port, local, o, stdout)
}

// umadTextData renders vendor data as text: up to the first NUL, with
// non-printable bytes escaped.
func umadTextData(d []byte) string {
	if i := bytes.IndexByte(d, 0); i >= 0 {
		d = d[:i]
	}
	return strconv.Quote(string(d))
}

func umadServe(port *umad.Port, o *umadToolOpts, stdout io.Writer) error {
	agent, err := port.RegisterOUI(umad.MgmtClass(o.class), 0, o.oui, umad.MethodMaskOf(umad.Method(o.method)))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "serving class %#02x OUI %#06x method %#02x on %s (agent %d)\n", o.class, o.oui, o.method, port, agent)
	// Close on SIGINT/SIGTERM, which ends the blocking receive.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigc)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-sigc:
			port.Close()
		case <-stop:
		}
	}()
	pkt := umad.NewPacket()
	var m umad.VendorMAD
	served, repeats := 0, 0
	var answered umadTIDRing
	for o.count < 0 || served < o.count {
		if _, err := port.Recv(pkt, -1); err != nil {
			if errors.Is(err, os.ErrClosed) {
				break
			}
			return err
		}
		if pkt.Status() != 0 || m.Decode(pkt.MAD()[:min(pkt.Len(), umad.MADSize)]) != nil || m.Header.Method.IsResponse() {
			continue
		}
		if !o.quiet {
			fmt.Fprintf(stdout, "request tid %#016x method %#02x data %s from %v\n",
				m.Header.TransactionID, uint8(m.Header.Method), umadTextData(m.Data[:]), pkt.Addr())
		}
		m.Header.Method = m.Header.Method.Response()
		if o.data != "" {
			clear(m.Data[:])
			copy(m.Data[:], o.data)
		}
		if err := pkt.SetMAD(m.Append(pkt.MAD()[:0])); err != nil {
			return err
		}
		tid := m.Header.TransactionID
		if err := port.Send(agent, pkt, 0, 0); err != nil {
			// A retransmitted request answered while the first answer
			// (same TID, same destination) is still on the port's send
			// list: the kernel refuses the second answer with EINVAL
			// (user_mad.c, ib_umad_write's is_duplicate). The requester
			// gets the first one; the request is already answered.
			if errors.Is(err, syscall.EINVAL) && answered.has(tid) {
				repeats++
				if !o.quiet {
					fmt.Fprintf(stdout, "request tid %#016x repeated: already answered (the kernel refused a second answer while the first is still being sent)\n", tid)
				}
				continue
			}
			return err
		}
		answered.add(tid)
		served++
	}
	if repeats > 0 {
		fmt.Fprintf(stdout, "answered %d requests (%d repeats already answered)\n", served, repeats)
	} else {
		fmt.Fprintf(stdout, "answered %d requests\n", served)
	}
	return nil
}

// umadTIDRing remembers the TIDs of the last answers sent, to tell the
// kernel's duplicate refusal (EINVAL for an answer whose TID is still
// being sent) from an answer it refuses for another reason.
type umadTIDRing struct {
	tids [256]uint64
	n    int
}

func (r *umadTIDRing) add(tid uint64) {
	r.tids[r.n%len(r.tids)] = tid
	r.n++
}

func (r *umadTIDRing) has(tid uint64) bool {
	for i := 0; i < min(r.n, len(r.tids)); i++ {
		if r.tids[i] == tid {
			return true
		}
	}
	return false
}

func umadSend(port *umad.Port, local *umad.CAPort, o *umadToolOpts, stdout io.Writer) error {
	agent, err := port.RegisterOUI(umad.MgmtClass(o.class), 0, o.oui, umad.MethodMask{})
	if err != nil {
		return err
	}
	pkt := umad.NewPacket()
	var addr umad.Addr
	addr.QPN, addr.QKey = 1, umad.QP1QKey
	roce := local.LinkLayer == rdma.LinkLayerEthernet
	switch {
	case o.dgid != "":
		a, err := netip.ParseAddr(o.dgid)
		if err != nil || !a.Is6() {
			return fmt.Errorf("invalid GID %q", o.dgid)
		}
		addr.GRHPresent, addr.GRH.GID = true, a.As16()
	case roce:
		addr.GRHPresent = true // the local port's GID 0: a loopback
		g := umadGID(local)
		addr.GRH.GID = g
	}
	if addr.GRHPresent {
		addr.GRH.HopLimit = 64
	}
	switch {
	case o.dlid >= 0:
		addr.LID = uint16(o.dlid)
	case !addr.GRHPresent:
		addr.LID = uint16(ibU32(local.LID))
	}
	var rtts time.Duration
	var m umad.VendorMAD
	for i := 1; i <= o.count; i++ {
		m = umad.VendorMAD{Header: umad.NewMADHeader(umad.MgmtClass(o.class), umad.Method(o.method), 0, 0, uint64(i)), OUI: o.oui}
		copy(m.Data[:], o.data)
		if err := pkt.SetMAD(m.Append(pkt.MAD()[:0])); err != nil {
			return err
		}
		if err := pkt.SetAddress(addr); err != nil {
			return err
		}
		start := time.Now()
		if err := port.Send(agent, pkt, o.timeout, o.retries); err != nil {
			return err
		}
		for {
			if _, err := port.Recv(pkt, time.Duration(o.retries+1)*o.timeout+time.Second); err != nil {
				return err
			}
			if uint32(m.Header.TransactionID) == uint32(tidOf(pkt)) {
				break
			}
		}
		rtt := time.Since(start)
		if pkt.TimedOut() {
			if all := time.Duration(o.retries+1) * o.timeout; rtt < all {
				// Before the tries' timeouts could pass: the fabric
				// reported them lost (ibsim does, at once).
				return fmt.Errorf("request %d (tid %#x): no response after %d tries in %v, reported lost before their timeouts (ibsim: an address it cannot route, or a port's error rate): %w",
					i, i, o.retries+1, rtt.Round(time.Millisecond), umad.ErrTimeout)
			}
			return fmt.Errorf("request %d (tid %#x): no response after %d tries %v apart: %w", i, i, o.retries+1, o.timeout, umad.ErrTimeout)
		}
		var r umad.VendorMAD
		if err := r.Decode(pkt.MAD()[:min(pkt.Len(), umad.MADSize)]); err != nil {
			return fmt.Errorf("request %d: bad response: %w", i, err)
		}
		rtts += rtt
		if !o.quiet {
			fmt.Fprintf(stdout, "response tid %#016x method %#02x status %v data %s from %v: %v\n",
				r.Header.TransactionID, uint8(r.Header.Method), r.Header.Status, umadTextData(r.Data[:]), pkt.Addr(), rtt)
		}
		if st := r.Header.Status; st != 0 {
			why := ""
			if c := st.Code(); c == umad.StatusMethodAttrUnsupported || c == umad.StatusMethodUnsupported {
				// ib_mad.c, ib_mad_recv_done: a request no agent
				// takes is answered by the kernel's MAD layer
				// (generate_unmatched_resp) with this status.
				why = fmt.Sprintf(": nobody there serves class %#02x OUI %#06x method %#02x (run umad serve with them on the destination port)", o.class, o.oui, o.method)
			}
			return fmt.Errorf("request %d (tid %#x): the answer from %v carries MAD status %v%s", i, i, pkt.Addr(), st, why)
		}
	}
	if o.count > 0 {
		fmt.Fprintf(stdout, "%d round trips, average %v\n", o.count, rtts/time.Duration(o.count))
	}
	return nil
}

func tidOf(pkt *umad.Packet) uint64 {
	m := pkt.MAD()
	if len(m) < 16 {
		return 0
	}
	var v uint64
	for _, b := range m[8:16] {
		v = v<<8 | uint64(b)
	}
	return v
}

func umadGID(p *umad.CAPort) [16]byte {
	var g [16]byte
	for i := 0; i < 8; i++ {
		g[i] = byte(p.GIDPrefix >> (56 - 8*i))
		g[8+i] = byte(p.PortGUID >> (56 - 8*i))
	}
	return g
}
