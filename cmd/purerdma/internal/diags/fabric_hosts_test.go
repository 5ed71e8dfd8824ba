package diags

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
)

// TestFabricHosts runs ibhosts, ibswitches and ibnodes, infiniband-diags'
// scripts and ours, on the small, ring, line and wide fabrics with every
// option of the scripts: discovery with -C, -P, -t, -y, a topology file
// (ibnetdiscover's, C's, saved), one that does not exist, and the usage
// exits.
func TestFabricHosts(t *testing.T) {
	for _, net := range []struct {
		name, net, node string
	}{
		{"small", ibsimtest.Small, "Hca1"},
		{"ring", ibsimtest.Ring, "Dual"},
		{"line", ibsimtest.Line, "Mid"},
		{"wide", ibsimtest.Wide, "e1"},
	} {
		t.Run(net.name, func(t *testing.T) {
			f := ibsimtest.Start(t, net.net, ibsimtest.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			topo, err := f.Run(ctx, net.node, "ibnetdiscover")
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(f.Dir, "topo.txt")
			if err := os.WriteFile(file, topo, 0o644); err != nil {
				t.Fatal(err)
			}
			cases := [][]string{
				{}, {file}, {filepath.Join(f.Dir, "missing")}, {f.Dir},
				{"-h"}, {"--help"}, {"-x"}, {"-C"}, {"-t", "-1"}, {file, file},
				{"-P", "1", "-t", "300"}, {"-y", "0", "--timeout", "100"}, {"--Port", "1"},
				{"-C", "nosuchca"}, {"-P", "9"},
			}
			if net.name != "small" {
				cases = [][]string{{}, {file}, {"-P", "1", "-t", "300"}}
			}
			for _, args := range cases {
				for _, tool := range []string{"ibhosts", "ibswitches", "ibnodes"} {
					name := tool + " " + strings.Join(args, " ")
					c := runC(t, f, net.node, tool, args...)
					g := runGo(t, f, net.node, tool, args...)
					g.stderr = dropExplanations(g.stderr)
					sameRun(t, name, c, g, nil)
					if len(args) == 0 && !strings.Contains(g.stdout, map[string]string{"ibhosts": "Ca\t: 0x", "ibswitches": "Switch\t: 0x", "ibnodes": "Switch\t: 0x"}[tool]) {
						t.Errorf("%s: no node lines:\n%s", name, g.stdout)
					}
				}
			}
		})
	}
}

// dropExplanations removes from our standard error the lines that
// explain a failure after C's messages ("ibnetdiscover: no CA …"), which
// infiniband-diags does not print.
func dropExplanations(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "ibnetdiscover: ") {
			b.WriteString(l)
		}
	}
	return b.String()
}
