package uverbs_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/purerdma/rdma/uverbs"
)

// List the devices, like ibv_devices.
func ExampleDevices() {
	devs, err := uverbs.Devices(nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range devs {
		fmt.Printf("%-16s %016x %s\n", d.Name, d.NodeGUID, d.DriverID)
	}
}

// Open a device and query its first port, like ibv_devinfo.
func ExampleOpen() {
	c, err := uverbs.Open("rxe0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	dev, err := c.QueryDevice()
	if err != nil {
		log.Fatal(err)
	}
	port, err := c.QueryPort(1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dev.FWVer, dev.PhysPortCnt, port.State, port.ActiveMTU, port.LinkLayer)
}

// Create a PD, a CQ and an RC QP, and move the QP to INIT. Close destroys
// them in order.
func ExamplePD_CreateQP() {
	c, err := uverbs.Open("rxe0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 64})
	if err != nil {
		log.Fatal(err)
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{
		Type:   uverbs.QPTypeRC,
		SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	if err != nil {
		log.Fatal(err)
	}
	err = qp.Modify(&uverbs.QPAttr{
		State: uverbs.QPStateInit, Port: 1,
		AccessFlags: uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite,
	}, uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrAccessFlags)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("QP %#x is in INIT\n", qp.Num())
}

// Errors carry the errno: test them with errors.Is.
func ExampleError() {
	c, err := uverbs.Open("mlx5_0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(uverbs.CQAttr{CQE: 16})
	_, err = pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxRecvWR: 64, MaxRecvSGE: 1}})
	switch {
	case errors.Is(err, uverbs.ErrNotSupported):
		fmt.Println("this driver has no raw packet QPs")
	case err != nil:
		fmt.Println(err) // for example EPERM without CAP_NET_RAW
	}
}

// Wait for async events until the context is closed or a minute passes.
func ExampleContext_AsyncEvent() {
	c, err := uverbs.Open("rxe0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		e, err := c.AsyncEvent(ctx)
		if err != nil {
			return
		}
		fmt.Println(e)
	}
}
