package exporter

// The fabric mode side by side with treydock/infiniband_exporter on a
// simulated fabric of a few hundred nodes: `make exporter-fabric-compare
// INFINIBAND_EXPORTER=/path/to/infiniband_exporter` (docs/exporter.md,
// "Fabric mode"). infiniband_exporter is not served by the Go module
// proxy, so `make test` cannot build it: without INFINIBAND_EXPORTER the
// test skips.

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/purerdma/rdma/cmd/internal/umadenv"
	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
)

// The compared fabric: a fat tree of 4 spines and 12 leaves of 36-port
// switches, 24 HCAs on each leaf: 304 nodes (16 switches, 288 HCAs),
// 672 linked ports. Both exporters attach at compareNode.
const (
	compareSpines, compareLeaves, compareHCAs, comparePorts = 4, 12, 24, 36
	compareNode                                             = "hca0_0"
)

// ourOnly are the series families the fabric mode adds to
// infiniband_exporter's on this fabric, with why. ibsim's PMAs lack
// CapabilityMask2's AdditionalPortCountersExtended, so perfquery -x
// prints no error counters and infiniband_exporter exports none; the
// fabric mode reads them from PortCounters. ibsim's CapabilityMask has
// PortXmitWait and not QP1Dropped.
var ourOnly = func() map[string]string {
	m := map[string]string{}
	for _, c := range fabricCounters {
		if c.need != extErrs {
			continue
		}
		for _, sub := range []string{"switch", "hca"} {
			m["infiniband_"+sub+"_"+c.suffix] = "error counter read from PortCounters: the PMA's PortCountersExtended lacks it (CapabilityMask2), so perfquery -x prints none"
		}
	}
	return m
}()

// compareCounters are set from ibsim's console before the comparison:
// counters no MAD moves (the unicast and multicast counters, error
// counters), and large values for counters that move, so that a swapped
// or mis-scaled counter falls outside the bracket of two scrapes.
// (ibsim 0.10 says it sets PortCountersExtended.PortMulticastRcvPkts but
// its PMA goes on answering 0.)
var compareCounters = []string{
	`PerformanceSet "spine2"[7] PortCountersExtended.PortUnicastXmitPkts=123456789`,
	`PerformanceSet "leaf11"[3] PortCountersExtended.PortUnicastRcvPkts=77`,
	`PerformanceSet "hca5_7"[1] PortCountersExtended.PortUnicastXmitPkts=42`,
	`PerformanceSet "hca11_23"[1] PortCountersExtended.PortMulticastXmitPkts=5`,
	`PerformanceSet "leaf7"[26] PortCountersExtended.PortXmitData=5000000000`,
	`PerformanceSet "hca2_3"[1] PortCountersExtended.PortRcvPkts=1000000`,
	`PerformanceSet "leaf3"[25] PortCounters.SymbolErrorCounter=11`,
	`PerformanceSet "hca8_1"[1] PortCounters.LinkDownedCounter=2`,
}

// compareFail is the HCA port whose PMA refuses PortCountersExtended
// (attribute 0x1D) in the comparison's second round.
const compareFail = "hca9_9"

// exporterProc is an exporter running as a process.
type exporterProc struct {
	name string
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	log  *lockedBuffer
}

type lockedBuffer struct {
	mu chan struct{}
	b  []byte
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{mu: make(chan struct{}, 1)} }

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu <- struct{}{}
	l.b = append(l.b, p...)
	<-l.mu
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu <- struct{}{}
	defer func() { <-l.mu }()
	return string(l.b)
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startProc starts argv (the exporter, or strace running it) with
// env in dir, serving on addr, and waits until it answers.
func startProc(t *testing.T, name, addr string, argv, env []string, dir string) *exporterProc {
	t.Helper()
	p := &exporterProc{name: name, url: "http://" + addr + "/metrics", done: make(chan struct{}), log: newLockedBuffer()}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env, p.cmd.Dir = env, dir
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited: %s", name, p.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s: %s", name, addr, p.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the exporter: SIGTERM to it (under strace, to strace's
// child, so that strace writes out everything), SIGKILL after 10 s.
func (p *exporterProc) stop() {
	if p.cmd.Process == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	pid := p.cmd.Process.Pid
	if filepath.Base(p.cmd.Path) == "strace" {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				pid, _ = strconv.Atoi(f[0])
			}
		}
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// scrape gets the exporter's metrics and returns their infiniband_*
// series and families and how long the scrape took.
func (p *exporterProc) scrape(t *testing.T) (series, families, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v\n%s", p.name, err, p.log.String())
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %v %s\n%s", p.name, err, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	var list []*dto.MetricFamily
	for _, mf := range mfs {
		list = append(list, mf)
	}
	s, fam := seriesOf(list, "infiniband_")
	return s, fam, took
}

// lookTool finds an infiniband-diags tool on PATH or in /usr/sbin.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p
	}
	t.Skipf("%s is not installed (infiniband-diags; make deps-apt)", name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestFabricCompareInfinibandExporter runs infiniband_exporter (its
// binary in INFINIBAND_EXPORTER; ibnetdiscover and perfquery under
// libumad2sim) and the fabric mode (rdma_exporter --collector.fabric,
// PURERDMA_IBSIM) on the same simulated fabric, attached at the same
// node, and compares their series: ours scraped just before and just
// after theirs, the same series set but the families ourOnly lists, the
// same help and type, the same values (durations masked; the data and
// packet counters, which every MAD moves, between our two scrapes). A
// second round does the same with one HCA port's PMA refusing
// PortCountersExtended. It logs the scrape times and, with strace, the
// MADs each exporter sends for a scrape.
func TestFabricCompareInfinibandExporter(t *testing.T) {
	theirBin := os.Getenv("INFINIBAND_EXPORTER")
	if theirBin == "" {
		t.Skip("INFINIBAND_EXPORTER is not set: the treydock/infiniband_exporter binary to compare with (make exporter-fabric-compare INFINIBAND_EXPORTER=...)")
	}
	if !fileExists(theirBin) {
		t.Fatalf("INFINIBAND_EXPORTER=%s: no such file", theirBin)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH (the test builds rdma_exporter):", err)
	}
	ibnetdiscover, perfquery := lookTool(t, "ibnetdiscover"), lookTool(t, "perfquery")
	topo := ibsimtest.FatTree(compareSpines, compareLeaves, compareHCAs, comparePorts)
	start := time.Now()
	f := ibsimtest.Start(t, topo, ibsimtest.Options{Console: true, Timeout: 5 * time.Minute})
	t.Logf("fabric: %d spines, %d leaves, %d HCAs per leaf (%d nodes), up in %v",
		compareSpines, compareLeaves, compareHCAs, compareSpines+compareLeaves*(1+compareHCAs), time.Since(start).Round(time.Millisecond))
	for _, c := range compareCounters {
		if err := f.Console(c); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(t.TempDir(), "rdma_exporter")
	build := exec.Command(gobin, "build", "-o", bin, "github.com/purerdma/rdma/cmd/rdma_exporter")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sysfs := t.TempDir()
	ourArgs := func(addr string) []string {
		return []string{bin, "--collector.fabric", "--no-collector.infiniband", "--no-collector.hw_counters",
			"--no-collector.netlink", "--no-collector.flows", "--path.sysfs", sysfs, "--web.listen-address", addr}
	}
	ourEnv := append(os.Environ(), umadenv.IBSim+"="+f.Sock+":"+compareNode)
	theirArgs := func(addr string) []string {
		return []string{theirBin, "--web.listen-address=" + addr, "--collector.hca", "--web.disable-exporter-metrics",
			"--ibnetdiscover.path=" + ibnetdiscover, "--perfquery.path=" + perfquery}
	}
	theirEnv := f.Env(compareNode)
	ourAddr, theirAddr := freeAddr(t), freeAddr(t)
	ours := startProc(t, "rdma_exporter", ourAddr, ourArgs(ourAddr), ourEnv, t.TempDir())
	theirs := startProc(t, "infiniband_exporter", theirAddr, theirArgs(theirAddr), theirEnv, f.Dir)

	var ourTimes, theirTimes []time.Duration
	round := func(name string, intended map[string]string) (series, series) {
		a, aFam, ta := ours.scrape(t)
		ref, refFam, tr := theirs.scrape(t)
		b, _, tb := ours.scrape(t)
		ourTimes, theirTimes = append(ourTimes, ta, tb), append(theirTimes, tr)
		compareWithTheirs(t, name, a, aFam, ref, refFam, b, intended)
		return a, ref
	}
	a, ref := round("healthy fabric", nil)
	// The counters set from the console, as both read them.
	for _, c := range compareCounters {
		m := regexp.MustCompile(`"([^"]+)"\[(\d+)\] (\w+)\.(\w+)=`).FindStringSubmatch(c)
		var counter fabricCounter
		for _, fc := range fabricCounters {
			if fc.field == m[4] {
				counter = fc
			}
		}
		guid, sub := guidOf(t, a, m[1])
		k := seriesKey("infiniband_"+sub+"_"+counter.suffix, map[string]string{"guid": guid, "port": m[2]})
		value := func(s series) string {
			if v, ok := s[k]; ok {
				return strconv.FormatFloat(v, 'f', -1, 64)
			}
			return "none"
		}
		t.Logf("%s[%s] %s.%s set: infiniband_exporter %s, ours %s", m[1], m[2], m[3], m[4], value(ref), value(a))
	}
	// Round 2: one HCA port's PMA refuses PortCountersExtended, so
	// perfquery -x fails for it.
	failGUID, _ := guidOf(t, a, compareFail)
	if err := f.Console(`Error "` + compareFail + `"[1] 100 29`); err != nil {
		t.Fatal(err)
	}
	round("PortCountersExtended refused by "+compareFail, map[string]string{
		seriesKey("infiniband_hca_collect_error", map[string]string{"guid": failGUID, "collector": collectorHCA}): "infiniband_exporter's per-device collect metrics of a failed perfquery are dropped before they are stored (collect() returns first), so its collect_error stays 0; ours is 1",
	})
	if err := f.Console(`Error "` + compareFail + `"[1] 0 29`); err != nil {
		t.Fatal(err)
	}

	// More scrapes for the times, in turn.
	for range 3 {
		_, _, tr := theirs.scrape(t)
		_, _, ta := ours.scrape(t)
		ourTimes, theirTimes = append(ourTimes, ta), append(theirTimes, tr)
	}
	t.Logf("scrape time: rdma_exporter --collector.fabric min %v median %v of %d; infiniband_exporter min %v median %v of %d",
		minDur(ourTimes), medianDur(ourTimes), len(ourTimes), minDur(theirTimes), medianDur(theirTimes), len(theirTimes))
	ours.stop()
	theirs.stop()

	// The MADs of one scrape each, counted by strace: every write of a
	// 288-byte request to an ibsim socket (libumad2sim's and ours) is
	// one MAD sent, retries included; byte 33 is the MAD's class.
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Logf("strace is not installed: MADs not counted")
		return
	}
	for _, x := range []struct {
		name string
		argv func(string) []string
		env  []string
		dir  string
	}{
		{"rdma_exporter", ourArgs, ourEnv, t.TempDir()},
		{"infiniband_exporter", theirArgs, theirEnv, f.Dir},
	} {
		dir := t.TempDir()
		addr := freeAddr(t)
		argv := append([]string{strace, "-f", "-ff", "-qq", "-yy", "-xx", "-s", "40", "-e", "trace=write,execve", "-o", filepath.Join(dir, "trace")}, x.argv(addr)...)
		p := startProc(t, x.name+" under strace", addr, argv, x.env, x.dir)
		p.scrape(t)
		p.stop()
		c, err := countMADs(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: one scrape sends %s", x.name, c)
	}
}

// compareWithTheirs compares our scrapes a (before) and b (after) with
// infiniband_exporter's ref: t.Error for each difference but the
// families ourOnly lists and the series intended names (with why).
func compareWithTheirs(t *testing.T, round string, a series, aFam families, ref series, refFam families, b series, intended map[string]string) {
	t.Helper()
	for _, name := range slices.Sorted(mapKeys(refFam)) {
		if of, ok := aFam[name]; !ok {
			t.Errorf("%s: family %s only in infiniband_exporter's", round, name)
		} else if of != refFam[name] {
			t.Errorf("%s: %s: TYPE and HELP %q, infiniband_exporter's %q", round, name, of, refFam[name])
		}
	}
	var added []string
	addedFams := 0
	for _, name := range slices.Sorted(mapKeys(aFam)) {
		if _, ok := refFam[name]; ok {
			continue
		}
		if _, ok := ourOnly[name]; !ok {
			t.Errorf("%s: family %s only in ours", round, name)
		}
		if suffix := name[strings.Index(name, "_port_")+1:]; !slices.Contains(added, suffix) {
			added = append(added, suffix)
		}
		addedFams++
	}
	for _, k := range onlyIn(ref, a) {
		t.Errorf("%s: %s only in infiniband_exporter's (%v)", round, k, ref[k])
	}
	extra := 0
	for _, k := range onlyIn(a, ref) {
		if _, ok := ourOnly[seriesName(k)]; ok {
			extra++
			continue
		}
		t.Errorf("%s: %s only in ours (%v)", round, k, a[k])
	}
	if ka, kb := onlyIn(a, b), onlyIn(b, a); len(ka)+len(kb) > 0 {
		t.Errorf("%s: our two scrapes differ in their series: %v, %v", round, ka, kb)
	}
	d := compareSeries(a, ref, b)
	for _, k := range slices.Sorted(mapKeys(d.bad)) {
		if why, ok := intended[k]; ok {
			t.Logf("%s: intended difference: %s (%s)", round, d.bad[k], why)
			continue
		}
		t.Error(round + ": " + d.bad[k])
	}
	t.Logf("%s: infiniband_exporter %d series in %d families; ours the same %d series (%d equal, %d data and packet counters between our scrapes before and after, %d of them equal, %d durations masked) and %d more in %d families (infiniband_{switch,hca}_%s)",
		round, len(ref), len(refFam), d.both, d.exact, d.bracketed, d.bracketEqual, d.masked, extra, addedFams, strings.Join(added, ", "))
}

// guidOf returns the GUID and collector ("switch", "hca") of the device
// named name in s's info series.
func guidOf(t *testing.T, s series, name string) (string, string) {
	t.Helper()
	for k := range s {
		for _, sub := range []string{"switch", "hca"} {
			if seriesName(k) == "infiniband_"+sub+"_info" && strings.Contains(k, sub+`="`+name+`"`) {
				return regexp.MustCompile(`guid="([^"]+)"`).FindStringSubmatch(k)[1], sub
			}
		}
	}
	t.Fatalf("no infiniband_*_info series for %s", name)
	return "", ""
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func minDur(ds []time.Duration) time.Duration { return slices.Min(ds).Round(time.Millisecond) }

func medianDur(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

// madCounts are the MADs of a strace -ff trace, by sender and class.
type madCounts struct {
	byTool map[string]map[byte]int // "": the exporter itself
	execs  map[string]int
}

func (c madCounts) String() string {
	class := map[byte]string{0x01: "LID-routed SMPs", 0x81: "directed-route SMPs", 0x03: "SA queries", 0x04: "PMA queries"}
	var parts []string
	total := 0
	for _, tool := range slices.Sorted(mapKeys(c.byTool)) {
		var cs []string
		for _, cl := range slices.Sorted(func(yield func(byte) bool) {
			for k := range c.byTool[tool] {
				if !yield(k) {
					return
				}
			}
		}) {
			n := c.byTool[tool][cl]
			total += n
			name := class[cl]
			if name == "" {
				name = fmt.Sprintf("class %#x MADs", cl)
			}
			cs = append(cs, fmt.Sprintf("%d %s", n, name))
		}
		who := "the exporter"
		if tool != "" {
			who = fmt.Sprintf("%s ×%d", tool, c.execs[tool])
		}
		parts = append(parts, who+": "+strings.Join(cs, ", "))
	}
	return fmt.Sprintf("%d MADs (%s)", total, strings.Join(parts, "; "))
}

var (
	straceWrite  = regexp.MustCompile(`^write\(\d+<UNIX:\[.*?\]>, "((?:\\x[0-9a-f]{2})+)"(?:\.\.\.)?, 288\) = 288$`)
	straceExecve = regexp.MustCompile(`^execve\("((?:\\x[0-9a-f]{2})+)"`)
)

// countMADs reads the trace.<pid> files strace -ff wrote in dir.
func countMADs(dir string) (madCounts, error) {
	c := madCounts{byTool: map[string]map[byte]int{}, execs: map[string]int{}}
	files, err := filepath.Glob(filepath.Join(dir, "trace.*"))
	if err != nil || len(files) == 0 {
		return c, fmt.Errorf("no strace output in %s (%v)", dir, err)
	}
	for _, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			return c, err
		}
		tool := ""
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if m := straceExecve.FindStringSubmatch(line); m != nil && strings.HasSuffix(line, " = 0") {
				path, _ := hex.DecodeString(strings.ReplaceAll(m[1], `\x`, ""))
				if b := filepath.Base(string(path)); b == "perfquery" || b == "ibnetdiscover" {
					tool = b
					c.execs[b]++
				}
				continue
			}
			m := straceWrite.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			b, err := hex.DecodeString(strings.ReplaceAll(m[1], `\x`, ""))
			if err != nil || len(b) < 34 {
				fh.Close()
				return c, errors.Join(fmt.Errorf("%s: %q", name, line), err)
			}
			if c.byTool[tool] == nil {
				c.byTool[tool] = map[byte]int{}
			}
			c.byTool[tool][b[33]]++
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return c, err
		}
	}
	return c, nil
}
