package diags

// What the fabric tools (perfquery, smpquery, sminfo, ibnetdiscover,
// iblinkinfo, umad) share: their common options, their usage and failure
// exits, and C's number parsing for option values.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
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
	fmt.Fprint(stderr, usage)
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
}

// madLog returns the log of libibmad's warnings the options ask for, on
// w.
func (o *fabricOpts) madLog(w io.Writer) *madLog {
	return &madLog{w: w, errs: o.errs || o.debug, debug: o.debug}
}

// tries is how many times a request goes out.
func (o *fabricOpts) tries() int { return o.retries + 1 }

// rpcOptions are the options of the tools whose MADs go through
// libibmad's RPC (smpquery, sminfo): -e, -d and --retries.
func (o *fabricOpts) rpcOptions() []cli.Option {
	return []cli.Option{
		{Short: 'e', Long: "errors", Set: func(string) error { o.errs = true; return nil }},
		{Short: 'd', Long: "debug", Set: func(string) error { o.debug = true; return nil }},
		{Long: "retries", Arg: true, Set: func(v string) (err error) {
			o.retries, err = strtoulArg(v, "retries")
			o.retriesSet = true
			return err
		}},
	}
}

// parseFabricOpts reads the common options with cli.GetoptOperands
// (getopt_long's rules, as ibdiag_process_opts reads them), with rpc the
// options of libibmad's RPC (rpcOptions), and extra, the tool's own; the
// operands land in pos. As in ibdiag_process_opts, the tool's options
// come first, and a common option whose letter the tool takes for its
// own is left out (perfquery's -D is --xmtdisc, not --Direct;
// excludedOpts). A command line getopt refuses is reported on stderr
// already (a cli.GetoptError); fabricUsage reports the others.
func parseFabricOpts(tool string, rpc bool, args []string, stderr io.Writer, extra ...cli.Option) (*fabricOpts, error) {
	o := &fabricOpts{timeout: madDefTimeout, retries: madDefTries - 1}
	if rpc {
		extra = append(o.rpcOptions(), extra...)
	}
	opts := []cli.Option{
		{Short: 'h', Long: "help", Set: func(string) error { return errHelp }},
		{Short: 'D', Long: "Direct", Set: func(string) error { o.dr = true; return nil }},
		{Short: 'C', Long: "Ca", Arg: true, Set: func(v string) error { o.ca = v; return nil }},
		{Short: 'P', Long: "Port", Arg: true, Set: func(v string) (err error) {
			o.port, err = strtoulArg(v, "port")
			return err
		}},
		{Short: 't', Long: "timeout", Arg: true, Set: func(v string) error {
			ms, err := strtoulArg(v, "timeout")
			if err == nil && ms == 0 {
				err = errors.New("the timeout must be at least 1 ms")
			}
			o.timeout, o.timeoutSet = time.Duration(ms)*time.Millisecond, true
			return err
		}},
	}
	opts = append(append([]cli.Option(nil), extra...), shadowedOpts(opts, extra)...)
	pos, err := cli.GetoptOperands(tool, args, opts, stderr)
	if err != nil {
		return nil, err
	}
	o.pos = pos
	return o, nil
}

// shadowedOpts is common without the options whose short letter an
// option of tool takes (ibdiag_process_opts' exclude string).
func shadowedOpts(common, tool []cli.Option) []cli.Option {
	var out []cli.Option
	for _, c := range common {
		taken := false
		for _, t := range tool {
			taken = taken || (c.Short != 0 && t.Short == c.Short)
		}
		if !taken {
			out = append(out, c)
		}
	}
	return out
}

// excludedOpts are the options for a tool's exclude string of
// ibdiag_process_opts (perfquery's "DK", sminfo's "sK"): each letter
// claims the common option of that letter (shadowedOpts leaves it out,
// its long name too) and is refused as getopt refuses a letter it does
// not know. A letter the tool takes for its own is left to the tool.
func excludedOpts(tool, letters string, stderr io.Writer) []cli.Option {
	var out []cli.Option
	for i := 0; i < len(letters); i++ {
		c := letters[i]
		out = append(out, cli.Option{Short: c, Set: func(string) error {
			fmt.Fprintf(stderr, "%s: invalid option -- '%c'\n", tool, c)
			return cli.ErrGetopt
		}})
	}
	return out
}

// fabricUsage reports a command line a fabric tool cannot use: err (unless
// getopt said it already) and the usage, on stderr, status 2, as
// ibdiag_show_usage does.
func fabricUsage(stderr io.Writer, tool, usage string, err error) error {
	var ge cli.GetoptError
	if errors.As(err, &ge) {
		fmt.Fprint(stderr, usage)
	} else {
		fmt.Fprintf(stderr, "%s: %v\n%s", tool, err, usage)
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
