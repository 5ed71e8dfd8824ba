package main

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
)

// The exit-code policy (README, "Exit status"): tools that imitate an
// rdma-core tool keep its codes; the others exit 0 when they did their
// work, 1 on a runtime failure, 2 on a command line they cannot use.

// `purerdma help TOOL` prints that tool's own help on standard output and
// exits 0, for every tool (ibstatus's -h exits 255 as the script does;
// help still exits 0).
func TestHelpTool(t *testing.T) {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	list, _, _ := runTool("help")
	for _, n := range names {
		out, errs, code := runTool("help", n)
		if code != 0 || errs != "" || !strings.Contains(strings.ToLower(out), "usage") {
			t.Errorf("help %s: exit %d, stderr %q, stdout %q", n, code, errs, out)
		}
		if out == list {
			t.Errorf("help %s printed the tool list", n)
		}
	}
	out, _, _ := runTool("help", "devinfo")
	if !strings.HasPrefix(out, "Usage: ibv_devinfo") || !strings.Contains(out, "--ib-port") {
		t.Errorf("help devinfo:\n%s", out)
	}
	if _, errs, code := runTool("help", "nosuch"); code != 2 || !strings.Contains(errs, `unknown tool "nosuch"`) {
		t.Errorf("help nosuch: %d %q", code, errs)
	}
	if _, errs, code := runTool("help", "devinfo", "ibstat"); code != 2 || !strings.Contains(errs, "one tool at a time") {
		t.Errorf("help devinfo ibstat: %d %q", code, errs)
	}
}

func TestVersionArgs(t *testing.T) {
	out, errs, code := runTool("version", "--bogus")
	if code != 2 || out != "" || !strings.Contains(errs, "unknown argument --bogus") || !strings.Contains(errs, "Usage: purerdma version") {
		t.Errorf("version --bogus: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if out, _, code := runTool("version", "--help"); code != 0 || !strings.HasPrefix(out, "Usage: purerdma version") {
		t.Errorf("version --help: %d %q", code, out)
	}
	if out, _, code := runTool("version"); code != 0 || !strings.HasPrefix(out, "purerdma ") {
		t.Errorf("version: %d %q", code, out)
	}
}

func TestUmadSubcommand(t *testing.T) {
	_, errs, code := runTool("umad", "bogus")
	if code != 2 || !strings.HasPrefix(errs, `umad: unknown subcommand "bogus": send or serve`+"\n") || !strings.Contains(errs, "Usage: umad send") {
		t.Errorf("umad bogus: %d %q", code, errs)
	}
	_, errs, code = runTool("umad")
	if code != 2 || !strings.HasPrefix(errs, "umad: missing subcommand: send or serve\n") {
		t.Errorf("umad: %d %q", code, errs)
	}
}

// flowcount -p 99 names the port the device lacks, and creates nothing
// (no flow is tried).
func TestFlowcountNoSuchPort(t *testing.T) {
	v := verbstest.MLX5()
	flowcountBed(t, v)
	out, errs, code := runTool("flowcount", "-d", "mlx5_0", "-p", "99", "--dst-mac", "00:01:02:03:04:05", "--count", "1")
	if code != 1 || out != "" || errs != "flowcount: mlx5_0 has no port 99 (it has port 1 only)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, l := range v.Log() {
		if strings.HasPrefix(l, "create") {
			t.Errorf("created something: %s", l)
		}
	}
}

// counters without -d shows every device's sets, like `rdma statistic
// show`; an unknown -d names the devices there are.
func TestCountersEveryDevice(t *testing.T) {
	root := "../../sysfs/testdata/rxe-6.1"
	withCountersOptions(t, &counters.Options{Sysfs: sysfsAt(t, root), Netlink: &fakeNetlink{sent: 42}})
	out, errs, code := runTool("counters")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, dev := range []string{"rxe0", "rxe1"} {
		one, _, code := runTool("counters", "-d", dev)
		if code != 0 || !strings.Contains(out, one) {
			t.Errorf("counters without -d lacks %s's sets:\n%s\nwant within it:\n%s", dev, out, one)
		}
	}
	if strings.Index(out, "set 0: rxe0") > strings.Index(out, "set 0: rxe1") {
		t.Errorf("devices out of order:\n%s", out)
	}
	_, errs, code = runTool("counters", "-d", "nosuch")
	if code != 1 || errs != "counters: no RDMA device nosuch (the devices are rxe0, rxe1; purerdma counters without -d shows them all)\n" {
		t.Errorf("counters -d nosuch: %d %q", code, errs)
	}
	js, _, code := runTool("counters", "--json")
	if code != 0 || strings.Count(js, `"device": "rxe0"`) == 0 || strings.Count(js, `"device": "rxe1"`) == 0 {
		t.Errorf("counters --json: %d\n%s", code, js)
	}
	// No devices: nothing, status 0.
	withCountersOptions(t, &counters.Options{Sysfs: sysfsAt(t, t.TempDir()), NoNetlink: true})
	if out, errs, code := runTool("counters"); code != 0 || out != "" || errs != "" {
		t.Errorf("no devices: %d %q %q", code, out, errs)
	}
	if _, errs, code := runTool("counters", "-d", "rxe0"); code != 1 || !strings.Contains(errs, "this machine has no RDMA device") {
		t.Errorf("no devices, -d rxe0: %d %q", code, errs)
	}
}

// ibstat's errors end with ": " and strerror(errno), as libibmad's IBPANIC
// prints them ("%m"), with the errno rdma-core 44 leaves there (checked
// against the C tool in TestVMIbstatErrorsMatchRdmaCore).
func TestIbstatErrorsStrerror(t *testing.T) {
	root := filepath.Join(ibstatFixtures, "rxe-6.1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ibstat", "nosuch"}, `^ibpanic: \[\d+\] main: 'nosuch' IB device can't be found: Success\n$`},
		{[]string{"ibstat", "rxe0", "9"}, `^ibwarn: \[\d+\] ca_stat: CA: 'rxe0' has no port number 9 - max \(1\)\nibpanic: \[\d+\] main: stat of IB device 'rxe0' failed: No such file or directory\n$`},
		{[]string{"ibstat", "rxe0", "x"}, `^ibwarn: \[\d+\] ca_stat: CA: 'rxe0' has no port number 0 - max \(1\)\nibpanic: \[\d+\] main: stat of IB device 'rxe0' failed: No such file or directory\n$`},
	} {
		out, errs, err := ibstatRun(t, root, tc.args...)
		var code int
		if ee, ok := err.(exitError); ok {
			code = ee.code
		}
		if code != 255 || out != "" || !regexp.MustCompile(tc.want).MatchString(errs) {
			t.Errorf("%v: exit %d (%v), stdout %q, stderr %q, want %s", tc.args, code, err, out, errs, tc.want)
		}
	}
}

func TestStrerror(t *testing.T) {
	for e, want := range map[int]string{0: "Success", 2: "No such file or directory", 19: "No such device", 13: "Permission denied"} {
		if got := strerror(errnoFrom(e)); got != want {
			t.Errorf("strerror(%d) = %q, want %q", e, got, want)
		}
	}
}

func errnoFrom(n int) syscall.Errno { return syscall.Errno(n) }
