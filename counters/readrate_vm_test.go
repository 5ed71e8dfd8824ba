//go:build integration

package counters_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/integration/vmtest"
)

// The read rate of one counters object bound to a flow on mock0, read by
// T threads at once: by rdma-core 44's libibverbs with libmlx5 (countersc's
// rate command: T pthreads calling ibv_read_counters) and by this library
// (T goroutines calling Object.Read), in interleaved rounds. The figures
// are logged, never judged: a VM's timing says little about a machine's;
// the test fails only on errors. make bench (mk/bench-vm.sh) runs three
// rounds; make test one, which shows that both sides still read.
const rateWindow = time.Second

var rateThreads = []int{1, 4}

// goReadRate reads cs from threads goroutines for d and returns the reads
// per second and the first error.
func goReadRate(cs *counters.Object, threads int, d time.Duration) (float64, uint64, error) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	counts := make([]uint64, threads)
	errs := make([]error, threads)
	start := time.Now()
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals := make([]uint64, 2)
			n := uint64(0)
			for !stop.Load() {
				if err := cs.Read(vals, 0); err != nil {
					errs[i] = err
					break
				}
				n++
			}
			counts[i] = n
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	secs := time.Since(start).Seconds()
	var total uint64
	for _, n := range counts {
		total += n
	}
	for _, err := range errs {
		if err != nil {
			return 0, total, err
		}
	}
	return float64(total) / secs, total, nil
}

// cReadRate runs countersc's rate command on its object a.
func cReadRate(t *testing.T, step stepper, threads int, d time.Duration) (float64, uint64) {
	t.Helper()
	a := step(fmt.Sprintf("rate a %d %d 2", threads, d.Milliseconds()))
	w := strings.Fields(a)
	if len(w) != 3 || w[0] != "ok" {
		t.Fatalf("countersc rate with %d threads: %s", threads, a)
	}
	rate, err1 := strconv.ParseFloat(w[1], 64)
	n, err2 := strconv.ParseUint(w[2], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("countersc rate: %q", a)
	}
	return rate, n
}

func TestVMReadRate(t *testing.T) {
	vmtest.RequireMock(t)
	countersc(t)

	// Each side keeps its context, its flow (on a MAC of its own) and its
	// object for the whole test; the rounds take turns.
	cs := mock0Counters(t)

	step := cSide(t)
	for _, s := range []string{"create a", "attach a 0 0", "attach a 1 1", "flow f a " + macB.String()} {
		if a := step(s); a != "ok" {
			t.Fatalf("countersc %s: %s", s, a)
		}
	}
	t.Cleanup(func() {
		step("unflow f")
		step("destroy a")
	})
	if a := step("read a 2 0"); !strings.HasPrefix(a, "ok ") {
		t.Fatalf("countersc read: %s", a)
	}
	if err := cs.Read(make([]uint64, 2), 0); err != nil {
		t.Fatal(err)
	}

	goRates := map[int][]float64{}
	cRates := map[int][]float64{}
	var log strings.Builder
	fmt.Fprintf(&log, "\n%-5s %-7s %14s %14s %7s\n", "round", "threads", "C reads/s", "Go reads/s", "Go/C")
	for round := range vmtest.Rounds(1, 3) {
		for _, threads := range rateThreads {
			// The device records every read: clear the record between
			// runs so that it does not grow for the whole test.
			vmtest.ClearMockRequests(t)
			var cr, gr float64
			runC := func() { cr, _ = cReadRate(t, step, threads, rateWindow) }
			runGo := func() {
				var err error
				if gr, _, err = goReadRate(cs, threads, rateWindow); err != nil {
					t.Fatalf("Go read with %d goroutines: %v", threads, err)
				}
			}
			// Alternate which side goes first.
			if round%2 == 0 {
				runC()
				runGo()
			} else {
				runGo()
				runC()
			}
			cRates[threads] = append(cRates[threads], cr)
			goRates[threads] = append(goRates[threads], gr)
			fmt.Fprintf(&log, "%-5d %-7d %14.0f %14.0f %7.2f\n", round+1, threads, cr, gr, gr/cr)
		}
	}
	vmtest.ClearMockRequests(t)
	fmt.Fprintf(&log, "median:\n")
	for _, threads := range rateThreads {
		cm, gm := median(cRates[threads]), median(goRates[threads])
		fmt.Fprintf(&log, "%-5s %-7d %14.0f %14.0f %7.2f\n", "", threads, cm, gm, gm/cm)
	}
	head := fmt.Sprintf("counters read rate, one object, libmlx5 (C threads) and Go (goroutines, GOMAXPROCS %d, %d CPUs) on %s, Linux %s, %v per run:",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), vmtest.MockDev, vmtest.Kernel(), rateWindow)
	t.Log(head + log.String())
	dir := filepath.Join(vmtest.Repo(), "integration", ".cache", "reports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "readrate-"+vmtest.Kernel()+".txt"), []byte(head+log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
