package uverbs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/internal/sys"
)

// The Into forms create an object in memory the caller provides: a zero
// object or a closed one, never a live one; a failed create leaves a zero
// object, which can be created into again.
func TestCreateInto(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")

	var pd PD
	if err := c.AllocPDInto(&pd); err != nil {
		t.Fatalf("AllocPDInto(zero PD): %v", err)
	}
	first := pd.Handle()
	if err := c.AllocPDInto(&pd); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("AllocPDInto(live PD) = %v, want EBUSY", err)
	}
	if pd.Handle() != first || pd.Context() != c {
		t.Fatalf("a refused AllocPDInto changed the PD: handle %d, want %d", pd.Handle(), first)
	}
	var cq CQ
	if err := c.CreateCQInto(&cq, CQAttr{CQE: 0}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("CreateCQInto(0 entries) = %v, want EINVAL", err)
	}
	if cq.Context() != nil || cq.Handle() != 0 || cq.CQE() != 0 || cq.Close() != nil {
		t.Fatal("a failed CreateCQInto left a CQ that is not zero")
	}
	if err := c.CreateCQInto(&cq, CQAttr{CQE: 8}); err != nil {
		t.Fatalf("CreateCQInto after a failure: %v", err)
	}
	if err := c.CreateCQInto(&cq, CQAttr{CQE: 8}); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("CreateCQInto(live CQ) = %v, want EBUSY", err)
	}
	var qp QP
	attr := QPInitAttr{Type: QPTypeRC, SendCQ: &cq, RecvCQ: &cq, Cap: rcCap()}
	if err := pd.CreateQPInto(&qp, attr); err != nil {
		t.Fatalf("CreateQPInto(zero QP): %v", err)
	}
	if err := pd.CreateQPInto(&qp, attr); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("CreateQPInto(live QP) = %v, want EBUSY", err)
	}
	// The refused calls left every object working: the PD is still in use.
	if err := pd.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("closing the QP's PD = %v, want EBUSY", err)
	}

	// Closed objects are created again in place; a stale pointer sees the
	// new object, as the documentation says.
	stale := &qp
	oldNum := qp.Num()
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := qp.PostRecv([]RecvWR{{ID: 1}}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("PostRecv on a closed QP = %v, want os.ErrClosed", err)
	}
	if err := pd.CreateQPInto(&qp, attr); err != nil {
		t.Fatalf("CreateQPInto(closed QP): %v", err)
	}
	if stale.Num() == 0 || stale.Num() == oldNum {
		t.Errorf("QP number %#x after the new create, was %#x", stale.Num(), oldNum)
	}
	if n, err := qp.PostRecv([]RecvWR{{ID: 7, SGL: []SGE{{Addr: 0x1000, Length: 8, LKey: 1}}}}); n != 1 || err != nil {
		t.Errorf("PostRecv on the QP created in place = %d, %v", n, err)
	}
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateCQInto(&cq, CQAttr{CQE: 8}); err != nil {
		t.Fatalf("CreateCQInto(closed CQ): %v", err)
	}
	if err := pd.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.AllocPDInto(&pd); err != nil {
		t.Fatalf("AllocPDInto(closed PD): %v", err)
	}

	// Objects the context's Close destroyed are reusable on another context.
	if err := pd.CreateQPInto(&qp, QPInitAttr{Type: QPTypeRC, SendCQ: &cq, RecvCQ: &cq, Cap: rcCap()}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := b.open(t, "rxe0")
	if err := c2.AllocPDInto(&pd); err != nil {
		t.Fatalf("AllocPDInto(PD of a closed context): %v", err)
	}
	if err := c2.CreateCQInto(&cq, CQAttr{CQE: 8}); err != nil {
		t.Fatalf("CreateCQInto(CQ of a closed context): %v", err)
	}
	if err := pd.CreateQPInto(&qp, QPInitAttr{Type: QPTypeRC, SendCQ: &cq, RecvCQ: &cq, Cap: rcCap()}); err != nil {
		t.Fatalf("CreateQPInto(QP of a closed context): %v", err)
	}
	if pd.Context() != c2 || cq.Context() != c2 || qp.Context() != c2 {
		t.Error("objects created in place do not belong to the new context")
	}

	// Zero and nil receivers answer EINVAL, also when offered a live object.
	var nilCtx *Context
	if err := nilCtx.AllocPDInto(&pd); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil Context's AllocPDInto = %v, want EINVAL", err)
	}
	if err := new(Context).CreateCQInto(&cq, CQAttr{CQE: 1}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("zero Context's CreateCQInto = %v, want EINVAL", err)
	}
	if err := new(PD).CreateQPInto(&qp, attr); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("zero PD's CreateQPInto = %v, want EINVAL", err)
	}
	var nilPD *PD
	if err := c2.AllocPDInto(nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("AllocPDInto(nil) = %v, want EINVAL", err)
	}
	if err := c2.CreateCQInto(nil, CQAttr{CQE: 1}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("CreateCQInto(nil) = %v, want EINVAL", err)
	}
	if err := nilPD.CreateQPInto(&qp, attr); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil PD's CreateQPInto = %v, want EINVAL", err)
	}
}

// Creating in place allocates nothing: PD, CQ and QP create+destroy
// cycles into the same objects, against an allocation-free stand-in
// kernel that maps rxe's queues. Nor does anything stay mapped.
func TestCreateIntoAllocatesNothing(t *testing.T) {
	c := portOnlyContext(t)
	_, inPlace := standInCycles(t, c)
	mapped := sys.Mapped()
	for _, cy := range inPlace {
		if err := cy.f(); err != nil {
			t.Fatalf("%s: %v", cy.name, err)
		}
		if n := testing.AllocsPerRun(200, func() {
			if err := cy.f(); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s allocates %v times, want 0", cy.name, n)
		}
		if got := sys.Mapped(); got != mapped {
			t.Errorf("%s: %d bytes mapped after 200 cycles, want %d", cy.name, got, mapped)
		}
	}
}

// cycle is one create+destroy cycle of an object.
type cycle struct {
	name string
	f    func() error
}

// standInCycles returns the create+destroy cycles of a PD, a CQ and an RC
// QP (with one receive posted) on c, the stand-in kernel: with the plain
// methods and in place, in that order. It makes the QPs' PD and CQ, and
// creates and closes a first QP, which maps the context's doorbell page
// for good.
func standInCycles(tb testing.TB, c *Context) (plain, inPlace [3]cycle) {
	tb.Helper()
	pd, qcq := pdAndCQ(tb, c)
	attr := QPInitAttr{Type: QPTypeRC, SendCQ: qcq, RecvCQ: qcq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}
	first, err := pd.CreateQP(attr)
	if err != nil {
		tb.Fatal(err)
	}
	if err := first.Close(); err != nil {
		tb.Fatal(err)
	}
	recv := []RecvWR{{ID: 1, SGL: []SGE{{Addr: 0x1000, Length: 8, LKey: 5}}}}
	useQP := func(qp *QP) error {
		if n, err := qp.PostRecv(recv); n != 1 || err != nil {
			return fmt.Errorf("PostRecv = %d, %v", n, err)
		}
		return qp.Close()
	}
	var xpd PD
	var xcq CQ
	var xqp QP
	plain = [3]cycle{
		{"AllocPD+Close", func() error {
			pd, err := c.AllocPD()
			if err != nil {
				return err
			}
			return pd.Close()
		}},
		{"CreateCQ+Close", func() error {
			cq, err := c.CreateCQ(CQAttr{CQE: 8})
			if err != nil {
				return err
			}
			return cq.Close()
		}},
		{"CreateQP+Close", func() error {
			qp, err := pd.CreateQP(attr)
			if err != nil {
				return err
			}
			return useQP(qp)
		}},
	}
	inPlace = [3]cycle{
		{"AllocPDInto+Close", func() error {
			if err := c.AllocPDInto(&xpd); err != nil {
				return err
			}
			return xpd.Close()
		}},
		{"CreateCQInto+Close", func() error {
			if err := c.CreateCQInto(&xcq, CQAttr{CQE: 8}); err != nil {
				return err
			}
			return xcq.Close()
		}},
		{"CreateQPInto+Close", func() error {
			if err := pd.CreateQPInto(&xqp, attr); err != nil {
				return err
			}
			return useQP(&xqp)
		}},
	}
	return plain, inPlace
}

// On mlx5, a QP created in place keeps the data path of its earlier life
// and its work request arrays when they are large enough, and a CQ's
// poller that looks the QP up finds the new one.
func TestCreateQPIntoMlx5ReusesArrays(t *testing.T) {
	_, c := mlx5Bed(t, nil)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	var qp QP
	big := QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}}
	if err := pd.CreateQPInto(&qp, big); err != nil {
		t.Fatal(err)
	}
	x, sqW := qp.mlx5, &qp.mlx5.sqWrid[0]
	qp.mlx5.sqWrid[1] = 99
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	small := big
	small.Cap.MaxSendWR, small.Cap.MaxRecvWR = 16, 16
	if err := pd.CreateQPInto(&qp, small); err != nil {
		t.Fatal(err)
	}
	if qp.mlx5 != x || &qp.mlx5.sqWrid[0] != sqW {
		t.Error("the QP created in place did not reuse its mlx5 data path and arrays")
	}
	if qp.mlx5.sqWrid[1] != 0 || qp.mlx5.qpn != qp.Num() || qp.m5spare != nil {
		t.Errorf("reused data path not reset: wr_id %d, QP number %#x (QP %#x)", qp.mlx5.sqWrid[1], qp.mlx5.qpn, qp.Num())
	}
	// The table a CQ's poller looks QPs up in has the QP's data path
	// under its user index (CQE version 1) or QP number.
	p := c.prov.(*mlx5Provider)
	key := qp.mlx5.uidx
	if p.cqeVersion == 0 {
		key = qp.Num()
	}
	found := p.qps.get(key)
	if found != qp.mlx5 {
		t.Errorf("the poller's table has %p under %#x, want the QP's data path %p", found, key, qp.mlx5)
	}
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	big.Cap.MaxSendWR = 256
	if err := pd.CreateQPInto(&qp, big); err != nil {
		t.Fatal(err)
	}
	if len(qp.mlx5.sqWrid) != int(qp.mlx5.sqCnt) || len(qp.mlx5.sqEnd) != int(qp.mlx5.sqCnt) {
		t.Errorf("send arrays of %d and %d for %d basic blocks", len(qp.mlx5.sqWrid), len(qp.mlx5.sqEnd), qp.mlx5.sqCnt)
	}
}

// The library's side of create+destroy (the QP's with one receive
// posted), against the allocation-free stand-in kernel (as
// BenchmarkQueryPort): 1 allocs/op with the plain forms (the object), 0 in
// place. The VM benchmark measures them against Linux and rdma-core.

func BenchmarkAllocPD(b *testing.B)      { benchStandIn(b, false, 0) }
func BenchmarkAllocPDInto(b *testing.B)  { benchStandIn(b, true, 0) }
func BenchmarkCreateCQ(b *testing.B)     { benchStandIn(b, false, 1) }
func BenchmarkCreateCQInto(b *testing.B) { benchStandIn(b, true, 1) }
func BenchmarkCreateQP(b *testing.B)     { benchStandIn(b, false, 2) }
func BenchmarkCreateQPInto(b *testing.B) { benchStandIn(b, true, 2) }

// benchStandIn times cycle k of standInCycles, plain or in place.
func benchStandIn(b *testing.B, inPlace bool, k int) {
	plain, into := standInCycles(b, portOnlyContext(b))
	f := plain[k].f
	if inPlace {
		f = into[k].f
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
}
