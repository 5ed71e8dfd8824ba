//go:build integration

package verbs

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// The mlx5 data path on mock0, the project's mlx5 model (docs/mock0.md),
// which executes the queues userspace writes: rdma-core 44's libmlx5
// against itself first (the model's calibration: libmlx5 has run on
// millions of ConnectX ports, so where it and the model disagree, the
// model is wrong), then purerdma's mlx5 provider against libmlx5 both
// ways, and against itself. mockIters messages of 4 KiB each where Go is
// a side (10,000; 2,000 on make test's slice kernel), 1,000 where libmlx5
// meets itself; the Go side checks every byte
// of what comes back (--verify), the C side validates its buffer as
// ibv_*_pingpong -c does.

// mockIters is the number of messages of each mock0 ping-pong with a Go
// side, and of ud_pingpong's on rxe: ppIters, 10,000 or VMRUN_PP_ITERS as
// for the rxe ping-pongs (make test's slice kernel runs 2,000).
var mockIters = ppIters

// ccIters is the number of messages of libmlx5 against itself on mock0
// (RC, UC and UD): enough to wrap the receive queue (500) and the CQs. Two C
// programs that both busy-poll keep both of the VM's CPUs spinning, and
// from one boot to the next one of the modes then takes 12–16 ms a
// message under TCG instead of 0.7–1 ms (RC in one boot, UD in another):
// 10,000 messages were 130 s of a kernel's test time in such a boot.
const ccIters = 1000

// runCPair runs a C ping-pong tool (ibv_rc_pingpong, ibv_uc_pingpong,
// ibv_ud_pingpong) as server and client on mock0, iters messages, and
// returns the client's and the server's output.
func runCPair(t *testing.T, tool string, port, iters int, extra ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := append([]string{"-d", vmtest.MockDev, "-g", "0", "-n", strconv.Itoa(iters), "-p", strconv.Itoa(port), "-c"}, extra...)
	var sout, cout bytes.Buffer
	srv := exec.CommandContext(ctx, tool, args...)
	srv.Stdout, srv.Stderr = &sout, &sout
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waitListen(t, port, time.Minute)
	cli := exec.CommandContext(ctx, tool, append(args, "127.0.0.1")...)
	cli.Stdout, cli.Stderr = &cout, &cout
	cerr := cli.Run()
	serr := srv.Wait()
	if cerr != nil || serr != nil {
		t.Fatalf("%s %v on %s: client %v, server %v\nclient:\n%s\nserver:\n%s", tool, extra, vmtest.MockDev, cerr, serr, &cout, &sout)
	}
	for _, out := range []string{cout.String(), sout.String()} {
		if !strings.Contains(out, fmt.Sprintf("%d iters in", iters)) || strings.Contains(out, "Incorrect") {
			t.Fatalf("%s %v on %s:\nclient:\n%s\nserver:\n%s", tool, extra, vmtest.MockDev, &cout, &sout)
		}
	}
	return cout.String(), sout.String()
}

// TestVMMockPingpongCC: libmlx5 against libmlx5 on mock0: RC busy
// polling, RC sleeping on completion events, RC through the ibv_wr_* API
// (-N), RC with 64 KiB messages, UC, and UD (1 KiB: the port's MTU).
func TestVMMockPingpongCC(t *testing.T) {
	vmtest.RequireMock(t)
	for i, c := range []struct {
		tool  string
		iters int
		extra []string
	}{
		{"ibv_rc_pingpong", ccIters, nil},
		{"ibv_rc_pingpong", ccIters, []string{"-e"}},
		{"ibv_rc_pingpong", ccIters, []string{"-N"}},
		{"ibv_rc_pingpong", 500, []string{"-s", "65536"}},
		{"ibv_uc_pingpong", ccIters, nil},
		{"ibv_ud_pingpong", ccIters, []string{"-s", "1024"}},
	} {
		cout, _ := runCPair(t, c.tool, 18900+i, c.iters, c.extra...)
		t.Logf("%s %v on %s (kernel %s), C to C: %s", c.tool, c.extra, vmtest.MockDev, vmtest.Kernel(), lastLine(cout))
	}
}

// TestVMMockPingpongGoC: purerdma rc_pingpong's mlx5 provider against
// libmlx5 on mock0, each side as client and server (the Go server busy
// polling and sleeping on events), and Go against Go, both on events;
// the Go side checks every byte.
func TestVMMockPingpongGoC(t *testing.T) {
	vmtest.RequireMock(t)
	args := func(port int) []string {
		return []string{"-d", vmtest.MockDev, "-g", "0", "-n", strconv.Itoa(mockIters), "-s", "4096", "-p", strconv.Itoa(port)}
	}
	want := fmt.Sprintf("verified %d messages of 4096 bytes: every byte", mockIters)
	check := func(what, out string) {
		t.Helper()
		if !strings.Contains(out, want) {
			t.Errorf("%s did not verify %d messages:\n%s", what, mockIters, out)
		}
	}
	t.Run("GoClientCServer", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		var srv bytes.Buffer
		c := cTool(ctx, args(18910)...)
		c.Stdout, c.Stderr = &srv, &srv
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		waitListen(t, 18910, time.Minute)
		out := startGo(append(args(18910), "--verify", "127.0.0.1")...).wait(t, "Go client")
		if err := c.Wait(); err != nil {
			t.Fatalf("C server: %v\n%s", err, &srv)
		}
		check("Go client", out)
		t.Logf("Go client, C server on %s (kernel %s): %s", vmtest.MockDev, vmtest.Kernel(), lastLine(out))
	})
	// Busy polling, and completion events (-e: mlx5 arms its CQs in user
	// space, mlx5_arm_cq, and mock0 raises one event per arm).
	for i, mode := range [][]string{nil, {"-e"}} {
		t.Run("CClientGoServer"+strings.Join(mode, ""), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			port := 18911 + 2*i
			g := startGo(append(append(args(port), mode...), "--verify")...)
			waitListen(t, port, time.Minute)
			var cli bytes.Buffer
			c := cTool(ctx, append(append(args(port), mode...), "127.0.0.1")...)
			c.Stdout, c.Stderr = &cli, &cli
			err := c.Run()
			out := g.wait(t, "Go server")
			if err != nil {
				t.Fatalf("C client: %v\n%s", err, &cli)
			}
			check("Go server", out)
			t.Logf("C client, Go server %v on %s (kernel %s): %s", mode, vmtest.MockDev, vmtest.Kernel(), lastLine(cli.String()))
		})
	}
	t.Run("GoGo", func(t *testing.T) {
		srv := startGo(append(args(18912), "-e", "--verify")...)
		waitListen(t, 18912, time.Minute)
		cout := startGo(append(args(18912), "-e", "--verify", "127.0.0.1")...).wait(t, "Go client")
		sout := srv.wait(t, "Go server")
		check("Go client", cout)
		check("Go server", sout)
		t.Logf("Go client, Go server on %s (kernel %s): %s", vmtest.MockDev, vmtest.Kernel(), lastLine(cout))
	})
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

// TestVMUDPingpong: purerdma ud_pingpong against rdma-core's
// ibv_ud_pingpong, each as client and server, and against itself, 10,000
// messages of 1 KiB (the MTU), on mock0 (libmlx5 and the mlx5 provider)
// and on rxe; the Go side checks every byte after the GRH.
func TestVMUDPingpong(t *testing.T) {
	vmtest.Require(t)
	devs := [][2]string{{vmtest.Dev0, vmtest.Dev1}}
	if vmtest.HasMock() {
		devs = append(devs, [2]string{vmtest.MockDev, vmtest.MockDev})
	}
	want := fmt.Sprintf("verified %d messages of 1024 bytes: every byte", mockIters)
	port := 18930
	for _, d := range devs {
		args := func(dev string) []string {
			port := port
			return []string{"-d", dev, "-g", "0", "-n", strconv.Itoa(mockIters), "-s", "1024", "-p", strconv.Itoa(port)}
		}
		goUD := func(a ...string) *goSide {
			g := &goSide{done: make(chan struct{})}
			go func() {
				defer close(g.done)
				g.err = DefaultEnv().run(append([]string{"purerdma", "ud_pingpong", "--timeout", "4m"}, a...), &g.out, &g.errb)
			}()
			return g
		}
		t.Run(d[0]+"/GoClientCServer", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			var srv bytes.Buffer
			c := exec.CommandContext(ctx, "ibv_ud_pingpong", args(d[0])...)
			c.Stdout, c.Stderr = &srv, &srv
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			waitListen(t, port, time.Minute)
			out := goUD(append(args(d[1]), "--verify", "127.0.0.1")...).wait(t, "Go client")
			if err := c.Wait(); err != nil {
				t.Fatalf("C server: %v\n%s", err, &srv)
			}
			if !strings.Contains(out, want) {
				t.Errorf("Go client:\n%s", out)
			}
			t.Logf("Go client, C server on %s (kernel %s): %s", d[0], vmtest.Kernel(), lastLine(out))
		})
		port++
		t.Run(d[0]+"/CClientGoServer", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			g := goUD(append(args(d[0]), "--verify")...)
			waitListen(t, port, time.Minute)
			var cli bytes.Buffer
			c := exec.CommandContext(ctx, "ibv_ud_pingpong", append(args(d[1]), "127.0.0.1")...)
			c.Stdout, c.Stderr = &cli, &cli
			err := c.Run()
			out := g.wait(t, "Go server")
			if err != nil {
				t.Fatalf("C client: %v\n%s", err, &cli)
			}
			if !strings.Contains(out, want) {
				t.Errorf("Go server:\n%s", out)
			}
			t.Logf("C client, Go server on %s (kernel %s): %s", d[0], vmtest.Kernel(), lastLine(cli.String()))
		})
		port++
		t.Run(d[0]+"/GoGo", func(t *testing.T) {
			srv := goUD(append(args(d[0]), "-e", "--verify")...)
			waitListen(t, port, time.Minute)
			cout := goUD(append(args(d[1]), "--verify", "127.0.0.1")...).wait(t, "Go client")
			sout := srv.wait(t, "Go server")
			if !strings.Contains(cout, want) || !strings.Contains(sout, want) {
				t.Errorf("Go client:\n%s\nGo server:\n%s", cout, sout)
			}
			t.Logf("Go client, Go server on %s (kernel %s): %s", d[0], vmtest.Kernel(), lastLine(cout))
		})
		port++
	}
}
