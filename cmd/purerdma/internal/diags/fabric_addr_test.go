package diags

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
)

// fabricNets are the project's fabrics the side-by-side tests run on,
// each with the node the tools attach at.
var fabricNets = []struct {
	name, net, node string
}{
	{"small", ibsimtest.Small, "Hca1"},
	{"ring", ibsimtest.Ring, "Dual"},
	{"line", ibsimtest.Line, "Mid"},
	{"wide", ibsimtest.Wide, "e1"},
}

// portGUID is the port GUID of lid, from infiniband-diags' ibaddr -g.
func portGUID(t *testing.T, f *ibsimtest.Fabric, node string, lid int) string {
	t.Helper()
	r := runC(t, f, node, "ibaddr", "-g", strconv.Itoa(lid))
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(r.stdout, "GID "), " \n"))
	if err != nil {
		t.Fatalf("ibaddr -g %d: %q: %v", lid, r.stdout, err)
	}
	b := a.As16()
	return fmt.Sprintf("%#x", binary.BigEndian.Uint64(b[8:]))
}

// TestFabricIBAddr runs ibaddr, infiniband-diags' and ours, on the small,
// ring, line and wide fabrics: the local port, LIDs of switches and
// HCAs, -g, -l, -L and their mixes, a port operand, directed routes (-D),
// port GUIDs (-G, through the SA; -s naming the SM), and the failures:
// an unroutable LID, LID 0, a route through an uncabled port, a GUID
// nobody has, -e, -h and a bad option.
func TestFabricIBAddr(t *testing.T) {
	for _, net := range fabricNets {
		t.Run(net.name, func(t *testing.T) {
			f := ibsimtest.Start(t, net.net, ibsimtest.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lids, err := f.LIDs(ctx, net.node)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for n := range lids {
				names = append(names, n)
			}
			sort.Strings(names)
			far := names[len(names)-1] // another node, by name
			if far == net.node {
				far = names[0]
			}
			lid := strconv.Itoa(lids[far])
			sm := runC(t, f, net.node, "sminfo")
			smLID := ""
			if fs := strings.Fields(sm.stdout); len(fs) > 3 {
				smLID = fs[3]
			}
			guid := portGUID(t, f, net.node, lids[far])
			cases := [][]string{
				{}, {lid}, {"-G", guid}, {"-D", "0,1"},
				{"-l", lid}, {"-L", lid}, {"-g", lid}, {"999"},
			}
			if net.name == "small" {
				cases = append(cases, [][]string{
					{"-l"}, {"-L"}, {"-g"}, {"-l", "-l", lid}, {"-L", "-l", lid}, {"-g", "-L", lid},
					{"--gid_show", "--lid_show", lid}, {"--Lid_show", lid}, {lid, "1"}, {lid, "0"},
					{strconv.Itoa(lids["Switch2"])}, {strconv.Itoa(lids["Switch2"]), "3"},
					{"-D", "0"}, {"-D", "0,1,3"}, {"-D", "0,1,7"}, {"-D", "-g", "0,1,3,1"},
					{"-G", "-l", guid}, {"-s", smLID, "-G", guid}, {"-G", "0x1"}, {"-G", "0"},
					{"-G", "0x200000"}, {"0"}, {"-e", "999"}, {"-t", "100", "999"}, {"-C", "ibsim0", "-P", "1", lid},
					{"-C", "nosuch", lid}, {"-h"}, {"-x"}, {"-V"},
					// ibdiag_common's: -y (a bad one: getpass), -v,
					// -K (excluded), a config file, bad -t and -s.
					{"-y", "0", lid}, {"-y", "zz", lid}, {"-v", lid}, {"-K", lid}, {"-z", diagConf(t), lid},
					{"-t", "0", lid}, {"-s", "0", "-G", guid}, {"-P", "-1", lid}, {"-P", "-1"}, {"-P", "-255"}, {"-P", "-1", "-G", guid},
				}...)
			}
			for i, args := range cases { // the first four work
				name := "ibaddr " + strings.Join(args, " ")
				c := runC(t, f, net.node, "ibaddr", args...)
				g := runGo(t, f, net.node, "ibaddr", args...)
				g.stderr = dropExplanationsOf(g.stderr, c.stderr, "ibaddr")
				sameRun(t, name, c, g, nil)
				if i < 4 && g.code != 0 {
					t.Errorf("%s: exit status %d:\n%s%s", name, g.code, g.stdout, g.stderr)
				}
			}
		})
	}
}

// dropExplanationsOf removes from our standard error s the lines that
// explain a failure after C's messages ("TOOL: …"), which
// infiniband-diags does not print (c, its standard error, does not have
// them).
func dropExplanationsOf(s, c, tool string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, tool+": ") || strings.Contains(c, l) {
			b.WriteString(l)
		}
	}
	return b.String()
}
