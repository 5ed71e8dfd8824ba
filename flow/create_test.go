package flow_test

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
	"github.com/purerdma/rdma/internal/verbs"
	"github.com/purerdma/rdma/uverbs"
)

func TestMain(m *testing.M) { os.Exit(verbstest.TestMain(m)) }

var (
	mac = flow.MAC{0x00, 0x01, 0x02, 0x03, 0x04, 0x05}
	all = flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

func l2() *flow.Attr {
	return &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.Eth{Value: flow.EthFilter{DstMAC: mac}, Mask: flow.EthFilter{DstMAC: all}}}}
}

func mlx5(t *testing.T) (*fakekernel.Verbs, *uverbs.Context, *uverbs.QP) {
	t.Helper()
	v, c := verbstest.MLX5Device(t) // the fake, or mock0 in the VM (v nil)
	return v, c, verbstest.RawQP(t, c)
}

func TestCreateAndClose(t *testing.T) {
	v, _, qp := mlx5(t)
	f, err := flow.Create(qp, l2())
	if err != nil {
		t.Fatal(err)
	}
	if f.QP() != qp || f.Context() != qp.Context() {
		t.Error("accessors")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if ev := strings.Join(verbstest.Events(t, v), ","); ev != "create flow,destroy flow" {
		t.Errorf("the driver was asked: %s", ev)
	}
}

// Every filter spec type and every action that mlx5 takes, in one flow
// each, and every flow kind and flag.
func TestSpecsAttrTypesAndFlags(t *testing.T) {
	_, c, qp := mlx5(t)
	cs, err := counters.Create(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Attach(counters.AttachAttr{Desc: counters.Packets}, nil); err != nil {
		t.Fatal(err)
	}
	eth := func(etype uint16) *flow.Eth {
		return &flow.Eth{Value: flow.EthFilter{DstMAC: mac, EtherType: etype}, Mask: flow.EthFilter{DstMAC: all, EtherType: 0xffff}}
	}
	for _, a := range []*flow.Attr{
		{Port: 1, Specs: []flow.Spec{eth(0x0800), &flow.IPv4{Value: flow.IPv4Filter{Dst: [4]byte{10, 0, 0, 1}}, Mask: flow.IPv4Filter{Dst: [4]byte{255, 255, 255, 255}}},
			&flow.UDP{Value: flow.PortFilter{DstPort: 4789}, Mask: flow.PortFilter{DstPort: 0xffff}}, &flow.VXLAN{VNI: 7, Mask: 0xffffff},
			&flow.Eth{Inner: true}, &flow.TCP{Inner: true, Value: flow.PortFilter{DstPort: 80}, Mask: flow.PortFilter{DstPort: 0xffff}}}},
		{Port: 1, Specs: []flow.Spec{eth(0x86dd), &flow.IPv6{Value: flow.IPv6Filter{FlowLabel: 9}, Mask: flow.IPv6Filter{FlowLabel: 0xfffff}}}},
		{Port: 1, Specs: []flow.Spec{&flow.GRE{Value: flow.GREFilter{Protocol: 0x0800}, Mask: flow.GREFilter{Protocol: 0xffff}}, &flow.MPLS{Label: 0x1000, Mask: 0xfffff000}}},
		{Port: 1, Specs: []flow.Spec{eth(0), &flow.Tag{ID: 0xffffff}, &flow.Count{Counters: cs}}},
		{Port: 1, Specs: []flow.Spec{eth(0), &flow.Drop{}, &flow.Count{Counters: cs}}},
		{Port: 1, Priority: 15, Flags: flow.FlagDontTrap, Specs: []flow.Spec{eth(0)}},
		{Port: 1, Flags: flow.FlagEgress, Specs: []flow.Spec{eth(0)}},
		{Type: flow.AttrAllDefault, Port: 1},
		{Type: flow.AttrMCDefault, Port: 1},
		{Type: flow.AttrSniffer, Port: 1},
	} {
		f, err := flow.Create(qp, a)
		if err != nil {
			t.Errorf("%s with %d specs: %v", a.Type, len(a.Specs), err)
			continue
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestDriverRules(t *testing.T) {
	_, c, qp := mlx5(t)
	cs, _ := counters.Create(c, nil)
	cs.Attach(counters.AttachAttr{Desc: counters.Bytes}, nil)
	for _, tc := range []struct {
		name string
		a    *flow.Attr
		want error
	}{
		{"priority 16 (mlx5: ENOMEM)", &flow.Attr{Port: 1, Priority: 16}, syscall.ENOMEM},
		{"DONT_TRAP with ALL_DEFAULT (core)", &flow.Attr{Type: flow.AttrAllDefault, Port: 1, Flags: flow.FlagDontTrap}, syscall.EINVAL},
		{"EGRESS with MC_DEFAULT (mlx5)", &flow.Attr{Type: flow.AttrMCDefault, Port: 1, Flags: flow.FlagEgress}, syscall.EINVAL},
		{"flag bit 0 (mlx5)", &flow.Attr{Port: 1, Flags: 1}, syscall.EINVAL},
		{"flag bit 3 (core)", &flow.Attr{Port: 1, Flags: 8}, syscall.EINVAL},
		{"port 2 of a 1-port device", &flow.Attr{Port: 2}, syscall.EINVAL},
		{"ESP (mlx5)", &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.ESP{}}}, syscall.EOPNOTSUPP},
		{"tag of 24 bits (mlx5)", &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.Tag{ID: 1 << 24}}}, syscall.EINVAL},
		{"IPv4 ttl mask (mlx5)", &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.IPv4{Mask: flow.IPv4Filter{TTL: 0xff}}}}, syscall.EOPNOTSUPP},
		{"ethertype against IPv6 (mlx5)", &flow.Attr{Port: 1, Specs: []flow.Spec{
			&flow.Eth{Value: flow.EthFilter{EtherType: 0x0800}, Mask: flow.EthFilter{EtherType: 0xffff}}, &flow.IPv6{}}}, syscall.EINVAL},
		{"IPv4 proto UDP with a TCP spec (mlx5)", &flow.Attr{Port: 1, Specs: []flow.Spec{
			&flow.IPv4{Value: flow.IPv4Filter{Proto: 17}, Mask: flow.IPv4Filter{Proto: 0xff}}, &flow.TCP{}}}, syscall.EINVAL},
		{"11 specs (core)", &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.Drop{}, &flow.Drop{}, &flow.Drop{}, &flow.Drop{}, &flow.Drop{}, &flow.Drop{}, &flow.Drop{}, &flow.Drop{}, &flow.Drop{}, &flow.Drop{}, &flow.Drop{}}}, syscall.EINVAL},
		{"unknown flow action handle (core)", &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.Handle{Handle: 77}}}, syscall.EINVAL},
		{"count on a SNIFFER flow (mlx5 counts nothing there)", &flow.Attr{Type: flow.AttrSniffer, Port: 1, Specs: []flow.Spec{&flow.Count{Counters: cs}}}, flow.ErrNotSupported},
		{"count without counters", &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.Count{Handle: cs.Handle()}}}, syscall.EINVAL},
		{"nil spec", &flow.Attr{Port: 1, Specs: []flow.Spec{nil}}, syscall.EINVAL},
		{"typed nil spec", &flow.Attr{Port: 1, Specs: []flow.Spec{(*flow.Eth)(nil)}}, syscall.EINVAL},
	} {
		_, err := flow.Create(qp, tc.a)
		var fe *flow.Error
		if !errors.Is(err, tc.want) || !errors.As(err, &fe) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := flow.Create(nil, l2()); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil QP: %v", err)
	}
	if _, err := flow.Create(qp, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil attr: %v", err)
	}
}

func TestCountersOfAnotherContext(t *testing.T) {
	v := verbstest.MLX5()
	b := verbstest.New(t, v)
	c1, c2 := b.Open(t, "mlx5_0"), b.Open(t, "mlx5_0")
	cs, _ := counters.Create(c2, nil)
	cs.Attach(counters.AttachAttr{}, nil)
	qp := verbstest.RawQP(t, c1)
	a := l2()
	a.Specs = append(a.Specs, &flow.Count{Counters: cs})
	if _, err := flow.Create(qp, a); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "another context") {
		t.Errorf("%v", err)
	}
}

// Without CAP_NET_RAW the kernel answers EPERM; the error matches
// os.ErrPermission and says which capability is missing.
func TestNoCapNetRaw(t *testing.T) {
	v, _, qp := mlx5(t)
	verbstest.SetNetRaw(t, v, false)
	_, err := flow.Create(qp, l2())
	if !errors.Is(err, os.ErrPermission) || !errors.Is(err, syscall.EPERM) || !strings.Contains(err.Error(), "CAP_NET_RAW") {
		t.Errorf("%v", err)
	}
}

// rxe has no flow steering: every QP type, privileged or not, gets
// ErrNotSupported (EOPNOTSUPP: the write command is not registered).
func TestRxeHasNoFlows(t *testing.T) {
	v := verbstest.RXE()
	c := verbstest.New(t, v).Open(t, "rxe0")
	qp := verbstest.QP(t, c, uverbs.QPTypeUD)
	for _, netRaw := range []bool{true, false} {
		v.NetRaw = netRaw
		_, err := flow.Create(qp, l2())
		if !errors.Is(err, flow.ErrNotSupported) || !errors.Is(err, syscall.EOPNOTSUPP) || !strings.Contains(err.Error(), "rxe driver has no flow steering") {
			t.Errorf("CAP_NET_RAW %v: %v", netRaw, err)
		}
	}
}

// A QP cannot be destroyed while a flow steers to it; closing the context
// destroys the flows first.
func TestTeardown(t *testing.T) {
	v := verbstest.MLX5()
	c := verbstest.New(t, v).Open(t, "mlx5_0")
	qp := verbstest.RawQP(t, c)
	f, err := flow.Create(qp, l2())
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("QP close with a flow: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close after the context's: %v", err)
	}
	var order []string
	for _, l := range v.Log() {
		if strings.HasPrefix(l, "destroy") {
			order = append(order, strings.Fields(l)[1])
		}
	}
	if len(order) < 2 || order[0] != "flow" || order[1] != "qp" {
		t.Errorf("teardown order %v", order)
	}
}

// request is a raw EX_CREATE_FLOW request: struct ib_uverbs_create_flow
// and spec bytes, to break one rule at a time.
type request struct {
	compMask uint32
	qp       uint32
	typ      uint32
	size     int // -1: the length of specs
	priority uint16
	num      uint8
	reserved [2]uint8
	port     uint8
	flags    uint32
	specs    []byte
	coreLen  int // -1: whole; else the core is cut to this length
	trailing []byte
}

func (r request) bytes() []byte {
	b := make([]byte, 24)
	le := binary.LittleEndian
	le.PutUint32(b[0:], r.compMask)
	le.PutUint32(b[4:], r.qp)
	le.PutUint32(b[8:], r.typ)
	size := r.size
	if size < 0 {
		size = len(r.specs)
	}
	le.PutUint16(b[12:], uint16(size))
	le.PutUint16(b[14:], r.priority)
	b[16], b[17], b[18], b[19] = r.num, r.reserved[0], r.reserved[1], r.port
	le.PutUint32(b[20:], r.flags)
	b = append(append(b, r.specs...), r.trailing...)
	if r.coreLen >= 0 && r.coreLen < len(b) {
		b = b[:r.coreLen]
	}
	return b
}

func spec(t *testing.T, s flow.Spec) []byte {
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The core's checks in ib_uverbs_ex_create_flow come in a fixed order
// (uverbs_cmd.c ib_uverbs_ex_create_flow, in its order; docs/mock0.md); each case breaks one rule and a later one whose
// errno differs, so only the right order gives the expected errno.
func TestCoreValidationOrder(t *testing.T) {
	v, c, raw := mlx5(t)
	rc := verbstest.QP(t, c, uverbs.QPTypeRC)
	eth := spec(t, &flow.Eth{})
	// A handle action of 8 bytes instead of 16: EOPNOTSUPP from the core.
	badHandle := make([]byte, 8)
	binary.LittleEndian.PutUint32(badHandle[0:], uint32(flow.TypeActionHandle))
	binary.LittleEndian.PutUint16(badHandle[4:], 8)
	ok := request{qp: raw.Handle(), port: 1, num: 1, size: -1, specs: eth, coreLen: -1}
	with := func(f func(r *request)) request {
		r := ok
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name   string
		r      request
		netRaw bool
		want   syscall.Errno
	}{
		{"1 short core before CAP_NET_RAW", with(func(r *request) { r.coreLen = 16 }), false, syscall.ENOSPC},
		{"2 comp_mask before CAP_NET_RAW", with(func(r *request) { r.compMask = 1 }), false, syscall.EINVAL},
		{"3 CAP_NET_RAW before flags", with(func(r *request) { r.flags = 8 }), false, syscall.EPERM},
		{"4a flags before missing spec bytes", with(func(r *request) { r.flags = 8; r.size = 40; r.specs = nil }), true, syscall.EINVAL},
		{"4b DONT_TRAP with ALL_DEFAULT before missing spec bytes", with(func(r *request) {
			r.flags = 2
			r.typ = 1
			r.specs = eth[:8]
			r.size = 40
		}), true, syscall.EINVAL},
		{"5 eleven specs before missing spec bytes", with(func(r *request) { r.num = 11; r.size = 40; r.specs = nil }), true, syscall.EINVAL},
		{"6 size over num×88 before missing spec bytes", with(func(r *request) { r.size = 89; r.specs = nil }), true, syscall.EINVAL},
		{"7 reserved before missing spec bytes", with(func(r *request) { r.reserved[1] = 1; r.specs = nil; r.size = 40 }), true, syscall.EINVAL},
		{"8a missing spec bytes before the driver", with(func(r *request) { r.specs = eth[:20]; r.size = 40; r.priority = 16 }), true, syscall.ENOSPC},
		{"8b non-zero bytes after the specs before the port", with(func(r *request) { r.trailing = []byte{0, 0, 0, 1}; r.port = 9 }), true, syscall.EOPNOTSUPP},
		{"9 port before a bad spec", with(func(r *request) { r.port = 9; r.specs = badHandle }), true, syscall.EINVAL},
		{"10a unknown QP before a bad spec", with(func(r *request) { r.qp = 999; r.specs = badHandle }), true, syscall.ENOENT},
		{"10a' a PD for the QP before a bad spec", with(func(r *request) { r.qp = raw.PD().Handle(); r.specs = badHandle }), true, syscall.EINVAL},
		{"10b RC QP before a bad spec", with(func(r *request) { r.qp = rc.Handle(); r.specs = badHandle }), true, syscall.EINVAL},
		{"11 spec rules before the driver", with(func(r *request) { r.specs = badHandle; r.priority = 16 }), true, syscall.EOPNOTSUPP},
		{"12 bytes left over before the driver", with(func(r *request) { r.specs = append(append([]byte(nil), eth...), eth...); r.priority = 16 }), true, syscall.EINVAL},
		{"12 fewer specs than announced", with(func(r *request) { r.num = 2 }), true, syscall.EINVAL},
		{"13 the driver last", with(func(r *request) { r.priority = 16 }), true, syscall.ENOMEM},
	} {
		verbstest.SetNetRaw(t, v, tc.netRaw)
		resp := make([]byte, 8)
		err := c.Core(verbs.Seal{}).Invoke(abi.InvokeWrite(c.Core(verbs.Seal{}).API(), uint32(c.DriverID()), abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_CREATE_FLOW,
			tc.r.bytes(), resp, make([]byte, 8), nil))
		var errno syscall.Errno
		if !errors.As(err, &errno) || errno != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	verbstest.SetNetRaw(t, v, true)
	// And the request the cases start from is fine.
	resp := make([]byte, 8)
	if err := c.Core(verbs.Seal{}).Invoke(abi.InvokeWrite(c.Core(verbs.Seal{}).API(), uint32(c.DriverID()), abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_CREATE_FLOW,
		ok.bytes(), resp, make([]byte, 8), nil)); err != nil {
		t.Fatalf("the valid request: %v", err)
	}
	// EX_DESTROY_FLOW: comp_mask, then the handle.
	req := make([]byte, 8)
	copy(req[4:], resp[4:])
	bad := append([]byte{1, 0, 0, 0}, req[4:]...)
	destroy := func(b []byte) error {
		return c.Core(verbs.Seal{}).Invoke(abi.InvokeWrite(c.Core(verbs.Seal{}).API(), uint32(c.DriverID()), abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_DESTROY_FLOW, b, nil, nil, nil))
	}
	if err := destroy(bad); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("destroy with comp_mask: %v", err)
	}
	if err := destroy(req); err != nil {
		t.Errorf("EX_DESTROY_FLOW: %v", err)
	}
	if err := destroy(req); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("destroy again: %v", err)
	}
}
