package diags

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
)

// The side-by-side tests of ibroute, ibtracert and ibportstate: each
// command line runs under infiniband-diags' tool and ours, attached at the
// same node of the same simulated fabric, and stdout, stderr and the exit
// status must be equal (process ids masked: libibmad's warnings and the
// tools' -d lines carry them).

// maskPids masks the process ids of the -d and -v lines on stdout.
func maskPids(s string) string { return fabricPidRE.ReplaceAllString(s, "[pid]") }

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
func sideBySide(t *testing.T, f *ibsimtest.Fabric, node, tool string, argss [][]string) {
	t.Helper()
	for _, args := range argss {
		name := tool + " " + strings.Join(args, " ") + " at " + node
		sameRun(t, name, runC(t, f, node, tool, args...), runGo(t, f, node, tool, args...), maskPids)
	}
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
		// Failures: an HCA, a LID nobody has, a GUID nobody has, an
		// invalid LID, usage errors, -h and -V.
		{hca}, {"-M", hca}, {"999"}, {"-G", "0x999"}, {"0"}, {"-s", "0", sw}, {"-t", "0", sw}, {}, {"-h"}, {"-x", sw}, {"-K", sw}, {"-V"},
	}
}

// routeNet is a fabric of the tests and where the tools run on it.
type routeNet struct {
	name, net string
	at        string // the node the tools attach at
	sw        string // a switch (name) ibroute dumps
	hca       string // an HCA (name)
}

var routeNets = []routeNet{
	{"Ring", ibsimtest.Ring, "h1", "Ring4", "h3"},
	{"Line", ibsimtest.Line, "Mid", "Line16", "Tail"},
	{"Wide", ibsimtest.Wide, "w1", "Wide36", "w2"},
	{"Small", ibsimtest.Small, "Hca1", "Switch2", "Hca2"},
}

// TestFabricRoute runs ibroute, ours and infiniband-diags', on the ring,
// line, wide and small fabrics: every option, and the failures.
func TestFabricRoute(t *testing.T) {
	for _, n := range routeNets {
		t.Run(n.name, func(t *testing.T) {
			f := ibsimtest.Start(t, n.net, ibsimtest.Options{})
			lids := fabricLIDs(t, f, n.at)
			sw := lids[n.sw]
			guid := nodeGUID(t, f, n.at, sw)
			sideBySide(t, f, n.at, "ibroute", ibrouteArgs(sw, "0,1", guid, lids[n.hca]))
		})
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
