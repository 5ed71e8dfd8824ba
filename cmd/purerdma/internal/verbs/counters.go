package verbs

// counters: every counter set a device offers (counters.Describe, the
// "Verbs Counters" RFC on today's kernels) with its current values; the
// port sets are what `rdma statistic show link` and sysfs show.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/sysfs"
)

const countersUsage = `Usage: purerdma counters [-d DEV] [--json]

Lists every counter set the RDMA device offers — flow counters where the
driver has verbs counters objects, each port's PMA counters (sysfs
counters/), hardware counters (sysfs hw_counters/, cached) and netlink
statistics (read fresh) — with what each counts, whether it is cached, and
its counters' current values. Without -d, every device's sets, one device
after the other (as ` + "`rdma statistic show`" + ` lists every link).

Options:
  -d, --ib-dev=DEV       the RDMA device (default: every device)
      --json             print JSON
  -h, --help             this help
`

// counterSetJSON is one set in --json output.
type counterSetJSON struct {
	*counters.Set
	Counters []counterJSON `json:"counters,omitempty"`
	Error    string        `json:"error,omitempty"`
}

type counterJSON struct {
	Name  string `json:"name"`
	Unit  string `json:"unit,omitempty"`
	Value uint64 `json:"value"`
}

func (env *Env) runCounters(args []string, stdout, stderr io.Writer) error {
	var dev string
	var asJSON bool
	opts := []cli.Option{
		{Short: 'd', Long: "ib-dev", Arg: true, Set: func(v string) error { dev = v; return nil }},
		{Long: "json", Set: func(string) error { asJSON = true; return nil }},
		{Short: 'h', Long: "help", Set: func(string) error { return cli.ErrHelp }},
	}
	if err := cli.Getopt("counters", args, opts, stderr); err != nil {
		if errors.Is(err, cli.ErrHelp) {
			fmt.Fprint(stdout, countersUsage)
			return nil
		}
		fmt.Fprint(stderr, countersUsage)
		return cli.ExitError{Code: 2}
	}
	var fsys *sysfs.FS // nil: the running system's
	if env.Counters != nil {
		fsys = env.Counters.Sysfs
	}
	// The device list is read only where it is needed: without -d, or
	// for the hint after an unknown -d.
	listNames := func() ([]string, error) {
		if fsys == nil {
			var err error
			if fsys, err = sysfs.New(sysfs.DefaultRoot); err != nil {
				return nil, err
			}
		}
		names, err := fsys.CANames()
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // no class/infiniband: no devices
		}
		return names, err
	}
	var devs []string
	var err error
	if dev != "" {
		devs = []string{dev}
	} else if devs, err = listNames(); err != nil {
		fmt.Fprintln(stderr, "counters:", err)
		return cli.ExitError{Code: 1}
	} else if len(devs) == 0 {
		// Like `rdma statistic show` with no device: nothing to show.
		if asJSON {
			fmt.Fprintln(stdout, "[]")
		}
		return nil
	}
	var all []counterSetJSON
	status := 0
	for i, d := range devs {
		out, err := env.countersOf(d)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				names, _ := listNames()
				fmt.Fprintf(stderr, "counters: no RDMA device %s (%s)\n", d, countersKnown(names))
			} else {
				fmt.Fprintln(stderr, "counters:", err)
			}
			status = 1
			continue
		}
		if asJSON {
			all = append(all, out...)
			continue
		}
		if i > 0 && dev == "" {
			fmt.Fprintln(stdout)
		}
		countersText(stdout, d, out)
	}
	if asJSON && (status == 0 || len(all) > 0) {
		if all == nil {
			all = []counterSetJSON{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			return err
		}
	}
	if status != 0 {
		return cli.ExitError{Code: status}
	}
	return nil
}

// countersKnown says which devices there are, for the hint after an
// unknown -d.
func countersKnown(names []string) string {
	if len(names) == 0 {
		return "this machine has no RDMA device"
	}
	return "the devices are " + strings.Join(names, ", ") + "; purerdma counters without -d shows them all"
}

// countersOf describes one device's sets and reads their values.
func (env *Env) countersOf(dev string) ([]counterSetJSON, error) {
	sets, err := counters.DescribeWith(dev, env.Counters)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, s := range sets {
			s.Close()
		}
	}()
	out := make([]counterSetJSON, len(sets))
	for i, s := range sets {
		out[i].Set = s
		values := make([]uint64, len(s.Names))
		if s.Note != "" {
			continue // described, not readable by itself
		}
		if err := s.Read(values); err != nil {
			out[i].Error = err.Error()
			continue
		}
		for j, name := range s.Names {
			out[i].Counters = append(out[i].Counters, counterJSON{Name: name, Unit: s.Units[j], Value: values[j]})
		}
	}
	return out, nil
}

func countersText(stdout io.Writer, dev string, out []counterSetJSON) {
	if len(out) == 0 {
		fmt.Fprintf(stdout, "%s: no counter sets\n", dev)
		return
	}
	for _, s := range out {
		fmt.Fprintln(stdout, setHeader(s.Set))
		switch {
		case s.Note != "":
			fmt.Fprintf(stdout, "    %s: %s\n", strings.Join(s.Names, ", "), s.Note)
		case s.Error != "":
			fmt.Fprintf(stdout, "    error: %s\n", s.Error)
		default:
			tw := tabwriter.NewWriter(stdout, 0, 8, 1, ' ', 0)
			for _, c := range s.Counters {
				unit := ""
				if c.Unit != "" {
					unit = " " + c.Unit
				}
				fmt.Fprintf(tw, "    %s\t%d%s\n", c.Name, c.Value, unit)
			}
			tw.Flush()
		}
	}
}

// setHeader is one set's line: "set 1: rxe0 port 1, counts port, source
// hw_counters, cached (lifespan 10ms), 15 counters".
func setHeader(s *counters.Set) string {
	where := s.Device
	if s.Port != 0 {
		where += fmt.Sprintf(" port %d", s.Port)
	}
	cached := "not cached"
	if s.Cached {
		cached = "cached"
		if s.Lifespan > 0 {
			cached += fmt.Sprintf(" (lifespan %v)", s.Lifespan.Round(time.Millisecond))
		}
	}
	return fmt.Sprintf("set %d: %s, counts %v, source %v, %s, %d counters", s.ID, where, s.Counted, s.Source, cached, len(s.Names))
}
