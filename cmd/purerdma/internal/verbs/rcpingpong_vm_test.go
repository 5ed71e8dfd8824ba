//go:build integration

package verbs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// ppIters is the number of messages each VM ping-pong exchanges: 10,000,
// or VMRUN_PP_ITERS (make test's slice kernel and make integration-arm64
// run fewer).
var ppIters = vmtest.Count("VMRUN_PP_ITERS", 10000)

var ppIterLine = regexp.MustCompile(`(\d+) iters in ([0-9.]+) seconds = ([0-9.]+) usec/iter`)

// waitListen waits until something listens on TCP port p (in
// /proc/net/tcp or tcp6, state 0A), without connecting to it: both tools
// accept one connection only.
func waitListen(t *testing.T, p int, within time.Duration) {
	t.Helper()
	hexPort := fmt.Sprintf(":%04X ", p)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, _ := os.ReadFile(f)
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				fl := strings.Fields(sc.Text())
				if len(fl) > 3 && strings.HasSuffix(fl[1]+" ", hexPort) && fl[3] == "0A" {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on port %d after %v", p, within)
}

// goSide runs purerdma rc_pingpong in this process.
type goSide struct {
	out, errb bytes.Buffer
	err       error
	done      chan struct{}
}

func startGo(args ...string) *goSide {
	g := &goSide{done: make(chan struct{})}
	go func() {
		defer close(g.done)
		g.err = DefaultEnv().run(append([]string{"purerdma", "rc_pingpong", "--timeout", "4m"}, args...), &g.out, &g.errb)
	}()
	return g
}

func (g *goSide) wait(t *testing.T, what string) string {
	t.Helper()
	select {
	case <-g.done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("%s: still running after 5 minutes", what)
	}
	if g.err != nil {
		t.Fatalf("%s: %v\n%s%s", what, g.err, g.out.String(), g.errb.String())
	}
	return g.out.String()
}

func cTool(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ibv_rc_pingpong", args...)
}

func ppArgs(dev string, port int, extra ...string) []string {
	return append([]string{"-d", dev, "-g", "0", "-n", strconv.Itoa(ppIters), "-s", "4096", "-p", strconv.Itoa(port)}, extra...)
}

func wantVerified(t *testing.T, what, out string) {
	t.Helper()
	want := fmt.Sprintf("verified %d messages of 4096 bytes: every byte", ppIters)
	if !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("%d iters in", ppIters)) {
		t.Errorf("%s did not verify %d messages:\n%s", what, ppIters, out)
	}
}

// TestVMRCPingpongGoClientCServer: purerdma rc_pingpong on rxe1 as the
// client of rdma-core's ibv_rc_pingpong on rxe0, 10,000 messages of 4 KiB;
// the Go side checks every byte the C side echoes.
func TestVMRCPingpongGoClientCServer(t *testing.T) {
	vmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var srv bytes.Buffer
	c := cTool(ctx, ppArgs(vmtest.Dev0, 18601)...)
	c.Stdout, c.Stderr = &srv, &srv
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitListen(t, 18601, time.Minute)
	g := startGo(append(ppArgs(vmtest.Dev1, 18601), "--verify", "127.0.0.1")...)
	out := g.wait(t, "Go client")
	if err := c.Wait(); err != nil {
		t.Fatalf("C server: %v\n%s", err, srv.String())
	}
	wantVerified(t, "Go client", out)
	if !strings.Contains(srv.String(), fmt.Sprintf("%d iters in", ppIters)) {
		t.Errorf("C server:\n%s", srv.String())
	}
	t.Logf("Go client (kernel %s):\n%s\nC server:\n%s", vmtest.Kernel(), out, srv.String())
}

// TestVMRCPingpongCClientGoServer: ibv_rc_pingpong on rxe1 as the client
// of purerdma rc_pingpong on rxe0, in both of rc_pingpong's modes (busy
// polling, and completion events with -e).
func TestVMRCPingpongCClientGoServer(t *testing.T) {
	vmtest.Require(t)
	for i, mode := range [][]string{nil, {"-e"}} {
		port := 18611 + i
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		g := startGo(append(ppArgs(vmtest.Dev0, port, mode...), "--verify")...)
		waitListen(t, port, time.Minute)
		var cli bytes.Buffer
		c := cTool(ctx, append(ppArgs(vmtest.Dev1, port, mode...), "127.0.0.1")...)
		c.Stdout, c.Stderr = &cli, &cli
		err := c.Run()
		out := g.wait(t, fmt.Sprintf("Go server %v", mode))
		cancel()
		if err != nil {
			t.Fatalf("C client %v: %v\n%s", mode, err, cli.String())
		}
		wantVerified(t, "Go server", out)
		t.Logf("Go server %v (kernel %s):\n%s\nC client:\n%s", mode, vmtest.Kernel(), out, cli.String())
	}
}

// TestVMRCPingpongGoGo: purerdma on both sides, the server sleeping on
// completion events (two busy pollers on the guest's two CPUs would starve
// rxe's kernel work on 6.12), each checking every byte of the other's
// pattern.
func TestVMRCPingpongGoGo(t *testing.T) {
	vmtest.Require(t)
	srv := startGo(append(ppArgs(vmtest.Dev0, 18621, "-e"), "--verify")...)
	waitListen(t, 18621, time.Minute)
	cli := startGo(append(ppArgs(vmtest.Dev1, 18621), "--verify", "127.0.0.1")...)
	cout := cli.wait(t, "Go client")
	sout := srv.wait(t, "Go server")
	wantVerified(t, "Go client", cout)
	wantVerified(t, "Go server", sout)
	t.Logf("Go client (kernel %s):\n%s\nGo server:\n%s", vmtest.Kernel(), cout, sout)
}

// TestVMRCPingpongRate logs the message rate of purerdma's client against
// rdma-core's, each against the C server, in interleaved rounds: the C
// client, purerdma's (which yields the CPU between empty polls on rxe) and
// purerdma's with --spin (which polls as the C tool does). Each is a
// process, as a user runs it, and where the guest has taskset the server
// runs on CPU 0 and every client on CPU 1, so that no round puts both
// busy pollers on one CPU. The clients' order turns each round. It logs
// the medians and their ratios and asserts nothing about speed (the guest
// is emulated and shares the host).
func TestVMRCPingpongRate(t *testing.T) {
	vmtest.Require(t)
	// make bench runs 21 rounds: single rounds under TCG spread twofold.
	// make test runs one, which shows that the three clients still run
	// and print their rate.
	rounds, iters := vmtest.Rounds(1, 21), 2000
	bin, err := exec.LookPath("purerdma")
	if err != nil {
		t.Skip("the guest has no purerdma command (vmrun -cmds=false): " + err.Error())
	}
	pin := func(cpu string, argv ...string) []string { return argv }
	pinned := "unpinned (no taskset)"
	if ts, err := exec.LookPath("taskset"); err == nil {
		pin = func(cpu string, argv ...string) []string { return append([]string{ts, "-c", cpu}, argv...) }
		pinned = "server on CPU 0, clients on CPU 1"
	}
	clients := []struct {
		name string
		argv []string
	}{
		{"C", []string{"ibv_rc_pingpong"}},
		{"Go", []string{bin, "rc_pingpong", "--timeout", "4m"}},
		{"Go --spin", []string{bin, "rc_pingpong", "--timeout", "4m", "--spin"}},
	}
	us := make([][]float64, len(clients))
	port := 18700
	for r := 0; r < rounds; r++ {
		// The order turns each round, so that every client runs in every
		// slot as often: one client against itself moves by up to 16%
		// between two slots of a round (measured in an earlier round: git show
		// b840278:docs/performance.md, "C against C").
		for i := range clients {
			k := (i + r) % len(clients)
			cl := clients[k]
			port++
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			args := []string{"-d", vmtest.Dev0, "-g", "0", "-n", strconv.Itoa(iters), "-s", "64", "-p", strconv.Itoa(port)}
			var srv bytes.Buffer
			sv := pin("0", append([]string{"ibv_rc_pingpong"}, args...)...)
			c := exec.CommandContext(ctx, sv[0], sv[1:]...)
			c.Stdout, c.Stderr = &srv, &srv
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			waitListen(t, port, time.Minute)
			cargs := []string{"-d", vmtest.Dev1, "-g", "0", "-n", strconv.Itoa(iters), "-s", "64", "-p", strconv.Itoa(port), "127.0.0.1"}
			cv := pin("1", append(append([]string{}, cl.argv...), cargs...)...)
			b, err := exec.CommandContext(ctx, cv[0], cv[1:]...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s client: %v\n%s", cl.name, err, b)
			}
			if err := c.Wait(); err != nil {
				t.Fatalf("C server: %v\n%s", err, srv.String())
			}
			cancel()
			m := ppIterLine.FindStringSubmatch(string(b))
			if m == nil {
				t.Fatalf("%s client printed no rate:\n%s", cl.name, b)
			}
			v, _ := strconv.ParseFloat(m[3], 64)
			us[k] = append(us[k], v)
		}
	}
	med := func(v []float64) float64 { s := append([]float64(nil), v...); sort.Float64s(s); return s[len(s)/2] }
	cm := med(us[0])
	report := fmt.Sprintf("rc_pingpong rate on %s, kernel %s, %d interleaved rounds (the order turned each round) of %d x 64 B against the C server, %s; median usec/iter (msg/s), Go/C message rate:\n",
		vmtest.Dev1, vmtest.Kernel(), rounds, iters, pinned)
	for k, cl := range clients {
		m := med(us[k])
		report += fmt.Sprintf("  %-10s %8.2f (%6.0f)  %.2f  %v\n", cl.name, m, 1e6/m, cm/m, us[k])
	}
	t.Log(report)
	if dir := os.Getenv("VMRUN_REPO"); dir != "" {
		os.MkdirAll(dir+"/integration/.cache/reports", 0o755)
		os.WriteFile(dir+"/integration/.cache/reports/rc_pingpong-rate-"+vmtest.Kernel()+".txt", []byte(report), 0o644)
	}
}
