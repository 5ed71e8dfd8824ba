package counters_test

// mlx5's and the kernel's counters rules beyond the man pages
// (mlx5 counters.c mlx5_ib_flow_counters_set_data, rdma-core providers/mlx5/verbs.c mlx5_attach_counters_point_flow), checked on the fake kernel, partly with raw
// EX_CREATE_FLOW requests that the library would never send.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
	"github.com/purerdma/rdma/internal/verbs"
)

func TestMlx5_LayoutSentOncePerBinding(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0), bytesAt(1))
	f1 := e.flow(t, macA, cs)
	f2 := e.flow(t, macB, cs)
	if err := f1.Close(); err != nil {
		t.Fatal(err)
	}
	f3 := e.flow(t, macA, cs) // f2 still bound: no pairs
	for _, f := range []*flow.Flow{f2, f3} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st, ok := e.state(cs.Handle()); ok && (st.Described || st.Users != 0 || !st.HW) {
		t.Errorf("after the last flow: %+v (description forgotten, hardware counter kept)", st)
	}
	e.flow(t, macA, cs) // unbound again: the pairs again
	if got := e.pairs(); fmt.Sprint(got) != "[2 -1 -1 2]" {
		t.Errorf("pairs per flow: %v, want [2 -1 -1 2] (events %v)", got, e.events())
	}
	if cs.Bound() != 1 {
		t.Errorf("Bound() = %d", cs.Bound())
	}
}

// rawFlow sends EX_CREATE_FLOW for an L2 flow with a count action on
// handle h and the given mlx5 driver data, as another library might; a
// flow it creates is destroyed with the test through EX_DESTROY_FLOW.
func rawFlow(t *testing.T, e *env, h uint32, drv []byte) error {
	t.Helper()
	a := &flow.Attr{Port: 1, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: macA}, Mask: flow.EthFilter{DstMAC: all}},
		&flow.Count{Handle: h},
	}}
	core := make([]byte, 8)
	binary.LittleEndian.PutUint32(core[4:], e.qp.Handle())
	core, err := a.AppendBinary(core)
	if err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, 8)
	err = e.c.Core(verbs.Seal{}).Invoke(abi.InvokeWrite(e.c.Core(verbs.Seal{}).API(), uint32(e.c.DriverID()), abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_CREATE_FLOW, core, resp, drv, nil))
	if err == nil {
		t.Cleanup(func() {
			req := make([]byte, 8)
			copy(req[4:], resp[4:])
			if err := e.c.Core(verbs.Seal{}).Invoke(abi.InvokeWrite(e.c.Core(verbs.Seal{}).API(), uint32(e.c.DriverID()), abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_DESTROY_FLOW, req, nil, nil, nil)); err != nil {
				t.Errorf("EX_DESTROY_FLOW: %v", err)
			}
		})
	}
	return err
}

// driverData is struct mlx5_ib_create_flow with one counters data entry
// pointing at pairs (ncounters_data 0 when pairs is nil).
func driverData(pairs []abi.Mlx5IbFlowCountersDesc) []byte {
	b := make([]byte, 24)
	if pairs != nil {
		binary.LittleEndian.PutUint32(b[0:], 1)
		if len(pairs) > 0 {
			binary.LittleEndian.PutUint64(b[8:], uint64(uintptr(unsafe.Pointer(&pairs[0]))))
		}
		binary.LittleEndian.PutUint32(b[16:], uint32(len(pairs)))
	}
	return b
}

func TestMlx5_FirstBindMustSendPairs(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t)
	for _, drv := range [][]byte{nil, make([]byte, 8), driverData(nil)} {
		if err := rawFlow(t, e, cs.Handle(), drv); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("first bind with driver data %x: %v, want EINVAL", drv, err)
		}
	}
	if st, ok := e.state(cs.Handle()); ok && (st.Users != 0 || st.HW) {
		t.Errorf("a failed bind left %+v", st)
	}
	// The library refuses before the kernel when nothing was attached.
	_, err := flow.Create(e.qp, l2(macA, cs))
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "no counter point") {
		t.Errorf("flow.Create with an empty counters object: %v", err)
	}
}

func TestMlx5_LaterBindMustNotSendPairs(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	e.flow(t, macB, cs)
	pairs := []abi.Mlx5IbFlowCountersDesc{{Description: 0, Index: 0}}
	if err := rawFlow(t, e, cs.Handle(), driverData(pairs)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("pairs on a described object: %v, want EINVAL", err)
	}
	if err := rawFlow(t, e, cs.Handle(), driverData(nil)); err != nil {
		t.Errorf("no pairs on a described object: %v", err)
	}
	if st, ok := e.state(cs.Handle()); ok && st.Users != 2 {
		t.Errorf("use count %d", st.Users)
	}
}

func TestMlx5_DescriptionAboveBytesEINVAL(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t)
	pairs := []abi.Mlx5IbFlowCountersDesc{{Description: 2, Index: 0}}
	if err := rawFlow(t, e, cs.Handle(), driverData(pairs)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("description 2: %v", err)
	}
}

func TestMlx5_DriverDataFraming(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t)
	pairs := []abi.Mlx5IbFlowCountersDesc{{Description: 0, Index: 0}}
	two := driverData(pairs)
	binary.LittleEndian.PutUint32(two[0:], 2)
	tail := append(driverData(pairs), 0, 0, 0, 0, 0, 0, 0, 1)
	for _, tc := range []struct {
		name  string
		drv   []byte
		errno syscall.Errno
	}{
		{"shorter than the header", make([]byte, 4), syscall.EOPNOTSUPP},
		{"ncounters_data 2", two, syscall.EINVAL},
		{"non-zero bytes past the entries", tail, syscall.EOPNOTSUPP},
	} {
		if err := rawFlow(t, e, cs.Handle(), tc.drv); !errors.Is(err, tc.errno) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.errno)
		}
	}
}

func TestMlx5_OneCountSpecPerFlow(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	// The library refuses before the kernel…
	a := l2(macA, cs)
	a.Specs = append(a.Specs, &flow.Count{Counters: cs})
	if _, err := flow.Create(e.qp, a); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "takes one") {
		t.Errorf("two count actions: %v", err)
	}
	// …and the kernel (mlx5's parse_flow_attr) refuses a request that has two.
	other := e.counters(t)
	b := &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.Count{Handle: cs.Handle()}, &flow.Count{Handle: other.Handle()}}}
	core := make([]byte, 8)
	binary.LittleEndian.PutUint32(core[4:], e.qp.Handle())
	core, _ = b.AppendBinary(core)
	pairs := []abi.Mlx5IbFlowCountersDesc{{}}
	err := e.c.Core(verbs.Seal{}).Invoke(abi.InvokeWrite(e.c.Core(verbs.Seal{}).API(), uint32(e.c.DriverID()), abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_CREATE_FLOW, core, make([]byte, 8), driverData(pairs), nil))
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("raw request with two count specs: %v", err)
	}
	for _, h := range []uint32{cs.Handle(), other.Handle()} {
		if st, ok := e.state(h); ok && st.Users != 0 {
			t.Errorf("counters %d kept a use: %+v", h, st)
		}
	}
}

func TestMlx5_ReadableOnlyWhileBound(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	wantErr(t, cs.Read(make([]uint64, 1), 0), syscall.EINVAL) // created
	f := e.flow(t, macA, cs)
	if err := cs.Read(make([]uint64, 1), 0); err != nil { // bound
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, cs.Read(make([]uint64, 1), 0), syscall.EINVAL) // last flow gone
}

func TestMlx5_DestroyWhileBoundEBUSY(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	f := e.flow(t, macA, cs)
	err := cs.Close()
	wantErr(t, err, syscall.EBUSY)
	if !strings.Contains(err.Error(), "still counts 1 flow") || !strings.Contains(err.Error(), "destroy them first") {
		t.Errorf("message: %v", err)
	}
	// The object survived and still counts.
	e.frames(macA, 2, 60)
	if got := read(t, cs, 1); got[0] != 2 {
		t.Errorf("after the refused destroy: %v", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, ok := e.state(cs.Handle()); ok {
		t.Error("the kernel object survived")
	}
	wantErr(t, cs.Read(make([]uint64, 1), 0), os.ErrClosed)
	wantErr(t, cs.Attach(pkts(1), nil), os.ErrClosed)
	if _, err := flow.Create(e.qp, l2(macA, cs)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("flow with destroyed counters: %v", err)
	}
}

func TestMlx5_QPBusyWhileFlows(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	f := e.flow(t, macA, cs)
	if err := e.qp.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("QP with a flow: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.qp.Close(); err != nil {
		t.Errorf("QP after its flow: %v", err)
	}
}

// Closing the context destroys flows, then counters, then the QP.
func TestMlx5_ContextCloseOrder(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	e.flow(t, macA, cs)
	e.flow(t, macB, cs)
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, ev := range e.events() {
		if strings.HasPrefix(ev, "destroy") {
			order = append(order, ev)
		}
	}
	want := "destroy flow,destroy flow,destroy counters,destroy qp,destroy cq"
	if strings.Join(order, ",") != want {
		t.Errorf("teardown %v, want %s", order, want)
	}
	// Everything reports closed afterwards, and closing again is fine.
	wantErr(t, cs.Read(make([]uint64, 1), 0), os.ErrClosed)
	if err := cs.Close(); err != nil {
		t.Error(err)
	}
}

func TestRxe_CountersNotSupported(t *testing.T) {
	b := verbstest.New(t, verbstest.RXE())
	c := b.Open(t, "rxe0")
	_, err := counters.Create(c, nil)
	wantErr(t, err, syscall.EPROTONOSUPPORT)
	if !errors.Is(err, counters.ErrNotSupported) || !strings.Contains(err.Error(), "rxe driver has no verbs counters") {
		t.Errorf("message: %v", err)
	}
}

// Reads, binds and unbinds from several goroutines (run with -race).
func TestConcurrentReadsAndBinds(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0), bytesAt(1))
	keep := e.flow(t, macA, cs)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			vals := make([]uint64, 2)
			for i := 0; i < 50; i++ {
				if g%2 == 0 {
					if err := cs.Read(vals, counters.PreferCached); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				f, err := flow.Create(e.qp, l2(macB, cs))
				if err != nil {
					t.Error(err)
					return
				}
				if err := f.Close(); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if cs.Bound() != 1 {
		t.Errorf("Bound() = %d after the churn", cs.Bound())
	}
	if err := keep.Close(); err != nil {
		t.Fatal(err)
	}
}
