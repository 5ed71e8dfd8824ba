// Command cmsend is the README's connection manager example: the server
// (cmsend -s ADDR:PORT) takes one connection and prints the message it
// receives; the client (cmsend ADDR:PORT) connects and sends one. Both
// use synchronous endpoints (rdma_create_ep in librdmacm) and the verbs
// data path. The README links it (TestReadme).
package main

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"os"
	"time"

	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

func main() {
	server := len(os.Args) == 3 && os.Args[1] == "-s"
	addr := netip.MustParseAddrPort(os.Args[len(os.Args)-1])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	attr := uverbs.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 64}}

	var id *rdmacm.ID
	if server {
		l, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Passive: true, Src: addr, QP: &attr})
		if err != nil {
			log.Fatal(err)
		}
		defer l.Close()
		if err := l.Listen(1); err != nil {
			log.Fatal(err)
		}
		if id, err = l.GetRequest(ctx); err != nil { // the new ID comes with its QP
			log.Fatal(err)
		}
	} else {
		var err error
		if id, err = rdmacm.CreateEP(ctx, rdmacm.EPAttr{Dst: addr, QP: &attr}); err != nil {
			log.Fatal(err) // resolved address and route, QP created
		}
	}
	defer id.Close() // destroys the QP and its CQs too
	qp := id.QP()

	// Registered memory, outside the Go heap; a receive posted before the
	// connection is up, so the peer's send finds it.
	mr, err := id.PD().AllocMR(4096, uverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	if server {
		sge, _ := mr.SGE(0, mr.Len())
		if _, err := qp.PostRecv([]uverbs.RecvWR{{ID: 1, SGL: []uverbs.SGE{sge}}}); err != nil {
			log.Fatal(err)
		}
		err = id.Accept(nil) // returns once ESTABLISHED
	} else {
		err = id.Connect(nil) // likewise; a refusal matches syscall.ECONNREFUSED
	}
	if err != nil {
		log.Fatal(err)
	}

	cq := qp.SendCQ()
	if server {
		cq = qp.RecvCQ()
	} else if _, err := qp.PostSend([]uverbs.SendWR{{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		Inline: []byte("hello over RDMA")}}); err != nil {
		log.Fatal(err)
	}
	var wc [1]uverbs.WC
	for {
		n, err := cq.Poll(wc[:]) // no system call on rxe
		if err != nil {
			log.Fatal(err)
		}
		if n == 1 {
			break
		}
	}
	if wc[0].Status != uverbs.WCSuccess {
		log.Fatal(wc[0].Status)
	}
	if server {
		fmt.Printf("received %q\n", mr.Buf()[:wc[0].ByteLen])
	}
	if err := id.Disconnect(); err != nil { // returns once DISCONNECTED
		log.Fatal(err)
	}
}
