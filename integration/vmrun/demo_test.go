package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// demoSections are the headers integration/demo.sh prints, in order (the
// part before any value that changes from run to run).
var demoSections = []string{
	"===== guest kernel (uname -r)",
	"===== RDMA devices and ports (/sys/class/infiniband)",
	"===== purerdma help",
	"===== purerdma version",
	"===== devices: rdma-core's ibv_devices and purerdma devices",
	"===== devinfo: rdma-core's ibv_devinfo and purerdma devinfo (-d rxe0)",
	"===== ibstat: infiniband-diags' ibstat and purerdma ibstat (rxe1)",
	"===== ibstatus: infiniband-diags' ibstatus and purerdma ibstatus (rxe0)",
	"===== resource: iproute2's rdma resource show and purerdma resource",
	"===== MAD round trip: purerdma umad serve on rxe1, purerdma umad send from rxe0 to ",
	"===== MAD to a class nobody serves (0x31): the kernel answers status 0x000c",
	"===== counters of rxe0 before ibv_rc_pingpong (purerdma counters -d rxe0)",
	"===== ibv_rc_pingpong: server on rxe0, client on rxe1, 100 x 1 KiB",
	"===== counters of rxe0 after ibv_rc_pingpong (purerdma counters -d rxe0)",
	"===== perfquery -C rxe0: rxe has no PMA, the kernel answers status 0x000c",
	"===== flowcount on rxe0: rxe has no verbs counters",
	"===== purerdma flowcount -d mock0 --dst-mac ",
	"===== rdma-core 44 (libibverbs + libmlx5): the same example on mock0",
	"===== demo result",
}

// TestDemo runs `make demo` on each kernel, as CONTRIBUTING.md tells a newcomer
// to, and wants exit status 0, every section in order, the five tools
// byte-identical to rdma-core's, the expected failures marked expected,
// and the closing verdict.
func TestDemo(t *testing.T) {
	requireHarness(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH: the demo is a make target")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, kernel := range []string{"6.1", "6.12"} {
		t.Run(kernel, func(t *testing.T) {
			cmd := exec.Command("make", "-s", "-C", repo, "demo", "DEMO_KERNEL="+kernel)
			cmd.Env = append(os.Environ(), "MAKEFLAGS=")
			out, err := cmd.CombinedOutput()
			text := string(out)
			if err != nil {
				t.Fatalf("make demo DEMO_KERNEL=%s: %v\n%s", kernel, err, text)
			}
			at := 0
			for _, s := range demoSections {
				i := strings.Index(text[at:], "\n"+s)
				if i < 0 {
					t.Errorf("no section %q after offset %d", s, at)
					continue
				}
				at += i + 1
			}
			if !strings.Contains(text, "\n"+kernel+".") {
				t.Errorf("the guest kernel is not %s", kernel)
			}
			for want, n := range map[string]int{
				"--- identical, byte for byte\n": 5,
				"(exit status 1, expected)\n":    2,
				"(exit status 255, expected)\n":  1,
				"3 round trips, average":         1,
				// "answered 3 requests", and on a loaded host perhaps
				// " (1 repeats already answered)": a retransmitted
				// request the server recognised.
				"answered 3 requests":              1,
				"every step behaved as expected\n": 1,
				"DEMO FAILURE":                     0,
			} {
				if got := strings.Count(text, want); got != n {
					t.Errorf("%q appears %d times, want %d", want, got, n)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", text)
			}
		})
	}
}
