package exporter

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

// splitSeries returns the sample lines of a text scrape, keyed by name and
// labels, with their values; rdma_exporter_* lines go in a map of their
// own.
func splitSeries(text []byte) (data, health map[string]string) {
	data, health = map[string]string{}, map[string]string{}
	for _, l := range strings.Split(string(text), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if strings.HasPrefix(l, "rdma_exporter_") {
			health[l[:i]] = l[i+1:]
		} else {
			data[l[:i]] = l[i+1:]
		}
	}
	return data, health
}

// The fault table: one bad file on a host of two devices costs only the
// series read from that file (or, for a port directory that cannot be
// listed, that device's port series), rdma_exporter_read_errors says how
// many reads of which device and source failed, and the sources that
// lost series have rdma_exporter_source_up 0. Files the exporter does not
// read (lid, node_guid, pkeys/0, gids) cost nothing. A FIFO in a file's
// place does not hang the scrape, and a file larger than a sysfs attribute
// is refused without reading it all.
func TestFaultIsolation(t *testing.T) {
	const port = "class/infiniband/mlx5_0/ports/1/"
	type bad struct {
		name  string
		file  string
		how   string // "garbage", "fifo" or "huge"
		lost  []string
		errs  map[string]int // source → rdma_exporter_read_errors of mlx5_0
		downs []string       // sources whose source_up is 0
	}
	ib := func(n int) map[string]int { return map[string]int{SourceInfiniBand: n} }
	for _, tc := range []bad{
		{name: "state", file: port + "state", how: "garbage",
			lost: []string{`node_infiniband_state_id{device="mlx5_0",port="1"}`}, errs: ib(1), downs: []string{SourceInfiniBand}},
		{name: "state-fifo", file: port + "state", how: "fifo",
			lost: []string{`node_infiniband_state_id{device="mlx5_0",port="1"}`}, errs: ib(1), downs: []string{SourceInfiniBand}},
		{name: "phys_state", file: port + "phys_state", how: "garbage",
			lost: []string{`node_infiniband_physical_state_id{device="mlx5_0",port="1"}`}, errs: ib(1), downs: []string{SourceInfiniBand}},
		{name: "rate", file: port + "rate", how: "garbage",
			lost: []string{`node_infiniband_rate_bytes_per_second{device="mlx5_0",port="1"}`}, errs: ib(1), downs: []string{SourceInfiniBand}},
		{name: "rate-huge", file: port + "rate", how: "huge",
			lost: []string{`node_infiniband_rate_bytes_per_second{device="mlx5_0",port="1"}`}, errs: ib(1), downs: []string{SourceInfiniBand}},
		{name: "lid", file: port + "lid", how: "garbage"},
		{name: "node_guid", file: "class/infiniband/mlx5_0/node_guid", how: "garbage"},
		{name: "pkeys-0", file: port + "pkeys/0", how: "garbage"},
		{name: "fw_ver-unreadable", file: "class/infiniband/mlx5_0/fw_ver", how: "fifo",
			lost: []string{"info"},
			errs: ib(1), downs: []string{SourceInfiniBand}},
		{name: "pma-counter", file: port + "counters/symbol_error", how: "garbage",
			lost: []string{`node_infiniband_symbol_error_total{device="mlx5_0",port="1"}`}, errs: ib(1), downs: []string{SourceInfiniBand}},
		{name: "pma-counter-fifo", file: port + "counters/port_rcv_data", how: "fifo",
			lost: []string{`node_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1"}`}, errs: ib(1), downs: []string{SourceInfiniBand}},
		{name: "hw-counter", file: port + "hw_counters/out_of_buffer", how: "garbage",
			lost: []string{`node_infiniband_out_of_buffer_drops_total{device="mlx5_0",port="1"}`, `rdma_hw_stat_total{counter="out_of_buffer",device="mlx5_0",port="1"}`},
			errs: map[string]int{SourceInfiniBand: 1, SourceHwCounters: 1}, downs: []string{SourceInfiniBand, SourceHwCounters}},
		{name: "lifespan", file: port + "hw_counters/lifespan", how: "garbage",
			lost: []string{`node_infiniband_lifespan_seconds{device="mlx5_0",port="1"}`}, errs: ib(1), downs: []string{SourceInfiniBand}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := sysfstest.Synthetic(root, 2, 1); err != nil {
				t.Fatal(err)
			}
			if err := sysfstest.SyntheticCounters(root, 2, 1); err != nil {
				t.Fatal(err)
			}
			clean := scrapeOnce(t, root)
			p := filepath.Join(root, tc.file)
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			switch tc.how {
			case "garbage":
				err := os.WriteFile(p, []byte("12abc: x\n"), 0o644)
				if err != nil {
					t.Fatal(err)
				}
			case "fifo":
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			case "huge":
				f, err := os.Create(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Truncate(2 << 30); err != nil { // sparse: 2 GiB
					t.Fatal(err)
				}
				f.Close()
			}
			done := make(chan []byte, 1)
			go func() { done <- scrapeOnce(t, root) }()
			var broken []byte
			select {
			case broken = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the scrape hangs on the bad file")
			}
			cd, _ := splitSeries(clean)
			bd, bh := splitSeries(broken)
			var lost []string
			for k := range cd {
				if _, ok := bd[k]; !ok {
					lost = append(lost, k)
				}
			}
			for k := range bd {
				if _, ok := cd[k]; !ok {
					t.Errorf("a series appeared: %s", k)
				} else if bd[k] != cd[k] {
					t.Errorf("%s changed from %s to %s", k, cd[k], bd[k])
				}
			}
			sort.Strings(lost)
			var want []string
			for _, l := range tc.lost {
				if l == "info" { // mlx5_0's info series, whatever its labels
					for k := range cd {
						if strings.HasPrefix(k, "node_infiniband_info{") && strings.Contains(k, `device="mlx5_0"`) {
							l = k
						}
					}
				}
				want = append(want, l)
			}
			sort.Strings(want)
			if strings.Join(lost, "\n") != strings.Join(want, "\n") {
				t.Errorf("series lost:\n%s\nwant:\n%s", strings.Join(lost, "\n"), strings.Join(want, "\n"))
			}
			for _, src := range []string{SourceInfiniBand, SourceHwCounters, SourceNetlink} {
				for _, dev := range []string{"mlx5_0", "mlx5_1"} {
					want := 0
					if dev == "mlx5_0" {
						want = tc.errs[src]
					}
					k := `rdma_exporter_read_errors{device="` + dev + `",source="` + src + `"}`
					if got := bh[k]; got != strconv.Itoa(want) {
						t.Errorf("%s = %s, want %d", k, got, want)
					}
				}
			}
			for _, src := range Sources {
				want := "1"
				for _, d := range tc.downs {
					if d == src {
						want = "0"
					}
				}
				if got := bh[`rdma_exporter_source_up{source="`+src+`"}`]; got != want {
					t.Errorf("source_up{%s} = %s, want %s", src, got, want)
				}
			}
		})
	}
}

// scrapeOnce is one scrape of a new exporter of root.
func scrapeOnce(t *testing.T, root string) []byte {
	t.Helper()
	var log bytes.Buffer
	e, err := New(Config{SysfsRoot: root, Logger: newTestLogger(&log)})
	if err != nil {
		t.Error(err)
		return nil
	}
	defer e.Close()
	return scrapeText(t, e)
}
