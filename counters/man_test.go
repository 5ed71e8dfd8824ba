package counters_test

// Every statement of the two man pages (seeds ibv_attach_counters_point_flow(3)
// and ibv_read_counters(3), rdma-core 2018-04-02) has a test named after it,
// run on the strict fake kernel with mlx5's rules:
//
// ibv_attach_counters_point_flow(3)
//   "attach individual counter description definition to a verb object at a
//    specific index location"                              TestManAttach_PointAtIndex
//   "Counters object will start collecting values after it is bound to the
//    verb object resource"                                 TestManAttach_CollectsOnlyAfterBound
//   "A static attach can be created when NULL is provided … for flow this is
//    when referencing the counters handle when creating a flow"
//                                                          TestManAttach_StaticAttachBindsAtCreateFlow
//   "Once an ibv_counters is bound statically to a verbs resource, no
//    additional attach is allowed till the counter object is not bound to
//    any verb object"                                      TestManAttach_EBUSYWhenBoundStatically,
//                                                          TestManAttach_AttachAllowedAgainWhenUnbound
//   "counter_desc specifies which counter value should be collected"
//                                                          TestManAttach_CounterDescSelectsValue
//   "Supported capabilities of specific counter_desc values … ENOTSUP"
//                                                          TestManAttach_ENOTSUPForUnsupportedDesc
//   "Attaching a counters handle to multiple objects of the same type will
//    accumulate the values into a single index"            TestManAttach_SeveralFlowsAccumulate
//   "setting the index more than once with different or same counter_desc
//    will aggregate the values"                            TestManAttach_IndexSetTwiceAggregates
//   "The runtime values of counters can be read from the hardware by
//    calling ibv_read_counters()"                          TestManAttach_ValuesReadByReadCounters
//   "flow: Existing flow to attach a new counters point on (in static mode
//    it must be NULL)"                                     TestManAttach_DynamicAttachENOTSUPOnMlx5
//   "comp_mask: Bitmask specifying what fields in the structure are valid"
//                                                          TestManAttach_CompMaskValidated,
//                                                          TestManCreate_CompMaskValidated
//   "returns 0 on success, or the value of errno on failure"
//                                                          TestManAttach_ReturnsErrno
//   "EINVAL invalid argument(s) passed"                    TestManAttach_EINVALForInvalidArguments
//   "ENOTSUP counter_desc is not supported on the requested object"
//                                                          TestManAttach_ENOTSUPForUnsupportedDesc
//   "EBUSY the counter object is already bound to a flow, additional attach
//    calls is not allowed (valid for static attach only)"  TestManAttach_EBUSYWhenBoundStatically
//   "ENOMEM not enough memory"                             TestManAttach_ENOMEM
//   "Counter values in each index location are cleared upon creation"
//                                                          TestManAttach_ValuesClearedOnCreate
//   "Attaching counters points will only increase these values accordingly"
//                                                          TestManAttach_ValuesOnlyIncrease
//   "An example of use … is shown in ibv_read_counters"    TestManRead_ExampleStaticAttachToNewFlow
//
// ibv_read_counters(3)
//   "returns the values of the chosen counters into counters_value array of
//    which can accumulate ncounters"                       TestManRead_FillsNCounters
//   "The values are filled according to the configuration defined by the
//    user in the ibv_attach_counters_point_xxx functions"  TestManRead_ValuesFollowAttachConfiguration
//   "counters: Counters object to read"                    TestManRead_ReadsTheGivenObject
//   "counters_value: Input buffer to hold read result",
//   "ncounters: Number of counters to fill"                TestManRead_NCountersShorterOrLonger
//   "IBV_READ_COUNTERS_ATTR_PREFER_CACHED: Will prefer reading the values
//    from driver cache, else it will do volatile hardware access which is
//    the default"                                          TestManRead_PreferCachedFlag
//   "returns 0 on success, or the value of errno on failure"
//                                                          TestManRead_ReturnsErrno
//   "Example: Statically attach counters to a new flow … The counters are
//    read from hardware periodically, and finally all resources are
//    released"                                             TestManRead_ExampleStaticAttachToNewFlow
//
// mlx5 and kernel rules beyond the man pages (mlx5 counters.c mlx5_ib_flow_counters_set_data and mlx5_ib_read_counters, fs.c mlx5_ib_create_flow, uverbs_std_types_counters.c; docs/mock0.md) are in
// mlx5_test.go.

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
	"github.com/purerdma/rdma/uverbs"
)

func TestMain(m *testing.M) { os.Exit(verbstest.TestMain(m)) }

// env is an mlx5 device with a context and a RAW_PACKET QP: the strict
// fake on the host, mock0 on the real kernel in the vmrun guest
// (verbstest.MLX5Device). v is the fake, nil on mock0: what a test reads
// from inside the fake (its counters state) is checked on the fake only;
// errnos, values and the driver's requests (verbstest.Events) are checked
// on both.
type env struct {
	t  testing.TB
	v  *fakekernel.Verbs
	c  *uverbs.Context
	qp *uverbs.QP
}

func newEnv(t *testing.T) *env {
	t.Helper()
	v, c := verbstest.MLX5Device(t)
	return &env{t: t, v: v, c: c, qp: verbstest.RawQP(t, c)}
}

// state is the fake's view of a counters object; ok is false on mock0.
func (e *env) state(h uint32) (fakekernel.CountersState, bool) {
	if e.v == nil {
		return fakekernel.CountersState{}, false
	}
	return e.v.Counters(h)
}

// events are the driver's requests so far (verbstest.Events).
func (e *env) events() []string { return verbstest.Events(e.t, e.v) }

// pairs lists, per flow created with a count action, how many pairs its
// driver data carried (-1: none).
func (e *env) pairs() []int {
	var n []int
	for _, ev := range e.events() {
		switch {
		case ev == "create flow no pairs":
			n = append(n, -1)
		case strings.HasPrefix(ev, "create flow pairs "):
			k, _ := strconv.Atoi(strings.TrimPrefix(ev, "create flow pairs "))
			n = append(n, k)
		}
	}
	return n
}

var (
	macA = flow.MAC{0x00, 0x01, 0x02, 0x03, 0x04, 0x05}
	macB = flow.MAC{0x00, 0x01, 0x02, 0x03, 0x04, 0x06}
	all  = flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

func (e *env) counters(t *testing.T, points ...counters.AttachAttr) *counters.Object {
	t.Helper()
	cs, err := counters.Create(e.c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range points {
		if err := cs.Attach(p, nil); err != nil {
			t.Fatal(err)
		}
	}
	return cs
}

// flow creates an L2 flow on mac counting into cs.
func (e *env) flow(t *testing.T, mac flow.MAC, cs *counters.Object) *flow.Flow {
	t.Helper()
	f, err := flow.Create(e.qp, l2(mac, cs))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func l2(mac flow.MAC, cs *counters.Object) *flow.Attr {
	return &flow.Attr{Port: 1, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: mac}, Mask: flow.EthFilter{DstMAC: all}},
		&flow.Count{Counters: cs},
	}}
}

func (e *env) frames(mac flow.MAC, n, size uint64) {
	e.t.Helper()
	verbstest.Frames(e.t, e.v, mac, n, size)
}

func read(t *testing.T, cs *counters.Object, n int) []uint64 {
	t.Helper()
	vals := make([]uint64, n)
	if err := cs.Read(vals, 0); err != nil {
		t.Fatal(err)
	}
	return vals
}

func pkts(i uint32) counters.AttachAttr { return counters.AttachAttr{Desc: counters.Packets, Index: i} }
func bytesAt(i uint32) counters.AttachAttr {
	return counters.AttachAttr{Desc: counters.Bytes, Index: i}
}

func wantErr(t *testing.T, err error, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
	var ce *counters.Error
	if !errors.As(err, &ce) {
		t.Fatalf("%v is not a *counters.Error", err)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestManAttach_PointAtIndex(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, bytesAt(3))
	e.flow(t, macA, cs)
	e.frames(macA, 2, 64)
	if got := read(t, cs, 4); !equal(got, []uint64{0, 0, 0, 128}) {
		t.Errorf("bytes at index 3: %v", got)
	}
}

func TestManAttach_CollectsOnlyAfterBound(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	// Traffic before any flow counts into the object is not counted, and
	// the object cannot even be read yet.
	e.frames(macA, 5, 100)
	wantErr(t, cs.Read(make([]uint64, 1), 0), syscall.EINVAL)
	e.flow(t, macA, cs)
	if got := read(t, cs, 1); got[0] != 0 {
		t.Errorf("after bind, before traffic: %v", got)
	}
	e.frames(macA, 5, 100)
	if got := read(t, cs, 1); got[0] != 5 {
		t.Errorf("after 5 frames: %v", got)
	}
}

func TestManAttach_StaticAttachBindsAtCreateFlow(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0), bytesAt(1))
	if st, ok := e.state(cs.Handle()); ok && (st.Described || st.HW || st.Users != 0) {
		t.Fatalf("before the flow the kernel knows nothing of the points: %+v", st)
	}
	if n := e.pairs(); len(n) != 0 {
		t.Fatalf("pairs sent before any flow: %v", n)
	}
	e.flow(t, macA, cs)
	if st, ok := e.state(cs.Handle()); ok && (!st.Described || !st.HW || st.Users != 1 || st.MaxIndex != 2 || len(st.Desc) != 2) {
		t.Fatalf("after flow.Create with the count action: %+v", st)
	}
	if n := e.pairs(); len(n) != 1 || n[0] != 2 {
		t.Errorf("the pairs did not travel with EX_CREATE_FLOW: %v (events %v)", n, e.events())
	}
}

func TestManAttach_EBUSYWhenBoundStatically(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	e.flow(t, macA, cs)
	err := cs.Attach(bytesAt(1), nil)
	wantErr(t, err, syscall.EBUSY)
	if !strings.Contains(err.Error(), "bound statically to 1 flow") {
		t.Errorf("message: %v", err)
	}
	// A second flow keeps it bound.
	f2 := e.flow(t, macB, cs)
	wantErr(t, cs.Attach(bytesAt(1), nil), syscall.EBUSY)
	if err := f2.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, cs.Attach(bytesAt(1), nil), syscall.EBUSY)
}

func TestManAttach_AttachAllowedAgainWhenUnbound(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	f1 := e.flow(t, macA, cs)
	f2 := e.flow(t, macB, cs)
	for _, f := range []*flow.Flow{f1, f2} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.Attach(bytesAt(1), nil); err != nil {
		t.Fatalf("attach after the last flow went: %v", err)
	}
	// The next flow sends every point, old and new (rdma-core keeps its
	// list), and the kernel stores them afresh.
	e.flow(t, macA, cs)
	if st, ok := e.state(cs.Handle()); ok && (st.MaxIndex != 2 || len(st.Desc) != 2) {
		t.Errorf("re-bound description: %+v", st)
	}
	if n := e.pairs(); len(n) != 3 || n[2] != 2 {
		t.Errorf("pairs per flow: %v, want the last with 2", n)
	}
	// And it counts into the new layout.
	e.frames(macA, 2, 100)
	if got := read(t, cs, 2); !equal(got, []uint64{2, 200}) {
		t.Errorf("after re-binding: %v", got)
	}
}

func TestManAttach_CounterDescSelectsValue(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, bytesAt(0), pkts(1))
	e.flow(t, macA, cs)
	e.frames(macA, 3, 1500)
	if got := read(t, cs, 2); !equal(got, []uint64{4500, 3}) {
		t.Errorf("bytes at 0, packets at 1: %v", got)
	}
}

func TestManAttach_ENOTSUPForUnsupportedDesc(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t)
	err := cs.Attach(counters.AttachAttr{Desc: 2, Index: 0}, nil)
	wantErr(t, err, syscall.ENOTSUP)
	if !errors.Is(err, counters.ErrNotSupported) {
		t.Errorf("%v does not match ErrNotSupported", err)
	}
	for _, d := range []counters.Description{counters.Packets, counters.Bytes} {
		if err := cs.Attach(counters.AttachAttr{Desc: d}, nil); err != nil {
			t.Errorf("%v: %v", d, err)
		}
	}
}

func TestManAttach_SeveralFlowsAccumulate(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0), bytesAt(1))
	e.flow(t, macA, cs)
	e.flow(t, macB, cs)
	e.frames(macA, 2, 100)
	e.frames(macB, 3, 60)
	if got := read(t, cs, 2); !equal(got, []uint64{5, 380}) {
		t.Errorf("two flows into one object: %v", got)
	}
	if st, ok := e.state(cs.Handle()); ok && st.Users != 2 {
		t.Errorf("use count %d", st.Users)
	}
}

func TestManAttach_IndexSetTwiceAggregates(t *testing.T) {
	e := newEnv(t)
	// Index 0: packets + bytes; index 1: packets twice.
	cs := e.counters(t, pkts(0), bytesAt(0), pkts(1), pkts(1))
	e.flow(t, macA, cs)
	e.frames(macA, 4, 64)
	if got := read(t, cs, 2); !equal(got, []uint64{4 + 256, 8}) {
		t.Errorf("aggregated indexes: %v", got)
	}
}

func TestManAttach_ValuesReadByReadCounters(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	e.flow(t, macA, cs)
	for i := uint64(1); i <= 3; i++ {
		e.frames(macA, 1, 64)
		if got := read(t, cs, 1); got[0] != i {
			t.Fatalf("read %d: %v", i, got)
		}
	}
	if n := verbstest.Count(e.events(), "read flags"); n != 3 {
		t.Errorf("%d reads reached the device, want 3", n)
	}
}

func TestManAttach_DynamicAttachENOTSUPOnMlx5(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	other := e.counters(t, pkts(0))
	f := e.flow(t, macA, other)
	err := cs.Attach(pkts(1), f)
	wantErr(t, err, syscall.ENOTSUP)
	if !strings.Contains(err.Error(), "only static attach") {
		t.Errorf("message: %v", err)
	}
	// A nil *flow.Flow is the C NULL: static.
	var nilFlow *flow.Flow
	if err := cs.Attach(pkts(1), nilFlow); err != nil {
		t.Errorf("static attach through a nil *flow.Flow: %v", err)
	}
}

func TestManAttach_CompMaskValidated(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t)
	wantErr(t, cs.Attach(counters.AttachAttr{Desc: counters.Packets, CompMask: 1}, nil), syscall.EOPNOTSUPP)
	if len(cs.Points()) != 0 {
		t.Error("a refused point was kept")
	}
}

func TestManCreate_CompMaskValidated(t *testing.T) {
	e := newEnv(t)
	_, err := counters.Create(e.c, &counters.InitAttr{CompMask: 1})
	wantErr(t, err, syscall.EOPNOTSUPP)
	if ev := e.events(); verbstest.Count(ev, "create counters") != 0 {
		t.Errorf("the kernel was asked: %v", ev)
	}
	if _, err := counters.Create(e.c, &counters.InitAttr{}); err != nil {
		t.Error(err)
	}
}

func TestManAttach_ReturnsErrno(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t)
	if err := cs.Attach(pkts(0), nil); err != nil {
		t.Fatalf("success is nil: %v", err)
	}
	e.flow(t, macA, cs)
	for _, tc := range []struct {
		attr  counters.AttachAttr
		errno syscall.Errno
	}{
		{pkts(1), syscall.EBUSY},
		{counters.AttachAttr{Desc: 9}, syscall.ENOTSUP},
		{counters.AttachAttr{CompMask: 2}, syscall.EOPNOTSUPP},
		{counters.AttachAttr{Index: counters.MaxValues}, syscall.EINVAL},
	} {
		err := cs.Attach(tc.attr, nil)
		var errno syscall.Errno
		if !errors.As(err, &errno) || errno != tc.errno {
			t.Errorf("Attach(%+v) = %v, want errno %v", tc.attr, err, tc.errno)
		}
	}
}

func TestManAttach_EINVALForInvalidArguments(t *testing.T) {
	e := newEnv(t)
	var nilCounters *counters.Object
	wantErr(t, nilCounters.Attach(pkts(0), nil), syscall.EINVAL)
	cs := e.counters(t)
	err := cs.Attach(pkts(counters.MaxValues), nil)
	wantErr(t, err, syscall.EINVAL)
	if !strings.Contains(err.Error(), "at most 8191") {
		t.Errorf("message: %v", err)
	}
	if err := cs.Attach(pkts(counters.MaxValues-1), nil); err != nil {
		t.Errorf("the largest readable index: %v", err)
	}
	if _, err := counters.Create(nil, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Create(nil) = %v", err)
	}
}

func TestManAttach_ENOMEM(t *testing.T) {
	// Attach keeps its points in the Go heap, where running out of memory
	// is fatal rather than an error: it never returns ENOMEM, even for
	// the most points a read can hold…
	e := newEnv(t)
	cs := e.counters(t)
	for i := uint32(0); i < counters.MaxValues; i++ {
		if err := cs.Attach(pkts(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	// …and all of them go to the kernel with the first flow.
	e.flow(t, macA, cs)
	if n := e.pairs(); len(n) != 1 || n[0] != counters.MaxValues {
		t.Errorf("pairs sent: %v, want %d", n, counters.MaxValues)
	}
	if st, ok := e.state(cs.Handle()); ok && len(st.Desc) != counters.MaxValues {
		t.Errorf("%d pairs stored", len(st.Desc))
	}
	// When the kernel runs out (mlx5 answers ENOMEM for a flow priority
	// past its last), the errno comes through as such.
	cs2 := e.counters(t, pkts(0))
	a := l2(macB, cs2)
	a.Priority = 16
	if _, err := flow.Create(e.qp, a); !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("priority 16 on mlx5: %v", err)
	}
}

func TestManAttach_ValuesClearedOnCreate(t *testing.T) {
	e := newEnv(t)
	old := e.counters(t, pkts(0))
	f := e.flow(t, macA, old)
	e.frames(macA, 7, 100)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fresh := e.counters(t, pkts(0), bytesAt(1))
	e.flow(t, macA, fresh)
	if got := read(t, fresh, 2); !equal(got, []uint64{0, 0}) {
		t.Errorf("a new object starts at %v", got)
	}
}

func TestManAttach_ValuesOnlyIncrease(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	f := e.flow(t, macA, cs)
	e.frames(macA, 3, 60)
	first := read(t, cs, 1)[0]
	// Unbind (the kernel forgets the layout, keeps the hardware counter),
	// attach more, bind again: the values continue from where they were.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cs.Attach(bytesAt(1), nil); err != nil {
		t.Fatal(err)
	}
	e.flow(t, macB, cs)
	got := read(t, cs, 2)
	if got[0] < first || got[0] != 3 || got[1] != 180 {
		t.Errorf("after re-binding: %v (was %d packets)", got, first)
	}
	prev := got
	for i := 0; i < 3; i++ {
		e.frames(macB, 1, 60)
		cur := read(t, cs, 2)
		if cur[0] < prev[0] || cur[1] < prev[1] {
			t.Fatalf("values went down: %v → %v", prev, cur)
		}
		prev = cur
	}
}

func TestManRead_FillsNCounters(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0), bytesAt(1))
	e.flow(t, macA, cs)
	e.frames(macA, 1, 60)
	vals := []uint64{99, 99, 99, 99}
	if err := cs.Read(vals, 0); err != nil {
		t.Fatal(err)
	}
	if !equal(vals, []uint64{1, 60, 0, 0}) {
		t.Errorf("ncounters 4: %v (entries past the points are zeroed)", vals)
	}
}

func TestManRead_ValuesFollowAttachConfiguration(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, bytesAt(2), pkts(0), pkts(2))
	e.flow(t, macA, cs)
	e.frames(macA, 2, 60)
	if got := read(t, cs, 3); !equal(got, []uint64{2, 0, 122}) {
		t.Errorf("layout {0: packets, 2: bytes+packets}: %v", got)
	}
	s := cs.AsSet()
	defer s.Close()
	if strings.Join(s.Names, ",") != "packets,,bytes+packets" {
		t.Errorf("set names %q", s.Names)
	}
	v := make([]uint64, 3)
	if err := s.Read(v); err != nil || !equal(v, []uint64{2, 0, 122}) {
		t.Errorf("Set.Read = %v, %v", v, err)
	}
}

func TestManRead_ReadsTheGivenObject(t *testing.T) {
	e := newEnv(t)
	a := e.counters(t, pkts(0))
	b := e.counters(t, pkts(0))
	e.flow(t, macA, a)
	e.flow(t, macB, b)
	e.frames(macA, 1, 60)
	e.frames(macB, 4, 60)
	if ga, gb := read(t, a, 1)[0], read(t, b, 1)[0]; ga != 1 || gb != 4 {
		t.Errorf("a = %d, b = %d", ga, gb)
	}
	var nilCounters *counters.Object
	wantErr(t, nilCounters.Read(make([]uint64, 1), 0), syscall.EINVAL)
	if err := a.Close(); err == nil {
		t.Fatal("destroyed a bound object")
	}
}

func TestManRead_NCountersShorterOrLonger(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0), bytesAt(4))
	e.flow(t, macA, cs)
	e.frames(macA, 1, 64)
	// Shorter than the largest index + 1: EINVAL from the kernel (mlx5).
	for _, n := range []int{0, 1, 4} {
		err := cs.Read(make([]uint64, n), 0)
		wantErr(t, err, syscall.EINVAL)
		if n > 0 && !strings.Contains(err.Error(), "need 5") {
			t.Errorf("n=%d: %v", n, err)
		}
	}
	// Exactly and longer: fine.
	for _, n := range []int{5, 6, counters.MaxValues} {
		vals := make([]uint64, n)
		if err := cs.Read(vals, 0); err != nil || vals[0] != 1 || vals[4] != 64 {
			t.Errorf("n=%d: %v %v", n, vals[:5], err)
		}
	}
	// Longer than a read can carry: EINVAL before the kernel.
	reads := verbstest.Count(e.events(), "read")
	wantErr(t, cs.Read(make([]uint64, counters.MaxValues+1), 0), syscall.EINVAL)
	if verbstest.Count(e.events(), "read") != reads {
		t.Error("an oversized read reached the kernel")
	}
}

func TestManRead_PreferCachedFlag(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	e.flow(t, macA, cs)
	e.frames(macA, 1, 60)
	for _, fl := range []counters.ReadFlags{0, counters.PreferCached} {
		if err := cs.Read(make([]uint64, 1), fl); err != nil {
			t.Fatal(err)
		}
		ev := e.events()
		if last := ev[len(ev)-1]; last != "read flags "+strconv.Itoa(int(fl)) {
			t.Errorf("the driver got %q, want flags %d", last, fl)
		}
		// Flags 0 travel as no FLAGS attribute, which the kernel reads
		// as 0 (uverbs_get_flags32) and does not look up.
		if st, ok := e.state(cs.Handle()); ok && st.LastFlagsSent != (fl != 0) {
			t.Errorf("flags %d: FLAGS attribute sent %v", fl, st.LastFlagsSent)
		}
	}
	// mlx5 accepts the flag and queries the device anyway: both reads
	// reached it.
	if n := verbstest.Count(e.events(), "read flags"); n != 2 {
		t.Errorf("%d device reads", n)
	}
	wantErr(t, cs.Read(make([]uint64, 1), 2), syscall.EINVAL)
}

func TestManRead_ReturnsErrno(t *testing.T) {
	e := newEnv(t)
	cs := e.counters(t, pkts(0))
	err := cs.Read(make([]uint64, 1), 0)
	var errno syscall.Errno
	if !errors.As(err, &errno) || errno != syscall.EINVAL || !strings.Contains(err.Error(), "not bound to a flow") {
		t.Errorf("unbound read: %v", err)
	}
	e.flow(t, macA, cs)
	if err := cs.Read(make([]uint64, 1), 0); err != nil {
		t.Errorf("bound read: %v", err)
	}
}

// The man page's example, step by step: a counters object, packets at
// index 0 and bytes at 1 attached statically, an L2 flow with the count
// action on a RAW_PACKET QP, periodic reads with PreferCached, then the
// flow and the counters destroyed (cmd/purerdma flowcount is the same as a
// program).
func TestManRead_ExampleStaticAttachToNewFlow(t *testing.T) {
	e := newEnv(t)
	cs, err := counters.Create(e.c, &counters.InitAttr{})
	if err != nil {
		t.Fatal(err)
	}
	idx := uint32(0)
	for _, d := range []counters.Description{counters.Packets, counters.Bytes} {
		if err := cs.Attach(counters.AttachAttr{Desc: d, Index: idx}, nil); err != nil {
			t.Fatalf("attaching %v: %v", d, err)
		}
		idx++
	}
	f, err := flow.Create(e.qp, &flow.Attr{Type: flow.AttrNormal, Priority: 0, Port: 1, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: macA}, Mask: flow.EthFilter{DstMAC: all, SrcMAC: all}},
		&flow.Count{Counters: cs},
	}})
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]uint64, idx)
	for loop := 1; loop < 10; loop++ {
		e.frames(macA, 1, 100)
		if err := cs.Read(vals, counters.PreferCached); err != nil {
			t.Fatal(err)
		}
		if vals[0] != uint64(loop) || vals[1] != uint64(loop)*100 {
			t.Fatalf("PACKETS = %d, BYTES = %d after %d frames", vals[0], vals[1], loop)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	ev := e.events()
	n := len(ev)
	if n < 2 || ev[n-2] != "destroy flow" || ev[n-1] != "destroy counters" {
		t.Errorf("release order: %v", ev)
	}
}

func flowCreate(e *env, cs *counters.Object) (*flow.Flow, error) {
	return flow.Create(e.qp, l2(macA, cs))
}
