//go:build integration

package uverbs

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/integration/vmtest"
)

// Go against C (rdma-core 44) on the same kernel in the same run: the bare
// ioctl round trip (the floor), QueryPort, AllocPD+Dealloc,
// CreateCQ+Destroy on rxe0. The numbers are TCG's (no KVM here), so only
// the ratios mean something.
func TestVMBenchmarkGoVsC(t *testing.T) {
	vmtest.Require(t)
	peer := verbsbench(t)
	out, err := exec.Command(peer, "bench", vmtest.Dev0, "5000").Output()
	if err != nil {
		t.Fatalf("verbsbench: %v", err)
	}
	cNs := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 {
			cNs[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	c, err := Open(vmtest.Dev0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bare := make([]byte, abi.IoctlHdrSize)
	h := abi.AppendIoctlHdr(bare[:0], abi.IoctlHdr{Length: abi.IoctlHdrSize, MethodID: 0x14, DriverID: uint32(c.DriverID())})
	benches := []struct {
		name string
		f    func(b *testing.B)
	}{
		{"BareIoctl", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := c.fd.Ioctl(abi.RDMA_VERBS_IOCTL, unsafe.Pointer(&h[0]), h); err != syscall.EPROTONOSUPPORT {
					b.Fatal(err)
				}
			}
		}},
		{"QueryPort", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := c.QueryPort(1); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"AllocDeallocPD", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				pd, err := c.AllocPD()
				if err != nil {
					b.Fatal(err)
				}
				if err := pd.Close(); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"CreateDestroyCQ", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cq, err := c.CreateCQ(CQAttr{CQE: 16})
				if err != nil {
					b.Fatal(err)
				}
				if err := cq.Close(); err != nil {
					b.Fatal(err)
				}
			}
		}},
	}
	var report strings.Builder
	fmt.Fprintf(&report, "kernel %s, TCG\n%-16s %10s %10s %7s %12s\n", vmtest.Kernel(), "op", "Go ns/op", "C ns/op", "Go/C", "Go allocs/op")
	for _, bm := range benches {
		r := testing.Benchmark(func(b *testing.B) { b.ReportAllocs(); bm.f(b) })
		goNs := float64(r.T.Nanoseconds()) / float64(r.N)
		fmt.Fprintf(&report, "%-16s %10.0f %10.0f %7.2f %12d\n", bm.name, goNs, cNs[bm.name], goNs/cNs[bm.name], r.AllocsPerOp())
		if bm.name == "QueryPort" && r.AllocsPerOp() != 0 {
			t.Errorf("QueryPort allocates %d times per call", r.AllocsPerOp())
		}
	}
	t.Log("\n" + report.String())
}
