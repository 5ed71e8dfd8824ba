package diags

// ibnetdiscover: the fabric's topology, like infiniband-diags'
// ibnetdiscover (rdma-core 44, infiniband-diags/ibnetdiscover.c, its
// default output), from package umad/netdisc. The output is the C
// tool's byte for byte but for the "generated on" time.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
	"github.com/purerdma/rdma/umad/netdisc"
)

const ibnetdiscoverUsage = `Usage: ibnetdiscover [options]

Like infiniband-diags' ibnetdiscover: walks the fabric with
directed-route SMPs from the local port (many in flight at once) and
prints its topology in ibnetdiscover's default format.

Options:
  -C, --Ca <ca>        local device
  -P, --Port <port>    local port
  -t, --timeout <ms>   response timeout per SMP try (default 200)
      --outstanding <n>  SMPs in flight at once (default 64)
  -h, --help           this help

With PURERDMA_IBSIM=SOCKET:NODE the tool runs on an ibsim fabric
(docs/ibsim.md).
`

// discoverFabric walks the fabric from the open port p.
func discoverFabric(p *umad.Port, o *fabricOpts, outstanding int) (*netdisc.Fabric, error) {
	opts := netdisc.Options{MaxOutstanding: outstanding, Timeout: o.timeout, Retries: o.retries}
	if isSim(p) {
		// libibnetdisc waits for every answer (umad_recv with no
		// timeout), and over libumad2sim no timeout ever comes: a
		// stopped ibsim delays the scan, it does not end it.
		opts.Idle = -1
	}
	return netdisc.Discover(context.Background(), p, opts)
}

// parseDiscoverOpts reads the discovery tools' options: the fabric
// tools' and --outstanding; -t defaults to 200 ms and the kernel retries
// a try 3 times (libibnetdisc's DEFAULT_RETRIES).
func parseDiscoverOpts(tool string, args []string, stderr io.Writer) (*fabricOpts, int, error) {
	outstanding := 64
	o, err := parseFabricOpts(tool, false, args, stderr, cli.Option{Long: "outstanding", Arg: true, Set: func(v string) (err error) {
		outstanding, err = strtoulArg(v, "outstanding")
		if err == nil && outstanding == 0 {
			err = errors.New("--outstanding must be at least 1")
		}
		return err
	}}, cli.Option{Short: 'y', Long: "m_key", Arg: true, Set: func(v string) error {
		// The M_Key of the requests (ibdiag_common's -y, strtoull base
		// 0); the fabrics we walk check none, so it is read, not sent.
		if _, err := strconv.ParseUint(v, 0, 64); err != nil {
			return fmt.Errorf("bad M_Key %q", v)
		}
		return nil
	}})
	if err != nil {
		return nil, 0, err
	}
	if !o.timeoutSet {
		o.timeout = 200 * time.Millisecond
	}
	o.retries = 3
	if len(o.pos) > 0 {
		return nil, 0, fmt.Errorf("unexpected argument %s", o.pos[0])
	}
	return o, outstanding, nil
}

// discoverTool is the start of a discovery tool: its options (usage on
// -h, or after a bad option, with exit status 2), then the fabric. A nil
// fabric means the tool is done and returns err. A port that does not
// open or a scan that fails ends the tool as the C tool ends: ibnetdiscover
// with IBEXIT("discover failed\n"), iblinkinfo with "discover failed" on
// standard error and exit status 1; our explanation follows on standard
// error.
func (env *Env) discoverTool(tool, usage string, args []string, stdout, stderr io.Writer) (*netdisc.Fabric, error) {
	o, outstanding, err := parseDiscoverOpts(tool, args, stderr)
	if errors.Is(err, errHelp) {
		return nil, fabricHelp(stderr, usage)
	}
	if err != nil {
		return nil, fabricUsage(stderr, tool, usage, err)
	}
	p, err := env.openPort(env.host(), o.ca, o.port)
	if err != nil {
		return nil, openFailed(stdout, stderr, tool, o, err)
	}
	defer p.Close()
	f, err := discoverFabric(p, o, outstanding)
	if err != nil {
		if tool == "iblinkinfo" {
			fmt.Fprintf(stderr, "discover failed\n%s: %v\n", tool, err)
			return nil, cli.ExitError{Code: 1}
		}
		fmt.Fprintf(stderr, "%s: %v\n", tool, err)
		return nil, ibexit(stdout, tool, false, "main", "discover failed\n")
	}
	return f, nil
}

func (env *Env) runIBNetDiscover(args []string, stdout, stderr io.Writer) error {
	f, err := env.discoverTool("ibnetdiscover", ibnetdiscoverUsage, args, stdout, stderr)
	if f == nil {
		return err
	}
	var b strings.Builder
	writeTopology(&b, f, time.Now())
	_, err = io.WriteString(stdout, b.String())
	return err
}

// ctime is C's ctime(3): "Tue Nov 24 01:04:19 2026\n".
func ctime(t time.Time) string { return t.Format("Mon Jan _2 15:04:05 2006") + "\n" }

// nodeName is ibnetdiscover's node_name: "S-<guid>" in quotes.
func nodeName(n *netdisc.Node) string {
	c := "?"
	switch n.Type {
	case netdisc.TypeSwitch:
		c = "S"
	case netdisc.TypeCA:
		c = "H"
	case netdisc.TypeRouter:
		c = "R"
	}
	return fmt.Sprintf("\"%s-%016x\"", c, n.GUID)
}

// cleanDesc is clean_nodedesc: what is not printable becomes a space.
func cleanDesc(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return ' '
		}
		return r
	}, s)
}

func compatWidth(w uint64) string {
	switch w {
	case 1:
		return "1x"
	case 2:
		return "4x"
	case 4:
		return "8x"
	case 8:
		return "12x"
	case 16:
		return "2x"
	}
	return "??"
}

func compatSpeed(s uint64) string {
	switch s {
	case 1:
		return "SDR"
	case 2:
		return "DDR"
	case 4:
		return "QDR"
	}
	return "???"
}

func compatSpeedExt(e, s uint64) string {
	switch e {
	case 0:
		return compatSpeed(s)
	case 1:
		return "FDR"
	case 2:
		return "EDR"
	case 4:
		return "HDR"
	case 8:
		return "NDR"
	}
	return "???"
}

// linkRate is ibnetdiscover's "4xSDR" of a port, espeed read where the
// capability mask (capInfo's) has extended speeds.
func linkRate(info, capInfo []byte) string {
	width := bits(info, 248, 8)
	speed := bits(info, 280, 4)
	var espeed uint64
	if capInfo != nil && bits(capInfo, 160, 32)&(1<<14) != 0 {
		espeed = bits(info, 496, 4)
	}
	if speed != 4 && espeed == 0 {
		return compatWidth(width) + compatSpeed(speed)
	}
	return compatWidth(width) + compatSpeedExt(espeed, speed)
}

func remoteLID(p *netdisc.Port) uint16 {
	if p.Node.Type == netdisc.TypeSwitch {
		return p.Node.SMALID
	}
	return p.BaseLID
}

func outIDs(w *strings.Builder, n *netdisc.Node) {
	fmt.Fprintf(w, "\nvendid=0x%x\ndevid=0x%x\n", bits(n.Info[:], 296, 24), binary.BigEndian.Uint16(n.Info[30:32]))
	if sys := binary.BigEndian.Uint64(n.Info[4:12]); sys != 0 {
		fmt.Fprintf(w, "sysimgguid=0x%x\n", sys)
	}
}

// writeTopology is dump_topology without grouping.
func writeTopology(w *strings.Builder, f *netdisc.Fabric, now time.Time) {
	fmt.Fprintf(w, "#\n# Topology file: generated on %s#\n", ctime(now))
	fmt.Fprintf(w, "# Initiated from node %016x port %016x\n", f.From.GUID, binary.BigEndian.Uint64(f.From.Info[20:28]))
	for _, typ := range []uint8{netdisc.TypeSwitch, netdisc.TypeCA, netdisc.TypeRouter} {
		for i := len(f.Nodes) - 1; i >= 0; i-- {
			n := f.Nodes[i]
			if n.Type != typ {
				continue
			}
			if typ == netdisc.TypeSwitch {
				outSwitch(w, n)
			} else {
				outCA(w, n)
			}
		}
	}
}

func outSwitch(w *strings.Builder, n *netdisc.Node) {
	outIDs(w, n)
	fmt.Fprintf(w, "switchguid=0x%x(%x)\n", n.GUID, binary.BigEndian.Uint64(n.Info[20:28]))
	kind := "base"
	if n.EnhancedPort0 {
		kind = "enhanced"
	}
	fmt.Fprintf(w, "Switch\t%d %s\t\t# \"%s\" %s port 0 lid %d lmc %d\n", n.NumPorts, nodeName(n), cleanDesc(n.Desc), kind, n.SMALID, n.SMALMC)
	var port0 []byte
	if n.Ports[0] != nil {
		port0 = n.Ports[0].Info[:]
	}
	for _, p := range n.Ports[1:] {
		if p == nil || p.Remote == nil {
			continue
		}
		r := p.Remote
		fmt.Fprintf(w, "[%d]\t%s[%d]", p.Num, nodeName(r.Node), r.Num)
		if r.Node.Type != netdisc.TypeSwitch {
			fmt.Fprintf(w, "(%x) ", r.GUID)
		}
		rate := linkRate(p.Info[:], port0)
		if port0 == nil {
			rate = compatWidth(bits(p.Info[:], 248, 8)) + compatSpeed(0)
		}
		fmt.Fprintf(w, "\t\t# \"%s\" lid %d %s\n", cleanDesc(r.Node.Desc), remoteLID(r), rate)
	}
}

func outCA(w *strings.Builder, n *netdisc.Node) {
	outIDs(w, n)
	typ, long := "ca", "Ca"
	if n.Type == netdisc.TypeRouter {
		typ, long = "rt", "Rt"
	}
	fmt.Fprintf(w, "%sguid=0x%x\n", typ, n.GUID)
	fmt.Fprintf(w, "%s\t%d %s\t\t# \"%s\"\n", long, n.NumPorts, nodeName(n), cleanDesc(n.Desc))
	for _, p := range n.Ports[1:] {
		if p == nil || p.Remote == nil {
			continue
		}
		r := p.Remote
		fmt.Fprintf(w, "[%d](%x) \t%s[%d]", p.Num, p.GUID, nodeName(r.Node), r.Num)
		if r.Node.Type != netdisc.TypeSwitch {
			fmt.Fprintf(w, " (%x) ", r.GUID)
		}
		fmt.Fprintf(w, "\t\t# lid %d lmc %d \"%s\" lid %d %s\n", p.BaseLID, p.LMC, cleanDesc(r.Node.Desc), remoteLID(r), linkRate(p.Info[:], p.Info[:]))
	}
}
