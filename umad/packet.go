package umad

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
)

// HeaderSize is the size of the umad header (struct ib_user_mad_hdr) in
// front of a MAD: umad_size() of libibumad's new API. A Port on a kernel
// without IB_USER_MAD_ENABLE_PKEY uses 56 bytes instead (Port.HeaderSize);
// a Packet holds either.
const HeaderSize = abi.MadHdrSize

// QP1QKey is the Q_Key of every GSI (QP1) MAD, IB_QP1_QKEY.
const QP1QKey = 0x80010000

// Sizes a Packet works with.
const (
	pktSlot       = abi.MadHdrSize // room for the largest header
	pktMAD        = 256            // an IBA MAD
	pktMinSend    = 36             // IB_MGMT_RMPP_HDR: the kernel's minimum
	pktMaxMAD     = 64 << 20       // a limit on RMPP messages Packets grow to
	pktMADHdrSize = 24
)

// Packet is a umad buffer: the header the kernel reads on send and fills on
// receive (address, agent, status) followed by the MAD. It is libibumad's
// umad_alloc'ed buffer; Go's garbage collector frees it (umad_free is
// unnecessary). Reuse a Packet for every send and receive of a loop: Send
// and Recv do not allocate then.
//
// A Packet is not safe for concurrent use.
type Packet struct {
	hdr abi.MadHdr
	buf []byte // pktSlot bytes for the header, then the MAD
	n   int    // length of the MAD
}

// NewPacket returns a packet with a zeroed 256-byte MAD (umad_alloc(1,
// umad_size() + 256)).
func NewPacket() *Packet {
	return &Packet{buf: make([]byte, pktSlot+pktMAD), n: pktMAD}
}

// room makes sure the MAD area holds n bytes, keeping its contents.
func (p *Packet) room(n int) {
	if need := pktSlot + max(n, pktMAD); need > len(p.buf) {
		nb := make([]byte, need)
		copy(nb, p.buf)
		p.buf = nb
	}
}

// MAD returns the MAD (umad_get_mad): after Recv, what was received; for
// Send, what will be sent. The slice aliases the packet: write the MAD
// into it. A Packet from NewPacket starts with 256 zero bytes.
func (p *Packet) MAD() []byte {
	if p == nil {
		return nil
	}
	p.room(p.n)
	return p.buf[pktSlot : pktSlot+p.n]
}

// Len returns the length of the MAD.
func (p *Packet) Len() int {
	if p == nil {
		return 0
	}
	return p.n
}

// SetLen sets the length of the MAD, growing the packet if needed; bytes
// past the old length are zero. It fails for a negative n or one above 64
// MiB.
func (p *Packet) SetLen(n int) error {
	if p == nil {
		return errNil("Packet.SetLen")
	}
	if n < 0 || n > pktMaxMAD {
		return fmt.Errorf("umad: MAD length %d out of range 0–%d: %w", n, pktMaxMAD, syscall.EINVAL)
	}
	p.room(n)
	if n > p.n {
		clear(p.buf[pktSlot+p.n : pktSlot+n])
	}
	p.n = n
	return nil
}

// SetMAD copies b into the packet as its MAD (and sets the length). b may
// be the packet's own buffer, as a MAD encoded with m.Append(p.MAD()[:0])
// is, whatever the packet's length before (a send that failed comes back
// as a 24-byte header, shorter than the MAD built in its place).
func (p *Packet) SetMAD(b []byte) error {
	if p == nil {
		return errNil("Packet.SetMAD")
	}
	n := len(b)
	if n > pktMaxMAD {
		return fmt.Errorf("umad: MAD length %d out of range 0–%d: %w", n, pktMaxMAD, syscall.EINVAL)
	}
	// No clearing first, as SetLen does when the length grows: every
	// byte up to n is b's, and b may lie in that very range.
	p.room(n)
	copy(p.buf[pktSlot:pktSlot+n], b)
	p.n = n
	return nil
}

// Size returns the size of what a send writes on a port with the 64-byte
// header: HeaderSize plus the MAD's length (umad_size() + length).
func (p *Packet) Size() int {
	if p == nil {
		return 0
	}
	return HeaderSize + p.n
}

// Agent returns the header's agent id: after Recv, the agent the MAD was
// received for (Recv returns it too).
func (p *Packet) Agent() AgentID {
	if p == nil {
		return 0
	}
	return AgentID(p.hdr.AgentID)
}

// Status returns the header's status (umad_status): 0 for a received MAD,
// or the errno of a send that failed; ETIMEDOUT for a request whose
// response did not come after all its retries (the packet then holds the
// request's first 24 bytes, its common MAD header).
func (p *Packet) Status() syscall.Errno {
	if p == nil {
		return 0
	}
	return syscall.Errno(p.hdr.Status)
}

// TimedOut reports whether the packet is a request that timed out
// (Status is ETIMEDOUT).
func (p *Packet) TimedOut() bool {
	if p == nil {
		return false
	}
	return p.hdr.Status == uint32(syscall.ETIMEDOUT)
}

// GRH is the global route of a MAD address: what RoCE always needs, and
// InfiniBand across subnets.
type GRH struct {
	// GID is the remote GID, in network order (the 16 bytes of an IPv6
	// address). On receive, the sender's GID.
	GID rdma.GID
	// GIDIndex is the index of the local (source) GID to send from.
	GIDIndex uint8
	// HopLimit and TrafficClass go into the GRH as given.
	HopLimit     uint8
	TrafficClass uint8
	// FlowLabel is the 20-bit flow label, as a number.
	FlowLabel uint32
}

// Addr is a MAD's address (libibumad's ib_mad_addr_t), as numbers in host
// order: on send where the MAD goes, on receive where it came from.
type Addr struct {
	// QPN is the remote QP (1 for GSI MADs, 0 for SMPs), 24 bits.
	QPN uint32
	// QKey is the remote Q_Key (QP1QKey for QP1).
	QKey uint32
	// LID is the remote LID (0 on RoCE, which addresses by GID).
	LID uint16
	// SL is the service level (0–15) and PathBits the source path bits.
	SL       uint8
	PathBits uint8
	// GRHPresent says the GRH fields are valid; RoCE needs them.
	GRHPresent bool
	GRH        GRH
	// PKeyIndex is the P_Key table index to send with (ports with the
	// 64-byte header only).
	PKeyIndex uint16
}

// Addr returns the packet's address (umad_get_mad_addr). To answer a
// received request, send the response with the request's address:
// resp.SetAddress(req.Addr()), or reuse the request's packet.
func (p *Packet) Addr() Addr {
	if p == nil {
		return Addr{}
	}
	h := &p.hdr
	return Addr{
		QPN: h.QPN, QKey: h.QKey, LID: h.LID, SL: h.SL, PathBits: h.PathBits,
		GRHPresent: h.GRHPresent,
		GRH:        GRH{GID: h.GID, GIDIndex: h.GIDIndex, HopLimit: h.HopLimit, TrafficClass: h.TrafficClass, FlowLabel: h.FlowLabel},
		PKeyIndex:  h.PKeyIndex,
	}
}

// SetAddress sets every address field from a. It fails (changing nothing)
// for a QPN wider than 24 bits, an SL above 15 or a flow label wider than
// 20 bits.
func (p *Packet) SetAddress(a Addr) error {
	if p == nil {
		return errNil("Packet.SetAddress")
	}
	if err := checkAddr(a.QPN, a.SL); err != nil {
		return err
	}
	if a.GRHPresent && a.GRH.FlowLabel > 0xfffff {
		return errFlowLabel(a.GRH.FlowLabel)
	}
	h := &p.hdr
	h.QPN, h.QKey, h.LID, h.SL, h.PathBits = a.QPN, a.QKey, a.LID, a.SL, a.PathBits
	h.GRHPresent = a.GRHPresent
	h.GID, h.GIDIndex, h.HopLimit, h.TrafficClass, h.FlowLabel = a.GRH.GID, a.GRH.GIDIndex, a.GRH.HopLimit, a.GRH.TrafficClass, a.GRH.FlowLabel
	h.PKeyIndex = a.PKeyIndex
	return nil
}

func checkAddr(qpn uint32, sl uint8) error {
	if qpn > 0xffffff {
		return fmt.Errorf("umad: QPN %#x does not fit 24 bits: %w", qpn, syscall.EINVAL)
	}
	if sl > 15 {
		return fmt.Errorf("umad: SL %d above 15: %w", sl, syscall.EINVAL)
	}
	return nil
}

func errFlowLabel(v uint32) error {
	return fmt.Errorf("umad: flow label %#x does not fit 20 bits: %w", v, syscall.EINVAL)
}

// SetAddr sets the destination LID, QP, SL and Q_Key, given as numbers
// (umad_set_addr). The GRH and P_Key index are left alone. It fails for a
// QPN wider than 24 bits or an SL above 15.
func (p *Packet) SetAddr(lid uint16, qpn uint32, sl uint8, qkey uint32) error {
	if p == nil {
		return errNil("Packet.SetAddr")
	}
	if err := checkAddr(qpn, sl); err != nil {
		return err
	}
	p.hdr.LID, p.hdr.QPN, p.hdr.SL, p.hdr.QKey = lid, qpn, sl, qkey
	return nil
}

// SetAddrNet is SetAddr for values in network byte order, as they appear
// in wire structures (umad_set_addr_net): lid is 2 bytes, qpn and qkey 4.
func (p *Packet) SetAddrNet(lid [2]byte, qpn [4]byte, sl uint8, qkey [4]byte) error {
	if p == nil {
		return errNil("Packet.SetAddrNet")
	}
	return p.SetAddr(binary.BigEndian.Uint16(lid[:]), binary.BigEndian.Uint32(qpn[:]), sl, binary.BigEndian.Uint32(qkey[:]))
}

// SetGRH sets the GRH fields and marks the GRH present (umad_set_grh; unlike
// libibumad it also sets the source GID index, which umad_set_grh leaves
// alone). It fails for a flow label wider than 20 bits.
func (p *Packet) SetGRH(g GRH) error {
	if p == nil {
		return errNil("Packet.SetGRH")
	}
	if g.FlowLabel > 0xfffff {
		return errFlowLabel(g.FlowLabel)
	}
	h := &p.hdr
	h.GRHPresent = true
	h.GID, h.GIDIndex, h.HopLimit, h.TrafficClass, h.FlowLabel = g.GID, g.GIDIndex, g.HopLimit, g.TrafficClass, g.FlowLabel
	return nil
}

// SetGRHNet is SetGRH with the flow label in network byte order, as in a
// wire structure (umad_set_grh_net, which libibumad never implemented).
func (p *Packet) SetGRHNet(gid rdma.GID, gidIndex, hopLimit, trafficClass uint8, flowLabel [4]byte) error {
	if p == nil {
		return errNil("Packet.SetGRHNet")
	}
	return p.SetGRH(GRH{GID: gid, GIDIndex: gidIndex, HopLimit: hopLimit, TrafficClass: trafficClass,
		FlowLabel: binary.BigEndian.Uint32(flowLabel[:])})
}

// ClearGRH marks the GRH absent (umad_set_grh with a NULL address).
func (p *Packet) ClearGRH() {
	if p == nil {
		return
	}
	p.hdr.GRHPresent = false
}

// SetPKeyIndex sets the P_Key table index to send with (umad_set_pkey). A
// port with the 56-byte header cannot carry it: sending a non-zero index
// there fails with EINVAL.
func (p *Packet) SetPKeyIndex(index uint16) {
	if p == nil {
		return
	}
	p.hdr.PKeyIndex = index
}

// wire encodes the header for a hs-byte umad header and returns header
// plus MAD, contiguous: the header sits right before the MAD.
func (p *Packet) wire(hs int) ([]byte, error) {
	p.room(p.n)
	start := pktSlot - hs
	if err := p.hdr.Encode(p.buf[start:pktSlot], hs); err != nil {
		return nil, err
	}
	return p.buf[start : pktSlot+p.n], nil
}

// String returns a one-line summary: header, address and the MAD's common
// header (class, method, status, TID, attribute) when it has one.
func (p *Packet) String() string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	p.summary(&b)
	return b.String()
}

func (p *Packet) summary(b *strings.Builder) {
	h := &p.hdr
	fmt.Fprintf(b, "agent %d status %d", h.AgentID, h.Status)
	if h.Status != 0 {
		fmt.Fprintf(b, " (%v)", syscall.Errno(h.Status))
	}
	if h.TimeoutMs != 0 || h.Retries != 0 {
		fmt.Fprintf(b, " timeout %dms retries %d", h.TimeoutMs, h.Retries)
	}
	fmt.Fprintf(b, " len %d; %s", p.n, p.Addr())
	if p.n >= pktMADHdrSize && len(p.buf) >= pktSlot+pktMADHdrSize {
		m := p.buf[pktSlot:]
		fmt.Fprintf(b, "; MAD base %d class %#02x version %d method %#02x status %#04x tid %#016x attr %#04x mod %#x",
			m[0], m[1], m[2], m[3], binary.BigEndian.Uint16(m[4:6]), binary.BigEndian.Uint64(m[8:16]),
			binary.BigEndian.Uint16(m[16:18]), binary.BigEndian.Uint32(m[20:24]))
	}
}

// Format implements fmt.Formatter: %v and %s print String (umad_dump's
// one-liner); %+v adds a hex dump of the MAD.
func (p *Packet) Format(f fmt.State, verb rune) {
	if p == nil {
		if f != nil {
			fmt.Fprint(f, "<nil>")
		}
		return
	}
	switch verb {
	case 'v', 's':
		var b strings.Builder
		p.summary(&b)
		if verb == 'v' && f.Flag('+') && p.n > 0 {
			b.WriteByte('\n')
			b.WriteString(strings.TrimSuffix(hex.Dump(p.MAD()), "\n"))
		}
		f.Write([]byte(b.String()))
	default:
		fmt.Fprintf(f, "%%!%c(*umad.Packet=%s)", verb, p.String())
	}
}

// String prints the address the way umad_addr_dump does, on one line.
func (a Addr) String() string {
	var b strings.Builder
	b.WriteString("qpn ")
	b.WriteString(strconv.FormatUint(uint64(a.QPN), 10))
	fmt.Fprintf(&b, " qkey %#x lid %d sl %d", a.QKey, a.LID, a.SL)
	if a.PathBits != 0 {
		fmt.Fprintf(&b, " path_bits %d", a.PathBits)
	}
	if a.GRHPresent {
		fmt.Fprintf(&b, " grh gid %s gid_index %d hop_limit %d traffic_class %d flow_label %#x",
			netip.AddrFrom16(a.GRH.GID), a.GRH.GIDIndex, a.GRH.HopLimit, a.GRH.TrafficClass, a.GRH.FlowLabel)
	}
	fmt.Fprintf(&b, " pkey_index %d", a.PKeyIndex)
	return b.String()
}
