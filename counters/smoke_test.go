package counters_test

import (
	"os"
	"testing"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/internal/verbstest"
)

func TestMain(m *testing.M) { os.Exit(verbstest.TestMain(m)) }

func TestSmoke(t *testing.T) {
	b := verbstest.New(t, verbstest.MLX5())
	c := b.Open(t, "mlx5_0")
	cs, err := counters.Create(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Attach(counters.AttachAttr{Desc: counters.Packets, Index: 0}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cs.Attach(counters.AttachAttr{Desc: counters.Bytes, Index: 1}, nil); err != nil {
		t.Fatal(err)
	}
	qp := verbstest.RawQP(t, c)
	f, err := flow.Create(qp, &flow.Attr{Port: 1, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: flow.MAC{0, 1, 2, 3, 4, 5}}, Mask: flow.EthFilter{DstMAC: flow.MAC{255, 255, 255, 255, 255, 255}}},
		&flow.Count{Counters: cs},
	}})
	if err != nil {
		t.Fatal(err)
	}
	v := b.Devs["mlx5_0"]
	v.ReceiveFrames(1, [6]byte{0, 1, 2, 3, 4, 5}, 3, 100)
	vals := make([]uint64, 2)
	if err := cs.Read(vals, counters.PreferCached); err != nil {
		t.Fatal(err)
	}
	t.Log(vals, v.Log())
	if err := cs.Close(); err == nil {
		t.Fatal("no EBUSY")
	} else {
		t.Log(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cs.Read(vals, 0); err == nil {
		t.Fatal("read unbound")
	} else {
		t.Log(err)
	}
}
