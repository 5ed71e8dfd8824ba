package uverbs

import (
	"fmt"
	"testing"

	"github.com/purerdma/rdma/abi"
)

// The per-operation benchmarks the library's instruction counts are
// measured with (valgrind --tool=callgrind, docs/performance.md): each
// runs one verb against the allocation-free stand-in kernel (portOnly),
// whose handler's own cost is subtracted, or, for the verbs the stand-in
// does not model, against the strict fake kernel. The operation runs in
// measure, so that its inclusive cost is the operation's alone.

// measure runs op; it is a function of its own (not inlined) for the
// profiler to count.
//
//go:noinline
func measure(op func() error) error { return op() }

func BenchmarkStandInQueryPort(b *testing.B) {
	c := portOnlyContext(b)
	op := func() error {
		if _, err := c.QueryPort(1); err != nil {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStandInAllocPD(b *testing.B) {
	c := portOnlyContext(b)
	op := func() error {
		pd, err := c.AllocPD()
		if err != nil {
			return err
		}
		if err := pd.Close(); err != nil {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStandInAllocPDInto(b *testing.B) {
	c := portOnlyContext(b)
	var pd PD
	op := func() error {
		if err := c.AllocPDInto(&pd); err != nil {
			return err
		}
		if err := pd.Close(); err != nil {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStandInCreateCQ(b *testing.B) {
	c := portOnlyContext(b)
	op := func() error {
		cq, err := c.CreateCQ(CQAttr{CQE: 16})
		if err != nil {
			return err
		}
		if err := cq.Close(); err != nil {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStandInCreateCQInto(b *testing.B) {
	c := portOnlyContext(b)
	var cq CQ
	op := func() error {
		if err := c.CreateCQInto(&cq, CQAttr{CQE: 16}); err != nil {
			return err
		}
		if err := cq.Close(); err != nil {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStandInCreateQP(b *testing.B) {
	pd, attr := rcQPBed(b, portOnlyContext(b))
	op := func() error {
		qp, err := pd.CreateQP(attr)
		if err != nil {
			return err
		}
		if err := qp.Close(); err != nil {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStandInCreateQPInto(b *testing.B) {
	pd, attr := rcQPBed(b, portOnlyContext(b))
	var qp QP
	op := func() error {
		if err := pd.CreateQPInto(&qp, attr); err != nil {
			return err
		}
		if err := qp.Close(); err != nil {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStandInModifyQP takes a QP from RESET to RTS (three Modify
// calls) and back to RESET (one more): the stand-in accepts every
// write command.
func BenchmarkStandInModifyQP(b *testing.B) {
	pd, attr := rcQPBed(b, portOnlyContext(b))
	qp, err := pd.CreateQP(attr)
	if err != nil {
		b.Fatal(err)
	}
	var gid [16]byte
	steps := []struct {
		attr QPAttr
		mask QPAttrMask
	}{
		{QPAttr{State: QPStateInit, Port: 1, AccessFlags: AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead},
			QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		{QPAttr{State: QPStateRTR, PathMTU: MTU1024, DestQPNum: 0x12, RQPSN: 1, MaxDestRdAtomic: 1, MinRNRTimer: 12,
			AH: AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: gid, HopLimit: 1}}},
			QPAttrState | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer},
		{QPAttr{State: QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 1, MaxRdAtomic: 1},
			QPAttrState | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrSQPSN | QPAttrMaxQPRdAtomic},
		{QPAttr{State: QPStateReset}, QPAttrState},
	}
	op := func() error {
		for i := range steps {
			if err := qp.Modify(&steps[i].attr, steps[i].mask); err != nil {
				return err
			}
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStandInRegMR(b *testing.B) {
	pd, _ := rcQPBed(b, portOnlyContext(b))
	mr, err := pd.AllocMR(4096, AccessLocalWrite)
	if err != nil {
		b.Fatal(err)
	}
	buf := mr.Buf()
	op := func() error {
		m, err := pd.RegMR(buf, AccessLocalWrite)
		if err != nil {
			return err
		}
		if err := m.Close(); err != nil {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQueryGIDTableFake(b *testing.B) {
	c := newBed(b, rxe0()).open(b, "rxe0")
	op := func() error {
		if _, err := c.QueryGIDTable(); err != nil {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostSendPollFake posts one signaled send and polls its
// completion (the fake's ring is filled by the benchmark, playing the
// kernel).
func BenchmarkPostSendPollFake(b *testing.B) {
	d := newDPBed(b)
	s, _ := d.mr.SGE(0, 64)
	send := []SendWR{{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{s}}}
	var wc [1]WC
	op := func() error {
		if n, err := d.qp.PostSend(send); n != 1 || err != nil {
			return fmt.Errorf("%d, %v", n, err)
		}
		consume(&d.qp.rxe.sq)
		pushCQE(&d.cq.ring, abi.IbUverbsWc{WrId: 1})
		if n, err := d.cq.Poll(wc[:]); n != 1 || err != nil {
			return fmt.Errorf("%d, %v", n, err)
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := measure(op); err != nil {
			b.Fatal(err)
		}
	}
}
