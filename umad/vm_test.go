//go:build integration

package umad

// VM tests: the real umad device of Linux 6.1 / 6.12 with rxe0 and rxe1.
// Run with
//
//	make -f mk/integration.mk integration
//
// or, for this package only,
//
//	CGO_ENABLED=0 go test -tags integration -exec 'go run ./integration/vmrun --' ./umad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/sysfs"
)

const (
	vmClass  = 0x30     // vendor range 2
	vmOUI    = 0x001405 // OpenIB
	vmGet    = 0x01
	vmGetRsp = 0x81
)

// vmGID returns GID 0 of port 1 of dev, from sysfs.
func vmGID(t testing.TB, dev string) [16]byte {
	t.Helper()
	f, err := sysfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Port(dev, 1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.GID(0)
	if err != nil {
		t.Fatal(err)
	}
	return g.GID
}

// vmOpen opens port 1 of dev, closed with the test.
func vmOpen(t testing.TB, dev string) *Port {
	t.Helper()
	p, err := OpenPort(dev, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// vmRequest fills pkt with a vendor-class Get to QP1 of the port whose
// GID is gid, over GRH from local GID index 0.
func vmRequest(t testing.TB, pkt *Packet, gid [16]byte, tid uint32) {
	t.Helper()
	pkt.SetLen(256)
	m := pkt.MAD()
	clear(m)
	m[0], m[1], m[2], m[3] = 1, vmClass, 1, vmGet
	binary.BigEndian.PutUint64(m[8:16], uint64(tid))
	m[37], m[38], m[39] = vmOUI>>16, vmOUI>>8&0xff, vmOUI&0xff
	if err := pkt.SetAddr(0, 1, 0, QP1QKey); err != nil {
		t.Fatal(err)
	}
	if err := pkt.SetGRH(GRH{GID: gid, GIDIndex: 0, HopLimit: 64}); err != nil {
		t.Fatal(err)
	}
}

func TestVMInit(t *testing.T) {
	vmtest.Require(t)
	if err := Init(); err != nil {
		t.Fatal(err)
	}
	// libibumad lists every CA, with or without a umad device, and its
	// default is the first with an ACTIVE port: with the test device
	// mock0 (no umad: a raw Ethernet port) that is mock0, for C's tools
	// too (perfquery without -C fails to open it).
	want := "rxe0 rxe1"
	if vmtest.HasMock() {
		want = "mock0 rxe0 rxe1"
	}
	names, err := CANames()
	if err != nil || strings.Join(names, " ") != want {
		t.Fatalf("CANames = %q, %v, want %s", names, err, want)
	}
	p, err := LookupPort("", 0)
	if err != nil || p.CA != names[0] || p.Number != 1 || p.LinkLayer != rdma.LinkLayerEthernet || p.State != 4 || p.Rate == nil || p.Rate.Mbps == 0 {
		t.Fatalf("default port %+v, %v", p, err)
	}
	t.Logf("default port: %+v", *p)
}

// TestVMRoundTrips: a replier agent on rxe1 (vendor class 0x30, method
// Get) answers Gets from a client agent on rxe0 over QP1 with GRH
// addressing; every reply carries its request's TID. 1,000 round trips.
func TestVMRoundTrips(t *testing.T) {
	vmtest.Require(t)
	cli, srv := vmOpen(t, vmtest.Dev0), vmOpen(t, vmtest.Dev1)
	ca, err := cli.RegisterOUI(vmClass, 0, vmOUI, MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := srv.RegisterOUI(vmClass, 0, vmOUI, MethodMaskOf(vmGet))
	if err != nil {
		t.Fatal(err)
	}
	if cli.HeaderSize() != 64 || srv.HeaderSize() != 64 {
		t.Fatalf("header sizes %d %d", cli.HeaderSize(), srv.HeaderSize())
	}
	gid1, gid0 := vmGID(t, vmtest.Dev1), vmGID(t, vmtest.Dev0)

	done := make(chan error, 1)
	go func() {
		in := NewPacket()
		for i := 0; i < 1000; i++ {
			id, err := srv.Recv(in, 5*time.Second)
			if err != nil {
				done <- fmt.Errorf("replier, request %d: %w", i, err)
				return
			}
			a := in.Addr()
			if id != sa || in.Status() != 0 || !a.GRHPresent || a.GRH.GID != gid0 || a.QPN != 1 {
				done <- fmt.Errorf("replier, request %d: agent %d, %v", i, id, in)
				return
			}
			in.MAD()[3] = vmGetRsp
			copy(in.MAD()[40:], "pong")
			if err := srv.Send(sa, in, 0, 0); err != nil {
				done <- fmt.Errorf("replier, response %d: %w", i, err)
				return
			}
		}
		done <- nil
	}()

	req, resp := NewPacket(), NewPacket()
	start := time.Now()
	for i := 0; i < 1000; i++ {
		vmRequest(t, req, gid1, uint32(i+1))
		if err := cli.Send(ca, req, time.Second, 3); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		id, err := cli.Recv(resp, 5*time.Second)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if id != ca || resp.TimedOut() || resp.MAD()[3] != vmGetRsp || string(resp.MAD()[40:44]) != "pong" {
			t.Fatalf("response %d: agent %d, %v", i, id, resp)
		}
		if tid := binary.BigEndian.Uint64(resp.MAD()[8:16]); tid&0xffffffff != uint64(i+1) || tid>>32 == 0 {
			t.Fatalf("response %d carries TID %#x", i, tid)
		}
	}
	el := time.Since(start)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("1000 round trips rxe0 → rxe1 → rxe0 in %v (%v each), kernel %s", el, el/1000, vmtest.Kernel())
}

// TestVMTimeoutRetries: a Get to an agent that never answers comes back
// with status ETIMEDOUT after exactly `retries` resends, which the silent
// agent counts.
func TestVMTimeoutRetries(t *testing.T) {
	vmtest.Require(t)
	cli, srv := vmOpen(t, vmtest.Dev0), vmOpen(t, vmtest.Dev1)
	ca, err := cli.RegisterOUI(vmClass, 0, vmOUI, MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := srv.RegisterOUI(vmClass, 0, vmOUI, MethodMaskOf(vmGet)) // never answers
	if err != nil {
		t.Fatal(err)
	}
	const retries = 3
	const timeout = 100 * time.Millisecond
	req := NewPacket()
	vmRequest(t, req, vmGID(t, vmtest.Dev1), 0x77)
	start := time.Now()
	if err := cli.Send(ca, req, timeout, retries); err != nil {
		t.Fatal(err)
	}
	back := NewPacket()
	id, err := cli.Recv(back, 10*time.Second)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if id != ca || !back.TimedOut() || back.Len() != 24 || binary.BigEndian.Uint64(back.MAD()[8:16])&0xffffffff != 0x77 {
		t.Fatalf("agent %d: %v", id, back)
	}
	// The MAD layer's timer runs in jiffies (mad.c arms the send's
	// timeout with msecs_to_jiffies and a delayed work), so each try may
	// end up to a tick early: 4 ms at HZ=250 (Debian's amd64 and arm64
	// kernels), 10 ms at HZ=100, the coarsest Linux offers. One such tick
	// per try is allowed; arm64 6.1 measured 387 ms for 4 × 100 ms.
	const tick = 10 * time.Millisecond
	if early := (retries+1)*timeout - (retries+1)*tick; el < early {
		t.Errorf("timed out after %v, before %d × (%v less one timer tick of %v)", el, retries+1, timeout, tick)
	}
	seen := 0
	in := NewPacket()
	for {
		id, err := srv.Recv(in, 500*time.Millisecond)
		if errors.Is(err, ErrTimeout) {
			break
		}
		if err != nil || id != sa {
			t.Fatal(id, err)
		}
		seen++
	}
	if seen != retries+1 {
		t.Fatalf("the silent agent saw %d copies, want 1 + %d retries", seen, retries)
	}
	t.Logf("status %v after %v; the silent agent saw the request %d times", back.Status(), el, seen)
}

// TestVMNoSMIOnRoCE: an SMI (QP0) agent on a RoCE port fails clearly,
// both by the package's own check and by the kernel's EPROTONOSUPPORT.
func TestVMNoSMIOnRoCE(t *testing.T) {
	vmtest.Require(t)
	p := vmOpen(t, vmtest.Dev0)
	_, err := p.Register(0x81, 1, MethodMask{})
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "not supported on RoCE (no SMI)") {
		t.Fatalf("%v", err)
	}
	t.Log(err)
	p.linkLayer = rdma.LinkLayerUnspecified // skip the local check: ask the kernel
	_, err = p.Register(0x01, 1, MethodMask{})
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, syscall.EPROTONOSUPPORT) {
		t.Fatalf("kernel: %v", err)
	}
	t.Log(err)
}

// TestVMRecvTimeoutAndContext: the receive modes on the real descriptor.
func TestVMRecvModes(t *testing.T) {
	vmtest.Require(t)
	p := vmOpen(t, vmtest.Dev0)
	if _, err := p.RegisterOUI(vmClass, 0, vmOUI, MethodMaskOf(vmGet)); err != nil {
		t.Fatal(err)
	}
	pkt := NewPacket()
	if _, err := p.Recv(pkt, 0); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("timeout 0: %v", err)
	}
	start := time.Now()
	if _, err := p.Recv(pkt, 50*time.Millisecond); !errors.Is(err, ErrTimeout) || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("timeout 50ms: %v after %v", err, time.Since(start))
	}
	if _, err := p.Recv(pkt, 0); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("timeout 0 after a timeout: %v", err)
	}
	if err := p.Poll(0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("poll 0: %v", err)
	}
	if err := p.Poll(20 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("poll 20ms: %v", err)
	}
	// Poll(0) is poll(2) with a zero timeout: no wait at all.
	start = time.Now()
	for range 200 {
		if err := p.Poll(0); !errors.Is(err, ErrTimeout) {
			t.Fatalf("poll 0: %v", err)
		}
	}
	t.Logf("200 × Poll(0) on an empty queue: %v", time.Since(start))
	if el := time.Since(start); el > 150*time.Millisecond {
		t.Fatalf("200 × Poll(0) took %v: Poll(0) must not wait", el)
	}
	// Cancelling the context wakes a blocked RecvContext (the read
	// deadline moves into the past), and the next receive is unharmed.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(30 * time.Millisecond)
		cancel()
	}()
	if _, err := p.RecvContext(ctx, pkt); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled RecvContext: %v", err)
	}
	start = time.Now()
	if _, err := p.Recv(pkt, 30*time.Millisecond); !errors.Is(err, ErrTimeout) || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("Recv after a cancelled RecvContext: %v after %v", err, time.Since(start))
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Recv(pkt, -1)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	p.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Recv")
	}
}

// TestVMSteadyStateAllocs: on the real device a round trip (two Sends,
// two Recvs with a timeout) allocates nothing once warm; nor do an
// unsolicited Send with a non-blocking Recv, a blocking Recv, Poll and a
// RecvContext whose context is never done.
func TestVMSteadyStateAllocs(t *testing.T) {
	vmtest.Require(t)
	r := vmRig(t)
	r.roundTrip(t)
	a := testing.AllocsPerRun(100, func() { r.roundTrip(t) })
	t.Logf("%v allocations per round trip (two Sends, two Recvs)", a)
	if a != 0 {
		t.Errorf("%v allocations per round trip, want 0", a)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		recv func() error
	}{
		{"Recv(0)", func() error { _, err := r.srv.Recv(r.in, 0); return err }},
		{"Recv(-1)", func() error { _, err := r.srv.Recv(r.in, -1); return err }},
		{"Poll(0)+Recv(0)", func() error {
			if err := r.srv.Poll(0); err != nil {
				return err
			}
			_, err := r.srv.Recv(r.in, 0)
			return err
		}},
		{"Recv(1s)", func() error { _, err := r.srv.Recv(r.in, time.Second); return err }},
		{"RecvContext(Background)", func() error { _, err := r.srv.RecvContext(ctx, r.in); return err }},
	} {
		a := testing.AllocsPerRun(100, func() {
			r.nextTID() // a TID still on the kernel's send list is refused (EINVAL)
			if err := r.cli.Send(r.ca, r.req, 0, 0); err != nil {
				t.Fatal(err)
			}
			// rxe delivers asynchronously: wait for the MAD first (with
			// poll(2) and a zero timeout, which allocates nothing), so
			// that Recv(0) and Poll(0) find it.
			vmAwait(t, r.srv)
			if err := c.recv(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		})
		t.Logf("unsolicited Send + %s: %v allocations", c.name, a)
		if a != 0 {
			t.Errorf("unsolicited Send + %s: %v allocations, want 0", c.name, a)
		}
	}
	// Poll with a timeout waits in internal/sys's FD.WaitReadable, whose
	// poller callback is made once per descriptor: nothing is allocated.
	const waitReadableAllocs = 0
	a = testing.AllocsPerRun(100, func() {
		r.nextTID() // a TID still on the kernel's send list is refused (EINVAL)
		if err := r.cli.Send(r.ca, r.req, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := r.srv.Poll(time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := r.srv.Recv(r.in, 0); err != nil {
			t.Fatal(err)
		}
	})
	if a > waitReadableAllocs {
		t.Errorf("unsolicited Send + Poll(1s) + Recv(0): %v allocations, want %d", a, waitReadableAllocs)
	}
}

// nextTID gives the rig's request a fresh TID.
func (r *rig) nextTID() {
	r.n++
	binary.BigEndian.PutUint32(r.req.MAD()[12:16], r.n)
}

// vmAwait spins until a MAD is queued on p.
func vmAwait(t testing.TB, p *Port) {
	for start := time.Now(); ; {
		ok, err := p.fd.Readable()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("no MAD arrived in 5 s")
		}
		runtime.Gosched()
	}
}

func vmRig(tb testing.TB) *rig { return vmRigClass(tb, vmClass) }

// vmRigClass is a client on rxe0 and a replier for Get on rxe1, agents of
// the vendor class class (0x30–0x4f), and a request between them.
func vmRigClass(tb testing.TB, class MgmtClass) *rig {
	cli, srv := vmOpen(tb, vmtest.Dev0), vmOpen(tb, vmtest.Dev1)
	r := &rig{cli: cli, srv: srv, req: NewPacket(), in: NewPacket()}
	var err error
	if r.ca, err = cli.RegisterOUI(class, 0, vmOUI, MethodMask{}); err != nil {
		tb.Fatal(err)
	}
	if r.sa, err = srv.RegisterOUI(class, 0, vmOUI, MethodMaskOf(vmGet)); err != nil {
		tb.Fatal(err)
	}
	vmRequest(tb, r.req, vmGID(tb, vmtest.Dev1), 0)
	r.req.MAD()[1] = byte(class)
	return r
}

// BenchmarkVMRoundTrip: request/response between rxe0 and rxe1 on the
// real kernel (two Sends and two Recvs per operation).
func BenchmarkVMRoundTrip(b *testing.B) {
	vmtest.Require(b)
	r := vmRig(b)
	r.roundTrip(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.roundTrip(b)
	}
}

// TestVMPermission: as an unprivileged user, opening a port fails with an
// error that matches os.ErrPermission and says how to grant access. The
// test re-runs itself as uid 1000 when it runs as root.
func TestVMPermission(t *testing.T) {
	vmtest.Require(t)
	if os.Getuid() == 0 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestVMPermission$", "-test.v")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
		out, err := cmd.CombinedOutput()
		t.Logf("as uid 1000:\n%s", out)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	_, err := OpenPort(vmtest.Dev0, 1)
	if !errors.Is(err, os.ErrPermission) || !errors.Is(err, ErrOpenFailed) || !strings.Contains(err.Error(), "udev") {
		t.Fatalf("unprivileged open: %v", err)
	}
	t.Logf("uid %d: %v", os.Getuid(), err)
}
