package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

// A CounterSet reads what Port.Counters reads (N/A and failed counters
// left out), a PortStatusReader what Port holds, on every fixture port.
func TestReusableReadersMatch(t *testing.T) {
	for _, name := range []string{"mlx5-ib", "mlx5-eth", "hfi1", "iwarp-old", "rxe-6.1", "ib-switch"} {
		t.Run(name, func(t *testing.T) {
			cas, err := fixture(t, name).CAs()
			if err != nil {
				t.Fatal(err)
			}
			for _, ca := range cas {
				for _, p := range ca.Ports {
					want, werr := p.Counters()
					cs, err := p.OpenCounters()
					if (werr == nil) != (err == nil) || (err != nil && errors.Is(werr, ErrNotSupported) != errors.Is(err, ErrNotSupported)) {
						t.Fatalf("%s: Counters error %v, OpenCounters error %v", p.Name(), werr, err)
					}
					if err == nil {
						vals, ok := make([]uint64, len(cs.Names())), make([]bool, len(cs.Names()))
						if err := cs.ReadValues(vals, ok); err != nil {
							t.Fatal(err)
						}
						got := Counters{}
						for i, n := range cs.Names() {
							if ok[i] {
								got[n] = vals[i]
							}
						}
						if len(got) != len(want) {
							t.Errorf("%s: CounterSet %v, Counters %v", p.Name(), got, want)
						}
						for k, v := range want {
							if got[k] != v {
								t.Errorf("%s: %s = %d, Counters says %d", p.Name(), k, got[k], v)
							}
						}
						if err := cs.ReadValues(vals[:0], ok); err == nil {
							t.Error("ReadValues into a short slice succeeded")
						}
						cs.Close()
						if len(cs.Names()) > 0 {
							if err := cs.ReadValues(vals, ok); !errors.Is(err, fs.ErrClosed) {
								t.Errorf("read after Close: %v", err)
							}
						}
					}
					r, err := p.OpenStatus()
					if err != nil {
						t.Fatal(err)
					}
					var st PortStatus
					for i := 0; i < 2; i++ {
						if err := r.Read(&st); err != nil {
							t.Fatal(err)
						}
						if st.State != p.State || st.PhysState != p.PhysState || st.HasRate != (p.Rate != nil) || (p.Rate != nil && st.Rate != *p.Rate) {
							t.Errorf("%s: status %+v, port %v %v %v", p.Name(), st, p.State, p.PhysState, p.Rate)
						}
					}
					r.Close()
					r.Close()
					if err := r.Read(&st); !errors.Is(err, fs.ErrClosed) {
						t.Errorf("read after Close: %v", err)
					}
				}
			}
		})
	}
}

// Once open, the readers and the watch allocate nothing while the files
// do not change, and a status file's new text is seen.
func TestReusableReadersAllocateNothing(t *testing.T) {
	root := t.TempDir()
	if err := sysfstest.Synthetic(root, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := sysfstest.SyntheticCounters(root, 2, 1); err != nil {
		t.Fatal(err)
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Port("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := p.OpenCounters()
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	hw, err := p.OpenHwCounters()
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Close()
	r, err := p.OpenStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := f.WatchCAs()
	vals, ok, hwVals := make([]uint64, 32), make([]bool, 32), make([]uint64, 32)
	var st PortStatus
	read := func() {
		if err := cs.ReadValues(vals, ok); err != nil {
			t.Fatal(err)
		}
		if err := hw.ReadValues(hwVals); err != nil {
			t.Fatal(err)
		}
		if err := r.Read(&st); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Changed(); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if n := testing.AllocsPerRun(20, read); n != 0 {
		t.Errorf("%v allocations per read", n)
	}
	stateFile := filepath.Join(root, "class/infiniband/mlx5_0/ports/1/state")
	if err := os.WriteFile(stateFile, []byte("1: DOWN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Read(&st); err != nil || st.State != rdma.PortDown || st.Rate.Mbps != 100000 {
		t.Errorf("after the state changed: %+v %v", st, err)
	}
}

// The watch reports the first call, a device added, removed, or removed
// and added again under the same name, and nothing else; a tree without
// class/infiniband lists no devices.
func TestCAWatch(t *testing.T) {
	root := t.TempDir()
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	w := f.WatchCAs()
	step := func(what string, want bool) {
		t.Helper()
		got, err := w.Changed()
		if err != nil || got != want {
			t.Errorf("%s: Changed() = %v, %v; want %v", what, got, err, want)
		}
	}
	step("first call, no class/infiniband", true)
	step("again", false)
	if err := sysfstest.Synthetic(root, 2, 1); err != nil {
		t.Fatal(err)
	}
	step("two devices", true)
	step("unchanged", false)
	dev := filepath.Join(root, "class/infiniband/mlx5_1")
	if err := os.Rename(dev, dev+"x"); err != nil {
		t.Fatal(err)
	}
	step("renamed", true)
	if err := os.RemoveAll(dev + "x"); err != nil {
		t.Fatal(err)
	}
	step("removed", true)
	step("unchanged", false)
	d0 := filepath.Join(root, "class/infiniband/mlx5_0")
	if err := os.RemoveAll(d0); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "class/infiniband/mlx5_1"), 0o755); err != nil { // takes a new inode
		t.Fatal(err)
	}
	if err := os.MkdirAll(d0, 0o755); err != nil {
		t.Fatal(err)
	}
	step("removed and added again", true)

	fw := fixture(t, "mlx5-ib").WatchCAs()
	if c, err := fw.Changed(); !c || err != nil {
		t.Errorf("fixture first call: %v %v", c, err)
	}
	if c, err := fw.Changed(); c || err != nil {
		t.Errorf("fixture second call: %v %v", c, err)
	}
}
