package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"syscall"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
)

// timeoutForever is what Send writes into timeout_ms for a negative
// timeout: libibumad's -1. The kernel converts timeout_ms with
// msecs_to_jiffies, which maps every value that is negative as a C int
// (≥ 2³¹) to MAX_JIFFY_OFFSET, so such a request waits until its response
// arrives, its agent is unregistered or the port is closed.
const timeoutForever = math.MaxUint32

// timeoutMs converts Send's timeout to the header's timeout_ms.
func timeoutMs(d time.Duration) uint32 {
	switch {
	case d == 0:
		return 0
	case d < 0:
		return timeoutForever
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond // round up: 1ns is not 0
	if ms >= 1<<31 {
		return timeoutForever // the kernel would wait for ever anyway
	}
	return uint32(ms)
}

// Send sends the packet's MAD from an agent (umad_send) to the packet's
// address. It fills the header's agent id, timeout and retries, so the
// packet keeps them.
//
// timeout says whether the MAD is a request that expects a response:
//   - 0: unsolicited (a response, a trap, a send-only agent's MAD): nothing
//     comes back;
//   - > 0: the kernel waits that long (rounded up to milliseconds) for the
//     response, resends the request retries times, and once all retries
//     are spent hands the request back through Recv with Status ETIMEDOUT
//     (the response, when it comes, arrives through Recv as usual);
//   - < 0: wait for ever: timeout_ms is 0xFFFFFFFF, libibumad's -1, which
//     the kernel turns into an unbounded wait; retries are then moot. The
//     request stays pending until its response arrives, the agent is
//     unregistered or the port is closed (timeouts of 2³¹ ms and more are
//     the same to the kernel).
//
// For a request the kernel replaces the upper 32 bits of the TID with the
// agent's own value, so that the response finds its way back; only the
// lower 32 bits are the caller's.
//
// The MAD must be at least 36 bytes (the kernel's minimum) and, without
// kernel RMPP, at most 256. Errors carry the kernel's errno: EIO for an
// agent that is not registered, ETIMEDOUT (after about a second) for a
// RoCE destination GID whose neighbour does not resolve, and EINVAL
// (Linux drivers/infiniband/core/user_mad.c, ib_umad_write, and mad.c,
// ib_post_send_mad) when:
//   - the MAD is shorter than 36 bytes, or longer than 256 without kernel
//     RMPP, or its RMPP header is invalid for the agent;
//   - the agent id is 32 or more, or the class and the agent do not fit
//     (a directed-route SMP on a port without QP0, …);
//   - a request's TID and class equal those of a request of this port
//     still pending (is_duplicate: "reject the second as a duplicate");
//   - a response's TID and class equal those of a response to the same
//     destination still on the port's send list (is_duplicate with
//     same_destination). This is what answering a retransmitted request
//     gives while the first answer is still being sent: the requester
//     will get that first answer, so a replier should count the request
//     as already answered and go on (see umad serve in cmd/purerdma).
func (p *Port) Send(agent AgentID, pkt *Packet, timeout time.Duration, retries int) error {
	if p == nil {
		return errNil("Port.Send")
	}
	if err := p.checkSend(agent, pkt, retries); err != nil {
		return errs.New("send", p.name, err)
	}
	pkt.hdr.AgentID = uint32(agent)
	pkt.hdr.TimeoutMs = timeoutMs(timeout)
	pkt.hdr.Retries = uint32(retries)
	pkt.hdr.Status = 0
	b, err := pkt.wire(int(p.hdr.Load()))
	if err != nil {
		return errs.New("send", p.name, invalid(err.Error()))
	}
	if debugOn(2) {
		logDebug("umad: send", slog.String("port", p.name), slog.String("packet", pkt.String()))
	}
	n, err := p.fd.Write(b)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrClosed):
			err = errClosed
		case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
			err = detail(nil, "the kernel could not build an address handle for the destination "+
				"(on RoCE: nothing answered the neighbour lookup for its GID)", err)
		case errors.Is(err, syscall.EINVAL):
			err = detail(nil, p.refusedSend(pkt), err)
		}
		if debugOn(1) {
			logDebug("umad: send failed", slog.String("port", p.name), slog.Any("err", err))
		}
		return errs.New("send", p.name, err)
	}
	if n != len(b) {
		return errs.New("send", p.name, detail(nil, fmt.Sprintf("short write: %d of %d bytes", n, len(b)), syscall.EIO))
	}
	return nil
}

// refusedSend says why the kernel answers EINVAL to a MAD that passed
// checkSend: on RoCE, a MAD without a GRH (no address handle without
// one); otherwise most often is_duplicate (user_mad.c), which refuses a
// request whose TID and class equal those of a request of the port still
// outstanding, and a response whose TID and class equal those of a
// response to the same destination still being sent.
func (p *Port) refusedSend(pkt *Packet) string {
	if p.linkLayer == rdma.LinkLayerEthernet && !pkt.hdr.GRHPresent {
		return "a MAD on a RoCE port needs a GRH: Packet.SetGRH with the destination's GID"
	}
	mad := pkt.MAD()
	if len(mad) < 16 {
		return ""
	}
	class, tid := mad[1], binary.BigEndian.Uint64(mad[8:16])
	if mad[3]&0x80 == 0 { // a request
		return fmt.Sprintf("duplicate TID: a request of class %s with TID %#x is still outstanding on this port; "+
			"use a fresh TID per request (if the TID is fresh: the class does not fit the agent, or the RMPP header is invalid)",
			hex8(class), tid&0xffffffff)
	}
	return fmt.Sprintf("duplicate TID: a response of class %s with TID %#x to the same destination is still being sent "+
		"(the requester retransmitted); count the request as answered", hex8(class), tid)
}

func (p *Port) checkSend(agent AgentID, pkt *Packet, retries int) error {
	switch {
	case pkt == nil:
		return invalid("nil packet")
	case agent >= maxAgents:
		return invalid(fmt.Sprintf("agent id %d is not below 32", agent))
	case retries < 0 || int64(retries) > math.MaxUint32:
		return invalid(fmt.Sprintf("retries %d out of range", retries))
	case pkt.n < pktMinSend:
		return invalid(fmt.Sprintf("a MAD of %d bytes; the kernel needs at least %d", pkt.n, pktMinSend))
	case p.hdr.Load() == 56 && pkt.hdr.PKeyIndex != 0:
		return invalid("P_Key index set, but the port uses the 56-byte header, which has none")
	}
	return nil
}

// Recv receives one MAD into pkt (umad_recv) and returns the id of the
// agent it was received for. The packet's Status tells a received MAD
// (0) from a request of this port that timed out (ETIMEDOUT); its Addr is
// the sender's address, so the packet can be sent straight back as the
// response once its MAD is edited.
//
// timeout < 0 blocks until a MAD arrives; 0 does not block and returns an
// error matching ErrWouldBlock (and syscall.EAGAIN) when nothing is queued
// or another receive holds the port; > 0 waits at most that long and then
// returns an error matching ErrTimeout (syscall.ETIMEDOUT,
// os.ErrDeadlineExceeded). Close unblocks it with an error matching
// os.ErrClosed; a removed device gives EIO.
//
// When the MAD is an RMPP message larger than the packet (the kernel says
// ENOSPC and leaves it queued), Recv grows the packet to the size the
// kernel reports and reads again. Once pkt is large enough, Recv does not
// allocate.
func (p *Port) Recv(pkt *Packet, timeout time.Duration) (AgentID, error) {
	if p == nil {
		return 0, errNil("Port.Recv")
	}
	if pkt == nil {
		return 0, errs.New("receive", p.name, invalid("nil packet"))
	}
	if timeout == 0 {
		if !p.rmu.TryLock() {
			return 0, errs.New("receive", p.name, ErrWouldBlock)
		}
		id, err := p.recv(pkt, true)
		p.rmu.Unlock()
		if err != nil {
			return 0, errs.New("receive", p.name, err)
		}
		return id, nil
	}
	p.rmu.Lock()
	defer p.rmu.Unlock()
	if id, done, err := p.recvQueued(pkt); done {
		if err != nil {
			return 0, errs.New("receive", p.name, err)
		}
		return id, nil
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	p.setDeadline(deadline)
	id, err := p.recv(pkt, false)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = ErrTimeout
		}
		return 0, errs.New("receive", p.name, err)
	}
	return id, nil
}

// RecvContext is Recv that waits until a MAD arrives, ctx is done (the
// error then wraps ctx.Err()) or the port is closed. With a ctx that is
// never done and has no deadline it does not allocate.
func (p *Port) RecvContext(ctx context.Context, pkt *Packet) (AgentID, error) {
	if p == nil {
		return 0, errNil("Port.RecvContext")
	}
	if pkt == nil || ctx == nil {
		return 0, errs.New("receive", p.name, invalid("nil packet or context"))
	}
	p.rmu.Lock()
	defer p.rmu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, errs.New("receive", p.name, err)
	}
	if id, done, err := p.recvQueued(pkt); done {
		if err != nil {
			return 0, errs.New("receive", p.name, err)
		}
		return id, nil
	}
	deadline, _ := ctx.Deadline()
	p.setDeadline(deadline)
	var stop func() bool
	if ctx.Done() != nil {
		p.dlMu.Lock()
		gen := p.dlGen
		p.dlMu.Unlock()
		stop = context.AfterFunc(ctx, func() {
			p.dlMu.Lock()
			defer p.dlMu.Unlock()
			if p.dlGen != gen {
				return // that receive is over
			}
			// A deadline in the past wakes the read (a real descriptor's
			// through the runtime poller, a fake's through sys.Waiter).
			_ = p.fd.SetReadDeadline(time.Unix(1, 0))
		})
	}
	id, err := p.recv(pkt, false)
	if stop != nil {
		p.dlMu.Lock()
		p.dlGen++
		p.dlMu.Unlock()
		stop()
		p.dlSet = true // the wake-up may have moved the deadline
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if cerr := ctx.Err(); cerr != nil {
				err = cerr
			} else if !deadline.IsZero() {
				// The deadline set is ctx's own: the read may see it
				// pass a moment before ctx's timer fires.
				err = context.DeadlineExceeded
			}
		}
		return 0, errs.New("receive", p.name, err)
	}
	return id, nil
}

// recvQueued reads a MAD already queued, until a receive of the port
// first has to wait; done is false when it did not read (nothing queued,
// or the port has waited before). Caller holds rmu.
//
// A waiting read joins the descriptor to the runtime poller: at a
// program's first wait that is the poller's epoll set and eventfd, then
// the descriptor's epoll_ctl ADD, and DEL at Close. A MAD is often queued
// before the receive starts (the kernel's MAD layer answers a class no
// agent serves during the send), and a tool that sends one request never
// needs the poller then: ib_umad_read gives the MAD, as umad_recv's read
// after its poll(2) does. Once a receive has waited, reads go through the
// poller, which tries the read before it waits.
func (p *Port) recvQueued(pkt *Packet) (id AgentID, done bool, err error) {
	if p.waits {
		return 0, false, nil
	}
	id, err = p.recv(pkt, true)
	if err == ErrWouldBlock {
		p.waits = true
		return 0, false, nil
	}
	return id, true, err
}

// setDeadline sets the descriptor's read deadline for the receive about
// to start, skipping the call when there is none to set or clear. Caller
// holds rmu.
func (p *Port) setDeadline(t time.Time) {
	if t.IsZero() && !p.dlSet {
		return
	}
	_ = p.fd.SetReadDeadline(t)
	p.dlSet = !t.IsZero()
}

// maxGrow bounds the ENOSPC-grow-and-reread loop.
const maxGrow = 4

// recv does one receive, growing pkt on ENOSPC. Caller holds rmu. The
// error is the cause, untranslated except for closed ports and EAGAIN.
func (p *Port) recv(pkt *Packet, nonblocking bool) (AgentID, error) {
	hs := int(p.hdr.Load())
	pkt.room(pktMAD) // the kernel needs room for at least one whole MAD
	for tries := 0; ; tries++ {
		b := pkt.buf[pktSlot-hs:]
		var n int
		var err error
		if nonblocking {
			n, err = p.fd.ReadNonblocking(b)
		} else {
			n, err = p.fd.Read(b)
		}
		if err == nil {
			if n < hs {
				return 0, detail(nil, fmt.Sprintf("short read: %d bytes", n), syscall.EIO)
			}
			_ = pkt.hdr.Decode(b, hs)
			pkt.n = n - hs
			if debugOn(2) {
				logDebug("umad: received", slog.String("port", p.name), slog.String("packet", pkt.String()))
			}
			return AgentID(pkt.hdr.AgentID), nil
		}
		switch {
		case errors.Is(err, syscall.ENOSPC) && tries < maxGrow:
			// The header holds the message's full length; the record is
			// still queued, and this receive still owns the port.
			var full uint32
			if len(b) >= 20 {
				full = uint32(b[16]) | uint32(b[17])<<8 | uint32(b[18])<<16 | uint32(b[19])<<24
			}
			size := int(full) - hs
			if size <= len(b)-hs || size > pktMaxMAD {
				return 0, detail(nil, fmt.Sprintf("the kernel reports a %d-byte message", full), syscall.ENOSPC)
			}
			if debugOn(1) {
				logDebug("umad: growing packet for an RMPP message", slog.String("port", p.name), slog.Int("bytes", size))
			}
			pkt.room(size)
			nonblocking = true
			continue
		case errors.Is(err, syscall.EAGAIN):
			return 0, ErrWouldBlock
		case errors.Is(err, os.ErrClosed):
			return 0, errClosed
		}
		return 0, err
	}
}

// Poll waits until a MAD can be received (umad_poll): nil once one is
// queued. timeout < 0 waits for ever; 0 only looks, with poll(2) and a
// zero timeout, and returns at once; > 0 waits at most that long. When
// nothing is queued in time (with 0: now, or another receive holds the
// port) the error matches ErrTimeout. Like umad_poll it does not promise
// that the next Recv finds the MAD when other goroutines receive too: use
// Recv with timeout 0 for that. A removed device gives an error matching
// EIO; Close, one matching os.ErrClosed.
func (p *Port) Poll(timeout time.Duration) error {
	if p == nil {
		return errNil("Port.Poll")
	}
	var err error
	if timeout == 0 {
		if !p.rmu.TryLock() {
			return errs.New("poll", p.name, ErrTimeout)
		}
		var ok bool
		ok, err = p.fd.Readable()
		p.rmu.Unlock()
		if err == nil && !ok {
			err = ErrTimeout
		}
	} else {
		p.rmu.Lock()
		var deadline time.Time
		if timeout > 0 {
			deadline = time.Now().Add(timeout)
		}
		p.setDeadline(deadline)
		err = p.fd.WaitReadable()
		p.rmu.Unlock()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = ErrTimeout
	case errors.Is(err, os.ErrClosed):
		err = errClosed
	}
	return errs.New("poll", p.name, err)
}
