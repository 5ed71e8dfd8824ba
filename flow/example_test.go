package flow_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/uverbs"
)

// Steer UDP packets to port 4791 of 10.0.0.2 to a RAW_PACKET QP and tag
// them.
func ExampleCreate() {
	c, err := uverbs.Open("mlx5_0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(uverbs.CQAttr{CQE: 64})
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxRecvWR: 64, MaxRecvSGE: 1}})
	if err != nil {
		log.Fatal(err)
	}
	f, err := flow.Create(qp, &flow.Attr{Port: 1, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{EtherType: 0x0800}, Mask: flow.EthFilter{EtherType: 0xffff}},
		&flow.IPv4{Value: flow.IPv4Filter{Dst: [4]byte{10, 0, 0, 2}}, Mask: flow.IPv4Filter{Dst: [4]byte{255, 255, 255, 255}}},
		&flow.UDP{Value: flow.PortFilter{DstPort: 4791}, Mask: flow.PortFilter{DstPort: 0xffff}},
		&flow.Tag{ID: 42},
	}})
	switch {
	case errors.Is(err, os.ErrPermission):
		log.Fatal("flow steering needs CAP_NET_RAW: ", err)
	case errors.Is(err, flow.ErrNotSupported):
		log.Fatal("this device has no flow steering: ", err)
	case err != nil:
		log.Fatal(err)
	}
	defer f.Close()
}

// A spec's wire form, as the kernel reads it.
func ExampleEth_MarshalBinary() {
	b, _ := (&flow.Eth{Value: flow.EthFilter{DstMAC: flow.MAC{0, 1, 2, 3, 4, 5}},
		Mask: flow.EthFilter{DstMAC: flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}}).MarshalBinary()
	fmt.Printf("% x\n", b[:8])
	fmt.Println(len(b))
	// Output:
	// 20 00 00 00 28 00 00 00
	// 40
}
