package verbs

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
)

// TestMain fails the package's tests when a descriptor leaked.
func TestMain(m *testing.M) { os.Exit(verbstest.TestMain(m)) }

// flowcountBed points flowcount at fake devices for the test.
func flowcountBed(t *testing.T, devs ...*fakekernel.Verbs) *Env {
	b := verbstest.New(t, devs...)
	return &Env{Flowcount: b.Opts}
}

// The man page's example on fake mlx5: a frame to the MAC before every read
// (100 bytes), PACKETS and BYTES grow, and everything is released in the
// man page's order.
func TestFlowcountMlx5(t *testing.T) {
	v := verbstest.MLX5()
	env := flowcountBed(t, v)
	mac := [6]byte{0, 1, 2, 3, 4, 5}
	env.FlowcountTick = func() { v.ReceiveFrames(1, mac, 1, 100) }
	out, errs, code := env.runTool("flowcount", "-d", "mlx5_0", "-p", "1", "--dst-mac", "00:01:02:03:04:05", "--interval", "1ms", "--count", "3")
	want := "PACKETS = 1, BYTES = 100\nPACKETS = 2, BYTES = 200\nPACKETS = 3, BYTES = 300\n"
	if code != 0 || out != want || errs != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	var order []string
	for _, l := range v.Log() {
		if strings.HasPrefix(l, "create") || strings.HasPrefix(l, "destroy") || strings.HasPrefix(l, "dealloc") {
			order = append(order, strings.Join(strings.Fields(l)[:2], " "))
		}
	}
	wantOrder := "create counters,create cq,create qp,create flow,destroy flow,destroy counters,destroy qp,destroy cq,dealloc pd,destroy uar"
	if got := strings.Join(order, ","); got != wantOrder {
		t.Errorf("objects:\n%s\nwant\n%s", got, wantOrder)
	}
	if v.Kernel().OpenFiles() != 0 {
		t.Error("the device is still open")
	}
}

// On a device without counters flowcount exits 1 with one line that names
// the device and says counters are not supported there.
func TestFlowcountNoCounters(t *testing.T) {
	env := flowcountBed(t, verbstest.RXE())
	out, errs, code := env.runTool("flowcount", "-d", "rxe0", "-p", "1", "--dst-mac", "00:01:02:03:04:05")
	if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "rxe0") || !strings.Contains(errs, "counters are not supported") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	t.Logf("%s", errs)
}

func TestFlowcountNoCapNetRaw(t *testing.T) {
	v := verbstest.MLX5()
	v.NetRaw = false
	env := flowcountBed(t, v)
	_, errs, code := env.runTool("flowcount", "-d", "mlx5_0", "--dst-mac", "00:01:02:03:04:05", "--count", "1")
	if code != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "CAP_NET_RAW") || !strings.Contains(errs, "mlx5_0") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

func TestFlowcountUsage(t *testing.T) {
	env := DefaultEnv()
	for _, args := range [][]string{
		{"flowcount"},
		{"flowcount", "-d", "mlx5_0"},
		{"flowcount", "-d", "mlx5_0", "--dst-mac", "zz"},
		{"flowcount", "-d", "mlx5_0", "--dst-mac", "00:01:02:03:04:05", "--interval", "-1s"},
		{"flowcount", "-d", "mlx5_0", "--dst-mac", "00:01:02:03:04:05", "-p", "0"},
		{"flowcount", "--nope"},
	} {
		_, errs, code := env.runTool(args...)
		if code != 2 || !strings.Contains(errs, "Usage: purerdma flowcount") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	out, _, code := env.runTool("flowcount", "--help")
	if code != 0 || !strings.Contains(out, "ibv_read_counters(3)") {
		t.Errorf("--help: %d %q", code, out)
	}
}

// Ctrl-C (the context of signal.NotifyContext) ends the loop and releases
// everything.
func TestFlowcountInterrupted(t *testing.T) {
	v := verbstest.MLX5()
	env := flowcountBed(t, v)
	ctx, cancel := context.WithCancel(context.Background())
	ticks := 0
	env.FlowcountTick = func() {
		ticks++
		if ticks == 2 {
			cancel()
		}
	}
	var out bytes.Buffer
	err := env.flowcount(ctx, flowcountArgs{dev: "mlx5_0", port: 1, interval: time.Millisecond}, &out)
	if err != nil || ticks != 2 {
		t.Fatalf("%v after %d ticks", err, ticks)
	}
	if v.Kernel().OpenFiles() != 0 {
		t.Error("the device is still open")
	}
	log := strings.Join(v.Log(), "\n")
	if !strings.Contains(log, "destroy flow") || !strings.Contains(log, "destroy counters") {
		t.Errorf("not released:\n%s", log)
	}
}

// flowcount -p 99 names the port the device lacks, and creates nothing
// (no flow is tried).
func TestFlowcountNoSuchPort(t *testing.T) {
	v := verbstest.MLX5()
	env := flowcountBed(t, v)
	out, errs, code := env.runTool("flowcount", "-d", "mlx5_0", "-p", "99", "--dst-mac", "00:01:02:03:04:05", "--count", "1")
	if code != 1 || out != "" || errs != "flowcount: mlx5_0 has no port 99 (it has port 1 only)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, l := range v.Log() {
		if strings.HasPrefix(l, "create") {
			t.Errorf("created something: %s", l)
		}
	}
}
