package diags

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
)

// lossQueries is how many runs of each tool TestFabricLoss makes, each
// of ours and each of infiniband-diags'; PURERDMA_LOSS_QUERIES raises
// it (a heavier run: 400 takes about ten times as long).
func lossQueries(t *testing.T) int {
	if v := os.Getenv("PURERDMA_LOSS_QUERIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PURERDMA_LOSS_QUERIES=%q: a number of runs", v)
		}
		return n
	}
	return 40
}

var (
	lossRetryRE   = regexp.MustCompile(`^ibwarn: \[[0-9]+\] _do_madrpc: retry ([0-9]+) \(timeout 1000 ms\)$`)
	lossTimeoutRE = regexp.MustCompile(`^ibwarn: \[[0-9]+\] _do_madrpc: timeout after 3 retries, 3000 ms$`)
	lossFailedRE  = regexp.MustCompile(`^ibwarn: \[[0-9]+\] mad_rpc(_rmpp)?: _do_madrpc failed; dport \(.+\)$`)
)

// lossRetries reads the retries libibmad's -e warnings log in one run's
// standard error and returns how many there are, and how many queries
// failed after their 3 tries. It fails t on warnings out of order (a
// retry not numbered 1, 2, …; a failure not after retry 2). Lines of the
// tool's own (other matches them) are skipped, as are our explanations
// ("tool: …").
func lossRetries(t *testing.T, who, tool string, other *regexp.Regexp, stderr string) (retries, failed int) {
	t.Helper()
	cur := 1
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		switch {
		case l == "" || strings.HasPrefix(l, tool+": "): // ours: the explanation
		case lossRetryRE.MatchString(l):
			n, _ := strconv.Atoi(lossRetryRE.FindStringSubmatch(l)[1])
			switch {
			case n == cur:
				cur++
			case n == 1: // the query before took cur tries
				cur = 2
			default:
				t.Errorf("%s: retry %d after %d tries:\n%s", who, n, cur, stderr)
			}
			retries++
		case lossTimeoutRE.MatchString(l):
			if cur != 3 {
				t.Errorf("%s: gave up after %d tries:\n%s", who, cur, stderr)
			}
			failed++
			cur = 1
		case lossFailedRE.MatchString(l):
		case other != nil && other.MatchString(l):
		default:
			t.Errorf("%s: unexpected line %q", who, l)
		}
	}
	return retries, failed
}

// lossCase is one tool's runs in TestFabricLoss.
type lossCase struct {
	name string   // the subtest's, "" for the tool's
	node string   // where the tool runs
	args []string // the tool and its arguments
	// errs is ibsim's Error command that makes a port lossy: node,
	// port, rate and, for a drop of one attribute only, its ID.
	errs string
	// lossy is how many of a run's queries went through the lossy port
	// (each of which may have retried); the others are answered at the
	// first try.
	lossy func(r fabricRun) int
	// failed is how many of them failed (after their tries); nil is
	// one if the run exited other than 0.
	failed func(r fabricRun) int
	// ok is whether the run succeeded; nil is an exit status of 0.
	ok func(r fabricRun) bool
	// other matches lines of the tool's own among libibmad's warnings.
	other *regexp.Regexp
	// once: the tool sends each query once (no libibmad retries).
	once bool
}

// TestFabricLoss: a port drops half of what reaches it (ibsim's console:
// Error "Hca2"[1] 50, sim_cmd.c do_seterror). ibsim rolls the rate on
// each hop into the port (sim_mad.c pc_updated: the drop of a request
// it forwards to a client, OpenSM or an ibping server, as much as of one
// it answers itself), and once more when it answers the request itself
// (process_packet), unless the Error names an attribute: then only that
// attribute's requests it answers at the port are dropped, and only by
// the second roll. A dropped request is answered with status 110 at once
// (process_packet's _dropped), so no try waits for its timeout. Each
// tool that queries through libibmad's RPC with retries, ours and
// infiniband-diags', runs lossQueries times with -e against a lossy port:
// the success counts agree within noise (a two-proportion z test), every
// query's tries are logged as libibmad logs them (retry 1, retry 2, then
// "timeout after 3 retries" for one that failed), the mean tries per
// query agree within noise, and the warnings of a failed query are the C
// tool's.
//
//   - smpquery nodeinfo and perfquery from Hca1 to Hca2, Hca2's port
//     lossy: an SMP is dropped on its way in or at the SMA (a try gets
//     through one time in four); perfquery's ClassPortInfo, then its
//     PortCounters unless the first failed.
//   - ibaddr from Hca1 to Hca2, only PortInfo dropped at Hca2's port:
//     its NodeInfo is answered at once, its PortInfo one try in two.
//   - sminfo from Hca3 to the SM (OpenSM on Switch1), the switch's port
//     to Hca3 lossy: the SMInfo request is dropped on its way in.
//   - saquery (SMInfoRecord) from Hca3 through the same port: its
//     request to OpenSM is dropped on the way in, the answer leaves the
//     switch through the port unharmed (a hop's roll is made at the
//     port it enters). infiniband-diags' saquery sends once
//     (ibdiag_sa.c, sa_query: umad_send with no retries), as ours does.
//   - ibping from Hca1 to our server (-S) on Hca2, Hca2's port lossy:
//     the ping is dropped on its way in (C's client sends each ping
//     through libibmad's mad_rpc_rmpp, ib_vendor_call_via, with its
//     retries; -c 1 -f: one ping a run).
//   - ibportstate from Hca1 querying Hca2's port 1, only PortInfo dropped
//     at Hca2's port; ibroute from Hca1 dumping Switch2's LFT, only
//     LinearForwardingTable dropped at the switch's port 0 (a block that
//     fails is "SubnGet() failed", the dump goes on, status 0, in both);
//     ibtracert from Hca1 to Hca2, only NodeInfo dropped at Hca2's port
//     (the trace's last hop; find_route's and get_route's warnings when it
//     fails).
//   - ibqueryerrors -G Hca2's port GUID from Hca1, only PortCounters
//     dropped at Hca2's port: its discovery and its ClassPortInfo are
//     not dropped, so only the PMA phase's PortCounters query is lossy.
//     The discovery differs by design: libibnetdisc sends each SMP once
//     and leaves the retries to the kernel (query_smp.c: umad_send with
//     cfg->retries), which libumad2sim ignores, so infiniband-diags'
//     gives up on an SMP ibsim drops; ours resends it as the kernel
//     would.
func TestFabricLoss(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{Console: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lids, err := f.LIDs(ctx, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	hca1, hca2, sw2 := strconv.Itoa(lids["Hca1"]), strconv.Itoa(lids["Hca2"]), strconv.Itoa(lids["Switch2"])
	hca2GUID := portGUID(t, f, "Hca1", lids["Hca2"])
	startGoPingServer(t, f, "Hca2")
	one := func(fabricRun) int { return 1 }
	cases := []lossCase{
		{node: "Hca1", args: []string{"smpquery", "-e", "nodeinfo", hca2}, errs: `"Hca2"[1] 50`, lossy: one},
		{node: "Hca1", args: []string{"perfquery", "-e", hca2, "1"}, errs: `"Hca2"[1] 50`,
			lossy: func(r fabricRun) int {
				if strings.Contains(r.stdout, "failed: classportinfo query") {
					return 1
				}
				return 2
			}},
		{node: "Hca1", args: []string{"ibaddr", "-e", hca2}, errs: `"Hca2"[1] 50 0x15`, lossy: one},
		{node: "Hca3", args: []string{"sminfo", "-e"}, errs: `"Switch1"[2] 50`, lossy: one},
		{node: "Hca3", args: []string{"saquery", "-e", "NR", "1"}, errs: `"Switch1"[2] 50`, lossy: one, once: true,
			other: regexp.MustCompile(`^Query SA failed: `)},
		{name: "saquery answer lost", node: "Hca3", args: []string{"saquery", "-e", "-t", "100", "NR", "1"}, errs: `"Hca3"[1] 50`,
			lossy: one, once: true,
			other: regexp.MustCompile(`^Query SA failed: |^ibwarn: \[[0-9]+\] sa_query: umad_recv failed: attr 0x11: Connection timed out$`)},
		{node: "Hca1", args: []string{"ibping", "-e", "-c", "1", "-f", hca2}, errs: `"Hca2"[1] 50`, lossy: one,
			ok: func(r fabricRun) bool { return r.code == 0 && strings.Contains(r.stdout, " 1 received") },
			failed: func(r fabricRun) int {
				if strings.Contains(r.stdout, " 0 received") {
					return 1
				}
				return 0
			}},
		{node: "Hca1", args: []string{"ibportstate", "-e", hca2, "1"}, errs: `"Hca2"[1] 50 0x15`, lossy: one},
		{node: "Hca1", args: []string{"ibroute", "-e", sw2}, errs: `"Switch2"[0] 50 0x19`, lossy: one,
			// ibroute goes on after a failed LFT block (dump_unicast_tables:
			// "SubnGet() failed" and the next block), and exits 0.
			failed: func(r fabricRun) int { return strings.Count(r.stderr, "SubnGet() failed;") },
			ok:     func(r fabricRun) bool { return r.code == 0 && !strings.Contains(r.stderr, "SubnGet() failed;") },
			other:  regexp.MustCompile(`^SubnGet\(\) failed; MAD status `)},
		{node: "Hca1", args: []string{"ibtracert", "-e", hca1, hca2}, errs: `"Hca2"[1] 50 0x10`, lossy: one,
			other: regexp.MustCompile(`^ibwarn: \[[0-9]+\] (find_route|get_route): `)},
		{node: "Hca1", args: []string{"ibqueryerrors", "-e", "-G", hca2GUID}, errs: `"Hca2"[1] 50 0x12`,
			lossy:  func(r fabricRun) int { return lossNumber(r.stdout, `([0-9]+) ports checked`) },
			failed: func(r fabricRun) int { return lossNumber(r.stdout, `([0-9]+) PMA query failures`) },
			ok:     func(r fabricRun) bool { return !strings.Contains(r.stdout, "PMA query failures") },
			other:  regexp.MustCompile(`^ibwarn: \[[0-9]+\] print_errors: IB_GSI_PORT_COUNTERS query failed on `)},
	}
	n := lossQueries(t)
	for _, tc := range cases {
		tool, name := tc.args[0], tc.name
		if name == "" {
			name = tool
		}
		t.Run(name, func(t *testing.T) {
			if err := f.Console(`Error ` + tc.errs); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := f.Console(`Error ` + strings.Fields(tc.errs)[0] + ` 0`); err != nil {
					t.Fatal(err)
				}
			}()
			type side struct {
				ok, queries, tries int
				took               time.Duration     // the runs, all together
				fails              map[string]string // stdout → stderr of a failed run, pids masked
			}
			var c, g side
			c.fails, g.fails = map[string]string{}, map[string]string{}
			tally := func(s *side, who string, r fabricRun) {
				retries, failed := lossRetries(t, who, tool, tc.other, r.stderr)
				want := 0
				if tc.failed != nil {
					want = tc.failed(r)
				} else if r.code != 0 {
					want = 1
				}
				if tc.once {
					if retries != 0 {
						t.Errorf("%s: %d retries logged, of a query sent once:\n%s", who, retries, r.stderr)
					}
				} else if failed != want {
					t.Errorf("%s: %d queries failed after their tries, want %d (exit status %d):\n%s%s", who, failed, want, r.code, r.stdout, r.stderr)
				}
				s.queries += tc.lossy(r)
				s.tries += tc.lossy(r) + retries
				ok := r.code == 0
				if tc.ok != nil {
					ok = tc.ok(r)
				}
				if ok {
					s.ok++
					return
				}
				// The failed query's warnings: from its first retry on
				// (ours then adds an explanation).
				stderr := fabricPidRE.ReplaceAllString(r.stderr, "[pid]")
				if i := strings.LastIndex(stderr, "ibwarn: [pid] _do_madrpc: retry 1 "); i >= 0 {
					stderr = stderr[i:]
				}
				s.fails[r.stdout] = stderr
			}
			for i := 0; i < n; i++ {
				start := time.Now()
				cr := runC(t, f, tc.node, tool, tc.args[1:]...)
				c.took += time.Since(start)
				start = time.Now()
				gr := runGo(t, f, tc.node, tool, tc.args[1:]...)
				g.took += time.Since(start)
				tally(&c, "infiniband-diags", cr)
				tally(&g, "purerdma", gr)
			}
			t.Logf("%s at 50 %% loss, %d runs each: succeeded infiniband-diags %d, purerdma %d; tries logged %d and %d for %d and %d queries (%.2f and %.2f a query); %v and %v",
				name, n, c.ok, g.ok, c.tries, g.tries, c.queries, g.queries,
				float64(c.tries)/float64(c.queries), float64(g.tries)/float64(g.queries),
				c.took.Round(time.Millisecond), g.took.Round(time.Millisecond))
			// The two success rates, pooled: within 3.5 standard errors.
			p := float64(c.ok+g.ok) / float64(2*n)
			if se := math.Sqrt(p * (1 - p) * 2 / float64(n)); se > 0 && math.Abs(float64(c.ok-g.ok))/float64(n) > 3.5*se {
				t.Errorf("%s: %d of %d succeeded, infiniband-diags %d: more than noise apart", tool, g.ok, n, c.ok)
			}
			if c.ok == n || c.ok == 0 {
				t.Errorf("%s: infiniband-diags succeeded %d times of %d: the port is not lossy to it", tool, c.ok, n)
			}
			// Tries a query: each query's count is 1, 2 or 3; the means
			// within 3.5 standard errors (the variance at most 1).
			mc, mg := float64(c.tries)/float64(c.queries), float64(g.tries)/float64(g.queries)
			if math.Abs(mc-mg) > 3.5*math.Sqrt(1/float64(c.queries)+1/float64(g.queries)) {
				t.Errorf("%s: %.2f tries a query, infiniband-diags %.2f", tool, mg, mc)
			}
			compared := 0
			for out, stderr := range g.fails {
				want, ok := c.fails[out]
				if !ok {
					continue
				}
				compared++
				if dropExplanationsOf(stderr, want, tool) != want {
					t.Errorf("%s failing with %q: stderr\n%s\ninfiniband-diags:\n%s", tool, out, stderr, want)
				}
			}
			t.Logf("%s: %d ways of failing, %d of them infiniband-diags' too, their warnings compared", name, len(g.fails), compared)
		})
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.Running(ctx, "Hca3"); err != nil {
		t.Fatalf("after the runs: %v", err)
	}
}

// lossNumber is the number the first group of re (a regular expression)
// matches in s, 0 where it does not match.
func lossNumber(s, re string) int {
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// startedRun is the result of a run startGo or startC started, and when
// it ended.
type startedRun struct {
	fabricRun
	end time.Time
}

// startGo runs our tool attached at node of f in a goroutine, as runGo
// does but without touching the environment (the test goes on meanwhile),
// and returns its result on the channel.
func startGo(f *ibsimtest.Fabric, node, tool string, args ...string) <-chan startedRun {
	ch := make(chan startedRun, 1)
	env := &Env{SysfsRoot: sysfs.DefaultRoot, IBSim: f.Sock + ":" + node}
	go func() {
		var out, errb bytes.Buffer
		err := env.run(append([]string{"purerdma", tool}, args...), &out, &errb)
		r := fabricRun{stdout: out.String(), stderr: errb.String()}
		var ee cli.ExitError
		if errors.As(err, &ee) {
			r.code = ee.Code
		} else if err != nil {
			r.code, r.stderr = -1, r.stderr+err.Error()
		}
		ch <- startedRun{r, time.Now()}
	}()
	return ch
}

// startC starts infiniband-diags' tool attached at node of f and
// returns its result on the channel.
func startC(t *testing.T, ctx context.Context, f *ibsimtest.Fabric, node, tool string, args ...string) <-chan startedRun {
	t.Helper()
	cmd := f.Command(ctx, node, tool, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan startedRun, 1)
	go func() {
		err := cmd.Wait()
		r := fabricRun{stdout: out.String(), stderr: errb.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		} else if err != nil {
			r.code, r.stderr = -1, r.stderr+err.Error()
		}
		ch <- startedRun{r, time.Now()}
	}()
	return ch
}

// TestFabricStall stops ibsim (SIGSTOP) for 3 s, then for 6 s, while
// ibnetdiscover, ours and infiniband-diags', scan the 1,052-node fat
// tree from the same HCA: both complete, exit 0, with the output of a
// scan without a stall (infiniband-diags' waits for every answer; ours
// holds its timeouts while ibsim is silent). The stall starts two thirds
// through an unstalled C scan, ours started so that it is halfway:
// in the discovery proper (infiniband-diags' first query, libibnetdisc
// resolving its own port, goes through libibmad, which gives up after its
// timeout on a silent ibsim), and each scan must still be running then.
func TestFabricStall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the 1,052-node fabric takes seconds to come up, and the stalls 9 s")
	}
	f := ibsimtest.Start(t, ibsimtest.Big, ibsimtest.Options{Timeout: 120 * time.Second})
	const node = "hca0_0"
	start := time.Now()
	ref := runC(t, f, node, "ibnetdiscover")
	cTime := time.Since(start)
	if ref.code != 0 || !strings.Contains(ref.stdout, "Switch\t") {
		t.Fatalf("infiniband-diags' ibnetdiscover: %+v", ref)
	}
	start = time.Now()
	if g := runGo(t, f, node, "ibnetdiscover"); g.code != 0 || maskTopoTime(g.stdout) != maskTopoTime(ref.stdout) {
		t.Fatalf("unstalled: exit %d, output the same %v\n%s", g.code, maskTopoTime(g.stdout) == maskTopoTime(ref.stdout), g.stderr)
	}
	goTime := time.Since(start)
	pause := cTime * 2 / 3
	goStart := max(0, pause-goTime/2)
	for _, stall := range []time.Duration{3 * time.Second, 6 * time.Second} {
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithCancel(context.Background())
			begin := time.Now()
			cDone := startC(t, ctx, f, node, "ibnetdiscover")
			time.Sleep(goStart)
			gDone := startGo(f, node, "ibnetdiscover")
			time.Sleep(pause - time.Since(begin))
			if err := f.Pause(); err != nil {
				cancel()
				t.Fatal(err)
			}
			paused := time.Since(begin)
			time.Sleep(stall)
			resumed := time.Now()
			if err := f.Resume(); err != nil {
				cancel()
				t.Fatal(err)
			}
			// An unstalled scan takes cTime: one that has not ended
			// well after that (infiniband-diags' can hang at exit
			// after a failure) is stopped.
			var c startedRun
			select {
			case c = <-cDone:
			case <-time.After(10*cTime + 10*time.Second):
				cancel()
				c = <-cDone
			}
			g := <-gDone
			el := time.Since(begin)
			cancel()
			ended := !c.end.After(resumed) || !g.end.After(resumed)
			// The pause fell outside a scan: before C's discovery
			// proper, or after a scan ended. Again, the pause moved.
			if attempt < 4 && strings.Contains(c.stderr, "Failed to resolve self") {
				t.Logf("%v stall %v in: infiniband-diags was still resolving its port: again, later", stall, paused)
				pause, goStart = pause+cTime/6, goStart+cTime/6
				continue
			}
			if attempt < 4 && ended {
				t.Logf("%v stall %v in: the scans had ended: again, sooner", stall, paused)
				pause, goStart = pause*3/4, goStart*3/4
				continue
			}
			t.Logf("%v stall %v into the scans: both done after %v", stall, paused, el)
			for _, r := range []struct {
				who string
				r   fabricRun
			}{{"infiniband-diags", c.fabricRun}, {"purerdma", g.fabricRun}} {
				if r.r.code != 0 || maskTopoTime(r.r.stdout) != maskTopoTime(ref.stdout) {
					t.Errorf("%v stall: %s exit %d, %d bytes of output (want %d, as unstalled)\nstderr: %s",
						stall, r.who, r.r.code, len(r.r.stdout), len(ref.stdout), r.r.stderr)
				}
			}
			if ended {
				t.Errorf("%v stall: a scan ended before ibsim ran again (%v in): the stall did not fall within it", stall, paused)
			}
			break
		}
	}
}

// TestFabricConnectStall: ibsim stopped (SIGSTOP) when our perfquery, with
// a short timeout, starts: its CONNECT waits for ibsim's answer rather
// than giving up and leaving ibsim a half-made client (ibsim 0.10 exits
// when it later connects to a socket that is gone); once ibsim runs again
// the query completes, and ibsim and OpenSM still serve queries, ours and
// infiniband-diags'.
func TestFabricConnectStall(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lids, err := f.LIDs(ctx, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	hca2 := strconv.Itoa(lids["Hca2"])
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	done := startGo(f, "Hca1", "perfquery", "-t", "100", hca2, "1")
	select {
	case r := <-done:
		_ = f.Resume()
		t.Fatalf("perfquery returned while ibsim was stopped: %+v", r.fabricRun)
	case <-time.After(1500 * time.Millisecond): // fifteen times its timeout
	}
	if err := f.Resume(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("# Port counters: Lid %s port 1", hca2)) {
		t.Fatalf("perfquery after the stall: %+v", r.fabricRun)
	}
	if err := f.Running(ctx, "Hca3"); err != nil {
		t.Fatalf("after an open across a stall: %v", err)
	}
	if g := runGo(t, f, "Hca4", "smpquery", "nodedesc", hca2); g.code != 0 || !strings.Contains(g.stdout, "Hca2") {
		t.Fatalf("smpquery after the stall: %+v", g)
	}
	if out := f.Output(); strings.Contains(out, "ibpanic") || strings.Contains(out, "can't connect to in socket") {
		t.Errorf("ibsim complained:\n%s", out)
	}
}

// TestFabricQueryStall: a libibmad-style query to a stopped ibsim gets
// neither an answer nor a timeout (the ibsim wire holds timeouts while
// ibsim is silent): after its timeout and a second it fails as
// libibmad's umad_recv timing out does ("recv failed: Connection timed
// out", what infiniband-diags' smpquery prints over libumad2sim), saying
// that ibsim is silent; once ibsim runs again the next query is answered.
func TestFabricQueryStall(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	p, err := umad.OpenSimPort(f.Sock, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var warn bytes.Buffer
	c, err := newSMPClient(p, 100*time.Millisecond, madDefTries, &madLog{w: &warn, errs: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.get(smpDest{dr: true, path: []uint8{1}}, umad.SMAttrNodeInfo, 0)
	el := time.Since(start)
	if err := f.Resume(); err != nil {
		t.Fatal(err)
	}
	var na *errNoAnswer
	if !errors.As(err, &na) || !na.silent || na.tries != 1 || !strings.Contains(err.Error(), "ibsim is stopped or busy") {
		t.Fatalf("query to a stopped ibsim: %v", err)
	}
	if el < 100*time.Millisecond+madRecvGrace || el > 100*time.Millisecond+madRecvGrace+3*time.Second {
		t.Errorf("gave up after %v, want the timeout and %v", el, madRecvGrace)
	}
	w := fabricPidRE.ReplaceAllString(warn.String(), "[pid]")
	if want := "ibwarn: [pid] _do_madrpc: recv failed: Connection timed out\nibwarn: [pid] mad_rpc: _do_madrpc failed; dport (DR path slid 65535; dlid 65535; 0,1)\n"; w != want {
		t.Errorf("warnings %q, want %q", w, want)
	}
	if b, err := c.get(smpDest{dr: true, path: []uint8{1}}, umad.SMAttrNodeInfo, 0); err != nil || b[2] != 2 {
		t.Fatalf("after the stall: %v, node type %v", err, b)
	}
}
