package fakekernel

import (
	"encoding/binary"
	"math/bits"
	"syscall"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// Mlx5Caps are the mlx5 device capabilities the driver rules depend on.
type Mlx5Caps struct {
	// CQEVersion is MLX5_CAP_GEN(cqe_version): the context's CQE version
	// is min(this, the request's max_cqe_version).
	CQEVersion uint8
	// DynUAR says whether the kernel knows MLX5_LIB_CAP_DYN_UAR; without
	// it the bit is ignored and static bfregs are allocated.
	DynUAR bool
	// WC says whether the device has write combining (BF UARs).
	WC bool
	// LogMaxQPSz and LogMaxCQSz bound WQE and CQE counts (log2).
	LogMaxQPSz, LogMaxCQSz uint8
}

// MLX5 returns a ConnectX device with one Ethernet (RoCE) port. Its
// attributes are plausible values for a ConnectX-5, not a capture (the
// project has no mlx5 hardware); the rules are the driver's (mlx5 main.c
// mlx5_ib_alloc_ucontext, mlx5_ib_alloc_pd; cq.c create_cq_user; qp.c
// _create_user_qp), and where mock0 runs them on the real kernel they agree
// (docs/mock0.md):
//
//   - GET_CONTEXT: UHW_IN of exactly 8 bytes (v0) or at least 16 (v2),
//     anything else, none included, EINVAL; flags other than DEVX, a
//     comp_mask or reserved bytes EOPNOTSUPP; num_low_latency_bfregs ≥
//     total (rounded up to even) EINVAL; without DYN_UAR a total of 0
//     EINVAL and above 512 ENOMEM; the CQE version is min(device, request);
//     the response is copied min(outlen, 72) bytes.
//   - ALLOC_PD and CREATE_CQ write their 4-byte driver output without a
//     length check: a missing or shorter UHW_OUT is EFAULT.
//   - EX_QUERY_DEVICE: driver output, if any, at least 8 bytes (EINVAL),
//     driver input must be zero (EINVAL).
//   - UAR objects: only with DYN_UAR (EOPNOTSUPP), type BF or NC
//     (EOPNOTSUPP), BF only with write combining (EOPNOTSUPP); the mmap
//     offset must be mapped whole.
//   - CQ: UHW_IN ≥ 22 bytes, cqe_size 64 or 128, reserved zero, flags ⊆
//     {CQE_128B_PAD, UAR_PAGE_INDEX, REAL_TIME_TS} (all EINVAL); with
//     DYN_UAR the CQ must name a UAR of the context (flag + 16-bit index,
//     or the 0x1002 driver attribute) (EINVAL); entries =
//     roundup_pow_of_two(cqe+1) ≤ 2^log_max_cq_sz (EINVAL); buffer and
//     doorbell addresses non-zero (EFAULT).
//   - QP: UHW_IN ≥ 48 bytes and zero from byte 54 (EINVAL); with CQE
//     version ≥ 1 a user index within 24 bits, with version 0 the default
//     index 0xffffff (EINVAL); RAW_PACKET only with CQE version ≥ 1 and at
//     least one WQE count (EINVAL); sq_wqe_count a power of two ≤
//     2^log_max_qp_sz (EINVAL); UAR_PAGE_INDEX and BFREG_INDEX together,
//     or neither with DYN_UAR, EINVAL; the page index must be a UAR of the
//     context (EINVAL); other vendor flags EINVAL; buffers and doorbell
//     non-zero (EFAULT); the response is copied min(outlen, 40) bytes with
//     bfreg_index 0x80000000 when userspace chose the UAR.
func MLX5(name string) *Verbs {
	v := &Verbs{Name: name, DriverID: abi.RDMA_DRIVER_MLX5, NumCompVectors: 8,
		Mlx5: Mlx5Caps{CQEVersion: 1, DynUAR: true, WC: true, LogMaxQPSz: 15, LogMaxCQSz: 22}}
	guid := uint64(0x0c42a10300a1b2c3)
	b := &v.Attr.Base
	b.FwVer = 16<<32 | 35<<16 | 2000
	b.NodeGuid = hostToBE(guid)
	b.SysImageGuid = hostToBE(guid)
	b.MaxMrSize = ^uint64(0)
	b.PageSizeCap = 0xfffffffffffff000
	b.VendorId = 0x02c9
	b.VendorPartId = 4119
	b.MaxQp = 262144
	b.MaxQpWr = 32768
	b.DeviceCapFlags = 0xed721c36
	b.MaxSge = 30
	b.MaxSgeRd = 30
	b.MaxCq = 16777216
	b.MaxCqe = 4194303
	b.MaxMr = 16777216
	b.MaxPd = 16777216
	b.MaxQpRdAtom = 16
	b.MaxResRdAtom = 4194304
	b.MaxQpInitRdAtom = 16
	b.AtomicCap = 1
	b.MaxMw = 16777216
	b.MaxMcastGrp = 2097152
	b.MaxMcastQpAttach = 240
	b.MaxTotalMcastQpAttach = 503316480
	b.MaxAh = 0x7fffffff
	b.MaxSrq = 8388608
	b.MaxSrqWr = 32767
	b.MaxSrqSge = 31
	b.MaxPkeys = 128
	b.LocalCaAckDelay = 16
	b.PhysPortCnt = 1
	v.Attr.DeviceCapFlagsEx = 0x15ed721c36
	v.Attr.OdpCaps.GeneralCaps = 1
	v.Attr.OdpCaps.PerTransportCaps.RcOdpCaps = 0x2f
	v.Attr.TimestampMask = 0x7fffffffffffffff
	v.Attr.HcaCoreClock = 156250
	v.Attr.RssCaps.SupportedQpts = 1 << abi.IB_UVERBS_QPT_RAW_PACKET
	v.Attr.RssCaps.MaxRwqIndirectionTables = 1048576
	v.Attr.RssCaps.MaxRwqIndirectionTableSize = 2048
	v.Attr.MaxWqTypeRq = 8388608
	v.Attr.RawPacketCaps = abi.IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING | abi.IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS | abi.IB_UVERBS_RAW_PACKET_CAP_IP_CSUM | abi.IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP
	v.Attr.CqModerationCaps.MaxCqModerationCount = 65535
	v.Attr.CqModerationCaps.MaxCqModerationPeriod = 4095
	v.Attr.MaxDmSize = 131072

	var p Port
	l := &p.Attr.LegacyResp
	l.State, l.MaxMtu, l.ActiveMtu, l.LinkLayer = 4, 5, 4, 2
	l.MaxMsgSz = 0x40000000
	l.PortCapFlags = 0x04010000
	l.MaxVlNum = 4
	l.PkeyTblLen = 1
	l.GidTblLen = 256
	l.ActiveWidth = 2
	l.ActiveSpeed = 32
	l.PhysState = 5
	var g0 [16]byte
	g0[0], g0[1] = 0xfe, 0x80
	binary.BigEndian.PutUint64(g0[8:], guid^0x0200000000000000)
	p.GIDs = []abi.IbUverbsGidEntry{
		{Gid: gidWords(g0), GidIndex: 0, PortNum: 1, GidType: abi.IB_UVERBS_GID_TYPE_ROCE_V1, NetdevIfindex: 4},
		{Gid: gidWords(g0), GidIndex: 1, PortNum: 1, GidType: abi.IB_UVERBS_GID_TYPE_ROCE_V2, NetdevIfindex: 4},
	}
	v.Ports = []Port{p}
	return v
}

// mlx5Context is the mlx5 part of a file's ucontext.
type mlx5Context struct {
	cqeVersion uint8
	dynUAR     bool
	totBfregs  uint32
}

func (v *Verbs) mlx5AllocUcontext(c *Call) error {
	in := c.UHWIn()
	if len(in) != 8 && len(in) < 16 {
		return syscall.EINVAL
	}
	req := fromBytes[abi.Mlx5IbAllocUcontextReqV2](in[:min(len(in), 32)])
	if req.Flags&^abi.MLX5_IB_ALLOC_UCTX_DEVX != 0 {
		return syscall.EOPNOTSUPP
	}
	if req.CompMask != 0 || req.Reserved0 != 0 || req.Reserved1 != 0 || req.Reserved2 != 0 {
		return syscall.EOPNOTSUPP
	}
	total := (req.TotalNumBfregs + 1) &^ 1 // ALIGN(total, MLX5_NON_FP_BFREGS_PER_UAR)
	if req.NumLowLatencyBfregs > total-1 {
		return syscall.EINVAL
	}
	st := v.state(c.File)
	dyn := len(in) >= 32 && req.LibCaps&abi.MLX5_LIB_CAP_DYN_UAR != 0 && v.Mlx5.DynUAR
	if !dyn {
		if total == 0 {
			return syscall.EINVAL
		}
		if total > 512 {
			return syscall.ENOMEM
		}
		st.mlx5.totBfregs = total
		// The static UAR pages, one per two bfregs, that mlx5_ib_mmap
		// (uar_mmap) maps at MLX5_IB_MMAP_REGULAR_PAGE << 8 | index,
		// one page at a time.
		for i := uint32(0); i < total/2; i++ {
			st.mmaps[int64(i)*int64(sys.PageSize)] = mmapRegion{length: sys.PageSize, exact: true, what: "mlx5 static uar", uar: true}
		}
	}
	st.mlx5.dynUAR = dyn
	if len(in) >= 17 {
		st.mlx5.cqeVersion = min(v.Mlx5.CQEVersion, req.MaxCqeVersion)
	}
	resp := &abi.Mlx5IbAllocUcontextResp{
		QpTabSize: 1 << 18, TotBfregs: st.mlx5.totBfregs, CacheLineSize: 64,
		MaxSqDescSz: 512, MaxRqDescSz: 512, MaxSendWqebb: 1 << v.Mlx5.LogMaxQPSz,
		MaxRecvWr: 1 << v.Mlx5.LogMaxQPSz, MaxSrqRecvWr: 32767, NumPorts: uint16(len(v.Ports)),
		CqeVersion: st.mlx5.cqeVersion, LogUarSize: 12, NumUarsPerPage: 1,
	}
	if v.Mlx5.WC {
		resp.BfRegSize = 512
	}
	n := max(c.OutLen(abi.UVERBS_ATTR_UHW_OUT), 0)
	resp.ResponseLength = uint32(min(n, 72))
	st.uctx = append([]byte(nil), structBytes(resp)...)
	if n > 0 {
		return c.Out(abi.UVERBS_ATTR_UHW_OUT, st.uctx[:min(n, 72)], false)
	}
	return nil
}

func (v *Verbs) mlx5QueryDevice(c *Call) error {
	for _, b := range c.UHWIn() {
		if b != 0 {
			return syscall.EINVAL
		}
	}
	n := c.OutLen(abi.UVERBS_ATTR_UHW_OUT)
	if n <= 0 {
		return nil
	}
	if n < 8 {
		return syscall.EINVAL
	}
	resp := &abi.Mlx5IbQueryDeviceResp{}
	resp.TsoCaps.MaxTso = 262144
	resp.TsoCaps.SupportedQpts = 1 << abi.IB_UVERBS_QPT_RAW_PACKET
	resp.RssCaps.RxHashFunction = abi.MLX5_RX_HASH_FUNC_TOEPLITZ
	resp.RssCaps.RxHashFieldsMask = abi.MLX5_RX_HASH_SRC_IPV4 | abi.MLX5_RX_HASH_DST_IPV4 | abi.MLX5_RX_HASH_SRC_PORT_TCP | abi.MLX5_RX_HASH_DST_PORT_TCP
	resp.PacketPacingCaps.QpRateLimitMin = 1
	resp.PacketPacingCaps.QpRateLimitMax = 100000000
	resp.PacketPacingCaps.SupportedQpts = 1 << abi.IB_UVERBS_QPT_RAW_PACKET
	resp.ResponseLength = uint32(min(n, len(structBytes(resp))))
	return c.Out(abi.UVERBS_ATTR_UHW_OUT, structBytes(resp), false)
}

// mlx5UARAlloc is MLX5_IB_METHOD_UAR_OBJ_ALLOC.
func (v *Verbs) mlx5UARAlloc(c *Call) error {
	st := v.state(c.File)
	if !st.mlx5.dynUAR {
		return syscall.EOPNOTSUPP
	}
	typ, _ := c.Value(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE)
	switch typ {
	case abi.MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF:
		if !v.Mlx5.WC {
			return syscall.EOPNOTSUPP
		}
	case abi.MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC:
	default:
		return syscall.EOPNOTSUPP
	}
	v.mu.Lock()
	v.nextUAR++
	page := 0x40 + v.nextUAR
	v.mu.Unlock()
	off := v.addMmap(c.File, mmapRegion{length: sys.PageSize, exact: true, what: "mlx5 uar", uar: true})
	o := c.Object(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE)
	o.Value = &uarVal{pageID: page, offset: off}
	if err := c.outU64(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, uint64(off)); err != nil {
		return err
	}
	if err := c.outU32(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, uint32(sys.PageSize)); err != nil {
		return err
	}
	if err := c.outU32(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, page); err != nil {
		return err
	}
	v.logf("alloc uar %d", o.Handle)
	return nil
}

// mlx5HasUAR reports whether page is the page id of a UAR object of the
// file.
func mlx5HasUAR(f *File, page uint32) bool {
	for _, o := range f.objects {
		if u, ok := o.Value.(*uarVal); ok && o.Type == abi.MLX5_IB_OBJECT_UAR && u.pageID == page {
			return true
		}
	}
	return false
}

func (v *Verbs) mlx5CreateCQ(c *Call, cq *cqVal, flags uint32) error {
	in := c.UHWIn()
	if len(in) < 22 {
		return syscall.EINVAL
	}
	cmd := fromBytes[abi.Mlx5IbCreateCq](in[:min(len(in), 32)])
	if cmd.CqeSize != 64 && cmd.CqeSize != 128 {
		return syscall.EINVAL
	}
	if cmd.Reserved0 != 0 || cmd.Reserved1 != 0 {
		return syscall.EINVAL
	}
	if cmd.Flags&^(abi.MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD|abi.MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX|abi.MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS) != 0 {
		return syscall.EINVAL
	}
	st := v.state(c.File)
	switch {
	case c.Has(abi.MLX5_IB_ATTR_CREATE_CQ_UAR_INDEX):
		cq.uar = c.inU32(abi.MLX5_IB_ATTR_CREATE_CQ_UAR_INDEX)
	case cmd.Flags&abi.MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX != 0:
		cq.uar = uint32(cmd.UarPageIndex)
	case st.mlx5.dynUAR:
		return syscall.EINVAL
	default:
		cq.uar = 0 // the first static page
	}
	if st.mlx5.dynUAR && !mlx5HasUAR(c.File, cq.uar) {
		return syscall.EINVAL
	}
	entries := uint32(1) << bits.Len32(cq.cqe) // roundup_pow_of_two(cqe + 1)
	if entries > 1<<v.Mlx5.LogMaxCQSz {
		return syscall.EINVAL
	}
	if cmd.BufAddr == 0 || cmd.DbAddr == 0 {
		return syscall.EFAULT
	}
	cq.cqe = entries - 1
	cq.m5 = &m5CQ{cmd: *cmd, buf: cmd.BufAddr, db: cmd.DbAddr, entries: entries, cqeSize: cmd.CqeSize}
	return c.copyToUdata(binary.LittleEndian.AppendUint32(nil, 0x400+cq.cqe))
}

func (v *Verbs) mlx5CreateQP(c *Call, qp *qpVal, create uint32) error {
	in := c.UHWIn()
	if len(in) < 48 {
		return syscall.EINVAL
	}
	for _, b := range in[min(len(in), 54):] {
		if b != 0 {
			return syscall.EINVAL
		}
	}
	cmd := fromBytes[abi.Mlx5IbCreateQp](in[:min(len(in), 56)])
	st := v.state(c.File)
	ver := st.mlx5.cqeVersion
	switch {
	case ver == 0 && cmd.Uidx != 0xffffff:
		return syscall.EINVAL
	case ver >= 1 && cmd.Uidx&^0xffffff != 0:
		return syscall.EINVAL
	}
	raw := qp.typ == qptRaw
	if raw && ver == 0 {
		return syscall.EINVAL
	}
	const uarPage, bfreg = abi.MLX5_QP_FLAG_UAR_PAGE_INDEX, abi.MLX5_QP_FLAG_BFREG_INDEX
	known := uint32(uarPage | bfreg | abi.MLX5_QP_FLAG_SIGNATURE | abi.MLX5_QP_FLAG_SCATTER_CQE | abi.MLX5_QP_FLAG_ALLOW_SCATTER_CQE)
	if raw {
		known |= abi.MLX5_QP_FLAG_TUNNEL_OFFLOADS | abi.MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC | abi.MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC
	}
	if cmd.Flags&^known != 0 {
		return syscall.EINVAL
	}
	switch {
	case cmd.Flags&uarPage != 0 && cmd.Flags&bfreg != 0:
		return syscall.EINVAL
	case cmd.Flags&uarPage != 0:
		if st.mlx5.dynUAR && !mlx5HasUAR(c.File, cmd.BfregIndex) {
			return syscall.EINVAL
		}
	case cmd.Flags&bfreg == 0 && st.mlx5.dynUAR:
		return syscall.EINVAL // no static bfreg to allocate
	}
	if raw && cmd.SqWqeCount == 0 && cmd.RqWqeCount == 0 {
		return syscall.EINVAL
	}
	if cmd.SqWqeCount != 0 && (cmd.SqWqeCount&(cmd.SqWqeCount-1) != 0 || cmd.SqWqeCount > 1<<v.Mlx5.LogMaxQPSz) {
		return syscall.EINVAL
	}
	if cmd.RqWqeShift > 31 || cmd.RqWqeCount > 1<<v.Mlx5.LogMaxQPSz {
		return syscall.EINVAL
	}
	if cmd.DbAddr == 0 {
		return syscall.EFAULT
	}
	rqBytes := int(cmd.RqWqeCount) << cmd.RqWqeShift
	sqBytes := int(cmd.SqWqeCount) * 64
	if raw {
		if (rqBytes > 0 && cmd.BufAddr == 0) || (sqBytes > 0 && cmd.SqBufAddr == 0) {
			return syscall.EFAULT
		}
	} else if rqBytes+sqBytes > 0 && cmd.BufAddr == 0 {
		return syscall.EFAULT
	}
	if create&^(abi.IB_UVERBS_QP_CREATE_SCATTER_FCS|abi.IB_UVERBS_QP_CREATE_CVLAN_STRIPPING|abi.IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK) != 0 {
		return syscall.EOPNOTSUPP
	}
	resp := &abi.Mlx5IbCreateQpResp{}
	m := &m5QP{cmd: *cmd, rq: cmd.BufAddr, sq: cmd.BufAddr + uint64(rqBytes), db: cmd.DbAddr, sqCnt: cmd.SqWqeCount,
		rqCnt: cmd.RqWqeCount, rqShift: cmd.RqWqeShift, uidx: cmd.Uidx, raw: raw, reg: 0x800}
	if raw {
		m.sq = cmd.SqBufAddr
	}
	if cmd.Flags&uarPage != 0 {
		resp.BfregIndex = 0x80000000
		for _, o := range c.File.objects {
			if u, ok := o.Value.(*uarVal); ok && o.Type == abi.MLX5_IB_OBJECT_UAR && u.pageID == cmd.BfregIndex {
				m.uar = st.uarMem[u.offset]
			}
		}
	} else {
		// Static bfreg 1: the second register of static UAR page 0
		// (MLX5_BF_OFFSET + bf_reg_size).
		resp.BfregIndex = 1
		m.uar = st.uarMem[0]
		if v.Mlx5.WC {
			m.reg += 512
		}
	}
	qp.m5 = m
	n := max(c.OutLen(abi.UVERBS_ATTR_UHW_OUT), 0)
	if n > 0 {
		return c.Out(abi.UVERBS_ATTR_UHW_OUT, structBytes(resp)[:min(n, 40)], false)
	}
	return nil
}

// Mlx5CreateCQ returns the driver data (struct mlx5_ib_create_cq) the
// mlx5 CQ with handle h was created with, on any open file of the device.
func (v *Verbs) Mlx5CreateCQ(h uint32) (abi.Mlx5IbCreateCq, bool) {
	return createData(v, h, abi.UVERBS_OBJECT_CQ, func(val any) (abi.Mlx5IbCreateCq, bool) {
		m := val.(*cqVal).m5
		if m == nil {
			return abi.Mlx5IbCreateCq{}, false
		}
		return m.cmd, true
	})
}

// Mlx5CreateQP returns the driver data (struct mlx5_ib_create_qp) the
// mlx5 QP with handle h was created with, on any open file of the device.
func (v *Verbs) Mlx5CreateQP(h uint32) (abi.Mlx5IbCreateQp, bool) {
	return createData(v, h, abi.UVERBS_OBJECT_QP, func(val any) (abi.Mlx5IbCreateQp, bool) {
		m := val.(*qpVal).m5
		if m == nil {
			return abi.Mlx5IbCreateQp{}, false
		}
		return m.cmd, true
	})
}

// createData finds the object with handle h and type typ on any open file
// of the device and returns what get reads from its value, under the
// file's lock.
func createData[C any](v *Verbs, h uint32, typ uint16, get func(any) (C, bool)) (C, bool) {
	for _, f := range v.Kernel().filesList() {
		f.mu.Lock()
		var cmd C
		ok := false
		if o := f.objects[h]; o != nil && o.Type == typ {
			cmd, ok = get(o.Value)
		}
		f.mu.Unlock()
		if ok {
			return cmd, true
		}
	}
	var zero C
	return zero, false
}
