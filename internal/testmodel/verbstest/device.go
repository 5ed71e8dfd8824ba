package verbstest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/internal/sys/systest"
	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
	"github.com/purerdma/rdma/uverbs"
)

// OnMock reports whether the tests of counters and flow run on the real
// kernel: in the vmrun guest with the test device mock0, an mlx5 model
// behind the real ib_uverbs core (integration/mockrdma).
func OnMock() bool { return vmtest.HasMock() }

// MLX5Device opens the mlx5 device the counters and flow tests run on, so
// that one test body runs on two backends: on the host the strict fake
// mlx5_0 (returned, for the tests that look inside it), in the vmrun guest
// mock0 on the real kernel (the fake is nil there). The context is closed
// with the test; on mock0 the device's record of requests starts empty.
func MLX5Device(t testing.TB) (*fakekernel.Verbs, *uverbs.Context) {
	t.Helper()
	if !OnMock() {
		v := MLX5()
		return v, New(t, v).Open(t, "mlx5_0")
	}
	c, err := uverbs.Open(vmtest.MockDev, nil)
	if err != nil {
		t.Fatalf("open %s: %v", vmtest.MockDev, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close %s: %v", vmtest.MockDev, err)
		}
	})
	vmtest.ClearMockRequests(t)
	return nil, c
}

// MinFrame is the shortest Ethernet frame without its FCS: a frame is
// counted from its destination MAC to the end of its payload.
const MinFrame = 60

// Frames delivers n Ethernet frames of size bytes each (MinFrame at
// least) to dst on port 1 of the device: the fake counts them as one rule
// hit per frame on the flow that takes them; on mock0 they are real frames
// sent from veth0, with source MAC 00:00:00:00:00:00 (what the flow of
// ibv_read_counters(3)'s example matches, its source mask being all ones).
func Frames(t testing.TB, v *fakekernel.Verbs, dst [6]byte, n, size uint64) {
	t.Helper()
	if size < MinFrame {
		t.Fatalf("a %d-byte frame: an Ethernet frame has %d bytes at least", size, MinFrame)
	}
	if v != nil {
		v.ReceiveFrames(1, dst, n, size)
		return
	}
	vmtest.SendFrames(t, int(n), &vmtest.Frame{Dst: dst, Src: make([]byte, 6), Len: int(size)})
}

var (
	mockPoints = regexp.MustCompile(`ncounters_data=1 ncounters=(\d+)`)
	mockFlags  = regexp.MustCompile(`flags=(0x[0-9a-f]+|0)`)
)

// Events returns what the device's driver was asked, in words the fake's
// log and mock0's record share: "create counters", "create flow" (no
// count action), "create flow pairs N" and "create flow no pairs" (a count
// action with or without mlx5's (description, index) pairs), "read flags
// F" (a read that reached the driver and succeeded), "destroy flow",
// "destroy counters", "destroy qp", "destroy cq". Failed requests are
// left out.
func Events(t testing.TB, v *fakekernel.Verbs) []string {
	t.Helper()
	var ev []string
	if v != nil {
		for _, l := range v.Log() {
			f := strings.Fields(l)
			switch {
			case strings.HasPrefix(l, "create counters"):
				ev = append(ev, "create counters")
			case strings.HasPrefix(l, "destroy counters"):
				ev = append(ev, "destroy counters")
			case strings.HasPrefix(l, "destroy flow"):
				ev = append(ev, "destroy flow")
			case strings.HasPrefix(l, "destroy qp"):
				ev = append(ev, "destroy qp")
			case strings.HasPrefix(l, "destroy cq"):
				ev = append(ev, "destroy cq")
			case strings.HasPrefix(l, "read counters"):
				ev = append(ev, "read flags "+f[len(f)-1])
			case strings.HasPrefix(l, "create flow") && strings.HasSuffix(l, "no pairs"):
				ev = append(ev, "create flow no pairs")
			case strings.HasPrefix(l, "create flow") && len(f) == 7:
				ev = append(ev, "create flow pairs "+f[6])
			case strings.HasPrefix(l, "create flow"):
				ev = append(ev, "create flow")
			}
		}
		return ev
	}
	for _, l := range vmtest.MockRequests(t) {
		ok := strings.HasSuffix(l, "-> 0")
		switch {
		case strings.HasPrefix(l, "create_counters"):
			ev = append(ev, "create counters")
		case strings.HasPrefix(l, "destroy_counters"):
			ev = append(ev, "destroy counters")
		case strings.HasPrefix(l, "destroy_flow"):
			ev = append(ev, "destroy flow")
		case strings.HasPrefix(l, "destroy_qp"):
			ev = append(ev, "destroy qp")
		case strings.HasPrefix(l, "destroy_cq"):
			ev = append(ev, "destroy cq")
		case strings.HasPrefix(l, "read_counters") && ok:
			fl := "0"
			if m := mockFlags.FindStringSubmatch(l); m != nil && m[1] != "0" {
				fl = strings.TrimPrefix(m[1], "0x")
			}
			ev = append(ev, "read flags "+fl)
		case strings.HasPrefix(l, "create_flow") && ok && strings.Contains(l, "COUNT{"):
			if m := mockPoints.FindStringSubmatch(l); m != nil {
				ev = append(ev, "create flow pairs "+m[1])
			} else {
				ev = append(ev, "create flow no pairs")
			}
		case strings.HasPrefix(l, "create_flow") && ok:
			ev = append(ev, "create flow")
		}
	}
	return ev
}

// Count returns how many events start with prefix.
func Count(ev []string, prefix string) int {
	n := 0
	for _, e := range ev {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// SetNetRaw grants (on) or withdraws CAP_NET_RAW for flow creation: on the
// fake it is the device's switch; on mock0 the capability leaves (and comes
// back to) the effective set of every thread of the test process, since
// the kernel checks the calling thread's. The test ends with it granted.
func SetNetRaw(t testing.TB, v *fakekernel.Verbs, on bool) {
	t.Helper()
	if v != nil {
		v.NetRaw = on
		return
	}
	if err := systest.SetEffectiveNetRaw(on); err != nil {
		t.Fatal(err)
	}
	if !on {
		t.Cleanup(func() {
			if err := systest.SetEffectiveNetRaw(true); err != nil {
				t.Error(err)
			}
		})
	}
}
