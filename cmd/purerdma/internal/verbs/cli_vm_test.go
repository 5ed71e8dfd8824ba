//go:build integration

package verbs

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMCountersEveryDevice: counters without -d shows every device of
// /sys/class/infiniband, in order, and exits 0.
func TestVMCountersEveryDevice(t *testing.T) {
	vmtest.Require(t)
	ents, err := os.ReadDir("/sys/class/infiniband")
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := DefaultEnv().runTool("counters")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
	}
	last := -1
	for _, e := range ents {
		// "set 0: rxe0 port 1, ..." or "set 0: mock0, ..." (a device set).
		i := -1
		if loc := regexp.MustCompile(`(?m)^(set 0: ` + regexp.QuoteMeta(e.Name()) + `[ ,]|` + regexp.QuoteMeta(e.Name()) + `: no counter sets)`).FindStringIndex(out); loc != nil {
			i = loc[0]
		}
		if i < 0 || i < last {
			t.Errorf("%s missing or out of order in\n%s", e.Name(), out)
		}
		last = i
	}
	_, errs, code = DefaultEnv().runTool("counters", "-d", "nosuch")
	if code != 1 || !strings.Contains(errs, "the devices are ") {
		t.Errorf("-d nosuch: %d %q", code, errs)
	}
}

// TestVMFlowcountNoSuchPort: on mock0 (one port) -p 99 names the port
// instead of passing the core's bare EINVAL on.
func TestVMFlowcountNoSuchPort(t *testing.T) {
	vmtest.Require(t)
	if _, err := os.Stat("/sys/class/infiniband/mock0"); err != nil {
		t.Skip("no mock0 in this guest (vmrun -mock=false)")
	}
	out, errs, code := DefaultEnv().runTool("flowcount", "-d", "mock0", "-p", "99", "--dst-mac", "52:54:00:12:34:02", "--count", "1")
	if code != 1 || out != "" || errs != "flowcount: mock0 has no port 99 (it has port 1 only)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
