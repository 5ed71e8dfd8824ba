package umad_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
)

// The common path: open a port, register a client agent for a vendor
// class, send a Get to a peer port and wait for its response. On RoCE
// (rxe) MADs need a GRH: the peer's GID (here GID 0 of rxe1, from sysfs)
// and the local GID index 0.
func Example() {
	port, err := umad.OpenPort("rxe0", 1)
	if err != nil {
		log.Fatal(err)
	}
	defer port.Close()

	const class, oui = 0x30, 0x001405                                // vendor range 2, OpenIB OUI
	agent, err := port.RegisterOUI(class, 0, oui, umad.MethodMask{}) // a client: no methods
	if err != nil {
		log.Fatal(err)
	}

	peer, err := sysfs.New("")
	if err != nil {
		log.Fatal(err)
	}
	p1, err := peer.Port("rxe1", 1)
	if err != nil {
		log.Fatal(err)
	}
	gid, err := p1.GID(0)
	if err != nil {
		log.Fatal(err)
	}

	pkt := umad.NewPacket()
	mad := pkt.MAD()                                   // 256 bytes: common header, RMPP header, OUI, data
	mad[0], mad[1], mad[2], mad[3] = 1, class, 1, 0x01 // base version, class, class version, Get
	binary.BigEndian.PutUint64(mad[8:16], 1)           // TID (the kernel owns the upper half)
	mad[37], mad[38], mad[39] = oui>>16, oui>>8&0xff, oui&0xff
	pkt.SetAddr(0, 1, 0, umad.QP1QKey) // QP1 of the peer
	pkt.SetGRH(umad.GRH{GID: gid.GID, GIDIndex: 0, HopLimit: 64})

	if err := port.Send(agent, pkt, 100*time.Millisecond, 3); err != nil {
		log.Fatal(err)
	}
	id, err := port.Recv(pkt, 2*time.Second)
	switch {
	case errors.Is(err, umad.ErrTimeout):
		log.Fatal("the kernel did not even report a timeout")
	case err != nil:
		log.Fatal(err)
	case pkt.TimedOut():
		fmt.Println("no response after 3 retries")
	default:
		fmt.Printf("agent %d got method %#x from %v\n", id, pkt.MAD()[3], pkt.Addr())
	}
}

// A replier: receive requests for method Get and answer each in the same
// packet, which keeps the requester's address.
func ExamplePort_Recv() {
	port, err := umad.OpenPort("rxe1", 1)
	if err != nil {
		log.Fatal(err)
	}
	defer port.Close()
	agent, err := port.RegisterOUI(0x30, 0, 0x001405, umad.MethodMaskOf(0x01))
	if err != nil {
		log.Fatal(err)
	}
	pkt := umad.NewPacket()
	for {
		if _, err := port.Recv(pkt, -1); err != nil {
			log.Fatal(err)
		}
		pkt.MAD()[3] = 0x81 // GetResp; TID and address stay
		if err := port.Send(agent, pkt, 0, 0); err != nil {
			log.Fatal(err)
		}
	}
}
