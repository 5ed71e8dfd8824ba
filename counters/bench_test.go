package counters_test

import (
	"testing"
	"time"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
)

// boundCounters returns a counters object with packets at 0 and bytes at 1,
// bound to an L2 flow on a fake mlx5 whose READ path does not allocate
// (fakekernel's OpenAllocFree), so that only the library's allocations
// are counted.
func boundCounters(tb testing.TB) (*env, *counters.Object) {
	v := verbstest.MLX5()
	b := verbstest.New(tb, v)
	b.AllocFree = true
	c := b.Open(tb, "mlx5_0")
	e := &env{t: tb, v: v, c: c, qp: verbstest.RawQP(tb, c)}
	cs, err := counters.Create(c, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range []counters.AttachAttr{pkts(0), bytesAt(1)} {
		if err := cs.Attach(p, nil); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := flowCreate(e, cs); err != nil {
		tb.Fatal(err)
	}
	return e, cs
}

func TestReadAllocatesNothing(t *testing.T) {
	e, cs := boundCounters(t)
	e.frames(macA, 3, 100)
	vals := make([]uint64, 2)
	if err := cs.Read(vals, counters.PreferCached); err != nil || vals[0] != 3 || vals[1] != 300 {
		t.Fatalf("Read = %v, %v", vals, err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := cs.Read(vals, counters.PreferCached); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Read allocates %v times per call", n)
	}
	s := cs.AsSet()
	if n := testing.AllocsPerRun(200, func() {
		if err := s.Read(vals); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Set.Read of a counters object allocates %v times per call", n)
	}
}

// BenchmarkRead is Object.Read of two values on fake mlx5 (the kernel
// side is an allocation-free model of UVERBS_METHOD_COUNTERS_READ): the
// library's cost of ibv_read_counters. 0 B/op.
func BenchmarkRead(b *testing.B) {
	e, cs := boundCounters(b)
	e.frames(macA, 1, 64)
	vals := make([]uint64, 2)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := cs.Read(vals, counters.PreferCached); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadParallel is Object.Read of one object from b.RunParallel's
// goroutines (run it with -cpu 1,2,4): reads of one object must not wait
// for each other in the library, as ibv_read_counters takes no lock.
// kernel=0 is the fake alone, whose read takes its locks only briefly
// and costs about as much as the library's part, so the two share the
// time; kernel=1us spends a microsecond in every call before the fake's
// locks, as a system call spends its time in the kernel (entry, copies,
// the handle look-up) outside any lock of the object: the time that
// readers can spend together. 0 B/op.
func BenchmarkReadParallel(b *testing.B) {
	for _, tc := range []struct {
		name   string
		kernel time.Duration
	}{{"kernel=0", 0}, {"kernel=1us", time.Microsecond}} {
		b.Run(tc.name, func(b *testing.B) {
			e, cs := boundCounters(b)
			e.frames(macA, 1, 64)
			if tc.kernel > 0 {
				e.v.Kernel().HandleIoctl(func(object, method uint16) {
					if object == abi.UVERBS_OBJECT_COUNTERS && method == abi.UVERBS_METHOD_COUNTERS_READ {
						for t := time.Now(); time.Since(t) < tc.kernel; {
						}
					}
				})
				b.Cleanup(func() { e.v.Kernel().HandleIoctl(nil) })
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				vals := make([]uint64, 2)
				for pb.Next() {
					if err := cs.Read(vals, counters.PreferCached); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkReadStrictFake is the same through the strict fake kernel,
// whose own bookkeeping allocates per call.
func BenchmarkReadStrictFake(b *testing.B) {
	e := &env{t: b}
	v := verbstest.MLX5()
	c := verbstest.New(b, v).Open(b, "mlx5_0")
	e.v, e.c, e.qp = v, c, verbstest.RawQP(b, c)
	cs, _ := counters.Create(c, nil)
	cs.Attach(pkts(0), nil)
	if _, err := flowCreate(e, cs); err != nil {
		b.Fatal(err)
	}
	vals := make([]uint64, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := cs.Read(vals, 0); err != nil {
			b.Fatal(err)
		}
	}
}

const mlx5Fixture = "../sysfs/testdata/mlx5-eth"
const rxeFixture = "../sysfs/testdata/rxe-6.1"

func portSet(tb testing.TB, root, dev string, src counters.Source) *counters.Set {
	sets, err := counters.DescribeWith(dev, &counters.Options{Sysfs: fsAt(tb, root), NoNetlink: true})
	if err != nil {
		tb.Fatal(err)
	}
	var found *counters.Set
	for _, s := range sets {
		if s.Source == src && found == nil {
			found = s
			continue
		}
		s.Close()
	}
	if found == nil {
		tb.Fatalf("%s has no %v set", dev, src)
	}
	tb.Cleanup(func() { found.Close() })
	return found
}

func TestPortSetReadAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		root, dev string
		src       counters.Source
	}{{mlx5Fixture, "mlx5_0", counters.SourcePMA}, {mlx5Fixture, "mlx5_0", counters.SourceHwSysfs}, {rxeFixture, "rxe0", counters.SourceHwSysfs}} {
		s := portSet(t, tc.root, tc.dev, tc.src)
		vals := make([]uint64, len(s.Names))
		if n := testing.AllocsPerRun(100, func() {
			if err := s.Read(vals); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s %v: Read allocates %v times per call", tc.dev, tc.src, n)
		}
	}
}

// BenchmarkPortCountersRead reads a port's PMA counters (sysfs counters/,
// 21 files of the mlx5 fixture, data counters converted to octets). 0 B/op.
func BenchmarkPortCountersRead(b *testing.B) {
	s := portSet(b, mlx5Fixture, "mlx5_0", counters.SourcePMA)
	vals := make([]uint64, len(s.Names))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Read(vals); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPortHwCountersRead reads rxe's hw_counters (15 files, the
// capture from the VM). 0 B/op.
func BenchmarkPortHwCountersRead(b *testing.B) {
	s := portSet(b, rxeFixture, "rxe0", counters.SourceHwSysfs)
	vals := make([]uint64, len(s.Names))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Read(vals); err != nil {
			b.Fatal(err)
		}
	}
}
