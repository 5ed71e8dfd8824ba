// Command quickstart is the README's first program: list the RDMA
// devices and their ports, open the first one, and create a PD, a CQ and a
// UD QP on it. TestReadme checks that the README shows this file.
package main

import (
	"fmt"
	"log"

	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/uverbs"
)

func main() {
	// Devices and ports, from sysfs (like ibstat).
	fs, err := sysfs.New("") // "" is /sys
	if err != nil {
		log.Fatal(err)
	}
	cas, err := fs.CAs()
	if err != nil {
		log.Fatal(err) // errors.Is(err, os.ErrNotExist): no RDMA stack loaded
	}
	for _, ca := range cas {
		for _, p := range ca.Ports {
			fmt.Printf("%s port %d: %s, %s\n", ca.Name, p.Number, p.State, p.LinkLayer)
		}
	}

	// A verbs context and its first objects (like ibv_open_device,
	// ibv_alloc_pd, ibv_create_cq, ibv_create_qp).
	devs, err := uverbs.Devices(nil)
	if err != nil || len(devs) == 0 {
		log.Fatal("no uverbs device: ", err)
	}
	c, err := uverbs.OpenDevice(devs[0], nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // destroys the QP, the CQ and the PD too
	pd, err := c.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 64})
	if err != nil {
		log.Fatal(err)
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{
		Type: uverbs.QPTypeUD, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: QP %#x with a %d-entry CQ\n", c.Device().Name, qp.Num(), cq.CQE())
}
