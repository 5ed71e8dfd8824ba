//go:build integration

package main

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
	"sync"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// ppIters is the number of messages each VM ping-pong exchanges.
const ppIters = 10000

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
		g.err = run(append([]string{"purerdma", "rc_pingpong", "--timeout", "4m"}, args...), &g.out, &g.errb)
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
// rdma-core's, both against the C server, in interleaved rounds: the
// median of each and their ratio. It asserts nothing about speed (the
// guest is emulated and shares the host).
func TestVMRCPingpongRate(t *testing.T) {
	vmtest.Require(t)
	const rounds, iters = 7, 2000
	var goUS, cUS []float64
	port := 18700
	for r := 0; r < rounds; r++ {
		for _, who := range []string{"C", "Go"} {
			port++
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			args := []string{"-d", vmtest.Dev0, "-g", "0", "-n", strconv.Itoa(iters), "-s", "64", "-p", strconv.Itoa(port)}
			var srv bytes.Buffer
			c := cTool(ctx, args...)
			c.Stdout, c.Stderr = &srv, &srv
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			waitListen(t, port, time.Minute)
			cargs := []string{"-d", vmtest.Dev1, "-g", "0", "-n", strconv.Itoa(iters), "-s", "64", "-p", strconv.Itoa(port), "127.0.0.1"}
			var out string
			if who == "C" {
				b, err := cTool(ctx, cargs...).CombinedOutput()
				if err != nil {
					t.Fatalf("C client: %v\n%s", err, b)
				}
				out = string(b)
			} else {
				out = startGo(cargs...).wait(t, "Go client")
			}
			if err := c.Wait(); err != nil {
				t.Fatalf("C server: %v\n%s", err, srv.String())
			}
			cancel()
			m := ppIterLine.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("%s client printed no rate:\n%s", who, out)
			}
			us, _ := strconv.ParseFloat(m[3], 64)
			if who == "C" {
				cUS = append(cUS, us)
			} else {
				goUS = append(goUS, us)
			}
		}
	}
	med := func(v []float64) float64 { s := append([]float64(nil), v...); sort.Float64s(s); return s[len(s)/2] }
	gm, cm := med(goUS), med(cUS)
	report := fmt.Sprintf("rc_pingpong rate on %s, kernel %s, %d rounds of %d x 64 B, C server: C client median %.2f usec/iter (%.0f msg/s), Go client %.2f usec/iter (%.0f msg/s); Go/C message rate %.2f (C %v, Go %v)\n",
		vmtest.Dev1, vmtest.Kernel(), rounds, iters, cm, 1e6/cm, gm, 1e6/gm, cm/gm, cUS, goUS)
	t.Log(report)
	var mu sync.Mutex
	mu.Lock()
	defer mu.Unlock()
	if dir := os.Getenv("VMRUN_REPO"); dir != "" {
		os.MkdirAll(dir+"/integration/.cache/reports", 0o755)
		os.WriteFile(dir+"/integration/.cache/reports/rc_pingpong-rate-"+vmtest.Kernel()+".txt", []byte(report), 0o644)
	}
}
