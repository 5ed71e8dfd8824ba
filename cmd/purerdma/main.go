package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/cmd/purerdma/internal/diags"
	"github.com/purerdma/rdma/cmd/purerdma/internal/perf"
	"github.com/purerdma/rdma/cmd/purerdma/internal/rdmatool"
	"github.com/purerdma/rdma/cmd/purerdma/internal/verbs"
)

// env is what the tools reach the system through, one Env a family: the
// running system in main, doubles in tests (passed in, never swapped
// package variables).
type env struct {
	diags *diags.Env
	verbs *verbs.Env
	rdma  *rdmatool.Env
}

// defaultEnv is the running system.
func defaultEnv() env {
	return env{diags: diags.DefaultEnv(), verbs: verbs.DefaultEnv(), rdma: rdmatool.DefaultEnv()}
}

// registry is every tool by name, each family's bound to e.
//
// Batch tools (cli.Tool.Batch) print a report and exit: their standard
// output is buffered and written once at the end (one write(2) for a
// report up to 64 KiB, as rdma-core's tools do through stdio when the
// output is not a terminal), where an unbuffered os.Stdout costs a write
// per Fprintf. Tools that stream (asyncwatch, exporter, flowcount,
// rc_pingpong, rping, umad) write as they go.
func registry(e env) map[string]cli.Tool {
	own := []cli.Tool{
		{Name: "version", Batch: true, Run: runVersion,
			Summary: "print the purerdma version and the Go toolchain"},
		{Name: "exporter", Run: runExporter,
			Summary: "serve Prometheus metrics (runs rdma_exporter, installed next to purerdma or on PATH): port counters (node_exporter's infiniband names), hw_counters, netlink statistics, counted flows: [--web.listen-address :9915] [--config.flows FILE]"},
	}
	tools := map[string]cli.Tool{}
	for _, family := range [][]cli.Tool{own, diags.Tools(e.diags), verbs.Tools(e.verbs), rdmatool.Tools(e.rdma), perf.Tools()} {
		for _, t := range family {
			if _, dup := tools[t.Name]; dup {
				panic("purerdma: tool registered twice: " + t.Name)
			}
			tools[t.Name] = t
		}
	}
	return tools
}

// startTool runs t as name, buffering its standard output when it is a
// batch tool; the buffer is flushed whatever the tool returns.
func startTool(t cli.Tool, args []string, stdout, stderr io.Writer) error {
	if !t.Batch {
		return t.Run(args, stdout, stderr)
	}
	bw := bufio.NewWriterSize(stdout, 64<<10)
	err := t.Run(args, bw, stderr)
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	return err
}

func main() {
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

// run dispatches on the program name (busybox-style) or on the first
// argument, on the running system.
func run(argv []string, stdout, stderr io.Writer) error {
	return runIn(registry(defaultEnv()), argv, stdout, stderr)
}

// runIn is run among tools.
func runIn(tools map[string]cli.Tool, argv []string, stdout, stderr io.Writer) error {
	if len(argv) == 0 {
		return usage(tools, stderr)
	}
	name := filepath.Base(argv[0])
	if t, ok := tools[name]; ok && name != "purerdma" {
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
	t, ok := tools[argv[1]]
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
func toolHelp(tools map[string]cli.Tool, name string, extra []string, stdout, stderr io.Writer) error {
	t, ok := tools[name]
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

func usage(tools map[string]cli.Tool, w io.Writer) error {
	fmt.Fprintln(w, "usage: purerdma TOOL [ARGS...]   (or run it through a symlink named TOOL)")
	listTools(tools, w)
	return cli.ExitError{Code: 2}
}

func listTools(tools map[string]cli.Tool, w io.Writer) {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "tools:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, tools[n].Summary)
	}
	if len(names) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
}
