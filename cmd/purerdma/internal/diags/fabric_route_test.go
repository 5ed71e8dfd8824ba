package diags

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
	"github.com/purerdma/rdma/umad"
)

// The side-by-side tests of ibroute, ibtracert and ibportstate: each
// command line runs under infiniband-diags' tool and ours, attached at the
// same node of the same simulated fabric, and stdout, stderr and the exit
// status must be equal (process ids masked: libibmad's warnings and the
// tools' -d lines carry them).

// maskPids masks the process ids of the -d and -v lines on stdout and
// of IBEXIT's line with -d ("[pid N] main: failed", ibexitPidRE).
func maskPids(s string) string {
	return fabricPidRE.ReplaceAllString(ibexitPidRE.ReplaceAllString(s, "[pid]"), "[pid]")
}

// fabricLIDs returns the LIDs of f's nodes as strings, by name.
func fabricLIDs(t *testing.T, f *ibsimtest.Fabric, node string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lids, err := f.LIDs(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	s := map[string]string{}
	for k, v := range lids {
		s[k] = strconv.Itoa(v)
	}
	return s
}

// sideBySide runs tool with each argument list at node, ours and C's.
// The C runs, separate processes that only read the fabric, go two at a
// time ahead of ours (in-process, one at a time: PURERDMA_IBSIM is
// process-wide); ibroute's go one at a time, as its destinations are
// asked with a 100 ms timeout that a busy ibsim can miss.
func sideBySide(t *testing.T, f *ibsimtest.Fabric, node, tool string, argss [][]string) {
	t.Helper()
	cs := make([]fabricRun, len(argss))
	errs := make([]error, len(argss))
	var wg sync.WaitGroup
	n := 2
	if tool == "ibroute" {
		n = 1
	}
	sem := make(chan struct{}, n)
	for i, args := range argss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cs[i], errs[i] = runCProc(f, node, tool, args...)
		}()
	}
	wg.Wait()
	for i, args := range argss {
		name := tool + " " + strings.Join(args, " ") + " at " + node
		if errs[i] != nil {
			t.Fatalf("%s: %v", name, errs[i])
		}
		sameRun(t, name, cs[i], runGo(t, f, node, tool, args...), maskPids)
	}
}

// runCProc is runC for any goroutine: a failure to run is returned.
func runCProc(f *ibsimtest.Fabric, node, tool string, args ...string) (fabricRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := f.Command(ctx, node, tool, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := fabricRun{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code, err = ee.ExitCode(), nil
	}
	return r, err
}

// ibrouteArgs are ibroute's command lines for a switch at lid sw (dr a
// directed route to it, guid its GUID), an HCA at lid hca.
func ibrouteArgs(sw, dr, guid, hca string) [][]string {
	return [][]string{
		{sw}, {"-a", sw}, {"-n", sw}, {"-n", "-a", sw}, {sw, "3"}, {sw, "0x2", "0x6"}, {"-a", sw, "4", "300"},
		{"-D", dr}, {"-D", "-n", dr, "1", "2"}, {"-G", guid}, {"-s", "1", "-G", guid, "2"}, {"-L", sw},
		{"-M", sw}, {"-M", "-n", sw}, {"-M", "-a", "-n", sw, "0xc000", "0xc040"}, {"-M", sw, "0xc3f0", "0xc400"},
		{"-M", sw, "5", "0xc001"}, {"-M", "-v", sw}, {"-v", sw, "1", "2"}, {"-d", sw, "1", "3"}, {"-e", "-d", "-M", sw, "0xc000", "0xc001"},
		{"--node-name-map", "/nonexistent", sw, "1", "2"},
		// str2drpath's and sa_rpc_call's DEBUG; a route whose first
		// number (p[0], printed, read by no SMA) is not 0.
		{"-d", "-D", dr, "1", "2"}, {"-d", "-G", guid, "1", "2"}, {"-D", "7," + drHops(dr), "1", "2"},
		// Failures: an HCA, a LID nobody has, a GUID nobody has.
		{hca}, {"-M", hca}, {"999"}, {"-G", "0x999"},
	}
}

// drHops is what follows the first number of directed route dr.
func drHops(dr string) string {
	_, hops, _ := strings.Cut(dr, ",")
	return hops
}

// ibrouteUsage are ibroute's odd command lines: those that fail before
// any MAD goes (an invalid LID, bad options, usage errors, -h and -V),
// and LIDs as C's strtoul and int read them (negative, trailing junk; a
// block before the first fails with a MAD status).
func ibrouteUsage(sw string) [][]string {
	return [][]string{{"0"}, {"-s", "0", sw}, {"-t", "0", sw}, {}, {"-h"}, {"-x", sw}, {"-K", sw}, {"-V"},
		{"-a", "--", sw, "-70", "3"}, {"--", sw, "-1"}, {"--", sw, "5", "-1"}, {"-M", "--", sw, "-3", "0xc001"},
		{sw, "4abc", "6x"}, {"-a", sw, "0xbff0", "0xc010"}, {"-M", sw, "0xc000", "0x1ffff"},
		{"-t", "0b101", sw}, {"-t", "+500", sw, "1", "2"}, {"-t", "0x", sw}}
}

// routeNet is a fabric of the tests and where the tools run on it.
type routeNet struct {
	name, net string
	at        string   // the node the tools attach at
	sw        string   // a switch ibroute dumps and ibportstate queries
	swPort    string   // a port of sw, cabled to a switch
	hca       string   // an HCA away from at
	dr        string   // a directed route from at to a switch
	trace     []string // nodes ibtracert traces to from at and from hca
}

var routeNets = []routeNet{
	{"Ring", ibsimtest.Ring, "h1", "Ring4", "3", "h3", "0,1,3", []string{"h4", "h5", "Ring5", "Dual", "Ring1", "h1"}},
	{"Line", ibsimtest.Line, "Mid", "Line16", "1", "Tail", "0,1,2,2,2", []string{"Head", "Tail", "Line1", "Line9"}},
	{"Wide", ibsimtest.Wide, "w1", "Wide36", "33", "e2", "0,1,33", []string{"w24", "e1", "Edge", "w1"}},
	{"Small", ibsimtest.Small, "Hca1", "Switch2", "5", "Hca2", "0,1,5", []string{"Hca3", "Switch1", "Hca4"}},
}

// TestFabricRoute runs ibroute, ibtracert and ibportstate, ours and
// infiniband-diags', on the ring, line, wide and small fabrics: every
// option, and the failures (those of parsing alone on the ring only). On
// the ring it then adds the common options' odd cases, a multicast group
// and broken forwarding tables; on the wide fabric a multicast group and
// ibportstate's set ops. One fabric of each kind serves all its checks.
func TestFabricRoute(t *testing.T) {
	for _, n := range routeNets {
		t.Run(n.name, func(t *testing.T) {
			f := ibsimtest.Start(t, n.net, ibsimtest.Options{})
			lids := fabricLIDs(t, f, n.at)
			sw, hca := lids[n.sw], lids[n.hca]
			guid := nodeGUID(t, f, n.at, sw)
			first := n.name == "Ring" // the checks of parsing alone run once
			route := ibrouteArgs(sw, "0,1", guid, hca)
			if first {
				route = append(route, ibrouteUsage(sw)...)
			}
			sideBySide(t, f, n.at, "ibroute", route)

			var tr [][]string
			for _, to := range n.trace {
				tr = append(tr, []string{lids[n.at], lids[to]}, []string{hca, lids[to]}, []string{"-n", lids[to], hca})
			}
			ports := filepath.Join(t.TempDir(), "pairs")
			pairs := "# pairs\n\n   \n" + lids[n.at] + " " + hca + "\n" + sw + "\t" + lids[n.trace[0]] + "\n"
			if err := os.WriteFile(ports, []byte(pairs), 0o644); err != nil {
				t.Fatal(err)
			}
			bad := filepath.Join(t.TempDir(), "bad")
			if err := os.WriteFile(bad, []byte(hca+" "+sw+"\n"+sw+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tr = append(tr,
				[]string{"-v", lids[n.at], hca}, []string{"-d", hca, sw}, []string{"-G", guid, nodeGUID(t, f, n.at, hca)},
				[]string{"-s", "1", "-G", "-n", guid, guid}, []string{"-L", "-e", sw, hca}, []string{"-f", sw, hca},
				[]string{"--ports-file", ports}, []string{"-n", "--ports-file", ports, "ignored"}, []string{"--ports-file", bad},
				[]string{"--node-name-map", "/nonexistent", sw, hca},
				// Failures: LIDs nobody has (with and without -f), a GUID
				// nobody has, no multicast group.
				[]string{lids[n.at], "999"}, []string{"999", hca}, []string{"-f", sw, "999"}, []string{"-G", guid, "0x999"},
				[]string{"-m", "0xc000", lids[n.at], hca},
			)
			if first {
				tr = append(tr, []string{"0", hca}, []string{hca}, []string{"--ports-file", "/nonexistent"},
					[]string{"-D", sw, hca}, []string{"-K", sw, hca}, []string{"-h"}, []string{"-V"})
			}
			sideBySide(t, f, n.at, "ibtracert", tr)

			ps := [][]string{
				{hca, "1"}, {hca, "1", "query"}, {"-K", hca, "1"}, {sw, "0"}, {"-K", sw, "0"}, {"-D", n.dr, "0"},
				{"-D", n.dr, n.swPort}, {"-D", "0", "1"}, {"-D", "0,1", "1"}, {"-G", guid, "0"}, {"-d", "-e", hca, "1"},
				{lids[n.at], "1"}, {"999", "1"}, {"-D", n.dr, "1", "mkey", "1"},
			}
			if first {
				// Bad ops and values, usage.
				ps = append(ps, [][]string{
					{hca, "1", "bogus"}, {hca, "1", "speed"}, {hca, "1", "speed", "16"}, {hca, "1", "espeed", "32"},
					{hca, "1", "fdr10", "2"}, {hca, "1", "width", "32"}, {hca, "1", "vls", "0"}, {hca, "1", "mtu", "6"},
					{hca, "1", "lid", "0xc000"}, {hca, "1", "smlid", "0"}, {hca, "1", "lmc", "8"}, {hca, "1", "mkeylease", "0x10000"},
					{hca, "1", "mkeyprot", "4"}, {hca, "1", "query", "enable"},
					{hca}, {"-h"}, {"-x", hca, "1"}, {"-y", "bad", hca, "1"}, {hca, "1", "mkey", "12x"},
				}...)
			}
			sideBySide(t, f, n.at, "ibportstate", ps)
			switch n.name {
			case "Ring":
				ringExtras(t, f, n, lids)
				multicast(t, f, n.at, ringGroup)
				traceFaults(t, f, lids)
			case "Wide":
				multicast(t, f, n.at, wideGroup)
				portStateSet(t, f, lids)
			}
		})
	}
}

// ringExtras runs the common options once on the ring: a configuration
// file, -C and -P, -t, and a port that does not open.
func ringExtras(t *testing.T, f *ibsimtest.Fabric, n routeNet, lids map[string]string) {
	sw, hca := lids[n.sw], lids[n.hca]
	// A switch port by LID, whose peer C asks for along a
	// LID-routed directed route that ibsim never answers (at the
	// default timeout: with a short -t our ibsim transport
	// reports the try timed out and retries, where libumad2sim's
	// receive gives up with "recv failed").
	cfg := filepath.Join(t.TempDir(), "ibdiag.conf")
	if err := os.WriteFile(cfg, []byte("# test\nCA=ibsim0\nPort=1\ntimeout=300\nm_key=0\nnd_format=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sideBySide(t, f, n.at, "ibroute", [][]string{{"-z", cfg, sw}, {"--config=" + cfg, "-M", sw}, {"-z", "/nonexistent", sw, "1", "2"},
		{"-C", "ibsim0", "-P", "1", sw, "1", "3"}, {"--Ca=ibsim0", "--Port", "1", sw, "4"}, {"-t", "0x20", sw, "1", "2"}, {"-t", "abc", sw}})
	sideBySide(t, f, n.at, "ibtracert", [][]string{{"-z", cfg, sw, hca}, {"-C", "ibsim0", lids[n.at], hca}})
	sideBySide(t, f, n.at, "ibportstate", [][]string{{"-z", cfg, hca, "1"}, {sw, n.swPort}, {"-y", "", hca, "1"}})
	// Node name maps: names for a switch and an HCA (quoted, bare with a
	// comment, a repeated GUID whose first name wins), and a map C
	// refuses (a line that is no GUID) and one it cannot open.
	swGUID, hcaGUID := nodeGUID(t, f, n.at, sw), nodeGUID(t, f, n.at, hca)
	names := filepath.Join(t.TempDir(), "names")
	text := "# names\n\n" + swGUID + "  \"Renamed switch\"\n" + hcaGUID + "\tbare-name # note\n" + swGUID + " second\n"
	badNames := filepath.Join(t.TempDir(), "bad-names")
	if err := os.WriteFile(names, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badNames, []byte(swGUID+" ok\nnot-a-guid name\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{names, badNames} {
		sideBySide(t, f, n.at, "ibroute", [][]string{{"--node-name-map", m, sw}, {"--node-name-map", m, "-M", sw}})
		sideBySide(t, f, n.at, "ibtracert", [][]string{{"--node-name-map", m, lids[n.at], hca}, {"--node-name-map", m, "-n", hca, sw}})
	}
	// An HCA with LMC 1 (set through C's ibportstate, then undone): its
	// LID range shows in ibtracert, and ibroute numbers the paths of the
	// LIDs after its base ("path #2 out of 2", however the LIDs were
	// given out), -n and -a too.
	if r := runC(t, f, n.at, "ibportstate", hca, "1", "lmc", "1"); r.code != 0 {
		t.Fatalf("ibportstate lmc 1: %+v", r)
	}
	var lmcRoute [][]string
	for _, s := range []string{n.sw, "Ring1", "Ring3"} {
		lmcRoute = append(lmcRoute, []string{lids[s]}, []string{"-a", lids[s]}, []string{"-n", lids[s]})
	}
	sideBySide(t, f, n.at, "ibroute", lmcRoute)
	sideBySide(t, f, n.at, "ibtracert", [][]string{{lids[n.at], hca}, {hca, lids[n.at]}, {"-n", hca, sw}})
	if r := runC(t, f, n.at, "ibportstate", hca, "1", "lmc", "0"); r.code != 0 {
		t.Fatalf("ibportstate lmc 0: %+v", r)
	}
	// A port that does not open: our stderr adds why after C's.
	for _, tool := range []string{"ibroute", "ibtracert", "ibportstate"} {
		for _, args := range [][]string{{"-C", "mlx5_9", sw, hca}, {"-P", "2", sw, hca}} {
			c, g := runC(t, f, n.at, tool, args...), runGo(t, f, n.at, tool, args...)
			if strings.HasPrefix(maskPids(g.stderr), maskPids(c.stderr)) {
				g.stderr = c.stderr
			}
			sameRun(t, tool+" "+strings.Join(args, " "), c, g, maskPids)
		}
	}
}

var nodeGUIDRE = regexp.MustCompile(`(?m)^Guid:\.*(0x[0-9a-f]+)$`)

// nodeGUID returns the node GUID of lid, as smpquery (infiniband-diags')
// reads it.
func nodeGUID(t *testing.T, f *ibsimtest.Fabric, node, lid string) string {
	t.Helper()
	r := runC(t, f, node, "smpquery", "nodeinfo", lid)
	m := nodeGUIDRE.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("smpquery nodeinfo %s: %+v", lid, r)
	}
	return m[1]
}

// portStateSet runs ibportstate's set ops on the wide fabric (last: they
// change it), attached at w1:
// each op goes from C's tool to one port and from ours to a twin port
// (the same cabling, widths and speeds, or both uncabled), in the same
// order, so the two see the same state and make the same change; the
// outputs are compared with the port numbers and LIDs of the twins
// masked. The query after a change reads back what the set did (ibsim
// keeps the enabled widths and speeds it is given, and moves the
// physical state).
func portStateSet(t *testing.T, f *ibsimtest.Fabric, lids map[string]string) {
	type twin struct{ port, lid string }
	mask := func(s string, w twin) string {
		s = regexp.MustCompile(`\b`+w.port+`\b`).ReplaceAllString(s, "PORT")
		if w.lid != "" {
			s = regexp.MustCompile(`\b`+w.lid+`\b`).ReplaceAllString(s, "LID")
		}
		return maskPids(s)
	}
	run := func(c, g twin, args func(w twin) []string) {
		t.Helper()
		ca, ga := args(c), args(g)
		cr, gr := runC(t, f, "w1", "ibportstate", ca...), runGo(t, f, "w1", "ibportstate", ga...)
		cr.stdout, cr.stderr = mask(cr.stdout, c), mask(cr.stderr, c)
		gr.stdout, gr.stderr = mask(gr.stdout, g), mask(gr.stderr, g)
		sameRun(t, "ibportstate "+strings.Join(ca, " ")+" (ours: "+strings.Join(ga, " ")+")", cr, gr, nil)
	}
	// The switch's ports of mixed widths and speeds (and the 1x link to
	// Edge): each query shows the peer, and C's warnings where the link
	// runs below what both ends enable.
	var q [][]string
	for _, p := range []string{"2", "3", "4", "6", "7", "14", "16", "19", "24", "33", "34", "25"} {
		q = append(q, []string{"-D", "0,1", p})
	}
	sideBySide(t, f, "w1", "ibportstate", q)
	// Uncabled switch ports: every state op, and the link settings.
	for _, op := range [][]string{
		{"disable"}, {}, {"enable"}, {"off"}, {"on"}, {"on"}, {"reset"}, {"down"}, {"arm"}, {"active"},
		{"speed", "1"}, {"width", "1"}, {"espeed", "1"}, {"width", "255"}, {"speed", "15"}, {"espeed", "31"},
		{"vls", "2"}, {"mtu", "4"}, {"lmc", "0"}, {"query"},
	} {
		run(twin{port: "26"}, twin{port: "27"}, func(w twin) []string { return append([]string{"-D", "0,1", w.port}, op...) })
	}
	// Cabled switch ports and their HCAs, w9 and w13: the link's
	// settings from both ends; the switch port's query shows the peer
	// and C's warnings where the link runs below what both ends enable.
	w9, w13 := twin{"9", lids["w9"]}, twin{"13", lids["w13"]}
	// A change of a cabled link's width, speed or state retrains it:
	// ibsim traps to OpenSM, which sweeps while the twin's run goes, so
	// those ops run on the uncabled twins above only.
	for _, op := range [][]string{{}, {"vls", "1"}, {"mtu", "5"}, {}} {
		run(w9, w13, func(w twin) []string { return append([]string{"-D", "0,1", w.port}, op...) })
	}
	for _, op := range []struct{ opts, op []string }{
		{[]string{"-K"}, []string{"mkey", "0x1234"}},
		{[]string{"-K", "-y", "0x1234"}, []string{"mkey", "0"}}, {nil, []string{"mkeylease", "100"}},
		{nil, []string{"mkeyprot", "1"}}, {nil, []string{"mkeyprot", "0"}}, {nil, []string{"smlid", "1"}},
		{nil, []string{"lid", "LID"}}, {nil, []string{"lmc", "0"}}, {[]string{"-K"}, nil},
	} {
		run(w9, w13, func(w twin) []string {
			a := append(append([]string(nil), op.opts...), "-D", "0,1,"+w.port, "1")
			for _, x := range op.op {
				if x == "LID" {
					x = w.lid
				}
				a = append(a, x)
			}
			return a
		})
	}
}

// mcastQuery sends m from p's agent to lid (qpn 1 for the SA) and
// returns the answer's MAD.
func mcastQuery(t *testing.T, p *umad.Port, agent umad.AgentID, lid uint16, qpn uint32, m []byte) []byte {
	t.Helper()
	pkt := umad.NewPacket()
	if err := pkt.SetMAD(m); err != nil {
		t.Fatal(err)
	}
	if err := pkt.SetAddr(lid, qpn, 0, 0x80010000); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(agent, pkt, 500*time.Millisecond, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Recv(pkt, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if pkt.Status() != 0 {
		t.Fatalf("no answer from LID %d: %v", lid, pkt.Status())
	}
	return append([]byte(nil), pkt.MAD()...)
}

// mcastJoin joins node's port to the multicast group mgid as a full
// member: an SA MCMemberRecord Set to OpenSM (at smLID, through
// umad.SAClient), which creates
// the group on the first join and routes it through the switches'
// multicast tables. It returns the group's MLID.
func mcastJoin(t *testing.T, f *ibsimtest.Fabric, node string, smLID uint16, mgid rdma.GID) int {
	t.Helper()
	p, err := umad.OpenSimPort(f.Sock, node)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dr, err := p.Register(umad.ClassSubnMgmtDirectedRoute, 1, umad.MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	// The port's GUID: its own NodeInfo, a directed route of no hops.
	m := make([]byte, umad.MADSize)
	m[0], m[1], m[2], m[3] = 1, byte(umad.ClassSubnMgmtDirectedRoute), 1, byte(umad.MethodGet)
	m[15] = 1
	binary.BigEndian.PutUint16(m[16:], uint16(umad.SMAttrNodeInfo))
	binary.BigEndian.PutUint32(m[32:], 0xffffffff)
	ni := mcastQuery(t, p, dr, 0xffff, 0, m)
	guid := binary.BigEndian.Uint64(ni[64+20:])

	// The MCMemberRecord: MGID, PortGID, Q_Key, P_Key and JoinState
	// (full member) set; TClass, SL and FlowLabel 0.
	rec := make([]byte, umad.MCMemberRecordSize)
	copy(rec[0:16], mgid[:])
	binary.BigEndian.PutUint64(rec[16:], 0xfe80000000000000)
	binary.BigEndian.PutUint64(rec[24:], guid)
	binary.BigEndian.PutUint32(rec[32:], 0x0b1b)
	binary.BigEndian.PutUint16(rec[40:], 0xffff)
	rec[48] = 1
	sa, err := umad.NewSAClient(p, smLID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	a, err := sa.Query(umad.SAQuery{Method: umad.MethodSet, Attr: umad.SAAttrMCMemberRecord, Data: rec,
		CompMask: umad.MCRCompMGID | umad.MCRCompPortGID | umad.MCRCompQKey | umad.MCRCompTClass | umad.MCRCompPKey |
			umad.MCRCompSL | umad.MCRCompFlowLabel | umad.MCRCompJoinState})
	if err != nil {
		t.Fatalf("join of %s: %v", node, err)
	}
	if a.Header.Status != 0 {
		t.Fatalf("join of %s: MAD status %#x", node, uint16(a.Header.Status))
	}
	var mcm umad.MCMemberRecord
	if err := mcm.Decode(a.Data); err != nil {
		t.Fatal(err)
	}
	return int(mcm.MLID)
}

// maskPtrs masks the node addresses ibtracert -m -v prints (%p).
var ptrRE = regexp.MustCompile(`node (0x[0-9a-f]+|\(nil\))`)

func maskPtrs(s string) string { return ptrRE.ReplaceAllString(maskPids(s), "node PTR") }

// mcastGroup is a multicast group of a fabric's HCAs and where the tests
// look at it.
type mcastGroup struct {
	members  []string
	switches []string // where ibroute -M looks, the members' first
	others   []string // nodes that are not members
}

var (
	ringGroup = mcastGroup{[]string{"h1", "h4", "Dual", "h6"}, []string{"Ring1", "Ring4", "Ring2", "Ring6", "Ring3"}, []string{"h3", "Ring5"}}
	wideGroup = mcastGroup{[]string{"w1", "w24", "e2"}, []string{"Wide36", "Edge"}, []string{"w2", "e1"}}
)

// multicast joins a group's HCAs through OpenSM and compares ibroute -M
// and ibtracert -m, ours and infiniband-diags', over the multicast tables
// OpenSM wrote, attached at node at.
func multicast(t *testing.T, f *ibsimtest.Fabric, at string, n mcastGroup) {
	mgid := rdma.GID{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 15: 1}
	lids := fabricLIDs(t, f, at)
	mlid := 0
	for _, m := range n.members {
		mlid = mcastJoin(t, f, m, 1, mgid)
	}
	smlid := "0x" + strconv.FormatInt(int64(mlid), 16)
	// OpenSM routes the group after answering the joins: wait for the
	// members' switches to carry it.
	deadline := time.Now().Add(10 * time.Second)
	for _, sw := range n.switches[:len(n.members)-1] {
		for !strings.Contains(runC(t, f, at, "ibroute", "-M", lids[sw]).stdout, "1 valid mlids") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no route of MLID %s after 10 s", sw, smlid)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var route [][]string
	for i, sw := range n.switches {
		route = append(route, []string{"-M", lids[sw]})
		if i < 2 {
			route = append(route, []string{"-M", "-n", lids[sw]}, []string{"-M", "-a", "-n", lids[sw], smlid, "0xc002"})
		}
	}
	sideBySide(t, f, at, "ibroute", route)
	// From each member to the next (the last to the first) and to a
	// node that is not one.
	var tr [][]string
	for i, from := range n.members {
		to := n.members[(i+1)%len(n.members)]
		tr = append(tr, []string{"-m", smlid, lids[from], lids[to]}, []string{"-m", smlid, lids[from], lids[n.others[i%len(n.others)]]})
	}
	first, last := lids[n.members[0]], lids[n.members[len(n.members)-1]]
	sw := lids[n.switches[0]]
	tr = append(tr, []string{"-n", "-m", smlid, first, last}, []string{"-d", "-m", smlid, first, last},
		[]string{"-m", smlid, sw, last}, []string{"-m", smlid, sw, first}, []string{"-m", "0xc0ff", first, last},
		[]string{"-m", smlid, first, "999"}, []string{"-m", "0x10", first, last}, []string{"-d", "-m", "0x10", sw, last})
	// A ports file: C's search keeps the nodes it saw from one pair to
	// the next.
	pairs := filepath.Join(t.TempDir(), "pairs")
	text := first + " " + last + "\n" + last + " " + first + "\n" + lids[n.members[1]] + " " + last + "\n"
	if err := os.WriteFile(pairs, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tr = append(tr, []string{"-m", smlid, "--ports-file", pairs}, []string{"-n", "-m", smlid, "--ports-file", pairs})
	sideBySide(t, f, at, "ibtracert", tr)
	// -v prints C's node addresses: masked.
	for _, args := range [][]string{{"-v", "-m", smlid, first, last}, {"-v", "-n", "-m", smlid, last, first}} {
		sameRun(t, "ibtracert "+strings.Join(args, " "), runC(t, f, at, "ibtracert", args...), runGo(t, f, at, "ibtracert", args...), maskPtrs)
	}
}

// setLFT sets the out port of lid in the linear forwarding table of the
// switch at the directed route path from node (a SubnSet of the block,
// as an SM writes it) and returns the port it had.
func setLFT(t *testing.T, f *ibsimtest.Fabric, node string, path []byte, lid, port int) int {
	t.Helper()
	p, err := umad.OpenSimPort(f.Sock, node)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dr, err := p.Register(umad.ClassSubnMgmtDirectedRoute, 1, umad.MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	block, i := umad.LFTBlock(uint16(lid))
	smp := func(method umad.Method, data []byte) []byte {
		m := make([]byte, umad.MADSize)
		m[0], m[1], m[2], m[3] = 1, byte(umad.ClassSubnMgmtDirectedRoute), 1, byte(method)
		m[7] = byte(len(path))
		m[15] = byte(method)
		binary.BigEndian.PutUint16(m[16:], uint16(umad.SMAttrLinearForwardingTable))
		binary.BigEndian.PutUint32(m[20:], block)
		binary.BigEndian.PutUint32(m[32:], 0xffffffff)
		copy(m[64:], data)
		copy(m[129:], path)
		a := mcastQuery(t, p, dr, 0xffff, 0, m)
		if st := binary.BigEndian.Uint16(a[4:6]) & 0x7fff; st != 0 {
			t.Fatalf("LFT %v of %v: MAD status %#x", method, path, st)
		}
		return a[64:128]
	}
	var lft umad.LinearForwardingTable
	if err := lft.Decode(smp(umad.MethodGet, nil)); err != nil {
		t.Fatal(err)
	}
	old := int(lft[i])
	lft[i] = uint8(port)
	smp(umad.MethodSet, lft.Append(nil))
	return old
}

// traceFaults breaks the ring's forwarding tables (an entry to an
// uncabled port, one beyond the switch's ports, one to port 0), attached
// at h1, and compares how ibtracert reports each, ours and
// infiniband-diags'; each entry is restored after.
func traceFaults(t *testing.T, f *ibsimtest.Fabric, lids map[string]string) {
	h3, h1, h2 := lids["h3"], lids["h1"], lids["h2"]
	lid, _ := strconv.Atoi(h3)
	// Ring2 is 0,1,2 from h1: h2 to h3 goes through it.
	ring2 := []byte{1, 2}
	for _, port := range []int{7, 200, 0, 12} {
		old := setLFT(t, f, "h1", ring2, lid, port)
		sideBySide(t, f, "h1", "ibtracert", [][]string{{h2, h3}, {"-n", h1, h3}, {"-f", h2, h3}, {"-v", h2, h3}})
		sideBySide(t, f, "h1", "ibroute", [][]string{{"-D", "0,1,2"}, {"-a", "-D", "0,1,2", h3, h3}})
		setLFT(t, f, "h1", ring2, lid, old)
	}
	// The source's own switch: the first lookup fails.
	old := setLFT(t, f, "h1", []byte{1}, lid, 255)
	sideBySide(t, f, "h1", "ibtracert", [][]string{{h1, h3}, {lids["Ring1"], h3}})
	setLFT(t, f, "h1", []byte{1}, lid, old)
}
