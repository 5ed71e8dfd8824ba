//go:build integration

package counters_test

import (
	"testing"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
)

// TestVMReadIntoStackAtEveryDepth is TestReadIntoStackAtEveryDepth on
// mock0: mlx5's kernel writes the values of an object no frame has
// reached (zeros) into an array on the reading goroutine's stack, at
// every depth, wherever the stack has moved to before the system call.
func TestVMReadIntoStackAtEveryDepth(t *testing.T) {
	vmtest.RequireMock(t)
	cs := mock0Counters(t)
	if bad := readsAtEveryDepth(cs, 600, [2]uint64{}); bad != "" {
		t.Fatal(bad)
	}
}

// mock0Counters returns a counters object on mock0 with packets at 0 and
// bytes at 1, bound to an L2 flow on macA of a raw QP of its own; the
// test's cleanup destroys them.
func mock0Counters(t *testing.T) *counters.Object {
	t.Helper()
	_, c := verbstest.MLX5Device(t)
	qp := verbstest.RawQP(t, c)
	cs, err := counters.Create(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for _, p := range []counters.AttachAttr{pkts(0), bytesAt(1)} {
		if err := cs.Attach(p, nil); err != nil {
			t.Fatal(err)
		}
	}
	f, err := flow.Create(qp, l2(macA, cs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return cs
}
