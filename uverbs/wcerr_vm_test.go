//go:build integration

package uverbs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMMlx5ErrorCompletions: on mock0, the same mistakes made through
// rdma-core's libmlx5 (integration/wcerr, the C peer) and through this
// library's mlx5 provider give the same work completions, line for line:
// the status libmlx5 derives from each error CQE's syndrome
// (mlx5_handle_error_cqe) and the vendor syndrome it copies, for a bad
// lkey, a bad rkey, an RDMA write to memory without remote write access,
// a send longer than the receive (both ends), the flushes that follow, a
// good send for contrast; and the atomics: fetch-and-add and
// compare-and-swap (the completions, the value returned and the memory,
// big-endian as on a ConnectX), one to an MR without remote atomic access
// and one misaligned. The cases are described in wcerr.c.
func TestVMMlx5ErrorCompletions(t *testing.T) {
	vmtest.RequireMock(t)
	peer := filepath.Join(vmtest.Repo(), "integration", ".cache", "wcerr", "wcerr")
	if _, err := os.Stat(peer); err != nil {
		t.Fatalf("the C peer is not built (make -f mk/integration.mk integration-cpeers): %v", err)
	}
	out, err := exec.Command(peer, vmtest.MockDev).CombinedOutput()
	if err != nil {
		t.Fatalf("wcerr: %v\n%s", err, out)
	}
	want := string(out)
	got := goWCErr(t, vmtest.MockDev)
	if got != want {
		t.Errorf("work completions on %s (kernel %s):\nlibmlx5:\n%s\nGo:\n%s", vmtest.MockDev, vmtest.Kernel(), want, got)
	}
	t.Logf("work completions on %s (kernel %s), libmlx5 and Go alike:\n%s", vmtest.MockDev, vmtest.Kernel(), got)
}

// goWCErr makes wcerr.c's calls through the library and prints its lines.
func goWCErr(t *testing.T, dev string) string {
	c, err := Open(dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gid := portGID(t, c)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	var bufs [2][]byte
	var mr [2]*MR
	for i := range mr {
		if mr[i], err = pd.AllocMR(8192, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead); err != nil {
			t.Fatal(err)
		}
		defer mr[i].Close()
		bufs[i] = mr[i].Buf()
	}
	ro, err := pd.RegMR(bufs[1][:4096], AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	at, err := pd.RegMR(bufs[1][4096:], AccessLocalWrite|AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()

	pair := func() (mockSide, mockSide) { return mockRCPair(t, c, pd, gid) }
	unpair := func(a, b mockSide) { a.close(t); b.close(t) }
	send := func(s mockSide, id uint64, op WROpcode, n uint32, lkey uint32, raddr uint64, rkey uint32) {
		wr := []SendWR{{ID: id, Opcode: op, Flags: SendSignaled, SGL: []SGE{{Addr: addrOf(bufs[0]), Length: n, LKey: lkey}},
			RemoteAddr: raddr, RKey: rkey}}
		if _, err := s.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	recv := func(s mockSide, id uint64, n uint32) {
		if _, err := s.qp.PostRecv([]RecvWR{{ID: id, SGL: []SGE{{Addr: addrOf(bufs[1]), Length: n, LKey: mr[1].LKey()}}}}); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	report := func(cs, name string, s mockSide, n int) {
		deadline := time.Now().Add(10 * time.Second)
		wc := make([]WC, 1)
		for n > 0 {
			got, err := s.cq.Poll(wc)
			if err != nil {
				t.Fatal(err)
			}
			if got == 0 {
				if time.Now().After(deadline) {
					fmt.Fprintf(&b, "%s %s timeout\n", cs, name)
					return
				}
				continue
			}
			n--
			w := wc[0]
			if w.Status == WCSuccess {
				fmt.Fprintf(&b, "%s %s wr=%d status=0 vendor_err=0x%x opcode=%d byte_len=%d\n", cs, name, w.ID, w.VendorErr, w.Opcode, w.ByteLen)
			} else {
				fmt.Fprintf(&b, "%s %s wr=%d status=%d vendor_err=0x%x\n", cs, name, w.ID, w.Status, w.VendorErr)
			}
		}
	}
	buf1 := addrOf(bufs[1])

	a, bb := pair()
	recv(bb, 2, 4096)
	send(a, 1, WRSend, 64, mr[0].LKey()^0x80, 0, 0)
	report("bad-lkey", "A", a, 1)
	unpair(a, bb)

	a, bb = pair()
	send(a, 1, WRRDMAWrite, 64, mr[0].LKey(), buf1, mr[1].RKey()^0x80)
	report("bad-rkey", "A", a, 1)
	unpair(a, bb)

	a, bb = pair()
	send(a, 1, WRRDMAWrite, 64, mr[0].LKey(), buf1, ro.RKey())
	report("no-remote-wr", "A", a, 1)
	unpair(a, bb)

	a, bb = pair()
	recv(bb, 2, 64)
	send(a, 1, WRSend, 4096, mr[0].LKey(), 0, 0)
	report("short-recv", "A", a, 1)
	report("short-recv", "B", bb, 1)
	recv(bb, 4, 64)
	send(a, 3, WRSend, 64, mr[0].LKey(), 0, 0)
	report("flush", "A", a, 1)
	report("flush", "B", bb, 1)
	unpair(a, bb)

	a, bb = pair()
	recv(bb, 2, 4096)
	send(a, 1, WRSend, 4096, mr[0].LKey(), 0, 0)
	report("ok", "A", a, 1)
	report("ok", "B", bb, 1)
	unpair(a, bb)

	atomic := func(s mockSide, id uint64, op WROpcode, raddr uint64, rkey uint32, compareAdd, swap uint64) {
		wr := []SendWR{{ID: id, Opcode: op, Flags: SendSignaled, SGL: []SGE{{Addr: addrOf(bufs[0]), Length: 8, LKey: mr[0].LKey()}},
			RemoteAddr: raddr, RKey: rkey, CompareAdd: compareAdd, Swap: swap}}
		if _, err := s.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	be := binary.BigEndian
	a, bb = pair()
	atomic(a, 1, WRAtomicFetchAndAdd, buf1+4096, at.RKey(), 5, 0)
	report("atomic-fa", "A", a, 1)
	fmt.Fprintf(&b, "atomic-fa A old=%d now=%d\n", be.Uint64(bufs[0]), be.Uint64(bufs[1][4096:]))
	atomic(a, 2, WRAtomicCmpAndSwp, buf1+4096, at.RKey(), 5, 9)
	report("atomic-cs", "A", a, 1)
	fmt.Fprintf(&b, "atomic-cs A old=%d now=%d\n", be.Uint64(bufs[0]), be.Uint64(bufs[1][4096:]))
	unpair(a, bb)

	a, bb = pair()
	atomic(a, 1, WRAtomicFetchAndAdd, buf1, mr[1].RKey(), 1, 0)
	report("no-remote-atomic", "A", a, 1)
	unpair(a, bb)

	a, bb = pair()
	atomic(a, 1, WRAtomicFetchAndAdd, buf1+4100, at.RKey(), 1, 0)
	report("misaligned-atomic", "A", a, 1)
	unpair(a, bb)
	return b.String()
}

// mockSide is an RC QP of mock0 with a CQ of its own.
type mockSide struct {
	cq *CQ
	qp *QP
}

func (s mockSide) close(t *testing.T) {
	t.Helper()
	if err := s.qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.cq.Close(); err != nil {
		t.Fatal(err)
	}
}

// mockRCPair makes two RC QPs on c (port 1, GID gid) and connects them to
// each other, as wcerr.c's pair does.
func mockRCPair(t *testing.T, c *Context, pd *PD, gid GIDEntry) (mockSide, mockSide) {
	t.Helper()
	mk := func() mockSide {
		cq, err := c.CreateCQ(CQAttr{CQE: 16})
		if err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return mockSide{cq, qp}
	}
	toRTS := func(qp *QP, remote uint32) {
		a := QPAttr{State: QPStateInit, Port: 1, AccessFlags: AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic}
		if err := qp.Modify(&a, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
			t.Fatal(err)
		}
		a = QPAttr{State: QPStateRTR, PathMTU: MTU1024, DestQPNum: remote, RQPSN: 1, MaxDestRdAtomic: 1, MinRNRTimer: 12,
			AH: AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: gid.GID, HopLimit: 1}}}
		if err := qp.Modify(&a, QPAttrState|QPAttrAV|QPAttrPathMTU|QPAttrDestQPN|QPAttrRQPSN|
			QPAttrMaxDestRdAtomic|QPAttrMinRNRTimer); err != nil {
			t.Fatal(err)
		}
		a = QPAttr{State: QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 1, MaxRdAtomic: 1}
		if err := qp.Modify(&a, QPAttrState|QPAttrTimeout|QPAttrRetryCnt|QPAttrRNRRetry|QPAttrSQPSN|QPAttrMaxQPRdAtomic); err != nil {
			t.Fatal(err)
		}
	}
	a, b := mk(), mk()
	toRTS(a.qp, b.qp.Num())
	toRTS(b.qp, a.qp.Num())
	return a, b
}

// TestVMMlx5DataPathAllocs: on mock0, a receive, a send and the two
// polls that collect their completions allocate nothing (the mlx5
// provider's PostRecv, PostSend with its doorbell, and Poll).
func TestVMMlx5DataPathAllocs(t *testing.T) {
	vmtest.RequireMock(t)
	c, err := Open(vmtest.MockDev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gid := portGID(t, c)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	mr, err := pd.AllocMR(8192, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	a, b := mockRCPair(t, c, pd, gid)
	defer a.close(t)
	defer b.close(t)
	s, _ := mr.SGE(0, 256)
	r, _ := mr.SGE(4096, 256)
	send := []SendWR{{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{s}}}
	recv := []RecvWR{{ID: 2, SGL: []SGE{r}}}
	var wc [1]WC
	failed := false
	wait := func(cq *CQ) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := cq.Poll(wc[:])
			if err != nil || n == 1 {
				failed = failed || err != nil || wc[0].Status != WCSuccess
				return
			}
			if time.Now().After(deadline) {
				failed = true
				return
			}
		}
	}
	allocs := testing.AllocsPerRun(300, func() {
		if _, err := b.qp.PostRecv(recv); err != nil {
			failed = true
		}
		if _, err := a.qp.PostSend(send); err != nil {
			failed = true
		}
		wait(a.cq)
		wait(b.cq)
	})
	if failed {
		t.Fatal("a post or a completion failed")
	}
	if allocs != 0 {
		t.Errorf("%v allocations per receive, send and two polls on %s, want 0", allocs, vmtest.MockDev)
	}
	t.Logf("%s (kernel %s): %v allocations per receive, send and two polls", vmtest.MockDev, vmtest.Kernel(), allocs)
}

// TestVMMlx5UDOnMock: UD sends through the mlx5 provider on mock0 (an AH
// the kernel resolved the MAC of, a datagram segment with the AH's vector,
// the destination QP and the Q_Key): the receiver gets the 40 bytes of GRH
// and then the message, from the right source QP; a wrong Q_Key is dropped,
// as UD drops it, while the sender completes.
func TestVMMlx5UDOnMock(t *testing.T) {
	vmtest.RequireMock(t)
	const qkey, size = 0x11111111, 1024
	c, err := Open(vmtest.MockDev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gid := portGID(t, c)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	mr, err := pd.AllocMR(3*4096, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	mk := func() mockSide {
		cq, err := c.CreateCQ(CQAttr{CQE: 16})
		if err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq,
			Cap: QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []struct {
			a    QPAttr
			mask QPAttrMask
		}{
			{QPAttr{State: QPStateInit, Port: 1, QKey: qkey}, QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
			{QPAttr{State: QPStateRTR}, QPAttrState},
			{QPAttr{State: QPStateRTS, SQPSN: 1}, QPAttrState | QPAttrSQPSN},
		} {
			if err := qp.Modify(&m.a, m.mask); err != nil {
				t.Fatal(err)
			}
		}
		return mockSide{cq, qp}
	}
	a, b := mk(), mk()
	defer a.close(t)
	defer b.close(t)
	ah, err := pd.CreateAH(AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: gid.GID, HopLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer ah.Close()
	msg := mr.Buf()[:size]
	for i := range msg {
		msg[i] = byte(i*3 + 7)
	}
	in := mr.Buf()[4096:][:size+40]
	r, _ := mr.SGE(4096, size+40)
	s, _ := mr.SGE(0, size)
	wc := make([]WC, 1)
	poll := func(cq *CQ) (WC, bool) {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if n, err := cq.Poll(wc); err != nil {
				t.Fatal(err)
			} else if n == 1 {
				return wc[0], true
			}
		}
		return WC{}, false
	}
	for i, k := range []uint32{qkey, qkey + 1} {
		clear(in)
		if _, err := b.qp.PostRecv([]RecvWR{{ID: 100 + uint64(i), SGL: []SGE{r}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.qp.PostSend([]SendWR{{ID: uint64(i), Opcode: WRSendWithImm, Imm: 0x1234, Flags: SendSignaled,
			SGL: []SGE{s}, AH: ah, RemoteQPN: b.qp.Num(), RemoteQKey: k}}); err != nil {
			t.Fatal(err)
		}
		if w, ok := poll(a.cq); !ok || w.Status != WCSuccess || w.ID != uint64(i) {
			t.Fatalf("send %d (Q_Key %#x): %+v, %v", i, k, w, ok)
		}
		w, ok := poll(b.cq)
		if k != qkey {
			if ok {
				t.Fatalf("a send with the wrong Q_Key arrived: %+v", w)
			}
			continue
		}
		if !ok || w.Status != WCSuccess || w.Opcode != WCRecv || w.ByteLen != size+40 || w.SrcQP != a.qp.Num() ||
			w.Flags&WCWithGRH == 0 || w.Flags&WCWithImm == 0 || w.Imm != 0x1234 {
			t.Fatalf("receive: %+v, %v", w, ok)
		}
		if !bytes.Equal(in[40:], msg) {
			t.Fatalf("received\n% x\nsent\n% x", in[40:], msg)
		}
	}
	// The receive the dropped send left posted is flushed by Close.
	t.Logf("%s (kernel %s): UD send with immediate through the mlx5 provider arrived whole, GRH first; a wrong Q_Key was dropped", vmtest.MockDev, vmtest.Kernel())
}
