// Package ibsimtest runs a simulated InfiniBand fabric for tests: ibsim
// (Debian's ibsim-utils) simulating the switches and HCAs of a net file,
// with an SMA and a PMA on every port, and OpenSM attached to it through
// libumad2sim (Debian's libumad2sim0), which assigns the LIDs. The C tools
// of infiniband-diags run against the same fabric through libumad2sim
// (Fabric.Run), and purerdma's umad ports reach it over ibsim's own socket
// protocol (umad.OpenSimPort). docs/ibsim.md describes the test bed.
//
// Every Fabric has its own socket base (IBSIM_SOCKNAME), so tests and
// packages run side by side; Start skips the test, naming the reason, when
// ibsim, OpenSM or libumad2sim is not installed (`make test` installs
// them).
package ibsimtest

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Small is the net file of the small fabric: two switches (Switch1,
// Switch2) joined by two links, two HCAs (Hca1–Hca4, two ports each, port
// 1 cabled) on each.
//
//go:embed testdata/net.small
var Small string

// Ring is the net file of the ring fabric: six switches (Ring1–Ring6) in
// a ring with a chord (Ring1–Ring4), an HCA on each (h1–h6), and a
// dual-homed HCA (Dual) on Ring2 and Ring5.
//
//go:embed testdata/net.ring
var Ring string

// Line is the net file of the line fabric: sixteen switches
// (Line1–Line16) in a row with HCAs at both ends (Head, Tail) and in the
// middle (Mid); OpenSM attaches at Head, 17 hops from Tail.
//
//go:embed testdata/net.line
var Line string

// Wide is the net file of the wide fabric: a 36-port switch (Wide36) with
// 24 HCAs (w1–w24) at mixed widths and speeds, uncabled ports, and a
// second switch (Edge, HCAs e1 and e2) on two links.
//
//go:embed testdata/net.wide
var Wide string

// Big is the net file of the 1,052-node fat tree, FatTree(BigSpines,
// BigLeaves, BigHCAs, BigPorts), as committed in testdata.
//
//go:embed testdata/net.fattree1k
var Big string

// Where Debian's packages put the programs and the preload library;
// Available resolves IBSim and OpenSM on PATH, /usr/bin and /usr/sbin.
var (
	IBSim     = "ibsim"
	OpenSM    = "opensm"
	UmadToSim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
)

func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/bin", "/usr/sbin"} {
		p := filepath.Join(d, filepath.Base(name))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// Options tune Start.
type Options struct {
	// Console keeps ibsim's console open (no -n) on a pipe, for
	// Fabric.Console: error injection (PerformanceSet …).
	Console bool
	// SMNode is the node OpenSM attaches to through libumad2sim's
	// SIM_HOST ("" for ibsim's default, the first node of the net file).
	SMNode string
	// Nodes and Switches raise ibsim's limits (-N, -S) for large fabrics.
	Nodes, Switches int
	// Timeout bounds the wait for the subnet (default 60 s).
	Timeout time.Duration
}

// Fabric is a running ibsim with OpenSM MASTER on it.
type Fabric struct {
	// Sock is the socket base (IBSIM_SOCKNAME) of this fabric.
	Sock string
	// Dir is the fabric's directory: the net file, the logs, and the
	// working directory of every process (libumad2sim writes sys-<pid>
	// trees there).
	Dir string
	// Net is the net file's path.
	Net string

	ibsim, sm *exec.Cmd
	ibsimDone chan struct{} // closed once ibsim exited (and was waited for)
	console   io.WriteCloser
	mu        sync.Mutex
	out       bytes.Buffer // ibsim's stdout and stderr
}

var seq atomic.Int64

var (
	availOnce sync.Once
	availWhy  string
)

// Available returns why the test bed cannot run here, or "" when it can.
func Available() string {
	availOnce.Do(func() { availWhy = available() })
	return availWhy
}

func available() string {
	if runtimeGOARCH() != "amd64" {
		return "the ibsim test bed runs on amd64 (Debian's libumad2sim path is x86_64)"
	}
	const how = " (apt-get install ibsim-utils libumad2sim0 opensm infiniband-diags; `make test` does)"
	for _, p := range []*string{&IBSim, &OpenSM} {
		path, err := lookPath(*p)
		if err != nil {
			return *p + " is not installed" + how
		}
		*p = path
	}
	if _, err := os.Stat(UmadToSim); err != nil {
		return UmadToSim + " is not installed" + how
	}
	if _, err := lookPath("ibnetdiscover"); err != nil {
		return "infiniband-diags is not installed" + how
	}
	return ""
}

// Start starts ibsim on net (a net file's text) and OpenSM on it, waits
// until OpenSM is MASTER, every port has a LID and every link is Active,
// and stops both when the test ends. It skips t
// when the test bed is not installed.
func Start(t testing.TB, net string, o Options) *Fabric {
	t.Helper()
	if why := Available(); why != "" {
		t.Skip("ibsim test bed: " + why)
	}
	f, err := start(t.TempDir(), net, o)
	if f != nil {
		t.Cleanup(f.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// StartDir is Start outside a test (benchmarks' helpers, tools): the
// caller calls Stop.
func StartDir(dir, net string, o Options) (*Fabric, error) {
	if why := Available(); why != "" {
		return nil, errors.New(why)
	}
	f, err := start(dir, net, o)
	if err != nil && f != nil {
		f.Stop()
		return nil, err
	}
	return f, err
}

func start(dir, net string, o Options) (*Fabric, error) {
	f := &Fabric{Dir: dir, Net: filepath.Join(dir, "net"),
		Sock: fmt.Sprintf("pr%d-%d", os.Getpid(), seq.Add(1))}
	if err := os.WriteFile(f.Net, []byte(net), 0o644); err != nil {
		return nil, err
	}
	args := []string{"-s"}
	if !o.Console {
		args = append(args, "-n")
	}
	if o.Nodes > 0 {
		args = append(args, "-N", fmt.Sprint(o.Nodes))
	}
	if o.Switches > 0 {
		args = append(args, "-S", fmt.Sprint(o.Switches))
	}
	args = append(args, f.Net)
	f.ibsim = exec.Command(IBSim, args...)
	f.ibsim.Dir = dir
	f.ibsim.Env = append(os.Environ(), "IBSIM_SOCKNAME="+f.Sock)
	f.ibsim.Stdout, f.ibsim.Stderr = &lockedWriter{f: f}, &lockedWriter{f: f}
	f.ibsim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if o.Console {
		w, err := f.ibsim.StdinPipe()
		if err != nil {
			return nil, err
		}
		f.console = w
	}
	if err := f.ibsim.Start(); err != nil {
		return nil, fmt.Errorf("ibsim: %w", err)
	}
	f.ibsimDone = make(chan struct{})
	go func() { _ = f.ibsim.Wait(); close(f.ibsimDone) }()
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for !f.listening() {
		if time.Now().After(deadline) || f.exited() {
			return f, fmt.Errorf("ibsim did not listen on @%s:ctl: %s", f.Sock, f.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	log := filepath.Join(dir, "opensm.log")
	// -s 0: no periodic sweeps after the first, so that no traffic of
	// OpenSM's moves the counters while tests compare them.
	smArgs := []string{"-f", log, "-s", "0"}
	f.sm = exec.Command(OpenSM, smArgs...)
	f.sm.Dir = dir
	f.sm.Env = f.Env(o.SMNode)
	f.sm.Env = append(f.sm.Env, "OSM_CACHE_DIR="+filepath.Join(dir, "osm"))
	f.sm.Stdout, f.sm.Stderr = &lockedWriter{f: f}, &lockedWriter{f: f}
	f.sm.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := f.sm.Start(); err != nil {
		return f, fmt.Errorf("opensm: %w", err)
	}
	for {
		b, _ := os.ReadFile(log)
		if bytes.Contains(b, []byte("Entering MASTER state")) {
			break
		}
		if time.Now().After(deadline) {
			return f, fmt.Errorf("OpenSM did not become MASTER in %v:\n%s\n%s", timeout, b, f.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// MASTER comes before OpenSM has given every port its LID and made
	// every link Active on a large fabric: wait until infiniband-diags'
	// ibnetdiscover finds no port without a LID and iblinkinfo no link
	// Armed or Initialize.
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		out, err := f.Run(ctx, o.SMNode, "ibnetdiscover")
		if err == nil && !bytes.Contains(out, []byte(" lid 0 ")) {
			// and until no link is still on its way to Active.
			out, err = f.Run(ctx, o.SMNode, "iblinkinfo")
			if err == nil && !bytes.Contains(out, []byte("Armed/")) && !bytes.Contains(out, []byte("Initialize/")) {
				cancel()
				return f, nil
			}
		}
		cancel()
		if time.Now().After(deadline) {
			return f, fmt.Errorf("the subnet did not come up in %v (err %v):\n%s", timeout, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listening reports whether ibsim's control socket is bound.
func (f *Fabric) listening() bool {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte("@"+f.Sock+":ctl"))
}

type lockedWriter struct{ f *Fabric }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	return w.f.out.Write(p)
}

// Output returns what ibsim and OpenSM wrote so far.
func (f *Fabric) Output() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.String()
}

// Env returns the environment of a process attached through libumad2sim
// at node (SIM_HOST; "" for ibsim's default node).
func (f *Fabric) Env(node string) []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "LD_PRELOAD" || k == "SIM_HOST" || k == "IBSIM_SOCKNAME" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "LD_PRELOAD="+UmadToSim, "IBSIM_SOCKNAME="+f.Sock)
	if node != "" {
		env = append(env, "SIM_HOST="+node)
	}
	return env
}

// Command returns the command of a C tool (smpquery, perfquery,
// ibnetdiscover, …) attached at node through libumad2sim, in the
// fabric's directory.
func (f *Fabric) Command(ctx context.Context, node, tool string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Dir = f.Dir
	cmd.Env = f.Env(node)
	return cmd
}

// Run runs a C tool (smpquery, perfquery, ibnetdiscover, …) attached at
// node through libumad2sim and returns its standard output; the error
// carries its standard error.
func (f *Fabric) Run(ctx context.Context, node, tool string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Dir = f.Dir
	cmd.Env = f.Env(node)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// Console sends one command line to ibsim's console (Options.Console),
// for example `PerformanceSet "Hca1"[1] PortCounters.SymbolErrorCounter=7`
// (ibsim/sim_cmd.c). It returns once ibsim has run the command (its
// prompt comes back), so a query sent after it sees its effect.
func (f *Fabric) Console(line string) error {
	if f.console == nil {
		return errors.New("ibsimtest: the fabric was started without Options.Console")
	}
	before := strings.Count(f.Output(), "sim> ")
	if _, err := io.WriteString(f.console, line+"\n"); err != nil {
		return err
	}
	// ibsim prints its prompt again once the command is done.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(f.Output(), "sim> ") <= before {
		if time.Now().After(deadline) {
			return fmt.Errorf("ibsim did not finish %q:\n%s", line, f.Output())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Pause stops ibsim (SIGSTOP) until Resume: the fabric stalls as a
// simulator busy elsewhere does, nothing answered, nothing lost.
func (f *Fabric) Pause() error { return f.signal(syscall.SIGSTOP) }

// Resume lets a paused ibsim run again (SIGCONT).
func (f *Fabric) Resume() error { return f.signal(syscall.SIGCONT) }

// Kill kills ibsim (SIGKILL) and waits for it: the fabric is gone.
func (f *Fabric) Kill() error {
	if err := f.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-f.ibsimDone
	return nil
}

func (f *Fabric) signal(sig syscall.Signal) error {
	if f.ibsim == nil || f.ibsim.Process == nil || f.exited() {
		return errors.New("ibsimtest: ibsim is not running")
	}
	return f.ibsim.Process.Signal(sig)
}

// exited reports whether ibsim has exited.
func (f *Fabric) exited() bool {
	select {
	case <-f.ibsimDone:
		return true
	default:
		return false
	}
}

// Running reports whether ibsim is still there and OpenSM still
// answers: sminfo (infiniband-diags', through libumad2sim, attached at
// node) finds the SM MASTER within the time ctx leaves.
func (f *Fabric) Running(ctx context.Context, node string) error {
	if f.exited() {
		return fmt.Errorf("ibsim exited (%v):\n%s", f.ibsim.ProcessState, f.Output())
	}
	out, err := f.Run(ctx, node, "sminfo")
	if err != nil {
		return fmt.Errorf("%w\n%s", err, f.Output())
	}
	if !bytes.Contains(out, []byte("SMINFO_MASTER")) {
		return fmt.Errorf("sminfo: %s", out)
	}
	return nil
}

// Stop stops OpenSM, then ibsim (which frees every client slot), and
// waits for both. It is safe to call more than once, and after Pause.
func (f *Fabric) Stop() {
	_ = f.Resume()
	stop := func(c *exec.Cmd, done <-chan struct{}) {
		_ = c.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
	if c := f.sm; c != nil && c.Process != nil && c.ProcessState == nil {
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		stop(c, done)
	}
	if f.ibsimDone != nil && !f.exited() {
		stop(f.ibsim, f.ibsimDone)
	}
	if f.console != nil {
		_ = f.console.Close()
	}
}

// LIDs returns the LID of every node's first cabled port (the switch's
// port 0) by node description, from ibnetdiscover's output as seen at
// node: the test's oracle for where things are.
func (f *Fabric) LIDs(ctx context.Context, node string) (map[string]int, error) {
	out, err := f.Run(ctx, node, "ibnetdiscover")
	if err != nil {
		return nil, err
	}
	lids := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		// Switch	8 "S-…"		# "Switch2" base port 0 lid 3 lmc 0
		// [1](100004) 	"S-…"[1]		# lid 4 lmc 0 "Switch2" …
		var desc string
		var lid int
		switch {
		case strings.HasPrefix(line, "Switch"):
			if i := strings.Index(line, "# \""); i >= 0 {
				rest := line[i+3:]
				j := strings.IndexByte(rest, '"')
				if j < 0 {
					continue
				}
				desc = rest[:j]
				if _, err := fmt.Sscanf(rest[j+1:], " base port 0 lid %d", &lid); err != nil {
					continue
				}
				lids[desc] = lid
			}
		case strings.HasPrefix(line, "Ca"):
			if i := strings.Index(line, "# \""); i >= 0 {
				desc = strings.TrimSuffix(line[i+3:], "\"")
				if sc.Scan() {
					l := sc.Text()
					if k := strings.Index(l, "# lid "); k >= 0 {
						if _, err := fmt.Sscanf(l[k:], "# lid %d", &lid); err == nil {
							lids[desc] = lid
						}
					}
				}
			}
		}
	}
	return lids, nil
}
