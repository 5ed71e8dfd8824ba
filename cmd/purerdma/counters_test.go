package main

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

func withCountersOptions(t *testing.T, o *counters.Options) {
	old := countersOptions
	countersOptions = o
	t.Cleanup(func() { countersOptions = old })
}

func TestCountersRxeFixture(t *testing.T) {
	withCountersOptions(t, &counters.Options{SysfsRoot: "../../sysfs/testdata/rxe-6.1", Netlink: &fakeNetlink{sent: 42}})
	out, errs, code := runTool("counters", "-d", "rxe0")
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
	withCountersOptions(t, &counters.Options{SysfsRoot: "../../sysfs/testdata/mlx5-eth", NoNetlink: true, DriverID: abi.RDMA_DRIVER_MLX5})
	out, errs, code := runTool("counters", "-d", "mlx5_0", "--json")
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
	raw, err := sysfs.New("../../sysfs/testdata/mlx5-eth")
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
	withCountersOptions(t, &counters.Options{SysfsRoot: "../../sysfs/testdata/rxe-6.1", NoNetlink: true})
	if _, errs, code := runTool("counters", "-d", "nosuch0"); code != 1 || !strings.HasPrefix(errs, "counters: no RDMA device nosuch0 (") {
		t.Errorf("unknown device: %d %q", code, errs)
	}
	if _, errs, code := runTool("counters", "--nosuch"); code != 2 || !strings.Contains(errs, "Usage") {
		t.Errorf("bad option: %d %q", code, errs)
	}
}
