//go:build integration

package verbs

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMAsyncwatchMatchesRdmaCore: on an rxe device of the test's own (on a
// veth pair of its own, so rxe0, rxe1 and mock0 stay up), ibv_asyncwatch
// and purerdma asyncwatch watch while the netdev goes down and up, and
// print the same lines (the FD number aside: each process has its own).
func TestVMAsyncwatchMatchesRdmaCore(t *testing.T) {
	vmtest.Require(t)
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", args, err, out)
		}
	}
	sh("ip", "link", "add", "vtaw0", "type", "veth", "peer", "name", "vtaw1")
	defer exec.Command("ip", "link", "del", "vtaw0").Run()
	sh("ip", "link", "set", "vtaw0", "up")
	sh("ip", "link", "set", "vtaw1", "up")
	sh("rdma", "link", "add", "rxeaw", "type", "rxe", "netdev", "vtaw0")
	defer exec.Command("rdma", "link", "delete", "rxeaw").Run()
	state := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; {
			b, _ := os.ReadFile("/sys/class/infiniband/rxeaw/ports/1/state")
			if strings.Contains(string(b), want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("rxeaw port state %q, want %s", b, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	state("ACTIVE")

	var cout lockedBuffer
	c := exec.Command("ibv_asyncwatch", "-d", "rxeaw")
	c.Stdout, c.Stderr = &cout, &cout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	ctx, cancel := context.WithCancel(context.Background())
	env := DefaultEnv()
	env.AsyncContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	defer cancel()
	var gout, gerr lockedBuffer
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		done <- env.run([]string{"purerdma", "asyncwatch", "-d", "rxeaw"}, &gout, &gerr)
	}()
	lines := func(w *lockedBuffer, n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); strings.Count(w.String(), "\n") < n; {
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d lines: %q (purerdma stderr %q)", n, w.String(), gerr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	lines(&cout, 1)
	lines(&gout, 1)
	sh("ip", "link", "set", "vtaw0", "down")
	state("DOWN")
	sh("ip", "link", "set", "vtaw0", "up")
	state("ACTIVE")
	lines(&cout, 3)
	lines(&gout, 3)
	time.Sleep(500 * time.Millisecond) // any later event reaches both
	c.Process.Signal(syscall.SIGTERM)
	c.Wait()
	cancel()
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatalf("purerdma asyncwatch: %v %s", err, gerr.String())
	}
	fd := regexp.MustCompile(`async event FD \d+`)
	want := fd.ReplaceAllString(cout.String(), "async event FD N")
	got := fd.ReplaceAllString(gout.String(), "async event FD N")
	if got != want || !strings.Contains(got, "IBV_EVENT_PORT_ERR (10), port 1") || !strings.Contains(got, "IBV_EVENT_PORT_ACTIVE (9), port 1") {
		t.Fatalf("kernel %s:\n--- ibv_asyncwatch\n%s--- purerdma asyncwatch\n%s", vmtest.Kernel(), cout.String(), gout.String())
	}
	t.Logf("identical but for the FD number (kernel %s):\n%s", vmtest.Kernel(), bytes.TrimSpace([]byte(got)))
}
