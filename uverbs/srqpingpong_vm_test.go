//go:build integration

package uverbs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/integration/vmtest"
)

// srqPP is a Go peer of rdma-core's ibv_srq_pingpong (libibverbs/examples/
// srq_pingpong.c), written for the test: num_qp RC QPs sharing one SRQ
// and one CQ, the addresses exchanged over TCP as the C tool does (a
// 52-byte "%04x:%06x:%06x:GID" message for each of MAX_QP QPs each way,
// zeros past num_qp, then "done" from the client), and its loop: each QP sends once its last send and a
// receive have completed, the SRQ refilled when no more than num_qp
// receives are left.
type srqPP struct {
	c       *Context
	cq      *CQ
	srq     *SRQ
	mr      *MR
	qps     []*QP
	my      []srqPPDest
	rxSGE   SGE
	size    int
	rxDepth int
}

type srqPPDest struct {
	lid, qpn, psn uint32
	gid           rdma.GID
}

const (
	srqPPRecv  = 1   // PINGPONG_RECV_WRID
	srqPPSend  = 2   // PINGPONG_SEND_WRID
	srqPPMaxQP = 256 // MAX_QP: the exchange always carries this many
)

func (d srqPPDest) wire() []byte {
	return append([]byte(fmt.Sprintf("%04x:%06x:%06x:%s", d.lid, d.qpn, d.psn, hex.EncodeToString(d.gid[:]))), 0)
}

func parseSRQPPDest(b []byte) (srqPPDest, error) {
	var d srqPPDest
	f := strings.SplitN(strings.TrimRight(string(b), "\x00"), ":", 4)
	if len(f) != 4 {
		return d, fmt.Errorf("bad address %q", b)
	}
	for i, p := range []*uint32{&d.lid, &d.qpn, &d.psn} {
		v, err := strconv.ParseUint(f[i], 16, 32)
		if err != nil {
			return d, fmt.Errorf("bad address %q", b)
		}
		*p = uint32(v)
	}
	if _, err := hex.Decode(d.gid[:], []byte(f[3])); err != nil {
		return d, fmt.Errorf("bad GID in %q", b)
	}
	return d, nil
}

func newSRQPP(t *testing.T, dev string, numQP, rxDepth, size int) *srqPP {
	t.Helper()
	c := vmOpen(t, dev)
	p := &srqPP{c: c, size: size, rxDepth: rxDepth}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	if p.mr, err = pd.AllocMR(size, AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	p.rxSGE, _ = p.mr.SGE(0, size)
	if p.cq, err = c.CreateCQ(CQAttr{CQE: rxDepth + numQP}); err != nil {
		t.Fatal(err)
	}
	if p.srq, err = pd.CreateSRQ(SRQAttr{MaxWR: uint32(rxDepth), MaxSGE: 1}); err != nil {
		t.Fatal(err)
	}
	g := portGID(t, c)
	for i := 0; i < numQP; i++ {
		qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: p.cq, RecvCQ: p.cq, SRQ: p.srq,
			Cap: QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		a := QPAttr{State: QPStateInit, Port: 1}
		if err := qp.Modify(&a, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
			t.Fatal(err)
		}
		p.qps = append(p.qps, qp)
		p.my = append(p.my, srqPPDest{qpn: qp.Num(), psn: rand.Uint32() & 0xffffff, gid: g.GID})
	}
	if n := p.postRecv(t, rxDepth); n != rxDepth {
		t.Fatalf("posted %d of %d receives", n, rxDepth)
	}
	return p
}

// postRecv posts n receives of the whole buffer to the SRQ
// (pp_post_recv) and returns how many it posted.
func (p *srqPP) postRecv(t *testing.T, n int) int {
	t.Helper()
	wrs := make([]RecvWR, n)
	for i := range wrs {
		wrs[i] = RecvWR{ID: srqPPRecv, SGL: []SGE{p.rxSGE}}
	}
	done, err := p.srq.PostRecv(wrs)
	if err != nil {
		t.Logf("SRQ PostRecv: %d of %d: %v", done, n, err)
	}
	return done
}

// connect is pp_connect_ctx: RTR and RTS against the remote QPs.
func (p *srqPP) connect(t *testing.T, rem []srqPPDest) {
	t.Helper()
	for i, qp := range p.qps {
		a := QPAttr{State: QPStateRTR, PathMTU: MTU1024, DestQPNum: rem[i].qpn, RQPSN: rem[i].psn, MaxDestRdAtomic: 1, MinRNRTimer: 12,
			AH: AHAttr{DLID: uint16(rem[i].lid), Port: 1}}
		if binaryIID(rem[0].gid) != 0 {
			a.AH.IsGlobal = true
			a.AH.GRH = GlobalRoute{DGID: rem[0].gid, HopLimit: 1}
		}
		if err := qp.Modify(&a, QPAttrState|QPAttrAV|QPAttrPathMTU|QPAttrDestQPN|QPAttrRQPSN|QPAttrMaxDestRdAtomic|QPAttrMinRNRTimer); err != nil {
			t.Fatalf("QP %d to RTR: %v", i, err)
		}
		a = QPAttr{State: QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: p.my[i].psn, MaxRdAtomic: 1}
		if err := qp.Modify(&a, QPAttrState|QPAttrTimeout|QPAttrRetryCnt|QPAttrRNRRetry|QPAttrSQPSN|QPAttrMaxQPRdAtomic); err != nil {
			t.Fatalf("QP %d to RTS: %v", i, err)
		}
	}
}

// binaryIID is the GID's interface id (its last 8 bytes), which
// srq_pingpong tests to choose a global route.
func binaryIID(g rdma.GID) uint64 {
	var v uint64
	for _, b := range g[8:] {
		v = v<<8 | uint64(b)
	}
	return v
}

func (p *srqPP) readDests(t *testing.T, r io.Reader) []srqPPDest {
	t.Helper()
	rem := make([]srqPPDest, srqPPMaxQP)
	msg := make([]byte, 52)
	for i := range rem {
		if _, err := io.ReadFull(r, msg); err != nil {
			t.Fatalf("reading remote address %d: %v", i, err)
		}
		d, err := parseSRQPPDest(msg)
		if err != nil {
			t.Fatal(err)
		}
		rem[i] = d
	}
	return rem
}

func (p *srqPP) writeDests(t *testing.T, w io.Writer) {
	t.Helper()
	for i := 0; i < srqPPMaxQP; i++ {
		var d srqPPDest
		if i < len(p.my) {
			d = p.my[i]
		}
		if _, err := w.Write(d.wire()); err != nil {
			t.Fatal(err)
		}
	}
}

// run is srq_pingpong's main loop; it returns the messages received.
func (p *srqPP) run(t *testing.T, client bool, iters int) int {
	t.Helper()
	send := func(i int) {
		s, _ := p.mr.SGE(0, p.size)
		if _, err := p.qps[i].PostSend([]SendWR{{ID: srqPPSend, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{s}}}); err != nil {
			t.Fatalf("post send on QP %d: %v", i, err)
		}
	}
	pending := make([]int, len(p.qps))
	for i := range p.qps {
		pending[i] = srqPPRecv
		if client {
			send(i)
			pending[i] |= srqPPSend
		}
	}
	routs := p.rxDepth
	wc := make([]WC, len(p.qps)+p.rxDepth)
	rcnt, scnt := 0, 0
	deadline := time.Now().Add(4 * time.Minute)
	for rcnt < iters || scnt < iters {
		if time.Now().After(deadline) {
			t.Fatalf("after 4 minutes: %d received, %d sent", rcnt, scnt)
		}
		n, err := p.cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wc[:n] {
			if w.Status != WCSuccess {
				t.Fatalf("completion %+v: %v", w, w.Status)
			}
			qi := -1
			for i, qp := range p.qps {
				if qp.Num() == w.QPNum {
					qi = i
				}
			}
			if qi < 0 {
				t.Fatalf("a completion for QP %#x, not one of ours", w.QPNum)
			}
			switch w.ID {
			case srqPPSend:
				scnt++
			case srqPPRecv:
				if w.Opcode != WCRecv || w.ByteLen != uint32(p.size) {
					t.Fatalf("receive %+v", w)
				}
				if routs--; routs <= len(p.qps) {
					if routs += p.postRecv(t, p.rxDepth-routs); routs < p.rxDepth {
						t.Fatalf("could not refill the SRQ (%d)", routs)
					}
				}
				rcnt++
			default:
				t.Fatalf("completion for wr_id %d", w.ID)
			}
			pending[qi] &^= int(w.ID)
			if scnt < iters && pending[qi] == 0 {
				send(qi)
				pending[qi] = srqPPRecv | srqPPSend
			}
		}
	}
	return rcnt
}

func waitTCPListen(t *testing.T, port int, within time.Duration) {
	t.Helper()
	hexPort := fmt.Sprintf(":%04X ", port)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, _ := os.ReadFile(f)
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				fl := strings.Fields(sc.Text())
				if len(fl) > 3 && strings.HasSuffix(fl[1]+" ", hexPort) && fl[3] == "0A" {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on port %d after %v", port, within)
}

// TestVMSRQPingpong: interoperation with rdma-core's ibv_srq_pingpong, 4
// RC QPs sharing an SRQ on each side, 5,000 messages of 4 KiB each way:
// the Go peer as the server (its SRQ receiving from the C client's QPs)
// and as the client of the C server.
func TestVMSRQPingpong(t *testing.T) {
	vmtest.Require(t)
	if _, err := exec.LookPath("ibv_srq_pingpong"); err != nil {
		t.Skip("no ibv_srq_pingpong in the guest")
	}
	const numQP, rxDepth, size, iters = 4, 64, 4096, 5000
	cArgs := func(dev string, port int) []string {
		return []string{"-d", dev, "-g", "0", "-q", strconv.Itoa(numQP), "-r", strconv.Itoa(rxDepth),
			"-s", strconv.Itoa(size), "-n", strconv.Itoa(iters), "-p", strconv.Itoa(port)}
	}
	t.Run("GoServer", func(t *testing.T) {
		const port = 18711
		p := newSRQPP(t, vmtest.Dev1, numQP, rxDepth, size)
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, "ibv_srq_pingpong", append(cArgs(vmtest.Dev0, port), "127.0.0.1")...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		conn, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		rem := p.readDests(t, conn)
		p.connect(t, rem)
		p.writeDests(t, conn)
		done := make([]byte, 5)
		if _, err := io.ReadFull(conn, done); err != nil || string(done) != "done\x00" {
			t.Fatalf("reading done: %q, %v", done, err)
		}
		conn.Close()
		got := p.run(t, false, iters)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("C client: %v\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), " iters in ") {
			t.Errorf("C client:\n%s", out.String())
		}
		t.Logf("Go server on %s received %d messages through its SRQ; C client (kernel %s):\n%s", vmtest.Dev1, got, vmtest.Kernel(), out.String())
	})
	t.Run("GoClient", func(t *testing.T) {
		const port = 18712
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, "ibv_srq_pingpong", cArgs(vmtest.Dev0, port)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitTCPListen(t, port, time.Minute)
		p := newSRQPP(t, vmtest.Dev1, numQP, rxDepth, size)
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		p.writeDests(t, conn)
		rem := p.readDests(t, conn)
		p.connect(t, rem)
		if _, err := conn.Write([]byte("done\x00")); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		got := p.run(t, true, iters)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("C server: %v\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), " iters in ") {
			t.Errorf("C server:\n%s", out.String())
		}
		t.Logf("Go client on %s received %d messages through its SRQ; C server (kernel %s):\n%s", vmtest.Dev1, got, vmtest.Kernel(), out.String())
	})
}
