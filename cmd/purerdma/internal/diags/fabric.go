package diags

// What the infiniband-diags tools (smpquery, sminfo, perfquery, ibaddr,
// ibping, ibqueryerrors, saquery, ibnetdiscover, iblinkinfo) share:
// ibdiag_common.c's option table, read once by parseDiagOpts with each
// tool's own options and exclude string, the usage generated from it,
// the config file, their failure exits, and C's number parsing.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// errHelp is -h or --help: the tool prints its usage on standard error
// and exits with status 2, as ibdiag_show_usage does (a tool of ours
// without a C counterpart prints it on standard output and exits 0).
var errHelp = errors.New("help")

// fabricHelp is -h of a fabric tool: ibdiag_show_usage's standard error
// and exit status 2.
func fabricHelp(stderr io.Writer, usage string) error {
	io.WriteString(stderr, usage)
	return cli.ExitError{Code: 2}
}

// strtoulArg reads a number the way the C tools do (strtoul base 0),
// refusing garbage and negative values.
func strtoulArg(s, what string) (int, error) {
	n, err := strconv.ParseUint(s, 0, 31)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q", what, s)
	}
	return int(n), nil
}

// ibdTimeout makes ibd_timeout (-t's or the config file's, the later of
// the two; 0: neither) the timeout of the tool's MADs, as the tools that
// hand it to libibmad or libibnetdisc have it (perfquery's PMA queries,
// sminfo's, ibqueryerrors, ibnetdiscover, iblinkinfo); the others
// (smpquery, ibaddr, ibping) only see -t's (madrpc_set_timeout).
func (o *fabricOpts) ibdTimeout() {
	if ms := o.common.timeoutMS; ms > 0 {
		o.timeout, o.timeoutSet = time.Duration(ms)*time.Millisecond, true
	}
}

// fabricOpts are the options the fabric tools share.
type fabricOpts struct {
	ca      string
	port    int
	dr      bool
	timeout time.Duration
	// timeoutSet is -t given (ibnetdiscover's default differs).
	timeoutSet bool
	// retries are the tries after the first: libibmad's tools make
	// MAD_DEF_RETRIES (3) tries in all, so 2; the discovery tools pass
	// the kernel 3 (libibnetdisc's DEFAULT_RETRIES). retriesSet is
	// --retries given.
	retries    int
	retriesSet bool
	// errs and debug are -e and -d: libibmad's warnings.
	errs, debug bool
	pos         []string
	// common is what the rest of infiniband-diags' common options set
	// (parseDiagOpts); prompted is -y's getpass prompt shown.
	common   diagCommon
	prompted bool
}

// madLog returns the log of libibmad's warnings the options ask for, on
// w.
func (o *fabricOpts) madLog(w io.Writer) *madLog {
	return &madLog{w: w, errs: o.errs || o.debug, debug: o.debug}
}

// tries is how many times a request goes out.
func (o *fabricOpts) tries() int { return o.retries + 1 }

// retriesOpt is --retries, ours (libibmad's tools make MAD_DEF_RETRIES
// tries, the option changes it): a diagSpec's ours.
func retriesOpt(o *fabricOpts) []cli.Option { return []cli.Option{retriesOption(o)} }

// retriesOption is retriesOpt's option, for a table of more.
func retriesOption(o *fabricOpts) cli.Option {
	return cli.Option{Long: "retries", Arg: true, Set: func(v string) (err error) {
		o.retries, err = strtoulArg(v, "retries")
		o.retriesSet = true
		return err
	}}
}

// fabricUsage reports a command line a fabric tool cannot use: err (unless
// getopt said it already) and the usage, on stderr, status 2, as
// ibdiag_show_usage does.
func fabricUsage(stderr io.Writer, tool string, usage diagUsage, err error) error {
	var ge cli.GetoptError
	if errors.As(err, &ge) {
		io.WriteString(stderr, usage.String())
	} else {
		fmt.Fprintf(stderr, "%s: %v\n%s", tool, err, usage.String())
	}
	return cli.ExitError{Code: 2}
}

// openFailed reports a port that does not open as the C tool does: the
// warning of libibmad's mad_rpc_open_port (ca "(null)" when not given),
// then the tool's own words (IBEXIT's "Failed to open 'CA' port 'N'";
// libibnetdisc's error and "discover failed" for ibnetdiscover;
// iblinkinfo's line and exit status 1), and our explanation on standard
// error.
func openFailed(stdout, stderr io.Writer, tool string, o *fabricOpts, err error) error {
	ca := o.ca
	if ca == "" {
		ca = "(null)"
	}
	fmt.Fprintf(stderr, "ibwarn: [%d] mad_rpc_open_port: can't open UMAD port (%s:%d)\n", os.Getpid(), ca, o.port)
	switch tool {
	case "ibnetdiscover":
		// libibnetdisc/ibnetdisc.c, ibnd_discover_fabric: IBND_ERROR
		// names its source file and line.
		fmt.Fprintf(stderr, "./libibnetdisc/ibnetdisc.c:802; can't open MAD port (%s:%d)\n", ca, o.port)
		fmt.Fprintf(stderr, "%s: %v\n", tool, err)
		return ibexit(stdout, tool, o.debug, "main", "discover failed\n")
	case "iblinkinfo":
		fmt.Fprintf(stderr, "Failed to open %s port %d\n%s: %v\n", ca, o.port, tool, err)
		return cli.ExitError{Code: 1}
	}
	fmt.Fprintf(stderr, "%s: %v\n", tool, err)
	return ibexit(stdout, tool, o.debug, "main", "Failed to open '%s' port '%d'", ca, o.port)
}

// diagOpt is one option of an infiniband-diags tool's table (struct
// ibdiag_opt in ibdiag_common.h): its long name, its letter (below ' ':
// a long option only, as C numbers them), whether it takes an argument,
// the argument's name and the description ibdiag_show_usage prints, and
// what it does.
type diagOpt struct {
	name   string
	letter byte
	arg    bool
	tmpl   string
	desc   string
	set    func(string) error
}

// The default places of ibdiag_common.c's config file and
// node_name_map.c's node name map (IBDIAG_CONFIG_PATH,
// IBDIAG_NODENAME_MAP_PATH as Debian builds them).
const (
	ibdiagConfigPath  = "/etc/infiniband-diags/ibdiag.conf"
	nodeNameMapPath   = "/etc/rdma/ib-node-name-map"
	ibdiagVersionLine = "BUILD VERSION: 44.0"
)

// Errors an option's set returns, which parseDiagOpts's caller turns into
// C's exits (diagOptsFailed).
var (
	// errVersion is -V: the version line on standard error, status 0.
	errVersion = errors.New("version")
	// errDiagUsage is an option the tool's handler refused (C's
	// process_opt returning -1): the usage, status 2.
	errDiagUsage = errors.New("usage")
)

// ibexitError is an option C ends the tool on with IBEXIT (stdout,
// status 255).
type ibexitError struct{ fn, msg string }

func (e ibexitError) Error() string { return e.msg }

// Destination kinds of the common -D, -L and -G (ibd_dest_type), and
// smpquery's -c.
const (
	destLID = iota
	destDR
	destGUID
	destDRSLID
)

// diagCommon is what the common options of infiniband-diags set
// (ibdiag_common.c's globals).
type diagCommon struct {
	// dest is -D, -L or -G's destination kind; verbose counts -v; debug
	// counts -d; showKeys is -K.
	dest     int
	verbose  int
	debugN   int
	showKeys bool
	// smLID is -s (the SM's LID), 0 when not given.
	smLID int
	// mkey is -y (or the config file's m_key); saKey is the config
	// file's sa_key (saquery's --smkey sets it too).
	mkey, saKey uint64
	// timeoutMS is ibd_timeout as -t or the config file set it (the
	// config file's even when 0), timeoutMSSet whether one did or the
	// tool gave it a default first (saquery's DEFAULT_SA_TIMEOUT_MS).
	timeoutMS    int
	timeoutMSSet bool
}

// commonOpt is one of ibdiag_common.c's common_opts: the option as the
// usage shows it (a diagOpt with no set: the table is not bound to a
// run), and what it does to a tool's options.
type commonOpt struct {
	diagOpt
	apply func(o *fabricOpts, v string) error
}

// commonDiagOpts are ibdiag_common.c's common_opts, in its order: a
// table in the binary's data, which a run neither builds nor allocates
// (one []diagOpt of closures bound to the run's options cost every
// fabric tool's start a fresh heap size class; docs/performance.md, "Per
// tool"). parseDiagSpec binds each option a tool keeps.
var commonDiagOpts = [...]commonOpt{
	{diagOpt{"config", 'z', true, "<config>", "use config file, default: " + ibdiagConfigPath, nil}, func(o *fabricOpts, v string) error {
		o.readConfig(v)
		return nil
	}},
	{diagOpt{"Ca", 'C', true, "<ca>", "Ca name to use", nil}, func(o *fabricOpts, v string) error { o.ca = v; return nil }},
	{diagOpt{"Port", 'P', true, "<port>", "Ca port number to use", nil}, func(o *fabricOpts, v string) error {
		o.port = int(int32(cStrtoull(v)))
		return nil
	}},
	{diagOpt{"Direct", 'D', false, "", "use Direct address argument", nil}, func(o *fabricOpts, _ string) error {
		o.common.dest, o.dr = destDR, true
		return nil
	}},
	{diagOpt{"Lid", 'L', false, "", "use LID address argument", nil}, func(o *fabricOpts, _ string) error {
		o.common.dest, o.dr = destLID, false
		return nil
	}},
	{diagOpt{"Guid", 'G', false, "", "use GUID address argument", nil}, func(o *fabricOpts, _ string) error {
		o.common.dest, o.dr = destGUID, false
		return nil
	}},
	{diagOpt{"timeout", 't', true, "<ms>", "timeout in ms", nil}, func(o *fabricOpts, v string) error {
		n, ok := cStrtoullFull(v)
		if !ok || n == 0 || n > 0x7fffffff {
			return ibexitError{"process_opt", fmt.Sprintf("Invalid timeout \"%s\".  Timeout requires a positive integer value < %d.", v, 0x7fffffff)}
		}
		o.timeout, o.timeoutSet = time.Duration(n)*time.Millisecond, true
		o.common.timeoutMS, o.common.timeoutMSSet = int(n), true
		return nil
	}},
	{diagOpt{"sm_port", 's', true, "<lid>", "SM port lid", nil}, func(o *fabricOpts, v string) error {
		// resolve_portid_str with IB_DEST_LID: strtol, a unicast LID.
		lid := cli.CStrtol(v)
		if lid < 1 || lid > 0xbfff {
			return ibexitError{"process_opt", "cannot resolve SM destination port " + v}
		}
		o.common.smLID = int(lid)
		return nil
	}},
	{diagOpt{"show_keys", 'K', false, "", "display security keys in output", nil}, func(o *fabricOpts, _ string) error {
		o.common.showKeys = true
		return nil
	}},
	{diagOpt{"m_key", 'y', true, "<key>", "M_Key to use in request", nil}, func(o *fabricOpts, v string) error {
		k, ok := cStrtoullFull(v)
		if !ok {
			// C asks with getpass(3) and reads a line; the tools run
			// with no terminal here, and an empty answer is refused as
			// well.
			o.prompted = true
			return ibexitError{"process_opt", "Bad M_Key"}
		}
		o.common.mkey = k
		return nil
	}},
	{diagOpt{"errors", 'e', false, "", "show send and receive errors", nil}, func(o *fabricOpts, _ string) error { o.errs = true; return nil }},
	{diagOpt{"verbose", 'v', false, "", "increase verbosity level", nil}, func(o *fabricOpts, _ string) error { o.common.verbose++; return nil }},
	{diagOpt{"debug", 'd', false, "", "raise debug level", nil}, func(o *fabricOpts, _ string) error {
		o.common.debugN++
		o.debug = true
		return nil
	}},
	{diagOpt{"help", 'h', false, "", "help message", nil}, func(*fabricOpts, string) error { return errHelp }},
	{diagOpt{"version", 'V', false, "", "show version", nil}, func(*fabricOpts, string) error { return errVersion }},
}

// parseDiagOpts reads a command line as ibdiag_process_opts does: the
// tool's own options (custom) first, then the common ones but those whose
// letters exclude names, with getopt_long's rules, after the default
// config file. It returns the options, the usage ibdiag_show_usage prints
// (usageArgs after "[options]"), and an error for diagOptsFailed.
func parseDiagOpts(tool, exclude, usageArgs string, custom []diagOpt, args []string, stderr io.Writer) (*fabricOpts, diagUsage, error) {
	return parseDiagSpec(diagSpec{tool: tool, exclude: exclude, usageArgs: usageArgs, custom: custom}, args, stderr)
}

// oursNamed are the options of ours that args name in full (--name or
// --name=value before a "--"): those alone join the table, so that a
// prefix C's getopt_long reads as one of the tool's options (perfquery's
// --d, --debug) is not made ambiguous by one of ours (--dgid).
func oursNamed(ours []cli.Option, args []string) []cli.Option {
	var out []cli.Option
	for _, o := range ours {
		for _, a := range args {
			if a == "--" {
				break
			}
			if a == "--"+o.Long || strings.HasPrefix(a, "--"+o.Long+"=") {
				out = append(out, o)
				break
			}
		}
	}
	return out
}

// diagSpec is what a tool hands ibdiag_process_opts: its name, the
// common options it excludes, its usage arguments and examples, its own
// options; ours are options of ours the C tool lacks (long ones, such as
// --retries), read after the tool's own when named in full (oursNamed)
// and left out of the usage so that it stays C's. o, when not nil, is where the options land (made
// by newFabricOpts, for a tool option that sets a common field, as
// smpquery's -c sets ibd_dest_type).
type diagSpec struct {
	tool, exclude, usageArgs string
	examples                 []string
	custom                   []diagOpt
	ours                     []cli.Option
	o                        *fabricOpts
	// getopt, where its capacity holds it, keeps the getopt table, so
	// that a tool's options allocation can hold it (perfqueryOpts).
	getopt []cli.Option
}

// newFabricOpts are the common options' defaults: libibmad's timeout
// and tries.
func newFabricOpts() *fabricOpts {
	o := defaultFabricOpts()
	return &o
}

// defaultFabricOpts is newFabricOpts's value, for a tool whose options
// hold the common ones.
func defaultFabricOpts() fabricOpts {
	return fabricOpts{timeout: madDefTimeout, retries: madDefTries - 1}
}

// parseDiagSpec is parseDiagOpts with usage examples and options of ours.
func parseDiagSpec(s diagSpec, args []string, stderr io.Writer) (*fabricOpts, diagUsage, error) {
	tool := s.tool
	o := s.o
	if o == nil {
		o = newFabricOpts()
	}
	// The usage's table is made when it is shown. The getopt table is made
	// at its full size: a slice grown by append would take memory from a
	// size class of its own, and a fresh size class is a fresh page of the
	// heap (docs/performance.md, "Per tool").
	usage := diagUsage{tool: tool, args: s.usageArgs, custom: s.custom, exclude: s.exclude, examples: s.examples}
	o.readConfig(ibdiagConfigPath)
	opts := s.getopt[:0]
	if n := len(s.custom) + len(s.ours) + len(commonDiagOpts); cap(opts) < n {
		opts = make([]cli.Option, 0, n)
	}
	for _, d := range s.custom {
		opts = append(opts, cli.Option{Short: shortLetter(d.letter), Long: d.name, Arg: d.arg, Set: d.set})
	}
	opts = append(opts, oursNamed(s.ours, args)...)
	for i := range commonDiagOpts {
		c := &commonDiagOpts[i]
		if strings.ContainsRune(s.exclude, rune(c.letter)) {
			continue
		}
		apply := c.apply
		opts = append(opts, cli.Option{Short: shortLetter(c.letter), Long: c.name, Arg: c.arg,
			Set: func(v string) error { return apply(o, v) }})
	}
	pos, err := cli.GetoptOperands(tool, args, opts, stderr)
	if err != nil {
		return o, usage, err
	}
	o.pos = pos
	return o, usage, nil
}

// diagOptsFailed ends a tool whose command line parseDiagOpts refused,
// as C does: the usage on standard error and status 2 (getopt's refusals,
// -h, a handler's), the version line and status 0 (-V), or IBEXIT.
func diagOptsFailed(stdout, stderr io.Writer, tool string, usage diagUsage, o *fabricOpts, err error) error {
	var ie ibexitError
	var re diagRefusedError
	switch {
	case errors.As(err, &re):
		fmt.Fprint(stderr, string(re))
	case errors.Is(err, errVersion):
		fmt.Fprintf(stderr, "%s %s\n", tool, ibdiagVersionLine)
		return nil
	case errors.As(err, &ie):
		if o.prompted {
			fmt.Fprint(stderr, "M_Key: ")
		}
		return ibexitMsg(stdout, tool, o.debug, ie.fn, ie.msg)
	}
	io.WriteString(stderr, usage.String())
	return cli.ExitError{Code: 2}
}

// diagUsage is what ibdiag_show_usage prints, kept as its parts: String
// writes the text only for a tool that shows it (folding every option's
// description at every start cost perfquery 0.2 M instructions, the
// heap's pages included; docs/performance.md, "Per tool").
type diagUsage struct {
	tool, args string
	// custom are the tool's own options; the common ones follow, but
	// those whose letters are in exclude.
	custom   []diagOpt
	exclude  string
	examples []string // the tool's usage_examples, after the options
}

// table is the options the usage lists, in ibdiag_process_opts's order.
func (u diagUsage) table() []diagOpt {
	t := append([]diagOpt(nil), u.custom...)
	for i := range commonDiagOpts {
		if c := &commonDiagOpts[i]; !strings.ContainsRune(u.exclude, rune(c.letter)) {
			t = append(t, c.diagOpt)
		}
	}
	return t
}

// shortLetter is a table's letter as getopt's short option: none for
// the letters below ' ' (perfquery numbers its long-only options 1, 2,
// ... as C's table does).
func shortLetter(l byte) byte {
	if l < ' ' {
		return 0
	}
	return l
}

// String is ibdiag_show_usage's text.
func (u diagUsage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nUsage: %s [options] %s\n\n", u.tool, u.args)
	table := u.table()
	if len(table) > 0 {
		b.WriteString("Options:\n")
	}
	for _, d := range table {
		line := "  --" + d.name
		if d.letter > ' ' && d.letter < 0x7f {
			line += ", -" + string(rune(d.letter))
		}
		if d.arg {
			t := d.tmpl
			if t == "" {
				t = "<val>"
			}
			line += " " + t
		}
		b.WriteString(line)
		n := len(line)
		if d.desc != "" {
			pad := max(24-n, 0)
			b.WriteString(strings.Repeat(" ", pad) + "  ")
			prettyPrint(&b, n+pad+2, 74, d.desc)
		}
		b.WriteString("\n")
	}
	if u.examples != nil {
		b.WriteString("\nExamples:\n")
		for _, e := range u.examples {
			fmt.Fprintf(&b, "  %s %s\n", u.tool, e)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// prettyPrint is ibdiag_common.c's pretty_print: s folded at spaces to
// fit width, continuation lines indented to start.
func prettyPrint(b *strings.Builder, start, width int, s string) {
	limit := width - start
	for {
		s = strings.TrimLeft(s, " \t\n\v\f\r")
		p, e := 0, 0
		found := true
		for {
			e = p + 1
			if e > len(s) {
				found = false
				break
			}
			i := strings.IndexByte(s[e:], ' ')
			if i < 0 {
				found = false
				break
			}
			p = e + i
			if p >= limit {
				break
			}
		}
		if !found {
			b.WriteString(s)
			return
		}
		if e == 1 {
			e = p
		}
		b.WriteString(s[:e] + "\n" + strings.Repeat(" ", start))
		s = s[e:]
	}
}

// readConfig is read_ibdiag_config: "name=value" lines of file (a missing
// or unreadable one is silently ignored), names matched by their prefix
// as C's strncmp does: CA, Port, timeout, m_key, sa_key (MLX_EPI and
// nd_format do not concern the tools here).
func (o *fabricOpts) readConfig(file string) {
	data, err := readFileBounded(file, maxTextFile)
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name, val, ok := strings.Cut(strings.TrimLeft(line, "="), "=")
		if !ok || val == "" {
			continue // C's strtok finds no value: it would crash, we skip
		}
		switch {
		case strings.HasPrefix(name, "CA"):
			o.ca = val
		case strings.HasPrefix(name, "Port"):
			o.port = int(int32(cStrtoull(val)))
		case strings.HasPrefix(name, "timeout"):
			// ibd_timeout only: libibmad's own timeout is -t's
			// (ibdTimeout gives it to the tools that pass
			// ibd_timeout on).
			o.common.timeoutMS, o.common.timeoutMSSet = int(int32(cStrtoull(val))), true
		case strings.HasPrefix(name, "m_key"):
			o.common.mkey = cStrtoull(val)
		case strings.HasPrefix(name, "sa_key"):
			o.common.saKey = cStrtoull(val)
		}
	}
}

// cStrtoull is strtoull(s, NULL, 0): the number at the start of s,
// 0 when none, saturated on overflow, negated modulo 2⁶⁴ after a '-'.
func cStrtoull(s string) uint64 {
	v, _, _ := cStrtoullEnd(s)
	return v
}

// cStrtoullFull is strtoull(s, &end, 0) with C's check that errno stayed
// 0 and *end is the string's end.
func cStrtoullFull(s string) (uint64, bool) {
	v, rest, overflow := cStrtoullEnd(s)
	return v, rest == "" && !overflow
}

func cStrtoullEnd(s string) (v uint64, rest string, overflow bool) {
	orig := s
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := uint64(10)
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && hexVal(s[2]) < 16:
		base, s = 16, s[2:]
	case len(s) > 0 && s[0] == '0':
		base = 8
	}
	digits := 0
	for digits < len(s) {
		d := hexVal(s[digits])
		if d >= base {
			break
		}
		if v > (^uint64(0)-d)/base {
			overflow = true
		}
		v = v*base + d
		digits++
	}
	if digits == 0 {
		return 0, orig, false
	}
	if overflow {
		v = ^uint64(0)
	} else if neg {
		v = -v
	}
	return v, s[digits:], overflow
}

func hexVal(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'f':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return uint64(c-'A') + 10
	}
	return 99
}

// The most the tools read of a file they are given: a text file
// (configuration, thresholds, an ibnetdiscover topology) and an
// ibnetdiscover cache. C reads any length; a longer file here fails with
// EFBIG rather than take memory without bound.
const (
	maxTextFile  = 64 << 20
	maxCacheFile = 256 << 20
)

// readFileBounded reads file whole, at most limit bytes: a longer one is
// an *fs.PathError wrapping EFBIG.
func readFileBounded(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: file, Err: err}
	}
	if int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: file, Err: syscall.EFBIG}
	}
	return b, nil
}
