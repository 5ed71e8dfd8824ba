package umadmodel

// write(), read() and the wire between the ports of a fabric.

import (
	"encoding/binary"
	"os"
	"syscall"
	"time"

	"github.com/purerdma/rdma/abi"
)

// umadRecord is one entry of a file's recv_list (struct ib_umad_packet): a
// received MAD, or a send that timed out.
type umadRecord struct {
	hdr    abi.MadHdr // received: filled by recv_handler
	raw    []byte     // send records: the header as written, status patched
	data   []byte     // the MAD (received) or its first 24 bytes (send)
	isSend bool
}

// umadSend is one entry of a file's send_list: a MAD the kernel still
// owns, here only requests waiting for their response.
type umadSend struct {
	fab      *Fabric
	file     *File
	agent    *umadAgent
	raw      []byte // the header as written
	hdr      abi.MadHdr
	mad      []byte // the MAD as sent (TID rewritten)
	tid      uint64
	class    uint8
	response bool
	timeout  time.Duration
	retries  uint32
	sentAt   time.Time // when the last try went on the wire
	active   bool
	armed    bool // timer is set and has not fired
	timer    *time.Timer
}

// Pools, so that steady-state traffic does not allocate. Callers hold
// fab.mu.

func (fab *Fabric) getRecord() *umadRecord {
	if n := len(fab.recFree); n > 0 {
		r := fab.recFree[n-1]
		fab.recFree = fab.recFree[:n-1]
		return r
	}
	return &umadRecord{data: make([]byte, 0, umadMADSize)}
}

func (fab *Fabric) putRecord(r *umadRecord) {
	r.raw, r.data, r.isSend = r.raw[:0], r.data[:0], false
	fab.recFree = append(fab.recFree, r)
}

func (fab *Fabric) getSend() *umadSend {
	if n := len(fab.sndFree); n > 0 {
		s := fab.sndFree[n-1]
		fab.sndFree = fab.sndFree[:n-1]
		return s
	}
	s := &umadSend{fab: fab, mad: make([]byte, 0, umadMADSize)}
	return s
}

// finish retires a send: its timer is stopped and, when no timer callback
// can still be running for it, it goes back to the pool.
func (fab *Fabric) finish(s *umadSend) {
	s.active = false
	s.file, s.agent = nil, nil
	if s.armed {
		s.armed = false
		if !s.timer.Stop() {
			return // the callback is pending; it sees !active and pools s
		}
	}
	fab.sndFree = append(fab.sndFree, s)
}

// Write implements sys.Backend: ib_umad_write, checks in the kernel's
// order, then the send.
func (f *File) Write(p []byte) (int, error) {
	fab := f.port.fab
	fab.mu.Lock()
	defer fab.mu.Unlock()
	hs := f.hdrSize()
	if len(p) < hs+umadRMPPHdr {
		return 0, syscall.EINVAL
	}
	var h abi.MadHdr
	_ = h.Decode(p, hs)
	if h.AgentID >= umadMaxAgents {
		return 0, syscall.EINVAL
	}
	a := f.agent(h.AgentID)
	if a == nil {
		return 0, syscall.EIO
	}
	// rdma_create_user_ah: a RoCE address handle needs a GRH, and the
	// destination GID's neighbour must resolve (ETIMEDOUT when nothing
	// answers the neighbour solicitation; the model answers at once).
	if f.port.cfg.LinkLayer == Ethernet {
		if !h.GRHPresent {
			return 0, syscall.EINVAL
		}
		if !fab.knownGID(h.GID) {
			return 0, syscall.ETIMEDOUT
		}
	}
	mad := p[hs:]
	class := mad[1]
	if len(mad) < umadDataOffset(class) {
		return 0, syscall.EINVAL
	}
	active := umadIsRMPPClass(class) && mad[26]&umadRMPPFlagActive != 0
	rmppActive := active && a.kernelRMPP()
	// ib_create_send_mad: without kernel RMPP a MAD is at most 256 bytes.
	if !rmppActive && len(mad) > umadMADSize {
		return 0, syscall.EINVAL
	}

	s := fab.getSend()
	s.file, s.agent, s.class, s.active = f, a, class, true
	s.raw = append(s.raw[:0], p[:hs]...)
	s.hdr = h
	s.mad = append(s.mad[:0], mad...)
	s.response = umadIsResponse(s.mad)
	s.tid = binary.BigEndian.Uint64(s.mad[8:16])
	if !s.response {
		s.tid = uint64(a.hiTID)<<32 | s.tid&0xffffffff
		binary.BigEndian.PutUint64(s.mad[8:16], s.tid)
	}
	// is_duplicate, skipped only for user-RMPP data segments.
	if !(active && !a.kernelRMPP()) && f.isDuplicate(s) {
		fab.finish(s)
		return 0, syscall.EINVAL
	}

	// A request with a timeout stays on the send list until its
	// response or its last timeout; anything else completes at once.
	if h.TimeoutMs != 0 {
		s.retries = h.Retries
		f.sends = append(f.sends, s)
		if h.TimeoutMs < umadForever {
			s.timeout = time.Duration(h.TimeoutMs) * time.Millisecond
			s.arm()
		}
		s.sentAt = time.Now()
		fab.transmit(f.port, a, &s.hdr, s.mad)
		return len(p), nil
	}
	fab.transmit(f.port, a, &s.hdr, s.mad)
	fab.finish(s)
	return len(p), nil
}

// isDuplicate is user_mad.c's is_duplicate. Caller holds fab.mu.
func (f *File) isDuplicate(s *umadSend) bool {
	for _, sent := range f.sends {
		if sent.tid != s.tid || sent.class != s.class {
			continue
		}
		if !s.response {
			if !sent.response {
				return true
			}
			continue
		} else if !sent.response {
			continue
		}
		if umadSameDestination(&s.hdr, &sent.hdr) {
			return true
		}
	}
	return false
}

func umadSameDestination(a, b *abi.MadHdr) bool {
	if !a.GRHPresent && !b.GRHPresent {
		return a.LID == b.LID
	}
	if a.GRHPresent && b.GRHPresent {
		return a.GID == b.GID
	}
	return false
}

func (s *umadSend) arm() {
	s.armed = true
	if s.timer == nil {
		s.timer = time.AfterFunc(s.timeout, s.expire)
	} else {
		s.timer.Reset(s.timeout)
	}
}

// expire is timeout_sends: resend while retries are left, then hand the
// send back to the file as a header-only record with status ETIMEDOUT.
// A wire that answers every request it handles (StallWire) can hold the
// timeout off while it is silent.
func (s *umadSend) expire() {
	fab := s.fab
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if !s.active {
		fab.sndFree = append(fab.sndFree, s) // finish left it to us
		return
	}
	s.armed = false
	if w, ok := fab.wire.(StallWire); ok && w.Stalled(s.file.port, s.sentAt) {
		s.arm() // the network has not run since this try went out
		return
	}
	s.timedOut()
}

// timedOut is one try of s that came to nothing: the next try while
// retries are left, else the send's end. Caller holds fab.mu; s is
// active and its timer is not armed.
func (s *umadSend) timedOut() {
	fab := s.fab
	if s.retries > 0 {
		s.retries--
		s.arm()
		s.sentAt = time.Now()
		fab.transmit(s.file.port, s.agent, &s.hdr, s.mad)
		return
	}
	f := s.file
	for i, x := range f.sends {
		if x == s {
			f.sends = append(f.sends[:i], f.sends[i+1:]...)
			break
		}
	}
	// send_handler: packet->length = IB_MGMT_MAD_HDR; status = ETIMEDOUT;
	// queued only while the agent is still registered.
	if f.agent(s.agent.id) == s.agent {
		r := fab.getRecord()
		r.isSend = true
		r.raw = append(r.raw[:0], s.raw...)
		binary.LittleEndian.PutUint32(r.raw[4:8], uint32(syscall.ETIMEDOUT))
		r.data = append(r.data[:0], s.mad[:umadMADHdr]...)
		f.recv.push(r)
		f.signal()
	}
	s.active = false
	s.file, s.agent = nil, nil
	fab.sndFree = append(fab.sndFree, s)
}

// knownGID reports whether a port of the fabric, present or removed, has
// the GID: the network under a RoCE GID outlives its RDMA device. Caller
// holds fab.mu.
func (fab *Fabric) knownGID(gid [16]byte) bool {
	for _, p := range fab.ports {
		if p.cfg.GID == gid {
			return true
		}
	}
	return false
}

// route finds the port a MAD addressed by h reaches. Caller holds fab.mu.
func (fab *Fabric) route(h *abi.MadHdr) *Port {
	for _, p := range fab.ports {
		if p.removed {
			continue
		}
		if h.GRHPresent {
			if p.cfg.GID == h.GID {
				return p
			}
		} else if p.cfg.LID == h.LID && p.cfg.LinkLayer == InfiniBand {
			return p
		}
	}
	return nil
}

// transmit puts one MAD on the wire from agent a of port src. Caller
// holds fab.mu.
func (fab *Fabric) transmit(src *Port, a *umadAgent, h *abi.MadHdr, mad []byte) {
	src.sent++
	if fab.wire != nil {
		fab.wire.Transmit(src, a.qpn, h, mad)
		return
	}
	dst := fab.route(h)
	if dst == nil {
		return // nobody there: lost
	}
	fab.arrive(dst, src.cfg.LID, src.cfg.GID, a.qpn, h, mad)
}

// Wire carries the MADs of a fabric's ports to a network outside the
// fabric (ibsim's, for umad's simulator transport) instead of between
// the fabric's own ports. What comes back from the network enters
// through Deliver and Fail.
type Wire interface {
	// Transmit puts mad, sent from QP srcQPN of port src to the address
	// in h, on the network. It is called with the fabric's lock held: it
	// must not block for long nor call back into the fabric.
	Transmit(src *Port, srcQPN uint32, h *abi.MadHdr, mad []byte)
}

// StallWire is a Wire to a network that answers every request it
// handles, if only to say it dropped it (Fail): ibsim, which a stopped or
// busy process can hold up for seconds. Silence from it is a stall, not a
// lost MAD, so a request's timeout waits while it lasts.
type StallWire interface {
	Wire
	// Stalled reports whether the network has stayed silent since
	// since (when a try of a request from src went out) while still
	// being there: the try's timeout then starts again, without a
	// resend. Called with the fabric's lock held: it must not block.
	Stalled(src *Port, since time.Time) bool
}

// SetWire makes w carry every MAD the fabric's ports send, from now on.
func (fab *Fabric) SetWire(w Wire) {
	fab.mu.Lock()
	fab.wire = w
	fab.mu.Unlock()
}

// Deliver is a MAD arriving at port dst's QP dqpn from the network, sent
// by QP srcQPN of the port whose LID is srcLID. From there it goes as any
// MAD does: a response to the agent waiting for it, a request to the
// agent registered for it; a mad shorter than a MAD header is dropped.
// A mad shorter than 256 bytes keeps its length: a read of it returns
// that many bytes after the header, as libumad2sim's read does with the
// length ibsim's packet carries (a MAD OpenSM wrote shorter, such as an
// SA response with few records).
func (fab *Fabric) Deliver(dst *Port, srcLID uint16, srcQPN, dqpn uint32, mad []byte) {
	if len(mad) < umadMADHdr || len(mad) > umadMADSize {
		return
	}
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if dst.removed {
		return
	}
	h := abi.MadHdr{QPN: dqpn, LID: dst.cfg.LID}
	fab.arriveLen(dst, srcLID, [16]byte{}, srcQPN, &h, mad, true)
}

// Fail is the network's word that the request mad (as sent by port src)
// was not delivered (ibsim answers an unroutable one, and one a port's
// error rate drops, with status ETIMEDOUT at once): that try came to
// nothing, as if its timeout had passed, so the next try goes at once
// while retries are left, and then the request comes back to its agent
// timed out. A request without a timeout (it waits for ever) is resent
// while retries are left, and otherwise waits on.
func (fab *Fabric) Fail(src *Port, mad []byte) {
	if len(mad) < umadMADHdr || umadIsResponse(mad) {
		return
	}
	fab.mu.Lock()
	defer fab.mu.Unlock()
	tid := binary.BigEndian.Uint64(mad[8:16])
	a := fab.byTID[uint32(tid>>32)]
	if a == nil || a.file.port != src {
		return
	}
	for _, s := range a.file.sends {
		if s.agent != a || s.tid != tid || s.class != mad[1] || s.response {
			continue
		}
		switch {
		case s.armed:
			if !s.timer.Stop() {
				return // its timeout is being handled: that is the next try
			}
			s.armed = false
			s.timedOut()
		case s.retries > 0:
			s.retries--
			s.sentAt = time.Now()
			fab.transmit(src, a, &s.hdr, s.mad)
		}
		return
	}
}

// arrive is ib_mad_recv_done on port dst for a MAD that src sent from QP
// srcQPN to the QP h.QPN. Caller holds fab.mu.
func (fab *Fabric) arrive(dst *Port, srcLID uint16, srcGID [16]byte, srcQPN uint32, h *abi.MadHdr, mad []byte) {
	fab.arriveLen(dst, srcLID, srcGID, srcQPN, h, mad, false)
}

// arriveLen is arrive; with keepLen a MAD shorter than 256 bytes is
// queued at its length instead of padded to a whole MAD (Deliver).
func (fab *Fabric) arriveLen(dst *Port, srcLID uint16, srcGID [16]byte, srcQPN uint32, h *abi.MadHdr, mad []byte, keepLen bool) {
	dqpn := h.QPN
	switch {
	case dqpn == 0 && !dst.hasSMI(), dqpn == 1 && dst.cfg.NoGSI, dqpn > 1:
		return // no such QP here (UD QPs other than 0 and 1 are not modelled)
	}
	// validate_mad: IB base version; SMPs only on QP0, GSI MADs only on QP1.
	if mad[0] != 1 || umadIsSMP(mad[1]) != (dqpn == 0) {
		return
	}
	var a *umadAgent
	response := umadIsResponse(mad)
	if response {
		// Routing by the high 32 bits of the TID, then ib_find_send_mad:
		// a response nobody waits for is dropped.
		tid := binary.BigEndian.Uint64(mad[8:16])
		a = fab.byTID[uint32(tid>>32)]
		if a == nil || a.file.port != dst {
			return
		}
		var s *umadSend
		f := a.file
		for i, x := range f.sends {
			if x.agent == a && x.tid == tid && x.class == mad[1] && !x.response {
				s = x
				f.sends = append(f.sends[:i], f.sends[i+1:]...)
				break
			}
		}
		if s == nil {
			return
		}
		fab.finish(s)
	} else {
		a = dst.find(dqpn, mad)
		if a == nil {
			if m := mad[3]; m == umadMethodGet || m == umadMethodSet {
				fab.unmatched(dst, srcLID, srcGID, dqpn, srcQPN, h, mad)
			}
			return
		}
	}
	f := a.file
	if f.recv.n > umadMaxRecvList {
		return
	}
	if len(mad) > umadMADSize && !a.kernelRMPP() {
		return // RMPP segments for a user-RMPP agent are not modelled
	}
	r := fab.getRecord()
	r.data = append(r.data[:0], mad...)
	for !keepLen && len(r.data) < umadMADSize {
		r.data = append(r.data, 0) // the wire carries whole 256-byte MADs
	}
	// recv_handler fills the header from the work completion.
	r.hdr = abi.MadHdr{
		AgentID:    a.id,
		QPN:        srcQPN,
		LID:        srcLID,
		SL:         h.SL,
		GRHPresent: h.GRHPresent,
		PKeyIndex:  h.PKeyIndex,
	}
	if h.GRHPresent {
		r.hdr.GIDIndex = 0
		r.hdr.HopLimit = h.HopLimit
		r.hdr.TrafficClass = h.TrafficClass
		r.hdr.GID = srcGID
		r.hdr.FlowLabel = h.FlowLabel & 0xfffff
	}
	f.recv.push(r)
	f.signal()
}

// find is find_mad_agent for a request. Caller holds fab.mu.
func (p *Port) find(qpn uint32, mad []byte) *umadAgent {
	class, version := mad[1], mad[2]
	if version >= umadMaxVersion {
		return nil
	}
	key := umadClaim{version: version, class: umadConvertClass(class), method: mad[3] &^ umadMethodResp}
	if umadIsVendor2(class) {
		if len(mad) < 40 {
			return nil
		}
		key.oui = uint32(mad[37])<<16 | uint32(mad[38])<<8 | uint32(mad[39])
	}
	a := p.claims[key]
	if a == nil || a.qpn != qpn {
		return nil
	}
	return a
}

// unmatched is generate_unmatched_resp plus agent_send_response: a Get or
// Set that no agent takes is answered by the MAD layer itself with a
// GetResp whose status is "unsupported method/attribute". Caller holds
// fab.mu.
func (fab *Fabric) unmatched(dst *Port, srcLID uint16, srcGID [16]byte, dqpn, srcQPN uint32, h *abi.MadHdr, mad []byte) {
	var resp [umadMADSize]byte
	copy(resp[:], mad)
	resp[3] = umadMethodGetResp
	status := uint16(umadStatusUnsupported)
	if mad[1] == umadClassSubnDR {
		status |= umadSMPDirection
	}
	binary.BigEndian.PutUint16(resp[4:6], status)
	dst.sent++
	if fab.wire != nil {
		to := abi.MadHdr{QPN: srcQPN, LID: srcLID, PKeyIndex: h.PKeyIndex}
		fab.wire.Transmit(dst, dqpn, &to, resp[:])
		return
	}
	var src *Port
	for _, p := range fab.ports {
		if !p.removed && (h.GRHPresent && p.cfg.GID == srcGID || !h.GRHPresent && p.cfg.LID == srcLID) {
			src = p
			break
		}
	}
	if src == nil {
		return
	}
	back := abi.MadHdr{QPN: srcQPN, LID: dst.cfg.LID, GRHPresent: h.GRHPresent, GID: dst.cfg.GID,
		HopLimit: h.HopLimit, TrafficClass: h.TrafficClass, PKeyIndex: h.PKeyIndex}
	fab.arrive(src, dst.cfg.LID, dst.cfg.GID, dqpn, &back, resp[:])
}

// Read implements sys.Backend: ib_umad_read. With nonblocking set it
// does not wait, whatever the deadline: a record or EAGAIN. Otherwise it
// waits, as a read through the runtime poller does, until a record
// arrives, the read deadline passes (os.ErrDeadlineExceeded; deadline, or
// the one DeadlineChanged set since, looked at before the queue as the
// poller does) or the file is closed (os.ErrClosed).
func (f *File) Read(p []byte, deadline time.Time, nonblocking bool) (int, error) {
	fab := f.port.fab
	fab.mu.Lock()
	defer fab.mu.Unlock()
	hs := f.hdrSize()
	switch {
	case f.closed:
		return 0, os.ErrClosed
	case len(p) < hs:
		return 0, syscall.EINVAL
	case !nonblocking:
		var n int
		err := f.wait(deadline, func() error {
			var err error
			n, err = f.copyOut(p)
			return err
		})
		return n, err
	case f.dead:
		return 0, syscall.EIO
	case f.recv.n == 0:
		return 0, syscall.EAGAIN
	}
	return f.copyOut(p)
}

// copyOut pops the first record into p, copy_recv_mad / copy_send_mad; on
// failure the record goes back to the front. Caller holds fab.mu.
func (f *File) copyOut(p []byte) (int, error) {
	fab := f.port.fab
	hs := f.hdrSize()
	r := f.recv.pop()
	if r.isSend {
		size := hs + len(r.data)
		if len(p) < size {
			f.recv.pushFront(r)
			return 0, syscall.EINVAL
		}
		copy(p, r.raw)
		copy(p[hs:], r.data)
		fab.putRecord(r)
		return size, nil
	}
	length := len(r.data)
	seg := min(length, umadMADSize)
	if len(p) < hs+seg {
		f.recv.pushFront(r)
		return 0, syscall.EINVAL
	}
	h := r.hdr
	h.Length = uint32(hs + length)
	if hs == abi.MadHdrSizeOld {
		h.PKeyIndex = 0
	}
	_ = h.Encode(p, hs)
	copy(p[hs:], r.data[:seg])
	if seg < length && len(p) < hs+length {
		// An RMPP message larger than the buffer: the header (with the
		// full length) and the first segment are copied, the record
		// stays queued.
		f.recv.pushFront(r)
		return 0, syscall.ENOSPC
	}
	copy(p[hs:], r.data)
	fab.putRecord(r)
	return hs + length, nil
}
