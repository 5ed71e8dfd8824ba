package diags

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
)

// perfoptsNet is a fabric of the side-by-side option tests: the node
// the tools run at, a switch and an HCA (port 1 cabled) to query.
type perfoptsNet struct {
	name, net      string
	local, sw, hca string
}

// perfoptsNets are the ring, line and wide nets (the small one has
// TestFabricPerfquery and TestFabricSMPQuery; leaving it out keeps the
// option tests near 25 s on two cores).
var perfoptsNets = []perfoptsNet{
	{"ring", ibsimtest.Ring, "h1", "Ring3", "Dual"},
	{"line", ibsimtest.Line, "Head", "Line8", "Tail"},
	{"wide", ibsimtest.Wide, "w1", "Wide36", "e2"},
}

// perfqueryOptCases are perfquery command lines: SW and HCA stand for the
// LIDs of the net's switch and HCA.
var perfqueryOptCases = [][]string{
	// The port counters: one port, the node's default port 0, every
	// port (AllPortSelect, or emulated on an HCA), each port on its
	// own, a list and a range, summed or not; resets.
	{"SW"}, {"SW", "1"}, {"-x", "SW", "1"}, {"-a", "SW"}, {"-x", "-a", "SW"}, {"-l", "-a", "SW"},
	{"-l", "SW", "1-3"}, {"-a", "SW", "1,3"}, {"-a", "SW", "1-3"}, {"-x", "-l", "SW", "1,2"},
	{"-x", "-a", "SW", "1-2"}, {"-r", "SW", "1"}, {"-R", "SW", "1"}, {"-R", "SW", "1", "0xf000"},
	{"-R", "-a", "SW"}, {"-r", "-l", "SW", "1,2"}, {"-x", "-R", "SW", "1", "0"}, {"-x", "-r", "SW", "2"},
	{"SW", "1,"}, {"SW", "x"}, {"SW", "3-1"}, {"SW", "1-"},
	{"HCA", "1"}, {"-x", "HCA", "1"}, {"-a", "HCA"}, {"-l", "-a", "HCA"}, {"-x", "-a", "HCA"},
	{"-l", "SW", "255"}, {"HCA", "255"}, {"-l", "HCA", "255"},
	// The local port; an unroutable LID.
	{}, {"-a"}, {"-l"}, {"-r"}, {"-R"}, {"-x"}, {"999", "1"}, {"-R", "-a", "HCA"},
	// Every counter group, by its long and short option.
	{"--xmtsl", "SW", "1"}, {"-X", "HCA", "1"}, {"--rcvsl", "SW", "1"}, {"-S", "HCA", "1"},
	{"--xmtdisc", "SW", "1"}, {"-D", "HCA", "1"}, {"--rcverr", "SW", "1"}, {"-E", "HCA", "1"},
	{"--extended_speeds", "SW", "1"}, {"-T", "HCA", "1"}, {"--smplctl", "SW", "1"}, {"-c", "HCA", "1"},
	{"--oprcvcounters", "SW", "1"}, {"--flowctlcounters", "HCA", "1"}, {"--vloppackets", "SW", "2"},
	{"--vlopdata", "HCA", "1"}, {"--vlxmitflowctlerrors", "SW", "1"}, {"--vlxmitcounters", "SW", "1"},
	{"--swportvlcong", "SW", "1"}, {"--rcvcc", "SW", "1"}, {"--slrcvfecn", "SW", "1"}, {"--slrcvbecn", "SW", "1"},
	{"--xmitcc", "SW", "1"}, {"--vlxmittimecc", "SW", "1"},
	// Groups with resets, every port, lists; two groups (the first in
	// perfquery's order wins).
	{"-D", "-r", "SW", "1"}, {"-E", "-R", "SW", "1"}, {"-T", "-R", "SW", "1"}, {"-T", "-r", "SW", "1"},
	{"--vlopdata", "-R", "-a", "SW"}, {"-X", "-a", "SW"}, {"--oprcvcounters", "SW", "1,2"},
	{"--flowctlcounters", "-R", "SW", "1", "0x3"}, {"-E", "-D", "SW", "1"}, {"-E", "-a", "HCA"},
	{"-c", "-x", "SW", "1"},
	// libibmad's warnings; options perfquery does not have.
	{"-e", "-c", "SW", "1"}, {"-d", "-E", "SW", "1"}, {"-d", "-r", "SW", "1"}, {"-d", "-x", "-a", "HCA"},
	{"-t", "100", "-X", "SW", "1"}, {"--Direct", "SW"}, {"-K", "SW"}, {"--show_keys", "SW"}, {"-xK", "SW"}, {"-M", "SW"}, {"--bogus"},
	// The common options of ibdiag_common: a port GUID (HCAG: the
	// HCA's port 1) through the SA (-s SM: at the SM's LID; an SA LID
	// that is not one), -L, -y, -v, the config file (CONF: a timeout
	// and an M_Key), -V, -h, bad -t and -y.
	{"-G", "HCAG", "1"}, {"-G", "-s", "SM", "HCAG", "1"}, {"-G", "-L", "HCA", "1"}, {"-L", "SW", "1"}, {"-s", "0", "SW"},
	{"-y", "0", "SW", "1"}, {"-y", "zz", "SW"}, {"-v", "HCA", "1"}, {"-z", "CONF", "SW", "1"}, {"-V"}, {"-h"}, {"--help"},
	{"-t", "0", "SW"}, {"-d", "-t", "x", "SW"},
	// The config file's timeout is ibd_timeout, which the PMA queries
	// carry.
	{"-z", "CONF", "-e", "999", "1"},
	// Destinations resolve_portid_str refuses; an operand too many.
	{"x"}, {"0"}, {"70000"}, {"0xc000", "1"}, {"-G", "0"}, {"SW", "1", "0", "extra"},
	// Prefixes: C's --debug, an option of ours not named in full.
	{"--d", "SW", "1"}, {"--retr", "1", "SW"},
	// -P below 1: libibumad's first active port, but resolve_self
	// takes a uint8_t (-255 is port 1, -1 none).
	{"-P", "-1", "HCA", "1"}, {"-P", "-1"}, {"-P", "-255"}, {"-P", "0x80000000"},
}

// TestFabricPerfqueryOptions runs every option and counter group of
// perfquery, infiniband-diags' and ours, on three fabrics of the project
// and compares standard output, standard error and the exit status.
// Counters move with every MAD, so each run starts from the queried
// node's counters reset (TestFabricPerfquery's way).
func TestFabricPerfqueryOptions(t *testing.T) {
	// -x output: ibsim's PortCountersExtended reset leaves PortRcvPkts
	// counting, so that line is compared masked.
	rcv := regexp.MustCompile(`(?m)^PortRcvPkts:\.+[0-9]+$`)
	// IBEXIT's line carries the pid with -d.
	maskRcv := func(s string) string {
		return ibexitPidRE.ReplaceAllString(rcv.ReplaceAllString(s, "PortRcvPkts:N"), "[pid]")
	}
	for _, n := range perfoptsNets {
		t.Run(n.name, func(t *testing.T) {
			f := ibsimtest.Start(t, n.net, ibsimtest.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lids, err := f.LIDs(ctx, n.local)
			if err != nil {
				t.Fatal(err)
			}
			sw, hca, local := strconv.Itoa(lids[n.sw]), strconv.Itoa(lids[n.hca]), strconv.Itoa(lids[n.local])
			o := newOptArgs(t, f, n.local, sw, hca)
			// The first query of an attribute ibsim's PMA lacks, at
			// the node OpenSM runs on (the wide net's Wide36), goes
			// unanswered for a while before ibsim reports it lost
			// (a timeout where later ones fail at once): one goes
			// first, unused.
			runC(t, f, n.local, "perfquery", "-X", sw, "1")
			for _, c := range perfqueryOptCases {
				// The counters a run shows are reset before it: the
				// port counters or (-x) the extended ones; the
				// other groups' counters stand still on ibsim.
				reset := func(args ...string) {
					x := append([]string{"-R"}, args...)
					switch {
					case perfoptsGroup(c):
						return
					case slices.Contains(c, "-x"):
						x = append([]string{"-x"}, x...)
					}
					// Ours resets as infiniband-diags' does, in a
					// fraction of the time.
					if r := runGo(t, f, n.local, "perfquery", x...); r.code != 0 {
						t.Fatalf("perfquery %v: %+v", x, r)
					}
				}
				args := o.subst(c)
				prepare := func() { reset(local, "1") }
				for _, a := range c {
					switch a {
					case "SW":
						prepare = func() { reset("-a", sw) }
					case "HCA", "HCAG":
						prepare = func() { reset(hca, "1") }
					}
				}
				name := "perfquery " + strings.Join(c, " ")
				prepare()
				cr := runC(t, f, n.local, "perfquery", args...)
				prepare()
				gr := runGo(t, f, n.local, "perfquery", args...)
				// Our stderr adds an explanation after libibmad's
				// warnings.
				if strings.HasPrefix(fabricPidRE.ReplaceAllString(gr.stderr, "[pid]"), fabricPidRE.ReplaceAllString(cr.stderr, "[pid]")) {
					gr.stderr = cr.stderr
				}
				sameRun(t, name, cr, gr, maskRcv)
			}
		})
	}
}

var ibexitPidRE = regexp.MustCompile(`\[pid [0-9]+\]`)

// perfoptsGroup is whether a perfquery command line asks for a counter
// group other than the port counters.
func perfoptsGroup(args []string) bool {
	for _, a := range args {
		if a == "-c" || a == "--smplctl" {
			return true
		}
		for _, g := range pmGroups {
			if (g.short != 0 && a == "-"+string(g.short)) || a == "--"+g.long {
				return true
			}
		}
	}
	return false
}

// optArgs are the operands the option tables name by placeholder: SW
// and HCA, the LIDs of the switch and the HCA; HCAG, the HCA's port GUID
// (its NodeInfo's PortGuid); SM, the SM's LID (sminfo's); CONF, a config
// file giving a timeout and an M_Key.
type optArgs struct{ sw, hca, hcaGUID, smLID, conf string }

func newOptArgs(t *testing.T, f *ibsimtest.Fabric, local, sw, hca string) optArgs {
	t.Helper()
	ni := runC(t, f, local, "smpquery", "nodeinfo", hca)
	g := regexp.MustCompile(`(?m)^PortGuid:\.+(0x[0-9a-f]+)$`).FindStringSubmatch(ni.stdout)
	sm := regexp.MustCompile(`sm lid ([0-9]+) `).FindStringSubmatch(runC(t, f, local, "sminfo").stdout)
	if g == nil || sm == nil {
		t.Fatalf("no port GUID or SM LID: %+v", ni)
	}
	return optArgs{sw: sw, hca: hca, hcaGUID: g[1], smLID: sm[1], conf: diagConf(t)}
}

// subst is the command line c with its placeholders replaced.
func (o optArgs) subst(c []string) []string {
	args := make([]string, len(c))
	for i, a := range c {
		switch a {
		case "SW":
			a = o.sw
		case "HCA":
			a = o.hca
		case "HCAG":
			a = o.hcaGUID
		case "SM":
			a = o.smLID
		case "CONF":
			a = o.conf
		}
		args[i] = a
	}
	return args
}

// diagConf writes an ibdiag.conf (read_ibdiag_config's format) giving a
// timeout and an M_Key, and returns its name.
func diagConf(t *testing.T) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "ibdiag.conf")
	if err := os.WriteFile(conf, []byte("# ibdiag.conf\ntimeout=150\nm_key=0x0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// TestFabricSMPQueryOptions runs every op and option of smpquery and
// sminfo, infiniband-diags' and ours, on three fabrics of the project and
// compares standard output, standard error and the exit status.
func TestFabricSMPQueryOptions(t *testing.T) {
	act := regexp.MustCompile(`activity count [0-9]+`)
	mask := func(s string) string {
		return ibexitPidRE.ReplaceAllString(act.ReplaceAllString(s, "activity count N"), "[pid]")
	}
	for i, n := range perfoptsNets {
		t.Run(n.name, func(t *testing.T) {
			f := ibsimtest.Start(t, n.net, ibsimtest.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lids, err := f.LIDs(ctx, n.local)
			if err != nil {
				t.Fatal(err)
			}
			sw, hca := strconv.Itoa(lids[n.sw]), strconv.Itoa(lids[n.hca])
			// A node name map naming the switch (its GUID from
			// smpquery), one that does not parse, one that is not
			// there.
			dir := t.TempDir()
			ni := runC(t, f, n.local, "smpquery", "nodeinfo", sw)
			guid := regexp.MustCompile(`(?m)^Guid:\.+(0x[0-9a-f]+)$`).FindStringSubmatch(ni.stdout)
			if guid == nil {
				t.Fatalf("no GUID in %+v", ni)
			}
			nnm, bad := filepath.Join(dir, "map"), filepath.Join(dir, "bad")
			if err := os.WriteFile(nnm, []byte("# names\n"+guid[1]+" \"the "+n.sw+"\" # comment\n0x99 other\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bad, []byte("zz top\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cases := [][]string{
				{"nodeinfo", "SW"}, {"NI", "HCA"}, {"nodedesc", "SW"}, {"ND", "HCA"}, {"portinfo", "SW"},
				{"PortInfo", "SW", "2"}, {"pi", "HCA", "1"}, {"PI", "SW", "3x"}, {"-x", "portinfo", "SW", "1"}, {"--extended", "PI", "HCA"},
				{"PortInfoExtended", "SW", "1"}, {"PIE", "HCA", "1"}, {"switchinfo", "SW"}, {"SI", "HCA"},
				{"PKeyTable", "SW"}, {"pkeys", "HCA", "1"}, {"SL2VLTable", "SW"}, {"sl2vl", "HCA"},
				{"VLArbitration", "SW"}, {"vlarb", "SW", "1"}, {"VLArb", "HCA", "1"}, {"GUIDInfo", "HCA"}, {"GI", "SW"},
				{"MlnxExtPortInfo", "SW", "1"}, {"MEPI", "HCA", "1"},
				{"-D", "nodeinfo", "0,1"}, {"-D", "portinfo", "0", "1"}, {"-D", "PIE", "0,1", "1"},
				{"--node-name-map", nnm, "nodedesc", "SW"}, {"--node-name-map", nnm, "ND", "HCA"},
				{"--node-name-map", bad, "nodedesc", "SW"}, {"--node-name-map", filepath.Join(dir, "none"), "nodedesc", "SW"},
				{"-e", "nodeinfo", "999"}, {"-d", "PI", "SW", "1"}, {"bogus", "SW"}, {"-t", "100", "-e", "SI", "999"},
				// A combined route: ibsim does not answer it (the
				// try times out, libibmad's recv fails).
				{"-t", "50", "-c", "nodeinfo", "SW", "0,1"},
			}
			if i == 0 {
				cases = append(cases, []string{"-t", "50", "-c", "PI", "SW"}, []string{"-c", "nodeinfo", "99999", "0,1"})
			}
			// The common options of ibdiag_common: -G (HCAG: the
			// HCA's port GUID) through the SA (-s SM: at the SM's
			// LID), -L, -D and -c overriding one another, -y, -v, -K,
			// the config file, -V, -h, bad -t, -s and -y.
			o := newOptArgs(t, f, n.local, sw, hca)
			cases = append(cases, [][]string{
				{"-G", "nodeinfo", "HCAG"}, {"-G", "PI", "HCAG", "1"}, {"-G", "-s", "SM", "ND", "HCAG"}, {"-G", "ni", "0x99"},
				{"-G", "-L", "ni", "HCA"}, {"-L", "-G", "ni", "HCAG"}, {"-c", "-D", "ni", "0,1"}, {"-D", "-c", "-t", "50", "ni", "SW", "0,1"},
				{"-y", "0", "ni", "SW"}, {"-y", "zz", "ni", "SW"}, {"-v", "ni", "SW"}, {"-K", "ni", "SW"},
				{"-z", "CONF", "SI", "SW"}, {"--config", filepath.Join(dir, "none"), "ni", "SW"},
				{"-V"}, {"-h"}, {"--help"}, {"-t", "0", "ni", "SW"}, {"-s", "0", "ni", "SW"}, {"-d", "-s", "x", "ni", "SW"},
				// match_op: names and aliases only, any case.
				{"guids", "SW"}, {"gUiDiNfO", "SW"}, {"Ni", "SW"},
				// -P below 1: libibumad's first active port.
				{"-P", "-1", "ni", "SW"}, {"-P", "0x80000000", "ni", "SW"}, {"-P", "-1", "-G", "ni", "HCAG"},
				{"-P", "-255", "-G", "ni", "HCAG"},
			}...)
			if i == 0 {
				// The config file's timeout is not libibmad's:
				// smpquery's SMPs keep theirs (1 s a try).
				cases = append(cases, []string{"-z", "CONF", "-e", "SI", "999"})
			}
			for _, c := range cases {
				args := o.subst(c)
				cr, gr := runC(t, f, n.local, "smpquery", args...), runGo(t, f, n.local, "smpquery", args...)
				if slices.Contains(c, "-c") {
					// ibsim drops a combined route without a word
					// ("dr[ds]lids are used (not supported)"), and
					// libumad2sim has no kernel timeouts: C's
					// first try fails in its receive. Ours times
					// out as the kernel's tries do and retries,
					// as C's would on a kernel port.
					cr.stderr = recvFailedRE.ReplaceAllString(cr.stderr, "")
				}
				sameRun(t, "smpquery "+strings.Join(c, " "), cr, gr, mask)
			}
			// sminfo: the master SM, a switch (no SM), a directed
			// route, the Set options without a modifier (a Get), an
			// unroutable LID; Sets (a modifier): OpenSM refuses
			// them with an error status, an HCA does not answer.
			for _, c := range [][]string{
				{}, {"SW"}, {"-D", "0"}, {"-s", "3", "-p", "15", "-a", "7"}, {"--state", "1", "SW", "0"},
				{"-e", "999"}, {"-d", "SW"}, {"-p", "3", "-s", "2", "-a", "5", "SM", "2"}, {"-d", "SM", "5"},
				{"-e", "--priority=1", "HCA", "1"}, {"SM", "0", "extra"}, {"-K", "SM"}, {"--show_keys", "SM"},
				// The common options sminfo keeps.
				{"-G", "HCAG"}, {"-G", "0x99"}, {"-D", "-L", "SM"}, {"-y", "0", "SM"}, {"-y", "zz"}, {"-v"},
				{"-z", "CONF", "SM"}, {"-z", "CONF", "-e", "999"}, {"-V"}, {"-h"}, {"-t", "0"}, {"-P", "-1"}, {"-P", "-255"}, {"-P", "-1", "SM"},
			} {
				args := o.subst(c)
				cr, gr := runC(t, f, n.local, "sminfo", args...), runGo(t, f, n.local, "sminfo", args...)
				sameRun(t, "sminfo "+strings.Join(c, " "), cr, gr, mask)
			}
		})
	}
}

var recvFailedRE = regexp.MustCompile(`(?m)^ibwarn: \[[0-9]+\] _do_madrpc: recv failed: Connection timed out\n`)
