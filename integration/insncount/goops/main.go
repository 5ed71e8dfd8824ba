// Command goops runs purerdma's operations between insnmark markers: the Go
// half of make bench's per-operation instruction table. cops.c is the C
// half; both make the same calls with the same arguments in the same
// order, and goops records each as sample 64 + cops's code:
//
//	1 open + close (uverbs.Open, Context.Close)   rxe0
//	2 QueryPort(1)                                3 QueryGIDTableInto(64)
//	4 AllocPDInto + PD.Close                      5 AllocPD + PD.Close
//	6 CreateCQInto(16) + CQ.Close                 7 CreateCQ + CQ.Close
//	8 CreateQPInto(RC, 16/16 WRs, 1 SGE) + Close  9 CreateQP + Close
//	10 QP.Modify RESET->INIT->RTR->RTS (three calls)
//	11 RegMR(4 KiB) + MR.Close
//	12 PostSend: a signaled 64-byte RDMA WRITE on a connected RC QP
//	13 Poll returning that completion (waited for outside the window)
//	14 counters Object.Read(2 values) of an object bound to a flow (mock0)
//	15 umad Port.Send of a vendor MAD, rxe0 to rxe1
//	16 umad Port.Recv of it (waited for outside the window)
//	17 PostSend on mock0 (the mlx5 provider): a signaled 64-byte RDMA WRITE
//	18 Poll on mock0 returning that completion
//
// Usage: goops N [CODE] (N samples of each operation, or of CODE's only;
// the calling thread pinned to CPU 1), or goops rate READERS N: READERS
// goroutines each reading 14's counters object N times, unpinned, with no
// windows (guest.sh counts the whole run on every CPU; cops rate is its
// twin).
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/umad"
	"github.com/purerdma/rdma/uverbs"
)

func must(what string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "goops: %s: %v\n", what, err)
		os.Exit(1)
	}
}

var rcCap = uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}

// toRTS makes the three calls of cops.c's to_rts.
func toRTS(qp *uverbs.QP, remote uint32, dgid uverbs.GIDEntry) error {
	a := uverbs.QPAttr{State: uverbs.QPStateInit, Port: 1,
		AccessFlags: uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead}
	if err := qp.Modify(&a, uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrAccessFlags); err != nil {
		return err
	}
	a = uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: uverbs.MTU1024, DestQPNum: remote, RQPSN: 1,
		MaxDestRdAtomic: 1, MinRNRTimer: 12,
		AH: uverbs.AHAttr{IsGlobal: true, Port: 1, GRH: uverbs.GlobalRoute{DGID: dgid.GID, HopLimit: 1}}}
	if err := qp.Modify(&a, uverbs.QPAttrState|uverbs.QPAttrAV|uverbs.QPAttrPathMTU|uverbs.QPAttrDestQPN|
		uverbs.QPAttrRQPSN|uverbs.QPAttrMaxDestRdAtomic|uverbs.QPAttrMinRNRTimer); err != nil {
		return err
	}
	a = uverbs.QPAttr{State: uverbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 1, MaxRdAtomic: 1}
	return qp.Modify(&a, uverbs.QPAttrState|uverbs.QPAttrTimeout|uverbs.QPAttrRetryCnt|uverbs.QPAttrRNRRetry|
		uverbs.QPAttrSQPSN|uverbs.QPAttrMaxQPRdAtomic)
}

func verbsOps(n int) {
	settle()
	for i := 0; i < n && want(1); i++ {
		start()
		c, err := uverbs.Open("rxe0", nil)
		if err == nil {
			err = c.Close()
		}
		stop1()
		must("open/close", err)
	}
	c, err := uverbs.Open("rxe0", nil)
	must("open rxe0", err)
	defer c.Close()
	qpd, err := c.AllocPD()
	must("pd", err)
	qcq, err := c.CreateCQ(uverbs.CQAttr{CQE: 16})
	must("cq", err)
	gid, err := c.QueryGID(1, 0)
	must("query gid", err)
	qa := uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: qcq, RecvCQ: qcq, Cap: rcCap}

	settle()
	for i := 0; i < n && want(2); i++ {
		start()
		_, err := c.QueryPort(1)
		stop2()
		must("query port", err)
	}
	gids := make([]uverbs.GIDEntry, 64)
	settle()
	for i := 0; i < n && want(3); i++ {
		start()
		_, err := c.QueryGIDTableInto(gids)
		stop3()
		must("query gid table", err)
	}
	var (
		pd uverbs.PD
		cq uverbs.CQ
		qp uverbs.QP
	)
	settle()
	for i := 0; i < n && want(4); i++ {
		start()
		err := c.AllocPDInto(&pd)
		if err == nil {
			err = pd.Close()
		}
		stop4()
		must("pd into", err)
	}
	settle()
	for i := 0; i < n && want(5); i++ {
		start()
		p, err := c.AllocPD()
		if err == nil {
			err = p.Close()
		}
		stop5()
		must("pd", err)
	}
	settle()
	for i := 0; i < n && want(6); i++ {
		start()
		err := c.CreateCQInto(&cq, uverbs.CQAttr{CQE: 16})
		if err == nil {
			err = cq.Close()
		}
		stop6()
		must("cq into", err)
	}
	settle()
	for i := 0; i < n && want(7); i++ {
		start()
		q, err := c.CreateCQ(uverbs.CQAttr{CQE: 16})
		if err == nil {
			err = q.Close()
		}
		stop7()
		must("cq", err)
	}
	settle()
	for i := 0; i < n && want(8); i++ {
		start()
		err := qpd.CreateQPInto(&qp, qa)
		if err == nil {
			err = qp.Close()
		}
		stop8()
		must("qp into", err)
	}
	settle()
	for i := 0; i < n && want(9); i++ {
		start()
		q, err := qpd.CreateQP(qa)
		if err == nil {
			err = q.Close()
		}
		stop9()
		must("qp", err)
	}

	// A pair of connected RC QPs on rxe0 for modify, post and poll.
	a, err := qpd.CreateQP(qa)
	must("qp a", err)
	b, err := qpd.CreateQP(qa)
	must("qp b", err)
	must("b to RTS", toRTS(b, a.Num(), gid))
	settle()
	for i := 0; i < n && want(10); i++ {
		q, err := qpd.CreateQP(qa)
		must("qp", err)
		start()
		err = toRTS(q, b.Num(), gid)
		stop10()
		must("modify to RTS", err)
		must("destroy qp", q.Close())
	}
	must("a to RTS", toRTS(a, b.Num(), gid))

	// RegMR registers only memory the library mapped: one AllocMR holds
	// the buffer registered again and again, and the two ends of the RDMA
	// WRITE (cops mmaps nothing: its buffers are static).
	big, err := qpd.AllocMR(3*4096, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
	must("alloc mr", err)
	buf, dst := big.Buf()[:4096], big.Buf()[4096:8192]
	settle()
	for i := 0; i < n && want(11); i++ {
		start()
		mr, err := qpd.RegMR(buf, uverbs.AccessLocalWrite)
		if err == nil {
			err = mr.Close()
		}
		stop11()
		must("reg mr", err)
	}
	lmr, rmr := big, big
	sgl := []uverbs.SGE{{Addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), Length: 64, LKey: lmr.LKey()}}
	wr := []uverbs.SendWR{{}}
	wc := make([]uverbs.WC, 1)
	settle()
	for i := 0; i < n && want(12); i++ {
		wr[0] = uverbs.SendWR{ID: uint64(i), Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled, SGL: sgl,
			RemoteAddr: uint64(uintptr(unsafe.Pointer(&dst[0]))), RKey: rmr.RKey()}
		start()
		_, err := a.PostSend(wr)
		stop12()
		must("post send", err)
		time.Sleep(20 * time.Millisecond)
		start()
		got, err := qcq.Poll(wc)
		if got == 1 {
			stop13()
		} else {
			stop63()
		}
		for err == nil && got == 0 {
			got, err = qcq.Poll(wc)
		}
		must("poll", err)
		if wc[0].Status != uverbs.WCSuccess {
			must("poll", fmt.Errorf("status %v", wc[0].Status))
		}
	}
	must("close", big.Close())
	must("close", a.Close())
	must("close", b.Close())
	must("close", qcq.Close())
	must("close", qpd.Close())
}

// mlx5Ops is cops.c's mlx5_ops: a pair of RC QPs on mock0 connected to
// each other, 17 a signaled 64-byte RDMA WRITE posted, 18 the poll that
// returns its completion.
func mlx5Ops(n int) {
	if !want(17) && !want(18) {
		return
	}
	c, err := uverbs.Open("mock0", nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "goops: no mock0 (%v): no mlx5 data-path samples\n", err)
		return
	}
	defer c.Close()
	gid, err := c.QueryGID(1, 0)
	must("mock0 gid", err)
	pd, err := c.AllocPD()
	must("pd", err)
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 16})
	must("cq", err)
	qa := uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}}
	a, err := pd.CreateQP(qa)
	must("qp a", err)
	b, err := pd.CreateQP(qa)
	must("qp b", err)
	must("a to RTS", toRTS(a, b.Num(), gid))
	must("b to RTS", toRTS(b, a.Num(), gid))
	big, err := pd.AllocMR(2*4096, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
	must("alloc mr", err)
	buf, dst := big.Buf()[:4096], big.Buf()[4096:]
	sgl := []uverbs.SGE{{Addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), Length: 64, LKey: big.LKey()}}
	wr := []uverbs.SendWR{{}}
	wc := make([]uverbs.WC, 1)
	settle()
	for i := 0; i < n; i++ {
		wr[0] = uverbs.SendWR{ID: uint64(i), Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled, SGL: sgl,
			RemoteAddr: uint64(uintptr(unsafe.Pointer(&dst[0]))), RKey: big.RKey()}
		start()
		_, err := a.PostSend(wr)
		stop17()
		must("post send", err)
		time.Sleep(20 * time.Millisecond)
		start()
		got, err := cq.Poll(wc)
		if got == 1 {
			stop18()
		} else {
			stop63()
		}
		for err == nil && got == 0 {
			got, err = cq.Poll(wc)
		}
		must("poll", err)
		if wc[0].Status != uverbs.WCSuccess {
			must("poll", fmt.Errorf("status %v", wc[0].Status))
		}
	}
	must("close", big.Close())
	must("close", a.Close())
	must("close", b.Close())
	must("close", cq.Close())
}

// countersOps reads a counters object bound to an L2 flow on mock0: n
// samples on this thread, or, when readers > 0, that many goroutines
// reading it n times each at once, with no windows (goops rate).
func countersOps(n, readers int) {
	c, err := uverbs.Open("mock0", nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "goops: no mock0 (%v): no counters samples\n", err)
		return
	}
	defer c.Close()
	cs, err := counters.Create(c, nil)
	must("counters", err)
	for i, d := range []counters.Description{counters.Packets, counters.Bytes} {
		must("attach", cs.Attach(counters.AttachAttr{Desc: d, Index: uint32(i)}, nil))
	}
	pd, err := c.AllocPD()
	must("pd", err)
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 16})
	must("cq", err)
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxRecvWR: 16, MaxRecvSGE: 1}})
	must("raw qp", err)
	f, err := flow.Create(qp, &flow.Attr{Port: 1, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: flow.MAC{0, 1, 2, 3, 4, 5}},
			Mask: flow.EthFilter{DstMAC: flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}},
		&flow.Count{Counters: cs},
	}})
	must("flow", err)
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := make([]uint64, 2)
			for range n {
				must("read counters", cs.Read(v, 0))
			}
		}()
	}
	wg.Wait()
	v := make([]uint64, 2)
	settle()
	for i := 0; i < n && readers == 0 && want(14); i++ {
		start()
		err := cs.Read(v, 0)
		stop14()
		must("read counters", err)
	}
	must("close", f.Close())
	must("close", cs.Close())
}

// madOps sends a vendor-class Get (class 0x30, OUI 00-14-05) from rxe0
// port 1 to QP1 of rxe1 port 1, where an agent for it receives it.
func madOps(n int, dgid uverbs.GIDEntry) {
	const class, oui = 0x30, 0x001405
	cli, err := umad.OpenPort("rxe0", 1)
	must("umad open rxe0", err)
	defer cli.Close()
	srv, err := umad.OpenPort("rxe1", 1)
	must("umad open rxe1", err)
	defer srv.Close()
	ca, err := cli.RegisterOUI(class, 0, oui, umad.MethodMask{})
	must("register", err)
	sa, err := srv.RegisterOUI(class, 0, oui, umad.MethodMaskOf(1))
	must("register", err)
	req, in := umad.NewPacket(), umad.NewPacket()
	must("len", req.SetLen(256))
	must("len", in.SetLen(256))
	m := req.MAD()
	clear(m)
	m[0], m[1], m[2], m[3] = 1, class, 1, 1
	m[37], m[38], m[39] = oui>>16, oui>>8&0xff, oui&0xff
	must("addr", req.SetAddr(0, 1, 0, umad.QP1QKey))
	must("grh", req.SetGRH(umad.GRH{GID: dgid.GID, GIDIndex: 0, HopLimit: 64}))
	settle()
	for i := 0; i < n && want(15); i++ {
		binary.BigEndian.PutUint32(m[12:16], uint32(i+1))
		start()
		err := cli.Send(ca, req, 0, 0)
		stop15()
		must("send", err)
		time.Sleep(20 * time.Millisecond)
		start()
		id, err := srv.Recv(in, 0)
		if err == nil && id == sa {
			stop16()
		} else {
			stop63()
			id, err = srv.Recv(in, 10*time.Second)
		}
		must("recv", err)
		if id != sa {
			must("recv", fmt.Errorf("agent %d, want %d", id, sa))
		}
	}
}

// settle collects garbage before a loop, outside its windows: a
// collection the earlier loops' allocations would start inside a window
// (its workers' wake-ups, its assists) belongs to no operation.
func settle() { runtime.GC() }

// only, when not 0, is the one operation to sample (goops N CODE): a
// profile (make bench-insn INSN_PROF=1) of that operation alone.
var only int

func want(code int) bool { return only == 0 || only == code }

func main() {
	if len(os.Args) == 4 && os.Args[1] == "rate" {
		// Not pinned: the goroutines spread over the CPUs, and a window
		// around the whole run (marker) counts them all.
		readers, err1 := strconv.Atoi(os.Args[2])
		n, err2 := strconv.Atoi(os.Args[3])
		if err1 != nil || err2 != nil || readers <= 0 || n <= 0 {
			fmt.Fprintln(os.Stderr, "usage: goops rate READERS N")
			os.Exit(2)
		}
		countersOps(n, readers)
		return
	}
	n := 40
	if len(os.Args) > 1 {
		var err error
		if n, err = strconv.Atoi(os.Args[1]); err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "usage: goops N [CODE]")
			os.Exit(2)
		}
	}
	if len(os.Args) > 2 {
		only, _ = strconv.Atoi(os.Args[2])
	}
	// The collector runs only where settle asks it to, before each
	// operation's samples, so that every boot's samples start from the
	// same heap. Paced by the heap's growth, its cycles ended at moments
	// that depended on the emulator's timing, and so did which spans the
	// plain creates' objects came from: a span reused after a collection
	// has to be zeroed object by object (71 user instructions a CQ), a
	// fresh one does not, and CreateCQ's row moved from 2,230 to 2,301
	// between boots. An allocation costs what it did (mallocgc runs as
	// before); no collection lands inside a window.
	debug.SetGCPercent(-1)
	// Every window opens and closes on this thread, pinned to CPU 1 as
	// cops is: the plugin counts per CPU.
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(1)
	must("sched_setaffinity", unix.SchedSetaffinity(0, &set))
	verbsOps(n)
	countersOps(n, 0)
	mlx5Ops(n)
	c1, err := uverbs.Open("rxe1", nil)
	must("open rxe1", err)
	g1, err := c1.QueryGID(1, 0)
	must("rxe1 gid", err)
	must("close", c1.Close())
	madOps(n, g1)
	fmt.Printf("goops: done, %d samples each\n", n)
}
