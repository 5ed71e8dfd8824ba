// Command purerdma is purerdma's multi-call tool: one static, cgo-free
// binary that does the work of rdma-core's diagnostic tools (ibstat,
// ibstatus, perfquery, ibv_devices, ibv_devinfo, …) through the library.
//
// Run a tool as a subcommand (`purerdma ibstat`) or, busybox-style, through
// a symlink named after it (`ln -s purerdma ibstat; ./ibstat`). `purerdma
// help` lists the tools.
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
)

// A tool is one subcommand. run gets the arguments after the tool's name.
type tool struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// tools is filled by the init functions of the files that implement them.
var tools = map[string]tool{}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) error) {
	if _, dup := tools[name]; dup {
		panic("purerdma: tool registered twice: " + name)
	}
	tools[name] = tool{summary: summary, run: run}
}

// batchTools print a report and exit: their standard output is buffered
// and written once at the end (one write(2) for a report up to 64 KiB, as
// rdma-core's tools do through stdio when the output is not a terminal),
// where an unbuffered os.Stdout costs a write per Fprintf. Tools that
// stream (asyncwatch, exporter, flowcount, rc_pingpong, rping, umad) write as
// they go.
var batchTools = map[string]bool{
	"counters": true, "devices": true, "ibv_devices": true, "devinfo": true, "ibv_devinfo": true,
	"ibstat": true, "ibstatus": true, "link": true, "perfquery": true, "resource": true, "version": true,
}

// startTool runs t as name, buffering its standard output when it is a
// batch tool; the buffer is flushed whatever the tool returns.
func startTool(name string, t tool, args []string, stdout, stderr io.Writer) error {
	if !batchTools[name] {
		return t.run(args, stdout, stderr)
	}
	bw := bufio.NewWriterSize(stdout, 64<<10)
	err := t.run(args, bw, stderr)
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	return err
}

// exitError carries a specific exit status without a message of its own
// (the tool already printed what the user needs).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	err := run(os.Args, os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	if ee, ok := err.(exitError); ok {
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "purerdma:", err)
	os.Exit(1)
}

// run dispatches on the program name (busybox-style) or on the first
// argument.
func run(argv []string, stdout, stderr io.Writer) error {
	if len(argv) == 0 {
		return usage(stderr)
	}
	name := filepath.Base(argv[0])
	if t, ok := tools[name]; ok && name != "purerdma" {
		return startTool(name, t, argv[1:], stdout, stderr)
	}
	if len(argv) < 2 {
		return usage(stderr)
	}
	switch argv[1] {
	case "help", "-h", "-help", "--help":
		if len(argv) > 2 {
			return toolHelp(argv[2], argv[3:], stdout, stderr)
		}
		listTools(stdout)
		return nil
	}
	t, ok := tools[argv[1]]
	if !ok {
		fmt.Fprintf(stderr, "purerdma: unknown tool %q\n", argv[1])
		listTools(stderr)
		return exitError{2}
	}
	return startTool(argv[1], t, argv[2:], stdout, stderr)
}

// toolHelp is `purerdma help TOOL`: the tool's own -h text on
// standard output and status 0, whatever status the tool's -h has
// (ibstatus -h exits 255, as the infiniband-diags script does).
func toolHelp(name string, extra []string, stdout, stderr io.Writer) error {
	t, ok := tools[name]
	if !ok || len(extra) > 0 {
		if !ok {
			fmt.Fprintf(stderr, "purerdma help: unknown tool %q\n", name)
		} else {
			fmt.Fprintf(stderr, "purerdma help: one tool at a time (got %q after %s)\n", extra[0], name)
		}
		listTools(stderr)
		return exitError{2}
	}
	var out bytes.Buffer
	err := t.run([]string{"-h"}, &out, &out)
	var ee exitError
	if err != nil && !errors.As(err, &ee) {
		return err
	}
	_, err = stdout.Write(out.Bytes())
	return err
}

func usage(w io.Writer) error {
	fmt.Fprintln(w, "usage: purerdma TOOL [ARGS...]   (or run it through a symlink named TOOL)")
	listTools(w)
	return exitError{2}
}

func listTools(w io.Writer) {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "tools:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, tools[n].summary)
	}
	if len(names) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
}
