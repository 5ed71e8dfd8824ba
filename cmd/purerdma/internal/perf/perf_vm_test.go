//go:build integration

package perf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/integration/vmtest"
)

// The interop matrix on rxe: every tool, Go server with perftest's C
// client and C server with the Go client, each side's standard output and
// error compared with what the same side prints when both are C (the
// measured numbers, PSNs, QPNs, keys and addresses masked), with the
// sizes of -a too.

var tools = []struct {
	name string
	v    verb
	t    testKind
}{
	{"ib_send_bw", verbSend, testBW}, {"ib_send_lat", verbSend, testLat},
	{"ib_write_bw", verbWrite, testBW}, {"ib_write_lat", verbWrite, testLat},
	{"ib_read_bw", verbRead, testBW}, {"ib_read_lat", verbRead, testLat},
	{"ib_atomic_bw", verbAtomic, testBW}, {"ib_atomic_lat", verbAtomic, testLat},
}

// side is one end's output.
type side struct {
	out, err string
	code     int
}

// peer runs one end: C (perftest's binary) or Go (run, in this process).
type peer struct {
	done chan struct{}
	res  side
}

func startC(ctx context.Context, name string, args []string) *peer {
	p := &peer{done: make(chan struct{})}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	go func() {
		defer close(p.done)
		err := cmd.Run()
		p.res = side{out: out.String(), err: errb.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			p.res.code = ee.ExitCode()
		} else if err != nil {
			p.res.code, p.res.err = -1, p.res.err+err.Error()
		}
	}()
	return p
}

func startGo(name string, v verb, k testKind, args []string) *peer {
	p := &peer{done: make(chan struct{})}
	var out, errb bytes.Buffer
	go func() {
		defer close(p.done)
		err := run(name, v, k, append(args, "--timeout", "3m"), &out, &errb)
		p.res = side{out: out.String(), err: errb.String()}
		if err != nil {
			p.res.code = 1
			var ee cli.ExitError
			if errors.As(err, &ee) {
				p.res.code = ee.Code
			}
		}
	}()
	return p
}

func (p *peer) wait(t *testing.T, what string) side {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(4 * time.Minute):
		t.Fatalf("%s: still running after 4 minutes", what)
	}
	return p.res
}

// waitListen waits until something listens on TCP port port (or, with
// cm, an rdma_cm ID on that port: iproute2's rdma resource show cm_id),
// or the server has ended (a refused option).
func waitListen(t *testing.T, port int, cm bool, srv *peer) {
	t.Helper()
	hex := fmt.Sprintf(":%04X ", port)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-srv.done:
			return
		default:
		}
		if cm {
			out, _ := exec.Command("rdma", "resource", "show", "cm_id").Output()
			for _, l := range strings.Split(string(out), "\n") {
				if strings.Contains(l, " state LISTEN ") && strings.Contains(l, fmt.Sprintf(":%d ", port)) {
					return
				}
			}
			continue
		}
		b, _ := os.ReadFile("/proc/net/tcp")
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) > 3 && strings.HasSuffix(f[1]+" ", hex) && f[3] == "0A" {
				return
			}
		}
	}
	t.Fatalf("nothing listens on port %d", port)
}

var (
	maskKeys  = regexp.MustCompile(`(QPN|PSN|RKey|VAddr|OUT) (0x[0-9a-f]+|0+)`)
	maskFloat = regexp.MustCompile(`[0-9]+\.[0-9]+|-nan`)
	maskSpace = regexp.MustCompile(` *F *`)
	maskIters = regexp.MustCompile(`^( [0-9]+ +)[0-9]+ `)
)

// mask hides what differs from run to run: the QP numbers, PSNs, keys and
// addresses of the address lines, and the measured numbers of the result
// rows (their spacing, which follows the numbers' widths, too; with -D
// the number of iterations too, what completed in the sample).
func mask(s string, duration bool) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		l = maskKeys.ReplaceAllString(l, "$1 X")
		if duration {
			l = maskIters.ReplaceAllString(l, "${1}I")
		}
		if strings.HasPrefix(l, " ") && len(l) > 1 && l[1] >= '0' && l[1] <= '9' && maskFloat.MatchString(l) {
			l = maskSpace.ReplaceAllString(maskFloat.ReplaceAllString(l, "F"), " F ")
		}
		b.WriteString(l)
	}
	return b.String()
}

var port = 19000

// pair runs a server and a client, each C or Go, and returns their output.
func pair(t *testing.T, name string, v verb, k testKind, goServer, goClient bool, args []string) (srv, cli side) {
	t.Helper()
	port++
	common := append([]string{"-x", "0", "-p", strconv.Itoa(port)}, args...)
	sargs := append([]string{"-d", vmtest.Dev0}, common...)
	cargs := append(append([]string{"-d", vmtest.Dev1}, common...), vmtest.Addr0)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var s, c *peer
	if goServer {
		s = startGo(name, v, k, sargs)
	} else {
		s = startC(ctx, name, sargs)
	}
	waitListen(t, port, slices.Contains(args, "-R"), s)
	if goClient {
		c = startGo(name, v, k, cargs)
	} else {
		c = startC(ctx, name, cargs)
	}
	cli = c.wait(t, name+" client")
	if !goServer && !goClient && cmRejectedNoListener(cli) {
		// The server never saw this client and would wait out the
		// timeout: the reference is run again (TestVMPerftestInterop).
		time.AfterFunc(5*time.Second, cancel)
	}
	srv = s.wait(t, name+" server")
	return srv, cli
}

// cmRejectedNoListener says perftest's client failed because the
// connection manager found no listener for it (reject reason 8).
func cmRejectedNoListener(c side) bool {
	return c.code != 0 && strings.Contains(c.err, "RDMA_CM_EVENT_REJECTED; error: 8.")
}

// perfArgs are the runs of each tool: the TCP exchange and rdma_cm (-R);
// allSizes adds every size (-a), with each.
var (
	perfArgs = [][]string{{"-n", "200"}, {"-n", "200", "-R"}}
	allSizes = [][]string{{"-a", "-n", "5"}, {"-a", "-n", "5", "-R"}}
	duration = []string{"-D", "2"}
)

// sliceAll are the tools whose -a runs make test runs (on 6.12: 6.1 is
// its slice kernel, vmtest.Slice): -a costs 20-50 s
// a run under TCG (messages up to 8 MiB), the whole matrix 9 minutes a
// kernel, more than make test's budget has.
// PURERDMA_PERFTEST_ALL=1 (make perftest-matrix) runs them for every
// tool.
var sliceAll = map[string]bool{"ib_write_bw": true}

// sliceDuration are the tools whose -D runs make test runs (on 6.12).
var sliceDuration = map[string]bool{"ib_write_bw": true, "ib_send_lat": true}

// settled runs a pair again, up to four runs in all, when what ended it
// shows nothing of the tools':
//   - perftest's own clock calibration (get_cpu_mhz's sampling) failed on
//     its C side, which happens now and then under TCG: "Correlation
//     coefficient r^2: … < 0.9", and for a bandwidth test "Can't produce
//     a report";
//   - rxe gave up on a QP after losing packets: a side reported a
//     completion flushed (status 5) or out of retries (12), and rxe's
//     completer_retry_err counter rose during the run. Under a loaded TCG
//     guest the network stack refuses some of rxe's packets (rxe_send's
//     -EAGAIN, counted in send_err) and the completer asks for a
//     retransmission. Then, now and then, Linux 6.1's rxe flushes a QP
//     with no error completion first: where we traced it, rxe_qp_error
//     was called from rxe_completer and the kernel logged a warning from
//     rxe's task. rxe_comp.c's check_ack returns COMPST_ERROR without a
//     status for a read response out of the sequence it expects, as a
//     retransmission can bring, and rxe_completer then warns
//     (WARN_ON_ONCE), completes that request as a success and flushes
//     every one after it: the clients' first failed completion is a
//     flushed one. perftest's C client fails the same way: in loops of
//     ib_read_bw -q 2 under host load on 6.1, C↔C failed so twice in 130
//     runs, C server with our client twice in 127.
func settled(t *testing.T, what string, f func() (side, side)) (side, side) {
	t.Helper()
	for try := 1; ; try++ {
		before := rxeRetries()
		s, c := f()
		if try == 4 {
			return s, c
		}
		switch {
		case strings.Contains(s.err+c.err, "Correlation coefficient"):
			t.Logf("%s, run %d: perftest's clock calibration failed under TCG; again", what, try)
		case gaveUp(s) || gaveUp(c):
			after := rxeRetries()
			if after <= before {
				return s, c
			}
			t.Logf("%s, run %d: rxe retransmitted (completer_retry_err %d to %d) and flushed a QP; again", what, try, before, after)
		default:
			return s, c
		}
	}
}

// gaveUp says a side failed with a send completion flushed or out of
// retries, as both perftest and our tools print it.
func gaveUp(s side) bool {
	return s.code != 0 && (strings.Contains(s.err, " Failed status 5: ") || strings.Contains(s.err, " Failed status 12: "))
}

// rxeRetries is the sum of the rxe devices' completer_retry_err counters
// (rxe_hw_counters.c): the retransmissions their completers started.
func rxeRetries() uint64 {
	var n uint64
	for _, dev := range []string{vmtest.Dev0, vmtest.Dev1} {
		v, _ := vmtest.HWCounter(dev, "completer_retry_err") // unread: 0, no rerun
		n += v
	}
	return n
}

func TestVMPerftestInterop(t *testing.T) {
	vmtest.Require(t)
	if runtime.GOARCH != "amd64" && os.Getenv("PURERDMA_PERFTEST_ALL") != "1" {
		// make integration-arm64-all, 6.12, on 2 loaded cores: the
		// package's binary ran past vmrun's 20-minute limit, cause not
		// yet known (perftest's own tools, its clock calibration, or
		// just TCG). make perftest-matrix's variable runs it anyway.
		t.Skipf("perftest interop on the emulated %s guest outran vmrun's 20-minute limit; "+
			"PURERDMA_PERFTEST_ALL=1 runs it anyway", runtime.GOARCH)
	}
	if _, err := exec.LookPath("ib_write_bw"); err != nil {
		t.Fatalf("perftest is not in the guest image: %v", err)
	}
	all := os.Getenv("PURERDMA_PERFTEST_ALL") == "1"
	// make test's slice kernel runs the two exchanges of each tool; the
	// other kernel adds the rest of make test's part of the matrix.
	slice := vmtest.Slice() && !all
	if slice {
		t.Logf("kernel %s is make test's slice: -n 200 and -n 200 -R of each tool only; "+
			"-a, -D, SRQ, UD and two QPs run on the other kernel (make integration-full: on both)", vmtest.Kernel())
	}
	for _, tc := range tools {
		runs := perfArgs
		if !slice && (all || sliceAll[tc.name]) {
			runs = append(runs[:len(runs):len(runs)], allSizes...)
		}
		if !slice && (all || sliceDuration[tc.name]) {
			runs = append(runs[:len(runs):len(runs)], duration)
		}
		if !slice && tc.v == verbSend {
			runs = append(runs[:len(runs):len(runs)], []string{"-n", "200", "--use-srq"},
				[]string{"-n", "200", "-c", "UD"}, []string{"-a", "-n", "5", "-c", "UD"})
		}
		if !slice && tc.t == testBW {
			runs = append(runs[:len(runs):len(runs)], []string{"-n", "200", "-q", "2"})
		}
		for _, args := range runs {
			tc, args := tc, args
			t.Run(tc.name+strings.Join(args, ""), func(t *testing.T) {
				refS, refC := settled(t, "C↔C", func() (side, side) { return pair(t, tc.name, tc.v, tc.t, false, false, args) })
				// Now and then, under TCG, rdma-core's client is rejected
				// for want of a listener (the CM's reject reason 8) though
				// the server's cm_id was listed LISTEN (pair then stops
				// the server, which would wait for a client until the
				// timeout). Such a reference shows nothing of our tools:
				// it is run again.
				for try := 2; try <= 3 && cmRejectedNoListener(refC); try++ {
					t.Logf("C↔C: rdma-core's client was rejected with no listener found; run %d", try)
					refS, refC = settled(t, "C↔C", func() (side, side) { return pair(t, tc.name, tc.v, tc.t, false, false, args) })
				}
				if refS.code != refC.code {
					t.Fatalf("C↔C: server exit %d, client exit %d\n%s%s\n%s%s", refS.code, refC.code, refS.out, refS.err, refC.out, refC.err)
				}
				for _, dir := range []struct {
					what               string
					goServer, goClient bool
				}{{"Go server, C client", true, false}, {"C server, Go client", false, true}} {
					s, c := settled(t, dir.what, func() (side, side) {
						return pair(t, tc.name, tc.v, tc.t, dir.goServer, dir.goClient, args)
					})
					for _, cmp := range []struct {
						who      string
						got, ref side
					}{{"server", s, refS}, {"client", c, refC}} {
						if cmp.got.code != cmp.ref.code {
							t.Errorf("%s: %s exit %d, C↔C %d\n%s%s", dir.what, cmp.who, cmp.got.code, cmp.ref.code, cmp.got.out, cmp.got.err)
						}
						d := slices.Contains(args, "-D")
						if g, r := mask(cmp.got.out, d), mask(cmp.ref.out, d); g != r {
							t.Errorf("%s: %s stdout differs from C↔C's (masked)\n--- got\n%s--- C↔C\n%s", dir.what, cmp.who, g, r)
						}
						if cmp.got.err != cmp.ref.err {
							t.Errorf("%s: %s stderr %q, C↔C %q", dir.what, cmp.who, cmp.got.err, cmp.ref.err)
						}
					}
				}
			})
		}
	}
}

// TestVMPerftestPeerGone kills perftest's C peer in the middle of a run:
// our side ends with an error, soon, instead of waiting for ever (the
// write-latency ping-pong spins on a byte the dead peer will never
// write; the send-bandwidth server on receives that will never come; the
// write-bandwidth server in the exchange's read).
func TestVMPerftestPeerGone(t *testing.T) {
	vmtest.Require(t)
	for _, c := range []struct {
		name     string
		v        verb
		k        testKind
		goServer bool
	}{
		{"ib_write_lat", verbWrite, testLat, false},
		{"ib_write_lat", verbWrite, testLat, true},
		{"ib_send_bw", verbSend, testBW, true},
		{"ib_write_bw", verbWrite, testBW, true},
		{"ib_read_lat", verbRead, testLat, false},
	} {
		who := "Go client"
		if c.goServer {
			who = "Go server"
		}
		t.Run(c.name+" "+who, func(t *testing.T) {
			port++
			common := []string{"-x", "0", "-p", strconv.Itoa(port), "-n", "1000000"}
			sargs := append([]string{"-d", vmtest.Dev0}, common...)
			cargs := append(append([]string{"-d", vmtest.Dev1}, common...), vmtest.Addr0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var g *peer
			var cmd *exec.Cmd
			if c.goServer {
				g = startGo(c.name, c.v, c.k, sargs)
				waitListen(t, port, false, g)
				cmd = exec.CommandContext(ctx, c.name, cargs...)
			} else {
				cmd = exec.CommandContext(ctx, c.name, sargs...)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if !c.goServer {
				waitListen(t, port, false, &peer{done: make(chan struct{})})
				g = startGo(c.name, c.v, c.k, cargs)
			}
			time.Sleep(3 * time.Second) // well into the run
			select {
			case <-g.done:
				t.Fatalf("ended before its peer was killed: %+v", g.res)
			default:
			}
			cmd.Process.Kill()
			cmd.Wait()
			start := time.Now()
			select {
			case <-g.done:
			case <-time.After(60 * time.Second):
				t.Fatalf("still running 60 s after its peer was killed")
			}
			r := g.res
			if r.code == 0 || r.err == "" {
				t.Fatalf("exit %d, stderr %q: want a failure that says why", r.code, r.err)
			}
			t.Logf("%v after the kill: exit %d, %q", time.Since(start).Round(time.Millisecond), r.code, r.err)
		})
	}
}
