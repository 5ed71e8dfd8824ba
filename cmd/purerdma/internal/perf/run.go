package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

// failed is an error the tool has already reported with perftest's words.
type failed struct{ code int }

func (f failed) Error() string { return fmt.Sprintf("exit status %d", f.code) }

// test is perftest's struct pingpong_context, the part these tools use.
type test struct {
	p      *params
	c      *uverbs.Context
	pd     *uverbs.PD
	mr     *uverbs.MR
	ch     *uverbs.CompChannel
	sendCQ *uverbs.CQ
	recvCQ *uverbs.CQ
	srq    *uverbs.SRQ  // --use_srq: the receivers' shared receive queue
	ahs    []*uverbs.AH // UD: each QP's to its peer
	qps    []*uverbs.QP
	buf    []byte
	// buffSize and sendQPBuffSize are alloc_ctx's buff_size and
	// send_qp_buff_size.
	buffSize, sendQPBuffSize int
	// bs is BUFF_SIZE(size, cycle_buffer) of the size the buffer was
	// allocated for (8 MiB with -a): each QP's part of the buffer.
	bs      int
	my, rem []dest
	yield   bool // poll yields the CPU between empty polls (software devices)
	t0      time.Time
	waitCtx context.Context
	ctx     context.Context
	comm    *comm
	cmLn    *rdmacm.ID // the -R server's listening ID
	// A -D run's clock: durStart's time, the state, the stamps.
	durT0        time.Time
	durSt        int
	durTP, durTC []int64
}

// spin is called at each empty poll of a busy-polling loop. Every 256 it
// yields the CPU on a software device (rxe's and siw's "hardware" is
// kernel code that needs a CPU to produce the completion the loop waits
// for; perftest spins, which on few CPUs keeps that work waiting); every
// 16 Ki it gives up when the context is done (--timeout) or the peer has
// closed the exchange's connection: a peer gone mid-run ends the run with
// an error instead of a wait for ever.
func (t *test) spin(n *int) error {
	*n++
	if *n&0xff != 0 {
		return nil
	}
	if t.yield {
		sys.Yield()
	}
	if *n&0x3fff != 0 {
		return nil
	}
	if err := t.ctx.Err(); err != nil {
		return fmt.Errorf("the run did not end within --timeout: %w", err)
	}
	if t.comm != nil && t.comm.peerGone() {
		return errPeerGone
	}
	return nil
}

var errPeerGone = errors.New("the peer closed the connection in the middle of the run: it is gone")

// now is get_cycles: nanoseconds on the monotonic clock.
func (t *test) now() int64 { return int64(time.Since(t.t0)) }

// knownDevices are ib_dev_name's part IDs of the devices perftest knows
// to implement inline data (every other device gets inline size 0).
func knownDevice(partID uint32) bool {
	switch partID {
	case 4099, 4100, 4103, 4104, 4113, 4115, 4116, 4117, 4118, 4119, 4120, 4121, 4122, 4123, 4124, 4125, 4126, 4127, 4129, 41682, 41683, 41686, 41692:
		return true
	}
	return false
}

func (p *params) main(stdout, stderr io.Writer) error {
	ctx := context.Background()
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	err := p.runTest(ctx, stdout, stderr)
	var f failed
	switch {
	case err == nil:
		return nil
	case errors.As(err, &f):
		return cli.ExitError{Code: f.code}
	default:
		fmt.Fprintf(stderr, " %v\n", err)
		return cli.ExitError{Code: 1}
	}
}

func (p *params) runTest(ctx context.Context, stdout, stderr io.Writer) error {
	t := &test{p: p, t0: time.Now(), ctx: ctx, waitCtx: context.WithoutCancel(ctx)}
	// ctx_find_dev
	if p.dev == "" {
		devs, err := uverbs.Devices(nil)
		if err != nil || len(devs) == 0 {
			fmt.Fprint(stderr, " Did not detect devices \n If device exists, check if driver is up\n")
			fmt.Fprint(stderr, " Unable to find the Infiniband/RoCE device\n")
			return failed{1}
		}
		p.dev = devs[0].Name
	}
	c, err := uverbs.Open(p.dev, nil)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "IB device %s not found\n", p.dev)
			fmt.Fprint(stderr, " Unable to find the Infiniband/RoCE device\n")
			return failed{1}
		}
		fmt.Fprintf(stderr, " Couldn't get context for the device: %v\n", err)
		return failed{1}
	}
	t.c = c
	defer c.Close()
	if p.timeout > 0 {
		// Closing the context unblocks a completion event wait.
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
	}
	dev, err := c.QueryDevice()
	if err != nil {
		return perr("Couldn't query the device: %w", err)
	}
	// check_link: the port must be active.
	pa, err := c.QueryPort(p.ibPort)
	if err != nil {
		return perr("Couldn't query port %d: %w", p.ibPort, err)
	}
	if pa.State != rdma.PortActive {
		fmt.Fprintf(stderr, " Port number %d state is %s\n", p.ibPort, portStateName(pa.State))
		fmt.Fprint(stderr, " Couldn't set the link layer\n Couldn't get context for the device\n")
		return failed{1}
	}
	p.linkEthernet = pa.LinkLayer == rdma.LinkLayerEthernet
	if p.linkEthernet && p.gidIndex == -1 {
		p.gidIndex = 0
	}
	// ctx_set_max_inline
	if dev.VendorID == 5157 || dev.VendorID == 0x8086 || !knownDevice(dev.VendorPartID) {
		if p.inline != defInline {
			io.WriteString(stdout, resultLine)
			fmt.Fprint(stderr, "Device not recognized to implement inline feature. Disabling it\n")
		}
		p.inline = 0
	} else if p.inline == defInline {
		p.inline = 0
		if p.tst == testLat {
			switch p.verb {
			case verbWrite:
				p.inline = 220
			case verbSend:
				p.inline = 236
			}
		}
	}
	if p.verb == verbRead || p.verb == verbAtomic {
		maxReads := int(dev.MaxQPRdAtom)
		switch {
		case p.outReads > maxReads:
			io.WriteString(stdout, resultLine)
			fmt.Fprintf(stderr, " Number of outstanding reads is above max = %d\n Changing to that max value\n", maxReads)
			p.outReads = maxReads
		case p.outReads <= 0:
			p.outReads = maxReads
		}
	} else {
		p.outReads = 1
	}
	if p.verb == verbAtomic && dev.AtomicCap == uverbs.AtomicNone {
		fmt.Fprint(stderr, " Device does not support atomic operations\n")
		return failed{1}
	}
	t.yield = c.DriverID() == rdma.DriverRXE || c.DriverID() == rdma.DriverSIW
	if p.output == outFull && p.server == "" {
		io.WriteString(stdout, "\n************************************\n* Waiting for client to connect... *\n************************************\n")
	}
	cm := &comm{client: p.server != ""}
	t.comm = cm
	if p.workRDMACM {
		var l *cmLink
		var err error
		if p.server != "" {
			l, err = dialCM(ctx, p.server, p.port)
		} else {
			l, err = acceptCM(ctx, p.port)
		}
		if err != nil {
			if p.server != "" {
				fmt.Fprintf(stderr, "Unable to perform rdma_client function: %v\n", err)
			} else {
				fmt.Fprintf(stderr, "Unable to perform rdma_server function: %v\n", err)
			}
			fmt.Fprint(stderr, " Unable to init the socket connection\n")
			return failed{1}
		}
		cm.cm = l
		defer l.close()
	} else {
		var nc net.Conn
		var err error
		if p.server != "" {
			nc, err = dial(ctx, p.server, p.port)
		} else {
			nc, err = accept(ctx, p.port)
		}
		if err != nil {
			if p.server != "" {
				fmt.Fprintf(stderr, "Couldn't connect to %s:%d\n", p.server, p.port)
			} else {
				fmt.Fprintf(stderr, "Couldn't listen to port %d\n", p.port)
			}
			fmt.Fprint(stderr, "Unable to open file descriptor for socket connection")
			fmt.Fprint(stderr, " Unable to init the socket connection\n")
			return failed{1}
		}
		cm.conn = nc
		defer nc.Close()
		if dl, ok := ctx.Deadline(); ok {
			nc.SetDeadline(dl)
		}
	}
	if p.verb == verbWrite && p.tst == testBW {
		time.Sleep(time.Second) // write_bw.c's sleep(1) after connecting
	}
	if err := cm.versions(p); err != nil {
		if errors.Is(err, errVersion) {
			fmt.Fprintf(stderr, "%v\n", err)
			return failed{1}
		}
		return err
	}
	// check_mtu: set_mtu, then the smaller of the two sides'.
	local := int(pa.ActiveMTU)
	if p.mtu != 0 {
		m, ok := map[int]int{256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}[p.mtu]
		if !ok {
			fmt.Fprintf(stderr, " Invalid MTU - %d \n Please choose mtu from {256,512,1024,2048,4096}\n Will run with the port active mtu - %d\n", p.mtu, pa.ActiveMTU)
			m = int(pa.ActiveMTU)
		}
		if m > int(pa.ActiveMTU) {
			fmt.Fprintf(stdout, "Requested mtu is higher than active mtu \nChanging to active mtu - %d\n", pa.ActiveMTU)
			m = int(pa.ActiveMTU)
		}
		local = m
	}
	if err := cm.mtu(p, local); err != nil {
		return err
	}
	if mtu := uint64(128 << p.currMTU); p.conn == connUD && p.size > mtu {
		if !p.runAll && p.reqSize {
			fmt.Fprint(stderr, " Max message size in UD cannot be greater than MTU \n")
			fmt.Fprint(stderr, " Couldn't get context for the device\n")
			return failed{1}
		}
		fmt.Fprintf(stderr, " Max msg size in UD is MTU %d\n", mtu)
		fmt.Fprint(stderr, " Changing to this MTU\n")
		p.size = mtu
	}
	var ct *cmTest
	defer func() {
		ct.disconnect()
		t.close()
		ct.closeIDs()
		if t.cmLn != nil {
			t.cmLn.Close()
		}
	}()
	if p.workRDMACM {
		// create_rdma_cm_connection: a sync, the test's QPs connected by
		// the connection manager (the resources made on the device it
		// chose), a sync.
		var zero, rem dest
		cm.gidIdx = p.gidIndex
		if p.server == "" {
			if err := t.cmListen(ctx); err != nil {
				fmt.Fprintf(stderr, "Failed to create RDMA CM connection with resources: %v\n", err)
				return failed{1}
			}
		}
		if err := cm.handshake(&zero, &rem); err != nil {
			return err
		}
		var err error
		if ct, err = t.cmConnect(ctx, t.setupRes); err != nil {
			fmt.Fprintf(stderr, "Failed to create RDMA CM connection with resources: %v\n", err)
			return failed{1}
		}
		if err := cm.handshake(&zero, &rem); err != nil {
			return err
		}
	} else {
		if err := t.setupRes(t.c); err != nil {
			return err
		}
		if err := t.createQPs(stdout); err != nil {
			return err
		}
	}
	// set_up_connection: the GID and the local keys, of the device the
	// resources are on (with -R the one the connection manager chose,
	// which need not be -d's).
	rc := t.pd.Context()
	if rc != c {
		if pa, err = rc.QueryPort(p.ibPort); err != nil {
			return perr("Couldn't query port %d: %w", p.ibPort, err)
		}
	}
	var gid rdma.GID
	if p.gidIndex != -1 {
		if !p.gidUser {
			p.gidIndex = t.bestGIDIndex(rc, int(pa.GIDTableLen))
		}
		g, err := rc.QueryGID(p.ibPort, p.gidIndex)
		if err != nil {
			return perr("Couldn't query GID %d: %w", p.gidIndex, err)
		}
		gid = g.GID
	}
	cm.withGID = p.gidIndex != -1
	bs := t.bs
	t.my = make([]dest, p.numQPs)
	t.rem = make([]dest, p.numQPs)
	for i := range t.my {
		t.my[i] = dest{lid: uint32(pa.LID), outReads: uint32(p.outReads), qpn: t.qps[i].Num(),
			psn: rand.Uint32() & 0xffffff, rkey: t.mr.RKey(), vaddr: t.mr.Addr() + uint64((p.numQPs+i)*bs), gid: gid}
	}
	pcir := !(p.verb == verbWrite && p.tst == testLat)
	p.printTestInfo(stdout, p.dev, pcir)

	hs := func(i int) error { return cm.handshake(&t.my[i], &t.rem[i]) }
	extra := p.tst == testLat && p.verb != verbSend // write_lat, read_lat, atomic_lat: one more at the start
	if extra {
		if err := hs(0); err != nil {
			return err
		}
	}
	for i := range t.my {
		if err := hs(i); err != nil {
			return err
		}
	}
	if !p.workRDMACM {
		if isV4Mapped(t.my[0].gid) != isV4Mapped(t.rem[0].gid) {
			fmt.Fprint(stderr, "\n Found Incompatibility issue with GID types.\n")
			fmt.Fprint(stderr, " Please Try to use a different IP version.\n\n")
			return failed{1}
		}
		if err := t.connect(); err != nil {
			return err
		}
	}
	if p.verb == verbSend {
		if err := hs(0); err != nil {
			return err
		}
	}
	for i := range t.my {
		p.printDest(stdout, &t.my[i], false)
	}
	for i := range t.my {
		if err := hs(i); err != nil {
			return err
		}
		p.printDest(stdout, &t.rem[i], true)
	}
	if p.verb != verbSend {
		if err := hs(0); err != nil { // "an additional handshake is required after moving qp to RTR"
			return err
		}
	}
	if p.events {
		if err := t.sendCQ.ReqNotify(false); err != nil {
			return perr("Couldn't request CQ notification: %w", err)
		}
		if t.recvCQ != t.sendCQ {
			if err := t.recvCQ.ReqNotify(false); err != nil {
				return perr("Couldn't request CQ notification: %w", err)
			}
		}
	}
	switch {
	case p.tst == testBW && p.verb != verbSend:
		return t.rdmaBW(cm, stdout, stderr)
	case p.tst == testBW:
		return t.sendBW(cm, stdout, stderr)
	case p.verb == verbWrite:
		return t.writeLat(cm, stdout, stderr)
	case p.verb == verbSend:
		return t.sendLat(cm, stdout, stderr)
	default:
		return t.readLat(cm, stdout, stderr)
	}
}

func portStateName(s rdma.PortState) string {
	names := []string{"Nop", "Down", "Init", "Armed", "", "Active Defer"}
	if int(s) < len(names) {
		return names[s]
	}
	return "Unknown"
}

// isV4Mapped is ipv6_addr_v4mapped: ::ffff:a.b.c.d, or ff0e::ffff:a.b.c.d.
func isV4Mapped(g rdma.GID) bool {
	w0 := binary.BigEndian.Uint32(g[0:])
	return (w0|binary.BigEndian.Uint32(g[4:])) == 0 && binary.BigEndian.Uint32(g[8:]) == 0xffff ||
		w0 == 0xff0e0000 && binary.BigEndian.Uint32(g[4:]) == 0 && binary.BigEndian.Uint32(g[8:]) == 0xffff
}

// bestGIDIndex is get_best_gid_index: an IPv4-mapped GID over another,
// RoCE v2 over v1.
func (t *test) bestGIDIndex(c *uverbs.Context, n int) int {
	best := 0
	for i := 1; i < n; i++ {
		a, err := c.QueryGID(t.p.ibPort, best)
		if err != nil {
			return best
		}
		b, err := c.QueryGID(t.p.ibPort, i)
		if err != nil {
			continue
		}
		if isV4Mapped(b.GID) && !isV4Mapped(a.GID) {
			best = i
		} else if isV4Mapped(b.GID) == isV4Mapped(a.GID) && a.Type == uverbs.GIDTypeRoCEv1 && b.Type == uverbs.GIDTypeRoCEv2 {
			best = i
		}
	}
	return best
}

func buffSize(size, cycle int) int {
	if size < cycle {
		return cycle
	}
	return size
}

func inc(size, line int) int {
	if size > line {
		return roundUp(size, line)
	}
	return line
}

// setupRes is alloc_ctx and ctx_init on c: the buffer and its MR, the
// CQs.
func (t *test) setupRes(c *uverbs.Context) error {
	p := t.p
	bs := buffSize(int(p.size), p.cycleBuffer)
	t.bs = bs
	t.buffSize = inc(bs, p.cacheLineSize) * 2 * p.numQPs
	t.sendQPBuffSize = t.buffSize / p.numQPs / 2
	if p.conn == connUD {
		t.buffSize += p.cacheLineSize
	}
	pd, err := c.AllocPD()
	if err != nil {
		return perr("Couldn't allocate PD: %w", err)
	}
	t.pd = pd
	access := uverbs.AccessLocalWrite
	switch p.verb {
	case verbWrite:
		access |= uverbs.AccessRemoteWrite
	case verbRead:
		access |= uverbs.AccessRemoteRead
	case verbAtomic:
		access |= uverbs.AccessRemoteAtomic
	}
	mr, err := pd.AllocMR(t.buffSize, access)
	if err != nil {
		return perr("Couldn't allocate MR: %w", err)
	}
	t.mr = mr
	t.buf = mr.Buf()
	if !(p.verb == verbWrite && p.tst == testLat) {
		for i := range t.buf {
			t.buf[i] = byte(rand.Uint32())
		}
	}
	if p.events {
		if t.ch, err = c.CreateCompChannel(); err != nil {
			return perr("Couldn't create completion channel: %w", err)
		}
	}
	if t.sendCQ, err = c.CreateCQ(uverbs.CQAttr{CQE: p.txDepth * p.numQPs, Channel: t.ch}); err != nil {
		return perr("Couldn't create CQ: %w", err)
	}
	t.recvCQ = t.sendCQ
	if p.verb == verbSend {
		if t.recvCQ, err = c.CreateCQ(uverbs.CQAttr{CQE: p.rxDepth * p.numQPs, Channel: t.ch}); err != nil {
			return perr("Couldn't create a receiver CQ: %w", err)
		}
	}
	if p.useSRQ && (p.tst == testLat || p.server == "") {
		if t.srq, err = pd.CreateSRQ(uverbs.SRQAttr{MaxWR: uint32(p.rxDepth), MaxSGE: 1}); err != nil {
			return perr("Couldn't create SRQ: %w", err)
		}
	}
	return nil
}

// qpAttr is ctx_qp_create's attributes.
func (t *test) qpAttr() uverbs.QPInitAttr {
	p := t.p
	typ := uverbs.QPTypeRC
	switch p.conn {
	case connUC:
		typ = uverbs.QPTypeUC
	case connUD:
		typ = uverbs.QPTypeUD
	}
	a := uverbs.QPInitAttr{Type: typ, SendCQ: t.sendCQ, RecvCQ: t.recvCQ,
		Cap: uverbs.QPCap{MaxSendWR: uint32(p.txDepth), MaxRecvWR: uint32(p.rxDepth), MaxSendSGE: 1, MaxRecvSGE: 1,
			MaxInlineData: uint32(p.inline)}}
	if t.srq != nil {
		a.SRQ, a.Cap.MaxRecvWR, a.Cap.MaxRecvSGE = t.srq, 0, 0
	}
	return a
}

// createQPs is ctx_init's QPs, in INIT (ctx_modify_qp_to_init).
func (t *test) createQPs(stdout io.Writer) error {
	p := t.p
	for i := 0; i < p.numQPs; i++ {
		qp, err := t.pd.CreateQP(t.qpAttr())
		if err != nil {
			fmt.Fprintf(stdout, "Couldn't create QP: %v\n", err)
			return failed{1}
		}
		if got := int(qp.Cap().MaxInlineData); p.inline > got {
			p.inline = got
			fmt.Fprintf(stdout, "  Actual inline-size(%d) > requested inline-size(%d)\n", p.inline, p.inline)
		}
		t.qps = append(t.qps, qp)
		a := &uverbs.QPAttr{State: uverbs.QPStateInit, Port: p.ibPort}
		switch p.verb {
		case verbAtomic:
			a.AccessFlags = uverbs.AccessRemoteAtomic
		case verbRead:
			a.AccessFlags = uverbs.AccessRemoteRead
		case verbWrite:
			a.AccessFlags = uverbs.AccessRemoteWrite
		case verbSend:
			a.AccessFlags = uverbs.AccessRemoteWrite | uverbs.AccessLocalWrite
		}
		mask := uverbs.QPAttrState | uverbs.QPAttrPKeyIndex | uverbs.QPAttrPort | uverbs.QPAttrAccessFlags
		if p.conn == connUD {
			a.AccessFlags, a.QKey = 0, defQKey
			mask = uverbs.QPAttrState | uverbs.QPAttrPKeyIndex | uverbs.QPAttrPort | uverbs.QPAttrQKey
		}
		if err := qp.Modify(a, mask); err != nil {
			return perr("Failed to modify QP to INIT, ret=%w", err)
		}
	}
	return nil
}

func (t *test) close() {
	for _, qp := range t.qps {
		qp.Close()
	}
	for _, ah := range t.ahs {
		ah.Close()
	}
	if t.srq != nil {
		t.srq.Close()
	}
	if t.recvCQ != nil && t.recvCQ != t.sendCQ {
		t.recvCQ.Close()
	}
	if t.sendCQ != nil {
		t.sendCQ.Close()
	}
	if t.ch != nil {
		t.ch.Close()
	}
	if t.mr != nil {
		t.mr.Close()
	}
	if t.pd != nil {
		t.pd.Close()
	}
}

// connect is ctx_connect: RTR with the remote's QPN and PSN, and RTS for a
// side that sends (the BW server stays in RTR).
func (t *test) connect() error {
	p := t.p
	for i, qp := range t.qps {
		rem := &t.rem[i]
		a := &uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: uverbs.MTU(p.currMTU), DestQPNum: rem.qpn, RQPSN: rem.psn,
			AH: uverbs.AHAttr{DLID: uint16(rem.lid), SL: uint8(p.sl), Port: p.ibPort}}
		mask := uverbs.QPAttrState | uverbs.QPAttrAV | uverbs.QPAttrPathMTU | uverbs.QPAttrDestQPN | uverbs.QPAttrRQPSN
		if p.gidIndex != -1 {
			a.AH.IsGlobal = true
			a.AH.GRH = uverbs.GlobalRoute{DGID: rem.gid, SGIDIndex: uint8(p.gidIndex), HopLimit: 0xff}
		}
		if p.conn == connUD {
			mask = uverbs.QPAttrState // the AV goes into an AH
		}
		if p.conn == connRC {
			a.MaxDestRdAtomic, a.MinRNRTimer = uint8(t.my[i].outReads), minRNRTimer
			mask |= uverbs.QPAttrMinRNRTimer | uverbs.QPAttrMaxDestRdAtomic
		}
		if err := qp.Modify(a, mask); err != nil {
			return perr("Failed to modify QP %d to RTR: %w", qp.Num(), err)
		}
		if p.tst == testLat || p.server != "" {
			a.State, a.SQPSN = uverbs.QPStateRTS, t.my[i].psn
			mask := uverbs.QPAttrState | uverbs.QPAttrSQPSN
			if p.conn == connRC {
				a.Timeout, a.RetryCnt, a.RNRRetry, a.MaxRdAtomic = uint8(p.qpTimeout), 7, 7, uint8(rem.outReads)
				mask |= uverbs.QPAttrTimeout | uverbs.QPAttrRetryCnt | uverbs.QPAttrRNRRetry | uverbs.QPAttrMaxQPRdAtomic
			}
			if err := qp.Modify(a, mask); err != nil {
				return perr("Failed to modify QP to RTS: %w", err)
			}
			if p.conn == connUD {
				ah, err := t.pd.CreateAH(a.AH)
				if err != nil {
					return perr("Failed to create AH: %w", err)
				}
				t.ahs = append(t.ahs, ah)
			}
		}
	}
	return nil
}

// sendWRs is ctx_set_send_reg_wqes with post_list 1: one work request a
// QP, from the QP's part of the buffer to the remote's.
func (t *test) sendWRs() [][]uverbs.SendWR {
	p := t.p
	wrs := make([][]uverbs.SendWR, p.numQPs)
	bs := t.bs
	for i := range wrs {
		sge, _ := t.mr.SGE(i*bs, int(p.size))
		w := uverbs.SendWR{ID: uint64(i), SGL: []uverbs.SGE{sge}, RemoteAddr: t.rem[i].vaddr, RKey: t.rem[i].rkey}
		if p.cqMod == 1 {
			w.Flags = uverbs.SendSignaled
		}
		switch p.verb {
		case verbSend:
			w.Opcode, w.RemoteAddr, w.RKey = uverbs.WRSend, 0, 0
			if p.conn == connUD && i < len(t.ahs) {
				w.AH, w.RemoteQPN, w.RemoteQKey = t.ahs[i], t.rem[i].qpn, defQKey
			}
		case verbWrite:
			w.Opcode = uverbs.WRRDMAWrite
		case verbRead:
			w.Opcode = uverbs.WRRDMARead
		case verbAtomic:
			w.SGL[0].Length = 8
			if p.atomicType == atomicFAA {
				w.Opcode, w.CompareAdd = uverbs.WRAtomicFetchAndAdd, 1
			} else {
				w.Opcode = uverbs.WRAtomicCmpAndSwp
			}
		}
		if (p.verb == verbSend || p.verb == verbWrite) && int(p.size) <= p.inline {
			w.Inline = t.buf[i*bs : i*bs+int(p.size)]
		}
		wrs[i] = []uverbs.SendWR{w}
	}
	return wrs
}

// wait is the event wait before a poll (ctx_notify_events): the next
// completion event, acknowledged, and the CQ armed again.
func (t *test) wait() error {
	cq, err := t.ch.GetEvent(t.waitCtx)
	if err != nil {
		return perr("Couldn't get CQ event: %w", err)
	}
	if err := cq.ReqNotify(false); err != nil {
		return perr("Couldn't request CQ notification: %w", err)
	}
	return nil
}

func (t *test) failSend(stderr io.Writer, w *uverbs.WC, scnt, ccnt uint64) error {
	fmt.Fprint(stderr, " Completion with error at client\n")
	fmt.Fprintf(stderr, " Failed status %d: wr_id %d syndrom 0x%x\n", uint32(w.Status), int(w.ID), w.VendorErr)
	fmt.Fprintf(stderr, "scnt=%d, ccnt=%d\n", scnt, ccnt)
	return failed{1}
}

// runBW is run_iter_bw: keep up to tx_depth work requests outstanding on
// every QP, a completion asked for every cq_mod, until iters on each.
func (t *test) runBW(wrs [][]uverbs.SendWR, tposted, tcompleted []int64, stderr io.Writer) error {
	p := t.p
	nq := p.numQPs
	tot := p.iters * uint64(nq)
	scnt := make([]uint64, nq)
	ccnt := make([]uint64, nq)
	var totS, totC uint64
	bs := t.bs
	step := inc(int(p.size), p.cacheLineSize)
	cycle := int(p.size) <= p.cycleBuffer/2
	var wc [ctxPollBatch]uverbs.WC
	dur := p.duration > 0
	if dur {
		t.durStart(tposted, tcompleted)
	} else if p.noPeak {
		tposted[0] = t.now()
	}
	spins := 0
	for totS < tot || totC < tot || dur && t.durState() != stEnd {
		for i := 0; i < nq; i++ {
			w := &wrs[i][0]
			for (scnt[i] < p.iters || dur) && scnt[i]-ccnt[i]+1 <= uint64(p.txDepth) {
				if scnt[i]%uint64(p.cqMod) == 0 && p.cqMod > 1 && !(!dur && scnt[i] == p.iters-1) {
					w.Flags &^= uverbs.SendSignaled
				}
				if !p.noPeak {
					tposted[totS] = t.now()
				}
				if dur && t.durState() == stEnd {
					break
				}
				if _, err := t.qps[i].PostSend(wrs[i]); err != nil {
					fmt.Fprintf(stderr, "Couldn't post send: qp %d scnt=%d \n", i, scnt[i])
					return failed{1}
				}
				if cycle {
					// increase_loc_addr, increase_rem_addr
					n := uint64(p.cycleBuffer / step)
					w.SGL[0].Addr += uint64(step)
					if w.Inline != nil {
						w.Inline = t.buf[int(w.SGL[0].Addr-t.mr.Addr()):][:p.size]
					}
					if p.verb != verbSend {
						w.RemoteAddr += uint64(step)
					}
					if (scnt[i]+1)%n == 0 {
						w.SGL[0].Addr = t.mr.Addr() + uint64(i*bs)
						if w.Inline != nil {
							w.Inline = t.buf[i*bs:][:p.size]
						}
						w.RemoteAddr = t.rem[i].vaddr
						if p.verb == verbSend {
							w.RemoteAddr = 0
						}
					}
				}
				scnt[i]++
				totS++
				if scnt[i]%uint64(p.cqMod) == uint64(p.cqMod-1) || !dur && scnt[i] == p.iters-1 {
					w.Flags |= uverbs.SendSignaled
				}
			}
		}
		if totC < tot || dur && totC < totS {
			if p.events {
				if err := t.wait(); err != nil {
					return err
				}
			}
			ne, err := t.sendCQ.Poll(wc[:])
			if err != nil {
				fmt.Fprintf(stderr, "poll CQ failed %v\n", err)
				return failed{1}
			}
			if ne == 0 {
				if err := t.spin(&spins); err != nil {
					return err
				}
			}
			for k := 0; k < ne; k++ {
				w := &wc[k]
				if w.Status != uverbs.WCSuccess {
					return t.failSend(stderr, w, totS, totC)
				}
				ccnt[w.ID] += uint64(p.cqMod)
				totC += uint64(p.cqMod)
				if !p.noPeak {
					if totC > tot {
						tcompleted[tot-1] = t.now()
					} else {
						tcompleted[totC-1] = t.now()
					}
				}
				if dur && t.durState() == stSample {
					p.iters += uint64(p.cqMod)
				}
			}
		}
	}
	if p.noPeak && !dur {
		tcompleted[0] = t.now()
	}
	return nil
}

// The states of a -D run (perftest's DurationStates, moved on by
// catch_alarm on SIGALRM): the margin before the sample, the sample, the
// margin after it, the end.
const (
	stStart = iota
	stSample
	stStopSample
	stEnd
)

// durStart starts a -D run's clock, as perftest arms its alarms: the
// sample starts after the margin and its end and the run's follow, and
// the first and last stamps are taken at the sample's start and end.
// p.iters counts what completes within the sample.
func (t *test) durStart(tposted, tcompleted []int64) {
	t.durT0, t.durTP, t.durTC, t.durSt = time.Now(), tposted, tcompleted, stStart
	t.p.iters = 0
	t.durState()
}

// durState is the run's state now, moved on as perftest's alarms would
// have moved it: START for the margin, SAMPLE until duration − margin,
// STOP_SAMPLE for the margin, then END (with no margin, SAMPLE for the
// whole duration and END right after it).
func (t *test) durState() int {
	p := t.p
	if t.durSt == stEnd {
		return stEnd
	}
	el := time.Since(t.durT0)
	margin := time.Duration(p.margin) * time.Second
	if t.durSt == stStart && el >= margin {
		t.durSt = stSample
		t.durTP[0] = t.now()
	}
	if t.durSt == stSample && el >= time.Duration(p.duration)*time.Second-margin {
		t.durSt = stStopSample
		t.durTC[0] = t.now()
	}
	if t.durSt == stStopSample && el >= time.Duration(p.duration)*time.Second {
		t.durSt = stEnd
	}
	return t.durSt
}

// rdmaBW is the main of write_bw, read_bw and atomic_bw after the
// connection: the client runs and reports, the server waits for the
// client's report and prints it.
func (t *test) rdmaBW(cm *comm, stdout, stderr io.Writer) error {
	p := t.p
	p.printResultHeader(stdout)
	if p.server == "" {
		if err := cm.handshake(&t.my[0], &t.rem[0]); err != nil {
			return err
		}
		rem, err := cm.xchgReports(bwReport{})
		if err != nil {
			return err
		}
		p.printBW(stdout, rem)
		if err := cm.closeConn(&t.my[0], &t.rem[0]); err != nil {
			return err
		}
		if p.output == outFull {
			io.WriteString(stdout, resultLine)
		}
		return nil
	}
	sizes := t.sizes()
	n := int(p.iters) * p.numQPs
	tposted, tcompleted := t.stamps(n)
	var last bwReport
	for _, s := range sizes {
		p.size = s
		wrs := t.sendWRs()
		if err := t.runBW(wrs, tposted, tcompleted, stderr); err != nil {
			fmt.Fprint(stderr, " Failed to complete run_iter_bw function successfully\n")
			return err
		}
		p.cpuMHzWarning(stderr)
		last = p.bwReportOf(tposted, tcompleted)
		p.printBW(stdout, last)
	}
	if p.output == outFull {
		io.WriteString(stdout, resultLine)
	}
	if err := cm.handshake(&t.my[0], &t.rem[0]); err != nil {
		return err
	}
	if _, err := cm.xchgReports(last); err != nil {
		return err
	}
	return cm.closeConn(&t.my[0], &t.rem[0])
}

// sizes are the message sizes of the run: -s's, or with -a 2 to 8 MiB
// (UD: to the MTU).
func (t *test) sizes() []uint64 {
	p := t.p
	if !p.runAll {
		return []uint64{p.size}
	}
	var sizes []uint64
	for s := uint64(2); s <= maxSize; s <<= 1 {
		if p.conn == connUD && s > uint64(128<<p.currMTU) {
			break
		}
		sizes = append(sizes, s)
	}
	return sizes
}

// stamps are the post and completion times of n messages, or of the
// first and the last without the peak search (alloc_ctx's tarr_size).
func (t *test) stamps(n int) (tposted, tcompleted []int64) {
	if t.p.noPeak {
		n = 1
	}
	return make([]int64, n), make([]int64, n)
}

// recvWRs is ctx_set_recv_wqes' work request of each QP and its posting of
// rx_depth receives.
func (t *test) postRecvs() ([][]uverbs.RecvWR, error) {
	p := t.p
	wrs := make([][]uverbs.RecvWR, p.numQPs)
	for i := range wrs {
		off := (p.numQPs + i) * t.sendQPBuffSize
		n := int(p.size)
		if p.conn == connUD {
			// The GRH lands in the 40 bytes before the cache line where
			// the message starts.
			off, n = off+p.cacheLineSize-udAddition, n+udAddition
		}
		sge, _ := t.mr.SGE(off, n)
		wrs[i] = []uverbs.RecvWR{{ID: uint64(i), SGL: []uverbs.SGE{sge}}}
		for j := 0; j < t.rxPerQP(); j++ {
			if t.srq != nil {
				if _, err := t.srq.PostRecv(wrs[i]); err != nil {
					return nil, perr("Couldn't post recv SRQ = %d: counter=%d", i, j)
				}
			} else if _, err := t.qps[i].PostRecv(wrs[i]); err != nil {
				return nil, perr("Couldn't post recv Qp = %d: counter=%d", i, j)
			}
		}
	}
	return wrs, nil
}

// rxPerQP is ctx_set_recv_wqes' size_per_qp: the receives posted for each
// QP, rx_depth of its own or its share of the SRQ's.
func (t *test) rxPerQP() int {
	if t.srq != nil {
		return t.p.rxDepth / t.p.numQPs
	}
	return t.p.rxDepth
}

// repost posts QP i's receive again, to the SRQ when there is one.
func (t *test) repost(i uint64, wrs [][]uverbs.RecvWR) error {
	if t.srq != nil {
		_, err := t.srq.PostRecv(wrs[i])
		return err
	}
	_, err := t.qps[i].PostRecv(wrs[i])
	return err
}

// sendBW is send_bw.c's main after the connection.
func (t *test) sendBW(cm *comm, stdout, stderr io.Writer) error {
	p := t.p
	p.printResultHeader(stdout)
	sizes := t.sizes()
	n := int(p.iters) * p.numQPs
	tposted, tcompleted := t.stamps(n)
	for _, s := range sizes {
		p.size = s
		var wrs [][]uverbs.SendWR
		var rwrs [][]uverbs.RecvWR
		if p.server != "" {
			wrs = t.sendWRs()
		} else {
			var err error
			if rwrs, err = t.postRecvs(); err != nil {
				fmt.Fprintf(stderr, " %v\n", err)
				return failed{1}
			}
		}
		if err := cm.handshake(&t.my[0], &t.rem[0]); err != nil {
			return err
		}
		var err error
		if p.server != "" {
			err = t.runBW(wrs, tposted, tcompleted, stderr)
		} else {
			err = t.runBWServer(rwrs, tposted, tcompleted, stderr)
		}
		if err != nil {
			// send_bw.c's main returns 17 and says nothing more; what
			// run_iter_bw and run_iter_bw_server print is said, and so
			// is what ended one of our loops (--timeout, a peer gone).
			var f failed
			if !errors.As(err, &f) {
				fmt.Fprintf(stderr, " %v\n", err)
			}
			return failed{17}
		}
		p.cpuMHzWarning(stderr)
		p.printBW(stdout, p.bwReportOf(tposted, tcompleted))
		if p.runAll {
			if err := cm.handshake(&t.my[0], &t.rem[0]); err != nil {
				return err
			}
		}
	}
	if p.output == outFull {
		io.WriteString(stdout, resultLine)
	}
	return cm.closeConn(&t.my[0], &t.rem[0])
}

// runBWServer is run_iter_bw_server: receive iters messages on each QP,
// posting a receive again for each until iters were posted; the clock
// starts at the first.
func (t *test) runBWServer(rwrs [][]uverbs.RecvWR, tposted, tcompleted []int64, stderr io.Writer) error {
	p := t.p
	tot := p.iters * uint64(p.numQPs)
	posted := make([]uint64, p.numQPs)
	for i := range posted {
		posted[i] = uint64(t.rxPerQP())
	}
	var rcnt uint64
	first := true
	var wc [ctxPollBatch]uverbs.WC
	spins := 0
	dur := p.duration > 0
	if dur {
		t.durSt = stStart
		tot = 0
	}
	// The clock of a -D run starts at the first receive; until then the
	// state is START, and the run cannot end.
	for rcnt < tot || dur && (first || t.durState() != stEnd) {
		if p.events {
			if err := t.wait(); err != nil {
				return err
			}
		}
		for {
			if dur && !first && t.durState() == stEnd {
				break
			}
			ne, err := t.recvCQ.Poll(wc[:])
			if err != nil {
				fmt.Fprintf(stderr, "Poll Receive CQ failed %v\n", err)
				return failed{1}
			}
			if ne == 0 {
				if err := t.spin(&spins); err != nil {
					return err
				}
				break
			}
			if first {
				if dur {
					t.durStart(tposted, tcompleted)
				} else {
					tposted[0] = t.now()
				}
				first = false
			}
			for k := 0; k < ne; k++ {
				w := &wc[k]
				if w.Status != uverbs.WCSuccess {
					fmt.Fprint(stderr, " Completion with error at server\n")
					fmt.Fprintf(stderr, " Failed status %d: wr_id %d syndrom 0x%x\n", uint32(w.Status), int(w.ID), w.VendorErr)
					fmt.Fprintf(stderr, " rcnt=%d\n", rcnt)
					return failed{1}
				}
				rcnt++
				if dur && t.durState() == stSample {
					p.iters++
				}
				id := w.ID
				if dur || posted[id]+1 <= p.iters {
					if err := t.repost(id, rwrs); err != nil {
						fmt.Fprintf(stderr, "Couldn't post recv Qp=%d rcnt=%d\n", id, rcnt)
						return failed{15}
					}
					posted[id]++
				}
			}
		}
	}
	if !dur {
		tcompleted[0] = t.now()
	}
	return nil
}

// pollOne busy-polls cq for one completion (yielding between empty polls
// on software devices), or waits for an event first with -e.
func (t *test) pollOne(cq *uverbs.CQ, wc []uverbs.WC) error {
	if t.p.events {
		if err := t.wait(); err != nil {
			return err
		}
	}
	spins := 0
	for {
		ne, err := cq.Poll(wc[:1])
		if err != nil {
			return fmt.Errorf("poll CQ failed %w", err)
		}
		if ne > 0 {
			return nil
		}
		if t.p.events {
			if err := t.wait(); err != nil {
				return err
			}
			continue
		}
		if err := t.spin(&spins); err != nil {
			return err
		}
	}
}

// writeLat is write_lat.c after the connection, with run_iter_lat_write:
// each side writes to the other's buffer, the last byte carrying the
// message number, and waits for the other's write before its next; the
// server writes first.
func (t *test) writeLat(cm *comm, stdout, stderr io.Writer) error {
	p := t.p
	wrs := t.sendWRs()
	p.printResultHeader(stdout)
	sizes := t.sizes()
	tposted := t.latStamps()
	var wc [1]uverbs.WC
	for _, s := range sizes {
		p.size = s
		p.cpuMHzWarning(stderr)
		w := &wrs[0][0]
		w.SGL[0].Length = uint32(s)
		w.Flags = uverbs.SendSignaled
		w.Inline = nil
		if int(s) <= p.inline {
			w.Inline = t.buf[:s]
		}
		postIdx := int(s) - 1
		pollIdx := p.numQPs*t.bs + int(s) - 1
		var scnt, ccnt, rcnt uint64
		spins := 0
		dur := p.duration > 0
		if dur {
			t.durStart(tposted, tposted[1:])
		}
		for scnt < p.iters || ccnt < p.iters || rcnt < p.iters || dur && t.durState() != stEnd {
			if (rcnt < p.iters || dur) && !(scnt < 1 && p.server == "") {
				rcnt++
				for loadByte(t.buf, pollIdx) != byte(rcnt) && !(dur && t.durState() == stEnd) {
					if err := t.spin(&spins); err != nil {
						return err
					}
				}
			}
			if scnt < p.iters || dur {
				if !dur {
					tposted[scnt] = t.now()
				}
				scnt++
				t.buf[postIdx] = byte(scnt)
				if _, err := t.qps[0].PostSend(wrs[0]); err != nil {
					fmt.Fprintf(stderr, "Couldn't post send: scnt=%d\n", scnt)
					return failed{1}
				}
			}
			if dur && t.durState() == stEnd {
				break
			}
			if ccnt < p.iters || dur {
				if err := t.pollOne(t.sendCQ, wc[:]); err != nil {
					return err
				}
				if wc[0].Status != uverbs.WCSuccess {
					return t.failSend(stderr, &wc[0], scnt, ccnt)
				}
				ccnt++
				if dur && t.durState() == stSample {
					p.iters++
				}
			}
		}
		p.cpuMHzWarning(stderr)
		p.printLatReport(stdout, tposted)
	}
	if p.output == outFull {
		io.WriteString(stdout, resultLine)
	}
	return nil
}

// latStamps are a latency run's post times; a -D run keeps its
// sample's start and end (tposted[0] and tcompleted[0] in perftest).
func (t *test) latStamps() []int64 {
	if t.p.duration > 0 {
		return make([]int64, 2)
	}
	return make([]int64, t.p.iters)
}

// printLatReport is print_report_lat, or print_report_lat_duration after
// a -D run: the sample's time over what completed in it.
func (p *params) printLatReport(w io.Writer, tposted []int64) {
	if p.duration == 0 {
		p.printLat(w, tposted)
		return
	}
	rtt := 2.0
	if p.verb == verbRead || p.verb == verbAtomic {
		rtt = 1
	}
	sample := float64(tposted[1] - tposted[0])
	lat := sample / cyclesPerUsec / rtt / float64(p.iters)
	tps := float64(p.iters) / (sample / (cyclesPerUsec * 1e6))
	if p.output == outLat {
		fmt.Fprintf(w, "%f\n", lat)
		return
	}
	fmt.Fprintf(w, " %-7d       %d            %-7.2f        %-7.2f\n", p.size, p.iters, lat, tps)
}

// loadByte reads b[i] with an atomic load of the aligned word that holds
// it, so that a loop waiting for the peer's RDMA write sees it change.
func loadByte(b []byte, i int) byte {
	w := i &^ 3
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[w])))
	var x [4]byte
	binary.NativeEndian.PutUint32(x[:], v)
	return x[i-w]
}

// sendLat is send_lat.c after the connection, with run_iter_lat_send: a
// ping-pong of sends, the client first.
func (t *test) sendLat(cm *comm, stdout, stderr io.Writer) error {
	p := t.p
	p.printResultHeader(stdout)
	wrs := t.sendWRs()
	sizes := t.sizes()
	tposted := t.latStamps()
	var wc [1]uverbs.WC
	for _, s := range sizes {
		p.size = s
		rwrs, err := t.postRecvs()
		if err != nil {
			fmt.Fprintf(stderr, " %v\n", err)
			return failed{1}
		}
		if err := cm.handshake(&t.my[0], &t.rem[0]); err != nil {
			return err
		}
		p.cpuMHzWarning(stderr)
		w := &wrs[0][0]
		w.SGL[0].Length = uint32(s)
		w.Flags = 0
		w.Inline = nil
		if int(s) <= p.inline {
			w.Inline = t.buf[:s]
		}
		var scnt, rcnt uint64
		dur := p.duration > 0
		first := true // a -D run's clock starts at the first receive
		for scnt < p.iters || rcnt < p.iters || dur && (first || t.durState() != stEnd) {
			if (rcnt < p.iters || dur) && !(scnt < 1 && p.server != "") {
				got, err := t.pollUntilEnd(t.recvCQ, wc[:], dur && !first)
				if err != nil {
					return err
				}
				if !got {
					break
				}
				if first {
					if dur {
						t.durStart(tposted, tposted[1:])
					}
					first = false
				}
				if wc[0].Status != uverbs.WCSuccess {
					fmt.Fprint(stderr, " Completion with error at server\n")
					fmt.Fprintf(stderr, " Failed status %d: wr_id %d syndrom 0x%x\n", uint32(wc[0].Status), int(wc[0].ID), wc[0].VendorErr)
					fmt.Fprintf(stderr, " rcnt=%d\n", rcnt)
					return failed{1}
				}
				rcnt++
				if dur && t.durState() == stSample {
					p.iters++
				}
				if dur || rcnt+uint64(t.rxPerQP()) <= p.iters {
					if err := t.repost(wc[0].ID, rwrs); err != nil {
						fmt.Fprintf(stderr, "Couldn't post recv: rcnt=%d\n", rcnt)
						return failed{15}
					}
				}
			}
			if scnt < p.iters || dur && (first || t.durState() != stEnd) {
				if !dur {
					tposted[scnt] = t.now()
				}
				scnt++
				signal := scnt%uint64(p.cqMod) == 0 || !dur && scnt == p.iters
				if signal {
					w.Flags |= uverbs.SendSignaled
				}
				if dur && !first && t.durState() == stEnd {
					break
				}
				if _, err := t.qps[0].PostSend(wrs[0]); err != nil {
					fmt.Fprintf(stderr, "Couldn't post send: scnt=%d \n", scnt)
					return failed{1}
				}
				if signal {
					if err := t.pollOne(t.sendCQ, wc[:]); err != nil {
						return err
					}
					if wc[0].Status != uverbs.WCSuccess {
						return t.failSend(stderr, &wc[0], scnt, scnt)
					}
					w.Flags &^= uverbs.SendSignaled
				}
			}
		}
		p.cpuMHzWarning(stderr)
		p.printLatReport(stdout, tposted)
	}
	if p.output == outFull {
		io.WriteString(stdout, resultLine)
	}
	return cm.closeConn(&t.my[0], &t.rem[0])
}

// pollUntilEnd is pollOne that, when untilEnd, gives up (false) once a
// -D run has ended: run_iter_lat_send's receive poll.
func (t *test) pollUntilEnd(cq *uverbs.CQ, wc []uverbs.WC, untilEnd bool) (bool, error) {
	if !untilEnd {
		return true, t.pollOne(cq, wc)
	}
	if t.p.events {
		if err := t.wait(); err != nil {
			return false, err
		}
	}
	spins := 0
	for {
		ne, err := cq.Poll(wc[:1])
		if err != nil {
			return false, perr("poll CQ failed %w", err)
		}
		if ne > 0 {
			return true, nil
		}
		if t.durState() == stEnd {
			return false, nil
		}
		if err := t.spin(&spins); err != nil {
			return false, err
		}
	}
}

// readLat is read_lat.c and atomic_lat.c after the connection, with
// run_iter_lat: the client reads (or does its atomic) and waits for each;
// the server only waits for the client's end.
func (t *test) readLat(cm *comm, stdout, stderr io.Writer) error {
	p := t.p
	if p.server == "" {
		if err := cm.closeConn(&t.my[0], &t.rem[0]); err != nil {
			return err
		}
		if p.output == outFull {
			io.WriteString(stdout, resultLine)
		}
		return nil
	}
	p.printResultHeader(stdout)
	wrs := t.sendWRs()
	sizes := t.sizes()
	tposted := t.latStamps()
	var wc [1]uverbs.WC
	for _, s := range sizes {
		p.size = s
		p.cpuMHzWarning(stderr)
		w := &wrs[0][0]
		if p.verb == verbRead {
			w.SGL[0].Length = uint32(s)
		}
		w.Flags = uverbs.SendSignaled
		dur := p.duration > 0
		if dur {
			t.durStart(tposted, tposted[1:])
		}
		for scnt := uint64(0); scnt < p.iters || dur && t.durState() != stEnd; {
			if !dur {
				tposted[scnt] = t.now()
			}
			scnt++
			if _, err := t.qps[0].PostSend(wrs[0]); err != nil {
				fmt.Fprintf(stderr, "Couldn't post send: scnt=%d\n", scnt)
				return failed{17}
			}
			if dur && t.durState() == stEnd {
				break
			}
			if err := t.pollOne(t.sendCQ, wc[:]); err != nil {
				return err
			}
			if wc[0].Status != uverbs.WCSuccess {
				t.failSend(stderr, &wc[0], scnt, scnt)
				return failed{17}
			}
			if dur && t.durState() == stSample {
				p.iters++
			}
		}
		p.cpuMHzWarning(stderr)
		p.printLatReport(stdout, tposted)
	}
	if err := cm.closeConn(&t.my[0], &t.rem[0]); err != nil {
		return err
	}
	if p.output == outFull {
		io.WriteString(stdout, resultLine)
	}
	return nil
}
