//go:build integration

package rdmatool

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMLinkMatchesRdma: purerdma link add/delete do what iproute2's rdma
// link add/delete do, with the same output, errors and exit statuses: an
// rxe device on a veth pair of the test's own (the shared rxe0, rxe1 and
// mock0 stay as they are), then every error rdma reports.
func TestVMLinkMatchesRdma(t *testing.T) {
	vmtest.Require(t)
	if out, err := exec.Command("ip", "link", "add", "vtest0", "type", "veth", "peer", "name", "vtest1").CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v %s", err, out)
	}
	defer exec.Command("ip", "link", "del", "vtest0").Run()
	if out, err := exec.Command("ip", "link", "set", "vtest0", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set: %v %s", err, out)
	}
	exists := func() bool {
		_, err := os.Stat("/sys/class/infiniband/rxet")
		return err == nil
	}
	cmp := func(args ...string) {
		t.Helper()
		before := exists()
		var cout, cerr bytes.Buffer
		c := exec.Command("rdma", append([]string{"link"}, args...)...)
		c.Stdout, c.Stderr = &cout, &cerr
		ccode := 0
		var ee *exec.ExitError
		if err := c.Run(); errors.As(err, &ee) {
			ccode = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		cExists := exists()
		if !before && cExists {
			// Undo rdma's add so that purerdma's meets the same state.
			if out, err := exec.Command("rdma", "link", "delete", args[1]).CombinedOutput(); err != nil {
				t.Fatalf("undo: %v %s", err, out)
			}
		}
		gout, gerr, gcode := runTool(DefaultEnv(), append([]string{"link"}, args...)...)
		gExists := exists()
		if gout != cout.String() || gerr != cerr.String() || gcode != ccode || gExists != cExists {
			t.Errorf("link %s (kernel %s):\nrdma:     exit %d, rxet there %v, stdout %q, stderr %q\npurerdma: exit %d, rxet there %v, stdout %q, stderr %q",
				strings.Join(args, " "), vmtest.Kernel(), ccode, cExists, cout.String(), cerr.String(), gcode, gExists, gout, gerr)
			return
		}
		t.Logf("link %s: identical (exit %d, stderr %q, rxet there afterwards: %v)", strings.Join(args, " "), ccode, gerr, gExists)
	}
	// rdma [-j] link show, on every device (rxe0, rxe1, mock0).
	for _, args := range [][]string{
		{}, {"show"}, {"list"}, {"show", "rxe0"}, {"show", "rxe1/1"}, {"show", "rxe0/9"}, {"show", "nosuch"},
	} {
		for _, j := range [][]string{nil, {"-j"}} {
			cargs := append(append(append([]string{}, j...), "link"), args...)
			var cout, cerr bytes.Buffer
			c := exec.Command("rdma", cargs...)
			c.Stdout, c.Stderr = &cout, &cerr
			ccode := 0
			var ee *exec.ExitError
			if err := c.Run(); errors.As(err, &ee) {
				ccode = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			gout, gerr, gcode := runTool(DefaultEnv(), append(append([]string{"link"}, j...), args...)...)
			if gout != cout.String() || gerr != cerr.String() || gcode != ccode {
				t.Errorf("rdma %s (kernel %s):\nrdma:     exit %d, stdout %q, stderr %q\npurerdma: exit %d, stdout %q, stderr %q",
					strings.Join(cargs, " "), vmtest.Kernel(), ccode, cout.String(), cerr.String(), gcode, gout, gerr)
				continue
			}
			t.Logf("rdma %s: identical (exit %d, %d lines)", strings.Join(cargs, " "), ccode, strings.Count(gout, "\n"))
		}
	}
	cmp("add", "rxet", "type", "rxe", "netdev", "vtest0")
	if !exists() {
		t.Fatal("purerdma link add made no rxet")
	}
	cmp("add", "rxet2", "type", "rxe", "netdev", "vtest0") // the netdev has one: EEXIST
	cmp("add", "rxet", "type", "rxe", "netdev", "vtest1")  // the name is taken: ENFILE (ib_register_device's assign_name)
	// Delete: rdma's delete first, then purerdma's on a new rxet.
	var cout, cerr bytes.Buffer
	c := exec.Command("rdma", "link", "delete", "rxet")
	c.Stdout, c.Stderr = &cout, &cerr
	if err := c.Run(); err != nil || exists() {
		t.Fatalf("rdma link delete: %v %s", err, cerr.String())
	}
	if _, errs, code := runTool(DefaultEnv(), "link", "add", "rxet", "type", "rxe", "netdev", "vtest0"); code != 0 || !exists() {
		t.Fatalf("add again: %d %s", code, errs)
	}
	if out, errs, code := runTool(DefaultEnv(), "link", "delete", "rxet"); code != 0 || out != cout.String() || errs != cerr.String() || exists() {
		t.Errorf("purerdma link delete: exit %d, stdout %q, stderr %q, still there %v; rdma printed %q %q", code, out, errs, exists(), cout.String(), cerr.String())
	}
	for _, args := range [][]string{
		{"add", "rxet", "type", "rxe", "netdev", "nosuchdev"},
		{"add", "rxet", "type", "foo", "netdev", "vtest0"},
		{"add"}, {"add", "rxet"}, {"add", "rxet", "type", "rxe"},
		{"delete"}, {"delete", "nosuch"}, {"del", "nosuch"},
	} {
		cmp(args...)
	}
}
