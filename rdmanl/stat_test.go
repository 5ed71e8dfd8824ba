package rdmanl

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/purerdma/rdma/abi"
)

// encodeQPCounters lays out one message of a STAT_GET QP dump as
// res_get_common_dumpit and fill_res_counter_entry (nldev.c) do.
func encodeQPCounters(cs []QPCounter, index uint32, name string, pad bool) []byte {
	e := &nlEnc{pad: pad}
	e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, index)
	e.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, name)
	e.nest(abi.RDMA_NLDEV_ATTR_STAT_COUNTER, true, nlmsgHdrLen, func(t *nlEnc, base int) {
		for _, c := range cs {
			t.nest(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY, true, base, func(en *nlEnc, base int) {
				en.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, c.Port)
				en.u32(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ID, c.ID)
				en.u32(abi.RDMA_NLDEV_ATTR_STAT_MODE, c.Mode)
				if c.QPType != nil {
					en.u8(abi.RDMA_NLDEV_ATTR_RES_TYPE, *c.QPType)
				}
				if c.PID != nil {
					en.u32(abi.RDMA_NLDEV_ATTR_RES_PID, *c.PID)
				}
				if c.KernName != nil {
					en.str(abi.RDMA_NLDEV_ATTR_RES_KERN_NAME, *c.KernName)
				}
				if c.Counters != nil {
					en.nest(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, true, base, func(h *nlEnc, base int) {
						for _, hc := range c.Counters {
							h.nest(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, true, base, func(x *nlEnc, base int) {
								x.str(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, hc.Name)
								x.u64(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, hc.Value, base)
							})
						}
					})
				}
				if c.QPNs != nil {
					en.nest(abi.RDMA_NLDEV_ATTR_RES_QP, true, base, func(q *nlEnc, base int) {
						for _, n := range c.QPNs {
							q.nest(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, true, base, func(x *nlEnc, base int) {
								x.u32(abi.RDMA_NLDEV_ATTR_RES_LQPN, n)
							})
						}
					})
				}
			})
		}
	})
	return e.b
}

func encodeCounterMode(m PortCounterMode, pad bool) []byte {
	e := &nlEnc{pad: pad}
	e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, m.Index)
	e.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, m.Device)
	e.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, m.Port)
	e.u32(abi.RDMA_NLDEV_ATTR_STAT_MODE, m.Mode)
	if m.Mask != nil {
		e.u32(abi.RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, *m.Mask)
	}
	return e.b
}

var sampleQPCounters = []QPCounter{
	{Device: "mock0", Index: 2, Port: 1, ID: 1, Mode: CounterModeAuto, QPType: ptr[uint8](8), PID: ptr[uint32](321),
		Counters: []NamedCounter{{"out_of_buffer", 17}}, QPNs: []uint32{257, 259}},
	{Device: "mock0", Index: 2, Port: 1, ID: 2, Mode: CounterModeManual, KernName: ptr("ib_ipoib"),
		Counters: []NamedCounter{{"out_of_buffer", math.MaxUint64}}, QPNs: []uint32{300}},
}

func TestDecodeQPCounters(t *testing.T) {
	for _, pad := range []bool{false, true} {
		got, err := decodeQPCounters(encodeQPCounters(sampleQPCounters, 2, "mock0", pad))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sampleQPCounters, got); diff != "" {
			t.Errorf("pad %v:\n%s", pad, diff)
		}
	}
	fake := &Conn{exec: func(cmd, flags uint16, attrs []nlAttr) ([][]byte, error) {
		if cmd != abi.RDMA_NLDEV_CMD_STAT_GET || len(attrs) != 2 || attrs[1].typ != abi.RDMA_NLDEV_ATTR_STAT_RES {
			t.Errorf("request %d %v", cmd, attrs)
		}
		return [][]byte{encodeQPCounters(sampleQPCounters[:1], 2, "mock0", true), encodeQPCounters(sampleQPCounters[1:], 2, "mock0", false)}, nil
	}}
	got, err := fake.QPCounters(2)
	if err != nil || len(got) != 2 || got[1].ID != 2 {
		t.Errorf("QPCounters = %+v, %v", got, err)
	}
	// bad input: an entry without its id, a short LQPN, no device name
	bad := encodeQPCounters([]QPCounter{{Port: 1, Mode: 1}}, 2, "mock0", false)
	if _, err := decodeQPCounters(bad); err != nil {
		t.Errorf("id 0 is an id: %v", err)
	}
	e := &nlEnc{}
	e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 1)
	e.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, "x")
	e.nest(abi.RDMA_NLDEV_ATTR_STAT_COUNTER, true, nlmsgHdrLen, func(t *nlEnc, base int) {
		t.nest(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY, true, base, func(en *nlEnc, base int) {
			en.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
		})
	})
	if _, err := decodeQPCounters(e.b); err == nil || !strings.Contains(err.Error(), "without the port, the counter id or the mode") {
		t.Errorf("entry without id: %v", err)
	}
	e = &nlEnc{}
	e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 1)
	if _, err := decodeQPCounters(e.b); err == nil {
		t.Error("no device name: no error")
	}
	m := PortCounterMode{Device: "mock0", Index: 2, Port: 1, Mode: CounterModeAuto, Mask: ptr[uint32](abi.RDMA_COUNTER_MASK_QP_TYPE)}
	if got, err := decodeCounterMode(encodeCounterMode(m, false)); err != nil || !cmp.Equal(got, m) {
		t.Errorf("mode %+v %v", got, err)
	}
	if _, err := decodeCounterMode(encodeCounterMode(m, false)[:8]); err == nil {
		t.Error("a mode reply without the name decoded")
	}
}

func FuzzDecodeQPCounters(f *testing.F) {
	f.Add(encodeQPCounters(sampleQPCounters, 2, "mock0", false))
	f.Add(encodeQPCounters(sampleQPCounters[1:], 7, "mlx5_0", true))
	f.Add(encodeQPCounters(nil, 0, "x", false))
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := decodeQPCounters(b)
		if err != nil || len(cs) == 0 {
			return
		}
		for _, pad := range []bool{false, true} {
			cs2, err := decodeQPCounters(encodeQPCounters(cs, cs[0].Index, cs[0].Device, pad))
			if err != nil {
				t.Fatalf("re-decode: %v", err)
			}
			if diff := cmp.Diff(cs, cs2); diff != "" {
				t.Fatalf("round trip (pad %v):\n%s", pad, diff)
			}
		}
	})
}

func FuzzDecodeCounterMode(f *testing.F) {
	f.Add(encodeCounterMode(PortCounterMode{Device: "mock0", Index: 2, Port: 1, Mode: 1, Mask: ptr[uint32](1)}, false))
	f.Add(encodeCounterMode(PortCounterMode{Device: "rxe0", Port: 1}, true))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeCounterMode(b)
		if err != nil {
			return
		}
		m2, err := decodeCounterMode(encodeCounterMode(m, false))
		if err != nil || !cmp.Equal(m, m2) {
			t.Fatalf("round trip: %+v, %+v, %v", m, m2, err)
		}
	})
}
