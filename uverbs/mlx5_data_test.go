package uverbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
)

// The mlx5 formats, pinned to the headers they come from. Each row names
// the file and the definition; a change here must be a change there.
func TestMlx5Layouts(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
		from      string
	}{
		{"sizeof ctrl seg", mlx5CtrlSegSize, 16, "mlx5dv.h struct mlx5_wqe_ctrl_seg (packed, 4+4+1+2+1+4); kernel include/linux/mlx5/qp.h struct mlx5_wqe_ctrl_seg (rsvd[2] for the stream id)"},
		{"fm_ce_se offset", mlx5CtrlFmCeSeOff, 11, "mlx5dv.h struct mlx5_wqe_ctrl_seg: after signature (8) and dci_stream_channel_id (9-10)"},
		{"imm offset", mlx5CtrlImmOff, 12, "mlx5dv.h struct mlx5_wqe_ctrl_seg imm"},
		{"sizeof raddr seg", mlx5RaddrSegSize, 16, "mlx5dv.h and kernel qp.h struct mlx5_wqe_raddr_seg (raddr, rkey, reserved)"},
		{"sizeof data seg", mlx5DataSegSize, 16, "mlx5dv.h and kernel qp.h struct mlx5_wqe_data_seg (byte_count, lkey, addr)"},
		{"sizeof eth seg", mlx5EthSegSize, 32, "mlx5dv.h struct mlx5_wqe_eth_seg; qp.c _mlx5_post_send: (offsetof(inline_hdr) + 18) & ~0xf"},
		{"inline_hdr_sz offset", mlx5EthHdrSzOff, 12, "mlx5dv.h struct mlx5_wqe_eth_seg: rsvd0(4) cs_flags rsvd1 mss(2) rsvd2(4); kernel qp.h struct mlx5_wqe_eth_seg inline_hdr.sz"},
		{"inline_hdr_start offset", mlx5EthInlineOff, 14, "mlx5dv.h struct mlx5_wqe_eth_seg; kernel qp.h inline_hdr.start"},
		{"L2 inline header", mlx5EthInline, 18, "mlx5dv.h MLX5_ETH_L2_INLINE_HEADER_SIZE"},
		{"send WQE basic block", mlx5SendWQEBB, 64, "mlx5dv.h MLX5_SEND_WQE_BB"},
		{"MLX5_OPCODE_RDMA_WRITE", mlx5OpcodeRDMAWrite, 0x08, "mlx5dv.h; kernel qp.h"},
		{"MLX5_OPCODE_RDMA_WRITE_IMM", mlx5OpcodeRDMAWriteImm, 0x09, "mlx5dv.h"},
		{"MLX5_OPCODE_SEND", mlx5OpcodeSend, 0x0a, "mlx5dv.h"},
		{"MLX5_OPCODE_SEND_IMM", mlx5OpcodeSendImm, 0x0b, "mlx5dv.h"},
		{"MLX5_OPCODE_RDMA_READ", mlx5OpcodeRDMARead, 0x10, "mlx5dv.h"},
		{"MLX5_WQE_CTRL_CQ_UPDATE", mlx5CtrlCQUpdate, 8, "mlx5dv.h and kernel qp.h: 2 << 2"},
		{"MLX5_WQE_CTRL_SOLICITED", mlx5CtrlSolicited, 2, "mlx5dv.h 1 << 1"},
		{"MLX5_WQE_CTRL_FENCE", mlx5CtrlFence, 0x80, "mlx5dv.h 4 << 5; kernel qp.h MLX5_FENCE_MODE_SMALL_AND_FENCE"},
		{"MLX5_INLINE_SEG", mlx5InlineSeg, 0x80000000, "mlx5dv.h"},
		{"MLX5_INVALID_LKEY", mlx5InvalidLKey, 0x100, "mlx5dv.h; qp.c mlx5_post_recv ends a short WQE with it"},
		{"MLX5_RCV_DBR", mlx5RcvDBR, 0, "mlx5dv.h; kernel qp.h"},
		{"MLX5_SND_DBR", mlx5SndDBR, 1, "mlx5dv.h; kernel qp.h"},
		{"MLX5_CQ_SET_CI", mlx5CQSetCI, 0, "mlx5.h; cq.c update_cons_index"},
		{"MLX5_BF_OFFSET", mlx5BFOffset, 0x800, "mlx5.h"},
		{"cqe64 ml_path", mlx5CQEMLPath, 17, "mlx5dv.h struct mlx5_cqe64: rsvd0[2] wqe_id rsvd4[13]"},
		{"cqe64 slid", mlx5CQESLID, 22, "mlx5dv.h struct mlx5_cqe64: ml_path rsvd20[4]"},
		{"MLX5_CQ_ARM_DB", mlx5CQArmDB, 1, "mlx5.h; cq.c mlx5_arm_cq"},
		{"MLX5_CQ_DOORBELL", mlx5CQDoorbell, 0x20, "mlx5.h; the kernel's doorbell.h"},
		{"MLX5_CQ_DB_REQ_NOT_SOL", mlx5CQDBReqNotSol, 1 << 24, "mlx5.h; the kernel's cq.h"},
		{"sizeof mlx5_wqe_av", mlx5AVSize, 48, "mlx5dv.h struct mlx5_wqe_av (the datagram segment)"},
		{"av dqp_dct", mlx5AVDQP, 8, "mlx5dv.h struct mlx5_wqe_av: after the 8-byte key"},
		{"av stat_rate_sl", mlx5AVStatRateSL, 12, "mlx5dv.h struct mlx5_wqe_av"},
		{"av rlid", mlx5AVRLID, 14, "mlx5dv.h struct mlx5_wqe_av: stat_rate_sl fl_mlid rlid"},
		{"av rmac", mlx5AVRMAC, 20, "mlx5dv.h struct mlx5_wqe_av: rlid reserved0[4] rmac"},
		{"av grh_gid_fl", mlx5AVGRHGIDFL, 28, "mlx5dv.h struct mlx5_wqe_av: rmac[6] tclass hop_limit"},
		{"av rgid", mlx5AVRGID, 32, "mlx5dv.h struct mlx5_wqe_av"},
		{"MLX5_EXTENDED_UD_AV", mlx5ExtendedUDAV, 0x80000000, "mlx5dv.h; qp.c _set_datagram_seg"},
		{"cqe64 flags_rqpn", mlx5CQEFlagsRQPN, 24, "mlx5dv.h struct mlx5_cqe64: rsvd0[2] wqe_id rsvd4[13] ml_path rsvd20[4] slid"},
		{"cqe64 srqn_uidx", mlx5CQESrqnUidx, 32, "mlx5dv.h struct mlx5_cqe64 (after the 32-byte union)"},
		{"cqe64 imm_inval_pkey", mlx5CQEImm, 36, "mlx5dv.h struct mlx5_cqe64"},
		{"cqe64 byte_cnt", mlx5CQEByteCnt, 44, "mlx5dv.h struct mlx5_cqe64: app app_op app_info"},
		{"cqe64 sop_drop_qpn", mlx5CQESopDropQPN, 56, "mlx5dv.h struct mlx5_cqe64: after timestamp (48)"},
		{"cqe64 wqe_counter", mlx5CQEWqeCounter, 60, "mlx5dv.h struct mlx5_cqe64"},
		{"cqe64 op_own", mlx5CQEOpOwn, 63, "mlx5dv.h struct mlx5_cqe64: signature then op_own, the last byte"},
		{"err_cqe vendor_err_synd", mlx5ErrCQEVendor, 54, "mlx5dv.h struct mlx5_err_cqe: rsvd0[32] srqn rsvd1[18]"},
		{"err_cqe syndrome", mlx5ErrCQESyndrome, 55, "mlx5dv.h struct mlx5_err_cqe"},
		{"MLX5_CQE_REQ", mlx5CQEReq, 0, "mlx5dv.h"},
		{"MLX5_CQE_RESP_WR_IMM", mlx5CQERespWRImm, 1, "mlx5dv.h"},
		{"MLX5_CQE_RESP_SEND", mlx5CQERespSend, 2, "mlx5dv.h"},
		{"MLX5_CQE_RESP_SEND_IMM", mlx5CQERespSendIm, 3, "mlx5dv.h"},
		{"MLX5_CQE_REQ_ERR", mlx5CQEReqErr, 13, "mlx5dv.h"},
		{"MLX5_CQE_RESP_ERR", mlx5CQERespErr, 14, "mlx5dv.h"},
		{"MLX5_CQE_INVALID", mlx5CQEInvalid, 15, "mlx5dv.h"},
		{"CQE size", mlx5CQESize, 64, "mlx5dv.h sizeof(struct mlx5_cqe64)"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x (%s)", c.name, c.got, c.want, c.from)
		}
	}
	for syn, want := range map[uint8]WCStatus{0x01: WCLocLenErr, 0x04: WCLocProtErr, 0x05: WCWRFlushErr,
		0x13: WCRemAccessErr, 0x15: WCRetryExcErr, 0x16: WCRNRRetryExcErr, 0x22: WCRemAbortErr, 0x99: WCGeneralErr} {
		if mlx5Syndrome(syn) != want { // cq.c mlx5_handle_error_cqe, mlx5dv.h MLX5_CQE_SYNDROME_*
			t.Errorf("syndrome %#x → %v, want %v", syn, mlx5Syndrome(syn), want)
		}
	}
}

// m5End is one side of an mlx5 loopback: an RC (or raw) QP with its CQ and
// an MR.
type m5End struct {
	cq *CQ
	qp *QP
	mr *MR
}

func m5Pair(t testing.TB, adjust func(v *fakekernel.Verbs), cqe int, cp QPCap) (*fakekernel.Verbs, *Context, [2]m5End) {
	t.Helper()
	b, c := mlx5Bed(t, adjust)
	v := b.devs["mlx5_0"]
	var e [2]m5End
	for i := range e {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(CQAttr{CQE: cqe})
		if err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: cp})
		if err != nil {
			t.Fatal(err)
		}
		mr, err := pd.AllocMR(1<<16, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		e[i] = m5End{cq, qp, mr}
	}
	connectRC(t, e[0].qp, e[1].qp, rdma.GID{}, rdma.GID{})
	return v, c, e
}

func m5sge(t testing.TB, mr *MR, off, n int) SGE {
	t.Helper()
	s, ok := mr.SGE(off, n)
	if !ok {
		t.Fatalf("SGE(%d, %d) outside the MR", off, n)
	}
	return s
}

func m5Run(t *testing.T, v *fakekernel.Verbs, want int) {
	t.Helper()
	n, err := v.Mlx5Run()
	if err != nil || n != want {
		t.Fatalf("device ran %d WQEs (want %d): %v", n, want, err)
	}
}

func m5Poll1(t *testing.T, cq *CQ) WC {
	t.Helper()
	wc := make([]WC, 2)
	n, err := cq.Poll(wc)
	if err != nil || n != 1 {
		t.Fatalf("Poll = %d, %v; want 1 completion", n, err)
	}
	return wc[0]
}

// The WQE bytes of one SEND: control and data segments as _mlx5_post_send
// writes them, the doorbell record and the UAR doorbell as post_send_db.
func TestMlx5SendWQEBytes(t *testing.T) {
	_, c, e := m5Pair(t, nil, 8, rcCap())
	a := e[0]
	s := m5sge(t, a.mr, 64, 100)
	if n, err := a.qp.PostSend([]SendWR{{ID: 7, Opcode: WRSendWithImm, Flags: SendSignaled | SendSolicited, Imm: 0x01020304, SGL: []SGE{s}}}); n != 1 || err != nil {
		t.Fatalf("PostSend = %d, %v", n, err)
	}
	x := a.qp.mlx5
	w := unsafe.Slice((*byte)(x.sq), 32)
	be := binary.BigEndian
	if got := be.Uint32(w[0:]); got != 0<<8|0x0b {
		t.Errorf("opmod_idx_opcode %#x, want index 0, SEND_IMM", got)
	}
	if got := be.Uint32(w[4:]); got != a.qp.Num()<<8|2 {
		t.Errorf("qpn_ds %#x, want QP %#x, 2 units", got, a.qp.Num())
	}
	if w[8] != 0 || w[9] != 0 || w[10] != 0 || w[11] != 0x08|0x02 || be.Uint32(w[12:]) != 0x01020304 {
		t.Errorf("ctrl bytes 8-15 % x", w[8:16])
	}
	if be.Uint32(w[16:]) != 100 || be.Uint32(w[20:]) != a.mr.LKey() || be.Uint64(w[24:]) != s.Addr {
		t.Errorf("data segment % x", w[16:32])
	}
	if got := be.Uint32(unsafe.Slice((*byte)(unsafe.Pointer(&x.dbrec[mlx5SndDBR])), 4)); got != 1 {
		t.Errorf("send doorbell record %d, want 1", got)
	}
	p := c.prov.(*mlx5Provider)
	if !bytes.Equal(p.uar.mem[0x800:0x808], w[:8]) {
		t.Errorf("UAR 0x800 % x, want the control segment's first 8 bytes", p.uar.mem[0x800:0x808])
	}
	if x.bf.offset != 256 {
		t.Errorf("bf offset %#x after one doorbell, want 0x100 (bf_reg_size / 2)", x.bf.offset)
	}
}

// Loopback on the fake device: SEND (SGL and inline) with and without
// immediate data, RDMA write with immediate, RDMA read; the bytes arrive,
// the CQEs decode.
func TestMlx5Loopback(t *testing.T) {
	v, _, e := m5Pair(t, nil, 8, QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64})
	a, b := e[0], e[1]
	copy(a.mr.Buf(), []byte("hello, mlx5 loopback"))
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 100, SGL: []SGE{m5sge(t, b.mr, 0, 8), m5sge(t, b.mr, 1000, 100)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]SendWR{{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{m5sge(t, a.mr, 0, 20)}}}); err != nil {
		t.Fatal(err)
	}
	m5Run(t, v, 1)
	if got := string(b.mr.Buf()[:8]) + string(b.mr.Buf()[1000:1012]); got != "hello, mlx5 loopback" {
		t.Errorf("received %q", got)
	}
	if w := m5Poll1(t, a.cq); w.ID != 1 || w.Status != WCSuccess || w.Opcode != WCSend || w.QPNum != a.qp.Num() {
		t.Errorf("send WC %+v", w)
	}
	if w := m5Poll1(t, b.cq); w.ID != 100 || w.Status != WCSuccess || w.Opcode != WCRecv || w.ByteLen != 20 || w.SrcQP != a.qp.Num() || w.Flags != 0 {
		t.Errorf("recv WC %+v", w)
	}

	// Inline with immediate; a send without a receive waits (RNR).
	if _, err := a.qp.PostSend([]SendWR{{ID: 2, Opcode: WRSendWithImm, Flags: SendSignaled, Imm: 0xabcdef01, Inline: []byte("inline!")}}); err != nil {
		t.Fatal(err)
	}
	m5Run(t, v, 0)
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 101, SGL: []SGE{m5sge(t, b.mr, 2000, 64)}}}); err != nil {
		t.Fatal(err)
	}
	m5Run(t, v, 1)
	if w := m5Poll1(t, b.cq); w.ID != 101 || w.ByteLen != 7 || w.Flags != WCWithImm || w.Imm != 0xabcdef01 || string(b.mr.Buf()[2000:2007]) != "inline!" {
		t.Errorf("recv WC %+v, bytes %q", w, b.mr.Buf()[2000:2007])
	}
	if w := m5Poll1(t, a.cq); w.ID != 2 || w.Flags != WCWithImm || w.Opcode != WCSend {
		t.Errorf("send WC %+v", w)
	}

	// RDMA write with immediate into b's MR, then read it back.
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 102}}); err != nil {
		t.Fatal(err)
	}
	copy(a.mr.Buf()[4096:], "written remotely")
	if _, err := a.qp.PostSend([]SendWR{{ID: 3, Opcode: WRRDMAWriteWithImm, Flags: SendSignaled, Imm: 9,
		SGL: []SGE{m5sge(t, a.mr, 4096, 16)}, RemoteAddr: b.mr.Addr() + 8192, RKey: b.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]SendWR{{ID: 4, Opcode: WRRDMARead, Flags: SendSignaled,
		SGL: []SGE{m5sge(t, a.mr, 12000, 16)}, RemoteAddr: b.mr.Addr() + 8192, RKey: b.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	m5Run(t, v, 2)
	if string(b.mr.Buf()[8192:8208]) != "written remotely" || string(a.mr.Buf()[12000:12016]) != "written remotely" {
		t.Errorf("RDMA: %q, %q", b.mr.Buf()[8192:8208], a.mr.Buf()[12000:12016])
	}
	if w := m5Poll1(t, b.cq); w.ID != 102 || w.Opcode != WCRecvRDMAWithImm || w.Imm != 9 || w.ByteLen != 16 {
		t.Errorf("write-with-imm WC %+v", w)
	}
	wc := make([]WC, 4)
	if n, err := a.cq.Poll(wc); n != 2 || err != nil || wc[0].ID != 3 || wc[0].Opcode != WCRDMAWrite || wc[1].ID != 4 || wc[1].Opcode != WCRDMARead || wc[1].ByteLen != 16 {
		t.Errorf("Poll = %d, %v: %+v", n, err, wc[:n])
	}
}

// Many rounds through small queues: the CQ's owner bit flips each lap,
// WQEs of two basic blocks wrap the send queue's end, and the doorbell
// records and consumer indices keep up (the fake checks them).
func TestMlx5Wrap(t *testing.T) {
	v, _, e := m5Pair(t, nil, 3, QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 4, MaxRecvSGE: 1, MaxInlineData: 100})
	a, b := e[0], e[1]
	if a.cq.CQE() != 3 || a.qp.mlx5.maxBB != 3 || a.qp.mlx5.sqCnt != 8 {
		t.Fatalf("CQ of %d, WQEs of %d basic blocks", a.cq.CQE()+1, a.qp.mlx5.maxBB)
	}
	msg := make([]byte, 90)
	for i := 0; i < 50; i++ {
		for j := range msg {
			msg[j] = byte(i + j)
		}
		if _, err := b.qp.PostRecv([]RecvWR{{ID: uint64(1000 + i), SGL: []SGE{m5sge(t, b.mr, 0, 128)}}}); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		wr := SendWR{ID: uint64(i), Opcode: WRSend, Flags: SendSignaled}
		if i%3 == 0 { // one basic block: ctrl + data segment
			copy(a.mr.Buf(), msg)
			wr.SGL = []SGE{m5sge(t, a.mr, 0, 90)}
		} else { // two: ctrl + 94 bytes inline
			wr.Inline = msg
		}
		if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		m5Run(t, v, 1)
		if w := m5Poll1(t, b.cq); w.ID != uint64(1000+i) || w.ByteLen != 90 || !bytes.Equal(b.mr.Buf()[:90], msg) {
			t.Fatalf("round %d: recv WC %+v", i, w)
		}
		if w := m5Poll1(t, a.cq); w.ID != uint64(i) || w.Status != WCSuccess {
			t.Fatalf("round %d: send WC %+v", i, w)
		}
	}
}

// A full send queue is ENOMEM until completions free it; a bad lkey is an
// error completion; a CQE naming no QP of ours is EPROTO, not a panic.
func TestMlx5Errors(t *testing.T) {
	v, _, e := m5Pair(t, nil, 16, QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1})
	a, b := e[0], e[1]
	wr := SendWR{Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{m5sge(t, a.mr, 0, 8)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
	n, err := a.qp.PostSend([]SendWR{wr, wr, wr})
	if n != 2 || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("PostSend of 3 into 2 = %d, %v", n, err)
	}
	m5Run(t, v, 2)
	if n, err := a.cq.Poll(make([]WC, 4)); n != 2 || err != nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	bad := wr
	bad.SGL = []SGE{{Addr: wr.SGL[0].Addr, Length: 8, LKey: 0xdead42}}
	if _, err := a.qp.PostSend([]SendWR{bad}); err != nil {
		t.Fatal(err)
	}
	m5Run(t, v, 1)
	if w := m5Poll1(t, a.cq); w.Status != WCLocProtErr {
		t.Errorf("bad lkey: %+v", w)
	}
	if _, err := a.qp.PostSend([]SendWR{{Opcode: WROpcode(99)}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("bad opcode: %v", err)
	}
	if _, err := a.qp.PostSend([]SendWR{{Opcode: WRSend, SGL: make([]SGE, 2)}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("too many SGEs: %v", err)
	}
	// A forged CQE with an unknown user index.
	m := b.cq.m5
	cqe := unsafe.Slice((*byte)(unsafe.Add(m.buf, uintptr(m.ci&(m.entries-1))*64)), 64)
	binary.BigEndian.PutUint32(cqe[mlx5CQESrqnUidx:], 0xabcde)
	cqe[63] = mlx5CQERespSend << 4
	if _, err := b.cq.Poll(make([]WC, 1)); !errors.Is(err, syscall.EPROTO) {
		t.Errorf("CQE for an unknown QP: %v", err)
	}
}

// BlueFlame: a single inline WQE is copied whole into the UAR register;
// the next doorbell goes to the other half.
func TestMlx5BlueFlame(t *testing.T) {
	v, c, e := m5Pair(t, nil, 8, QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 64})
	a, b := e[0], e[1]
	if _, err := b.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{m5sge(t, b.mr, 0, 64)}}, {ID: 2, SGL: []SGE{m5sge(t, b.mr, 0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend([]SendWR{{Opcode: WRSend, Inline: bytes.Repeat([]byte{0x5a}, 40)}}); err != nil {
		t.Fatal(err)
	}
	uar := c.prov.(*mlx5Provider).uar.mem
	wqe := unsafe.Slice((*byte)(a.qp.mlx5.sq), 128)
	if !bytes.Equal(uar[0x800:0x840], wqe[:64]) {
		t.Errorf("BlueFlame register % x\nwant the WQE % x", uar[0x800:0x840], wqe)
	}
	if _, err := a.qp.PostSend([]SendWR{{Opcode: WRSend, SGL: []SGE{m5sge(t, a.mr, 0, 4)}}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(uar[0x900:0x908], wqe[64:72]) {
		t.Errorf("second doorbell at 0x900: % x, want % x", uar[0x900:0x908], wqe[64:72])
	}
	m5Run(t, v, 2)
	// Without write combining (an NC UAR): no BlueFlame, one register.
	v2, c2, e2 := m5Pair(t, func(v *fakekernel.Verbs) { v.Mlx5.WC = false }, 8, QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 64})
	if _, err := e2[1].qp.PostRecv([]RecvWR{{SGL: []SGE{m5sge(t, e2[1].mr, 0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e2[0].qp.PostSend([]SendWR{{Opcode: WRSend, Inline: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	p2 := c2.prov.(*mlx5Provider)
	if !p2.uar.nc || e2[0].qp.mlx5.bf.offset != 0 || !bytes.Equal(p2.uar.mem[0x800:0x808], unsafe.Slice((*byte)(e2[0].qp.mlx5.sq), 8)) || p2.uar.mem[0x808] != 0 {
		t.Errorf("NC UAR: nc %v, offset %d, register % x", p2.uar.nc, e2[0].qp.mlx5.bf.offset, p2.uar.mem[0x800:0x810])
	}
	m5Run(t, v2, 1)
}

// Static bfregs (a kernel without DYN_UAR): the QP rings bfreg 1, the
// second register of static UAR page 0.
func TestMlx5StaticBfreg(t *testing.T) {
	v, _, e := m5Pair(t, func(v *fakekernel.Verbs) { v.Mlx5.DynUAR = false }, 8, rcCap())
	if _, err := e[1].qp.PostRecv([]RecvWR{{SGL: []SGE{m5sge(t, e[1].mr, 0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e[0].qp.PostSend([]SendWR{{Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{m5sge(t, e[0].mr, 0, 4)}}}); err != nil {
		t.Fatal(err)
	}
	m5Run(t, v, 1)
	m5Poll1(t, e[0].cq)
}

// RAW_PACKET: a send becomes a frame, its first 18 bytes from the
// Ethernet segment; a frame delivered lands in a receive WQE.
func TestMlx5RawPacket(t *testing.T) {
	b, c := mlx5Bed(t, func(v *fakekernel.Verbs) { v.NetRaw = true })
	v := b.devs["mlx5_0"]
	pd, _ := c.AllocPD()
	cq, err := c.CreateCQ(CQAttr{CQE: 8})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInlineData: 64}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		a QPAttr
		m QPAttrMask
	}{{QPAttr{State: QPStateInit, Port: 1}, QPAttrState | QPAttrPort}, {QPAttr{State: QPStateRTR}, QPAttrState}, {QPAttr{State: QPStateRTS}, QPAttrState}} {
		if err := qp.Modify(&s.a, s.m); err != nil {
			t.Fatal(err)
		}
	}
	mr, err := pd.AllocMR(4096, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	frame := []byte("\xff\xff\xff\xff\xff\xff\x02\x00\x00\x00\x00\x01\x88\xb5payload, split over two SGEs")
	copy(mr.Buf(), frame[:10])
	copy(mr.Buf()[100:], frame[10:])
	if _, err := qp.PostSend([]SendWR{{ID: 5, Opcode: WRSend, Flags: SendSignaled,
		SGL: []SGE{m5sge(t, mr, 0, 10), m5sge(t, mr, 100, len(frame)-10)}}}); err != nil {
		t.Fatal(err)
	}
	eth := unsafe.Slice((*byte)(unsafe.Add(qp.mlx5.sq, 16)), 32)
	if binary.BigEndian.Uint16(eth[12:]) != 18 || !bytes.Equal(eth[14:32], frame[:18]) {
		t.Errorf("Ethernet segment % x", eth)
	}
	if _, err := qp.PostSend([]SendWR{{ID: 6, Opcode: WRSend, Flags: SendSignaled, Inline: frame}}); err != nil {
		t.Fatal(err)
	}
	m5Run(t, v, 2)
	got := v.Mlx5Frames()
	if len(got) != 2 || !bytes.Equal(got[0], frame) || !bytes.Equal(got[1], frame) {
		t.Errorf("frames %q", got)
	}
	wc := make([]WC, 4)
	if n, err := cq.Poll(wc); n != 2 || err != nil || wc[0].ID != 5 || wc[1].ID != 6 {
		t.Errorf("Poll = %d, %v: %+v", n, err, wc[:n])
	}
	if _, err := qp.PostSend([]SendWR{{Opcode: WRSend, Inline: frame[:17]}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a 17-byte packet: %v", err)
	}
	if _, err := qp.PostRecv([]RecvWR{{ID: 9, SGL: []SGE{m5sge(t, mr, 2048, 1500)}}}); err != nil {
		t.Fatal(err)
	}
	if err := v.Mlx5Deliver(qp.Num(), frame); err != nil {
		t.Fatal(err)
	}
	if w := m5Poll1(t, cq); w.ID != 9 || w.ByteLen != uint32(len(frame)) || !bytes.Equal(mr.Buf()[2048:2048+len(frame)], frame) {
		t.Errorf("received %+v", w)
	}
}

// The mlx5 data path allocates nothing: PostRecv, PostSend (SGL and
// BlueFlame inline) and Poll, the fake device's work left out.
func TestMlx5Allocs(t *testing.T) {
	v, _, e := m5Pair(t, nil, 16, QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 32})
	a, b := e[0], e[1]
	rwr := []RecvWR{{SGL: []SGE{m5sge(t, b.mr, 0, 64)}}}
	swr := []SendWR{{Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{m5sge(t, a.mr, 0, 64)}}, {Opcode: WRSend, Flags: SendSignaled, Inline: []byte("0123")}}
	wc := make([]WC, 4)
	// MemStats counts the whole process: a collection (its workers
	// allocate) or another test's timer goroutine ending during the count
	// would be counted too. So no collection, and a count above 0 is
	// taken again, twice at most; the data path's own allocations show
	// in every one.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var ms runtime.MemStats
	var total uint64
	measure := func(f func()) {
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		f()
		runtime.ReadMemStats(&ms)
		total += ms.Mallocs - before
	}
	for try := 0; try < 3; try++ {
		total = 0
		for i := 0; i < 100; i++ {
			measure(func() {
				b.qp.PostRecv(rwr)
				a.qp.PostSend(swr[i%2 : i%2+1])
			})
			m5Run(t, v, 1)
			measure(func() {
				a.cq.Poll(wc)
				b.cq.Poll(wc)
			})
		}
		if total == 0 {
			break
		}
	}
	if total != 0 {
		t.Errorf("%d allocations in 100 rounds of PostRecv, PostSend and Poll", total)
	}
}

// The fake device is strict where hardware is: a doorbell record advanced
// without the UAR write is not seen, and a CQ whose consumer index (its
// doorbell record) lags a whole ring overruns.
func TestMlx5DeviceChecks(t *testing.T) {
	v, c, e := m5Pair(t, nil, 3, QPCap{MaxSendWR: 8, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1})
	a, b := e[0], e[1]
	wr := SendWR{Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{m5sge(t, a.mr, 0, 8)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
	if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	uar := c.prov.(*mlx5Provider).uar.mem
	saved := append([]byte(nil), uar[0x800:0x808]...)
	clear(uar[0x800:0x808])
	if _, err := v.Mlx5Run(); err == nil {
		t.Error("a doorbell record without the UAR write: the device ran it")
	}
	copy(uar[0x800:0x808], saved)
	m5Run(t, v, 1)
	// Four more fill the 4-entry CQ; the fifth overruns it.
	if n, err := a.qp.PostSend([]SendWR{wr, wr, wr, wr}); n != 4 || err != nil {
		t.Fatal(n, err)
	}
	if n, err := v.Mlx5Run(); err == nil {
		t.Errorf("ran %d WQEs into a full CQ without an overrun", n)
	}
}

// Whatever a device writes into a CQE, Poll decodes it without a panic:
// the user index, QP number and wqe_counter are bounded before they index
// anything. The CQE goes into the slot Poll reads next, owned by software.
func FuzzMlx5PollCQE(f *testing.F) {
	f.Add(make([]byte, 64))
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	good := make([]byte, 64)
	binary.BigEndian.PutUint32(good[mlx5CQESrqnUidx:], 1)
	binary.BigEndian.PutUint16(good[mlx5CQEWqeCounter:], 0xffff)
	good[63] = mlx5CQEReqErr << 4
	f.Add(good)
	_, _, e := m5Pair(f, nil, 3, rcCap())
	cq := e[0].cq
	f.Fuzz(func(t *testing.T, b []byte) {
		m := cq.m5
		cqe := unsafe.Slice((*byte)(unsafe.Add(m.buf, uintptr(m.ci&(m.entries-1))*64)), 64)
		copy(cqe, b)
		cqe[63] &^= 1 // the owner bit software expects on this lap
		if m.ci&m.entries != 0 {
			cqe[63] |= 1
		}
		wc := make([]WC, 2)
		n, _ := cq.Poll(wc)
		if n < 0 || n > len(wc) {
			t.Fatalf("Poll = %d", n)
		}
		clear(cqe[:63]) // not this entry's again, whatever the next lap expects
		cqe[63] = mlx5CQEInvalid << 4
	})
}

// The mlx5 data path's own cost on the fake (make bench): the device's
// side is played by the benchmark in a few stores — the send queue's tail
// moved as a completion would, a receive WQE taken, a CQE written with the
// right owner bit — so only the library is measured.
func BenchmarkPostSendMlx5Fake(b *testing.B) {
	_, _, e := m5Pair(b, nil, 16, rcCap())
	wr := []SendWR{{Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{m5sge(b, e[0].mr, 0, 64)}}}
	x := e[0].qp.mlx5
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e[0].qp.PostSend(wr); err != nil {
			b.Fatal(err)
		}
		x.sqTail = x.sqCur
	}
}

func BenchmarkPostRecvMlx5Fake(b *testing.B) {
	_, _, e := m5Pair(b, nil, 16, rcCap())
	wr := []RecvWR{{SGL: []SGE{m5sge(b, e[0].mr, 0, 64)}}}
	x := e[0].qp.mlx5
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e[0].qp.PostRecv(wr); err != nil {
			b.Fatal(err)
		}
		x.rqTail = x.rqHead
	}
}

func BenchmarkPollMlx5Fake(b *testing.B) {
	_, _, e := m5Pair(b, nil, 16, rcCap())
	cq, x := e[0].cq, e[0].qp.mlx5
	m := cq.m5
	wc := make([]WC, 2)
	b.ReportAllocs()
	for b.Loop() {
		cqe := unsafe.Slice((*byte)(unsafe.Add(m.buf, uintptr(m.ci&(m.entries-1))*64)), 64)
		binary.BigEndian.PutUint32(cqe[mlx5CQESrqnUidx:], x.uidx)
		binary.BigEndian.PutUint32(cqe[mlx5CQESopDropQPN:], mlx5OpcodeSend<<24|x.qpn)
		owner := byte(0)
		if m.ci&m.entries != 0 {
			owner = 1
		}
		cqe[63] = mlx5CQEReq<<4 | owner
		if n, err := cq.Poll(wc); n != 1 || err != nil {
			b.Fatal(n, err)
		}
	}
}

// Pollers of different CQs share no lock: a CQE's QP is looked up in the
// context's table without one (as libmlx5's mlx5_find_qp), so polls go on
// while a QP create or destroy writes the table, and while other CQs are
// polled. Only each CQ's own lock orders its pollers.
func TestMlx5PollsShareNoLock(t *testing.T) {
	v, c, e := m5Pair(t, nil, 8, rcCap())
	a, b := e[0], e[1]
	p := c.prov.(*mlx5Provider)
	round := func(id uint64) {
		t.Helper()
		if _, err := b.qp.PostRecv([]RecvWR{{ID: id, SGL: []SGE{m5sge(t, b.mr, 0, 64)}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.qp.PostSend([]SendWR{{ID: id, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{m5sge(t, a.mr, 0, 16)}}}); err != nil {
			t.Fatal(err)
		}
		m5Run(t, v, 1)
	}

	// The table's writer holds its lock: both CQs are polled anyway.
	round(1)
	p.qps.mu.Lock()
	done := make(chan [2]WC, 1)
	go func() {
		var got [2]WC
		wc := make([]WC, 1)
		for i, cq := range []*CQ{a.cq, b.cq} {
			if n, err := cq.Poll(wc); n == 1 && err == nil {
				got[i] = wc[0]
			}
		}
		done <- got
	}()
	select {
	case got := <-done:
		if got[0].ID != 1 || got[0].Opcode != WCSend || got[1].ID != 1 || got[1].Opcode != WCRecv {
			t.Errorf("polled %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("Poll waited for a QP being created or destroyed")
	}
	p.qps.mu.Unlock()

	// Two pollers of two CQs, while QPs come and go on a third (-race).
	cq3, err := c.CreateCQ(CQAttr{CQE: 8})
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	churned := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				churned <- nil
				return
			default:
			}
			qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq3, RecvCQ: cq3, Cap: rcCap()})
			if err == nil {
				err = qp.Close()
			}
			if err != nil {
				churned <- err
				return
			}
		}
	}()
	// Each batch: 4 completions on each CQ (the queues have 8 slots),
	// then one poller per CQ. The pollers start after the posts: the
	// fake device's hand-off from post to CQE is not one the race
	// detector sees.
	const batches, batch = 10, 4
	for i := range batches {
		for j := range batch {
			round(uint64(100 + i*batch + j))
		}
		var wg sync.WaitGroup
		var polled [2]int
		for k, cq := range []*CQ{a.cq, b.cq} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wc := make([]WC, 2)
				for deadline := time.Now().Add(10 * time.Second); polled[k] < batch && time.Now().Before(deadline); {
					n, err := cq.Poll(wc)
					if err != nil {
						t.Error(err)
						return
					}
					polled[k] += n
				}
			}()
		}
		wg.Wait()
		if polled != [2]int{batch, batch} {
			t.Fatalf("batch %d: polled %v, want %d each", i, polled, batch)
		}
	}
	close(stop)
	if err := <-churned; err != nil {
		t.Fatal(err)
	}
	if err := pd.Close(); err != nil {
		t.Error(err)
	}
	if err := cq3.Close(); err != nil {
		t.Error(err)
	}
}
