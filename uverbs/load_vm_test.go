//go:build integration

package uverbs

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/integration/vmtest"
)

// loadMsgs is how many messages each direction of TestVMDataPathLoad
// sends; VMRUN_LOAD_MSGS overrides it.
const loadMsgs = 3000

const (
	loadSlots = 32   // receive and send buffers per side, and the queues' depth
	loadSlot  = 4096 // bytes per buffer
)

// loadEnd is one side of the load test: separate send and receive CQs, so
// that the goroutine that posts sends and reaps their completions and the
// one that reaps receives and posts them again run at the same time on
// the same QP.
type loadEnd struct {
	c          *Context
	scq, rcq   *CQ
	qp         *QP
	mr         *MR
	reposted   atomic.Int64 // receives posted in all, by the receiver
	received   atomic.Int64
	sendErr    error
	recvErr    error
	sent, reap int64
}

// TestVMDataPathLoad is the data path under load, both directions at once:
// on each side one goroutine keeps up to loadSlots sends in flight (two
// SGEs each, sizes from 1 to 4096 bytes, every message's bytes a function
// of its direction and number) and reaps their completions, while another
// reaps receives, checks every byte, the length and the order, and posts
// each buffer again. Four rings per side move at once: the send queue and
// receive queue we produce into and the kernel consumes, and the two CQs
// the kernel produces into and we consume, so every acquire and release of
// ring.go runs against the kernel's rxe concurrently. make
// integration-arm64 runs it on the arm64 guest (ring.go, "arm64").
func TestVMDataPathLoad(t *testing.T) {
	vmtest.Require(t)
	n := int64(vmtest.Count("VMRUN_LOAD_MSGS", loadMsgs))
	var e [2]*loadEnd
	var gids [2]rdma.GID
	for i, dev := range []string{vmtest.Dev0, vmtest.Dev1} {
		c := vmOpen(t, dev)
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		scq, err := c.CreateCQ(CQAttr{CQE: 2 * loadSlots})
		if err != nil {
			t.Fatal(err)
		}
		rcq, err := c.CreateCQ(CQAttr{CQE: 2 * loadSlots})
		if err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: scq, RecvCQ: rcq,
			Cap: QPCap{MaxSendWR: loadSlots, MaxRecvWR: loadSlots, MaxSendSGE: 2, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		// Receive buffers first, then send buffers.
		mr, err := pd.AllocMR(2*loadSlots*loadSlot, AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		gids[i] = portGID(t, c).GID
		e[i] = &loadEnd{c: c, scq: scq, rcq: rcq, qp: qp, mr: mr}
	}
	connectRC(t, e[0].qp, e[1].qp, gids[0], gids[1])
	for _, x := range e {
		wrs := make([]RecvWR, loadSlots)
		for s := range wrs {
			wrs[s] = RecvWR{ID: uint64(s), SGL: []SGE{sge(t, x.mr, s*loadSlot, loadSlot)}}
		}
		if k, err := x.qp.PostRecv(wrs); err != nil || k != loadSlots {
			t.Fatalf("post %d receives: %d, %v", loadSlots, k, err)
		}
		x.reposted.Store(loadSlots)
	}

	deadline := time.Now().Add(4 * time.Minute)
	start := time.Now()
	var wg sync.WaitGroup
	for dir := 0; dir < 2; dir++ {
		src, dst := e[dir], e[1-dir]
		wg.Add(2)
		go func() { defer wg.Done(); src.sendErr = loadSend(src, dst, byte(dir), n, deadline) }()
		go func() { defer wg.Done(); dst.recvErr = loadRecv(dst, byte(dir), n, deadline) }()
	}
	wg.Wait()
	el := time.Since(start)
	for dir, x := range e {
		if x.sendErr != nil {
			t.Errorf("direction %d, sender: %v", dir, x.sendErr)
		}
		if x.recvErr != nil {
			t.Errorf("direction %d, receiver: %v", 1-dir, x.recvErr)
		}
	}
	if t.Failed() {
		return
	}
	var bytes int64
	for i := int64(0); i < n; i++ {
		bytes += int64(loadSize(i))
	}
	t.Logf("%s (kernel %s): %d messages each way, %d bytes each way, every byte checked, in %v (%.0f messages/s both ways)",
		runtime.GOARCH, vmtest.Kernel(), n, bytes, el.Round(time.Millisecond), float64(2*n)/el.Seconds())
}

// loadSize is message i's length: 1 to 4096 bytes, all sizes visited.
func loadSize(i int64) int { return int(i*733%loadSlot) + 1 }

// loadByte is byte k of message i in direction dir; the first 8 bytes of a
// message of 8 or more bytes are its number.
func loadByte(dir byte, i int64, k int) byte { return byte(int64(k)*31+i*7) ^ dir<<7 }

func loadFill(b []byte, dir byte, i int64) {
	for k := range b {
		b[k] = loadByte(dir, i, k)
	}
	if len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, uint64(i))
	}
}

func loadCheck(b []byte, dir byte, i int64) error {
	if len(b) >= 8 {
		if got := int64(binary.LittleEndian.Uint64(b)); got != i {
			return fmt.Errorf("message %d carries number %d", i, got)
		}
	}
	for k := 8; k < len(b); k++ {
		if b[k] != loadByte(dir, i, k) {
			return fmt.Errorf("message %d (%d bytes): byte %d is %#x, want %#x", i, len(b), k, b[k], loadByte(dir, i, k))
		}
	}
	if len(b) < 8 {
		for k := range b {
			if b[k] != loadByte(dir, i, k) {
				return fmt.Errorf("message %d (%d bytes): byte %d is %#x, want %#x", i, len(b), k, b[k], loadByte(dir, i, k))
			}
		}
	}
	return nil
}

// loadSend sends n messages from x to peer, at most loadSlots in flight and
// never more than peer has receives posted for, and reaps every completion.
func loadSend(x, peer *loadEnd, dir byte, n int64, deadline time.Time) error {
	buf := x.mr.Buf()
	var wc [16]WC
	for x.reap < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("sent %d, %d completed, when the time ran out", x.sent, x.reap)
		}
		posted := false
		for x.sent < n && x.sent-x.reap < loadSlots && x.sent < peer.reposted.Load() {
			i := x.sent
			slot := int(i % loadSlots)
			off := (loadSlots + slot) * loadSlot
			size := loadSize(i)
			loadFill(buf[off:off+size], dir, i)
			// Two SGEs where the message has two bytes or more.
			sgl := []SGE{sge0(x.mr, off, size)}
			if size > 1 {
				h := size / 2
				sgl = []SGE{sge0(x.mr, off, h), sge0(x.mr, off+h, size-h)}
			}
			if k, err := x.qp.PostSend([]SendWR{{ID: uint64(i), Opcode: WRSend, Flags: SendSignaled, SGL: sgl}}); err != nil || k != 1 {
				return fmt.Errorf("post send %d: %d, %v", i, k, err)
			}
			x.sent++
			posted = true
		}
		k, err := x.scq.Poll(wc[:])
		if err != nil {
			return err
		}
		for _, w := range wc[:k] {
			if w.Status != WCSuccess || w.Opcode != WCSend || int64(w.ID) != x.reap {
				return fmt.Errorf("send completion %d: %+v (%v)", x.reap, w, w.Status)
			}
			x.reap++
		}
		if k == 0 && !posted {
			time.Sleep(20 * time.Microsecond)
		}
	}
	return nil
}

// loadRecv reaps n receives on x, checks each message and posts its
// buffer again.
func loadRecv(x *loadEnd, dir byte, n int64, deadline time.Time) error {
	buf := x.mr.Buf()
	var wc [16]WC
	for x.received.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d received when the time ran out", x.received.Load())
		}
		k, err := x.rcq.Poll(wc[:])
		if err != nil {
			return err
		}
		for _, w := range wc[:k] {
			i := x.received.Load()
			slot := int(i % loadSlots)
			if w.Status != WCSuccess || w.Opcode != WCRecv || w.ID != uint64(slot) || w.QPNum != x.qp.Num() {
				return fmt.Errorf("receive completion %d: %+v (%v)", i, w, w.Status)
			}
			if int(w.ByteLen) != loadSize(i) {
				return fmt.Errorf("message %d: %d bytes, want %d", i, w.ByteLen, loadSize(i))
			}
			off := slot * loadSlot
			if err := loadCheck(buf[off:off+int(w.ByteLen)], dir, i); err != nil {
				return err
			}
			// Spoil the buffer, so that a message that did not land
			// cannot pass for the next one in this slot.
			for b := off; b < off+int(w.ByteLen); b++ {
				buf[b] = ^buf[b]
			}
			x.received.Add(1)
			if r, err := x.qp.PostRecv([]RecvWR{{ID: uint64(slot), SGL: []SGE{sge0(x.mr, off, loadSlot)}}}); err != nil || r != 1 {
				return fmt.Errorf("post receive again after %d: %d, %v", i, r, err)
			}
			x.reposted.Add(1)
		}
		if k == 0 {
			time.Sleep(20 * time.Microsecond)
		}
	}
	return nil
}

// sge0 is sge without a testing.T, for the goroutines.
func sge0(mr *MR, off, n int) SGE {
	s, _ := mr.SGE(off, n)
	return s
}
