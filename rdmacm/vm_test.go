//go:build integration

package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

var addr0 = netip.MustParseAddr(vmtest.Addr0)

// next waits for the channel's next event and checks its type.
func next(t *testing.T, ch *rdmacm.EventChannel, want rdmacm.EventType) *rdmacm.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ev, err := ch.GetEvent(ctx)
	if err != nil {
		t.Fatalf("waiting for %s: %v", want, err)
	}
	if ev.Type != want {
		t.Fatalf("event %s, want %s", ev, want)
	}
	return ev
}

func newChannel(t *testing.T) *rdmacm.EventChannel {
	t.Helper()
	ch, err := rdmacm.NewEventChannel(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	return ch
}

// listen returns a listening ID on addr0:port.
func listen(t *testing.T, ch *rdmacm.EventChannel, ps rdmacm.PortSpace, port uint16) *rdmacm.ID {
	t.Helper()
	l, err := ch.CreateID(ps)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(netip.AddrPortFrom(addr0, port)); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(8); err != nil {
		t.Fatal(err)
	}
	return l
}

// resolve creates an ID on ch and resolves addr0:port and the route.
func resolve(t *testing.T, ch *rdmacm.EventChannel, ps rdmacm.PortSpace, port uint16) *rdmacm.ID {
	t.Helper()
	id, err := ch.CreateID(ps)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(addr0, port), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, ch, rdmacm.EventAddrResolved).Ack()
	if err := id.ResolveRoute(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, ch, rdmacm.EventRouteResolved).Ack()
	return id
}

var qpCap = uverbs.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 64}}

func TestVMConnectAcceptSend(t *testing.T) {
	vmtest.Require(t)
	sch, cch := newChannel(t), newChannel(t)
	l := listen(t, sch, rdmacm.PortSpaceTCP, 7471)
	c := resolve(t, cch, rdmacm.PortSpaceTCP, 7471)
	if c.Verbs() == nil || c.DeviceName() != vmtest.Dev0 {
		t.Fatalf("client device %q, want %s", c.DeviceName(), vmtest.Dev0)
	}
	cqp, err := c.CreateQP(nil, qpCap)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(&rdmacm.ConnParam{PrivateData: []byte("hello"), RetryCount: 7, RNRRetryCount: 7,
		InitiatorDepth: rdmacm.MaxDepth, ResponderResources: rdmacm.MaxDepth}); err != nil {
		t.Fatal(err)
	}
	req := next(t, sch, rdmacm.EventConnectRequest)
	if req.ListenID != l || req.ID == nil || !bytes.HasPrefix(req.Conn.PrivateData, []byte("hello")) {
		t.Fatalf("request: listen %v id %v private %q", req.ListenID, req.ID, req.Conn.PrivateData)
	}
	s := req.ID
	req.Ack()
	sqp, err := s.CreateQP(nil, qpCap)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := s.PD().AllocMR(4096, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	sge, _ := mr.SGE(0, 4096)
	if _, err := sqp.PostRecv([]uverbs.RecvWR{{ID: 1, SGL: []uverbs.SGE{sge}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Accept(&rdmacm.ConnParam{PrivateData: []byte("welcome"), InitiatorDepth: rdmacm.MaxDepth, ResponderResources: rdmacm.MaxDepth}); err != nil {
		t.Fatal(err)
	}
	est := next(t, cch, rdmacm.EventEstablished)
	if !bytes.HasPrefix(est.Conn.PrivateData, []byte("welcome")) {
		t.Errorf("client's ESTABLISHED private data %q", est.Conn.PrivateData)
	}
	est.Ack()
	next(t, sch, rdmacm.EventEstablished).Ack()

	msg := []byte("ping over rdma_cm")
	if _, err := cqp.PostSend([]uverbs.SendWR{{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, Inline: msg}}); err != nil {
		t.Fatal(err)
	}
	var wc [1]uverbs.WC
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := sqp.RecvCQ().Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no receive completion")
		}
	}
	if wc[0].Status != uverbs.WCSuccess || !bytes.Equal(mr.Buf()[:wc[0].ByteLen], msg) {
		t.Fatalf("received %v %q", wc[0].Status, mr.Buf()[:wc[0].ByteLen])
	}
	mr.Close()

	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	// The passive side hears the DREQ and answers it with its own
	// Disconnect (the DREP), which the active side's event waits for.
	next(t, sch, rdmacm.EventDisconnected).Ack()
	if err := s.Disconnect(); err != nil {
		t.Fatal(err)
	}
	next(t, cch, rdmacm.EventDisconnected).Ack()
	for _, id := range []*rdmacm.ID{c, s, l} {
		if err := id.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestVMRejectWithPrivateData(t *testing.T) {
	vmtest.Require(t)
	sch, cch := newChannel(t), newChannel(t)
	l := listen(t, sch, rdmacm.PortSpaceTCP, 7472)
	defer l.Close()
	c := resolve(t, cch, rdmacm.PortSpaceTCP, 7472)
	defer c.Close()
	if _, err := c.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(nil); err != nil {
		t.Fatal(err)
	}
	req := next(t, sch, rdmacm.EventConnectRequest)
	s := req.ID
	req.Ack()
	if err := s.Reject([]byte("go away")); err != nil {
		t.Fatal(err)
	}
	ev := next(t, cch, rdmacm.EventRejected)
	var rej *rdmacm.RejectError
	if err := ev.Err(); !errors.As(err, &rej) || rej.Reason != rdmacm.RejectConsumerDefined ||
		!bytes.HasPrefix(rej.PrivateData, []byte("go away")) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("rejection: %v (%+v)", err, rej)
	}
	ev.Ack()
	s.Close()
}

func TestVMConnectNoListener(t *testing.T) {
	vmtest.Require(t)
	cch := newChannel(t)
	c := resolve(t, cch, rdmacm.PortSpaceTCP, 7473)
	defer c.Close()
	if _, err := c.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := cch.GetEvent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Ack()
	t.Logf("connect to a port nobody listens on: %s", ev)
	switch ev.Type {
	case rdmacm.EventRejected:
		var rej *rdmacm.RejectError
		if !errors.As(ev.Err(), &rej) || rej.Reason != rdmacm.RejectInvalidServiceID {
			t.Fatalf("reason %v, want %v", ev.Err(), rdmacm.RejectInvalidServiceID)
		}
	case rdmacm.EventUnreachable:
	default:
		t.Fatalf("event %s", ev)
	}
}

func TestVMAddrError(t *testing.T) {
	vmtest.Require(t)
	cch := newChannel(t)
	id, err := cch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	defer id.Close()
	// An address on veth0's subnet that nobody has: ARP goes unanswered.
	err = id.ResolveAddr(netip.AddrPort{}, netip.MustParseAddrPort("10.77.0.99:7474"), 500*time.Millisecond)
	if err != nil {
		t.Logf("resolve answered at once: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := cch.GetEvent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Ack()
	if ev.Type != rdmacm.EventAddrError || ev.Err() == nil {
		t.Fatalf("event %s, want ADDR_ERROR", ev)
	}
	t.Logf("unanswered address: %s", ev)
}
