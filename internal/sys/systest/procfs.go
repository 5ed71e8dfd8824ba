package systest

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// OpenFDs returns how many descriptors the process has open.
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// DeviceMappings returns how many of the process's memory mappings are
// of files under /dev/infiniband (queues the kernel mapped for us).
func DeviceMappings(t testing.TB) int {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		if strings.Contains(s.Text(), "/dev/infiniband/") {
			n++
		}
	}
	return n
}

// Settle runs the garbage collector until cond holds (cleanups of
// unreachable objects run after a collection, on their own goroutine),
// or fails after limit.
func Settle(t testing.TB, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not settled after %v of garbage collections (descriptors %d, device mappings %d)", limit, OpenFDs(t), DeviceMappings(t))
		}
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
}
