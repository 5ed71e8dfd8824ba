package diags

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
)

// pingTimes masks what ibping measures (each pong's round trip, the run's
// time and the rtt summary), and IBEXIT's pid with -d.
var pingTimes = regexp.MustCompile(`time [0-9]+(\.[0-9]{3})? ms|rtt min/avg/max = [0-9./]+ ms|\[pid [0-9]+\]`)

func maskPingTimes(s string) string { return pingTimes.ReplaceAllString(s, "TIME") }

// startGoPingServer runs our ibping -S attached at node of f, in this
// process, until the test ends.
func startGoPingServer(t *testing.T, f *ibsimtest.Fabric, node string, args ...string) {
	t.Helper()
	env := DefaultEnv()
	env.IBSim = f.Sock + ":" + node
	env.serverStop = make(chan struct{})
	done := make(chan error, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- env.run(append([]string{"purerdma", "ibping", "-S"}, args...), &out, &errb)
	}()
	t.Cleanup(func() {
		close(env.serverStop)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ibping -S: %v\n%s%s", err, out.String(), errb.String())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("ibping -S did not stop")
		}
	})
	// The server is up once a ping gets its pong.
	for i := 0; ; i++ {
		lids, err := f.LIDs(context.Background(), node)
		if err != nil {
			t.Fatal(err)
		}
		r := runC(t, f, node, "ibping", "-c", "1", "-f", "-t", "100", strconv.Itoa(lids[node]))
		if strings.Contains(r.stdout, " 1 received") {
			return
		}
		if i == 50 {
			t.Fatalf("our ibping server does not answer:\n%s%s\n%s%s", r.stdout, r.stderr, out.String(), errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFabricIBPing runs ibping's client, infiniband-diags' and ours, on
// the small, ring, line and wide fabrics against our server (-S) on
// another node, and compares them: pongs (which name the server's host),
// floods, counts, -G (through the SA), -L, -o with an OUI nobody serves,
// a LID with no server, -e, the usage exits. ibsim hands vendor requests
// only to a node's SM client, which our server attaches as; a C server
// under libumad2sim gets none, so the C client's pongs come from ours.
// Times are masked; the rest is compared byte for byte.
func TestFabricIBPing(t *testing.T) {
	servers := map[string]string{"small": "Hca2", "ring": "h4", "line": "Tail", "wide": "e2"}
	for _, net := range fabricNets {
		t.Run(net.name, func(t *testing.T) {
			f := ibsimtest.Start(t, net.net, ibsimtest.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lids, err := f.LIDs(ctx, net.node)
			if err != nil {
				t.Fatal(err)
			}
			srv := servers[net.name]
			startGoPingServer(t, f, srv)
			lid := strconv.Itoa(lids[srv])
			guid := portGUID(t, f, net.node, lids[srv])
			noServer := strconv.Itoa(lids[net.node]) // a port nobody serves: the client's own
			// The pongs without -f take a second each (ibping sleeps
			// between them): those run on the small and ring fabrics.
			cases := [][]string{
				{"-c", "2", "-f", lid}, {"-c", "2", "-f", "-G", guid}, {"-c", "1", lid},
			}
			if net.name == "line" || net.name == "wide" {
				cases = cases[:2]
			}
			if net.name == "small" {
				cases = append(cases, [][]string{
					{"-c", "3", "-f", "-L", lid}, {"--count=2", "--flood", lid}, {"-c", "0", lid},
					{"-c", "1", "-f", "-o", "0x1234", "-t", "100", lid}, {"-c", "2", "-f", "-t", "100", noServer},
					{"-c", "1", "-f", "-e", "-t", "100", noServer}, {"-c", "1", "--retries", "1", lid},
					{"-c", "1", "-f", "-d", "-t", "100", "0x10000"}, {"-c", "1", "-f", "0"},
					{"-c", "1", "-f", "-G", "0x1"}, {"-c", "1", "-f", "-s", "1", "-G", guid},
					{"-c", "1", "-f", "-C", "ibsim0", "-P", "1", lid}, {"-c", "1", "-f", "-C", "nosuch", lid},
					{}, {"-h"}, {"-x"}, {"-D", lid}, {"-y", "0", lid}, {"-K", lid}, {"-V"},
					{"-c", "1", "-f", "-z", diagConf(t), lid}, {"-c", "1", "-f", "-v", lid}, {"-t", "0", lid},
					{"-c", "1", "-f", "-P", "-1", lid},
				}...)
			}
			for i, args := range cases {
				name := "ibping " + strings.Join(args, " ")
				c := runC(t, f, net.node, "ibping", args...)
				g := runGo(t, f, net.node, "ibping", args...)
				g.stderr = dropExplanationsOf(g.stderr, c.stderr, "ibping")
				sameRun(t, name, c, g, maskPingTimes)
				if i < 3 && !strings.Contains(g.stdout, " 0% packet loss") {
					t.Errorf("%s: pongs lost:\n%s%s", name, g.stdout, g.stderr)
				}
			}
		})
	}
}
