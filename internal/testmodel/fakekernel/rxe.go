package fakekernel

import (
	"encoding/binary"
	"math/bits"
	"syscall"

	"github.com/purerdma/rdma/abi"
)

// RXE returns a Soft-RoCE device as Linux 6.1 reports rxe0 in the project's
// VM (ibv_devinfo -v there: go run ./integration/vmrun -- ibv_devinfo -v):
// one Ethernet port, two RoCE v2 GIDs (link-local and
// IPv4-mapped), two completion vectors. guid is the node GUID in host
// order (0xacade8fffe375f42 is acad:e8ff:fe37:5f42); ipv4 the address of
// GID 1.
//
// The rxe driver rules (rxe_verbs.c rxe_create_cq/rxe_create_qp and rxe_mmap.c, rxe_verbs.c): GET_CONTEXT,
// ALLOC_PD take no driver data; EX_QUERY_DEVICE with any driver data is
// EINVAL; CQ create needs UHW_OUT ≥ 16 bytes (EINVAL), rejects create flags
// (EOPNOTSUPP) and cqe outside 1..max_cqe (EINVAL); QP create needs UHW_OUT
// ≥ 32 bytes (EINVAL), rejects create flags (EOPNOTSUPP) and types other
// than RC, UC, UD (EOPNOTSUPP), and any driver input (EINVAL); CQ and QP
// responses carry the mmap offsets of their queues (struct mminfo), which
// only those offsets and lengths may map (EINVAL).
func RXE(name string, guid uint64, ipv4 [4]byte) *Verbs {
	v := &Verbs{Name: name, DriverID: abi.RDMA_DRIVER_RXE, NumCompVectors: 2}
	b := &v.Attr.Base
	b.FwVer = 0
	b.NodeGuid = hostToBE(guid)
	b.SysImageGuid = hostToBE(guid)
	b.MaxMrSize = ^uint64(0)
	b.PageSizeCap = 0xfffff000
	b.VendorId = 0xffffff
	b.MaxQp = 1048560
	b.MaxQpWr = 1048576
	b.DeviceCapFlags = 0x01223c76
	b.MaxSge = 32
	b.MaxSgeRd = 32
	b.MaxCq = 1048576
	b.MaxCqe = 32767
	b.MaxMr = 524287
	b.MaxPd = 1048576
	b.MaxQpRdAtom = 128
	b.MaxResRdAtom = 258048
	b.MaxQpInitRdAtom = 128
	b.AtomicCap = 1
	b.MaxMw = 524287
	b.MaxMcastGrp = 8192
	b.MaxMcastQpAttach = 56
	b.MaxTotalMcastQpAttach = 458752
	b.MaxAh = 32767
	b.MaxSrq = 917503
	b.MaxSrqWr = 1048576
	b.MaxSrqSge = 27
	b.MaxPkeys = 64
	b.LocalCaAckDelay = 15
	b.PhysPortCnt = 1
	v.Attr.DeviceCapFlagsEx = 0x1223c76

	var p Port
	l := &p.Attr.LegacyResp
	l.State = 4
	l.MaxMtu = 5
	l.ActiveMtu = 3
	l.LinkLayer = 2
	l.MaxMsgSz = 0x800000
	l.PortCapFlags = 0x00010000
	l.MaxVlNum = 1
	l.PkeyTblLen = 1
	l.GidTblLen = 1024
	l.ActiveWidth = 1
	l.ActiveSpeed = 8
	l.PhysState = 5
	var g0, g1 [16]byte
	g0[0], g0[1] = 0xfe, 0x80
	binary.BigEndian.PutUint64(g0[8:], guid)
	g1[10], g1[11] = 0xff, 0xff
	copy(g1[12:], ipv4[:])
	p.GIDs = []abi.IbUverbsGidEntry{
		{Gid: gidWords(g0), GidIndex: 0, PortNum: 1, GidType: abi.IB_UVERBS_GID_TYPE_ROCE_V2, NetdevIfindex: 3},
		{Gid: gidWords(g1), GidIndex: 1, PortNum: 1, GidType: abi.IB_UVERBS_GID_TYPE_ROCE_V2, NetdevIfindex: 3},
	}
	v.Ports = []Port{p}
	return v
}

// gidWords stores a network-order GID in struct ib_uverbs_gid_entry's
// __aligned_u64 gid[2] (the bytes in memory order).
func gidWords(g [16]byte) [2]uint64 {
	return [2]uint64{binary.LittleEndian.Uint64(g[0:]), binary.LittleEndian.Uint64(g[8:])}
}

// hostToBE stores a host-order value in a big-endian (__be64) field.
func hostToBE(v uint64) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return binary.LittleEndian.Uint64(b[:])
}

// rxeQueue describes an rxe queue the way rxe_queue_init sizes it: slots
// of roundup_pow_of_two(elem) bytes (at least a cache line), a power-of-two
// count one more than asked, behind the 384-byte struct rxe_queue_buf,
// mapped in whole pages.
func rxeQueue(n uint32, elem int) (buf []byte, slots uint32) {
	if elem < 64 {
		elem = 64
	}
	elem = 1 << bits.Len(uint(elem-1))
	slots = 1 << bits.Len32(n) // roundup_pow_of_two(n + 1)
	size := 384 + int(slots)*elem
	size = (size + 4095) &^ 4095
	hdr := make([]byte, 384)
	binary.LittleEndian.PutUint32(hdr[0:], uint32(bits.TrailingZeros(uint(elem))))
	binary.LittleEndian.PutUint32(hdr[4:], slots-1)
	buf = make([]byte, size)
	copy(buf, hdr)
	return buf, slots
}

// rxeMminfo registers q for mmap and returns its struct mminfo.
func (v *Verbs) rxeMminfo(c *Call, q []byte, what string) []byte {
	off := v.addMmap(c.File, mmapRegion{length: len(q), init: q, what: what})
	mi := binary.LittleEndian.AppendUint64(nil, uint64(off))
	mi = binary.LittleEndian.AppendUint32(mi, uint32(len(q)))
	return binary.LittleEndian.AppendUint32(mi, 0)
}

func (v *Verbs) rxeCreateCQ(c *Call, cq *cqVal, flags uint32) error {
	if flags != 0 {
		return syscall.EOPNOTSUPP
	}
	if c.OutLen(abi.UVERBS_ATTR_UHW_OUT) < 16 {
		return syscall.EINVAL
	}
	if cq.cqe < 1 || cq.cqe > v.Attr.Base.MaxCqe {
		return syscall.EINVAL
	}
	q, slots := rxeQueue(cq.cqe, 48) // struct rxe_cqe = struct ib_uverbs_wc
	cq.cqe = slots - 1
	return c.Out(abi.UVERBS_ATTR_UHW_OUT, v.rxeMminfo(c, q, "rxe cq"), false)
}

func (v *Verbs) rxeCreateQP(c *Call, qp *qpVal, create uint32) error {
	if c.OutLen(abi.UVERBS_ATTR_UHW_OUT) < 32 {
		return syscall.EINVAL
	}
	if create != 0 {
		return syscall.EOPNOTSUPP
	}
	switch qp.typ {
	case qptRC, qptUC, qptUD:
	default:
		return syscall.EOPNOTSUPP
	}
	if len(c.UHWIn()) != 0 {
		return syscall.EINVAL
	}
	// rxe_send_wqe is 176 bytes with an inline ib_sge array; rxe_recv_wqe 48.
	sq, sqSlots := rxeQueue(max(qp.cap.MaxSendWr, 1), 176+16*int(qp.cap.MaxSendSge))
	qp.cap.MaxSendWr = sqSlots - 1
	// With an SRQ the QP has no receive queue: its mminfo stays zero
	// (rxe_qp.c rxe_qp_init_resp).
	resp := make([]byte, 16)
	if qp.srq == nil {
		rq, rqSlots := rxeQueue(max(qp.cap.MaxRecvWr, 1), 48+16*int(qp.cap.MaxRecvSge))
		qp.cap.MaxRecvWr = rqSlots - 1
		resp = v.rxeMminfo(c, rq, "rxe rq")
	}
	resp = append(resp, v.rxeMminfo(c, sq, "rxe sq")...)
	return c.Out(abi.UVERBS_ATTR_UHW_OUT, resp, false)
}
