package exporter

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// The descriptors the exporter holds after a scrape are bounded whatever
// the number of devices: DefaultMaxOpenFiles sysfs files, however many
// devices of two mlx5 ports (45 files each: state, phys_state, rate, 21
// PMA counters, 20 hw_counters) there are. A scrape that holds none, and
// one that holds some, say the same.
func TestOpenFilesBounded(t *testing.T) {
	for _, n := range []int{64, 1024} {
		t.Run(fmt.Sprintf("devices=%d", n), func(t *testing.T) {
			if n > 64 && testing.Short() {
				t.Skip("-short: 1,024 devices take a few seconds to write")
			}
			root := t.TempDir()
			if err := sysfstest.Synthetic(root, n, 2); err != nil {
				t.Fatal(err)
			}
			if err := sysfstest.SyntheticCounters(root, n, 2); err != nil {
				t.Fatal(err)
			}
			before := openFDs(t)
			e, err := New(Config{SysfsRoot: root})
			if err != nil {
				t.Fatal(err)
			}
			got := scrapeText(t, e)
			held := openFDs(t) - before
			t.Logf("%d devices: %d descriptors held after a scrape (limit %d), %d bytes scraped", n, held, DefaultMaxOpenFiles, len(got))
			if held > DefaultMaxOpenFiles {
				t.Errorf("%d devices: %d descriptors held after a scrape, want at most %d", n, held, DefaultMaxOpenFiles)
			}
			if again := scrapeText(t, e); !bytes.Equal(again, got) {
				t.Errorf("%d devices: the second scrape differs from the first", n)
			}
			e.Close()
			if left := openFDs(t) - before; left > 0 {
				t.Errorf("%d descriptors left after Close", left)
			}
			none, err := New(Config{SysfsRoot: root, MaxOpenFiles: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer none.Close()
			if b := scrapeText(t, none); !bytes.Equal(b, got) {
				t.Errorf("%d devices: the scrape holding no file differs from the one holding %d", n, DefaultMaxOpenFiles)
			}
			if n <= 64 {
				all, err := New(Config{SysfsRoot: root, MaxOpenFiles: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				defer all.Close()
				if b := scrapeText(t, all); !bytes.Equal(b, got) {
					t.Errorf("%d devices: the scrape holding every file differs", n)
				}
				if held := openFDs(t) - before; held < n*2*40 {
					t.Errorf("unlimited: %d descriptors held, want every file's", held)
				}
			}
			if c := bytes.Count(got, []byte("\nnode_infiniband_symbol_error_total{")); c != n*2 {
				t.Errorf("%d symbol_error series, want %d", c, n*2)
			}
		})
	}
}
