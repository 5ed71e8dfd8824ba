// Command flowcount is the README's counters example, the program of
// ibv_read_counters(3): a counters object with packets at index 0 and
// bytes at index 1, attached statically to an L2 flow on a RAW_PACKET QP,
// read every second. It needs a device with verbs counters (mlx5) and
// CAP_NET_RAW. The README links it (TestReadme).
package main

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/uverbs"
)

func main() {
	c, err := uverbs.Open(os.Args[1], nil) // "mlx5_0"
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // destroys what is left: the flow, the counters, the QP…

	cs, err := counters.Create(c, nil)
	if err != nil {
		log.Fatal(err) // errors.Is(err, counters.ErrNotSupported) on rxe
	}
	for i, d := range []counters.Description{counters.Packets, counters.Bytes} {
		if err := cs.Attach(counters.AttachAttr{Desc: d, Index: uint32(i)}, nil); err != nil {
			log.Fatal(err)
		}
	}
	pd, err := c.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 16})
	if err != nil {
		log.Fatal(err)
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxRecvWR: 16, MaxRecvSGE: 1}})
	if err != nil {
		log.Fatal(err) // errors.Is(err, os.ErrPermission) without CAP_NET_RAW
	}
	all := flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	f, err := flow.Create(qp, &flow.Attr{Port: 1, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: flow.MAC{0, 1, 2, 3, 4, 5}}, Mask: flow.EthFilter{DstMAC: all}},
		&flow.Count{Counters: cs}, // the static attach: the points travel with the flow
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close() // the flow before the counters (EBUSY while one counts into them)

	values := make([]uint64, 2)
	for range 10 {
		time.Sleep(time.Second)
		if err := cs.Read(values, counters.PreferCached); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("PACKETS = %d, BYTES = %d\n", values[0], values[1])
	}
}
