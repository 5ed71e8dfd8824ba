package fakekernel

import (
	"encoding/binary"
	"math/bits"
	"syscall"

	"github.com/purerdma/rdma/abi"
)

// srqVal is the model's state of a shared receive queue.
type srqVal struct {
	pd         *Object
	userHandle uint64
	num        uint32
	maxWr      uint32 // the queue's usable slots (rxe: index_mask)
	maxSge     uint32
	limit      uint32
	m5         *m5SRQ // mlx5: the buffer, its doorbell record, the device's place in the list
}

// m5SRQ is the device's view of an mlx5 SRQ: WQEs of 1 << shift bytes
// (struct mlx5_wqe_srq_next_seg, then data segments) linked by
// next_wqe_index; the device takes them from head on, as many as the
// doorbell record's counter says were posted.
type m5SRQ struct {
	buf, db  uint64
	max      uint32
	shift    uint32
	head     uint32 // the next WQE the device takes
	consumed uint32
}

// SRQ limits of rxe (rxe_param.h RXE_MIN_SRQ_WR, RXE_MIN_SRQ_SGE).
const (
	rxeMinSRQWr  = 1
	rxeMinSRQSge = 1
)

func init() {
	writeCmds[abi.IB_USER_VERBS_CMD_CREATE_SRQ] = writeCmd{"CREATE_SRQ", 32, 16, (*Verbs).wCreateSRQ}
	writeCmds[abi.IB_USER_VERBS_CMD_MODIFY_SRQ] = writeCmd{"MODIFY_SRQ", 16, 0, (*Verbs).wModifySRQ}
	writeCmds[abi.IB_USER_VERBS_CMD_QUERY_SRQ] = writeCmd{"QUERY_SRQ", 16, 16, (*Verbs).wQuerySRQ}
	writeCmds[abi.IB_USER_VERBS_CMD_DESTROY_SRQ] = writeCmd{"DESTROY_SRQ", 16, 4, (*Verbs).wDestroySRQ}
}

// srqCheck is rxe_srq_chk_attr: mask bit 0 (IB_SRQ_MAX_WR) needs 1 ≤
// max_wr ≤ max_srq_wr and, with a limit armed, max_wr ≥ the limit; bit 1
// (IB_SRQ_LIMIT) a limit ≤ max_srq_wr and, on an SRQ, ≤ its size; at
// creation max_sge ≤ max_srq_sge. EINVAL otherwise.
func (v *Verbs) srqCheck(s *srqVal, maxWr, limit, maxSge uint32, mask uint32, create bool) error {
	a := &v.Attr.Base
	if mask&1 != 0 {
		if maxWr == 0 || maxWr > a.MaxSrqWr || (s != nil && s.limit != 0 && maxWr < s.limit) {
			return syscall.EINVAL
		}
	}
	if mask&2 != 0 {
		if limit > a.MaxSrqWr || (s != nil && limit > s.maxWr) {
			return syscall.EINVAL
		}
	}
	if create && maxSge > a.MaxSrqSge {
		return syscall.EINVAL
	}
	return nil
}

// wCreateSRQ is ib_uverbs_create_srq with rxe's rxe_create_srq: the PD
// must exist (ENOENT); the sizes pass rxe_srq_chk_attr; the driver output
// must hold struct rxe_create_srq_resp (EINVAL), which gets the queue's
// mminfo (a queue of roundup_pow_of_two(max_wr + 1) slots) and srq_num;
// the response the handle, the sizes granted and the SRQ number. mlx5:
// mlx5CheckSRQ. Other drivers: EOPNOTSUPP.
func (v *Verbs) wCreateSRQ(c *Call, in []byte) error {
	req, err := request(in, 32)
	if err != nil {
		return err
	}
	r := fromBytes[abi.IbUverbsCreateSrq](req)
	pd, err := c.lookup(abi.UVERBS_OBJECT_PD, r.PdHandle)
	if err != nil {
		return err
	}
	s := &srqVal{pd: pd, userHandle: r.UserHandle, maxSge: r.MaxSge, limit: r.SrqLimit}
	switch v.DriverID {
	case abi.RDMA_DRIVER_RXE:
		if err := v.srqCheck(nil, r.MaxWr, r.SrqLimit, r.MaxSge, 3, true); err != nil {
			return err
		}
		if c.OutLen(abi.UVERBS_ATTR_UHW_OUT) < 24 {
			return syscall.EINVAL
		}
	case abi.RDMA_DRIVER_MLX5:
		if err := v.mlx5CheckSRQ(c, s, r.MaxWr); err != nil {
			return err
		}
	default:
		return syscall.EOPNOTSUPP
	}
	o, err := c.create(abi.UVERBS_OBJECT_SRQ, false)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.nextSRQN++
	s.num = v.nextSRQN
	v.mu.Unlock()
	var drv []byte
	if s.m5 == nil {
		s.maxSge = max(s.maxSge, rxeMinSRQSge)
		q, slots := rxeQueue(max(r.MaxWr, rxeMinSRQWr), 48+16*int(s.maxSge))
		s.maxWr = slots - 1
		drv = binary.LittleEndian.AppendUint32(v.rxeMminfo(c, q, "rxe srq"), s.num)
	} else {
		drv = binary.LittleEndian.AppendUint32(nil, s.num) // struct mlx5_ib_create_srq_resp
	}
	drv = binary.LittleEndian.AppendUint32(drv, 0)
	if n := c.OutLen(abi.UVERBS_ATTR_UHW_OUT); n > 0 {
		if err := c.Out(abi.UVERBS_ATTR_UHW_OUT, drv[:min(n, len(drv))], false); err != nil {
			return err
		}
	}
	o.Value = s
	pd.Users++
	v.logf("create srq %d", o.Handle)
	resp := binary.LittleEndian.AppendUint32(nil, o.Handle)
	resp = binary.LittleEndian.AppendUint32(resp, s.maxWr)
	resp = binary.LittleEndian.AppendUint32(resp, s.maxSge)
	resp = binary.LittleEndian.AppendUint32(resp, s.num)
	return response(c, resp)
}

func (v *Verbs) srqOf(c *Call, handle uint32) (*Object, *srqVal, error) {
	o, err := c.lookup(abi.UVERBS_OBJECT_SRQ, handle)
	if err != nil {
		return nil, nil, err
	}
	return o, o.Value.(*srqVal), nil
}

// wModifySRQ is ib_uverbs_modify_srq with rxe_modify_srq: the driver data
// must hold struct rxe_modify_srq_cmd (EINVAL); the attributes pass
// rxe_srq_chk_attr; a resize (IB_SRQ_MAX_WR) makes a new queue and writes
// its struct mminfo to the user address mmap_info_addr names (the model
// does not carry the posted requests over: it cannot see the mapping).
func (v *Verbs) wModifySRQ(c *Call, in []byte) error {
	req, err := request(in, 16)
	if err != nil {
		return err
	}
	r := fromBytes[abi.IbUverbsModifySrq](req)
	o, s, err := v.srqOf(c, r.SrqHandle)
	if err != nil {
		return err
	}
	if s.m5 != nil {
		// mlx5_ib_modify_srq: no resize; a limit within the queue.
		if r.AttrMask&1 != 0 || (r.AttrMask&2 != 0 && r.SrqLimit >= s.m5.max) {
			return syscall.EINVAL
		}
		if r.AttrMask&2 != 0 {
			s.limit = r.SrqLimit
		}
		v.logf("modify srq %d mask %d", o.Handle, r.AttrMask)
		return nil
	}
	drv := c.UHWIn()
	if len(drv) < 8 {
		return syscall.EINVAL
	}
	if err := v.srqCheck(s, r.MaxWr, r.SrqLimit, 0, r.AttrMask, false); err != nil {
		return err
	}
	if r.AttrMask&1 != 0 {
		q, slots := rxeQueue(r.MaxWr, 48+16*int(s.maxSge))
		addr := binary.LittleEndian.Uint64(drv)
		if addr == 0 {
			return syscall.EFAULT
		}
		copy(mem(addr, 16), v.rxeMminfo(c, q, "rxe srq"))
		s.maxWr = slots - 1
	}
	if r.AttrMask&2 != 0 {
		s.limit = r.SrqLimit
	}
	v.logf("modify srq %d mask %d", o.Handle, r.AttrMask)
	return nil
}

// wQuerySRQ is ib_uverbs_query_srq: max_wr, max_sge, srq_limit.
func (v *Verbs) wQuerySRQ(c *Call, in []byte) error {
	req, err := request(in, 16)
	if err != nil {
		return err
	}
	_, s, err := v.srqOf(c, binary.LittleEndian.Uint32(req[8:]))
	if err != nil {
		return err
	}
	return response(c, structBytes(&abi.IbUverbsQuerySrqResp{MaxWr: s.maxWr, MaxSge: s.maxSge, SrqLimit: s.limit}))
}

// wDestroySRQ is ib_uverbs_destroy_srq: EBUSY while QPs use the SRQ
// (ib_destroy_srq_user), else the PD's reference dropped and the object
// gone; events_reported is 0.
func (v *Verbs) wDestroySRQ(c *Call, in []byte) error {
	req, err := request(in, 16)
	if err != nil {
		return err
	}
	o, s, err := v.srqOf(c, binary.LittleEndian.Uint32(req[8:]))
	if err != nil {
		return err
	}
	if o.Users > 0 {
		return syscall.EBUSY
	}
	s.pd.Users--
	c.File.remove(o)
	v.logf("destroy srq %d", o.Handle)
	return response(c, make([]byte, 4))
}

// mlx5CheckSRQ is mlx5_ib_create_srq and create_srq_user: max_wr below
// the device's max_srq_wr (EINVAL); struct mlx5_ib_create_srq with flags
// 0 or MLX5_SRQ_FLAG_SIGNATURE and zero reserved fields (EINVAL); the user
// index as get_srq_user_index wants it (with CQE version 1 present and
// not MLX5_IB_DEFAULT_UIDX, with version 0 absent or the default); a
// buffer and doorbell record (EFAULT). The queue holds
// roundup_pow_of_two(max_wr + 1) WQEs of roundup_pow_of_two(16 + 16 ×
// max_sge) bytes, at least 32; it answers max_wr as that count - 1.
func (v *Verbs) mlx5CheckSRQ(c *Call, s *srqVal, maxWr uint32) error {
	if maxWr >= v.Attr.Base.MaxSrqWr || s.maxSge > v.Attr.Base.MaxSrqSge {
		return syscall.EINVAL
	}
	in := c.UHWIn()
	cmd := fromBytes[abi.Mlx5IbCreateSrq](in[:min(len(in), 32)])
	if cmd.Flags&^abi.MLX5_SRQ_FLAG_SIGNATURE != 0 || cmd.Reserved0 != 0 || cmd.Reserved1 != 0 {
		return syscall.EINVAL
	}
	hasUidx := len(in) >= 24
	if v.state(c.File).mlx5.cqeVersion >= 1 {
		if !hasUidx || cmd.Uidx == 0xffffff || cmd.Uidx&^0xffffff != 0 {
			return syscall.EINVAL
		}
	} else if hasUidx && cmd.Uidx != 0xffffff {
		return syscall.EINVAL
	}
	if cmd.BufAddr == 0 || cmd.DbAddr == 0 {
		return syscall.EFAULT
	}
	desc := max(32, roundUpPow2(16+16*s.maxSge))
	m := &m5SRQ{buf: cmd.BufAddr, db: cmd.DbAddr, max: roundUpPow2(maxWr + 1), shift: uint32(bits.TrailingZeros32(desc))}
	s.m5, s.maxWr = m, m.max-1
	return nil
}

func roundUpPow2(v uint32) uint32 {
	if v <= 1 {
		return 1
	}
	return 1 << bits.Len32(v-1)
}
