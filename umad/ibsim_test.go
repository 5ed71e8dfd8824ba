package umad

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
)

// simGet builds a Get of attr for class (version 1, or 1 for the PMA).
func simGet(class MgmtClass, attr AttrID, mod uint32) []byte {
	m := make([]byte, 256)
	m[0], m[1], m[2], m[3] = 1, byte(class), 1, 0x01
	binary.BigEndian.PutUint16(m[16:], uint16(attr))
	binary.BigEndian.PutUint32(m[20:], mod)
	return m
}

// simDR makes m a directed-route SMP along path (the out ports).
func simDR(m []byte, path ...byte) []byte {
	m[1] = byte(ClassSubnMgmtDirectedRoute)
	m[7] = byte(len(path))
	binary.BigEndian.PutUint16(m[32:], 0xffff)
	binary.BigEndian.PutUint16(m[34:], 0xffff)
	copy(m[129:], path)
	return m
}

// simQuery sends m from agent to lid (QP qpn) and returns the response.
func simQuery(t *testing.T, p *Port, agent AgentID, lid uint16, qpn uint32, m []byte) *Packet {
	t.Helper()
	pkt := NewPacket()
	if err := pkt.SetMAD(m); err != nil {
		t.Fatal(err)
	}
	if err := pkt.SetAddr(lid, qpn, 0, 0x80010000); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(agent, pkt, 200*time.Millisecond, 2); err != nil {
		t.Fatal(err)
	}
	r := NewPacket()
	if _, err := p.Recv(r, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSimPort opens ports of the small simulated fabric over ibsim's
// protocol and checks SMP (LID-routed and directed-route) and PMA answers
// against what infiniband-diags find, unroutable LIDs, Close and context
// unblocking receives, and that closing gives ibsim's client slots back.
func TestSimPort(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lids, err := f.LIDs(ctx, "Hca1")
	if err != nil {
		t.Fatal(err)
	}

	p, err := OpenSimPort(f.Sock, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.LinkLayer() != rdma.LinkLayerInfiniBand || p.CA() != "Hca1" || !strings.HasPrefix(p.Device(), "ibsim:") {
		t.Errorf("port %s: ca %q link layer %q device %q", p, p.CA(), p.LinkLayer(), p.Device())
	}
	smi, err := p.Register(ClassSubnMgmt, 1, MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	dr, err := p.Register(ClassSubnMgmtDirectedRoute, 1, MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	pma, err := p.Register(ClassPerfMgmt, 1, MethodMask{})
	if err != nil {
		t.Fatal(err)
	}

	// LID-routed NodeInfo of Switch2: a switch with 8 ports.
	r := simQuery(t, p, smi, uint16(lids["Switch2"]), 0, simGet(ClassSubnMgmt, SMAttrNodeInfo, 0))
	mad := r.MAD()
	if r.Status() != 0 || mad[3] != 0x81 || binary.BigEndian.Uint16(mad[4:]) != 0 {
		t.Fatalf("NodeInfo: status %v method %#x MAD status %#x", r.Status(), mad[3], binary.BigEndian.Uint16(mad[4:]))
	}
	if mad[64+2] != 2 || mad[64+3] != 8 {
		t.Errorf("Switch2 NodeInfo: node type %d, %d ports; want a switch (2) of 8", mad[64+2], mad[64+3])
	}
	if a := r.Addr(); a.LID != uint16(lids["Switch2"]) || a.QPN != 0 {
		t.Errorf("answer from %v, want LID %d QP 0", a, lids["Switch2"])
	}
	// Directed route 0,1,3: Hca1's port 1 to Switch1, out its port 3 to
	// Switch2 (arriving at its port 3).
	r = simQuery(t, p, dr, 0xffff, 0, simDR(simGet(ClassSubnMgmt, SMAttrNodeDescription, 0), 1, 3))
	if got := strings.TrimRight(string(r.MAD()[64:128]), "\x00"); got != "Switch2" {
		t.Errorf("DR 0,1,3 NodeDescription %q, want Switch2", got)
	}
	// PMA PortCounters of Hca2's port 1.
	m := simGet(ClassPerfMgmt, PMAttrPortCounters, 0)
	m[64+1] = 1
	r = simQuery(t, p, pma, uint16(lids["Hca2"]), 1, m)
	if mad := r.MAD(); mad[3] != 0x81 || mad[64+1] != 1 || binary.BigEndian.Uint32(mad[64+32:]) == 0 {
		t.Errorf("PortCounters: method %#x port %d PortXmitPkts %d", mad[3], mad[64+1], binary.BigEndian.Uint32(mad[64+32:]))
	}
	// An unassigned LID: ibsim cannot route it, the send comes back timed
	// out at once rather than after its retries.
	start := time.Now()
	pkt := NewPacket()
	_ = pkt.SetMAD(simGet(ClassSubnMgmt, SMAttrNodeInfo, 0))
	_ = pkt.SetAddr(999, 0, 0, 0)
	if err := p.Send(smi, pkt, 2*time.Second, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Recv(pkt, 5*time.Second); err != nil || !pkt.TimedOut() {
		t.Fatalf("unroutable LID: err %v status %v", err, pkt.Status())
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("unroutable LID took %v", d)
	}
	// Nothing pending: a receive times out; Poll(0) says so.
	if _, err := p.Recv(pkt, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("idle Recv: %v", err)
	}
	if err := p.Poll(0); !errors.Is(err, ErrTimeout) {
		t.Errorf("idle Poll: %v", err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Millisecond)
	if _, err := p.RecvContext(cctx, pkt); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RecvContext: %v", err)
	}
	ccancel()

	// Close unblocks a receive.
	var wg sync.WaitGroup
	wg.Add(1)
	var rerr error
	go func() { defer wg.Done(); _, rerr = p.Recv(NewPacket(), -1) }()
	time.Sleep(50 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !errors.Is(rerr, os.ErrClosed) {
		t.Errorf("Recv after Close: %v", rerr)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// ibsim has 10 client slots (OpenSM holds one): ports opened and
	// closed in turn need Close to give them back. More than simIDs of
	// them: the ids wrap, and stay ones ibsim names as we do (positive
	// C ints), or it would exit on the first that is not.
	for i := 0; i < simIDs+20; i++ {
		q, err := OpenSimPort(f.Sock, "Hca3")
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The library reads no environment variable: PURERDMA_IBSIM leaves
	// OpenPort on the kernel's devices (here: a host without any).
	t.Setenv("PURERDMA_IBSIM", f.Sock+":Hca4")
	if q, err := (&Host{Sysfs: tFS(t, t.TempDir())}).OpenPort("", 0); err == nil {
		q.Close()
		t.Errorf("OpenPort with PURERDMA_IBSIM set opened %s", q)
	}
	q, err := OpenSimPort(f.Sock, "Hca4")
	if err != nil {
		t.Fatal(err)
	}
	if q.CA() != "Hca4" {
		t.Errorf("OpenSimPort at Hca4: CA %q", q.CA())
	}
	q.Close()
	if _, err := OpenSimPort(f.Sock+"-none", "Hca1"); !errors.Is(err, ErrNoDevice) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("no ibsim: %v", err)
	}
	if _, err := OpenSimPort(f.Sock, "NoSuchNode"); !errors.Is(err, ErrOpenFailed) {
		t.Errorf("no such node: %v", err)
	}
	// An SM client: one a node. OpenSM is Switch1's (the net's first
	// node); Hca4 takes one, and a second there is refused.
	if _, err := OpenSimPortSM(f.Sock, "Switch1"); !errors.Is(err, ErrOpenFailed) || !strings.Contains(err.Error(), "SM client") {
		t.Errorf("an SM client at OpenSM's node: %v", err)
	}
	sm, err := OpenSimPortSM(f.Sock, "Hca4")
	if err != nil {
		t.Fatalf("OpenSimPortSM at Hca4: %v", err)
	}
	if _, err := OpenSimPortSM(f.Sock, "Hca4"); !errors.Is(err, ErrOpenFailed) {
		t.Errorf("a second SM client at Hca4: %v", err)
	}
	sm.Close()
}

// TestSimID: a link's id is positive as a C int, carries the pid, and
// simIDs consecutive links have distinct ids.
func TestSimID(t *testing.T) {
	seen := map[uint32]bool{}
	for seq := uint32(0); seq < 3*simIDs; seq++ {
		id := simID(seq)
		if int32(id) < 0 || id&(1<<22-1) != uint32(os.Getpid())&(1<<22-1) {
			t.Fatalf("seq %d: id %#x", seq, id)
		}
		if seq < simIDs {
			if seen[id] {
				t.Fatalf("seq %d: id %#x again", seq, id)
			}
			seen[id] = true
		}
	}
}

// FuzzSimRequest: ibsim's packets decode only at exactly 288 bytes with a
// length of 24 to 256, never panic, and carry the MAD at that length with
// the bytes it came with (but the TID's top 16 bits of answers and failed
// requests).
func FuzzSimRequest(f *testing.F) {
	ok := make([]byte, simReqSize)
	binary.BigEndian.PutUint64(ok[24:], 256)
	ok[32+3] = 0x81
	ok[32+8], ok[32+9], ok[32+10] = 1, 2, 3
	f.Add(ok)
	f.Add(ok[:100])
	f.Add(append(ok, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := append([]byte(nil), b...)
		r, good := decodeSimRequest(b)
		length := uint64(0)
		if len(in) >= 32 {
			length = binary.BigEndian.Uint64(in[24:32])
		}
		want := len(in) == simReqSize && length >= 24 && length <= 256
		if good != want {
			t.Fatalf("decoded %v for %d bytes, length %d", good, len(in), length)
		}
		if !good {
			return
		}
		if uint64(len(r.mad)) != length || r.slid != binary.BigEndian.Uint16(in[4:]) || r.sqp != binary.BigEndian.Uint32(in[12:])&0xffffff {
			t.Fatalf("%+v", r)
		}
		cleared := in[32+3]&0x80 != 0 || r.status != 0
		if cleared && (r.mad[8] != 0 || r.mad[9] != 0) || !cleared && (r.mad[8] != in[40] || r.mad[9] != in[41]) {
			t.Fatalf("TID %x from %x", r.mad[8:16], in[40:48])
		}
		if !bytes.Equal(r.mad[10:], in[42:32+length]) {
			t.Fatal("MAD bytes changed")
		}
	})
}

// TestSimPortLossAndStall: a request ibsim drops (a port's error rate,
// set from its console) is tried again at once, as often as the send's
// retries allow; while ibsim is stopped, timeouts wait and nothing is
// resent, and the answer that comes once it runs again completes the
// request. A CONNECT waits for ibsim's answer while ibsim is stopped, and
// fails, saying so, once ibsim is gone; one given up on (its context done)
// leaves ibsim running and its slot free. Close waits for the answer to
// DISCONNECT for at most simCloseWait.
func TestSimPortLossAndStall(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{Console: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lids, err := f.LIDs(ctx, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := OpenSimPort(f.Sock, "Hca1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	smi, err := p.Register(ClassSubnMgmt, 1, MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	hca2 := uint16(lids["Hca2"])
	send := func(tid uint64, timeout time.Duration, retries int) *Packet {
		t.Helper()
		pkt := NewPacket()
		m := simGet(ClassSubnMgmt, SMAttrNodeInfo, 0)
		binary.BigEndian.PutUint64(m[8:], tid)
		_ = pkt.SetMAD(m)
		_ = pkt.SetAddr(hca2, 0, 0, 0)
		if err := p.Send(smi, pkt, timeout, retries); err != nil {
			t.Fatal(err)
		}
		return pkt
	}

	// Every request to Hca2's port dropped: 1 + 2 tries, at once.
	if err := f.Console(`Error "Hca2"[1] 100`); err != nil {
		t.Fatal(err)
	}
	before := p.sim.port.Sent()
	start := time.Now()
	pkt := send(1, 2*time.Second, 2)
	if _, err := p.Recv(pkt, 5*time.Second); err != nil || !pkt.TimedOut() {
		t.Fatalf("dropped request: err %v status %v", err, pkt.Status())
	}
	if el, n := time.Since(start), p.sim.port.Sent()-before; n != 3 || el > time.Second {
		t.Errorf("dropped request: %d tries in %v, want 3 at once", n, el)
	}
	if err := f.Console(`Error "Hca2"[1] 0`); err != nil {
		t.Fatal(err)
	}

	// ibsim stopped: the 50 ms timeout waits, nothing is resent.
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	before = p.sim.port.Sent()
	pkt = send(2, 50*time.Millisecond, 1)
	time.Sleep(600 * time.Millisecond)
	if _, err := p.Recv(pkt, 0); !errors.Is(err, ErrWouldBlock) {
		t.Errorf("while ibsim is stopped: %v, status %v; want nothing yet", err, pkt.Status())
	}
	if n := p.sim.port.Sent() - before; n != 1 {
		t.Errorf("while ibsim is stopped: sent %d times, want once", n)
	}
	if err := f.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Recv(pkt, 5*time.Second); err != nil || pkt.TimedOut() || pkt.MAD()[3] != 0x81 {
		t.Fatalf("after the stall: err %v status %v", err, pkt.Status())
	}

	// CONNECT waits for a stopped ibsim; Close waits for the answer to
	// DISCONNECT at most simCloseWait.
	waits := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			t.Fatalf("%s returned while ibsim was stopped: %v", what, err)
		case <-time.After(600 * time.Millisecond):
		}
		return <-done
	}
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(time.Second, func() { _ = f.Resume() })
	var q *Port
	if err := waits("OpenSimPort", func() (err error) { q, err = OpenSimPort(f.Sock, "Hca3"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < simCloseWait || el > simCloseWait+2*simTick {
		t.Errorf("Close with ibsim stopped took %v, want about %v", el, simCloseWait)
	}
	if err := f.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := f.Running(ctx, "Hca4"); err != nil {
		t.Fatalf("the fabric after the stalls: %v", err)
	}

	// A CONNECT given up (its context done while ibsim is stopped) is
	// finished in the background: once ibsim runs again it connects to a
	// data socket that is still there, and gets the slot back.
	capacity := func() int { // how many more ports open at once
		var ps []*Port
		defer func() {
			for _, p := range ps {
				p.Close()
			}
		}()
		for {
			p, err := OpenSimPort(f.Sock, "Hca3")
			if err != nil {
				if !strings.Contains(err.Error(), "slots taken") {
					t.Fatal(err)
				}
				return len(ps)
			}
			ps = append(ps, p)
		}
	}
	free := capacity()
	if free == 0 {
		t.Fatal("no free ibsim slot")
	}
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	octx, ocancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	start = time.Now()
	_, err = OpenSimPortContext(octx, f.Sock, "Hca3")
	ocancel()
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrOpenFailed) || time.Since(start) > 300*time.Millisecond+2*simTick {
		t.Errorf("OpenSimPortContext with ibsim stopped: %v after %v", err, time.Since(start))
	}
	if err := f.Resume(); err != nil {
		t.Fatal(err)
	}
	// The slot is given back: as many ports open as before.
	deadline := time.Now().Add(5 * time.Second)
	n := capacity()
	for n < free && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the abandoned slot is still being given back
		n = capacity()
	}
	if n != free {
		t.Errorf("after an abandoned CONNECT %d ports open at once, before %d", n, free)
	}
	t.Logf("%d ports open at once before and after an abandoned CONNECT", n)
	if err := f.Running(ctx, "Hca4"); err != nil {
		t.Fatalf("the fabric after an abandoned CONNECT: %v", err)
	}
	if out := f.Output(); strings.Contains(out, "can't connect to in socket") || strings.Contains(out, "ibpanic") {
		t.Errorf("ibsim complained:\n%s", out)
	}

	// ibsim gone while a CONNECT waits: the open fails, saying so.
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(time.Second, func() { _ = f.Kill() })
	start = time.Now()
	err = waits("OpenSimPort", func() error { _, err := OpenSimPort(f.Sock, "Hca3"); return err })
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "went away") || time.Since(start) > 5*time.Second {
		t.Errorf("ibsim killed during CONNECT: %v after %v", err, time.Since(start))
	}
}
