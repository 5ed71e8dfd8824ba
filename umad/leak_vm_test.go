//go:build integration

package umad

import (
	"runtime"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/internal/sys/systest"
)

// Ports dropped without Close give back their descriptors (and the
// kernel its agents) once the garbage collector finds them unreachable.
func TestVMDroppedPortsReleaseEverything(t *testing.T) {
	vmtest.Require(t)
	runtime.GC()
	fds0 := systest.OpenFDs(t)
	const n = 1000
	for i := 0; i < n; i++ {
		p, err := OpenPort(vmtest.Dev0, 1)
		if err != nil {
			t.Fatalf("port %d: %v", i, err)
		}
		if _, err := p.Register(ClassPerfMgmt, 1, MethodMask{}); err != nil {
			t.Fatalf("port %d: %v", i, err)
		}
		if i%100 == 99 {
			runtime.GC()
		}
	}
	systest.Settle(t, 60*time.Second, func() bool { return systest.OpenFDs(t) <= fds0 })
	t.Logf("Linux %s: %d umad ports dropped without Close; descriptors %d → %d", vmtest.Kernel(), n, fds0, systest.OpenFDs(t))
}
