package uverbs

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// mlx5Provider is ConnectX (mlx5_ib), following the kernel's mlx5 (main.c
// mlx5_ib_alloc_ucontext, cq.c create_cq_user, qp.c _create_user_qp) and
// rdma-core's providers/mlx5 (mlx5.c mlx5_init_context, verbs.c):
//
//   - GET_CONTEXT sends struct mlx5_ib_alloc_ucontext_req_v2 with
//     max_cqe_version 1 (RAW_PACKET QPs need CQE version 1) and lib_caps
//     4K_UAR|DYN_UAR, so the context has no static UARs;
//   - CQs and QPs name a UAR object (MLX5_IB_OBJECT_UAR) allocated once per
//     context and mapped from the device file;
//   - CQ and QP buffers and doorbell records are anonymous memory outside
//     the Go heap (the device keeps using them after the call);
//   - ALLOC_PD and CREATE_CQ always pass a full driver output buffer: mlx5
//     writes it without checking its length.
type mlx5Provider struct {
	req  *abi.Mlx5IbAllocUcontextReqV2
	resp *abi.Mlx5IbAllocUcontextResp

	mu         sync.Mutex
	cqeVersion uint8
	dynUAR     bool
	uar        *mlx5UAR
	maps       *sys.MapSet // the context's
	staticUARs [][]byte    // with static bfregs: the UAR pages libmlx5 maps too
	staticRefs []sys.MapRef
	db         dbPool
	uidx       uidxPool
	staticBF   map[int]*mlx5BF // under mu
	// atomicCap is the device's, asked at open as mlx5_init_context
	// does (mlx5_query_device_ctx): RC QPs post atomics only when it is
	// not AtomicNone.
	atomicCap AtomicCap

	// qps finds a CQE's QP: by user index (CQE version 1) or QP number.
	// The pollers of the context's CQs read it without a lock.
	qps mlx5QPTable
}

type mlx5UAR struct {
	handle uint32
	pageID uint32
	mem    []byte
	memRef sys.MapRef
	nc     bool    // a non-cached UAR: doorbells only, no BlueFlame
	bf     *mlx5BF // its first register, shared by the QPs
}

// mlx5 constants rdma-core uses (providers/mlx5/mlx5.h).
const (
	mlx5TotUUARs        = 16   // default total_num_bfregs
	mlx5LowLatUUARs     = 4    // max(4, 16 - MLX5_MED_BFREGS_TSHOLD)
	mlx5CQESize         = 64   // CQE size the CQs are created with
	mlx5SendWQEBB       = 64   // MLX5_SEND_WQE_BB
	mlx5DataSegSize     = 16   // struct mlx5_wqe_data_seg
	mlx5CQEInvalidOwner = 0xF0 // MLX5_CQE_INVALID << 4, in op_own
	mlx5DBRecSize       = 64   // one cache line per doorbell record
)

func newMlx5Provider() *mlx5Provider {
	p := &mlx5Provider{
		req:  new(abi.Mlx5IbAllocUcontextReqV2),
		resp: new(abi.Mlx5IbAllocUcontextResp),
	}
	p.req.TotalNumBfregs = mlx5TotUUARs
	p.req.NumLowLatencyBfregs = mlx5LowLatUUARs
	p.req.MaxCqeVersion = 1
	p.req.LibCaps = abi.MLX5_LIB_CAP_4K_UAR | abi.MLX5_LIB_CAP_DYN_UAR
	return p
}

func (p *mlx5Provider) name() string { return "mlx5" }

func (p *mlx5Provider) contextData() ([]byte, []byte) { return bytesOf(p.req), bytesOf(p.resp) }

func (p *mlx5Provider) contextCreated(c *Context, _ []byte) error {
	p.cqeVersion = p.resp.CqeVersion
	p.maps, p.db.ms = c.maps, c.maps
	// A kernel that knows DYN_UAR gives no static bfregs; an older one
	// ignores the bit and allocates them (then CQs and QPs use the
	// static UARs and name none).
	p.dynUAR = p.resp.TotBfregs == 0
	if !p.dynUAR {
		if err := p.mapStaticUARs(c); err != nil {
			return err
		}
	}
	// mlx5_query_device_ctx: a failed query leaves the capability
	// unknown (ATOMIC_NONE), as libmlx5's returns early.
	if a, err := c.queryDevice(); err == nil {
		p.atomicCap = a.AtomicCap
	}
	return nil
}

// mapStaticUARs maps the context's static UAR pages as libmlx5's
// mlx5_init_context does when the kernel answers with static bfregs
// (providers/mlx5/mlx5.c: tot_bfregs / (num_uars_per_page ×
// MLX5_NUM_NON_FP_BFREGS_PER_UAR) pages, page i at mmap offset
// MLX5_IB_MMAP_REGULAR_PAGE << 8 | i, one page each; the kernel's
// mlx5_ib_mmap, uar_mmap). CQs and QPs then ring their doorbells there.
func (p *mlx5Provider) mapStaticUARs(c *Context) error {
	per := uint32(p.resp.NumUarsPerPage)
	if per == 0 {
		per = 1
	}
	n := p.resp.TotBfregs / (per * 2)
	if n == 0 || n > 256 {
		return errArg("the kernel answered %d static bfregs, %d UARs per page: no UAR pages to map", p.resp.TotBfregs, per)
	}
	for i := uint32(0); i < n; i++ {
		off := int64(abi.MLX5_IB_MMAP_REGULAR_PAGE<<8|i) * int64(sys.PageSize)
		m, r, err := c.maps.DeviceHeld(c.fd, c.core.Number(), off, sys.PageSize, syscall.PROT_WRITE, syscall.MAP_SHARED)
		if err != nil {
			p.unmapStaticUARs()
			return fmt.Errorf("map static UAR page %d of %d: %w", i, n, err)
		}
		p.staticUARs, p.staticRefs = append(p.staticUARs, m), append(p.staticRefs, r)
	}
	return nil
}

// cqUAR is the UAR page CQs are armed through: the context's UAR with
// dynamic UARs (the one prepareCQ named), else static page 0 (libmlx5's
// cq_uar_reg, mlx5.c mlx5_init_context).
func (p *mlx5Provider) cqUAR() unsafe.Pointer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dynUAR {
		if p.uar == nil || len(p.uar.mem) < mlx5CQDoorbell+8 {
			return nil
		}
		return ptrOf(p.uar.mem)
	}
	if len(p.staticUARs) == 0 || len(p.staticUARs[0]) < mlx5CQDoorbell+8 {
		return nil
	}
	return ptrOf(p.staticUARs[0])
}

func (p *mlx5Provider) unmapStaticUARs() {
	for i, m := range p.staticUARs {
		p.maps.Unmap(m, p.staticRefs[i])
	}
	p.staticUARs, p.staticRefs = nil, nil
}

func (p *mlx5Provider) queryDeviceData() ([]byte, []byte) {
	return nil, bytesOf(new(abi.Mlx5IbQueryDeviceResp))
}

func (p *mlx5Provider) deviceAttr(raw *abi.IbUverbsExQueryDeviceResp, out []byte, a *DeviceAttr) {
	// rdma-core's mlx5_query_device_ex: "%d.%d.%04d".
	fw := raw.Base.FwVer
	a.FWVer = fmt.Sprintf("%d.%d.%04d", (fw>>32)&0xffff, (fw>>16)&0xffff, fw&0xffff)
	if len(out) < 8 {
		return
	}
	d := (*abi.Mlx5IbQueryDeviceResp)(ptrOf(out))
	a.TSOCaps = TSOCaps{MaxTSO: d.TsoCaps.MaxTso, SupportedQPTs: d.TsoCaps.SupportedQpts}
	a.RSSCaps.RxHashFieldsMask = d.RssCaps.RxHashFieldsMask
	a.RSSCaps.RxHashFunction = d.RssCaps.RxHashFunction
	a.PacketPacingCaps = PacketPacingCaps{
		QPRateLimitMin: d.PacketPacingCaps.QpRateLimitMin,
		QPRateLimitMax: d.PacketPacingCaps.QpRateLimitMax,
		SupportedQPTs:  d.PacketPacingCaps.SupportedQpts,
	}
}

func (p *mlx5Provider) pdData() ([]byte, []byte) {
	// mlx5_ib_alloc_pd copies 4 bytes to the driver output unchecked.
	return nil, bytesOf(new(abi.Mlx5IbAllocPdResp))
}

func (p *mlx5Provider) reqNotify() bool { return false }

// uarFor returns the context's UAR, allocating and mapping it on first use
// (MLX5_IB_METHOD_UAR_OBJ_ALLOC: a write-combining (BF) UAR, or a
// non-cached one where the device has no write combining).
func (p *mlx5Provider) uarFor(c *Context) (*mlx5UAR, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.uar != nil {
		return p.uar, nil
	}
	var err error
	for _, typ := range []uint64{abi.MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF, abi.MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC} {
		var u *mlx5UAR
		if u, err = p.allocUAR(c, typ); err == nil {
			p.uar = u
			return u, nil
		}
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			break
		}
	}
	return nil, fmt.Errorf("allocate a UAR: %w", err)
}

func (p *mlx5Provider) allocUAR(c *Context, typ uint64) (*mlx5UAR, error) {
	off, length, page := new(uint64), new(uint32), new(uint32)
	r := abi.NewRequest(c.api, c.drv, abi.MLX5_IB_OBJECT_UAR, abi.MLX5_IB_METHOD_UAR_OBJ_ALLOC).
		NewHandle(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE).
		Const(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, typ).
		Out(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, bytesOf(off)).
		Out(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, bytesOf(length)).
		Out(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, bytesOf(page))
	if err := c.do(r); err != nil {
		return nil, err
	}
	h, err := r.Created(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE)
	if err != nil {
		return nil, err
	}
	u := &mlx5UAR{handle: h, pageID: *page, nc: typ == abi.MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC}
	m, mr, err := c.maps.DeviceHeld(c.fd, c.core.Number(), int64(*off), int(*length), syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		p.destroyUAR(c, u)
		return nil, fmt.Errorf("map the UAR: %w", err)
	}
	u.mem, u.memRef = m, mr
	return u, nil
}

func (p *mlx5Provider) destroyUAR(c *Context, u *mlx5UAR) {
	if u.mem != nil {
		c.maps.Unmap(u.mem, u.memRef)
		u.mem = nil
	}
	r := abi.NewRequest(c.api, c.drv, abi.MLX5_IB_OBJECT_UAR, abi.MLX5_IB_METHOD_UAR_OBJ_DESTROY).
		Handle(abi.MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, u.handle)
	c.do(r) // closing the file destroys it anyway
}

func (p *mlx5Provider) close(c *Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.uar != nil {
		p.destroyUAR(c, p.uar)
		p.uar = nil
	}
	p.unmapStaticUARs()
	p.db.releaseAll()
}

// uarIndex fills the UAR selection of a CQ or QP: the page id of the
// context's UAR (nothing with static UARs).
func (p *mlx5Provider) uarPage(c *Context) (uint32, bool, error) {
	if !p.dynUAR {
		return 0, false, nil
	}
	u, err := p.uarFor(c)
	if err != nil {
		return 0, false, err
	}
	return u.pageID, true, nil
}

func (p *mlx5Provider) prepareCQ(c *Context, cqe uint32, d *driverRes, x *drvScratch) (err error) {
	page, dyn, err := p.uarPage(c)
	if err != nil {
		return err
	}
	if cqe > 1<<30 {
		return errArg("%d CQ entries is too many", cqe)
	}
	// The kernel sizes the CQ as roundup_pow_of_two(cqe + 1) entries and
	// pins exactly that many CQEs at buf_addr; ask for entries - 1.
	entries := roundPow2(cqe + 1)
	d.ms, d.m5 = c.maps, p
	x.cqe = entries - 1
	defer func() {
		if err != nil {
			d.release()
		}
	}()
	buf, r, err := c.maps.Anon(pageRound(int(entries) * mlx5CQESize))
	if err != nil {
		return fmt.Errorf("allocate the CQ buffer: %w", err)
	}
	d.addAnon(buf, r)
	for i := 0; i < int(entries); i++ {
		buf[i*mlx5CQESize+mlx5CQESize-1] = mlx5CQEInvalidOwner
	}
	db, err := p.db.alloc()
	if err != nil {
		return err
	}
	d.db, d.dbp = db, &p.db
	cmd := &x.m5CQ
	*cmd = abi.Mlx5IbCreateCq{
		BufAddr: addrOf(buf),
		DbAddr:  db,
		CqeSize: mlx5CQESize,
	}
	if dyn {
		if page > 0xffff {
			x.attr = driverAttr{id: abi.MLX5_IB_ATTR_CREATE_CQ_UAR_INDEX, u32: page}
		} else {
			cmd.Flags |= abi.MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX
			cmd.UarPageIndex = uint16(page)
		}
	}
	x.in = bytesOf(cmd)
	x.m5CQResp = abi.Mlx5IbCreateCqResp{}
	x.out = bytesOf(&x.m5CQResp)
	return nil
}

func (p *mlx5Provider) cqCreated(*Context, *driverRes, *drvScratch) error { return nil }

func (p *mlx5Provider) prepareQP(c *Context, attr QPInitAttr, d *driverRes, x *drvScratch) (err error) {
	page, dyn, err := p.uarPage(c)
	if err != nil {
		return err
	}
	d.ms, d.m5 = c.maps, p
	defer func() {
		if err != nil {
			d.release()
		}
	}()
	raw := attr.Type == QPTypeRawPacket
	// Receive queue: one WQE holds max_recv_sge data segments.
	var rqCnt, rqShift uint32
	if attr.Cap.MaxRecvWR > 0 && attr.SRQ == nil { // mlx5_calc_rq_size: none with an SRQ
		sz := roundPow2(max(attr.Cap.MaxRecvSGE, 1) * mlx5DataSegSize)
		rqShift = uint32(bits.TrailingZeros32(sz))
		rqCnt = roundPow2(attr.Cap.MaxRecvWR)
	}
	// Send queue: in 64-byte basic blocks (WQEBBs).
	var sqCnt uint32
	if attr.Cap.MaxSendWR > 0 {
		wqe := mlx5SendWQESize(&attr)
		sqCnt = roundPow2(attr.Cap.MaxSendWR * (wqe / mlx5SendWQEBB))
	}
	if rqCnt > 1<<20 || sqCnt > 1<<20 {
		return errArg("queue too large (send %d, receive %d WQEs)", sqCnt, rqCnt)
	}
	cmd := &x.m5QP
	*cmd = abi.Mlx5IbCreateQp{
		SqWqeCount: sqCnt,
		RqWqeCount: rqCnt,
		RqWqeShift: rqShift,
	}
	rqBytes := int(rqCnt) << rqShift
	sqBytes := int(sqCnt) * mlx5SendWQEBB
	if raw {
		// RAW_PACKET keeps the SQ in its own buffer (sq_buf_addr).
		if rqBytes > 0 {
			rq, r, err := c.maps.Anon(pageRound(rqBytes))
			if err != nil {
				return fmt.Errorf("allocate the receive queue: %w", err)
			}
			d.addAnon(rq, r)
			cmd.BufAddr = addrOf(rq)
		}
		if sqBytes > 0 {
			sq, r, err := c.maps.Anon(pageRound(sqBytes))
			if err != nil {
				return fmt.Errorf("allocate the send queue: %w", err)
			}
			d.addAnon(sq, r)
			cmd.SqBufAddr = addrOf(sq)
		}
	} else if n := rqBytes + sqBytes; n > 0 {
		// The receive queue first, then the send queue.
		buf, r, err := c.maps.Anon(pageRound(n))
		if err != nil {
			return fmt.Errorf("allocate the QP buffer: %w", err)
		}
		d.addAnon(buf, r)
		cmd.BufAddr = addrOf(buf)
	}
	db, err := p.db.alloc()
	if err != nil {
		return err
	}
	d.db, d.dbp = db, &p.db
	cmd.DbAddr = db
	if p.cqeVersion >= 1 {
		// With CQE version 1 CQEs report this user index instead of
		// the QP number; the kernel requires a valid 24-bit one.
		u, err := p.uidx.alloc()
		if err != nil {
			return err
		}
		d.uidx = u
		cmd.Uidx = u
	} else {
		cmd.Uidx = 0xffffff // MLX5_IB_DEFAULT_UIDX
	}
	if dyn {
		cmd.Flags |= abi.MLX5_QP_FLAG_UAR_PAGE_INDEX
		cmd.BfregIndex = page
	}
	x.in = bytesOf(cmd)
	x.m5QPResp = abi.Mlx5IbCreateQpResp{}
	x.out = bytesOf(&x.m5QPResp)
	return nil
}

func (p *mlx5Provider) qpCreated(*Context, *driverRes, *drvScratch) error { return nil }

// mlx5SendWQESize is the size of one send WQE in bytes, a multiple of
// MLX5_SEND_WQE_BB: the control segment, the transport segment of the QP
// type, then room for max_send_sge data segments or the inline data.
func mlx5SendWQESize(attr *QPInitAttr) uint32 {
	const ctrl = 16
	var transport uint32
	switch attr.Type {
	case QPTypeUD:
		transport = 48 // struct mlx5_wqe_datagram_seg
	case QPTypeRC, QPTypeUC:
		transport = 16 + 16 // raddr + atomic segments
	case QPTypeRawPacket:
		transport = 16 + 18 // eth segment with its inline header, rounded below
	}
	data := max(attr.Cap.MaxSendSGE, 1) * mlx5DataSegSize
	if in := (attr.Cap.MaxInlineData + 4 + 15) &^ 15; attr.Cap.MaxInlineData > 0 && in > data {
		data = in
	}
	size := ctrl + ((transport + 15) &^ 15) + data
	return (size + mlx5SendWQEBB - 1) &^ (mlx5SendWQEBB - 1)
}

// dbPool hands out mlx5's 64-byte doorbell records from anonymous pages
// shared by the objects of a context (the kernel pins the page that holds
// each).
// A page is mapped once and kept until the context closes, so creating and
// destroying objects maps nothing in steady state.
type dbPool struct {
	ms    *sys.MapSet // the context's
	mu    sync.Mutex
	pages [][]byte
	refs  []sys.MapRef // ms's names of pages
	free  []uint64
}

func (p *dbPool) slotSize() int { return mlx5DBRecSize }

// alloc returns the address of a zeroed doorbell record; give it back
// with put.
func (p *dbPool) alloc() (uint64, error) {
	p.mu.Lock()
	if len(p.free) == 0 {
		pg, r, err := p.ms.Anon(sys.PageSize)
		if err != nil {
			p.mu.Unlock()
			return 0, fmt.Errorf("allocate doorbell records: %w", err)
		}
		p.pages, p.refs = append(p.pages, pg), append(p.refs, r)
		for off := len(pg) - p.slotSize(); off >= 0; off -= p.slotSize() {
			p.free = append(p.free, addrOf(pg)+uint64(off))
		}
	}
	a := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	clear(p.slot(a))
	p.mu.Unlock()
	return a, nil
}

// put gives back the record at a.
func (p *dbPool) put(a uint64) {
	p.mu.Lock()
	p.free = append(p.free, a)
	p.mu.Unlock()
}

// slot returns the record at address a (it lies in one of p.pages).
func (p *dbPool) slot(a uint64) []byte {
	for _, pg := range p.pages {
		base := addrOf(pg)
		if a >= base && a < base+uint64(len(pg)) {
			off := a - base
			end := off + uint64(p.slotSize())
			return pg[off:end:end]
		}
	}
	return nil
}

func (p *dbPool) releaseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, pg := range p.pages {
		p.ms.Unmap(pg, p.refs[i])
	}
	p.pages, p.refs, p.free = nil, nil, nil
}

// uidxPool hands out mlx5 user indices (1 … 0xfffffe).
type uidxPool struct {
	mu    sync.Mutex
	next  uint32
	avail []uint32
}

func (p *uidxPool) alloc() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.avail); n > 0 {
		u := p.avail[n-1]
		p.avail = p.avail[:n-1]
		return u, nil
	}
	if p.next >= 0xfffffe {
		return 0, fmt.Errorf("out of mlx5 user indices: %w", syscall.ENOMEM)
	}
	p.next++
	return p.next, nil
}

func (p *uidxPool) free(u uint32) {
	p.mu.Lock()
	p.avail = append(p.avail, u)
	p.mu.Unlock()
}

func roundPow2(v uint32) uint32 {
	if v <= 1 {
		return 1
	}
	return 1 << bits.Len32(v-1)
}

func pageRound(n int) int { return (n + sys.PageSize - 1) &^ (sys.PageSize - 1) }
