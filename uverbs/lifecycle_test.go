package uverbs

import (
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/verbs"

	"github.com/purerdma/rdma/abi"
)

func rcCap() QPCap { return QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1} }

// connectRC drives a and b to RTS against each other: a reaches b at
// GID gb, b reaches a at ga.
func connectRC(t testing.TB, a, b *QP, ga, gb rdma.GID) {
	t.Helper()
	toRTS(t, a, b.Num(), gb)
	toRTS(t, b, a.Num(), ga)
}

// portGID returns GID 0 of port 1 of c, the one the RC tests address.
func portGID(t testing.TB, c *Context) GIDEntry {
	t.Helper()
	g, err := c.QueryGID(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// toRTS drives qp from RESET to RTS against a peer QP number, the way
// ibv_rc_pingpong does on RoCE (GRH with source GID index 0).
func toRTS(t testing.TB, qp *QP, remote uint32, dgid rdma.GID) {
	t.Helper()
	steps := []struct {
		attr QPAttr
		mask QPAttrMask
	}{
		{QPAttr{State: QPStateInit, Port: 1, AccessFlags: AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead},
			QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		{QPAttr{State: QPStateRTR, PathMTU: MTU1024, DestQPNum: remote, RQPSN: 1, MaxDestRdAtomic: 1, MinRNRTimer: 12,
			AH: AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: dgid, HopLimit: 1}}},
			QPAttrState | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer},
		{QPAttr{State: QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 1, MaxRdAtomic: 1},
			QPAttrState | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrSQPSN | QPAttrMaxQPRdAtomic},
	}
	for _, s := range steps {
		if err := qp.Modify(&s.attr, s.mask); err != nil {
			t.Fatalf("modify to %v: %v", s.attr.State, err)
		}
	}
}

func TestLifecycleRXE(t *testing.T) {
	b := newBed(t, rxe0(), rxe1())
	c0 := b.open(t, "rxe0")
	c1 := b.open(t, "rxe1")
	if c0.NumCompVectors() != 2 || c0.CoreSupport() != abi.IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS {
		t.Errorf("context: %d comp vectors, core support %#x", c0.NumCompVectors(), c0.CoreSupport())
	}
	if c0.Device().Name != "rxe0" || c0.DriverID() != abi.RDMA_DRIVER_RXE {
		t.Errorf("device %+v", c0.Device())
	}
	var qps [2]*QP
	var gids [2]rdma.GID
	for i, c := range []*Context{c0, c1} {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(CQAttr{CQE: 16})
		if err != nil {
			t.Fatal(err)
		}
		if cq.CQE() != 31 {
			t.Errorf("CQE = %d, want rxe's 31 for 16", cq.CQE())
		}
		qps[i], err = pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap(), SQSigAll: true})
		if err != nil {
			t.Fatal(err)
		}
		gids[i] = portGID(t, c).GID
	}
	connectRC(t, qps[0], qps[1], gids[0], gids[1])
	a, init, err := qps[0].Query(QPAttrState | QPAttrDestQPN | QPAttrCap)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != QPStateRTS || a.DestQPNum != qps[1].Num() || a.AH.GRH.DGID != gids[1] || !init.SQSigAll || a.Cap.MaxSendWR != 31 {
		t.Errorf("query: %+v %+v", a, init)
	}
	log := strings.Join(b.devs["rxe0"].Log(), "\n")
	for _, want := range []string{"mmap rxe cq", "mmap rxe rq", "mmap rxe sq", "modify qp 2 to 3"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	// Explicit destroys in dependency order.
	if err := qps[0].Close(); err != nil {
		t.Fatal(err)
	}
	if err := qps[0].Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := qps[0].Query(QPAttrState); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Query of a destroyed QP: %v", err)
	}
}

// The teardown order on Close is the kernel's (rdma_core.c
// uverbs_destroy_ufile_hw, ib_destroy_usecnt): flows, counters, QPs,
// CQs, PDs, then channels, the async event file and the device file.
func TestCloseTeardownOrder(t *testing.T) {
	b := newBed(t, rxe0())
	c, err := Open("rxe0", b.opts)
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := c.CreateCompChannel()
	pd1, _ := c.AllocPD()
	cq1, _ := c.CreateCQ(CQAttr{CQE: 4, Channel: ch})
	cq2, _ := c.CreateCQ(CQAttr{CQE: 4})
	pd2, _ := c.AllocPD()
	qp1, err := pd1.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq1, RecvCQ: cq2, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	qp2, err := pd2.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq2, RecvCQ: cq2, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	c.core.OnClose(verbs.StageCounters, func(verbs.Invoker) error { order = append(order, "counters"); return nil })
	c.core.OnClose(verbs.StageFlow, func(verbs.Invoker) error { order = append(order, "flow"); return nil })
	cancelled := c.core.OnClose(verbs.StageFlow, func(verbs.Invoker) error { t.Error("cancelled hook ran"); return nil })
	cancelled()
	before := len(b.devs["rxe0"].Log())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	got := b.devs["rxe0"].Log()[before:]
	want := []string{
		"destroy qp " + itoa(qp2.Handle()), "destroy qp " + itoa(qp1.Handle()),
		"destroy cq " + itoa(cq2.Handle()), "destroy cq " + itoa(cq1.Handle()),
		"dealloc pd " + itoa(pd2.Handle()), "dealloc pd " + itoa(pd1.Handle()),
		"close comp channel " + itoa(uint32(ch.raw)),
		"close async event file", "close file",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("teardown:\n got %q\nwant %q", got, want)
	}
	if !reflect.DeepEqual(order, []string{"flow", "counters"}) {
		t.Errorf("hooks ran %v", order)
	}
	// Objects of a closed context: Close is a no-op, other calls fail.
	for _, err := range []error{qp1.Close(), cq1.Close(), pd1.Close(), ch.Close()} {
		if err != nil {
			t.Errorf("Close after the context's Close: %v", err)
		}
	}
	if _, err := c.AllocPD(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("AllocPD after Close: %v", err)
	}
	if _, err := c.QueryPort(1); !errors.Is(err, os.ErrClosed) {
		t.Errorf("QueryPort after Close: %v", err)
	}
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// Destroying something still in use is the kernel's EBUSY; the object
// stays usable and destroys fine once its users are gone.
func TestDestroyBusy(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(CQAttr{CQE: 8, Channel: ch})
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	wantErrno(t, pd.Close(), syscall.EBUSY)
	wantErrno(t, cq.Close(), syscall.EBUSY)
	wantErrno(t, ch.Close(), syscall.EBUSY)
	if _, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()}); err != nil {
		t.Errorf("PD unusable after a failed destroy: %v", err)
	}
	for _, f := range []func() error{qp.Close, cq.Close, ch.Close, pd.Close} {
		if err := f(); err != nil && !errors.Is(err, syscall.EBUSY) {
			t.Fatal(err)
		}
	}
}

func TestQueries(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	a, err := c.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if a.FWVer != "0.0.0" || a.NodeGUID != 0xacade8fffe375f42 || a.VendorID != 0xffffff || a.MaxQP != 1048560 ||
		a.DeviceCapFlags != 0x01223c76 || a.DeviceCapFlagsEx != 0x1223c76 || a.PhysPortCnt != 1 || a.AtomicCap != AtomicHCA {
		t.Errorf("device: %+v", a)
	}
	p, err := c.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	if p.State != rdma.PortActive || p.MaxMTU != MTU4096 || p.ActiveMTU != MTU1024 || p.LinkLayer != rdma.LinkLayerEthernet ||
		p.GIDTableLen != 1024 || p.MaxMsgSize != 0x800000 || p.ActiveSpeed != 8 || p.PhysState != 5 {
		t.Errorf("port: %+v", p)
	}
	wantErrno(t, func() error { _, err := c.QueryPort(0); return err }(), syscall.EINVAL)
	wantErrno(t, func() error { _, err := c.QueryPort(2); return err }(), syscall.EINVAL)
	gids, err := c.QueryGIDTable()
	if err != nil {
		t.Fatal(err)
	}
	if len(gids) != 2 || gids[0].GID.String() != "fe80::acad:e8ff:fe37:5f42" || gids[1].GID.String() != "::ffff:10.77.0.1" ||
		gids[1].Type != GIDTypeRoCEv2 || gids[1].Index != 1 || gids[1].Port != 1 {
		t.Errorf("GID table: %+v", gids)
	}
	into := make([]GIDEntry, 3)
	if n, err := c.QueryGIDTableInto(into); n != 2 || err != nil || into[0] != gids[0] || into[1] != gids[1] || into[2] != (GIDEntry{}) {
		t.Errorf("QueryGIDTableInto(3) = %d, %v: %+v", n, err, into)
	}
	if _, err := c.QueryGIDTableInto(into[:1]); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryGIDTableInto with room for 1 of 2: %v, want EINVAL", err)
	}
	if _, err := c.QueryGIDTableInto(nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryGIDTableInto(nil): %v, want EINVAL", err)
	}
	g, err := c.QueryGID(1, 1)
	if err != nil || g != gids[1] {
		t.Errorf("QueryGID(1, 1) = %+v, %v", g, err)
	}
	_, err = c.QueryGID(1, 5)
	wantErrno(t, err, syscall.ENODATA)
	_, err = c.QueryGID(1, 1024)
	wantErrno(t, err, syscall.EINVAL)
	_, err = c.QueryContext()
	wantErrno(t, err, syscall.EOPNOTSUPP)
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("QueryContext on rxe: %v does not match ErrNotSupported", err)
	}
}
