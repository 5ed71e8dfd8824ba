package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tRequest fills pkt with a vendor-class request (class 0x30, OpenIB OUI)
// addressed to QP1 of the port whose GID (RoCE) or LID (InfiniBand) is
// given.
func tRequest(t *testing.T, pkt *Packet, method uint8, tid uint32, gid *[16]byte, lid uint16) {
	t.Helper()
	if err := pkt.SetLen(256); err != nil {
		t.Fatal(err)
	}
	m := pkt.MAD()
	clear(m)
	m[0], m[1], m[2], m[3] = 1, tVendorClass, 1, method
	binary.BigEndian.PutUint64(m[8:16], uint64(tid))
	m[37], m[38], m[39] = 0x00, 0x14, 0x05
	copy(m[40:], "ping")
	if err := pkt.SetAddr(lid, 1, 0, QP1QKey); err != nil {
		t.Fatal(err)
	}
	if gid != nil {
		if err := pkt.SetGRH(GRH{GID: *gid, HopLimit: 64}); err != nil {
			t.Fatal(err)
		}
	} else {
		pkt.ClearGRH()
	}
}

func tid(pkt *Packet) uint64 { return binary.BigEndian.Uint64(pkt.MAD()[8:16]) }

// rxeSetup opens rxe0 (a client agent) and rxe1 (a replier for Get).
func rxeSetup(t *testing.T) (e *tEnv, cli *Port, ca AgentID, srv *Port, sa AgentID, gid1 [16]byte) {
	t.Helper()
	cas := rxePair()
	e = newEnv(t, cas...)
	cli = e.open(t, "rxe0", 1)
	srv = e.open(t, "rxe1", 1)
	var err error
	if ca, err = cli.RegisterOUI(tVendorClass, 0, tOUI, MethodMask{}); err != nil {
		t.Fatal(err)
	}
	if sa, err = srv.RegisterOUI(tVendorClass, 0, tOUI, MethodMaskOf(0x01)); err != nil {
		t.Fatal(err)
	}
	return e, cli, ca, srv, sa, cas[1].ports[0].gid
}

func TestRoundTripRoCE(t *testing.T) {
	_, cli, ca, srv, sa, gid1 := rxeSetup(t)
	req := NewPacket()
	tRequest(t, req, 0x01, 0x42, &gid1, 0)
	if err := cli.Send(ca, req, time.Second, 2); err != nil {
		t.Fatal(err)
	}
	in := NewPacket()
	id, err := srv.Recv(in, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if id != sa || in.Agent() != sa || in.Status() != 0 || in.Len() != 256 || string(in.MAD()[40:44]) != "ping" {
		t.Fatalf("replier got agent %d: %v", id, in)
	}
	a := in.Addr()
	if a.QPN != 1 || !a.GRHPresent || a.GRH.GID != rxePair()[0].ports[0].gid {
		t.Fatalf("sender address %v", a)
	}
	if tid(in)&0xffffffff != 0x42 || tid(in)>>32 == 0 {
		t.Fatalf("request TID %#x: the kernel sets the upper half", tid(in))
	}
	// Answer in the same packet: it keeps the sender's address.
	in.MAD()[3] = 0x81
	copy(in.MAD()[40:], "pong")
	if err := srv.Send(sa, in, 0, 0); err != nil {
		t.Fatal(err)
	}
	resp := NewPacket()
	id, err = cli.Recv(resp, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if id != ca || resp.Status() != 0 || resp.TimedOut() || tid(resp) != tid(in) || string(resp.MAD()[40:44]) != "pong" {
		t.Fatalf("client got agent %d: %v", id, resp)
	}
	// Nothing else arrives: no timeout after the response.
	time.Sleep(50 * time.Millisecond)
	if _, err := cli.Recv(resp, 0); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("after the round trip: %v", err)
	}
}

func TestRoundTripInfiniBandByLID(t *testing.T) {
	e := newEnv(t, ibPair()...)
	cli, srv := e.open(t, "mlx5_0", 1), e.open(t, "mlx5_1", 1)
	ca, err := cli.RegisterOUI(tVendorClass, 0, tOUI, MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := srv.RegisterOUI(tVendorClass, 0, tOUI, MethodMaskOf(0x02))
	if err != nil {
		t.Fatal(err)
	}
	pkt := NewPacket()
	tRequest(t, pkt, 0x02, 7, nil, 2)
	if err := cli.Send(ca, pkt, time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if id, err := srv.Recv(pkt, time.Second); err != nil || id != sa || pkt.Addr().LID != 1 || pkt.Addr().GRHPresent {
		t.Fatalf("%d %v %v", id, pkt, err)
	}
}

func TestSendTimeoutAfterRetries(t *testing.T) {
	e, cli, ca, srv, sa, gid1 := rxeSetup(t)
	req := NewPacket()
	tRequest(t, req, 0x01, 0x99, &gid1, 0)
	before := e.ports["rxe0/1"].Sent()
	start := time.Now()
	if err := cli.Send(ca, req, 20*time.Millisecond, 3); err != nil {
		t.Fatal(err)
	}
	back := NewPacket()
	id, err := cli.Recv(back, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 80*time.Millisecond {
		t.Errorf("the timeout came after %v; 4 sends × 20 ms", el)
	}
	if id != ca || !back.TimedOut() || back.Status() != syscall.ETIMEDOUT || back.Len() != 24 || tid(back)&0xffffffff != 0x99 {
		t.Fatalf("timeout record: agent %d %v", id, back)
	}
	if sent := e.ports["rxe0/1"].Sent() - before; sent != 4 {
		t.Fatalf("sent %d times, want 1 + 3 retries", sent)
	}
	// The replier, which never answered, saw the four copies.
	for i := 0; i < 4; i++ {
		if id, err := srv.Recv(back, time.Second); err != nil || id != sa {
			t.Fatal(id, err)
		}
	}
	if _, err := srv.Recv(back, 0); !errors.Is(err, ErrWouldBlock) {
		t.Fatal(err)
	}
}

func TestSendTimeoutConversion(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want uint32
	}{
		{0, 0}, {-1, 0xffffffff}, {-time.Hour, 0xffffffff}, {time.Nanosecond, 1}, {time.Millisecond, 1},
		{1500 * time.Microsecond, 2}, {time.Second, 1000}, {(1<<31 - 1) * time.Millisecond, 1<<31 - 1},
		{(1 << 31) * time.Millisecond, 0xffffffff},
	} {
		if got := timeoutMs(tc.d); got != tc.want {
			t.Errorf("timeoutMs(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
	// A request that waits for ever stays pending.
	e, cli, ca, _, _, gid1 := rxeSetup(t)
	req := NewPacket()
	tRequest(t, req, 0x01, 1, &gid1, 0)
	if err := cli.Send(ca, req, -1, 5); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if _, err := cli.Recv(req, 0); !errors.Is(err, ErrWouldBlock) || e.files[0].Outstanding() != 1 {
		t.Fatalf("a request sent with timeout < 0 must stay pending: %v", err)
	}
}

func TestSendValidation(t *testing.T) {
	_, cli, ca, _, _, gid1 := rxeSetup(t)
	pkt := NewPacket()
	tRequest(t, pkt, 0x01, 1, &gid1, 0)
	for name, err := range map[string]error{
		"nil packet": cli.Send(ca, nil, 0, 0),
		"agent 32":   cli.Send(32, pkt, 0, 0),
		"retries -1": cli.Send(ca, pkt, 0, -1),
	} {
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v", name, err)
		}
	}
	pkt.SetLen(35)
	if err := cli.Send(ca, pkt, 0, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("35-byte MAD: %v", err)
	}
	// The kernel's own checks come back with its errno.
	pkt.SetLen(257)
	if err := cli.Send(ca, pkt, 0, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("257-byte MAD: %v", err)
	}
	pkt.SetLen(256)
	if err := cli.Send(ca+1, pkt, 0, 0); !errors.Is(err, syscall.EIO) {
		t.Errorf("unregistered agent: %v", err)
	}
	pkt.ClearGRH()
	if err := cli.Send(ca, pkt, 0, 0); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "needs a GRH") {
		t.Errorf("RoCE without GRH: %v", err)
	}
	nowhere := gid1
	nowhere[15]++
	pkt.SetGRH(GRH{GID: nowhere, HopLimit: 64})
	if err := cli.Send(ca, pkt, 0, 0); !errors.Is(err, syscall.ETIMEDOUT) || !strings.Contains(err.Error(), "neighbour") {
		t.Errorf("unreachable GID: %v", err)
	}
	// Two pending requests with one TID.
	tRequest(t, pkt, 0x01, 5, &gid1, 0)
	pkt.MAD()[3] = 0x03 // nobody answers a Send
	if err := cli.Send(ca, pkt, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	err := cli.Send(ca, pkt, time.Minute, 0)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "duplicate TID") ||
		!strings.Contains(err.Error(), "use a fresh TID per request") || !strings.Contains(err.Error(), "TID 0x5") {
		t.Errorf("duplicate TID: %v", err)
	}
	// A fresh TID goes.
	binary.BigEndian.PutUint64(pkt.MAD()[8:16], 6)
	if err := cli.Send(ca, pkt, time.Minute, 0); err != nil {
		t.Errorf("fresh TID: %v", err)
	}
}

func TestRecvTimeouts(t *testing.T) {
	_, cli, ca, srv, _, gid1 := rxeSetup(t)
	pkt := NewPacket()
	// 0: non-blocking.
	_, err := srv.Recv(pkt, 0)
	if !errors.Is(err, ErrWouldBlock) || !errors.Is(err, syscall.EAGAIN) || !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("timeout 0: %v", err)
	}
	// > 0: times out.
	start := time.Now()
	_, err = srv.Recv(pkt, 30*time.Millisecond)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, syscall.ETIMEDOUT) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("timeout 30ms: %v", err)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("returned after %v", el)
	}
	var te interface{ Timeout() bool }
	if !errors.As(err, &te) || !te.Timeout() {
		t.Fatal("a timeout error says Timeout() true")
	}
	// < 0: blocks until a MAD arrives; an expired deadline left behind
	// does not disturb it.
	go func() {
		time.Sleep(20 * time.Millisecond)
		out := NewPacket()
		tRequest(t, out, 0x01, 3, &gid1, 0)
		cli.Send(ca, out, 0, 0)
	}()
	if _, err := srv.Recv(pkt, -1); err != nil {
		t.Fatal(err)
	}
	// And 0 after a timed receive still reads what is queued.
	out := NewPacket()
	tRequest(t, out, 0x01, 4, &gid1, 0)
	cli.Send(ca, out, 0, 0)
	if _, err := srv.Recv(pkt, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Recv(nil, 0); !errors.Is(err, syscall.EINVAL) {
		t.Fatal(err)
	}
}

// TestRecvQueuedFirst: a MAD already queued is read without waiting, so
// a port that never had to wait stays out of the runtime poller; once a
// receive waited, queued MADs still arrive, through the poller.
func TestRecvQueuedFirst(t *testing.T) {
	_, cli, ca, srv, sa, gid1 := rxeSetup(t)
	out, in := NewPacket(), NewPacket()
	for i, recv := range []func() (AgentID, error){
		func() (AgentID, error) { return srv.Recv(in, time.Second) },
		func() (AgentID, error) { return srv.Recv(in, -1) },
		func() (AgentID, error) { return srv.RecvContext(context.Background(), in) },
	} {
		tRequest(t, out, 0x01, uint32(10+i), &gid1, 0)
		if err := cli.Send(ca, out, 0, 0); err != nil {
			t.Fatal(err)
		}
		id, err := recv()
		if err != nil || id != sa || tid(in)&0xffffffff != uint64(10+i) {
			t.Fatalf("receive %d of a queued MAD: agent %d, TID %#x, %v", i, id, tid(in), err)
		}
		if srv.waits {
			t.Fatalf("receive %d of a queued MAD waited", i)
		}
	}
	if _, err := srv.Recv(in, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("empty queue: %v", err)
	}
	if !srv.waits {
		t.Fatal("a receive that timed out did not wait")
	}
	tRequest(t, out, 0x01, 20, &gid1, 0)
	if err := cli.Send(ca, out, 0, 0); err != nil {
		t.Fatal(err)
	}
	if id, err := srv.Recv(in, time.Second); err != nil || id != sa || tid(in)&0xffffffff != 20 {
		t.Fatalf("queued MAD after a wait: agent %d, TID %#x, %v", id, tid(in), err)
	}
}

func TestRecvContext(t *testing.T) {
	_, cli, ca, srv, _, gid1 := rxeSetup(t)
	pkt := NewPacket()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	if _, err := srv.RecvContext(ctx, pkt); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := srv.RecvContext(ctx, pkt); !errors.Is(err, context.Canceled) {
		t.Fatalf("already cancelled: %v", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if _, err := srv.RecvContext(dctx, pkt); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	// The port works normally afterwards, with and without contexts.
	out := NewPacket()
	tRequest(t, out, 0x01, 1, &gid1, 0)
	cli.Send(ca, out, 0, 0)
	if _, err := srv.Recv(pkt, time.Second); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		tRequest(t, out, 0x01, 2, &gid1, 0)
		cli.Send(ca, out, 0, 0)
	}()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	if _, err := srv.RecvContext(ctx2, pkt); err != nil {
		t.Fatal(err)
	}
	cancel2() // after the receive: must not disturb the next one
	go func() {
		time.Sleep(10 * time.Millisecond)
		tRequest(t, out, 0x01, 3, &gid1, 0)
		cli.Send(ca, out, 0, 0)
	}()
	if _, err := srv.RecvContext(context.Background(), pkt); err != nil {
		t.Fatal(err)
	}
}

func TestCloseUnblocksRecv(t *testing.T) {
	_, _, _, srv, _, _ := rxeSetup(t)
	errc := make(chan error, 1)
	go func() {
		_, err := srv.Recv(NewPacket(), -1)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	srv.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("%v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not unblock Recv")
	}
	if _, err := srv.Recv(NewPacket(), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatal(err)
	}
	if err := srv.Send(0, NewPacket(), 0, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatal(err)
	}
	if err := srv.Poll(0); !errors.Is(err, os.ErrClosed) {
		t.Fatal(err)
	}
}

func TestRecvGrowsForRMPP(t *testing.T) {
	e := newEnv(t, rxePair()...)
	p := e.open(t, "rxe0", 1)
	// Kernel-RMPP agents on vendor class 0x30: a client and a replier for
	// method 3, on the same port, sending to itself.
	cli, err := p.RegisterOUI(tVendorClass, 1, tOUI, MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := p.RegisterOUI(tVendorClass, 1, tOUI, MethodMaskOf(0x03))
	if err != nil {
		t.Fatal(err)
	}
	out := NewPacket()
	gid0 := rxePair()[0].ports[0].gid
	tRequest(t, out, 0x03, 1, &gid0, 0)
	if err := out.SetLen(3000); err != nil {
		t.Fatal(err)
	}
	m := out.MAD()
	m[24], m[25], m[26] = 1, 1, 1 // RMPP version 1, DATA, active
	m[2999] = 0xee
	if err := p.Send(cli, out, 0, 0); err != nil {
		t.Fatal(err)
	}
	in := NewPacket()
	id, err := p.Recv(in, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if id != srv || in.Len() != 3000 || in.MAD()[2999] != 0xee {
		t.Fatalf("agent %d len %d", id, in.Len())
	}
}

func TestPoll(t *testing.T) {
	_, cli, ca, srv, _, gid1 := rxeSetup(t)
	if err := srv.Poll(0); !errors.Is(err, ErrTimeout) || !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("empty: %v", err)
	}
	if err := srv.Poll(20 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("empty, 20ms: %v", err)
	}
	// Poll(0) only looks (poll with a zero timeout): it does not wait
	// for a timer, so 200 of them take far less than 200 × 1 ms.
	start := time.Now()
	for range 200 {
		if err := srv.Poll(0); !errors.Is(err, ErrTimeout) {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el > 150*time.Millisecond {
		t.Fatalf("200 × Poll(0) took %v: Poll(0) must not wait", el)
	}
	out := NewPacket()
	tRequest(t, out, 0x01, 1, &gid1, 0)
	cli.Send(ca, out, 0, 0)
	for _, d := range []time.Duration{0, time.Second, -1} {
		if err := srv.Poll(d); err != nil {
			t.Fatalf("queued, %v: %v", d, err)
		}
	}
	if _, err := srv.Recv(out, 0); err != nil {
		t.Fatal("Poll must not consume:", err)
	}
	// A blocked Poll wakes when a MAD arrives; the deadline it set does
	// not outlive it.
	go func() {
		time.Sleep(20 * time.Millisecond)
		tRequest(t, out, 0x01, 2, &gid1, 0)
		cli.Send(ca, out, 0, 0)
	}()
	if err := srv.Poll(5 * time.Second); err != nil {
		t.Fatalf("Poll while a MAD arrives: %v", err)
	}
	if _, err := srv.Recv(NewPacket(), -1); err != nil {
		t.Fatal(err)
	}
}

func TestDeviceRemoved(t *testing.T) {
	e, cli, ca, srv, _, gid1 := rxeSetup(t)
	errc := make(chan error, 1)
	go func() {
		_, err := srv.Recv(NewPacket(), -1)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	e.ports["rxe1/1"].Remove()
	if err := <-errc; !errors.Is(err, syscall.EIO) {
		t.Fatalf("blocked receive: %v", err)
	}
	if err := srv.Poll(0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("poll: %v", err)
	}
	// The peer's requests now go nowhere and time out.
	out := NewPacket()
	tRequest(t, out, 0x01, 1, &gid1, 0)
	if err := cli.Send(ca, out, 10*time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Recv(out, time.Second); err != nil || !out.TimedOut() {
		t.Fatal(err, out)
	}
}
