package uverbs

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/purerdma/rdma/abi"
)

// SGE is a scatter/gather entry (struct ibv_sge): Length bytes at Addr of
// a memory region whose local key is LKey. MR.SGE makes one.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// WROpcode is a send work request's operation (enum ibv_wr_opcode, the
// kernel's IB_UVERBS_WR_*).
type WROpcode uint32

// The operations PostSend posts.
const (
	WRRDMAWrite        WROpcode = abi.IB_UVERBS_WR_RDMA_WRITE
	WRRDMAWriteWithImm WROpcode = abi.IB_UVERBS_WR_RDMA_WRITE_WITH_IMM
	WRSend             WROpcode = abi.IB_UVERBS_WR_SEND
	WRSendWithImm      WROpcode = abi.IB_UVERBS_WR_SEND_WITH_IMM
	WRRDMARead         WROpcode = abi.IB_UVERBS_WR_RDMA_READ
	// WRAtomicCmpAndSwp (IBV_WR_ATOMIC_CMP_AND_SWP) compares the 8 bytes
	// at RemoteAddr with CompareAdd and, when equal, writes Swap there;
	// WRAtomicFetchAndAdd (IBV_WR_ATOMIC_FETCH_AND_ADD) adds CompareAdd
	// to them. Both return the original value into the SGL's first 8
	// bytes. The operands are host-order values; the 8 bytes in memory,
	// remote and returned, are in the device's order: host order on rxe
	// (rxe_resp.c atomic_reply works on a u64), big-endian on ConnectX
	// (so the fake device models it; unproven on hardware).
	// RC only; the remote MR needs AccessRemoteAtomic and the responder
	// QP AccessRemoteAtomic in its access flags (QPAttr.AccessFlags).
	WRAtomicCmpAndSwp   WROpcode = abi.IB_UVERBS_WR_ATOMIC_CMP_AND_SWP
	WRAtomicFetchAndAdd WROpcode = abi.IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD
)

// String returns the name libibverbs uses, without its IBV_WR_ prefix.
func (o WROpcode) String() string {
	switch o {
	case WRRDMAWrite:
		return "RDMA_WRITE"
	case WRRDMAWriteWithImm:
		return "RDMA_WRITE_WITH_IMM"
	case WRSend:
		return "SEND"
	case WRSendWithImm:
		return "SEND_WITH_IMM"
	case WRRDMARead:
		return "RDMA_READ"
	case WRAtomicCmpAndSwp:
		return "ATOMIC_CMP_AND_SWP"
	case WRAtomicFetchAndAdd:
		return "ATOMIC_FETCH_AND_ADD"
	}
	return "WROpcode(" + strconv.FormatUint(uint64(o), 10) + ")"
}

// SendFlags are a send work request's flags (enum ibv_send_flags; the
// kernel's enum ib_send_flags in include/rdma/ib_verbs.h has the same
// values, which rxe's send queue carries as they are).
type SendFlags uint32

// The send flags. Inline data is set with SendWR.Inline, not with a flag.
const (
	SendFence     SendFlags = 1 << 0
	SendSignaled  SendFlags = 1 << 1
	SendSolicited SendFlags = 1 << 2
	sendInline    SendFlags = 1 << 3
)

// SendWR is a send work request (struct ibv_send_wr).
type SendWR struct {
	// ID comes back in the work completion (wr_id).
	ID     uint64
	Opcode WROpcode
	Flags  SendFlags
	// SGL lists the local memory to send, or to read into (RDMA read),
	// or, for an atomic, the 8 bytes the original remote value is
	// returned into (at least 8 bytes in all on rxe, as rdma-core's
	// validate_send_wr demands; mlx5 writes 8 bytes at the first SGE).
	SGL []SGE
	// Inline, when not nil, is the data itself, copied into the work
	// queue at PostSend (ibv's IBV_SEND_INLINE): the memory need not be
	// registered and may be reused at once. Its length may be at most
	// the QP's Cap().MaxInlineData. SGL is then ignored. Not for RDMA read.
	Inline []byte
	// Imm is the immediate data of the _WITH_IMM operations, in host
	// order (ibv's imm_data is big-endian: PostSend converts, and WC.Imm
	// converts back, so a C peer's ntohl(wc.imm_data) sees this value).
	Imm uint32
	// RemoteAddr and RKey name the peer's memory of RDMA reads and
	// writes (wr.rdma) and of atomics (wr.atomic: RemoteAddr must be
	// 8-byte aligned).
	RemoteAddr uint64
	RKey       uint32
	// CompareAdd and Swap are the operands of the atomics (wr.atomic's
	// compare_add and swap, in host order): the value compared, or
	// added, and the value swapped in by WRAtomicCmpAndSwp.
	CompareAdd uint64
	Swap       uint64
	// AH, RemoteQPN and RemoteQKey address a UD send (wr.ud).
	AH         *AH
	RemoteQPN  uint32
	RemoteQKey uint32
}

// RecvWR is a receive work request (struct ibv_recv_wr).
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// WCStatus is a work completion's status (enum ibv_wc_status, the kernel's
// enum ib_wc_status).
type WCStatus uint32

// The work completion statuses.
const (
	WCSuccess WCStatus = iota
	WCLocLenErr
	WCLocQPOpErr
	WCLocEECOpErr
	WCLocProtErr
	WCWRFlushErr
	WCMWBindErr
	WCBadRespErr
	WCLocAccessErr
	WCRemInvReqErr
	WCRemAccessErr
	WCRemOpErr
	WCRetryExcErr
	WCRNRRetryExcErr
	WCLocRDDViolErr
	WCRemInvRDReqErr
	WCRemAbortErr
	WCInvEECNErr
	WCInvEECStateErr
	WCFatalErr
	WCRespTimeoutErr
	WCGeneralErr
)

// wcStatusNames are ibv_wc_status_str's (libibverbs/verbs.c).
var wcStatusNames = [...]string{
	"success", "local length error", "local QP operation error", "local EE context operation error",
	"local protection error", "Work Request Flushed Error", "memory management operation error",
	"bad response error", "local access error", "remote invalid request error", "remote access error",
	"remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
	"local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
	"invalid EE context state", "fatal error", "response timeout error", "general error",
}

// String returns ibv_wc_status_str's text for the status.
func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return "unknown"
}

// Error makes a failed status an error: "work completion: STATUS".
func (s WCStatus) Error() string {
	return fmt.Sprintf("work completion: %s (status %d)", s.String(), uint32(s))
}

// WCOpcode is the operation a work completion is for (enum ibv_wc_opcode,
// the kernel's IB_UVERBS_WC_* and IB_WC_RECV*).
type WCOpcode uint32

// The work completion opcodes.
const (
	WCSend            WCOpcode = abi.IB_UVERBS_WC_SEND
	WCRDMAWrite       WCOpcode = abi.IB_UVERBS_WC_RDMA_WRITE
	WCRDMARead        WCOpcode = abi.IB_UVERBS_WC_RDMA_READ
	WCCompSwap        WCOpcode = abi.IB_UVERBS_WC_COMP_SWAP
	WCFetchAdd        WCOpcode = abi.IB_UVERBS_WC_FETCH_ADD
	WCRecv            WCOpcode = 1 << 7 // IB_WC_RECV
	WCRecvRDMAWithImm WCOpcode = WCRecv + 1
)

// WCFlags are a work completion's flags (enum ibv_wc_flags).
type WCFlags uint32

// The work completion flags.
const (
	WCWithGRH WCFlags = 1 << 0 // IB_WC_GRH: a UD receive starts with the 40-byte GRH
	WCWithImm WCFlags = 1 << 1 // IB_WC_WITH_IMM: Imm is valid
	WCWithInv WCFlags = 1 << 2
)

// WC is a work completion (struct ibv_wc, from struct ib_uverbs_wc).
type WC struct {
	ID        uint64
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32
	// Imm is the immediate data in host order when Flags has WCWithImm.
	Imm          uint32
	QPNum        uint32
	SrcQP        uint32
	Flags        WCFlags
	PKeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	Port         int
}

// set fills w from the kernel's struct ib_uverbs_wc.
// Field by field: a composite literal would be built in a temporary and
// copied (k may alias w), a third more of a poll's instructions.
func (w *WC) set(k *abi.IbUverbsWc) {
	w.ID, w.Status, w.Opcode, w.VendorErr = k.WrId, WCStatus(k.Status), WCOpcode(k.Opcode), k.VendorErr
	w.ByteLen, w.Imm, w.QPNum, w.SrcQP, w.Flags = k.ByteLen, be32(k.Ex), k.QpNum, k.SrcQp, WCFlags(k.WcFlags)
	w.PKeyIndex, w.SLID, w.SL, w.DLIDPathBits, w.Port = k.PkeyIndex, k.Slid, k.Sl, k.DlidPathBits, int(k.PortNum)
}

// be32 swaps between host order and the big-endian order of a __be32 held
// in a u32 (its own inverse).
func be32(x uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], x)
	return binary.BigEndian.Uint32(b[:])
}
