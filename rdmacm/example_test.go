package rdmacm_test

import (
	"context"
	"errors"
	"log"
	"net/netip"
	"syscall"
	"time"

	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

// A client connects through its own event channel, as a librdmacm program
// does: resolve the address and the route, create the QP, connect, and
// wait for ESTABLISHED.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := rdmacm.NewEventChannel(nil)
	if err != nil {
		log.Fatal(err) // errors.Is(err, os.ErrNotExist): modprobe rdma_ucm
	}
	defer ch.Close() // closes the ID and its QP too
	id, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		log.Fatal(err)
	}
	wait := func(want rdmacm.EventType) {
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			log.Fatal(err)
		}
		defer ev.Ack()
		if ev.Type != want {
			log.Fatalf("%s: %v", ev, ev.Err()) // a *RejectError for REJECTED
		}
	}
	if err := id.ResolveAddr(netip.AddrPort{}, netip.MustParseAddrPort("10.77.0.1:7471"), 2*time.Second); err != nil {
		log.Fatal(err)
	}
	wait(rdmacm.EventAddrResolved)
	if err := id.ResolveRoute(2 * time.Second); err != nil {
		log.Fatal(err)
	}
	wait(rdmacm.EventRouteResolved)
	qp, err := id.CreateQP(nil, uverbs.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		log.Fatal(err)
	}
	if err := id.Connect(&rdmacm.ConnParam{PrivateData: []byte("hello"), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		log.Fatal(err)
	}
	wait(rdmacm.EventEstablished)
	log.Printf("connected on %s: QP %#x, CQ %d entries", id.DeviceName(), qp.Num(), qp.SendCQ().CQE())
	// Post and poll on qp through uverbs; then part.
	if err := id.Disconnect(); err != nil {
		log.Fatal(err)
	}
	wait(rdmacm.EventDisconnected)
}

// CreateEP makes a synchronous endpoint: Connect returns when the
// connection is up, or with the reason it is not.
func ExampleCreateEP() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	attr := uverbs.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}}
	id, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Dst: netip.MustParseAddrPort("10.77.0.1:7471"), QP: &attr})
	if err != nil {
		log.Fatal(err)
	}
	defer id.Close()
	var rej *rdmacm.RejectError
	switch err := id.Connect(nil); {
	case errors.As(err, &rej):
		log.Fatalf("refused: %v, the peer said %q", rej.Reason, rej.PrivateData)
	case errors.Is(err, syscall.ETIMEDOUT):
		log.Fatal("no answer")
	case err != nil:
		log.Fatal(err)
	}
	log.Printf("connected: QP %#x", id.QP().Num())
}

// A passive endpoint hands out each connection's ID with its QP made.
func ExampleID_GetRequest() {
	ctx := context.Background()
	attr := uverbs.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}}
	l, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Passive: true, Src: netip.MustParseAddrPort("0.0.0.0:7471"), QP: &attr})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	if err := l.Listen(16); err != nil {
		log.Fatal(err)
	}
	for {
		conn, err := l.GetRequest(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if err := conn.Accept(nil); err != nil { // waits for ESTABLISHED
			log.Print(err)
			conn.Close()
			continue
		}
		go func() {
			defer conn.Close()
			// Post and poll on conn.QP(); conn.Disconnect() when done.
		}()
	}
}
