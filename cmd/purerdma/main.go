package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/cmd/purerdma/internal/diags"
	"github.com/purerdma/rdma/cmd/purerdma/internal/perf"
	"github.com/purerdma/rdma/cmd/purerdma/internal/rdmatool"
	"github.com/purerdma/rdma/cmd/purerdma/internal/verbs"
)

// env is what the tools reach the system through, one Env a family: the
// running system in main, doubles in tests (passed in, never swapped
// package variables). With system set, a family whose Env is nil gets
// its DefaultEnv when its tools are first looked up (defaultEnv).
type env struct {
	diags  *diags.Env
	verbs  *verbs.Env
	rdma   *rdmatool.Env
	system bool
}

// defaultEnv is the running system.
func defaultEnv() env { return env{system: true} }

// diagsEnv is the diags family's Env: the running system's when the env
// is the system and no double was given.
func (e *env) diagsEnv() *diags.Env {
	if e.diags == nil && e.system {
		e.diags = diags.DefaultEnv()
	}
	return e.diags
}

// verbsEnv is the verbs family's Env (diagsEnv).
func (e *env) verbsEnv() *verbs.Env {
	if e.verbs == nil && e.system {
		e.verbs = verbs.DefaultEnv()
	}
	return e.verbs
}

// rdmaEnv is the rdma family's Env (diagsEnv).
func (e *env) rdmaEnv() *rdmatool.Env {
	if e.rdma == nil && e.system {
		e.rdma = rdmatool.DefaultEnv()
	}
	return e.rdma
}

// family is one package of tools (and the purerdma command's own).
type family uint8

const (
	famOwn family = iota
	famDiags
	famVerbs
	famRdma
	famPerf
	numFamilies
)

// toolFamilies is every tool's name and family, so that a run looks its
// tool up and builds that family's tools alone: a family's Tools and
// DefaultEnv are code, data and allocations of its package, which a run
// of another family's tool then does not touch (docs/performance.md,
// "Per tool"). TestToolFamilies checks it against the families' tools.
var toolFamilies = [...]struct {
	name string
	fam  family
}{
	{"version", famOwn}, {"exporter", famOwn},
	{"ibaddr", famDiags}, {"ibhosts", famDiags}, {"iblinkinfo", famDiags}, {"ibnetdiscover", famDiags},
	{"ibnodes", famDiags}, {"ibping", famDiags}, {"ibportstate", famDiags}, {"ibqueryerrors", famDiags},
	{"ibroute", famDiags}, {"ibstat", famDiags}, {"ibstatus", famDiags}, {"ibswitches", famDiags},
	{"ibtracert", famDiags}, {"perfquery", famDiags}, {"saquery", famDiags}, {"smpquery", famDiags},
	{"sminfo", famDiags}, {"umad", famDiags},
	{"asyncwatch", famVerbs}, {"ibv_asyncwatch", famVerbs}, {"counters", famVerbs}, {"devices", famVerbs},
	{"ibv_devices", famVerbs}, {"devinfo", famVerbs}, {"ibv_devinfo", famVerbs}, {"flowcount", famVerbs},
	{"rc_pingpong", famVerbs}, {"ibv_rc_pingpong", famVerbs}, {"ud_pingpong", famVerbs},
	{"ibv_ud_pingpong", famVerbs}, {"rping", famVerbs}, {"ucmatose", famVerbs}, {"cmatose", famVerbs},
	{"udaddy", famVerbs},
	{"link", famRdma}, {"resource", famRdma}, {"statistic", famRdma},
	{"ib_send_bw", famPerf}, {"ib_send_lat", famPerf}, {"ib_write_bw", famPerf}, {"ib_write_lat", famPerf},
	{"ib_read_bw", famPerf}, {"ib_read_lat", famPerf}, {"ib_atomic_bw", famPerf}, {"ib_atomic_lat", famPerf},
}

// registry is every tool, each family's bound to e, built a family at a
// time as they are looked up.
func registry(e env) *toolSet { return &toolSet{e: e} }

// toolSet is the tools of registry: a family's built on first use.
type toolSet struct {
	e     env
	built [numFamilies]bool
	tools [numFamilies][]cli.Tool
}

// family returns f's tools.
//
// Batch tools (cli.Tool.Batch) print a report and exit: their standard
// output is buffered and written a 4 KiB block at a time, as rdma-core's
// tools write through stdio when the output is not a terminal, where an
// unbuffered os.Stdout costs a write per Fprintf. The buffer is the size
// the run's sysfs reads already take from the heap: a larger one is a
// span of its own and a fresh heap page for every 4 KiB of report
// (docs/performance.md, "Per tool"). Tools that stream (asyncwatch,
// exporter, flowcount, rc_pingpong, rping, umad) write as they go.
func (ts *toolSet) family(f family) []cli.Tool {
	if f >= numFamilies {
		return nil
	}
	if ts.built[f] {
		return ts.tools[f]
	}
	e := &ts.e
	var tools []cli.Tool
	switch f {
	case famOwn:
		tools = []cli.Tool{
			{Name: "version", Batch: true, Run: runVersion,
				Summary: "print the purerdma version and the Go toolchain"},
			{Name: "exporter", Run: runExporter,
				Summary: "serve Prometheus metrics (runs rdma_exporter, installed next to purerdma or on PATH): port counters (node_exporter's infiniband names), hw_counters, netlink statistics, counted flows: [--web.listen-address :9915] [--config.flows FILE]"},
		}
	case famDiags:
		tools = diags.Tools(e.diagsEnv())
	case famVerbs:
		tools = verbs.Tools(e.verbsEnv())
	case famRdma:
		tools = rdmatool.Tools(e.rdmaEnv())
	case famPerf:
		tools = perf.Tools()
	}
	ts.built[f], ts.tools[f] = true, tools
	return tools
}

// lookup returns the tool called name: from its family's static table,
// bound alone, where the family has one; else from the family's tools.
func (ts *toolSet) lookup(name string) (cli.Tool, bool) {
	for _, n := range toolFamilies {
		if n.name != name {
			continue
		}
		e := &ts.e
		switch n.fam {
		case famDiags:
			return diags.Tool(e.diagsEnv(), name)
		case famVerbs:
			return verbs.Tool(e.verbsEnv(), name)
		case famRdma:
			return rdmatool.Tool(e.rdmaEnv(), name)
		}
		for _, t := range ts.family(n.fam) {
			if t.Name == name {
				return t, true
			}
		}
		break
	}
	return cli.Tool{}, false
}

// all returns every tool, family by family.
func (ts *toolSet) all() []cli.Tool {
	var out []cli.Tool
	for f := range numFamilies {
		out = append(out, ts.family(f)...)
	}
	return out
}

// startTool runs t as name, buffering its standard output when it is a
// batch tool; the buffer is flushed whatever the tool returns.
func startTool(t cli.Tool, args []string, stdout, stderr io.Writer) error {
	if !t.Batch {
		return t.Run(args, stdout, stderr)
	}
	bw := bufio.NewWriterSize(stdout, 4<<10)
	err := t.Run(args, bw, stderr)
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	return err
}

func main() {
	growStack(0)
	err := run(os.Args, os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	if ee, ok := err.(cli.ExitError); ok {
		os.Exit(ee.Code)
	}
	fmt.Fprintln(os.Stderr, "purerdma:", err)
	os.Exit(1)
}

// growStack grows the main goroutine's stack from the runtime's 2 KiB to
// 16 KiB once, while it is three frames deep. A tool's calls reach 8 KiB
// and more; left to itself the stack grows twice (2 → 4 → 8 KiB) with the
// tool's whole call chain on it, and every growth walks each frame
// through the binary's PC tables (runtime.pcvalue), about 30 k
// instructions each and pages of the tables touched (docs/performance.md,
// "Per tool").
//
//go:noinline
func growStack(i int) byte {
	var pad [12 << 10]byte
	return pad[i&(len(pad)-1)]
}

// run dispatches on the program name (busybox-style) or on the first
// argument, on the running system.
func run(argv []string, stdout, stderr io.Writer) error {
	return runIn(registry(defaultEnv()), argv, stdout, stderr)
}

// runIn is run among tools.
func runIn(tools *toolSet, argv []string, stdout, stderr io.Writer) error {
	if len(argv) == 0 {
		return usage(tools, stderr)
	}
	name := filepath.Base(argv[0])
	if t, ok := tools.lookup(name); ok && name != "purerdma" {
		return startTool(t, argv[1:], stdout, stderr)
	}
	if len(argv) < 2 {
		return usage(tools, stderr)
	}
	switch argv[1] {
	case "help", "-h", "-help", "--help":
		if len(argv) > 2 {
			return toolHelp(tools, argv[2], argv[3:], stdout, stderr)
		}
		listTools(tools, stdout)
		return nil
	}
	t, ok := tools.lookup(argv[1])
	if !ok {
		fmt.Fprintf(stderr, "purerdma: unknown tool %q\n", argv[1])
		listTools(tools, stderr)
		return cli.ExitError{Code: 2}
	}
	return startTool(t, argv[2:], stdout, stderr)
}

// toolHelp is `purerdma help TOOL`: the tool's own -h text on
// standard output and status 0, whatever status the tool's -h has
// (ibstatus -h exits 255, as the infiniband-diags script does).
func toolHelp(tools *toolSet, name string, extra []string, stdout, stderr io.Writer) error {
	t, ok := tools.lookup(name)
	if !ok || len(extra) > 0 {
		if !ok {
			fmt.Fprintf(stderr, "purerdma help: unknown tool %q\n", name)
		} else {
			fmt.Fprintf(stderr, "purerdma help: one tool at a time (got %q after %s)\n", extra[0], name)
		}
		listTools(tools, stderr)
		return cli.ExitError{Code: 2}
	}
	var out bytes.Buffer
	err := t.Run([]string{"-h"}, &out, &out)
	var ee cli.ExitError
	if err != nil && !errors.As(err, &ee) {
		return err
	}
	_, err = stdout.Write(out.Bytes())
	return err
}

func usage(tools *toolSet, w io.Writer) error {
	fmt.Fprintln(w, "usage: purerdma TOOL [ARGS...]   (or run it through a symlink named TOOL)")
	listTools(tools, w)
	return cli.ExitError{Code: 2}
}

func listTools(tools *toolSet, w io.Writer) {
	sorted := tools.all()
	slices.SortFunc(sorted, func(a, b cli.Tool) int { return strings.Compare(a.Name, b.Name) })
	fmt.Fprintln(w, "tools:")
	for _, t := range sorted {
		fmt.Fprintf(w, "  %-12s %s\n", t.Name, t.Summary)
	}
	if len(sorted) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
}
