package fakekernel_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
	"github.com/purerdma/rdma/internal/verbs"
	"github.com/purerdma/rdma/uverbs"
)

// rawRead runs UVERBS_METHOD_COUNTERS_READ for handle h into n values.
func rawRead(c *uverbs.Context, h uint32, n int, flags uint32) ([]byte, error) {
	buf := make([]byte, n*8)
	r := abi.NewRequest(c.Core(verbs.Seal{}).API(), uint32(c.DriverID()), abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_READ).
		Handle(abi.UVERBS_ATTR_READ_COUNTERS_HANDLE, h).
		Out(abi.UVERBS_ATTR_READ_COUNTERS_BUFF, buf).
		Flags32(abi.UVERBS_ATTR_READ_COUNTERS_FLAGS, flags)
	err := c.Core(verbs.Seal{}).Invoke(r)
	if err == nil && !r.Valid(abi.UVERBS_ATTR_READ_COUNTERS_BUFF) {
		return nil, errors.New("VALID_OUTPUT not set")
	}
	return buf, err
}

// OpenAllocFree answers COUNTERS_READ the way the strict path does.
func TestAllocFreeReadMatchesStrict(t *testing.T) {
	for _, allocFree := range []bool{false, true} {
		v := verbstest.MLX5()
		b := verbstest.New(t, v)
		b.AllocFree = allocFree
		c := b.Open(t, "mlx5_0")
		qp := verbstest.RawQP(t, c)
		unbound, _ := counters.Create(c, nil)
		cs, _ := counters.Create(c, nil)
		cs.Attach(counters.AttachAttr{Desc: counters.Bytes, Index: 2}, nil)
		cs.Attach(counters.AttachAttr{Desc: counters.Packets, Index: 2}, nil)
		f, err := flow.Create(qp, &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.Eth{}, &flow.Count{Counters: cs}}})
		if err != nil {
			t.Fatal(err)
		}
		v.FlowTraffic(f.Handle(), 2, 200)
		for _, tc := range []struct {
			name   string
			h      uint32
			n      int
			flags  uint32
			errno  syscall.Errno
			value2 uint64
		}{
			{"bound", cs.Handle(), 3, 1, 0, 202},
			{"longer buffer", cs.Handle(), 5, 0, 0, 202},
			{"short buffer", cs.Handle(), 2, 0, syscall.EINVAL, 0},
			{"unbound", unbound.Handle(), 3, 0, syscall.EINVAL, 0},
			{"unknown handle", 999, 3, 0, syscall.ENOENT, 0},
			{"a QP's handle", qp.Handle(), 3, 0, syscall.EINVAL, 0},
			{"unknown flag", cs.Handle(), 3, 2, syscall.EINVAL, 0},
		} {
			buf, err := rawRead(c, tc.h, tc.n, tc.flags)
			var errno syscall.Errno
			errors.As(err, &errno)
			if errno != tc.errno || (err != nil) != (tc.errno != 0) {
				t.Errorf("alloc-free %v, %s: %v, want %v", allocFree, tc.name, err, tc.errno)
				continue
			}
			if err == nil && (buf[16] != byte(tc.value2) || buf[0] != 0) {
				t.Errorf("alloc-free %v, %s: %x", allocFree, tc.name, buf)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// ReceiveFrames: the matching flow with the lowest priority takes a frame.
func TestReceiveFramesPriority(t *testing.T) {
	v := verbstest.MLX5()
	c := verbstest.New(t, v).Open(t, "mlx5_0")
	qp := verbstest.RawQP(t, c)
	mac := flow.MAC{2, 0, 0, 0, 0, 1}
	mk := func(prio uint16, mask flow.MAC) *counters.Object {
		cs, _ := counters.Create(c, nil)
		cs.Attach(counters.AttachAttr{Desc: counters.Packets}, nil)
		if _, err := flow.Create(qp, &flow.Attr{Port: 1, Priority: prio, Specs: []flow.Spec{
			&flow.Eth{Value: flow.EthFilter{DstMAC: mac}, Mask: flow.EthFilter{DstMAC: mask}}, &flow.Count{Counters: cs}}}); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	low := mk(5, flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	high := mk(1, flow.MAC{0xff})
	if _, ok := v.ReceiveFrames(1, mac, 3, 64); !ok {
		t.Fatal("no flow took the frames")
	}
	if _, ok := v.ReceiveFrames(1, [6]byte{3}, 3, 64); ok {
		t.Error("a frame to another MAC was taken")
	}
	st1, _ := v.Counters(high.Handle())
	st2, _ := v.Counters(low.Handle())
	if st1.Packets != 3 || st2.Packets != 0 {
		t.Errorf("priority 1 counted %d, priority 5 counted %d", st1.Packets, st2.Packets)
	}
}
