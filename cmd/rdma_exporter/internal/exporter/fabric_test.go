package exporter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/purerdma/rdma/cmd/internal/umadenv"
	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
	"github.com/purerdma/rdma/umad"
)

// series are a scrape's samples by name and label set
// (`name{a="x",b="y"}`, labels sorted), families their "TYPE HELP".
type series map[string]float64

type families map[string]string

// seriesOf returns the samples and families of mfs whose names start
// with prefix.
func seriesOf(mfs []*dto.MetricFamily, prefix string) (series, families) {
	s, fam := series{}, families{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), prefix) {
			continue
		}
		fam[mf.GetName()] = mf.GetType().String() + " " + mf.GetHelp()
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := m.GetGauge().GetValue()
			if c := m.GetCounter(); c != nil {
				v = c.GetValue()
			}
			s[seriesKey(mf.GetName(), labels)] = v
		}
	}
	return s, fam
}

func seriesKey(name string, labels map[string]string) string {
	var kv []string
	for k, v := range labels {
		kv = append(kv, k+"="+strconv.Quote(v))
	}
	sort.Strings(kv)
	return name + "{" + strings.Join(kv, ",") + "}"
}

func seriesName(key string) string { n, _, _ := strings.Cut(key, "{"); return n }

// gatherFabric scrapes e in process, through a pedantic registry and
// promtool's lint, and returns its infiniband_* series.
func gatherFabric(t *testing.T, e *Exporter) (series, families) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	up, _ := seriesOf(mfs, "rdma_exporter_source_up")
	if v, ok := up[seriesKey("rdma_exporter_source_up", map[string]string{"source": SourceFabric})]; !ok || v != 1 {
		t.Errorf("rdma_exporter_source_up{source=fabric} %v (present %v)", v, ok)
	}
	return seriesOf(mfs, "infiniband_")
}

// Where the fabric series differ between two scrapes of the same fabric:
// durations are masked, and the four data and packet counters move with
// the scrapes' own MADs (ibsim counts every packet of every hop).
func maskedSeries(name string) bool { return strings.HasSuffix(name, "_duration_seconds") }

func movingSeries(name string) bool {
	for _, s := range []string{"port_transmit_data_bytes_total", "port_receive_data_bytes_total", "port_transmit_packets_total", "port_receive_packets_total"} {
		if strings.HasSuffix(name, "_"+s) {
			return true
		}
	}
	return false
}

// seriesDiff compares the series of a reference scrape (ref) with ours
// taken just before (a) and just after (b) it, over the keys all three
// have: masked series by presence, moving series a ≤ ref ≤ b, every
// other series a = ref = b. It returns what differs (by key) and counts
// the kinds.
type seriesDiff struct {
	both, exact, bracketed, bracketEqual, masked int
	bad                                          map[string]string
}

func compareSeries(a, ref, b series) seriesDiff {
	d := seriesDiff{bad: map[string]string{}}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range ref {
			if !yield(k) {
				return
			}
		}
	}) {
		va, okA := a[k]
		vb, okB := b[k]
		if !okA || !okB {
			continue
		}
		d.both++
		vr := ref[k]
		name := seriesName(k)
		switch {
		case maskedSeries(name):
			d.masked++
		case movingSeries(name):
			if va <= vr && vr <= vb {
				d.bracketed++
				if va == vr {
					d.bracketEqual++
				}
			} else {
				d.bad[k] = fmt.Sprintf("%s: reference %v, ours %v before and %v after", k, vr, va, vb)
			}
		default:
			if va == vr && vr == vb {
				d.exact++
			} else {
				d.bad[k] = fmt.Sprintf("%s: reference %v, ours %v before and %v after", k, vr, va, vb)
			}
		}
	}
	return d
}

// onlyIn returns the keys of a that b lacks, sorted.
func onlyIn(a, b series) []string {
	var out []string
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// portsLine is a line of ibnetdiscover --ports with a link:
// "SW     3  1 0x0000000000200001 4x SDR - CA     4  1 0x0000000000100004 ( 'Switch2' - 'Hca2' )".
var portsLine = regexp.MustCompile(`^\s*(\S+)\s+(\d+)\s+(\d+)\s+(0x[0-9a-f]{16})\s+(\S+)\s+(\S+)\s+-\s+(\S+)\s+(\d+)\s+(\d+)\s+(0x[0-9a-f]{16})\s+\( '(.*)' - '(.*)' \)\s*$`)

// diagsPort is a linked port as ibnetdiscover --ports prints it.
type diagsPort struct {
	typ, lid, port, guid, width, speed    string
	rtyp, rlid, rport, rguid, name, rname string
}

func ibnetdiscoverPorts(t *testing.T, f *ibsimtest.Fabric, node string) []diagsPort {
	t.Helper()
	out, err := f.Run(context.Background(), node, "ibnetdiscover", "--ports")
	if err != nil {
		t.Fatal(err)
	}
	var ps []diagsPort
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := portsLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ps = append(ps, diagsPort{m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], strings.TrimSpace(m[11]), strings.TrimSpace(m[12])})
	}
	if len(ps) == 0 {
		t.Fatalf("no linked port in ibnetdiscover --ports:\n%s", out)
	}
	return ps
}

// perfqueryOut runs perfquery (args then LID and ports) and returns each
// port's fields and the header's capability masks.
type pmaOut struct {
	fields     map[string]uint64
	cap, cap2  uint64
	hasCapMask bool
}

var perfqueryHeader = regexp.MustCompile(`^# Port (?:extended )?counters: Lid \d+ port (\d+) \(CapMask: (0x[0-9A-Fa-f]+)(?: CapMask2: (0x[0-9A-Fa-f]+))?\)`)

func perfquery(t *testing.T, f *ibsimtest.Fabric, node string, args ...string) map[string]*pmaOut {
	t.Helper()
	out, err := f.Run(context.Background(), node, "perfquery", args...)
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]*pmaOut{}
	var cur *pmaOut
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := perfqueryHeader.FindStringSubmatch(line); m != nil {
			cur = &pmaOut{fields: map[string]uint64{}, hasCapMask: true}
			cur.cap, _ = strconv.ParseUint(m[2], 0, 64)
			if m[3] != "" {
				cur.cap2, _ = strconv.ParseUint(m[3], 0, 64)
			}
			ports[m[1]] = cur
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || cur == nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimLeft(v, "."), 0, 64)
		if err != nil {
			continue
		}
		cur.fields[k] = n
	}
	return ports
}

// diagsSeries is what the fabric mode should export on f, seen from
// node, by infiniband-diags' own tools: the devices, names, LIDs, links
// and rates of ibnetdiscover --ports, each port's counters as perfquery
// -x prints them and, where the PMA's CapabilityMask2 lacks
// AdditionalPortCountersExtended, the error counters of plain perfquery.
func diagsSeries(t *testing.T, f *ibsimtest.Fabric, node string) series {
	t.Helper()
	// infiniband_exporter's lane rates (signalling, effective), Gb/s,
	// for the speeds ibsim links have.
	lanes := map[string][2]float64{"SDR": {2.5, 2}, "DDR": {5, 4}, "QDR": {10, 8}}
	s := series{}
	zero := func(name string, labels map[string]string, v float64) { s[seriesKey(name, labels)] = v }
	for _, c := range []string{collectorDiscover, collectorSwitch, collectorHCA} {
		for _, n := range []string{"infiniband_exporter_collect_errors", "infiniband_exporter_collect_timeouts", "infiniband_exporter_collector_duration_seconds"} {
			zero(n, map[string]string{"collector": c}, 0)
		}
	}
	devPorts := map[string][]string{}
	devLID := map[string]string{}
	devSub := map[string]string{}
	for _, p := range ibnetdiscoverPorts(t, f, node) {
		sub := map[string]string{"SW": "switch", "CA": "hca"}[p.typ]
		if sub == "" {
			continue
		}
		devPorts[p.guid] = append(devPorts[p.guid], p.port)
		devLID[p.guid], devSub[p.guid] = p.lid, sub
		zero("infiniband_"+sub+"_info", map[string]string{"guid": p.guid, sub: p.name, "lid": p.lid}, 1)
		for _, n := range []string{"collect_error", "collect_timeout", "collect_duration_seconds"} {
			zero("infiniband_"+sub+"_"+n, map[string]string{"guid": p.guid, "collector": sub}, 0)
		}
		zero("infiniband_"+sub+"_uplink_info", map[string]string{"guid": p.guid, "port": p.port, sub: p.name,
			"uplink": p.rname, "uplink_guid": p.rguid, "uplink_type": p.rtyp, "uplink_port": p.rport, "uplink_lid": p.rlid}, 1)
		w, err := strconv.ParseFloat(strings.TrimSuffix(p.width, "x"), 64)
		lane, ok := lanes[p.speed]
		if err != nil || !ok {
			t.Fatalf("ibnetdiscover --ports: width %q speed %q", p.width, p.speed)
		}
		base := w * 1e9 / 8
		if sub == "switch" {
			zero("infiniband_switch_port_rate_bytes_per_second", map[string]string{"guid": p.guid, "port": p.port}, lane[1]*base)
			zero("infiniband_switch_port_raw_rate_bytes_per_second", map[string]string{"guid": p.guid, "port": p.port}, lane[0]*base)
		} else {
			zero("infiniband_hca_rate_bytes_per_second", map[string]string{"guid": p.guid}, lane[1]*base)
			zero("infiniband_hca_raw_rate_bytes_per_second", map[string]string{"guid": p.guid}, lane[0]*base)
		}
	}
	errField := map[string]bool{}
	for _, c := range fabricCounters {
		errField[c.field] = c.need == extErrs
	}
	for guid, ports := range devPorts {
		sub, list := devSub[guid], strings.Join(ports, ",")
		ext := perfquery(t, f, node, "-x", devLID[guid], list)
		plain := perfquery(t, f, node, devLID[guid], list)
		for _, port := range ports {
			x, pc := ext[port], plain[port]
			if x == nil || pc == nil {
				t.Fatalf("perfquery %s %s: no port %s", devLID[guid], list, port)
			}
			for _, c := range fabricCounters {
				v, ok := x.fields[c.field]
				if !ok && errField[c.field] && x.cap2&umad.PMCap2AdditionalPortCountersExtended == 0 {
					// perfquery -x prints no error counters: the
					// fabric mode reads them from PortCounters, and
					// PortXmitWait and QP1Dropped only where its
					// CapabilityMask says they are counted.
					v, ok = pc.fields[c.field]
					if c.field == "PortXmitWait" && pc.cap&umad.PMCapPortCountersXmitWait == 0 ||
						c.field == "QP1Dropped" && pc.cap&umad.PMCapQP1Dropped == 0 {
						ok = false
					}
				}
				if !ok {
					continue
				}
				fv := float64(v)
				if strings.HasSuffix(c.field, "Data") {
					fv *= 4
				}
				zero("infiniband_"+sub+"_"+c.suffix, map[string]string{"guid": guid, "port": port}, fv)
			}
		}
	}
	return s
}

func fabricExporter(t *testing.T, f *ibsimtest.Fabric, node string, log *bytes.Buffer) *Exporter {
	t.Helper()
	off := map[string]bool{}
	for _, s := range Sources {
		off[s] = true
	}
	e, err := New(Config{SysfsRoot: t.TempDir(), Off: off, Logger: newTestLogger(log),
		Fabric: &FabricConfig{Open: func(ctx context.Context) (*umad.Port, error) { return umad.OpenSimPortContext(ctx, f.Sock, node) }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestFabricMode scrapes the small simulated fabric in fabric mode and
// checks every series against what infiniband-diags' own tools read on
// the same fabric, attached at the same node (diagsSeries): the same
// devices, names, LIDs, links and rates as ibnetdiscover --ports; every
// counter as perfquery -x and perfquery print it, after counters were
// set from ibsim's console. The four data and packet counters move with
// every MAD (ours and perfquery's), so perfquery's value must lie
// between a scrape before it and one after it; everything else is equal.
func TestFabricMode(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{Console: true})
	for _, c := range []string{
		`PerformanceSet "Switch2"[1] PortCounters.SymbolErrorCounter=42`,
		`PerformanceSet "Switch2"[2] PortCounters.PortXmitWait=9`,
		`PerformanceSet "Hca2"[1] PortCounters.LinkDownedCounter=3`,
		`PerformanceSet "Hca3"[1] PortCounters.ExcessiveBufferOverrunErrors=2`,
		`PerformanceSet "Switch1"[3] PortCountersExtended.PortUnicastXmitPkts=5`,
		`PerformanceSet "Switch1"[5] PortCountersExtended.PortMulticastXmitPkts=6`,
		`PerformanceSet "Switch1"[3] PortCountersExtended.PortXmitData=1000000`,
	} {
		if err := f.Console(c); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	e := fabricExporter(t, f, "Hca1", &log)
	before, fam := gatherFabric(t, e)
	want := diagsSeries(t, f, "Hca1")
	after, _ := gatherFabric(t, e)
	if t.Failed() {
		t.Fatalf("log: %s", log.String())
	}
	for _, k := range onlyIn(want, before) {
		t.Errorf("missing %s (infiniband-diags: %v)", k, want[k])
	}
	for _, k := range onlyIn(before, want) {
		t.Errorf("not in infiniband-diags' view: %s %v", k, before[k])
	}
	if ka, kb := onlyIn(before, after), onlyIn(after, before); len(ka)+len(kb) > 0 {
		t.Errorf("two scrapes differ in their series: %v, %v", ka, kb)
	}
	d := compareSeries(before, want, after)
	for _, k := range slices.Sorted(mapKeys(d.bad)) {
		t.Error(d.bad[k])
	}
	t.Logf("%d series: %d equal, %d moving counters between two scrapes, %d durations", d.both, d.exact, d.bracketed, d.masked)
	// Small: Switch1 and Switch2 with ports 1, 2, 3, 5 linked, four HCAs
	// with port 1: 6 devices, 12 ports; ibsim's PMAs lack
	// AdditionalPortCountersExtended, so the 13 error counters ibsim's
	// CapabilityMask allows come from PortCounters.
	if n := len(fam); n != 2*(22-1)+2*7+3 {
		t.Errorf("%d families, want %d", n, 2*(22-1)+2*7+3)
	}
	// The counters set from the console (the comparison checks the rest).
	port := func(guid, port string) map[string]string { return map[string]string{"guid": guid, "port": port} }
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"infiniband_switch_port_symbol_error_total", port("0x0000000000200001", "1"), 42},
		{"infiniband_switch_port_transmit_wait_total", port("0x0000000000200001", "2"), 9},
		{"infiniband_hca_port_link_downed_total", port("0x0000000000100004", "1"), 3},
		{"infiniband_hca_port_excessive_buffer_overrun_errors_total", port("0x0000000000100007", "1"), 2},
		{"infiniband_switch_port_unicast_transmit_packets_total", port("0x0000000000200000", "3"), 5},
		{"infiniband_switch_port_multicast_transmit_packets_total", port("0x0000000000200000", "5"), 6},
	} {
		if v := before[seriesKey(c.name, c.labels)]; v != c.want {
			t.Errorf("%s%v = %v, want %v (set from the console)", c.name, c.labels, v, c.want)
		}
	}
	if v := before[seriesKey("infiniband_switch_port_transmit_data_bytes_total", port("0x0000000000200000", "3"))]; v < 4e6 {
		t.Errorf("Switch1 port 3 transmitted %v bytes, want 4,000,000 and more (PortXmitData set to 1,000,000 words)", v)
	}
	if v := before[seriesKey("infiniband_hca_info", map[string]string{"guid": "0x0000000000100004", "hca": "Hca2", "lid": "4"})]; v != 1 {
		t.Errorf("no infiniband_hca_info for Hca2 at its port GUID: %v", before)
	}
	// --collector.fabric's port: PURERDMA_IBSIM names the ibsim node;
	// --fabric.ca and --fabric.port then name what libumad2sim shows
	// (ibsim0 and the node's port), or nothing.
	t.Setenv(umadenv.IBSim, f.Sock+":Hca2")
	for _, ok := range []struct {
		ca   string
		port int
	}{{"", 0}, {umadenv.SimCA, 1}} {
		p, err := openFabricPort(context.Background(), ok.ca, ok.port)
		if err != nil {
			t.Fatalf("openFabricPort(%q, %d) with %s: %v", ok.ca, ok.port, umadenv.IBSim, err)
		}
		if p.CA() != "Hca2" {
			t.Errorf("openFabricPort with %s=%s:Hca2: CA %q", umadenv.IBSim, f.Sock, p.CA())
		}
		p.Close()
	}
	for _, bad := range []struct {
		ca   string
		port int
	}{{"nosuch", 0}, {"", 9}} {
		if p, err := openFabricPort(context.Background(), bad.ca, bad.port); !errors.Is(err, umad.ErrNoDevice) || !strings.Contains(err.Error(), umadenv.SimCA) {
			if p != nil {
				p.Close()
			}
			t.Errorf("openFabricPort(%q, %d) with %s: %v, want no such port on the ibsim fabric", bad.ca, bad.port, umadenv.IBSim, err)
		}
	}
}

// TestFabricModePMAFails has one HCA port's PMA refuse
// PortCountersExtended (ibsim's Error command for attribute 0x1D): the
// device is reported as infiniband_exporter reports a perfquery that
// failed (infiniband_exporter_collect_errors{collector="hca"} 1, no
// counters from PortCountersExtended), with its own collect_error 1, the
// other devices read, and the source down. Two MADs in flight: the
// query sent after the failure came back must not suffer from it.
func TestFabricModePMAFails(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{Console: true})
	if err := f.Console(`Error "Hca2"[1] 100 29`); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	e := fabricExporter(t, f, "Hca1", &log)
	e.cfg.Fabric.MaxOutstanding = 2
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := seriesOf(mfs, "")
	hca2 := "0x0000000000100004"
	for k, want := range map[string]float64{
		seriesKey("rdma_exporter_source_up", map[string]string{"source": SourceFabric}):                    0,
		seriesKey("infiniband_exporter_collect_errors", map[string]string{"collector": collectorHCA}):      1,
		seriesKey("infiniband_exporter_collect_errors", map[string]string{"collector": collectorSwitch}):   0,
		seriesKey("infiniband_exporter_collect_errors", map[string]string{"collector": collectorDiscover}): 0,
	} {
		if v, ok := s[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	devices := 0
	for k, v := range s {
		name := seriesName(k)
		if name == "infiniband_hca_collect_error" || name == "infiniband_switch_collect_error" {
			devices++
			if want := b2f(strings.Contains(k, hca2)); v != want {
				t.Errorf("%s = %v, want %v", k, v, want)
			}
		}
		if strings.Contains(k, hca2) && movingSeries(name) {
			t.Errorf("%s exported from a PortCountersExtended that failed", k)
		}
	}
	if devices != 6 {
		t.Errorf("%d devices' collect_error, want 6", devices)
	}
	if _, ok := s[seriesKey("infiniband_hca_port_transmit_data_bytes_total", map[string]string{"guid": "0x0000000000100007", "port": "1"})]; !ok {
		t.Error("Hca3's counters missing: one device's failure took the others")
	}
	if !strings.Contains(log.String(), hca2) || !strings.Contains(log.String(), "PortCountersExtended") {
		t.Errorf("the log does not say which device and query failed: %s", log.String())
	}
}

// TestFabricModeDiscoveryFails: a discovery that runs past
// DiscoverTimeout counts as infiniband_exporter counts an ibnetdiscover
// past --ibnetdiscover.timeout (collect_timeouts 1), a port that does not
// open as an ibnetdiscover that fails (collect_errors 1); either way
// the scrape has the ibnetdiscover series and source_up 0 only, as
// infiniband_exporter then registers no switch or hca collector. With
// ibsim stopped the port's open gives up at DiscoverTimeout, a timeout.
func TestFabricModeDiscoveryFails(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	open := func(node string) func(context.Context) (*umad.Port, error) {
		return func(ctx context.Context) (*umad.Port, error) { return umad.OpenSimPortContext(ctx, f.Sock, node) }
	}
	for _, c := range []struct {
		name          string
		open          func(context.Context) (*umad.Port, error)
		discover      time.Duration
		stopped       bool // ibsim stopped (SIGSTOP) during the scrape
		errs, timeout float64
	}{
		{"timeout", open("Hca1"), time.Nanosecond, false, 0, 1},
		{"no port", open("NoSuchNode"), 10 * time.Second, false, 1, 0},
		{"ibsim stopped", open("Hca1"), 500 * time.Millisecond, true, 0, 1},
	} {
		var log bytes.Buffer
		e := fabricExporter(t, f, "Hca1", &log)
		e.cfg.Fabric.Open, e.cfg.Fabric.DiscoverTimeout = c.open, c.discover
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(e)
		if c.stopped {
			if err := f.Pause(); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		mfs, err := reg.Gather()
		if c.stopped {
			if el := time.Since(start); el > c.discover+time.Second {
				t.Errorf("%s: the scrape took %v, DiscoverTimeout %v", c.name, el, c.discover)
			}
			if err := f.Resume(); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		s, _ := seriesOf(mfs, "")
		want := series{
			seriesKey("rdma_exporter_source_up", map[string]string{"source": SourceFabric}):                      0,
			seriesKey("infiniband_exporter_collect_errors", map[string]string{"collector": collectorDiscover}):   c.errs,
			seriesKey("infiniband_exporter_collect_timeouts", map[string]string{"collector": collectorDiscover}): c.timeout,
		}
		for k, v := range want {
			if got, ok := s[k]; !ok || got != v {
				t.Errorf("%s: %s = %v (present %v), want %v", c.name, k, got, ok, v)
			}
		}
		for k := range s {
			if _, ok := want[k]; !ok && seriesName(k) != "infiniband_exporter_collector_duration_seconds" {
				t.Errorf("%s: %s after a failed discovery", c.name, k)
			}
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestLinkRates checks the rates the fabric mode gives each width and
// speed ibnetdiscover --ports can print against infiniband_exporter's
// table (laneRates in its ibnetdiscover.go: signalling and effective
// Gb/s per lane, times the width, in bytes/s), with the capability
// masks that make the extended speed fields count.
func TestLinkRates(t *testing.T) {
	const (
		extSpeeds = 1 << 14 // PortInfo CapabilityMask IsExtendedSpeedsSupported
		hasMask2  = 1 << 15
		extSpeed2 = 0x0800 // CapabilityMask2 IsExtendedSpeeds2Supported
	)
	for _, c := range []struct {
		name            string
		width, speed    uint8
		espeed, espeed2 uint8
		cap             uint32
		cap2            uint16
		lanes           float64    // the width's lanes; 0: no rate
		lane            [2]float64 // Gb/s per lane, signalling and effective
	}{
		{"4x SDR", 2, 1, 0, 0, 0, 0, 4, [2]float64{2.5, 2}},
		{"1x DDR", 1, 2, 0, 0, 0, 0, 1, [2]float64{5, 4}},
		{"12x QDR", 8, 4, 0, 0, 0, 0, 12, [2]float64{10, 8}},
		{"4x QDR, extended speed ignored without the capability", 2, 4, 2, 0, 0, 0, 4, [2]float64{10, 8}},
		{"4x FDR", 2, 4, 1, 0, extSpeeds, 0, 4, [2]float64{14.0625, 13.64}},
		{"4x EDR", 2, 4, 2, 0, extSpeeds, 0, 4, [2]float64{25.78125, 25}},
		{"2x HDR", 16, 4, 4, 0, extSpeeds, 0, 2, [2]float64{50, 50}},
		{"8x NDR", 4, 4, 8, 0, extSpeeds, 0, 8, [2]float64{100, 100}},
		{"4x XDR", 2, 4, 0, 1, extSpeeds | hasMask2, extSpeed2, 4, [2]float64{250, 250}},
		{"XDR field without CapabilityMask2", 2, 4, 8, 1, extSpeeds, extSpeed2, 4, [2]float64{100, 100}},
		{"unknown width ??", 3, 1, 0, 0, 0, 0, 0, [2]float64{}},
		{"unknown speed ???", 2, 3, 0, 0, 0, 0, 0, [2]float64{}},
		{"unknown extended speed ???", 2, 4, 3, 0, extSpeeds, 0, 0, [2]float64{}},
	} {
		// infiniband_exporter's parseRate, in its order of operations.
		base := c.lanes * 1e9 / 8
		wantRaw, wantEff := c.lane[0]*base, c.lane[1]*base
		pi := umad.PortInfo{LinkWidthActive: c.width, LinkSpeedActive: c.speed, LinkSpeedExtActive: c.espeed, LinkSpeedExtActive2: c.espeed2,
			CapabilityMask: c.cap, CapabilityMask2: c.cap2}
		b := pi.Append(nil)
		raw, eff, ok := linkRates(b, b)
		if raw != wantRaw || eff != wantEff || ok != (c.lanes != 0) {
			t.Errorf("%s: raw %v eff %v ok %v, want %v %v %v", c.name, raw, eff, ok, wantRaw, wantEff, c.lanes != 0)
		}
	}
}
