package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

func openFDCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// Under a FileLimit the sets hold at most the limit, first come first
// served, read what the unlimited sets read, allocate nothing reading
// the files they do not hold, and give the descriptors back on Close.
func TestFileLimit(t *testing.T) {
	root := t.TempDir()
	if err := sysfstest.Synthetic(root, 2, 2); err != nil {
		t.Fatal(err)
	}
	if err := sysfstest.SyntheticCounters(root, 2, 2); err != nil {
		t.Fatal(err)
	}
	plain, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 5, 30, 1000} {
		lim := NewFileLimit(n)
		f := plain.WithFileLimit(lim)
		before := openFDCount(t)
		var sets []*HwCounterSet
		var pmas []*CounterSet
		var rs []*PortStatusReader
		for _, ca := range []string{"mlx5_0", "mlx5_1"} {
			for port := 1; port <= 2; port++ {
				hw, err := f.OpenHwCounters(ca, port)
				if err != nil {
					t.Fatal(err)
				}
				cs, err := f.OpenCounters(ca, port)
				if err != nil {
					t.Fatal(err)
				}
				r, err := f.OpenStatus(ca, port)
				if err != nil {
					t.Fatal(err)
				}
				sets, pmas, rs = append(sets, hw), append(pmas, cs), append(rs, r)

				whw, _ := plain.OpenHwCounters(ca, port)
				want, got := make([]uint64, 32), make([]uint64, 32)
				ok := make([]bool, 32)
				if err := whw.ReadValues(want); err != nil {
					t.Fatal(err)
				}
				if failed, err := hw.ReadAll(got, ok); failed != 0 || err != nil {
					t.Fatalf("limit %d: ReadAll: %d failed, %v", n, failed, err)
				}
				for i := range whw.Names() {
					if got[i] != want[i] || !ok[i] {
						t.Errorf("limit %d: %s = %d (ok %v), want %d", n, whw.Names()[i], got[i], ok[i], want[i])
					}
				}
				whw.Close()
				var st, wst PortStatus
				wr, _ := plain.OpenStatus(ca, port)
				wr.Read(&wst)
				wr.Close()
				if oks, failed, err := r.ReadEach(&st); failed != 0 || err != nil || oks != [3]bool{true, true, true} || st != wst {
					t.Errorf("limit %d: ReadEach %+v %v %d %v, want %+v", n, st, oks, failed, err, wst)
				}
			}
		}
		total := 0
		for i := range sets {
			total += len(sets[i].Names()) + len(pmas[i].Names()) + 3
		}
		held := openFDCount(t) - before
		if want := min(n, total); held != want || lim.Held() != want {
			t.Errorf("limit %d: %d descriptors held (Held %d), want %d", n, held, lim.Held(), want)
		}
		vals, ok := make([]uint64, 32), make([]bool, 32)
		var st PortStatus
		read := func() {
			for i := range sets {
				sets[i].ReadAll(vals, ok)
				pmas[i].ReadAll(vals, ok)
				rs[i].ReadEach(&st)
			}
		}
		if a := testing.AllocsPerRun(5, read); a != 0 {
			t.Errorf("limit %d: %v allocations a read", n, a)
		}
		for i := range sets {
			sets[i].Close()
			pmas[i].Close()
			rs[i].Close()
			sets[i].Close() // idempotent
			if _, err := sets[i].ReadAll(vals, ok); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("ReadAll after Close: %v", err)
			}
		}
		if left := openFDCount(t) - before; left != 0 || lim.Held() != 0 {
			t.Errorf("limit %d: %d descriptors left after Close (Held %d)", n, left, lim.Held())
		}
	}
}

// Under a limit one bad file fails alone: its counter is not ok and
// counted, the others read; a FIFO in a counter's place is refused
// without blocking; a status file that cannot be read leaves the other
// two fields read.
func TestReadAllIsolatesFiles(t *testing.T) {
	root := t.TempDir()
	if err := sysfstest.Synthetic(root, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := sysfstest.SyntheticCounters(root, 1, 1); err != nil {
		t.Fatal(err)
	}
	port := filepath.Join(root, "class/infiniband/mlx5_0/ports/1")
	os.WriteFile(filepath.Join(port, "hw_counters/out_of_buffer"), []byte("x1\n"), 0o644)
	os.Remove(filepath.Join(port, "counters/symbol_error"))
	if err := syscall.Mkfifo(filepath.Join(port, "counters/symbol_error"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(port, "state"), []byte("garbage\n"), 0o644)
	plain, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1000} {
		f := plain.WithFileLimit(NewFileLimit(n))
		hw, err := f.OpenHwCounters("mlx5_0", 1)
		if err != nil {
			t.Fatal(err)
		}
		vals, ok := make([]uint64, 32), make([]bool, 32)
		failed, err := hw.ReadAll(vals, ok)
		if failed != 1 || err == nil {
			t.Errorf("limit %d: hw ReadAll: %d failed, %v", n, failed, err)
		}
		for i, name := range hw.Names() {
			if ok[i] == (name == "out_of_buffer") {
				t.Errorf("limit %d: %s ok %v", n, name, ok[i])
			}
		}
		hw.Close()
		cs, err := f.OpenCounters("mlx5_0", 1)
		if err != nil {
			t.Fatalf("limit %d: a FIFO fails the set: %v", n, err)
		}
		failed, err = cs.ReadAll(vals, ok)
		var nr interface{ Error() string }
		if failed != 1 || err == nil || !errors.As(err, &nr) {
			t.Errorf("limit %d: PMA ReadAll: %d failed, %v", n, failed, err)
		}
		cs.Close()
		r, err := f.OpenStatus("mlx5_0", 1)
		if err != nil {
			t.Fatal(err)
		}
		var st PortStatus
		oks, failed, err := r.ReadEach(&st)
		if oks != [3]bool{false, true, true} || failed != 1 || err == nil || !st.HasRate || st.PhysState != 5 {
			t.Errorf("limit %d: ReadEach %+v %v %d %v", n, st, oks, failed, err)
		}
		r.Close()
	}
}

// CAAttr reads one attribute; a missing one is os.ErrNotExist; a bad name
// is refused without looking.
func TestCAAttr(t *testing.T) {
	f := fixture(t, "mlx5-ib")
	ca, err := f.CA("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := f.CAAttr("mlx5_0", "fw_ver"); err != nil || s != *ca.FWVersion {
		t.Errorf("fw_ver %q %v, want %q", s, err, *ca.FWVersion)
	}
	for _, bad := range [][2]string{{"mlx5_0", "nonesuch"}, {"mlx5_0", "../mlx5_0"}, {"nonesuch", "fw_ver"}, {"..", "fw_ver"}} {
		if _, err := f.CAAttr(bad[0], bad[1]); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("CAAttr(%q, %q): %v", bad[0], bad[1], err)
		}
	}
	hw, err := fixture(t, "hfi1").OpenCAHwCounters("hfi1_0")
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Close()
	want, _ := mustCA(t, fixture(t, "hfi1"), "hfi1_0").HwCounters()
	vals, ok := make([]uint64, len(hw.Names())), make([]bool, len(hw.Names()))
	if failed, err := hw.ReadAll(vals, ok); failed != 0 || err != nil || len(hw.Names()) != len(want) {
		t.Fatalf("device hw counters: %d failed, %v, %d names, want %d", failed, err, len(hw.Names()), len(want))
	}
	for i, n := range hw.Names() {
		if vals[i] != want[n] {
			t.Errorf("%s = %d, want %d", n, vals[i], want[n])
		}
	}
	if _, err := f.OpenCAHwCounters("mlx5_0"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("mlx5 device-wide hw counters: %v", err)
	}
	if _, err := f.OpenCAHwCounters("nonesuch"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no such device: %v", err)
	}
	if _, err := f.OpenCountersExt("mlx5_0", 1); !errors.Is(err, ErrNotSupported) {
		t.Errorf("counters_ext on a new kernel: %v", err)
	}
}

func mustCA(t *testing.T, f *FS, name string) *CA {
	t.Helper()
	ca, err := f.CA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}
