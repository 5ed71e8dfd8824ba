//go:build integration

package uverbs

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/integration/vmtest"
)

// Go against C (rdma-core 44) on the same kernel in the same run, per
// operation: the bare ioctl round trip (the floor), QueryPort, PD, CQ and
// QP create+destroy on rxe0. Chunks of each side alternate (the C peer
// serves one chunk per request on its stdin, in one process), so host load
// falls on both alike; the table gives each side's best and median chunk
// and the median of the per-chunk Go/C ratios. The numbers are TCG's, so
// only the ratios mean something; it reports and fails only on an
// allocation count.
func TestVMBenchmarkGoVsC(t *testing.T) {
	vmtest.Require(t)
	const per = 200
	chunks := vmtest.Rounds(3, 21)
	peer := vmtest.StartPeer(t, verbsbench(t), "serve", vmtest.Dev0)
	runC := func(op string, n int) float64 { return peer.Ask(t, fmt.Sprintf("%s %d", op, n)) }

	c, err := Open(vmtest.Dev0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	qpd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer qpd.Close()
	qcq, err := c.CreateCQ(CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer qcq.Close()
	var (
		pd PD
		cq CQ
		qp QP
	)
	bare := make([]byte, abi.IoctlHdrSize)
	h := abi.AppendIoctlHdr(bare[:0], abi.IoctlHdr{Length: abi.IoctlHdrSize, MethodID: 0x14, DriverID: uint32(c.DriverID())})
	ops := []struct {
		name, cop string
		f         func() error
	}{
		{"BareIoctl", "bare", func() error {
			if err := c.fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(&h[0]), h); err != syscall.EPROTONOSUPPORT {
				return fmt.Errorf("bare ioctl: %v, want EPROTONOSUPPORT", err)
			}
			return nil
		}},
		{"QueryPort", "queryport", func() error {
			_, err := c.QueryPort(1)
			return err
		}},
		// The create rows create in place (the Into forms), as a program
		// that creates and destroys objects at a high rate would: no
		// allocation. The plain forms allocate the object on top, about
		// 100 ns (BenchmarkAllocPD against BenchmarkAllocPDInto).
		{"AllocDeallocPD", "pd", func() error {
			if err := c.AllocPDInto(&pd); err != nil {
				return err
			}
			return pd.Close()
		}},
		{"CreateDestroyCQ", "cq", func() error {
			if err := c.CreateCQInto(&cq, CQAttr{CQE: 16}); err != nil {
				return err
			}
			return cq.Close()
		}},
		{"CreateDestroyQP", "qp", func() error {
			if err := qpd.CreateQPInto(&qp, QPInitAttr{Type: QPTypeRC, SendCQ: qcq, RecvCQ: qcq,
				Cap: QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
				return err
			}
			return qp.Close()
		}},
	}
	runGo := func(f func() error, n int) float64 {
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	goNs, cNs, ratio := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	for _, op := range ops { // warm up both
		runC(op.cop, per/4)
		runGo(op.f, per/4)
	}
	for k := 0; k < chunks; k++ {
		for _, op := range ops {
			var g, cc float64
			if k%2 == 0 {
				cc = runC(op.cop, per)
				g = runGo(op.f, per)
			} else {
				g = runGo(op.f, per)
				cc = runC(op.cop, per)
			}
			goNs[op.name] = append(goNs[op.name], g)
			cNs[op.name] = append(cNs[op.name], cc)
			ratio[op.name] = append(ratio[op.name], g/cc)
		}
	}
	quant := func(v []float64, q float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return s[int(q*float64(len(s)-1))]
	}
	var report strings.Builder
	fmt.Fprintf(&report, "uverbs ops on %s, kernel %s, TCG; %d interleaved chunks of %d operations per side; ns/op\n",
		vmtest.Dev0, vmtest.Kernel(), chunks, per)
	fmt.Fprintf(&report, "%-16s %9s %9s %9s %9s %9s %9s %7s\n", "operation", "C best", "C median", "Go best", "Go median", "Go/C best", "Go/C med", "allocs")
	for _, op := range ops {
		allocs := testing.AllocsPerRun(per, func() {
			if err := op.f(); err != nil {
				t.Fatal(err)
			}
		})
		g, cc := goNs[op.name], cNs[op.name]
		fmt.Fprintf(&report, "%-16s %9.0f %9.0f %9.0f %9.0f %9.2f %9.2f %7.1f\n", op.name,
			quant(cc, 0), quant(cc, 0.5), quant(g, 0), quant(g, 0.5), quant(g, 0)/quant(cc, 0), quant(ratio[op.name], 0.5), allocs)
		if allocs != 0 {
			t.Errorf("%s allocates %.1f times per call", op.name, allocs)
		}
	}
	t.Log("\n" + report.String())
}
