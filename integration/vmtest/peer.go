package vmtest

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Peer is a C test peer that serves chunks of work on its standard input
// (integration/verbsbench, integration/cmbench): each line asks for one
// chunk, and the peer answers with one line, the nanoseconds an operation
// took. A Go benchmark alternates its own chunks with the peer's, in one
// process of each side.
type Peer struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	answers *bufio.Scanner
	stderr  strings.Builder
}

// StartPeer starts path with args. The test's cleanup closes the peer's
// standard input and fails the test when the peer then exits with an
// error.
func StartPeer(t testing.TB, path string, args ...string) *Peer {
	t.Helper()
	p := &Peer{name: path, cmd: exec.Command(path, args...)}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.answers = bufio.NewScanner(stdout)
	t.Cleanup(func() {
		p.stdin.Close()
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s: %v; stderr: %s", p.name, err, p.stderr.String())
		}
	})
	return p
}

// Ask sends one request line and returns the peer's answer, ns/op.
func (p *Peer) Ask(t testing.TB, line string) float64 {
	t.Helper()
	if _, err := fmt.Fprintln(p.stdin, line); err != nil {
		t.Fatalf("%s: %v; stderr: %s", p.name, err, p.stderr.String())
	}
	if !p.answers.Scan() {
		t.Fatalf("%s said nothing to %q: %v; stderr: %s", p.name, line, p.answers.Err(), p.stderr.String())
	}
	ns, err := strconv.ParseFloat(p.answers.Text(), 64)
	if err != nil {
		t.Fatalf("%s answered %q to %q", p.name, p.answers.Text(), line)
	}
	return ns
}
