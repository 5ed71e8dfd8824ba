//go:build integration

package verbs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli/clitest"
	"github.com/purerdma/rdma/cmd/purerdma/internal/rdmatool"
	"github.com/purerdma/rdma/integration/vmtest"
)

// rpingCount is the number of pings of each VM run, each checked (-V) by
// the client and printed (-v) by both sides: 1000, or VMRUN_RPING_COUNT
// (make integration-arm64 runs fewer on the emulated arm64 guest).
var rpingCount = vmtest.Count("VMRUN_RPING_COUNT", 1000)

// rpingCmd is one side of a run: rdma-core's rping ("C") or purerdma's
// ("Go"), as a process.
func rpingCmd(t *testing.T, ctx context.Context, impl string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var c *exec.Cmd
	if impl == "C" {
		c = exec.CommandContext(ctx, "rping", args...)
	} else {
		bin, err := exec.LookPath("purerdma")
		if err != nil {
			t.Skip("the guest has no purerdma command (vmrun -cmds=false): " + err.Error())
		}
		c = exec.CommandContext(ctx, bin, append([]string{"rping"}, args...)...)
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	return c, &out, &errb
}

// waitCMID waits until process pid has a listening rdma_cm ID on a
// device (the server's listener bound to Addr0), as `rdma resource show
// cm_id` lists it ("state LISTEN"). The kernel names
// the thread that created the ID (task_pid_vnr of current): any of a Go
// process's threads.
func waitCMID(t *testing.T, pid int, within time.Duration, stderr *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); bytes.Contains(st, []byte(") Z ")) {
			t.Fatalf("process %d exited before it listened; stderr:\n%s", pid, stderr)
		}
		var out, errb bytes.Buffer
		clitest.Main(rdmatool.Tools(rdmatool.DefaultEnv()), []string{"purerdma", "resource", "show", "cm_id"}, &out, &errb)
		// The cm_id exists from rdma_create_id on; a client that
		// connects before rdma_listen is rejected (no such service),
		// so wait for the listening one.
		tids, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, line := range strings.Split(out.String(), "\n") {
			for _, tid := range tids {
				if strings.Contains(line, " pid "+tid.Name()+" ") && strings.Contains(line, " state LISTEN ") {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out, errb bytes.Buffer
	clitest.Main(rdmatool.Tools(rdmatool.DefaultEnv()), []string{"purerdma", "resource", "show", "cm_id"}, &out, &errb)
	t.Fatalf("process %d has no cm_id after %v; its stderr:\n%s\nrdma resource show cm_id:\n%s%s", pid, within, stderr, &out, &errb)
}

// rpingLines are the -v lines of n pings of size bytes, with prefix
// ("ping data: " or "server ping data: ").
func rpingLines(prefix string, n, size int) string {
	var b strings.Builder
	buf := make([]byte, size)
	start := byte(65)
	for i := 0; i < n; i++ {
		start = rpingFill(buf, int32(i), start)
		b.WriteString(prefix)
		b.Write(cstr(buf))
		b.WriteByte('\n')
	}
	return b.String()
}

// rpingPair runs server and client ("C" or "Go") against each other on
// Addr0:port with -V -v -C count (and extra), and checks that both exit 0
// and print every ping.
func rpingPair(t *testing.T, server, client string, port, size, count int, extra ...string) {
	t.Helper()
	vmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	args := append([]string{"-a", vmtest.Addr0, "-p", strconv.Itoa(port), "-V", "-v", "-C", strconv.Itoa(count)}, extra...)
	srv, sout, serr := rpingCmd(t, ctx, server, append([]string{"-s"}, args...)...)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	waitCMID(t, srv.Process.Pid, time.Minute, serr)
	cli, cout, cerr := rpingCmd(t, ctx, client, append([]string{"-c"}, args...)...)
	start := time.Now()
	cliErr := cli.Run()
	took := time.Since(start)
	srvErr := srv.Wait()
	if cliErr != nil || srvErr != nil {
		t.Fatalf("%s client: %v, %s server: %v\nclient stderr:\n%s\nserver stderr:\n%s\nclient stdout tail:\n%s",
			client, cliErr, server, srvErr, cerr, serr, tail(cout.String(), 5))
	}
	if want := rpingLines("ping data: ", count, size); cout.String() != want {
		t.Errorf("%s client's -v lines differ: got %d bytes, want %d; first lines:\n%s", client, cout.Len(), len(want), tail(cout.String(), -3))
	}
	if want := rpingLines("server ping data: ", count, size); sout.String() != want {
		t.Errorf("%s server's -v lines differ: got %d bytes, want %d; first lines:\n%s", server, sout.Len(), len(want), tail(sout.String(), -3))
	}
	// Both tools end the server with the client's DISCONNECTED.
	if !strings.Contains(serr.String(), "server DISCONNECT EVENT...") {
		t.Errorf("%s server's stderr:\n%s", server, serr)
	}
	t.Logf("%s client against %s server, kernel %s: %d pings of %d bytes (-V -v) in %v (%.0f us/ping)\nclient stderr: %q\nserver stderr: %q",
		client, server, vmtest.Kernel(), count, size, took.Round(time.Millisecond), float64(took.Microseconds())/float64(count), cerr, serr)
}

// tail returns the last n lines of s, or the first -n when n < 0.
func tail(s string, n int) string {
	l := strings.SplitAfter(s, "\n")
	if n < 0 {
		return strings.Join(l[:min(-n, len(l))], "")
	}
	return strings.Join(l[max(0, len(l)-n):], "")
}

// TestVMRpingGoClientCServer: purerdma rping against rdma-core's server.
func TestVMRpingGoClientCServer(t *testing.T) { rpingPair(t, "C", "Go", 7301, 64, rpingCount) }

// TestVMRpingCClientGoServer: rdma-core's rping against purerdma's server.
func TestVMRpingCClientGoServer(t *testing.T) { rpingPair(t, "Go", "C", 7302, 64, rpingCount) }

// TestVMRpingGoGo: purerdma on both sides, with pings of 4000 bytes
// (RDMA reads and writes of several packets on rxe's 1024-byte MTU).
func TestVMRpingGoGo(t *testing.T) { rpingPair(t, "Go", "Go", 7303, 4000, rpingCount, "-S", "4000") }

// TestVMRpingSelfQP: -q, the QP each side creates and moves itself
// (rdma_init_qp_attr, and rdma_establish on the client), both ways
// against rdma-core's and Go against Go, 100 pings each.
func TestVMRpingSelfQP(t *testing.T) {
	for i, p := range [][2]string{{"C", "Go"}, {"Go", "C"}, {"Go", "Go"}} {
		t.Run(p[1]+"Client"+p[0]+"Server", func(t *testing.T) { rpingPair(t, p[0], p[1], 7310+i, 64, 100, "-q") })
	}
}

// TestVMRpingPersistent: a purerdma server with -P serves one client
// after another, C's and Go's, until it is killed.
func TestVMRpingPersistent(t *testing.T) {
	vmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const port, n = 7304, 5
	args := []string{"-a", vmtest.Addr0, "-p", strconv.Itoa(port), "-V", "-v", "-C", strconv.Itoa(n)}
	srv, sout, serr := rpingCmd(t, ctx, "Go", append([]string{"-s", "-P"}, args...)...)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	waitCMID(t, srv.Process.Pid, time.Minute, serr)
	for _, impl := range []string{"C", "Go", "C"} {
		cli, cout, cerr := rpingCmd(t, ctx, impl, append([]string{"-c"}, args...)...)
		if err := cli.Run(); err != nil {
			t.Fatalf("%s client: %v\n%s", impl, err, cerr)
		}
		if want := rpingLines("ping data: ", n, 64); cout.String() != want {
			t.Errorf("%s client:\n%s", impl, cout)
		}
	}
	// The last connection's disconnection may still be under way.
	deadline := time.Now().Add(20 * time.Second)
	want := strings.Repeat(rpingLines("server ping data: ", n, 64), 3)
	for time.Now().Before(deadline) && strings.Count(serr.String(), "server DISCONNECT EVENT...") < 3 {
		time.Sleep(100 * time.Millisecond)
	}
	srv.Process.Kill()
	srv.Wait()
	if sout.String() != want {
		t.Errorf("persistent server's -v lines:\n%s\nwant:\n%s", sout, want)
	}
	t.Logf("persistent server's stderr:\n%s", serr)
}

// TestVMRpingNoListener: a client to a port nobody listens on exits as
// rdma-core's does: the REJECTED event's message and status 255.
func TestVMRpingNoListener(t *testing.T) {
	vmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := map[string]string{}
	for _, impl := range []string{"C", "Go"} {
		cli, _, cerr := rpingCmd(t, ctx, impl, "-c", "-a", vmtest.Addr0, "-p", "7399", "-C", "1")
		err := cli.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 255 {
			t.Errorf("%s client: %v, want exit status 255\n%s", impl, err, cerr)
		}
		// What follows the first line is a race in the C tool (its main
		// thread against the exit() of its event thread).
		if !strings.HasPrefix(cerr.String(), "cma event RDMA_CM_EVENT_REJECTED, error 8\n") {
			t.Errorf("%s client's stderr:\n%s", impl, cerr)
		}
		res[impl] = cerr.String()
	}
	t.Logf("stderr: C %q, Go %q", res["C"], res["Go"])
}

// rpingRun runs one rping pair with count pings of 64 bytes, without -v
// or -V (the rate is the point), and returns the client's wall time.
func rpingRun(t *testing.T, impl string, port, count int) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"-a", vmtest.Addr0, "-p", strconv.Itoa(port), "-C", strconv.Itoa(count)}
	srv, _, serr := rpingCmd(t, ctx, impl, append([]string{"-s"}, args...)...)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	waitCMID(t, srv.Process.Pid, time.Minute, serr)
	cli, _, cerr := rpingCmd(t, ctx, impl, append([]string{"-c"}, args...)...)
	start := time.Now()
	err := cli.Run()
	took := time.Since(start)
	if serr2 := srv.Wait(); err != nil || serr2 != nil {
		t.Fatalf("%s rping: client %v, server %v\nclient stderr:\n%s\nserver stderr:\n%s", impl, err, serr2, cerr, serr)
	}
	return took
}

// TestVMRpingRate times rping's ping rate, a Go pair against a C pair in
// alternating rounds (make bench: seven; make test: one),
// and reports the pings a second of each and the median Go/C time ratio
// of the rounds. Each ping is a SEND, an RDMA READ, a SEND, an RDMA WRITE and
// a SEND, each waited for through a completion channel. The numbers are
// TCG's: only the ratio means something. It reports; it never fails on a
// figure.
func TestVMRpingRate(t *testing.T) {
	vmtest.Require(t)
	rounds, count := vmtest.Rounds(1, 7), 300
	var gos, cs, ratios []float64
	for i := 0; i < rounds; i++ {
		order := []string{"C", "Go"}
		if i%2 == 1 {
			order = []string{"Go", "C"}
		}
		took := map[string]float64{}
		for j, impl := range order {
			took[impl] = rpingRun(t, impl, 7310+2*i+j, count).Seconds()
		}
		gos, cs, ratios = append(gos, float64(count)/took["Go"]), append(cs, float64(count)/took["C"]), append(ratios, took["Go"]/took["C"])
	}
	med := func(v []float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return s[len(s)/2]
	}
	t.Logf("rping rate on %s, Linux %s (TCG), %d rounds of %d pings of 64 bytes, C and Go pairs alternating:", vmtest.Addr0, vmtest.Kernel(), rounds, count)
	t.Logf("          Go pair %6.0f pings/s, C pair %6.0f pings/s (medians); Go/C time, median of rounds: %.2f", med(gos), med(cs), med(ratios))
}
