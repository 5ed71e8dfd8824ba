package sysfs_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/purerdma/rdma/sysfs"
)

// List the CAs and print each port's state, like a short ibstat. On a real
// system use sysfs.New("") (that is, /sys); here the tree is the Soft-RoCE
// capture in testdata.
func Example() {
	fs, err := sysfs.New("testdata/rxe-6.1")
	if err != nil {
		log.Fatal(err)
	}
	cas, err := fs.CAs()
	if err != nil {
		log.Fatal(err)
	}
	for _, ca := range cas {
		fmt.Printf("CA '%s' (%s), node GUID 0x%016x, %d port(s)\n", ca.Name, ca.NodeType, uint64(ca.NodeGUID), ca.NumPorts())
		for _, p := range ca.Ports {
			rate := "unknown"
			if p.Rate != nil {
				rate = p.Rate.Raw
			}
			fmt.Printf("  port %d: %s (%s), %s, %s\n", p.Number, p.StateName, p.PhysStateName, rate, p.LinkLayer)
		}
	}
	// Output:
	// CA 'rxe0' (CA), node GUID 0xacade8fffe375f42, 1 port(s)
	//   port 1: ACTIVE (LinkUp), 10 Gb/sec (1X FDR10), Ethernet
	// CA 'rxe1' (CA), node GUID 0xacdf59fffef0895d, 1 port(s)
	//   port 1: ACTIVE (LinkUp), 10 Gb/sec (1X FDR10), Ethernet
}

// Read one port, its GIDs and the character device libibumad would open.
func ExampleFS_Port() {
	fs, err := sysfs.New("testdata/mlx5-eth")
	if err != nil {
		log.Fatal(err)
	}
	p, err := fs.Port("mlx5_0", 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name(), p.State, p.Rate.Gbps(), "Gb/s", p.Umad.Path)
	gids, err := p.GIDs()
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range gids {
		fmt.Printf("GID[%d] %s, %s, %s\n", g.Index, g.GID.Addr(), *g.Type, *g.NetDev)
	}
	// Output:
	// mlx5_0/1 ACTIVE 100 Gb/s /dev/infiniband/umad0
	// GID[0] fe80::ba59:9fff:fed4:2a10, RoCE v1, enp94s0f0np0
	// GID[1] fe80::ba59:9fff:fed4:2a10, RoCE v2, enp94s0f0np0
	// GID[2] ::ffff:192.168.10.2, RoCE v1, enp94s0f0np0
	// GID[3] ::ffff:192.168.10.2, RoCE v2, enp94s0f0np0
}

// Poll a port's hardware counters without allocating: open the set once,
// read it into the same map again and again.
func ExamplePort_OpenHwCounters() {
	fs, err := sysfs.New("testdata/rxe-6.1")
	if err != nil {
		log.Fatal(err)
	}
	p, err := fs.Port("rxe0", 1)
	if err != nil {
		log.Fatal(err)
	}
	set, err := p.OpenHwCounters()
	if err != nil {
		log.Fatal(err)
	}
	defer set.Close()
	counters := make(map[string]uint64)
	if err := set.Read(counters); err != nil { // in a loop, with a ticker
		log.Fatal(err)
	}
	fmt.Println("sent", counters["sent_pkts"], "received", counters["rcvd_pkts"])
	// Output: sent 25019 received 25019
}

// A device's hardware counters by device and port number, without reading
// the ports' attributes (what counters.Describe does).
func ExampleFS_OpenHwCounters() {
	fs, err := sysfs.New("testdata/rxe-6.1")
	if err != nil {
		log.Fatal(err)
	}
	ports, err := fs.PortNumbers("rxe0")
	if err != nil {
		log.Fatal(err)
	}
	for _, port := range ports {
		set, err := fs.OpenHwCounters("rxe0", port)
		if err != nil {
			log.Fatal(err)
		}
		vals := make([]uint64, len(set.Names()))
		if err := set.ReadValues(vals); err != nil {
			log.Fatal(err)
		}
		lifespan, _ := fs.HwCountersLifespan("rxe0", port)
		fmt.Printf("rxe0/%d: %d counters, cached for %v; %s %d\n", port, len(vals), lifespan, set.Names()[len(vals)-1], vals[len(vals)-1])
		set.Close()
	}
	// Output: rxe0/1: 15 counters, cached for 12ms; sent_pkts 25019
}

// PMA counters: absent on drivers without a PMA, and the data counters
// count 4-octet words.
func ExamplePort_Counters() {
	for _, root := range []string{"testdata/rxe-6.1", "testdata/mlx5-ib"} {
		fs, err := sysfs.New(root)
		if err != nil {
			log.Fatal(err)
		}
		names, err := fs.CANames()
		if err != nil {
			log.Fatal(err)
		}
		p, err := fs.Port(names[0], 1)
		if err != nil {
			log.Fatal(err)
		}
		c, err := p.Counters()
		if errors.Is(err, sysfs.ErrNotSupported) {
			fmt.Println(p.Name(), "has no PMA counters")
			continue
		} else if err != nil {
			log.Fatal(err)
		}
		octets, _ := c.XmitOctets()
		fmt.Println(p.Name(), "port_xmit_data", c[sysfs.CounterXmitData], "=", octets, "octets")
	}
	// Output:
	// rxe0/1 has no PMA counters
	// mlx5_0/1 port_xmit_data 1234567890123 = 4938271560492 octets
}
