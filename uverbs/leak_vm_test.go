//go:build integration

package uverbs

import (
	"runtime"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/sys/systest"
)

// The safety net: contexts dropped without Close, each with a CQ and a QP
// (so with mapped queues), give back their descriptors and mappings once
// the garbage collector finds them unreachable.
func TestVMDroppedContextsReleaseEverything(t *testing.T) {
	vmtest.Require(t)
	settle := func() {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
		runtime.GC()
	}
	settle()
	fds0, maps0, bytes0 := systest.OpenFDs(t), systest.DeviceMappings(t), sys.Mapped()
	const n = 1000
	for i := 0; i < n; i++ {
		c, err := Open(vmtest.Dev0, nil)
		if err != nil {
			t.Fatalf("context %d: %v", i, err)
		}
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(CQAttr{CQE: 16})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			runtime.GC() // let earlier contexts go before the descriptor limit
		}
	}
	t.Logf("after the loop: descriptors %d, device mappings %d, bytes mapped %d", systest.OpenFDs(t), systest.DeviceMappings(t), sys.Mapped())
	systest.Settle(t, 60*time.Second, func() bool {
		return systest.OpenFDs(t) <= fds0 && systest.DeviceMappings(t) <= maps0 && sys.Mapped() <= bytes0
	})
	t.Logf("Linux %s: %d contexts dropped without Close; descriptors %d → %d, device mappings %d → %d, bytes mapped %d → %d",
		vmtest.Kernel(), n, fds0, systest.OpenFDs(t), maps0, systest.DeviceMappings(t), bytes0, sys.Mapped())
}
