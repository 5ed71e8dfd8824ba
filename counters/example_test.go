package counters_test

import (
	"fmt"
	"log"
	"time"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/uverbs"
)

// The example of ibv_read_counters(3): a counters object with packets at
// index 0 and bytes at index 1 attached statically, an L2 flow on a
// RAW_PACKET QP with the count action, a read every second. Needs an mlx5
// device and CAP_NET_RAW.
func Example() {
	c, err := uverbs.Open("mlx5_0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // destroys what is left: the flow, the counters, the QP…

	cs, err := counters.Create(c, nil)
	if err != nil {
		log.Fatal(err) // on rxe: ErrNotSupported
	}
	for i, d := range []counters.Description{counters.Packets, counters.Bytes} {
		if err := cs.Attach(counters.AttachAttr{Desc: d, Index: uint32(i)}, nil); err != nil {
			log.Fatal(err)
		}
	}
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(uverbs.CQAttr{CQE: 16})
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxRecvWR: 16, MaxRecvSGE: 1}})
	if err != nil {
		log.Fatal(err)
	}
	f, err := flow.Create(qp, &flow.Attr{Port: 1, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: flow.MAC{0, 1, 2, 3, 4, 5}},
			Mask: flow.EthFilter{DstMAC: flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}},
		&flow.Count{Counters: cs},
	}})
	if err != nil {
		log.Fatal(err)
	}
	values := make([]uint64, 2)
	for loop := 0; loop < 9; loop++ {
		time.Sleep(time.Second)
		if err := cs.Read(values, counters.PreferCached); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("PACKETS = %d, BYTES = %d\n", values[0], values[1])
	}
	f.Close()  // the flow first…
	cs.Close() // …then the counters (EBUSY while a flow counts into them)
}

// List a device's counter sets and read each, like `purerdma counters`.
func ExampleDescribe() {
	sets, err := counters.Describe("rxe0")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range sets {
		values := make([]uint64, len(s.Names))
		if err := s.Read(values); err != nil {
			fmt.Printf("set %d (%v, %v): %v\n", s.ID, s.Counted, s.Source, err)
			continue
		}
		for i, name := range s.Names {
			fmt.Printf("set %d port %d %s = %d\n", s.ID, s.Port, name, values[i])
		}
		s.Close()
	}
}
