package verbs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/rdmanl"
	"github.com/purerdma/rdma/sysfs"
)

// fakeNetlink answers STAT_GET like rxe's netlink statistics.
type fakeNetlink struct{ sent uint64 }

func (f *fakeNetlink) PortStatsByName(dev string, port int) (*rdmanl.Stats, error) {
	return &rdmanl.Stats{Device: dev, Port: port, Counters: []rdmanl.NamedCounter{{Name: "sent_pkts", Value: f.sent}, {Name: "rcvd_pkts", Value: 7}}}, nil
}

func withCountersOptions(o *counters.Options) *Env {
	return &Env{Counters: o}
}

func TestCountersRxeFixture(t *testing.T) {
	env := withCountersOptions(&counters.Options{Sysfs: sysfsAt(t, "../../../../sysfs/testdata/rxe-6.1"), Netlink: &fakeNetlink{sent: 42}})
	out, errs, code := env.runTool("counters", "-d", "rxe0")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"set 0: rxe0 port 1, counts port, source hw_counters, cached",
		"set 1: rxe0 port 1, counts port, source netlink, not cached, 2 counters",
		"sent_pkts", "rcvd_pkts 7",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "counts flow") {
		t.Errorf("rxe has no flow counters:\n%s", out)
	}
}

func TestCountersMlx5JSON(t *testing.T) {
	env := withCountersOptions(&counters.Options{Sysfs: sysfsAt(t, "../../../../sysfs/testdata/mlx5-eth"), NoNetlink: true, DriverID: abi.RDMA_DRIVER_MLX5})
	out, errs, code := env.runTool("counters", "-d", "mlx5_0", "--json")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sets []struct {
		ID       int      `json:"id"`
		Counted  string   `json:"counted"`
		Source   string   `json:"source"`
		Cached   bool     `json:"cached"`
		Names    []string `json:"names"`
		Note     string   `json:"note"`
		Counters []struct {
			Name  string `json:"name"`
			Unit  string `json:"unit"`
			Value uint64 `json:"value"`
		} `json:"counters"`
	}
	if err := json.Unmarshal([]byte(out), &sets); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(sets) != 3 || sets[0].Counted != "flow" || sets[0].Note == "" || sets[1].Source != "pma" || sets[2].Source != "hw_counters" || !sets[2].Cached {
		t.Fatalf("sets: %+v", sets)
	}
	// port_xmit_data is converted from 4-octet words once, in sysfs.DataOctets.
	raw, err := sysfs.New("../../../../sysfs/testdata/mlx5-eth")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := raw.Port("mlx5_0", 1)
	pma, _ := p.Counters()
	for _, c := range sets[1].Counters {
		if c.Name == sysfs.CounterXmitData && (c.Value != sysfs.DataOctets(pma[sysfs.CounterXmitData]) || c.Unit != "octets") {
			t.Errorf("port_xmit_data %d %s, file %d words", c.Value, c.Unit, pma[sysfs.CounterXmitData])
		}
	}
}

func TestCountersErrors(t *testing.T) {
	env := withCountersOptions(&counters.Options{Sysfs: sysfsAt(t, "../../../../sysfs/testdata/rxe-6.1"), NoNetlink: true})
	if _, errs, code := env.runTool("counters", "-d", "nosuch0"); code != 1 || !strings.HasPrefix(errs, "counters: no RDMA device nosuch0 (") {
		t.Errorf("unknown device: %d %q", code, errs)
	}
	if _, errs, code := env.runTool("counters", "--nosuch"); code != 2 || !strings.Contains(errs, "Usage") {
		t.Errorf("bad option: %d %q", code, errs)
	}
}

// counters without -d shows every device's sets, like `rdma statistic
// show`; an unknown -d names the devices there are.
func TestCountersEveryDevice(t *testing.T) {
	root := "../../../../sysfs/testdata/rxe-6.1"
	env := withCountersOptions(&counters.Options{Sysfs: sysfsAt(t, root), Netlink: &fakeNetlink{sent: 42}})
	out, errs, code := env.runTool("counters")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, dev := range []string{"rxe0", "rxe1"} {
		one, _, code := env.runTool("counters", "-d", dev)
		if code != 0 || !strings.Contains(out, one) {
			t.Errorf("counters without -d lacks %s's sets:\n%s\nwant within it:\n%s", dev, out, one)
		}
	}
	if strings.Index(out, "set 0: rxe0") > strings.Index(out, "set 0: rxe1") {
		t.Errorf("devices out of order:\n%s", out)
	}
	_, errs, code = env.runTool("counters", "-d", "nosuch")
	if code != 1 || errs != "counters: no RDMA device nosuch (the devices are rxe0, rxe1; purerdma counters without -d shows them all)\n" {
		t.Errorf("counters -d nosuch: %d %q", code, errs)
	}
	js, _, code := env.runTool("counters", "--json")
	if code != 0 || strings.Count(js, `"device": "rxe0"`) == 0 || strings.Count(js, `"device": "rxe1"`) == 0 {
		t.Errorf("counters --json: %d\n%s", code, js)
	}
	// No devices: nothing, status 0.
	env = withCountersOptions(&counters.Options{Sysfs: sysfsAt(t, t.TempDir()), NoNetlink: true})
	if out, errs, code := env.runTool("counters"); code != 0 || out != "" || errs != "" {
		t.Errorf("no devices: %d %q %q", code, out, errs)
	}
	if _, errs, code := env.runTool("counters", "-d", "rxe0"); code != 1 || !strings.Contains(errs, "this machine has no RDMA device") {
		t.Errorf("no devices, -d rxe0: %d %q", code, errs)
	}
}

// sysfsAt returns the sysfs tree at root (a fixture or a test's directory).
func sysfsAt(t testing.TB, root string) *sysfs.FS {
	t.Helper()
	fs, err := sysfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
