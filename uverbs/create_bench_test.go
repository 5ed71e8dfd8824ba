package uverbs

import "testing"

// The create+destroy benchmarks run through the strict fake kernel
// (internal/testmodel/fakekernel), whose own bookkeeping (its object tables, the
// request it decodes) allocates too: -benchmem's allocs/op is the
// library's and the fake's together (go test -memprofile tells them apart;
// the library's own, 0 for the Into paths, is pinned by the allocation
// tests against the allocation-free stand-in kernel).

func BenchmarkCreatePDFake(b *testing.B) {
	c := newBed(b, rxe0()).open(b, "rxe0")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		pd, err := c.AllocPD()
		if err != nil {
			b.Fatal(err)
		}
		if err := pd.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCreateCQFake(b *testing.B) {
	benchCreateCQ(b, newBed(b, rxe0()).open(b, "rxe0"))
}

func BenchmarkCreateQPFake(b *testing.B) {
	benchCreateQP(b, newBed(b, rxe0()).open(b, "rxe0"))
}

// The mlx5 create+destroy benchmarks: the provider's buffers are anonymous
// memory outside the Go heap, its doorbell records and user indices come
// from the context's pools.

func BenchmarkCreateCQMlx5Fake(b *testing.B) {
	_, c := mlx5Bed(b, nil)
	benchCreateCQ(b, c)
}

func BenchmarkCreateQPMlx5Fake(b *testing.B) {
	_, c := mlx5Bed(b, nil)
	benchCreateQP(b, c)
}

// BenchmarkCreateQPIntoMlx5Fake creates in place (CreateQPInto): the
// mlx5 data path and its work request arrays serve again, so the
// library's share of allocs/op is 0 and the rest is the fake's.
func BenchmarkCreateQPIntoMlx5Fake(b *testing.B) {
	_, c := mlx5Bed(b, nil)
	benchCreateQPInto(b, c, new(QP))
}

// benchCreateCQ times CreateCQ and Close on c.
func benchCreateCQ(b *testing.B, c *Context) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		cq, err := c.CreateCQ(CQAttr{CQE: 16})
		if err != nil {
			b.Fatal(err)
		}
		if err := cq.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCreateQP times CreateQP (RC) and Close on a PD and CQ of c.
func benchCreateQP(b *testing.B, c *Context) { benchCreateQPInto(b, c, nil) }

// benchCreateQPInto times CreateQPInto into qp, or CreateQP when qp is
// nil, and Close on a PD and CQ of c.
func benchCreateQPInto(b *testing.B, c *Context, into *QP) {
	pd, err := c.AllocPD()
	if err != nil {
		b.Fatal(err)
	}
	defer pd.Close()
	cq, err := c.CreateCQ(CQAttr{CQE: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer cq.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		attr := QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap()}
		qp := into
		if qp == nil {
			if qp, err = pd.CreateQP(attr); err != nil {
				b.Fatal(err)
			}
		} else if err := pd.CreateQPInto(qp, attr); err != nil {
			b.Fatal(err)
		}
		if err := qp.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
