package diags

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/cmd/internal/umadenv"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
	"github.com/purerdma/rdma/umad"
)

// fabricRun is one tool run's output and exit status.
type fabricRun struct {
	stdout, stderr string
	code           int
}

// runC runs infiniband-diags' tool attached at node of f.
func runC(t *testing.T, f *ibsimtest.Fabric, node, tool string, args ...string) fabricRun {
	t.Helper()
	r, err := runCProc(f, node, tool, args...)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return r
}

// runGo runs our tool in-process attached at node of f (PURERDMA_IBSIM).
func runGo(t *testing.T, f *ibsimtest.Fabric, node, tool string, args ...string) fabricRun {
	t.Helper()
	t.Setenv(umadenv.IBSim, f.Sock+":"+node)
	var out, errb bytes.Buffer
	err := DefaultEnv().run(append([]string{"purerdma", tool}, args...), &out, &errb)
	r := fabricRun{stdout: out.String(), stderr: errb.String()}
	var ee cli.ExitError
	if errors.As(err, &ee) {
		r.code = ee.Code
	} else if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return r
}

var fabricPidRE = regexp.MustCompile(`\[[0-9]+\]`)

// rmppDataRE is the address of a buffer on C's stack that libibmad's
// mad_rpc_rmpp prints with -d (ours prints a stand-in).
var rmppDataRE = regexp.MustCompile(`(mad_rpc_rmpp: rmpp \(nil\) data )0x[0-9a-f]+`)

// maskStderr is stderr with process ids and mad_rpc_rmpp's address masked.
func maskStderr(s string) string {
	return rmppDataRE.ReplaceAllString(fabricPidRE.ReplaceAllString(s, "[pid]"), "${1}ADDR")
}

// sameRun compares stdout byte for byte, the exit status, and stderr
// with process ids (libibmad's warnings carry the pid) and
// mad_rpc_rmpp's address masked (maskStderr).
func sameRun(t *testing.T, what string, c, g fabricRun, mask func(string) string) {
	t.Helper()
	if mask == nil {
		mask = func(s string) string { return s }
	}
	if mask(c.stdout) != mask(g.stdout) {
		t.Errorf("%s: stdout differs\n--- infiniband-diags:\n%s--- purerdma:\n%s", what, c.stdout, g.stdout)
	}
	if c.code&0xff != g.code&0xff {
		t.Errorf("%s: exit status %d, infiniband-diags %d", what, g.code, c.code)
	}
	if maskStderr(c.stderr) != maskStderr(g.stderr) {
		t.Errorf("%s: stderr differs\n--- infiniband-diags:\n%s--- purerdma:\n%s", what, c.stderr, g.stderr)
	}
}

// TestFabricSMPQuery runs smpquery and sminfo, infiniband-diags' and
// ours, on the small simulated fabric, and compares their output.
func TestFabricSMPQuery(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lids, err := f.LIDs(ctx, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	sw2, hca2 := strconv.Itoa(lids["Switch2"]), strconv.Itoa(lids["Hca2"])
	for _, args := range [][]string{
		{"nodeinfo", sw2}, {"NI", hca2}, {"portinfo", sw2}, {"portinfo", sw2, "3"}, {"PI", hca2, "1"},
		{"nodedesc", sw2}, {"ND", hca2}, {"switchinfo", sw2}, {"pkeys", sw2}, {"pkeys", hca2, "1"},
		{"sl2vl", sw2}, {"sl2vl", hca2}, {"vlarb", sw2}, {"vlarb", sw2, "1"}, {"vlarb", hca2, "1"},
		{"GUIDInfo", hca2}, {"-D", "nodeinfo", "0,1,3"}, {"-D", "portinfo", "0,1", "1"},
		{"-D", "nodedesc", "0"}, {"-D", "switchinfo", "0,1"}, {"-D", "sl2vl", "0,1,5"},
		// Failures: an unroutable LID, a route through an uncabled
		// port, an op smpquery does not have.
		{"nodeinfo", "999"}, {"-D", "nodeinfo", "0,1,7"}, {"bogus", sw2},
	} {
		name := strings.Join(args, " ")
		sameRun(t, "smpquery "+name, runC(t, f, "Hca1", "smpquery", args...), runGo(t, f, "Hca1", "smpquery", args...), nil)
	}
	// sminfo: the SM's activity count moves with every sweep and every
	// query, so it is masked.
	act := regexp.MustCompile(`activity count [0-9]+`)
	mask := func(s string) string { return act.ReplaceAllString(s, "activity count N") }
	for _, args := range [][]string{{}, {strconv.Itoa(lids["Switch1"])}} {
		sameRun(t, "sminfo "+strings.Join(args, " "), runC(t, f, "Hca3", "sminfo", args...), runGo(t, f, "Hca3", "sminfo", args...), mask)
	}
}

// TestFabricPerfquery runs perfquery, infiniband-diags' and ours, against
// remote LIDs of the small simulated fabric. Counters move with every
// MAD, the queries' own included, so each run starts from counters reset
// (perfquery -R, -x -R): the two tools send the same MADs, and ibsim
// counts them the same, so the outputs are identical. Error counters set
// from ibsim's console show in both.
func TestFabricPerfquery(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{Console: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lids, err := f.LIDs(ctx, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	sw1, sw2, hca2 := strconv.Itoa(lids["Switch1"]), strconv.Itoa(lids["Switch2"]), strconv.Itoa(lids["Hca2"])
	inject := []string{
		`PerformanceSet "Hca2"[1] PortCounters.SymbolErrorCounter=7`,
		`PerformanceSet "Hca2"[1] PortCounters.LinkDownedCounter=2`,
		`PerformanceSet "Hca2"[1] PortCounters.PortRcvErrors=3`,
		`PerformanceSet "Switch2"[3] PortCounters.PortXmitDiscards=11`,
	}
	// prepare resets the counters of the node lid (all its ports, both
	// attributes) and injects the errors again.
	prepare := func(lid string) {
		for _, x := range [][]string{{"-R", "-a", lid}, {"-x", "-R", "-a", lid}} {
			if lid == hca2 {
				x[len(x)-2], x[len(x)-1] = lid, "1"
			}
			if r := runC(t, f, "Hca1", "perfquery", x...); r.code != 0 {
				t.Fatalf("perfquery %v: %+v", x, r)
			}
		}
		for _, c := range inject {
			if err := f.Console(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, args := range [][]string{
		{hca2, "1"}, {"-x", hca2, "1"}, {sw2, "3"}, {"-x", sw2, "3"}, {"-a", sw2}, {"-x", "-a", sw2},
		{"-a", sw1}, {"-r", hca2, "1"}, {"-R", hca2, "1"}, {"-x", "-r", sw2, "3"},
		// Unroutable LID; AllPortSelect emulated on an HCA whose port 2 is
		// not cabled (its PMA answers with an error status).
		{"999", "1"}, {"-a", hca2},
	} {
		name := "perfquery " + strings.Join(args, " ")
		lid := args[len(args)-1]
		if len(args) > 1 && !strings.HasPrefix(args[len(args)-2], "-") {
			lid = args[len(args)-2]
		}
		if lid == "999" {
			lid = hca2
		}
		prepare(lid)
		c := runC(t, f, "Hca1", "perfquery", args...)
		prepare(lid)
		g := runGo(t, f, "Hca1", "perfquery", args...)
		// Our stderr adds an explanation after libibmad's warnings.
		if strings.HasPrefix(fabricPidRE.ReplaceAllString(g.stderr, "[pid]"), fabricPidRE.ReplaceAllString(c.stderr, "[pid]")) {
			g.stderr = c.stderr
		}
		// ibsim's PortCountersExtended reset leaves PortRcvPkts counting
		// (it grows from one run to the next), so with -x that one line
		// is compared masked.
		var mask func(string) string
		if args[0] == "-x" {
			rcv := regexp.MustCompile(`(?m)^PortRcvPkts:\.+[0-9]+$`)
			mask = func(s string) string { return rcv.ReplaceAllString(s, "PortRcvPkts:N") }
		}
		sameRun(t, name, c, g, mask)
		if args[0] == hca2 && !strings.Contains(g.stdout, "SymbolErrorCounter:..............7\n") {
			t.Errorf("%s: the injected SymbolErrorCounter does not show:\n%s", name, g.stdout)
		}
	}
}

// topoTime masks ibnetdiscover's "generated on" line, the one line that
// differs on purpose (the time of the run).
var topoTime = regexp.MustCompile(`(?m)^# Topology file: generated on .*$`)

func maskTopoTime(s string) string {
	return topoTime.ReplaceAllString(s, "# Topology file: generated on TIME")
}

// TestFabricIBNetDiscover compares ibnetdiscover's default output, ours
// and infiniband-diags', from an HCA and from a switch of the small
// fabric.
func TestFabricIBNetDiscover(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	for _, node := range []string{"Hca1", "Hca4", "Switch2"} {
		c := runC(t, f, node, "ibnetdiscover")
		g := runGo(t, f, node, "ibnetdiscover")
		sameRun(t, "ibnetdiscover at "+node, c, g, maskTopoTime)
		if !strings.Contains(g.stdout, `"Switch1" lid`) {
			t.Errorf("at %s: no link to Switch1:\n%s", node, g.stdout)
		}
	}
}

// BenchmarkFabricScan1k scans the 1,052-node fat tree with
// infiniband-diags' ibnetdiscover and with ours, in turn, checks that the
// outputs are the same, and logs the times and their ratio (never a
// failure on time). Both run as processes (ours built once with `go
// build`, CGO_ENABLED=0), so both pay for starting and attaching; the
// in-process time of ours (no process start) is logged too. `make bench`
// runs it.
func BenchmarkFabricScan1k(b *testing.B) {
	f := ibsimtest.Start(b, ibsimtest.Big, ibsimtest.Options{Timeout: 120 * time.Second})
	bin := filepath.Join(b.TempDir(), "purerdma")
	build := exec.Command("go", "build", "-o", bin, "../..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var goTime, cTime, inTime time.Duration
	goMin, cMin, inMin := time.Hour, time.Hour, time.Hour
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		start := time.Now()
		cout, err := f.Command(ctx, "hca0_0", "ibnetdiscover").Output()
		cTime += time.Since(start)
		cMin = min(cMin, time.Since(start))
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, bin, "ibnetdiscover")
		cmd.Env = append(os.Environ(), umadenv.IBSim+"="+f.Sock+":hca0_0")
		start = time.Now()
		gout, err := cmd.Output()
		goTime += time.Since(start)
		goMin = min(goMin, time.Since(start))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if maskTopoTime(string(gout)) != maskTopoTime(string(cout)) {
			b.Errorf("outputs differ (%d and %d bytes)", len(gout), len(cout))
		}
		b.Setenv(umadenv.IBSim, f.Sock+":hca0_0")
		var out, errb bytes.Buffer
		start = time.Now()
		if err := DefaultEnv().run([]string{"purerdma", "ibnetdiscover"}, &out, &errb); err != nil {
			b.Fatalf("%v: %s", err, errb.String())
		}
		inTime += time.Since(start)
		inMin = min(inMin, time.Since(start))
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64(goTime.Milliseconds())/float64(b.N), "go-ms/scan")
	b.ReportMetric(float64(cTime.Milliseconds())/float64(b.N), "c-ms/scan")
	b.ReportMetric(goTime.Seconds()/cTime.Seconds(), "go/c")
	b.Logf("1,052-node scan, as processes: purerdma %v, infiniband-diags %v per scan, Go/C %.2f; purerdma in-process %v (Go/C %.2f)",
		goTime/n, cTime/n, goTime.Seconds()/cTime.Seconds(), inTime/n, inTime.Seconds()/cTime.Seconds())
	b.Logf("fastest of %d: purerdma %v, infiniband-diags %v, Go/C %.2f; in-process %v (Go/C %.2f)",
		b.N, goMin, cMin, goMin.Seconds()/cMin.Seconds(), inMin, inMin.Seconds()/cMin.Seconds())
}

// TestFabricIBLinkInfo compares iblinkinfo's default output, ours and
// infiniband-diags', on the small fabric.
func TestFabricIBLinkInfo(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	for _, node := range []string{"Hca1", "Switch1"} {
		sameRun(t, "iblinkinfo at "+node, runC(t, f, node, "iblinkinfo"), runGo(t, f, node, "iblinkinfo"), nil)
	}
}

// TestFabricBig compares ibnetdiscover and iblinkinfo, ours and
// infiniband-diags', on the 1,052-node fat tree (skipped with -short).
func TestFabricBig(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the 1,052-node fabric takes seconds to come up")
	}
	f := ibsimtest.Start(t, ibsimtest.Big, ibsimtest.Options{Timeout: 120 * time.Second})
	sameRun(t, "ibnetdiscover", runC(t, f, "hca5_7", "ibnetdiscover"), runGo(t, f, "hca5_7", "ibnetdiscover"), maskTopoTime)
	sameRun(t, "iblinkinfo", runC(t, f, "spine3", "iblinkinfo"), runGo(t, f, "spine3", "iblinkinfo"), nil)
}

// TestFabricFaults breaks the small fabric from ibsim's console (one of
// the two cables between the switches unlinked, an HCA's port errors set)
// and compares what ibnetdiscover, iblinkinfo and perfquery report, ours
// and infiniband-diags'.
func TestFabricFaults(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{Console: true})
	for _, c := range []string{`Unlink "Switch1"[5]`, `PerformanceSet "Hca3"[1] PortCounters.SymbolErrorCounter=65535`} {
		if err := f.Console(c); err != nil {
			t.Fatal(err)
		}
	}
	c, g := runC(t, f, "Hca1", "ibnetdiscover"), runGo(t, f, "Hca1", "ibnetdiscover")
	sameRun(t, "ibnetdiscover", c, g, maskTopoTime)
	if strings.Contains(g.stdout, `[5]	"S-`) {
		t.Errorf("the unlinked cable still shows:\n%s", g.stdout)
	}
	c, g = runC(t, f, "Hca1", "iblinkinfo"), runGo(t, f, "Hca1", "iblinkinfo")
	sameRun(t, "iblinkinfo", c, g, nil)
	if !strings.Contains(g.stdout, "    5[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )") {
		t.Errorf("port 5 not down:\n%s", g.stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lids, err := f.LIDs(ctx, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	lid := strconv.Itoa(lids["Hca3"])
	runC(t, f, "Hca1", "perfquery", "-R", lid, "1")
	if err := f.Console(`PerformanceSet "Hca3"[1] PortCounters.SymbolErrorCounter=65535`); err != nil {
		t.Fatal(err)
	}
	c = runC(t, f, "Hca1", "perfquery", lid, "1")
	runC(t, f, "Hca1", "perfquery", "-R", lid, "1")
	if err := f.Console(`PerformanceSet "Hca3"[1] PortCounters.SymbolErrorCounter=65535`); err != nil {
		t.Fatal(err)
	}
	g = runGo(t, f, "Hca1", "perfquery", lid, "1")
	sameRun(t, "perfquery", c, g, nil)
	if !strings.Contains(g.stdout, "SymbolErrorCounter:..............65535\n") {
		t.Errorf("the saturated counter does not show:\n%s", g.stdout)
	}
}

// TestFabricIbstat: on an ibsim fabric ibstat and ibstatus show the one
// device libumad2sim shows its client, ibsim0, attached at an HCA and at
// a switch. The tree ours reads is libumad2sim's, file for file (each
// read by cat through libumad2sim); ibstat's output is infiniband-diags' under libumad2sim; ibstatus's
// is the ibstatus script's run on that tree (the script itself does not
// see libumad2sim's tree: its shell tests /sys directly).
func TestFabricIbstat(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	script, err := exec.LookPath("ibstatus")
	if err != nil {
		script = "/usr/sbin/ibstatus"
	}
	text, err := os.ReadFile(script)
	if err != nil {
		t.Skipf("infiniband-diags' ibstatus script: %v", err)
	}
	for _, node := range []string{"Hca2", "Switch1"} {
		for _, args := range [][]string{{}, {"-l"}, {"-p"}, {"-s"}, {"ibsim0"}, {"ibsim0", "1"}, {"ibsim0", "2"}, {"mlx5_0"}} {
			name := "ibstat " + strings.Join(args, " ") + " at " + node
			sameRun(t, name, runC(t, f, node, "ibstat", args...), runGo(t, f, node, "ibstat", args...), nil)
		}

		// The tree, against libumad2sim's.
		p, err := umad.OpenSimPort(f.Sock, node)
		if err != nil {
			t.Fatal(err)
		}
		n, err := p.SimNode()
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		if err := writeSimSysfs(root, &n); err != nil {
			t.Fatal(err)
		}
		files := 0
		err = filepath.WalkDir(filepath.Join(root, "class"), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			b, _ := os.ReadFile(path)
			if c := runC(t, f, node, "cat", "/sys/"+rel); c.code != 0 || c.stdout != string(b) {
				t.Errorf("at %s: /sys/%s is %q, libumad2sim's %q (%s)", node, rel, b, c.stdout, c.stderr)
			}
			files++
			return nil
		})
		// dev_sysfs_create: 6 device files, 8 port files, gid 0, 32
		// P_Keys, abi_version and umad0 and issm0 (2 each).
		if err != nil || files != 6+8+1+32+1+4 {
			t.Fatalf("at %s: %d files: %v", node, files, err)
		}
		// Files neither tree has (cat through libumad2sim fails).
		port := "class/infiniband/ibsim0/ports/" + strconv.Itoa(int(n.PortInfo[28]))
		for _, rel := range []string{"class/infiniband/ibsim0/node_desc", "class/infiniband/ibsim0/board_id",
			port + "/link_layer", port + "/gids/1", port + "/pkeys/32"} {
			if _, err := os.Stat(filepath.Join(root, rel)); err == nil {
				t.Errorf("at %s: ours has %s", node, rel)
			}
			if c := runC(t, f, node, "cat", "/sys/"+rel); c.code == 0 {
				t.Errorf("at %s: libumad2sim has /sys/%s", node, rel)
			}
		}

		// ibstatus: the script on that tree.
		tree := filepath.Join(root, "class", "infiniband")
		mine := filepath.Join(t.TempDir(), "ibstatus")
		s := strings.Replace(string(text), `infiniband_base="/sys/class/infiniband"`, `infiniband_base="`+tree+`"`, 1)
		if err := os.WriteFile(mine, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{}, {"ibsim0"}, {"ibsim0:" + strconv.Itoa(int(n.PortInfo[28]))}, {"mlx5_0"}} {
			cmd := exec.Command("sh", append([]string{mine}, args...)...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			code := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			c := fabricRun{stdout: strings.ReplaceAll(out.String(), tree, "/sys/class/infiniband"), stderr: errb.String(), code: code}
			sameRun(t, "ibstatus "+strings.Join(args, " ")+" at "+node, c, runGo(t, f, node, "ibstatus", args...), nil)
		}
	}
}
