package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli/clitest"
	"github.com/purerdma/rdma/cmd/purerdma/internal/diags"
)

// ibstatFixtures holds the sysfs trees of the tests (sysfs/testdata).
const ibstatFixtures = "../../sysfs/testdata"

// runTool runs `purerdma ARGS...` on the running system and returns its
// outputs and exit status.
func runTool(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	return clitest.Code(run(append([]string{"purerdma"}, args...), &out, &errb), &out, &errb)
}

func TestDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"purerdma", "version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "purerdma ") {
		t.Fatalf("subcommand: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := run([]string{"/usr/local/bin/version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "purerdma ") {
		t.Fatalf("symlink: %q, %v", out.String(), err)
	}
	var ee cli.ExitError
	if err := run([]string{"purerdma", "no-such-tool"}, &out, &errb); !errors.As(err, &ee) || ee.Code != 2 {
		t.Fatalf("unknown tool: %v", err)
	}
	if err := run([]string{"purerdma"}, &out, &errb); !errors.As(err, &ee) {
		t.Fatalf("no tool: %v", err)
	}
	out.Reset()
	if err := run([]string{"purerdma", "help"}, &out, &errb); err != nil || !strings.Contains(out.String(), "version") {
		t.Fatalf("help: %q, %v", out.String(), err)
	}
}

// writeCounter counts the Write calls that reach it.
type writeCounter struct {
	writes int
	bytes.Buffer
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestBatchToolsWriteOnce: a report tool's output reaches standard output
// in one write (ibstat's 2-device rxe report is 40 lines), as rdma-core's
// stdio does when the output is not a terminal.
func TestBatchToolsWriteOnce(t *testing.T) {
	e := defaultEnv()
	e.diags = &diags.Env{SysfsRoot: ibstatFixtures + "/rxe-6.1"}
	for _, args := range [][]string{{"ibstat"}, {"ibstatus"}, {"version"}} {
		var out writeCounter
		var errb bytes.Buffer
		if err := runIn(registry(e), append([]string{"purerdma"}, args...), &out, &errb); err != nil {
			t.Fatalf("%v: %v (%s)", args, err, errb.String())
		}
		if out.writes != 1 || out.Len() == 0 {
			t.Errorf("%v: %d writes of %d bytes, want one", args, out.writes, out.Len())
		}
	}
}
