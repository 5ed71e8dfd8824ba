//go:build integration

package umad

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMRemovalRecvEIO: `rdma link delete` under a Recv that waits in the
// runtime poller. The kernel marks the file's agents dead, wakes the
// reader and from then on answers read with EIO and poll with EPOLLERR
// (user_mad.c: ib_umad_kill_port, ib_umad_read, ib_umad_poll). The Go
// poller reports EPOLLERR alone as "not pollable", which a Recv used to
// return on some boots; it must give EIO every time. Ten rounds of
// delete and add back, each checking the waiting Recv, a later blocking
// and non-blocking Recv, Poll and Send: all EIO, and Close succeeds.
func TestVMRemovalRecvEIO(t *testing.T) {
	vmtest.Require(t)
	t.Cleanup(func() { vmAddBack(t) })
	const rounds = 10
	for round := 1; round <= rounds; round++ {
		p, err := OpenPort(vmtest.Dev1, 1)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		agent, err := p.RegisterOUI(vmClass, 0, vmOUI, MethodMaskOf(vmGet))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		waiting := make(chan error, 1)
		go func() {
			_, err := p.Recv(NewPacket(), -1)
			waiting <- err
		}()
		time.Sleep(200 * time.Millisecond) // let the Recv park in the poller
		if out, err := exec.Command("rdma", "link", "delete", vmtest.Dev1).CombinedOutput(); err != nil {
			t.Fatalf("round %d: rdma link delete: %v %s", round, err, out)
		}
		var errs []error
		select {
		case err := <-waiting:
			errs = append(errs, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the waiting Recv did not end 30 s after the device was removed", round)
		}
		pkt := NewPacket()
		_, err = p.Recv(pkt, time.Second)
		errs = append(errs, err)
		_, err = p.Recv(pkt, 0)
		errs = append(errs, err)
		errs = append(errs, p.Poll(time.Second))
		vmRequest(t, pkt, vmGID0ForRemoval, 1)
		errs = append(errs, p.Send(agent, pkt, 0, 0))
		for i, err := range errs {
			what := []string{"the waiting Recv", "Recv(1s)", "Recv(0)", "Poll", "Send"}[i]
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("round %d: %s after removal: %v, want EIO", round, what, err)
			} else if round == 1 {
				t.Logf("%s after removal: %v", what, err)
			}
		}
		if err := p.Close(); err != nil {
			t.Errorf("round %d: Close after removal: %v", round, err)
		}
		vmAddBack(t)
	}
}

// vmGID0ForRemoval is any GID: a Send after removal fails before the
// address matters.
var vmGID0ForRemoval [16]byte

// vmAddBack adds rxe1 back on veth1 when it is gone, and waits until its
// port is ACTIVE with a umad device.
func vmAddBack(t *testing.T) {
	t.Helper()
	if _, err := netlink.RdmaLinkByName(vmtest.Dev1); err != nil {
		if err := netlink.RdmaLinkAdd(vmtest.Dev1, "rxe", vmtest.Net1); err != nil {
			t.Fatalf("add %s back: %v", vmtest.Dev1, err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, _ := vmtest.PortState(vmtest.Dev1)
		if s == "4: ACTIVE" {
			if node, err := defaultHost.UmadNode(vmtest.Dev1, 1); err == nil {
				if _, err := os.Stat(node); err == nil {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ACTIVE with a umad device 60 s after it was added back (state %q)", vmtest.Dev1, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
