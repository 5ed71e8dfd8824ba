package diags

import (
	"bytes"
	"io"
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

// BenchmarkIbstat256 is ibstat (no arguments) on a synthetic tree of 256
// two-port devices: the Go side of make bench-tools without the process
// start-up, for profiles (-cpuprofile) and allocations.
func BenchmarkIbstat256(b *testing.B) {
	root := b.TempDir()
	if err := sysfstest.Synthetic(root, 256, 2); err != nil {
		b.Fatal(err)
	}
	env := &Env{SysfsRoot: root}
	var out bytes.Buffer
	if err := env.runIbstat(nil, &out, io.Discard); err != nil || out.Len() == 0 {
		b.Fatalf("ibstat: %v, %d bytes", err, out.Len())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := env.runIbstat(nil, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
