package uverbs

import (
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
)

func mlx5Bed(t testing.TB, adjust func(v *fakekernel.Verbs)) (*bed, *Context) {
	v := fakekernel.MLX5("mlx5_0")
	if adjust != nil {
		adjust(v)
	}
	b := newBed(t, v)
	return b, b.open(t, "mlx5_0")
}

func TestMlx5Context(t *testing.T) {
	_, c := mlx5Bed(t, nil)
	if c.DriverID() != rdma.DriverMLX5 {
		t.Fatalf("driver id %d (the sysfs fallback should find mlx5_core)", c.DriverID())
	}
	p := c.prov.(*mlx5Provider)
	if p.req.MaxCqeVersion != 1 || p.req.LibCaps != abi.MLX5_LIB_CAP_4K_UAR|abi.MLX5_LIB_CAP_DYN_UAR || p.req.TotalNumBfregs != 16 {
		t.Errorf("alloc_ucontext request %+v", *p.req)
	}
	if p.cqeVersion != 1 || !p.dynUAR || p.resp.ResponseLength != 72 {
		t.Errorf("negotiated CQE version %d, dynamic UAR %v, response length %d", p.cqeVersion, p.dynUAR, p.resp.ResponseLength)
	}
	qc, err := c.QueryContext()
	if err != nil || qc.NumCompVectors != 8 {
		t.Errorf("QueryContext = %+v, %v", qc, err)
	}
	a, err := c.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if a.FWVer != "16.35.2000" || a.TSOCaps.MaxTSO != 262144 || a.RSSCaps.RxHashFunction != abi.MLX5_RX_HASH_FUNC_TOEPLITZ ||
		a.PacketPacingCaps.QPRateLimitMax != 100000000 || a.RSSCaps.MaxRWQIndirectionTableSize != 2048 || a.MaxDMSize != 131072 {
		t.Errorf("device: %+v", a)
	}
}

func TestMlx5Objects(t *testing.T) {
	b, c := mlx5Bed(t, func(v *fakekernel.Verbs) { v.NetRaw = true })
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 100})
	if err != nil {
		t.Fatal(err)
	}
	if cq.CQE() != 127 {
		t.Errorf("CQE = %d, want 127 (128 entries for 100)", cq.CQE())
	}
	ring := cq.res.anon[0]
	if len(ring) < 128*64 {
		t.Fatalf("CQ ring of %d bytes", len(ring))
	}
	for i := 0; i < 128; i++ {
		if ring[i*64+63] != 0xf0 {
			t.Fatalf("CQE %d op_own %#x, want 0xf0 (invalid, owned by hardware)", i, ring[i*64+63])
		}
	}
	dev := b.devs["mlx5_0"]
	cmd, ok := dev.Mlx5CreateCQ(cq.Handle())
	if !ok {
		t.Fatalf("the fake has no mlx5 CQ %d", cq.Handle())
	}
	if cmd.BufAddr != addrOf(ring) {
		t.Errorf("create_cq buf_addr %#x, want the CQ's ring at %#x", cmd.BufAddr, addrOf(ring))
	}
	p := c.prov.(*mlx5Provider)
	if cmd.Flags != abi.MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX || uint32(cmd.UarPageIndex) != p.uar.pageID || cmd.DbAddr%64 != 0 || cmd.BufAddr%4096 != 0 {
		t.Errorf("create_cq driver data %+v (UAR page %d)", cmd, p.uar.pageID)
	}
	rc, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	qcmd, _ := dev.Mlx5CreateQP(rc.Handle())
	if qcmd.Flags != abi.MLX5_QP_FLAG_UAR_PAGE_INDEX || qcmd.BfregIndex != p.uar.pageID || qcmd.Uidx == 0 || qcmd.Uidx > 0xffffff ||
		qcmd.SqWqeCount&(qcmd.SqWqeCount-1) != 0 || qcmd.RqWqeCount != 16 || qcmd.SqBufAddr != 0 {
		t.Errorf("RC create_qp driver data %+v", qcmd)
	}
	raw, err := pd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxRecvWR: 64, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	rcmd, _ := dev.Mlx5CreateQP(raw.Handle())
	if rcmd.SqWqeCount != 0 || rcmd.RqWqeCount != 64 || rcmd.RqWqeShift != 4 || rcmd.Uidx == qcmd.Uidx || rcmd.BufAddr == 0 {
		t.Errorf("receive-only RAW_PACKET create_qp driver data %+v", rcmd)
	}
	rawSQ, err := pd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 64, MaxSendSGE: 1, MaxInlineData: 18}})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := dev.Mlx5CreateQP(rawSQ.Handle()); s.SqBufAddr == 0 || s.SqWqeCount == 0 || rawSQ.res.nanon != 1 || s.SqBufAddr != addrOf(rawSQ.res.anon[0]) {
		t.Errorf("RAW_PACKET with a send queue: %+v", s)
	}
	// mlx5_arm_cq: the arm word (sn 0, the next completion, ci 0) in the
	// doorbell record's second word, then with the CQ number at the
	// UAR's MLX5_CQ_DOORBELL, big-endian; solicited-only sets bit 24.
	for _, sol := range []bool{false, true} {
		if err := cq.ReqNotify(sol); err != nil {
			t.Fatalf("ReqNotify(%v) on mlx5: %v", sol, err)
		}
		want := uint32(0)
		if sol {
			want = 1 << 24
		}
		rec := unsafe.Slice((*byte)(unsafe.Pointer(cq.m5.dbrec)), 8)
		db := unsafe.Slice((*byte)(unsafe.Add(cq.m5.uar, 0x20)), 8)
		if got := binary.BigEndian.Uint32(rec[4:]); got != want {
			t.Errorf("ReqNotify(%v): arm word %#x in the doorbell record, want %#x", sol, got, want)
		}
		if w, n := binary.BigEndian.Uint32(db), binary.BigEndian.Uint32(db[4:]); w != want || n != cq.m5.cqn {
			t.Errorf("ReqNotify(%v): arm doorbell %#x %#x, want %#x %#x", sol, w, n, want, cq.m5.cqn)
		}
	}
	uar := p.uar.handle
	before := len(b.devs["mlx5_0"].Log())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := b.devs["mlx5_0"].Log()[before:]
	want := []string{"destroy qp " + itoa(rawSQ.handle), "destroy qp " + itoa(raw.handle), "destroy qp " + itoa(rc.handle),
		"destroy cq " + itoa(cq.handle), "dealloc pd " + itoa(pd.handle), "destroy uar " + itoa(uar),
		"close async event file", "close file"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("teardown:\n got %q\nwant %q", got, want)
	}
}

func TestMlx5RawPacketNeedsNetRaw(t *testing.T) {
	_, c := mlx5Bed(t, nil)
	pd, _ := c.AllocPD()
	cq, err := c.CreateCQ(CQAttr{CQE: 8})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxRecvWR: 8, MaxRecvSGE: 1}})
	wantErrno(t, err, syscall.EPERM)
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "mlx5_0") {
		t.Errorf("%v: want os.ErrPermission naming the device", err)
	}
}

// Without write combining the provider falls back from a BF to an NC UAR.
func TestMlx5NoWriteCombining(t *testing.T) {
	b, c := mlx5Bed(t, func(v *fakekernel.Verbs) { v.Mlx5.WC = false })
	if _, err := c.CreateCQ(CQAttr{CQE: 8}); err != nil {
		t.Fatal(err)
	}
	if log := strings.Join(b.devs["mlx5_0"].Log(), ","); !strings.Contains(log, "alloc uar") || !strings.Contains(log, "mmap mlx5 uar") {
		t.Errorf("log %s", log)
	}
}

// A kernel without DYN_UAR gives static bfregs: CQs and QPs name no UAR.
func TestMlx5StaticUAR(t *testing.T) {
	b, c := mlx5Bed(t, func(v *fakekernel.Verbs) { v.Mlx5.DynUAR = false })
	p := c.prov.(*mlx5Provider)
	if p.dynUAR || p.resp.TotBfregs != 16 {
		t.Fatalf("dynamic UAR %v, %d static bfregs", p.dynUAR, p.resp.TotBfregs)
	}
	pd, _ := c.AllocPD()
	cq, err := c.CreateCQ(CQAttr{CQE: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()}); err != nil {
		t.Fatal(err)
	}
	// libmlx5's mlx5_init_context maps tot_bfregs / 2 static UAR pages
	// and allocates no UAR object; so does the library.
	log := strings.Join(b.devs["mlx5_0"].Log(), ",")
	if strings.Contains(log, "alloc uar") || strings.Count(log, "mmap mlx5 static uar") != 8 || len(p.staticUARs) != 8 {
		t.Errorf("static bfregs: %d pages mapped, log %s", len(p.staticUARs), log)
	}
	if err := c.Close(); err != nil || p.staticUARs != nil {
		t.Errorf("Close: %v, %d pages still mapped", err, len(p.staticUARs))
	}
}

// A device with CQE version 0 cannot have RAW_PACKET QPs; other QPs use the
// default user index.
func TestMlx5CQEVersion0(t *testing.T) {
	b, c := mlx5Bed(t, func(v *fakekernel.Verbs) { v.Mlx5.CQEVersion = 0; v.NetRaw = true })
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(CQAttr{CQE: 8})
	ud, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	if cmd, ok := b.devs["mlx5_0"].Mlx5CreateQP(ud.Handle()); !ok || cmd.Uidx != 0xffffff {
		t.Errorf("user index %#x with CQE version 0 (found %v)", cmd.Uidx, ok)
	}
	_, err = pd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxRecvWR: 8, MaxRecvSGE: 1}})
	wantErrno(t, err, syscall.EINVAL)
}
