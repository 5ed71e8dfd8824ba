//go:build integration

package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/internal/sys/systest"
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

// newID creates an ID on ch, closed when the test ends.
func newID(t *testing.T, ch *rdmacm.EventChannel, ps rdmacm.PortSpace) *rdmacm.ID {
	t.Helper()
	id, err := ch.CreateID(ps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { id.Close() })
	return id
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
	t.Cleanup(func() { l.Close() })
	return l
}

// resolve creates an ID on ch and resolves addr0:port and the route.
func resolve(t *testing.T, ch *rdmacm.EventChannel, ps rdmacm.PortSpace, port uint16) *rdmacm.ID {
	t.Helper()
	id := newID(t, ch, ps)
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

	part(t, c, cch, s, sch)
	for _, id := range []*rdmacm.ID{c, s, l} {
		if err := id.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestVMRejectWithPrivateData(t *testing.T) {
	vmtest.Require(t)
	sch, cch := newChannel(t), newChannel(t)
	listen(t, sch, rdmacm.PortSpaceTCP, 7472)
	c := resolve(t, cch, rdmacm.PortSpaceTCP, 7472)
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
	id := newID(t, cch, rdmacm.PortSpaceTCP)
	// An address on veth0's subnet that nobody has: ARP goes unanswered.
	if err := id.ResolveAddr(netip.AddrPort{}, netip.MustParseAddrPort("10.77.0.99:7474"), 500*time.Millisecond); err != nil {
		t.Fatalf("resolve: %v; the kernel answers an unresolved neighbour with ADDR_ERROR", err)
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

// connect connects a client on cch to the listener on sch (port),
// both with a QP; both IDs are closed when the test ends.
func connect(t *testing.T, cch, sch *rdmacm.EventChannel, port uint16) (c, s *rdmacm.ID) {
	t.Helper()
	c = resolve(t, cch, rdmacm.PortSpaceTCP, port)
	if _, err := c.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(nil); err != nil {
		t.Fatal(err)
	}
	return c, acceptNext(t, sch, cch, nil)
}

// part disconnects a connection from first's side: second hears the
// DREQ and answers with its own Disconnect (the DREP), which first's
// DISCONNECTED waits for.
func part(t *testing.T, first *rdmacm.ID, firstCh *rdmacm.EventChannel, second *rdmacm.ID, secondCh *rdmacm.EventChannel) {
	t.Helper()
	if err := first.Disconnect(); err != nil {
		t.Fatal(err)
	}
	next(t, secondCh, rdmacm.EventDisconnected).Ack()
	if err := second.Disconnect(); err != nil {
		t.Fatal(err)
	}
	next(t, firstCh, rdmacm.EventDisconnected).Ack()
}

// acceptNext takes the next connection request on sch, gives its ID a QP,
// accepts it with p and waits for ESTABLISHED on both sides (the client's
// on cch). The ID is closed when the test ends.
func acceptNext(t *testing.T, sch, cch *rdmacm.EventChannel, p *rdmacm.ConnParam) *rdmacm.ID {
	t.Helper()
	req := next(t, sch, rdmacm.EventConnectRequest)
	s := req.ID
	req.Ack()
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := s.Accept(p); err != nil {
		t.Fatal(err)
	}
	next(t, cch, rdmacm.EventEstablished).Ack()
	next(t, sch, rdmacm.EventEstablished).Ack()
	return s
}

func TestVMDisconnectFromServer(t *testing.T) {
	vmtest.Require(t)
	sch, cch := newChannel(t), newChannel(t)
	listen(t, sch, rdmacm.PortSpaceTCP, 7475)
	c, s := connect(t, cch, sch, 7475)
	part(t, s, sch, c, cch)
	// The QP was moved to ERR by Disconnect.
	if a, _, err := c.QP().Query(uverbs.QPAttrState); err != nil || a.State != uverbs.QPStateErr {
		t.Errorf("client QP after disconnect: %v %v", a.State, err)
	}
	c.Close()
	s.Close()
}

func TestVMQueries(t *testing.T) {
	vmtest.Require(t)
	sch, cch := newChannel(t), newChannel(t)
	listen(t, sch, rdmacm.PortSpaceTCP, 7476)
	c, s := connect(t, cch, sch, 7476)
	ca, err := c.QueryAddr()
	if err != nil {
		t.Fatal(err)
	}
	sa, err := s.QueryAddr()
	if err != nil {
		t.Fatal(err)
	}
	if ca.Dst != netip.AddrPortFrom(addr0, 7476) || sa.Src != ca.Dst || sa.Dst != ca.Src || ca.Port != 1 || ca.NodeGUID == 0 {
		t.Errorf("client %+v, server %+v", ca, sa)
	}
	sgid, dgid, _, err := c.QueryGID()
	if err != nil {
		t.Fatal(err)
	}
	// RoCE v2 GIDs of IPv4 addresses: ::ffff:a.b.c.d.
	if sgid.Addr().Unmap() != addr0 || dgid.Addr().Unmap() != addr0 {
		t.Errorf("sgid %s dgid %s, want ::ffff:%s", sgid, dgid, addr0)
	}
	paths, err := c.QueryPath()
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 || paths[0].DGID != dgid {
		t.Errorf("paths %+v", paths)
	}
	t.Logf("client %+v; path %+v", ca, paths)
}

// cmIDs lists the kernel's cm_id resources of this process, as
// `rdma resource show cm_id` prints them. The kernel names the task that
// created each ID: its thread id, which in a Go program is one of the
// process's threads, so the lines are matched by the command's name.
func cmIDs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("rdma", "resource", "show", "cm_id").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show cm_id: %v\n%s", err, out)
	}
	exe, _ := os.Executable()
	comm := filepath.Base(exe)
	if len(comm) > 15 { // TASK_COMM_LEN - 1
		comm = comm[:15]
	}
	comm = " comm " + comm + " "
	var mine []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line+" ", comm) {
			mine = append(mine, line)
		}
	}
	return mine
}

func TestVMResourceShow(t *testing.T) {
	vmtest.Require(t)
	sch := newChannel(t)
	l := listen(t, sch, rdmacm.PortSpaceTCP, 7477)
	ids := cmIDs(t)
	found := false
	for _, line := range ids {
		if strings.Contains(line, "state LISTEN") && strings.Contains(line, "src-addr "+vmtest.Addr0+":7477") && strings.Contains(line, "ps TCP") {
			found = true
		}
	}
	if !found {
		t.Errorf("no LISTEN cm_id on %s:7477 of this process in:\n%s", vmtest.Addr0, strings.Join(ids, "\n"))
	}
	l.Close()
	if ids := cmIDs(t); len(ids) != 0 {
		t.Errorf("after Close: %s", strings.Join(ids, "\n"))
	}
}

func TestVMManyConnections(t *testing.T) {
	vmtest.Require(t)
	const n = 100
	sch, cch := newChannel(t), newChannel(t)
	l := newID(t, sch, rdmacm.PortSpaceTCP)
	if err := l.Bind(netip.AddrPortFrom(addr0, 7478)); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(n); err != nil {
		t.Fatal(err)
	}
	// The server accepts in its own goroutine, as requests come.
	done := make(chan error, 1)
	var servers []*rdmacm.ID
	go func() {
		established := 0
		for established < n {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			ev, err := sch.GetEvent(ctx)
			cancel()
			if err != nil {
				done <- err
				return
			}
			switch ev.Type {
			case rdmacm.EventConnectRequest:
				s := ev.ID
				servers = append(servers, s)
				if _, err := s.CreateQP(nil, qpCap); err != nil {
					done <- err
					return
				}
				if err := s.Accept(nil); err != nil {
					done <- err
					return
				}
			case rdmacm.EventEstablished:
				established++
			default:
				done <- fmt.Errorf("server event %s", ev)
				return
			}
			ev.Ack()
		}
		done <- nil
	}()
	clients := make([]*rdmacm.ID, n)
	for i := range clients {
		id, err := cch.CreateID(rdmacm.PortSpaceTCP)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = id
		if err := id.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(addr0, 7478), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// Every client is driven by its events, in whatever order they come.
	established := 0
	for established < n {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ev, err := cch.GetEvent(ctx)
		cancel()
		if err != nil {
			t.Fatalf("after %d established: %v", established, err)
		}
		id := ev.ID
		switch ev.Type {
		case rdmacm.EventAddrResolved:
			err = id.ResolveRoute(5 * time.Second)
		case rdmacm.EventRouteResolved:
			if _, err = id.CreateQP(nil, qpCap); err == nil {
				err = id.Connect(nil)
			}
		case rdmacm.EventEstablished:
			established++
		default:
			err = fmt.Errorf("client event %s", ev)
		}
		ev.Ack()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ids := cmIDs(t); len(ids) != 2*n+1 {
		t.Errorf("rdma resource show cm_id lists %d IDs of this process, want %d", len(ids), 2*n+1)
	}
	for _, id := range clients {
		id.Close()
	}
	for _, id := range servers {
		id.Close()
	}
	l.Close()
	if ids := cmIDs(t); len(ids) != 0 {
		t.Errorf("after Close, %d IDs left", len(ids))
	}
}

// TestVMCycles connects and disconnects 1,000 times and checks that
// nothing grows: descriptors, the kernel's IDs, goroutines.
func TestVMCycles(t *testing.T) {
	vmtest.Require(t)
	cycles := 1000
	if testing.Short() {
		cycles = 50
	}
	sch, cch := newChannel(t), newChannel(t)
	listen(t, sch, rdmacm.PortSpaceTCP, 7479)
	cycle := func() {
		c, s := connect(t, cch, sch, 7479)
		part(t, c, cch, s, sch)
		c.Close()
		s.Close()
	}
	cycle() // the first opens the device
	fds, gs, ids := systest.OpenFDs(t), runtime.NumGoroutine(), len(cmIDs(t))
	start := time.Now()
	for i := 1; i < cycles; i++ {
		cycle()
	}
	el := time.Since(start)
	runtime.GC()
	if f, g, k := systest.OpenFDs(t), runtime.NumGoroutine(), len(cmIDs(t)); f != fds || g > gs || k != ids {
		t.Errorf("after %d cycles: %d fds (were %d), %d goroutines (were %d), %d kernel IDs (were %d)", cycles, f, fds, g, gs, k, ids)
	}
	t.Logf("%d connect/disconnect cycles in %v (%.0f a second); %d fds, %d goroutines, %d kernel IDs before and after",
		cycles, el.Round(time.Millisecond), float64(cycles-1)/el.Seconds(), fds, gs, ids)
}

func TestVMIPv6LinkLocal(t *testing.T) {
	vmtest.Require(t)
	ifi, err := net.InterfaceByName(vmtest.Net0)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	var ll netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is6() && p.Addr().IsLinkLocalUnicast() {
			ll = p.Addr().WithZone(vmtest.Net0)
		}
	}
	if !ll.IsValid() {
		t.Fatalf("%s has no IPv6 link-local address: %v", vmtest.Net0, addrs)
	}
	sch, cch := newChannel(t), newChannel(t)
	l := newID(t, sch, rdmacm.PortSpaceTCP)
	// A wildcard IPv6 listener, IPv6 only.
	if err := l.SetAFOnly(true); err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(netip.MustParseAddrPort("[::]:7480")); err != nil {
		t.Fatal(err)
	}
	if l.Verbs() != nil {
		t.Error("a wildcard bind opened a device")
	}
	if err := l.Listen(4); err != nil {
		t.Fatal(err)
	}
	c := newID(t, cch, rdmacm.PortSpaceTCP)
	if err := c.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(ll, 7480), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, cch, rdmacm.EventAddrResolved).Ack()
	if err := c.ResolveRoute(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, cch, rdmacm.EventRouteResolved).Ack()
	if _, err := c.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(nil); err != nil {
		t.Fatal(err)
	}
	s := acceptNext(t, sch, cch, nil)
	sa, err := s.QueryAddr()
	if err != nil {
		t.Fatal(err)
	}
	if sa.Src.Addr().WithZone("") != ll.WithZone("") || sa.Src.Port() != 7480 {
		t.Errorf("server's address %v, want %v", sa.Src, ll)
	}
	t.Logf("IPv6 connection %v -> %v on %s", sa.Dst, sa.Src, s.DeviceName())
}

func TestVMUDSIDR(t *testing.T) {
	vmtest.Require(t)
	sch, cch := newChannel(t), newChannel(t)
	listen(t, sch, rdmacm.PortSpaceUDP, 7481)
	c := resolve(t, cch, rdmacm.PortSpaceUDP, 7481)
	cqp, err := c.CreateQP(nil, qpCap)
	if err != nil {
		t.Fatal(err)
	}
	if a, _, err := cqp.Query(uverbs.QPAttrState); err != nil || a.State != uverbs.QPStateRTS {
		t.Fatalf("UD QP after CreateQP: %v %v, want RTS", a.State, err)
	}
	if err := c.Connect(&rdmacm.ConnParam{PrivateData: []byte("sidr")}); err != nil {
		t.Fatal(err)
	}
	req := next(t, sch, rdmacm.EventConnectRequest)
	s := req.ID
	if !bytes.HasPrefix(req.UD.PrivateData, []byte("sidr")) {
		t.Errorf("SIDR request private data %q", req.UD.PrivateData)
	}
	req.Ack()
	defer s.Close()
	sqp, err := s.CreateQP(nil, qpCap)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Accept(nil); err != nil {
		t.Fatal(err)
	}
	est := next(t, cch, rdmacm.EventEstablished)
	defer est.Ack()
	if est.UD.QPNum != sqp.Num() || est.UD.QKey != 0x01234567 || !est.UD.AH.IsGlobal {
		t.Errorf("SIDR reply: %+v, want QPN %#x and Q_Key 0x01234567", est.UD, sqp.Num())
	}
}

func TestVMMigrate(t *testing.T) {
	vmtest.Require(t)
	a, b := newChannel(t), newChannel(t)
	id := newID(t, a, rdmacm.PortSpaceTCP)
	if err := id.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(addr0, 7482), time.Second); err != nil {
		t.Fatal(err)
	}
	// The event may already wait on a: it moves with the ID.
	if err := id.Migrate(b); err != nil {
		t.Fatal(err)
	}
	if id.Channel() != b {
		t.Error("Channel is not the new one")
	}
	next(t, b, rdmacm.EventAddrResolved).Ack()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if ev, err := a.GetEvent(ctx); err == nil {
		t.Errorf("old channel got %s", ev)
	}
}

func TestVMOptions(t *testing.T) {
	vmtest.Require(t)
	ch := newChannel(t)
	id := newID(t, ch, rdmacm.PortSpaceTCP)
	for name, err := range map[string]error{
		"tos": id.SetTOS(32), "reuseaddr": id.SetReuseAddr(true), "afonly": id.SetAFOnly(false), "ack timeout": id.SetAckTimeout(14),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// REUSEADDR lets two IDs bind one port.
	other := newID(t, ch, rdmacm.PortSpaceTCP)
	if err := other.SetReuseAddr(true); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*rdmacm.ID{id, other} {
		if err := x.Bind(netip.AddrPortFrom(addr0, 7483)); err != nil {
			t.Errorf("bind with REUSEADDR: %v", err)
		}
	}
}

func TestVMMulticast(t *testing.T) {
	vmtest.Require(t)
	ch := newChannel(t)
	id := newID(t, ch, rdmacm.PortSpaceUDP)
	group := netip.MustParseAddr("239.7.7.7")
	if err := id.ResolveAddr(netip.AddrPortFrom(addr0, 0), netip.AddrPortFrom(group, 0), time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, ch, rdmacm.EventAddrResolved).Ack()
	qp, err := id.CreateQP(nil, qpCap)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.JoinMulticast(group, false); err != nil {
		t.Fatal(err)
	}
	ev, err := ch.GetEvent(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != rdmacm.EventMulticastJoin || ev.Group != group || ev.UD.QKey == 0 {
		t.Fatalf("event %s group %v UD %+v", ev, ev.Group, ev.UD)
	}
	t.Logf("joined %v: MGID %s, Q_Key %#x, QP %#x attached", group, ev.UD.AH.GRH.DGID, ev.UD.QKey, qp.Num())
	ev.Ack()
	if err := id.JoinMulticast(group, false); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("joining twice: %v, want EINVAL", err)
	}
	if err := id.LeaveMulticast(group); err != nil {
		t.Fatal(err)
	}
	if err := id.LeaveMulticast(group); !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("leaving twice: %v, want EADDRNOTAVAIL", err)
	}
}

func TestVMBadInput(t *testing.T) {
	vmtest.Require(t)
	ch := newChannel(t)
	id := newID(t, ch, rdmacm.PortSpaceTCP)
	// An address family the kernel refuses: an IPv4 source with an IPv6
	// destination.
	err := id.ResolveAddr(netip.AddrPortFrom(addr0, 0), netip.MustParseAddrPort("[fe80::1%1]:7484"), time.Second)
	if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.EAFNOSUPPORT) {
		t.Errorf("mixed families: %v, want EINVAL", err)
	}
	if err := id.ResolveAddr(netip.AddrPort{}, netip.AddrPort{}, time.Second); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("no address: %v", err)
	}
	if _, err := ch.CreateID(0x999); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("unknown port space: %v", err)
	}
	// Private data over the kernel's limit, refused before the kernel.
	c := resolve(t, ch, rdmacm.PortSpaceTCP, 7484)
	if _, err := c.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(&rdmacm.ConnParam{PrivateData: make([]byte, 57)}); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "at most 56") {
		t.Errorf("57 bytes of private data: %v", err)
	}
	if _, err := c.CreateQP(nil, qpCap); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("second QP: %v", err)
	}
	// A closed ID and a closed channel.
	if err := id.Close(); err != nil {
		t.Fatal(err)
	}
	if err := id.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := id.Listen(1); !errors.Is(err, os.ErrClosed) {
		t.Errorf("listen on a closed ID: %v", err)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("connect after the channel's Close: %v", err)
	}
	if _, err := ch.CreateID(rdmacm.PortSpaceTCP); !errors.Is(err, os.ErrClosed) {
		t.Errorf("create id on a closed channel: %v", err)
	}
	if _, err := ch.GetEvent(context.Background()); !errors.Is(err, os.ErrClosed) {
		t.Errorf("get event on a closed channel: %v", err)
	}
	if ids := cmIDs(t); len(ids) != 0 {
		t.Errorf("left behind: %s", strings.Join(ids, "\n"))
	}
}

func TestVMGetEventWakes(t *testing.T) {
	vmtest.Require(t)
	ch, err := rdmacm.NewEventChannel(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := ch.GetEvent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %v", err)
	}
	done := make(chan error)
	go func() {
		_, err := ch.GetEvent(context.Background())
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	ch.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("after Close: %v, want os.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake GetEvent")
	}
}

// TestVMGetEventAllocs checks that GetEvent and Ack allocate nothing in
// steady state: ADDR_RESOLVED events of IDs on a device already open.
func TestVMGetEventAllocs(t *testing.T) {
	vmtest.Require(t)
	const n = 200
	ch := newChannel(t)
	ids := make([]*rdmacm.ID, n+1)
	for i := range ids {
		id, err := ch.CreateID(rdmacm.PortSpaceTCP)
		if err != nil {
			t.Fatal(err)
		}
		defer id.Close()
		ids[i] = id
	}
	if err := ids[0].ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(addr0, 7485), time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, ch, rdmacm.EventAddrResolved).Ack() // opens the device, fills the pool
	for _, id := range ids[1:] {
		if err := id.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(addr0, 7485), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != rdmacm.EventAddrResolved {
			t.Fatalf("event %s", ev)
		}
		ev.Ack()
	}
	runtime.ReadMemStats(&after)
	// The count is the process's: a stray allocation of the runtime or
	// the test framework may fall in the window, one per event may not.
	if d := after.Mallocs - before.Mallocs; d >= n/10 {
		t.Errorf("%d GetEvent+Ack allocated %d times", n, d)
	} else {
		t.Logf("%d GetEvent+Ack: %d allocations in the window", n, d)
	}
}

// TestVMDeviceRemoval deletes rxe1 under a listener and a connection on it
// and adds it back. It runs last: the other tests use rxe0.
func TestVMDeviceRemoval(t *testing.T) {
	vmtest.Require(t)
	addr1 := netip.MustParseAddr(vmtest.Addr1)
	sch, cch := newChannel(t), newChannel(t)
	l := newID(t, sch, rdmacm.PortSpaceTCP)
	if err := l.Bind(netip.AddrPortFrom(addr1, 7486)); err != nil {
		t.Fatal(err)
	}
	if l.DeviceName() != vmtest.Dev1 {
		t.Fatalf("bound to %q", l.DeviceName())
	}
	if err := l.Listen(4); err != nil {
		t.Fatal(err)
	}
	c := newID(t, cch, rdmacm.PortSpaceTCP)
	if err := c.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(addr1, 7486), time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, cch, rdmacm.EventAddrResolved).Ack()
	if err := c.ResolveRoute(time.Second); err != nil {
		t.Fatal(err)
	}
	next(t, cch, rdmacm.EventRouteResolved).Ack()
	if _, err := c.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(nil); err != nil {
		t.Fatal(err)
	}
	s := acceptNext(t, sch, cch, nil)

	defer func() {
		// Put rxe1 back for whatever runs after.
		exec.Command("rdma", "link", "add", vmtest.Dev1, "type", "rxe", "netdev", vmtest.Net1).Run()
		for i := 0; i < 100; i++ {
			if st, _ := vmtest.PortState(vmtest.Dev1); st == "4: ACTIVE" {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	del := exec.Command("rdma", "link", "delete", vmtest.Dev1)
	delDone := make(chan error, 1)
	go func() { delDone <- del.Run() }()
	// The kernel waits for the IDs to be destroyed before the device
	// goes: each side sees DEVICE_REMOVAL and closes.
	seen := map[*rdmacm.ID]bool{}
	for _, ch := range []*rdmacm.EventChannel{sch, sch, cch} {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			ev, err := ch.GetEvent(ctx)
			cancel()
			if err != nil {
				t.Fatalf("waiting for DEVICE_REMOVAL: %v", err)
			}
			typ, id := ev.Type, ev.ID
			ev.Ack()
			if typ == rdmacm.EventDeviceRemoval {
				seen[id] = true
				// rxe cannot disassociate a verbs context: the kernel's
				// removal waits until the last ID on the device closes it.
				if err := id.Close(); err != nil {
					t.Errorf("Close after DEVICE_REMOVAL: %v", err)
				}
				break
			}
			t.Logf("before DEVICE_REMOVAL: %s", typ)
		}
	}
	if !seen[l] || !seen[s] || !seen[c] {
		t.Errorf("DEVICE_REMOVAL for listener %v, server %v, client %v", seen[l], seen[s], seen[c])
	}
	select {
	case err := <-delDone:
		if err != nil {
			t.Errorf("rdma link delete: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("rdma link delete hangs")
	}

	// rxe1 comes back with the same GUID: a new ID opens it anew.
	if err := exec.Command("rdma", "link", "add", vmtest.Dev1, "type", "rxe", "netdev", vmtest.Net1).Run(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if st, _ := vmtest.PortState(vmtest.Dev1); st == "4: ACTIVE" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	again := newID(t, sch, rdmacm.PortSpaceTCP)
	if err := again.Bind(netip.AddrPortFrom(addr1, 7486)); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Verbs().QueryPort(1); err != nil {
		t.Errorf("the device added again: %v", err)
	}
}

// TestVMConnectResponse connects an ID without a QP, with the program's
// own QP driven by InitQPAttr: CONNECT_RESPONSE, then Establish.
func TestVMConnectResponse(t *testing.T) {
	vmtest.Require(t)
	sch, cch := newChannel(t), newChannel(t)
	listen(t, sch, rdmacm.PortSpaceTCP, 7487)
	c := resolve(t, cch, rdmacm.PortSpaceTCP, 7487)
	cq, err := c.Verbs().CreateCQ(uverbs.CQAttr{CQE: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	qp, err := c.PD().CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: qpCap.Cap})
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	move := func(state uverbs.QPState) {
		t.Helper()
		a, m, err := c.InitQPAttr(state)
		if err != nil {
			t.Fatalf("init qp attr %v: %v", state, err)
		}
		if err := qp.Modify(&a, m); err != nil {
			t.Fatalf("modify to %v (mask %#x): %v", state, m, err)
		}
	}
	move(uverbs.QPStateInit)
	if err := c.Connect(&rdmacm.ConnParam{QPNum: qp.Num(), RetryCount: 7, RNRRetryCount: 7, InitiatorDepth: 1, ResponderResources: 1}); err != nil {
		t.Fatal(err)
	}
	req := next(t, sch, rdmacm.EventConnectRequest)
	if req.Conn.QPNum != qp.Num() {
		t.Errorf("request's QPN %#x, want %#x", req.Conn.QPNum, qp.Num())
	}
	s := req.ID
	req.Ack()
	defer s.Close()
	if _, err := s.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := s.Accept(nil); err != nil {
		t.Fatal(err)
	}
	next(t, cch, rdmacm.EventConnectResponse).Ack()
	move(uverbs.QPStateRTR)
	move(uverbs.QPStateRTS)
	if err := c.Establish(); err != nil {
		t.Fatal(err)
	}
	next(t, sch, rdmacm.EventEstablished).Ack()
}

// TestVMTimewaitExit waits, after a disconnect, for the kernel's
// TIMEWAIT_EXIT on the active side.
func TestVMTimewaitExit(t *testing.T) {
	vmtest.Require(t)
	sch, cch := newChannel(t), newChannel(t)
	listen(t, sch, rdmacm.PortSpaceTCP, 7488)
	c, s := connect(t, cch, sch, 7488)
	part(t, c, cch, s, sch)
	start := time.Now()
	next(t, cch, rdmacm.EventTimewaitExit).Ack()
	t.Logf("TIMEWAIT_EXIT %v after the disconnect", time.Since(start).Round(time.Millisecond))
}

// TestVMEndpoint connects two synchronous endpoints (CreateEP,
// GetRequest): every call returns when its outcome is known.
func TestVMEndpoint(t *testing.T) {
	vmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dst := netip.AddrPortFrom(addr0, 7493)
	l, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Passive: true, Src: dst, QP: &qpCap})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Listen(4); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		s, err := l.GetRequest(ctx)
		if err != nil {
			served <- err
			return
		}
		defer s.Close()
		if s.QP() == nil {
			served <- errors.New("GetRequest made no QP")
			return
		}
		if err := s.Accept(nil); err != nil {
			served <- err
			return
		}
		served <- s.Disconnect() // takes the client's DISCONNECTED and answers it
	}()
	c, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Dst: dst, QP: &qpCap})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.QP() == nil || c.DeviceName() != vmtest.Dev0 {
		t.Fatalf("endpoint: QP %v, device %q", c.QP(), c.DeviceName())
	}
	if err := c.Connect(nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	// A synchronous connect to a port nobody listens on is refused.
	r, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Dst: netip.AddrPortFrom(addr0, 7494), QP: &qpCap})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rej *rdmacm.RejectError
	if err := r.Connect(nil); !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &rej) || rej.Reason != rdmacm.RejectInvalidServiceID {
		t.Errorf("connect to no listener: %v", err)
	}
	// An address that does not resolve fails CreateEP itself.
	if _, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Dst: netip.MustParseAddrPort("10.77.0.99:7495"), Timeout: 300 * time.Millisecond}); !errors.Is(err, syscall.ETIMEDOUT) {
		t.Errorf("unresolvable address: %v", err)
	}
}

// TestVMPortSpaceIB connects in the IB port space with IP addresses, as
// librdmacm does for RDMA_PS_IB: with IP addresses the RDMA CM header
// is there as in the TCP port space, and the limit is 56 bytes.
func TestVMPortSpaceIB(t *testing.T) {
	vmtest.Require(t)
	sch, cch := newChannel(t), newChannel(t)
	listen(t, sch, rdmacm.PortSpaceIB, 7496)
	c := resolve(t, cch, rdmacm.PortSpaceIB, 7496)
	if c.QPType() != uverbs.QPTypeRC {
		t.Errorf("QP type %v", c.QPType())
	}
	if _, err := c.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(&rdmacm.ConnParam{PrivateData: make([]byte, 57)}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("57 bytes: %v", err)
	}
	pd := bytes.Repeat([]byte{0x5a}, 56)
	if err := c.Connect(&rdmacm.ConnParam{PrivateData: pd, RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	req := next(t, sch, rdmacm.EventConnectRequest)
	if !bytes.Equal(req.Conn.PrivateData[:56], pd) {
		t.Errorf("private data %x", req.Conn.PrivateData)
	}
	s := req.ID
	req.Ack()
	defer s.Close()
	if _, err := s.CreateQP(nil, qpCap); err != nil {
		t.Fatal(err)
	}
	if err := s.Accept(nil); err != nil {
		t.Fatal(err)
	}
	next(t, cch, rdmacm.EventEstablished).Ack()
	next(t, sch, rdmacm.EventEstablished).Ack()
	// iproute2 (rdma/res-cmid.c, cm_id_ps_to_str) names RDMA_PS_IB
	// "IPoIB", as it names RDMA_PS_IPOIB.
	if ids := cmIDs(t); len(ids) != 3 || !strings.Contains(ids[0], "ps IPoIB") {
		t.Errorf("want three IDs, ps IPoIB:\n%s", strings.Join(ids, "\n"))
	}
}

// sh runs a command line in the guest's shell and fails the test on error.
func sh(t *testing.T, line string) {
	t.Helper()
	if out, err := exec.Command("sh", "-c", line).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
}

// TestVMUnreachable produces UNREACHABLE: veth1 moves to a second network
// namespace with a new rxe1 on it, and a client there connects to rxe0's
// listener. On Linux 6.1 and 6.12 rxe's UDP socket lives in the initial
// namespace only (rxe_net.c), so the REQ crosses the wire and is answered
// but the answers reach no socket in the client's namespace: the CM gives
// up with -ETIMEDOUT. It runs last: it takes veth1 and rxe1 away.
func TestVMUnreachable(t *testing.T) {
	vmtest.Require(t)
	if vmtest.Kernel() != "6.1" {
		// Measured: rdma-core's rping client in the same set-up gets no
		// event at all within 240 s on 6.12, where 6.1 answers in 50 ms.
		t.Skip("on Linux " + vmtest.Kernel() + " a connect from the second namespace gets no event within 240 s, rdma-core's rping's alike")
	}
	const ip = "/bin/ip" // iproute2's, for netns
	sh(t, "mkdir -p /run/netns && "+ip+" netns add cmtest && "+ip+" link set "+vmtest.Net1+" netns cmtest && "+
		ip+" -n cmtest addr add "+vmtest.Addr1+"/24 dev "+vmtest.Net1+" && "+ip+" -n cmtest link set "+vmtest.Net1+" up && "+
		ip+" netns exec cmtest rdma link add "+vmtest.Dev1+" type rxe netdev "+vmtest.Net1)
	sch := newChannel(t)
	listen(t, sch, rdmacm.PortSpaceTCP, 7498)

	// The client's ID takes the namespace of the thread that creates it.
	type result struct {
		ev  rdmacm.EventType
		err error
		msg string
	}
	done := make(chan result, 1)
	go func() {
		if err := vmtest.EnterNetns("cmtest"); err != nil {
			done <- result{err: err}
			return
		}
		ch, err := rdmacm.NewEventChannel(nil)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer ch.Close()
		c, err := ch.CreateID(rdmacm.PortSpaceTCP)
		if err != nil {
			done <- result{err: err}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		step := func(f func() error, want rdmacm.EventType) error {
			if err := f(); err != nil {
				return err
			}
			ev, err := ch.GetEvent(ctx)
			if err != nil {
				return err
			}
			defer ev.Ack()
			if ev.Type != want {
				return fmt.Errorf("event %s, want %s", ev, want)
			}
			return nil
		}
		if err := step(func() error { return c.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(addr0, 7498), 2*time.Second) }, rdmacm.EventAddrResolved); err != nil {
			done <- result{err: err}
			return
		}
		if c.DeviceName() != vmtest.Dev1 {
			done <- result{err: fmt.Errorf("resolved to %q, want %s in the namespace", c.DeviceName(), vmtest.Dev1)}
			return
		}
		if err := step(func() error { return c.ResolveRoute(2 * time.Second) }, rdmacm.EventRouteResolved); err != nil {
			done <- result{err: err}
			return
		}
		if _, err := c.CreateQP(nil, qpCap); err != nil {
			done <- result{err: err}
			return
		}
		start := time.Now()
		if err := c.Connect(nil); err != nil {
			done <- result{err: err}
			return
		}
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer ev.Ack()
		c.Close() // closes its device on this thread's namespace
		done <- result{ev: ev.Type, err: ev.Err(), msg: fmt.Sprintf("%s after %v", ev, time.Since(start).Round(time.Millisecond))}
	}()
	r := <-done
	if r.ev != rdmacm.EventUnreachable || !errors.Is(r.err, syscall.ETIMEDOUT) {
		t.Fatalf("connect across namespaces: %v (%s), want UNREACHABLE, ETIMEDOUT", r.err, r.msg)
	}
	t.Logf("%s", r.msg)
}
