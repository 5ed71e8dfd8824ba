package rdmanl_test

import (
	"fmt"
	"log"

	"github.com/purerdma/rdma/rdmanl"
)

// The device list and a port's counters over RDMA netlink, like
// "rdma dev show" and "rdma statistic show link rxe0/1", all on one socket
// (Open; New opens one a request). Needs a kernel with RDMA
// devices, so it only compiles here.
func ExampleConn() {
	nl, err := rdmanl.Open()
	if err != nil {
		log.Fatal(err) // errors.Is(err, rdmanl.ErrNotSupported) without ib_core
	}
	defer nl.Close()
	devs, err := nl.Devices()
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range devs {
		fmt.Printf("%d: %s: node_guid %s sys_image_guid %s\n", d.Index, d.Name, d.NodeGUID, d.SysImageGUID)
		for port := 1; port <= d.NumPorts; port++ {
			s, err := nl.PortStats(d.Index, port)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Print("link ", d.Name, "/", port)
			for _, c := range s.Counters {
				fmt.Print(" ", c.Name, " ", c.Value)
			}
			fmt.Println()
		}
	}
}
