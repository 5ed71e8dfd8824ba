package diags

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
)

// TestFabricDiscoverOptions runs ibnetdiscover and iblinkinfo,
// infiniband-diags' and ours, with every option they take (and the
// common ones, the node name map, the cache, --diff, partial scans, the
// refusals) on four simulated fabrics, and compares stdout, stderr and
// the exit status, the files they write byte for byte, and each one's
// cache read by the other. The inputs (name maps, config files, GUIDs,
// routes) come from the fabric; C is the oracle for every output.
func TestFabricDiscoverOptions(t *testing.T) {
	dir := t.TempDir()
	nets := []struct{ name, net, node string }{
		{"small", ibsimtest.Small, "Hca1"},
		{"ring", ibsimtest.Ring, "Dual"},
		{"line", ibsimtest.Line, "Tail"},
		{"wide", ibsimtest.Wide, "e1"},
	}
	prevCache := ""
	for i, n := range nets {
		ok := t.Run(n.name, func(t *testing.T) {
			f := ibsimtest.Start(t, n.net, ibsimtest.Options{})
			file := func(name string) string { return filepath.Join(dir, n.name+"."+name) }
			both := func(tool string, args ...string) (fabricRun, fabricRun) {
				t.Helper()
				return runC(t, f, n.node, tool, args...), runGo(t, f, n.node, tool, args...)
			}
			same := func(tool string, args ...string) {
				t.Helper()
				c, g := both(tool, args...)
				sameRun(t, tool+" "+strings.Join(args, " "), c, g, maskTopoTime)
			}
			// -d: libibnetdisc's trace and ibnetdiscover's DEBUG lines
			// print C's heap addresses (%p) and the pid, which are
			// masked (ours prints stand-ins).
			debug := func(args ...string) {
				t.Helper()
				c, g := both("ibnetdiscover", args...)
				sameRun(t, "ibnetdiscover "+strings.Join(args, " "), c, g, maskDebug)
			}
			// Inputs from the fabric: GUIDs of the nodes and CA ports.
			ports := runC(t, f, n.node, "ibnetdiscover", "-p")
			if ports.code != 0 {
				t.Fatalf("ibnetdiscover -p: %+v", ports)
			}
			var caPorts []string
			seen := map[string]bool{}
			for _, l := range strings.Split(ports.stdout, "\n") {
				if fs := strings.Fields(l); len(fs) > 3 && fs[0] == "CA" && !seen[fs[3]] {
					seen[fs[3]] = true
					caPorts = append(caPorts, fs[3])
				}
			}
			list := runC(t, f, n.node, "ibnetdiscover", "-l")
			guidRE := regexp.MustCompile(`: (0x[0-9a-f]{16}) `)
			var nodes []string
			for _, m := range guidRE.FindAllStringSubmatch(list.stdout, -1) {
				nodes = append(nodes, m[1])
			}
			if len(caPorts) < 2 || len(nodes) < 3 {
				t.Fatalf("too few nodes:\n%s%s", ports.stdout, list.stdout)
			}
			// A node name map in rdma-core's format, with the forms
			// node_name_map.c reads: quoted names with comments,
			// unquoted ones, a GUID named twice (the first stands),
			// nodes left out; one it refuses; one that is missing.
			var m strings.Builder
			m.WriteString("# node name map\n\n")
			for j, g := range nodes {
				switch j % 4 {
				case 0:
					fmt.Fprintf(&m, "%s \"mapped-%d\" # comment\n", g, j)
				case 1:
					fmt.Fprintf(&m, "  %s\tname %d\n%s \"second\"\n", g, j, g)
				case 2:
					fmt.Fprintf(&m, "%s \"with spaces %d\"\n", g, j)
				}
			}
			nameMap, badMap := file("map"), file("badmap")
			writeTestFile(t, nameMap, m.String())
			writeTestFile(t, badMap, nodes[0]+" \"ok\"\nzz12 \"bad\"\n")
			config := file("conf")
			writeTestFile(t, config, "# ibdiag.conf\ntimeout=150\nm_key=0x0\nPort=0\n#CA=nope\n")
			cCache, gCache, cTopo, gTopo := file("c.cache"), file("g.cache"), file("c.topo"), file("g.topo")

			// ibnetdiscover.
			// The options whose output depends on the fabric run on
			// every one; the common options, the refusals and the
			// long names once, on the first.
			once := i == 0
			for _, args := range [][]string{
				{}, {"-l"}, {"-H"}, {"-S"}, {"-R"}, {"-p"}, {"-f"}, {"-g"}, {"-m"}, {"-s"}, {"-s", "-m", "-f"},
				{"-f", "-g"}, {"-p", "-f"}, {"--node-name-map", nameMap}, {"--node-name-map", nameMap, "-p"},
				{"--node-name-map", nameMap, "-l"}, {"--node-name-map", nameMap, "-g", "-f"},
			} {
				same("ibnetdiscover", args...)
			}
			debug("-d")
			debug("-d", "-s", "-m", "-g")
			if once {
				debug("-d", "-p")
				// -d -d adds libibumad's trace and packet dumps,
				// uninitialised bytes included: not compared.
				debug("-d", "-l")
				debug("-d", "--load-cache", nameMap)
			}
			for _, args := range [][]string{
				{"-l", "-f"}, {"--list", "--Hca_list"}, {"-S", "-l"}, {"-p", "-l"},
				{"-o", "1"}, {"-o", "0"}, {"--outstanding_smps=3"}, {"-t", "100"}, {"-e", "-v", "-v"}, {"-y", "0x0"},
				{"-z", config}, {"-z", file("none")}, {"-P", "0"}, {"--max_hops", "--full", "--show", "--grouping"},
				{"--node-name-map", badMap}, {"--node-name-map", file("none")},
			} {
				if once {
					same("ibnetdiscover", args...)
				}
			}
			// The topology file.
			c, g := runC(t, f, n.node, "ibnetdiscover", "-f", cTopo), runGo(t, f, n.node, "ibnetdiscover", "-f", gTopo)
			sameRun(t, "ibnetdiscover -f FILE", c, g, nil)
			sameFiles(t, cTopo, gTopo, maskTopoTime)
			// The cache: the files are equal byte for byte, and each
			// tool reads the other's.
			c, g = runC(t, f, n.node, "ibnetdiscover", "-l", "--cache", cCache), runGo(t, f, n.node, "ibnetdiscover", "-l", "--cache", gCache)
			sameRun(t, "ibnetdiscover --cache", c, g, nil)
			sameFiles(t, cCache, gCache, nil)
			for _, args := range [][]string{{}, {"-m"}, {"-p"}, {"-l"}, {"-g"}, {"-s"}, {"--node-name-map", nameMap}} {
				name := "ibnetdiscover --load-cache " + strings.Join(args, " ")
				sameRun(t, name+" (C reads ours, we read C's)", runC(t, f, n.node, "ibnetdiscover", append([]string{"--load-cache", gCache}, args...)...),
					runGo(t, f, n.node, "ibnetdiscover", append([]string{"--load-cache", cCache}, args...)...), maskTopoTime)
			}
			c, g = runC(t, f, n.node, "ibnetdiscover", "--load-cache", gCache, "--cache", cCache+"2"),
				runGo(t, f, n.node, "ibnetdiscover", "--load-cache", cCache, "--cache", gCache+"2")
			sameRun(t, "ibnetdiscover --load-cache --cache", c, g, maskTopoTime)
			sameFiles(t, cCache+"2", gCache+"2", nil)
			// --diff against this fabric's cache and the previous
			// fabric's (other names, links and LIDs on the same GUIDs).
			if prevCache != "" {
				debug("-d", "--diff", prevCache)
			}
			if once {
				// A cache that cannot be written: the output, then
				// IBEXIT (and libibnetdisc's line under -d).
				same("ibnetdiscover", "-l", "--cache", filepath.Join(dir, "no", "such", "file"))
				debug("-d", "-l", "--cache", filepath.Join(dir, "no", "such", "file"))
			}
			diffs := [][]string{{"--diff", cCache}, {"--diff", cCache, "--diffcheck", "lid,nodedesc"}}
			if prevCache != "" {
				diffs = append(diffs, []string{"--diff", prevCache}, []string{"--diff", prevCache, "--diffcheck", "sw,port"},
					[]string{"--diff", prevCache, "--diffcheck", "CA,Router,lid"}, []string{"--diff", prevCache, "--diffcheck", "sw,ca,port,lid,nodedesc"},
					[]string{"--diff", prevCache, "--diffcheck", "nodedesc,sw"}, []string{"--load-cache", cCache, "--diff", prevCache, "-g"})
			}
			for _, args := range append(diffs, []string{"--diff", file("none")}, []string{"--load-cache", nameMap}, []string{"--diffcheck", "port,bogus"}) {
				same("ibnetdiscover", args...)
			}

			// iblinkinfo.
			for _, args := range [][]string{
				{}, {"-l"}, {"-p"}, {"-d"}, {"-l", "-p"}, {"-l", "-d"}, {"-p", "-d"}, {"--switches-only"}, {"--cas-only"},
				{"--switches-only", "-l"}, {"-n", "1"}, {"-n", "2"},
				// Routes that lead nowhere wait for libibmad's or
				// libibnetdisc's timeouts: -t keeps them short.
				{"-D", "0"}, {"-D", "0,1"}, {"-D", "0,1,1", "-t", "100"}, {"-D", "0,1,2", "-t", "100"}, {"-D", "0,1,3", "-t", "100"},
				{"-D", "0,1,2,2", "-t", "100"}, {"-a", "-D", "0,1"}, {"-a", "-D", "0,1,2", "-t", "100"}, {"-a", "-D", "0,1", "-n", "2"},
				{"-a", "-D", "0"}, {"-a", "-D", "0", "-n", "3"},
				{"-S", caPorts[1]}, {"-G", caPorts[0]}, {"-G", caPorts[len(caPorts)-1], "-l"}, {"-a", "-G", caPorts[1]},
				{"-G", caPorts[1], "--switches-only"},
				{"--node-name-map", nameMap}, {"--node-name-map", nameMap, "-l"}, {"--node-name-map", badMap},
				{"--load-cache", cCache}, {"--load-cache", gCache, "-l", "--cas-only"}, {"--filterdownports", cCache}, {"--filterdownports", cCache, "-d"},
				{"--diff", cCache}, {"--diff", cCache, "--diffcheck", "lid,nodedesc,state,port"},
			} {
				same("iblinkinfo", args...)
			}
			for _, args := range [][]string{
				{"-s", "1"}, {"-y", "0"}, {"-z", config}, {"-t", "100"}, {"-o", "2"}, {"-e", "-v"}, {"-P", "0"},
				{"--diff", file("none")}, {"--load-cache", nameMap}, {"--filterdownports", nameMap}, {"--diffcheck", "bogus"},
				{"-D", "0,1", "--load-cache", cCache}, {"-S", "0x123456"}, {"-S", "zz"}, {"-D", "0,9"}, {"-D", "1,1"},
				{"--cas-only", "--switches-only"}, {"-n", "1", "-l"}, {"-D", "0,1", "--cas-only"}, {"-D", "0,1", "-l", "-p"},
				{"-n", "-1"}, {"-e", "-D", "0,9", "-t", "100"}, {"-e", "-S", "0x123456"}, {"-v", "-D", "0,1,9", "-t", "50"},
				{"-a", "-D", "0,9", "-t", "50"}, {"-D", "", "-t", "50"}, {"-S", ""},
				{"-D", "0,1", "-S", caPorts[0]}, {"-a", "-S", "0x123456"}, {"-n", "x"}, {"-o", "x"},
			} {
				if once {
					same("iblinkinfo", args...)
				}
			}
			if prevCache != "" {
				for _, args := range [][]string{
					// With nodedesc (or lid on a switch) a node whose description
					// differs makes C's diff_node_iter print its header through
					// a NULL counter (print_node_header): it crashes, but in
					// line mode, which prints no header.
					{"--diff", prevCache}, {"--diff", prevCache, "--diffcheck", "lid,nodedesc,port", "-l"}, {"--diff", prevCache, "--diffcheck", "state"},
					{"--diff", prevCache, "--switches-only", "-l"}, {"--diff", prevCache, "-D", "0,1"}, {"--load-cache", cCache, "--diff", prevCache},
					{"--filterdownports", prevCache}, {"--diff", prevCache, "-G", caPorts[0]},
				} {
					same("iblinkinfo", args...)
				}
			}

			if !once {
				return
			}
			// What does not depend on the fabric, once: help, version,
			// getopt's refusals, bad values, ports that do not open.
			for _, tool := range []string{"ibnetdiscover", "iblinkinfo"} {
				for _, args := range [][]string{
					{"-h"}, {"--help"}, {"-V"}, {"--version"}, {"-X"}, {"--bogus"}, {"--d"}, {"-R"}, {"-t", "0"}, {"-t", "x"},
					{"-t"}, {"-y", "zz"}, {"-s", "0"}, {"-s", "x"}, {"-l", "-V"}, {"-D"}, {"-G"}, {"--Ca"}, {"-K"}, {"-L"},
				} {
					if tool == "ibnetdiscover" && args[0] == "-s" {
						continue // -s is ibnetdiscover's --show: "0" would name the output file
					}
					same(tool, args...)
				}
				for _, args := range [][]string{{"-C", "foo"}, {"-P", "3"}, {"-P", "-1"}, {"-C", "ibsim0", "-P", "2"}} {
					c, g := both(tool, args...)
					// Our stderr adds an explanation after C's lines.
					if strings.HasPrefix(fabricPidRE.ReplaceAllString(g.stderr, "[pid]"), fabricPidRE.ReplaceAllString(c.stderr, "[pid]")) {
						g.stderr = c.stderr
					}
					sameRun(t, tool+" "+strings.Join(args, " "), c, g, maskTopoTime)
				}
			}
			c, g = runC(t, f, n.node, "ibnetdiscover", filepath.Join(dir, "no", "such", "dir")), runGo(t, f, n.node, "ibnetdiscover", filepath.Join(dir, "no", "such", "dir"))
			sameRun(t, "ibnetdiscover UNWRITABLE", c, g, nil)
		})
		if !ok {
			break
		}
		prevCache = filepath.Join(dir, n.name+".c.cache")
	}
}

var (
	debugPtrRE = regexp.MustCompile(`0x[0-9a-f]{12}\b`)
	debugPidRE = regexp.MustCompile(`\[pid [0-9]+\]`)
)

// maskDebug masks what differs on purpose in ibnetdiscover -d's output:
// the time line, the pids and the heap addresses.
func maskDebug(s string) string {
	s = debugPidRE.ReplaceAllString(fabricPidRE.ReplaceAllString(maskTopoTime(s), "[pid]"), "[pid]")
	return debugPtrRE.ReplaceAllString(s, "0xPTR")
}

func writeTestFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sameFiles compares two files the tools wrote, masked.
func sameFiles(t *testing.T, cName, gName string, mask func(string) string) {
	t.Helper()
	c, err := os.ReadFile(cName)
	if err != nil {
		t.Error(err)
		return
	}
	g, err := os.ReadFile(gName)
	if err != nil {
		t.Error(err)
		return
	}
	if mask != nil {
		c, g = []byte(mask(string(c))), []byte(mask(string(g)))
	}
	if !bytes.Equal(c, g) {
		t.Errorf("%s and %s differ (%d and %d bytes)\n--- infiniband-diags:\n%q\n--- purerdma:\n%q", cName, gName, len(c), len(g), c, g)
	}
}

// chassisNet is a fabric whose nodes share SystemImageGUIDs (ibsim's
// sysimgguid lines), which libibnetdisc groups into chassis for
// ibnetdiscover -g: two switches of one system, two CAs of another, and
// nodes of their own.
const chassisNet = `vendid=0x1234
devid=0x5a5a
sysimgguid=0x5000
Switch	8 "ChassisA"
[1]	"ChassisB"[1]
[2]	"cx1"[1]
[3]	"solo"[1]
[4]	"Edge"[1]

vendid=0x1234
sysimgguid=0x5000
Switch	8 "ChassisB"
[1]	"ChassisA"[1]
[2]	"cx2"[1]

Switch	4 "Edge"
[1]	"ChassisA"[4]

sysimgguid=0x6000
Hca	1 "cx1"
[1]	"ChassisA"[2]

sysimgguid=0x6000
Hca	1 "cx2"
[1]	"ChassisB"[2]

Hca	1 "solo"
[1]	"ChassisA"[3]
`

// TestFabricDiscoverChassis compares ibnetdiscover -g, ours and
// infiniband-diags', where nodes share SystemImageGUIDs (chassis), from
// a scan and from a cache.
func TestFabricDiscoverChassis(t *testing.T) {
	f := ibsimtest.Start(t, chassisNet, ibsimtest.Options{})
	cache := filepath.Join(t.TempDir(), "c.cache")
	for _, args := range [][]string{{}, {"-g"}, {"-g", "-f", "-m"}, {"-g", "--cache", cache}, {"-g", "--load-cache", cache}, {"-l"}} {
		for _, node := range []string{"solo", "cx2"} {
			c := runC(t, f, node, "ibnetdiscover", args...)
			if len(args) > 1 && args[1] == "--cache" {
				os.Remove(cache) // ours writes it anew
			}
			g := runGo(t, f, node, "ibnetdiscover", args...)
			sameRun(t, "ibnetdiscover at "+node+" "+strings.Join(args, " "), c, g, maskTopoTime)
		}
	}
	if g := runGo(t, f, "solo", "ibnetdiscover", "-g"); !strings.Contains(g.stdout, "\nChassis 1 (guid 0x") {
		t.Errorf("no chassis:\n%s", g.stdout)
	}
}
