//go:build integration

package diags

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/umad"
)

// TestVMUmadServeUnderLoss is the fault-injection test of the MAD path:
// netem drops 30 % of the packets leaving veth0 (requests, rxe0 → rxe1)
// and 30 % of those leaving veth1 (answers), while 1,000 vendor-class Gets
// go from an agent on rxe0 to `purerdma umad serve` on rxe1, 32 at a time,
// each with a 500 ms timeout and 8 retries; then 1,000 more with the loss
// and a delay of 20 ± 20 ms each way, 30 ms tries and 24 retries, so that
// resends overlap their originals. What must hold: every request
// ends exactly once, answered or handed back by the kernel with status
// ETIMEDOUT (none lost, none twice, no unknown TID); the server is still
// running afterwards and answers a request with the loss removed, and
// exits cleanly on SIGINT. The kernel's retransmissions make the server
// answer some requests twice, and some of those answers are refused as
// duplicates while the first is still being sent; the server counts them
// as answered (issue 15).
//
// Per try a request survives with probability 0.7 × 0.7 = 0.49, so a
// transaction times out after 9 tries with probability 0.51⁹ ≈ 0.2 %:
// a few timeouts among the 1,000 are expected and are an outcome, not a
// failure. The time bound only catches a hang.
func TestVMUmadServeUnderLoss(t *testing.T) {
	vmtest.Require(t)
	const (
		transactions = 1000
		window       = 32
		tryTimeout   = 500 * time.Millisecond
		retries      = 8
		loss         = "30%"
		vendorClass  = 0x30
		oui          = 0x001405
	)
	bin, err := exec.LookPath("purerdma")
	if err != nil {
		t.Skip("the guest has no purerdma command (vmrun -cmds=false): " + err.Error())
	}
	gid1 := netip.MustParseAddr(vmtest.GID1)

	// Fixed neighbour entries: with 30 % loss, neighbour discovery for
	// the peer's GID could fail (three lost probes), and the kernel would
	// then refuse the sends (ETIMEDOUT from the address handle), which is
	// not what this test is about.
	gid0 := netip.MustParseAddr(vmtest.GID0)
	for _, n := range []struct{ addr, mac, dev string }{
		{gid1.String(), vmtest.MAC1, vmtest.Net0},
		{gid0.String(), vmtest.MAC0, vmtest.Net1},
	} {
		vmShell(t, "ip", "-6", "neigh", "replace", n.addr, "lladdr", n.mac, "dev", n.dev, "nud", "permanent")
	}

	// The server, as users run it.
	srv := exec.Command(bin, "umad", "serve", "-C", vmtest.Dev1, "-P", "1", "-q",
		"--class", fmt.Sprintf("%#x", vendorClass), "--data", "pong")
	var sout, serr bytes.Buffer
	srv.Stdout, srv.Stderr = &sout, &serr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		if srv.ProcessState == nil {
			srv.Process.Kill()
			<-exited
		}
	})

	cli, err := umad.OpenPort(vmtest.Dev0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	agent, err := cli.RegisterOUI(vendorClass, 0, oui, umad.MethodMask{})
	if err != nil {
		t.Fatal(err)
	}
	req, resp := umad.NewPacket(), umad.NewPacket()
	request := func(tid uint32, tryTimeout time.Duration, retries int) {
		t.Helper()
		if err := req.SetLen(umad.MADSize); err != nil {
			t.Fatal(err)
		}
		m := req.MAD()
		clear(m)
		m[0], m[1], m[2], m[3] = 1, vendorClass, 1, 0x01 // base version, class, class version, Get
		binary.BigEndian.PutUint64(m[8:16], uint64(tid))
		m[37], m[38], m[39] = oui>>16, oui>>8&0xff, oui&0xff
		copy(m[40:], "ping")
		if err := req.SetAddr(0, 1, 0, umad.QP1QKey); err != nil {
			t.Fatal(err)
		}
		if err := req.SetGRH(umad.GRH{GID: gid1.As16(), HopLimit: 64}); err != nil {
			t.Fatal(err)
		}
		if err := cli.Send(agent, req, tryTimeout, retries); err != nil {
			t.Fatalf("send of request %d: %v", tid, err)
		}
	}
	// recvOne receives one ending and returns its TID and whether it was
	// answered by the server. A Get no agent is registered for is answered
	// by the kernel with MAD status 0x000c (unsupported method/attribute),
	// which only the warm-up accepts (notYet). The 60 s bound is a hang
	// detector only.
	notYet := false
	recvOne := func() (uint32, bool) {
		t.Helper()
		id, err := cli.Recv(resp, 60*time.Second)
		if err != nil {
			t.Fatalf("receive: %v (server: %v %s)", err, srv.ProcessState, serr.String())
		}
		tid := uint32(binary.BigEndian.Uint64(resp.MAD()[8:16]))
		if id != agent {
			t.Fatalf("received for agent %d, want %d: %v", id, agent, resp)
		}
		if resp.TimedOut() {
			return tid, false
		}
		if notYet && binary.BigEndian.Uint16(resp.MAD()[4:6]) == 0x000c {
			return tid, false
		}
		if resp.Status() != 0 || resp.MAD()[3] != 0x81 || string(resp.MAD()[40:44]) != "pong" {
			t.Fatalf("request %d: unexpected answer %v", tid, resp)
		}
		return tid, true
	}

	// The server is up once one request (no loss yet) is answered; the
	// first ones may find no agent registered yet and be retried.
	start := time.Now()
	notYet = true
	for tid := uint32(1<<31 + 1); ; tid++ {
		request(tid, time.Second, 0)
		if _, ok := recvOne(); ok {
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("the server did not answer within a minute: %s %s", sout.String(), serr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	notYet = false
	totalAnswered := 0

	// Two phases, 1,000 transactions each. Loss alone, as the issue
	// asks; then loss with a delay that varies more than the try's
	// timeout, so that a request and its resend reach the server close
	// together and its second answer can meet the first still on the send
	// list: the kernel's EINVAL for a duplicate answer, which used to stop
	// the server.
	for pi, ph := range []struct {
		netem      []string
		tryTimeout time.Duration
		retries    int
	}{
		{[]string{"loss", loss}, tryTimeout, retries},
		{[]string{"loss", loss, "delay", "20ms", "20ms"}, 30 * time.Millisecond, 24},
	} {
		for _, dev := range []string{vmtest.Net0, vmtest.Net1} {
			vmShell(t, "/sbin/tc", append([]string{"qdisc", "replace", "dev", dev, "root", "netem"}, ph.netem...)...)
			t.Cleanup(func() { exec.Command("/sbin/tc", "qdisc", "del", "dev", dev, "root").Run() })
		}
		base := uint32(pi * 10000)
		ended := make(map[uint32]bool, transactions) // tid → answered
		answered, timedOut := 0, 0
		next, inFlight := uint32(1), 0
		start = time.Now()
		for len(ended) < transactions {
			for inFlight < window && next <= transactions {
				request(base+next, ph.tryTimeout, ph.retries)
				next++
				inFlight++
			}
			tid, ok := recvOne()
			if tid <= base || tid > base+transactions {
				t.Fatalf("an ending for TID %d, which was never sent in this phase", tid)
			}
			if _, dup := ended[tid]; dup {
				t.Fatalf("request %d ended twice", tid)
			}
			ended[tid] = ok
			inFlight--
			if ok {
				answered++
			} else {
				timedOut++
			}
		}
		el := time.Since(start)
		var drops []string
		for _, dev := range []string{vmtest.Net0, vmtest.Net1} {
			out, _ := exec.Command("/sbin/tc", "-s", "qdisc", "show", "dev", dev).CombinedOutput()
			m := regexp.MustCompile(`dropped (\d+)`).FindStringSubmatch(string(out))
			if m == nil || m[1] == "0" {
				t.Errorf("netem on %s dropped nothing: the loss was not applied\n%s", dev, out)
			} else {
				drops = append(drops, dev+" dropped "+m[1])
			}
		}
		t.Logf("%d transactions under netem %s each way (try %v, %d retries) in %v: %d answered, %d timed out with status ETIMEDOUT, 0 lost (%s)",
			transactions, strings.Join(ph.netem, " "), ph.tryTimeout, ph.retries, el.Round(time.Millisecond), answered, timedOut, strings.Join(drops, ", "))
		fmt.Fprintf(os.Stderr, "LOSS-PHASE kernel=%s netem=%q transactions=%d answered=%d timedout=%d lost=0\n",
			vmtest.Kernel(), strings.Join(ph.netem, " "), transactions, answered, timedOut)
		totalAnswered += answered

		// Nothing more may arrive: every request has ended once.
		if id, err := cli.Recv(resp, 2*time.Duration(ph.retries+1)*ph.tryTimeout); err == nil {
			t.Errorf("an ending after all %d had ended: agent %d, %v", transactions, id, resp)
		} else if !errors.Is(err, umad.ErrTimeout) {
			t.Errorf("receive after the run: %v", err)
		}
		for _, dev := range []string{vmtest.Net0, vmtest.Net1} {
			vmShell(t, "/sbin/tc", "qdisc", "del", "dev", dev, "root")
		}
	}

	// The server is alive: still running, and it answers without loss.
	select {
	case err := <-exited:
		t.Fatalf("the server exited during the run: %v\n%s\n%s", err, sout.String(), serr.String())
	default:
	}
	request(1<<31+0x7fff, time.Second, 3)
	if _, ok := recvOne(); !ok {
		t.Fatal("the server did not answer after the run")
	}
	if err := srv.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the server failed: %v\n%s\n%s", err, sout.String(), serr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop on SIGINT")
	}
	summary := regexp.MustCompile(`answered (\d+) requests(?: \((\d+) repeats already answered\))?`).FindStringSubmatch(sout.String())
	if summary == nil {
		t.Fatalf("no summary from the server:\n%s\n%s", sout.String(), serr.String())
	}
	served, _ := strconv.Atoi(summary[1])
	repeats, _ := strconv.Atoi(summary[2])
	if served < totalAnswered {
		t.Errorf("the server answered %d requests, fewer than the %d answers the client got", served, totalAnswered)
	}
	t.Logf("server: %s (kernel %s)", strings.TrimSpace(summary[0]), vmtest.Kernel())
	fmt.Fprintf(os.Stderr, "LOSS-RESULT kernel=%s served=%d repeats=%d\n", vmtest.Kernel(), served, repeats)
}

var vmShellMu sync.Mutex

// vmShell runs a command of the guest and fails the test when it fails.
func vmShell(t *testing.T, name string, args ...string) {
	t.Helper()
	vmShellMu.Lock()
	defer vmShellMu.Unlock()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
