package diags

// What the fabric tools (perfquery, smpquery, sminfo, ibnetdiscover,
// iblinkinfo, umad) share: their common options, their usage and failure
// exits, and C's number parsing for option values.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// errHelp is -h or --help: the tool prints its usage on standard output.
var errHelp = errors.New("help")

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
	retries    int
	pos        []string
}

// parseFabricOpts reads the common options with cli.GetoptOperands
// (getopt_long's rules, as ibdiag_process_opts reads them), then extra,
// the tool's own; the operands land in pos. A command line getopt refuses
// is reported on stderr already (a cli.GetoptError); fabricUsage reports
// the others.
func parseFabricOpts(tool string, args []string, stderr io.Writer, extra ...cli.Option) (*fabricOpts, error) {
	o := &fabricOpts{timeout: time.Second, retries: 3}
	opts := append([]cli.Option{
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
	}, extra...)
	pos, err := cli.GetoptOperands(tool, args, opts, stderr)
	if err != nil {
		return nil, err
	}
	o.pos = pos
	return o, nil
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

// fabricFail reports an error as the C tools' IBEXIT (ibexit in
// infiniband-diags/ibdiag_common.c) does: on standard output, exit
// status 255.
func fabricFail(stdout io.Writer, tool string, err error) error {
	fmt.Fprintf(stdout, "%s: iberror: failed: %v\n", tool, err)
	return cli.ExitError{Code: 255}
}
