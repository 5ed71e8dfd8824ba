package counters_test

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
	"github.com/purerdma/rdma/rdmanl"
	"github.com/purerdma/rdma/sysfs"
)

type stats struct{ calls int }

func (s *stats) PortStatsByName(dev string, port int) (*rdmanl.Stats, error) {
	s.calls++
	return &rdmanl.Stats{Device: dev, Port: port, Counters: []rdmanl.NamedCounter{
		{Name: "rx_write_requests", Value: uint64(10 * s.calls)}, {Name: "cc_rx_ce_pkts", Value: 3}}}, nil
}

// The mlx5 fixture (sysfs/testdata/mlx5-eth) with a netlink stand-in: the
// flow set, the PMA set with octets, hw_counters, netlink, each readable
// through Set.Read except the bare flow set.
func TestDescribeMlx5(t *testing.T) {
	nl := &stats{}
	sets, err := counters.DescribeWith("mlx5_0", &counters.Options{Sysfs: fsAt(t, mlx5Fixture), Netlink: nl, DriverID: abi.RDMA_DRIVER_MLX5})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range sets {
			s.Close()
		}
	}()
	if len(sets) != 4 {
		t.Fatalf("%d sets", len(sets))
	}
	flowSet, pma, hw, nls := sets[0], sets[1], sets[2], sets[3]
	for i, s := range sets {
		if s.ID != i || s.Device != "mlx5_0" {
			t.Errorf("set %d: id %d device %q", i, s.ID, s.Device)
		}
	}
	if flowSet.Counted != counters.CountedFlow || flowSet.Source != counters.SourceVerbs || flowSet.Cached ||
		strings.Join(flowSet.Names, ",") != "packets,bytes" || flowSet.Note == "" {
		t.Errorf("flow set %+v", flowSet)
	}
	if err := flowSet.Read(make([]uint64, 2)); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "Object.AsSet") {
		t.Errorf("reading the bare flow set: %v", err)
	}
	if pma.Source != counters.SourcePMA || pma.Cached || pma.Port != 1 || pma.Counted != counters.CountedPort {
		t.Errorf("pma %+v", pma)
	}
	vals := make([]uint64, len(pma.Names))
	if err := pma.Read(vals); err != nil {
		t.Fatal(err)
	}
	fs, _ := sysfs.New(mlx5Fixture)
	p, _ := fs.Port("mlx5_0", 1)
	raw, _ := p.Counters()
	for i, n := range pma.Names {
		want := raw[n]
		if n == sysfs.CounterXmitData || n == sysfs.CounterRcvData {
			want = sysfs.DataOctets(want)
			if pma.Units[i] != "octets" {
				t.Errorf("%s unit %q", n, pma.Units[i])
			}
		}
		if vals[i] != want {
			t.Errorf("%s = %d, want %d", n, vals[i], want)
		}
	}
	if hw.Source != counters.SourceHwSysfs || !hw.Cached || hw.Lifespan <= 0 {
		t.Errorf("hw %+v", hw)
	}
	v := make([]uint64, len(nls.Names)+2)
	v[len(v)-1] = 77
	if err := nls.Read(v); err != nil || v[0] != 20 || v[1] != 3 || v[len(v)-1] != 77 || nls.Cached {
		t.Errorf("netlink set read %v, %v (entries past Names untouched)", v, err)
	}
	if err := hw.Read(make([]uint64, 1)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("short dst: %v", err)
	}
	hw.Close()
	if err := hw.Read(make([]uint64, len(hw.Names))); err == nil {
		t.Error("read after Close")
	}
}

func TestDescribeErrors(t *testing.T) {
	if _, err := counters.DescribeWith("nosuch0", &counters.Options{Sysfs: fsAt(t, rxeFixture), NoNetlink: true}); err == nil {
		t.Error("unknown device")
	}
	// rxe: no flow set, no PMA, hw_counters only (netlink off).
	sets, err := counters.DescribeWith("rxe0", &counters.Options{Sysfs: fsAt(t, rxeFixture), NoNetlink: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 1 || sets[0].Source != counters.SourceHwSysfs {
		t.Errorf("rxe sets: %+v", sets)
	}
	for _, s := range sets {
		s.Close()
	}
	if !counters.Supported(abi.RDMA_DRIVER_MLX5) || counters.Supported(abi.RDMA_DRIVER_RXE) {
		t.Error("Supported")
	}
}

// A PMA counter the driver cannot fetch ("N/A (no PMA)") is left out of
// the set, as sysfs.Port.Counters leaves it; one that stops reading a
// value after the set was described makes Read fail, naming it; a port
// whose counters/ reads no value at all has no PMA set.
func TestDescribePMAUnavailable(t *testing.T) {
	root := t.TempDir()
	write := sysfstest.FileWriter(t, filepath.Join(root, "class/infiniband/dev0/ports/1/counters"))
	write(sysfs.CounterXmitData, "10\n")
	write("port_rcv_packets", "7\n")
	write("symbol_error", "N/A (no PMA)\n")
	sets, err := counters.DescribeWith("dev0", &counters.Options{Sysfs: fsAt(t, root), NoNetlink: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 1 || sets[0].Source != counters.SourcePMA {
		t.Fatalf("sets: %+v", sets)
	}
	s := sets[0]
	defer s.Close()
	if strings.Join(s.Names, ",") != "port_rcv_packets,port_xmit_data" || strings.Join(s.Units, ",") != "packets,octets" {
		t.Errorf("names %v units %v", s.Names, s.Units)
	}
	vals := make([]uint64, 2)
	if err := s.Read(vals); err != nil || vals[0] != 7 || vals[1] != sysfs.DataOctets(10) {
		t.Errorf("read %v, %v; want [7 %d]", vals, err, sysfs.DataOctets(10))
	}
	write("port_rcv_packets", "N/A (no PMA)\n")
	if err := s.Read(vals); err == nil || !strings.Contains(err.Error(), "port_rcv_packets") {
		t.Errorf("a counter gone N/A: %v, want an error naming it", err)
	}
	write(sysfs.CounterXmitData, "N/A (no PMA)\n")
	sets, err = counters.DescribeWith("dev0", &counters.Options{Sysfs: fsAt(t, root), NoNetlink: true})
	if err != nil || len(sets) != 0 {
		t.Errorf("no counter with a value: %d sets, %v; want none", len(sets), err)
	}
	// A file that is neither a counter nor "N/A (no PMA)" is an error, as
	// sysfs.Port.Counters says.
	write("symbol_error", "garbage\n")
	if sets, err := counters.DescribeWith("dev0", &counters.Options{Sysfs: fsAt(t, root), NoNetlink: true}); err == nil || !strings.Contains(err.Error(), "symbol_error") {
		t.Errorf("a garbage counter: %d sets, %v; want an error naming it", len(sets), err)
	}
}

// fsAt returns the sysfs tree at root (a fixture or a test's directory).
func fsAt(t testing.TB, root string) *sysfs.FS {
	t.Helper()
	fs, err := sysfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
