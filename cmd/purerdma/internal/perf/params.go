package perf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// verb is perftest's VerbType, in its order (testsStr).
type verb int

const (
	verbSend verb = iota
	verbWrite
	verbRead
	verbAtomic
)

var testsStr = [...]string{"Send", "RDMA_Write", "RDMA_Read", "Atomic"}

// testKind is perftest's TestType (tst).
type testKind int

const (
	testLat testKind = iota
	testBW
)

// connType is perftest's connection type, in its order (connStr).
type connType int

const (
	connRC connType = iota
	connUC
	connUD
)

var connStr = [...]string{"RC", "UC", "UD"}

// The output verbosities (--output).
const (
	outFull = iota
	outBW
	outMR
	outLat
)

// The atomic types (-A), in perftest's order (atomicTypesStr).
const (
	atomicCAS = iota
	atomicFAA
)

var atomicTypesStr = [...]string{"CMP_AND_SWAP", "FETCH_AND_ADD"}

// perftest's defaults and limits (perftest_parameters.h).
const (
	defPort        = 18515
	defSizeBW      = 65536
	defSizeLat     = 2
	defSizeAtomic  = 8
	defIters       = 1000
	defTxBW        = 128
	defTxLat       = 1
	defQPTimeout   = 14
	defRxRDMA      = 1
	defRxSend      = 512
	defCQMod       = 100
	defInline      = -1
	maxSize        = 8388608
	minIter        = 5
	maxIter        = 100000000
	maxTx          = 15000
	maxRx          = 16384
	ucMaxRx        = 16000
	maxCQMod       = 1024
	maxInline      = 912
	cqModSizeLimit = 8192
	minRNRTimer    = 12
	ctxPollBatch   = 16
	udAddition     = 40
	defQKey        = 0x11111111
	// version is what perftest 4.5-0.17 sends as its version (configure.ac's
	// AC_INIT): 6.06. A peer older than 5.70 is refused, as perftest does.
	version = "6.06"
)

// params is perftest's struct perftest_parameters, the part these tools use.
type params struct {
	prog       string
	verb       verb
	tst        testKind
	server     string // the server's name: the client's operand; "" for the server
	port       int
	dev        string
	ibPort     int
	mtu        int
	size       uint64
	reqSize    bool
	iters      uint64
	txDepth    int
	rxDepth    int
	cqMod      int
	reqCQMod   bool
	qpTimeout  int
	sl         int
	gidIndex   int
	gidUser    bool
	runAll     bool
	cpuFreqF   bool
	conn       connType
	numQPs     int
	events     bool
	inline     int
	outReads   int
	workRDMACM bool
	noPeak     bool
	atomicType int
	reportGbs  bool
	output     int
	useSRQ     bool
	duration   int // -D: seconds; 0 for a run of -n iterations
	margin     int // -f: seconds before and after the sample of a -D run
	timeout    time.Duration

	// From the device and the peer.
	currMTU       int // enum ibv_mtu
	linkEthernet  bool
	cycleBuffer   int
	cacheLineSize int
	remVersion    string
}

// usageError is a message of the parser's, printed to stderr before
// " Parser function exited with Error".
type usageError string

func (e usageError) Error() string { return string(e) }

func run(prog string, v verb, t testKind, args []string, stdout, stderr io.Writer) error {
	p, err := parse(prog, v, t, args, stdout, stderr)
	var ee cli.ExitError
	switch {
	case errors.Is(err, cli.ErrHelp):
		return cli.ExitError{Code: 1} // perftest's HELP_EXIT and VERSION_EXIT: main returns 1
	case errors.As(err, &ee):
		return err
	case err != nil:
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprint(stderr, string(ue))
		}
		fmt.Fprintln(stderr, " Parser function exited with Error")
		return cli.ExitError{Code: 1}
	}
	return p.main(stdout, stderr)
}

func parse(prog string, v verb, t testKind, args []string, stdout, stderr io.Writer) (*params, error) {
	p := &params{prog: prog, verb: v, tst: t, port: defPort, ibPort: 1, iters: defIters,
		qpTimeout: defQPTimeout, gidIndex: -1, numQPs: 1, inline: defInline, cqMod: defCQMod,
		atomicType: atomicFAA, outReads: 0, margin: -1, cacheLineSize: cacheLineSize(), cycleBuffer: os.Getpagesize()}
	p.size = defSizeBW
	if t == testLat {
		p.size = defSizeLat
	}
	if v == verbAtomic {
		p.size = defSizeAtomic
	}
	p.txDepth = defTxBW
	if t == testLat {
		p.txDepth = defTxLat
	}
	p.rxDepth = defRxRDMA
	if v == verbSend {
		p.rxDepth = defRxSend
	}
	inRange := func(dst *int, lo, hi int, what string) func(string) error {
		return func(s string) error {
			n, err := strconv.ParseInt(s, 0, 64)
			if err != nil {
				return usageError(fmt.Sprintf(" %s argument must be an integer\n", what))
			}
			if n < int64(lo) || n > int64(hi) {
				return usageError(fmt.Sprintf(" %s should be between %d and %d\n", what, lo, hi))
			}
			*dst = int(n)
			return nil
		}
	}
	num := func(dst *int, what string) func(string) error {
		return inRange(dst, -1<<31, 1<<31-1, what)
	}
	var iters, gidIndex int
	opts := []cli.Option{
		{Short: 'p', Long: "port", Arg: true, Set: num(&p.port, "Port")},
		{Short: 'd', Long: "ib-dev", Arg: true, Set: func(s string) error { p.dev = s; return nil }},
		{Short: 'i', Long: "ib-port", Arg: true, Set: inRange(&p.ibPort, 1, 255, "IB Port")},
		{Short: 'm', Long: "mtu", Arg: true, Set: num(&p.mtu, "MTU")},
		{Short: 's', Long: "size", Arg: true, Set: func(s string) error {
			f := uint64(1)
			if strings.HasSuffix(s, "K") {
				s, f = s[:len(s)-1], 1024
			} else if strings.HasSuffix(s, "M") {
				s, f = s[:len(s)-1], 1024*1024
			}
			p.size = uint64(cli.CStrtol(s)) * f
			p.reqSize = true
			if p.size < 1 || p.size > (1<<32-1)/2 {
				return usageError(fmt.Sprintf(" Message Size should be between %d and %d\n", 1, (1<<32-1)/2))
			}
			return nil
		}},
		{Short: 'n', Long: "iters", Arg: true, Set: func(s string) error {
			if err := inRange(&iters, minIter, maxIter, "Iteration num")(s); err != nil {
				return err
			}
			p.iters = uint64(iters)
			return nil
		}},
		{Short: 't', Long: "tx-depth", Arg: true, Set: inRange(&p.txDepth, 1, maxTx, "Tx depth")},
		{Short: 'u', Long: "qp-timeout", Arg: true, Set: inRange(&p.qpTimeout, 0, 255, "QP Timeout")},
		{Short: 'S', Long: "sl", Arg: true, Set: inRange(&p.sl, 0, 15, "Service Level")},
		{Short: 'x', Long: "gid-index", Arg: true, Set: func(s string) error {
			if err := inRange(&gidIndex, 0, 255, "Gid index")(s); err != nil {
				return err
			}
			p.gidIndex, p.gidUser = gidIndex, true
			return nil
		}},
		{Short: 'a', Long: "all", Set: func(string) error { p.runAll = true; return nil }},
		{Short: 'D', Long: "duration", Arg: true, Set: func(s string) error {
			n, err := strconv.ParseInt(s, 0, 64)
			if err != nil || n <= 0 {
				return usageError(" Duration period must be positive\n")
			}
			p.duration = int(n)
			return nil
		}},
		{Short: 'f', Long: "margin", Arg: true, Set: func(s string) error {
			n, err := strconv.ParseInt(s, 0, 64)
			if err != nil || n < 0 {
				return usageError(" Margin must be non-negative\n")
			}
			p.margin = int(n)
			return nil
		}},
		{Short: 'F', Long: "CPU-freq", Set: func(string) error { p.cpuFreqF = true; return nil }},
		{Short: 'c', Long: "connection", Arg: true, Set: func(s string) error {
			switch s {
			case "RC":
				p.conn = connRC
			case "UC":
				if p.verb == verbRead || p.verb == verbAtomic {
					return usageError(" UC connection not possible in READ/ATOMIC verbs\n")
				}
				p.conn = connUC
			case "UD":
				if p.verb != verbSend {
					return usageError(" UD connection only possible in SEND verb\n")
				}
				p.conn = connUD
			default:
				return usageError(" Invalid Connection type . please choose from {RC,UC,UD}\n")
			}
			return nil
		}},
		{Short: 'q', Long: "qp", Arg: true, Set: func(s string) error {
			if p.tst != testBW {
				return usageError(" Multiple QPs only available on bw tests\n")
			}
			return inRange(&p.numQPs, 1, 1<<16, "num of qps")(s)
		}},
		{Short: 'e', Long: "events", Set: func(string) error {
			if p.verb == verbWrite {
				return usageError(" Events feature not available on WRITE verb\n")
			}
			p.events = true
			return nil
		}},
		{Short: 'I', Long: "inline_size", Arg: true, Set: inRange(&p.inline, 0, maxInline, "Max inline")},
		{Short: 'o', Long: "outs", Arg: true, Set: num(&p.outReads, "Outstanding Reads")},
		{Short: 'R', Long: "rdma_cm", Set: func(string) error { p.workRDMACM = true; return nil }},
		{Short: 'r', Long: "rx-depth", Arg: true, Set: inRange(&p.rxDepth, 1, maxRx, " Rx depth")},
		{Short: 'Q', Long: "cq-mod", Arg: true, Set: func(s string) error {
			p.reqCQMod = true
			return inRange(&p.cqMod, 1, maxCQMod, "CQ moderation")(s)
		}},
		{Short: 'A', Long: "atomic_type", Arg: true, Set: func(s string) error {
			switch s {
			case atomicTypesStr[atomicCAS]:
				p.atomicType = atomicCAS
			case atomicTypesStr[atomicFAA]:
				p.atomicType = atomicFAA
			default:
				return usageError(" Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}\n")
			}
			return nil
		}},
		{Short: 'N', Long: "noPeak", Set: func(string) error {
			if p.tst == testLat {
				return usageError(" NoPeak only valid for BW tests\n")
			}
			p.noPeak = true
			return nil
		}},
		{Short: 'V', Long: "version", Set: func(string) error {
			fmt.Fprintf(stdout, "Version: %s\n", version)
			return cli.ErrHelp
		}},
		{Short: 'h', Long: "help", Set: func(string) error {
			fmt.Fprint(stdout, usage(p))
			return cli.ErrHelp
		}},
		{Long: "report_gbits", Set: func(string) error { p.reportGbs = true; return nil }},
		{Long: "use-srq", Set: func(string) error { p.useSRQ = true; return nil }},
		{Long: "use_srq", Set: func(string) error { p.useSRQ = true; return nil }}, // as some guides spell it
		{Long: "output", Arg: true, Set: func(s string) error {
			switch s {
			case "bandwidth":
				p.output = outBW
			case "message_rate":
				p.output = outMR
			case "latency":
				p.output = outLat
			default:
				return usageError(" Invalid verbosity level output flag. Please use bandwidth, latency, message_rate\n")
			}
			return nil
		}},
		{Long: "timeout", Arg: true, Set: func(s string) error {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				return usageError(fmt.Sprintf(" purerdma: bad --timeout %q\n", s))
			}
			p.timeout = d
			return nil
		}},
	}
	operands, err := cli.GetoptOperands(prog, args, opts, stderr)
	if err != nil {
		return nil, err
	}
	if len(operands) > 1 {
		return nil, usageError(" Too many arguments\n")
	}
	if len(operands) == 1 {
		p.server = operands[0]
	}
	if p.useSRQ && p.verb != verbSend {
		fmt.Fprint(stdout, resultLine)
		fmt.Fprint(stdout, " Using SRQ only avavilible in SEND tests.\n")
		return nil, cli.ExitError{Code: 1}
	}
	if p.workRDMACM && p.conn == connUC {
		fmt.Fprint(stdout, resultLine)
		fmt.Fprint(stdout, " UC is not supported in librdmacm\n")
		return nil, cli.ExitError{Code: 1}
	}
	if p.useSRQ && p.numQPs > p.rxDepth {
		fmt.Fprint(stdout, resultLine)
		fmt.Fprint(stdout, " Using SRQ depth should be greater than number of QPs.\n")
		return nil, cli.ExitError{Code: 1}
	}
	if p.conn == connUD && p.workRDMACM {
		return nil, usageError(" purerdma: -c UD with -R is not implemented yet\n")
	}
	if err := p.forceDependencies(stdout, stderr); err != nil {
		return nil, err
	}
	return p, nil
}

// forceDependencies is perftest's force_dependecies, the part these
// tools reach.
func (p *params) forceDependencies(stdout, stderr io.Writer) error {
	if p.duration == 0 {
		if uint64(p.txDepth) > p.iters {
			p.txDepth = int(p.iters)
		}
		if p.verb == verbSend && uint64(p.rxDepth) > p.iters {
			p.rxDepth = int(p.iters)
		}
		if (p.conn == connUD || p.conn == connUC) && p.rxDepth == defRxSend {
			p.rxDepth = int(min(p.iters, ucMaxRx))
		}
	}
	if p.size > cqModSizeLimit && p.conn != connUD && !p.runAll && !p.events {
		if !p.reqCQMod {
			p.cqMod = 1
		} else if p.cqMod > 1 {
			fmt.Fprint(stdout, resultLine)
			fmt.Fprint(stdout, "Warning: Large message requested and CQ moderation enabled\n")
			fmt.Fprint(stdout, "Warning: It can lead to inaccurate results\n")
		}
	}
	if p.cqMod > p.txDepth {
		p.cqMod = p.txDepth
	}
	if p.duration > 0 {
		// iters counts what completes in the sample.
		p.iters, p.noPeak = 0, true
		if p.events {
			fmt.Fprint(stdout, resultLine)
			fmt.Fprint(stderr, "Duration mode doesn't work with events.\n")
			return cli.ExitError{Code: 1}
		}
		if p.runAll {
			fmt.Fprint(stdout, resultLine)
			fmt.Fprint(stderr, "Duration mode currently doesn't support running on all sizes.\n")
			return cli.ExitError{Code: 1}
		}
	}
	if p.verb == verbRead || p.verb == verbAtomic {
		p.inline = 0
	}
	if p.runAll {
		p.size = maxSize
	}
	if p.verb == verbAtomic && p.size != defSizeAtomic {
		fmt.Fprint(stdout, resultLine)
		fmt.Fprint(stdout, "Message size cannot be changed for Atomic tests \n")
		return cli.ExitError{Code: 1}
	}
	if p.verb == verbSend && p.tst == testBW && p.server == "" {
		p.noPeak = true
	}
	if p.iters > 20000 && !p.noPeak && p.tst == testBW {
		p.noPeak = true
	}
	if p.duration > 0 && p.margin == -1 {
		p.margin = p.duration / 4
	}
	if p.verb == verbSend && p.rxDepth%2 == 1 && !p.runAll {
		p.rxDepth++
	}
	if p.duration > 0 && !(p.duration > 2*p.margin) {
		fmt.Fprint(stdout, resultLine)
		fmt.Fprint(stderr, "please check that DURATION > 2*MARGIN\n")
		return cli.ExitError{Code: 1}
	}
	return nil
}

// cacheLineSize is get_cache_line_size: glibc's
// sysconf(_SC_LEVEL1_DCACHE_LINESIZE) reads cpu0's level-1 data cache
// from sysfs; 64 when it cannot.
func cacheLineSize() int {
	b := make([]byte, 16)
	f, err := os.Open("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
	if err != nil {
		return 64
	}
	defer f.Close()
	n, _ := f.Read(b)
	v, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || v <= 0 {
		return 64
	}
	return v
}

func usage(p *params) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  %s            start a server and wait for connection\n  %s <host>     connect to server at <host>\n\nOptions:\n", p.prog, p.prog)
	for _, l := range [][2]string{
		{"-a, --all ", "Run sizes from 2 till 2^23"},
		{"-A, --atomic_type=<type> ", "type of atomic operation from {CMP_AND_SWAP,FETCH_AND_ADD} (default FETCH_AND_ADD)"},
		{"-c, --connection=<RC/UC/UD> ", "Connection type RC/UC/UD (default RC)"},
		{"-d, --ib-dev=<dev> ", "Use IB device <dev> (default first device found)"},
		{"-D, --duration ", "Run test for a customized period of seconds."},
		{"-e, --events ", "Sleep on CQ events (default poll)"},
		{"-f, --margin ", "measure results within margins. (default=2sec)"},
		{"-F, --CPU-freq ", "Do not show a warning even if cpufreq_ondemand module is loaded, and cpu-freq is not on max."},
		{"-h, --help ", "Show this help screen."},
		{"-i, --ib-port=<port> ", "Use port <port> of IB device (default 1)"},
		{"-I, --inline_size=<size> ", "Max size of message to be sent in inline"},
		{"-m, --mtu=<mtu> ", "MTU size : 256 - 4096 (default port mtu)"},
		{"-n, --iters=<iters> ", "Number of exchanges (at least 5, default 1000)"},
		{"-N, --noPeak", "Cancel peak-bw calculation (default with peak up to iters=20000)"},
		{"-o, --outs=<num> ", "num of outstanding read/atom(default max of device)"},
		{"-p, --port=<port> ", "Listen on/connect to port <port> (default 18515)"},
		{"-q, --qp=<num of qp's>  ", "Num of qp's(default 1)"},
		{"-Q, --cq-mod ", "Generate Cqe only after <--cq-mod> completion"},
		{"-r, --rx-depth=<dep> ", "Rx queue size (default 512)."},
		{"-s, --size=<size> ", "Size of message to exchange (default 65536)"},
		{"-S, --sl=<sl> ", "SL (default 0)"},
		{"-t, --tx-depth=<dep> ", "Size of tx queue (default 128)"},
		{"-u, --qp-timeout=<timeout> ", "QP timeout, timeout value is 4 usec * 2 ^(timeout), default 14"},
		{"-V, --version ", "Display version number"},
		{"-x, --gid-index=<index> ", "Test uses GID with GID index"},
		{"--output=<units>", "Set verbosity output level: bandwidth , message_rate, latency"},
		{"--report_gbits ", "Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)"},
		{"--use-srq ", "Use a Shared Receive Queue. --rx-depth controls max-wr size of the SRQ "},
		{"--timeout=<duration> ", "purerdma only: give up after this long (default: never)"},
	} {
		fmt.Fprintf(&b, "  %s\n\t\t\t\t%s\n", l[0], l[1])
	}
	return b.String()
}
