package uverbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
)

// DeviceAttr is what QueryDevice returns: struct ibv_device_attr_ex, every
// field `ibv_devinfo -v` prints. Fields keep the kernel's widths; GUIDs are
// in host order.
type DeviceAttr struct {
	FWVer                 string    `json:"fw_ver"` // formatted the way the driver's rdma-core provider does
	NodeGUID              rdma.GUID `json:"node_guid"`
	SysImageGUID          rdma.GUID `json:"sys_image_guid"`
	MaxMRSize             uint64    `json:"max_mr_size"`
	PageSizeCap           uint64    `json:"page_size_cap"`
	VendorID              uint32    `json:"vendor_id"`
	VendorPartID          uint32    `json:"vendor_part_id"`
	HWVer                 uint32    `json:"hw_ver"`
	MaxQP                 uint32    `json:"max_qp"`
	MaxQPWR               uint32    `json:"max_qp_wr"`
	DeviceCapFlags        uint32    `json:"device_cap_flags"` // IB_UVERBS_DEVICE_* (low 32 bits)
	MaxSGE                uint32    `json:"max_sge"`
	MaxSGERd              uint32    `json:"max_sge_rd"`
	MaxCQ                 uint32    `json:"max_cq"`
	MaxCQE                uint32    `json:"max_cqe"`
	MaxMR                 uint32    `json:"max_mr"`
	MaxPD                 uint32    `json:"max_pd"`
	MaxQPRdAtom           uint32    `json:"max_qp_rd_atom"`
	MaxEERdAtom           uint32    `json:"max_ee_rd_atom"`
	MaxResRdAtom          uint32    `json:"max_res_rd_atom"`
	MaxQPInitRdAtom       uint32    `json:"max_qp_init_rd_atom"`
	MaxEEInitRdAtom       uint32    `json:"max_ee_init_rd_atom"`
	AtomicCap             AtomicCap `json:"atomic_cap"`
	MaxEE                 uint32    `json:"max_ee"`
	MaxRDD                uint32    `json:"max_rdd"`
	MaxMW                 uint32    `json:"max_mw"`
	MaxRawIPv6QP          uint32    `json:"max_raw_ipv6_qp"`
	MaxRawEthyQP          uint32    `json:"max_raw_ethy_qp"`
	MaxMcastGrp           uint32    `json:"max_mcast_grp"`
	MaxMcastQPAttach      uint32    `json:"max_mcast_qp_attach"`
	MaxTotalMcastQPAttach uint32    `json:"max_total_mcast_qp_attach"`
	MaxAH                 uint32    `json:"max_ah"`
	MaxFMR                uint32    `json:"max_fmr"`
	MaxMapPerFMR          uint32    `json:"max_map_per_fmr"`
	MaxSRQ                uint32    `json:"max_srq"`
	MaxSRQWR              uint32    `json:"max_srq_wr"`
	MaxSRQSGE             uint32    `json:"max_srq_sge"`
	MaxPKeys              uint16    `json:"max_pkeys"`
	LocalCAAckDelay       uint8     `json:"local_ca_ack_delay"`
	PhysPortCnt           uint8     `json:"phys_port_cnt"`

	ODPCaps                 ODPCaps          `json:"odp_caps"`
	XRCODPCaps              uint32           `json:"xrc_odp_caps"`
	CompletionTimestampMask uint64           `json:"completion_timestamp_mask"`
	HCACoreClock            uint64           `json:"hca_core_clock"` // kHz
	DeviceCapFlagsEx        uint64           `json:"device_cap_flags_ex"`
	TSOCaps                 TSOCaps          `json:"tso_caps"`
	RSSCaps                 RSSCaps          `json:"rss_caps"`
	MaxWQTypeRQ             uint32           `json:"max_wq_type_rq"`
	PacketPacingCaps        PacketPacingCaps `json:"packet_pacing_caps"`
	RawPacketCaps           uint32           `json:"raw_packet_caps"` // IB_UVERBS_RAW_PACKET_CAP_*
	TMCaps                  TMCaps           `json:"tm_caps"`
	CQModCaps               CQModerationCaps `json:"cq_mod_caps"`
	MaxDMSize               uint64           `json:"max_dm_size"`
}

// ODPCaps are the on-demand paging capabilities (struct ibv_odp_caps).
type ODPCaps struct {
	GeneralCaps uint64 `json:"general_caps"`
	RCODPCaps   uint32 `json:"rc_odp_caps"`
	UCODPCaps   uint32 `json:"uc_odp_caps"`
	UDODPCaps   uint32 `json:"ud_odp_caps"`
}

// TSOCaps are the TCP segmentation offload capabilities (mlx5 driver data).
type TSOCaps struct {
	MaxTSO        uint32 `json:"max_tso"`
	SupportedQPTs uint32 `json:"supported_qpts"`
}

// RSSCaps are the receive-side scaling capabilities.
type RSSCaps struct {
	SupportedQPTs              uint32 `json:"supported_qpts"`
	MaxRWQIndirectionTables    uint32 `json:"max_rwq_indirection_tables"`
	MaxRWQIndirectionTableSize uint32 `json:"max_rwq_indirection_table_size"`
	RxHashFieldsMask           uint64 `json:"rx_hash_fields_mask"` // mlx5 driver data
	RxHashFunction             uint8  `json:"rx_hash_function"`    // mlx5 driver data
}

// PacketPacingCaps are the rate-limit capabilities (mlx5 driver data).
type PacketPacingCaps struct {
	QPRateLimitMin uint32 `json:"qp_rate_limit_min"` // kbps
	QPRateLimitMax uint32 `json:"qp_rate_limit_max"` // kbps
	SupportedQPTs  uint32 `json:"supported_qpts"`
}

// TMCaps are the tag matching capabilities.
type TMCaps struct {
	MaxRndvHdrSize uint32 `json:"max_rndv_hdr_size"`
	MaxNumTags     uint32 `json:"max_num_tags"`
	Flags          uint32 `json:"flags"`
	MaxOps         uint32 `json:"max_ops"`
	MaxSGE         uint32 `json:"max_sge"`
}

// CQModerationCaps are the CQ moderation limits.
type CQModerationCaps struct {
	MaxCQCount  uint16 `json:"max_cq_count"`
	MaxCQPeriod uint16 `json:"max_cq_period"`
}

// QueryDevice returns the device's attributes, like ibv_query_device_ex:
// EX_QUERY_DEVICE through INVOKE_WRITE, with the provider's driver data
// (mlx5: TSO, RSS hash and packet pacing capabilities). A kernel without
// the ex command (EOPNOTSUPP) is asked with QUERY_DEVICE, and the ex fields
// stay zero.
//
// Errors: an *Error wrapping the errno (EIO once the device was removed),
// or os.ErrClosed after Close.
func (c *Context) QueryDevice() (DeviceAttr, error) {
	if err := c.enter("query device"); err != nil {
		return DeviceAttr{}, err
	}
	defer c.leave()
	a, err := c.queryDevice()
	if err != nil {
		return DeviceAttr{}, c.err("query device", err)
	}
	return a, nil
}

// queryDevice is QueryDevice for a caller that has entered the context.
func (c *Context) queryDevice() (DeviceAttr, error) {
	raw := new(abi.IbUverbsExQueryDeviceResp)
	in, out := c.prov.queryDeviceData()
	core := new(abi.IbUverbsExQueryDevice)
	err := c.invokeWrite(abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE|abi.IB_USER_VERBS_CMD_FLAG_EXTENDED, bytesOf(core), bytesOf(raw), in, out)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		out = nil
		req := new(uint64) // struct ib_uverbs_query_device: the ignored response u64
		*req = addrOf(bytesOf(&raw.Base))
		err = c.invokeWrite(abi.IB_USER_VERBS_CMD_QUERY_DEVICE, bytesOf(req), bytesOf(&raw.Base), nil, nil)
		raw.ResponseLength = uint32(len(bytesOf(&raw.Base)))
	}
	if err != nil {
		return DeviceAttr{}, err
	}
	var a DeviceAttr
	fillDeviceAttr(raw, &a)
	c.prov.deviceAttr(raw, out, &a)
	return a, nil
}

func fillDeviceAttr(r *abi.IbUverbsExQueryDeviceResp, a *DeviceAttr) {
	b := &r.Base
	*a = DeviceAttr{
		NodeGUID: rdma.GUID(beU64(b.NodeGuid)), SysImageGUID: rdma.GUID(beU64(b.SysImageGuid)),
		MaxMRSize: b.MaxMrSize, PageSizeCap: b.PageSizeCap,
		VendorID: b.VendorId, VendorPartID: b.VendorPartId, HWVer: b.HwVer,
		MaxQP: b.MaxQp, MaxQPWR: b.MaxQpWr, DeviceCapFlags: b.DeviceCapFlags,
		MaxSGE: b.MaxSge, MaxSGERd: b.MaxSgeRd, MaxCQ: b.MaxCq, MaxCQE: b.MaxCqe,
		MaxMR: b.MaxMr, MaxPD: b.MaxPd, MaxQPRdAtom: b.MaxQpRdAtom, MaxEERdAtom: b.MaxEeRdAtom,
		MaxResRdAtom: b.MaxResRdAtom, MaxQPInitRdAtom: b.MaxQpInitRdAtom, MaxEEInitRdAtom: b.MaxEeInitRdAtom,
		AtomicCap: AtomicCap(b.AtomicCap), MaxEE: b.MaxEe, MaxRDD: b.MaxRdd, MaxMW: b.MaxMw,
		MaxRawIPv6QP: b.MaxRawIpv6Qp, MaxRawEthyQP: b.MaxRawEthyQp, MaxMcastGrp: b.MaxMcastGrp,
		MaxMcastQPAttach: b.MaxMcastQpAttach, MaxTotalMcastQPAttach: b.MaxTotalMcastQpAttach,
		MaxAH: b.MaxAh, MaxFMR: b.MaxFmr, MaxMapPerFMR: b.MaxMapPerFmr,
		MaxSRQ: b.MaxSrq, MaxSRQWR: b.MaxSrqWr, MaxSRQSGE: b.MaxSrqSge,
		MaxPKeys: b.MaxPkeys, LocalCAAckDelay: b.LocalCaAckDelay, PhysPortCnt: b.PhysPortCnt,
	}
	// Like rdma-core's ibv_cmd_query_device_any: an ex field counts only
	// when the kernel's response_length covers it.
	has := func(end uintptr) bool { return uintptr(r.ResponseLength) >= end }
	if has(208) {
		a.ODPCaps = ODPCaps{GeneralCaps: r.OdpCaps.GeneralCaps, RCODPCaps: r.OdpCaps.PerTransportCaps.RcOdpCaps,
			UCODPCaps: r.OdpCaps.PerTransportCaps.UcOdpCaps, UDODPCaps: r.OdpCaps.PerTransportCaps.UdOdpCaps}
	}
	if has(216) {
		a.CompletionTimestampMask = r.TimestampMask
	}
	if has(224) {
		a.HCACoreClock = r.HcaCoreClock
	}
	if has(232) {
		a.DeviceCapFlagsEx = r.DeviceCapFlagsEx
	}
	if has(248) {
		a.RSSCaps.SupportedQPTs = r.RssCaps.SupportedQpts
		a.RSSCaps.MaxRWQIndirectionTables = r.RssCaps.MaxRwqIndirectionTables
		a.RSSCaps.MaxRWQIndirectionTableSize = r.RssCaps.MaxRwqIndirectionTableSize
	}
	if has(252) {
		a.MaxWQTypeRQ = r.MaxWqTypeRq
	}
	if has(256) {
		a.RawPacketCaps = r.RawPacketCaps
	}
	if has(280) {
		a.TMCaps = TMCaps{MaxRndvHdrSize: r.TmCaps.MaxRndvHdrSize, MaxNumTags: r.TmCaps.MaxNumTags,
			Flags: r.TmCaps.Flags, MaxOps: r.TmCaps.MaxOps, MaxSGE: r.TmCaps.MaxSge}
	}
	if has(288) {
		a.CQModCaps = CQModerationCaps{MaxCQCount: r.CqModerationCaps.MaxCqModerationCount,
			MaxCQPeriod: r.CqModerationCaps.MaxCqModerationPeriod}
	}
	if has(296) {
		a.MaxDMSize = r.MaxDmSize
	}
	if has(300) {
		a.XRCODPCaps = r.XrcOdpCaps
	}
}

// beU64 converts a big-endian field read as a host-order integer.
func beU64(v uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}

// ContextAttr is what QueryContext returns.
type ContextAttr struct {
	NumCompVectors uint32
	CoreSupport    uint64 // IB_UVERBS_CORE_SUPPORT_*
}

// QueryContext asks the kernel for the context's attributes again
// (UVERBS_METHOD_QUERY_CONTEXT), as ibv_query_context would; mlx5 also
// returns its alloc_ucontext response, which the provider reads.
//
// Errors: an *Error wrapping EOPNOTSUPP (matches ErrNotSupported) for
// drivers without query_ucontext, such as rxe; the errno otherwise.
func (c *Context) QueryContext() (ContextAttr, error) {
	if err := c.enter("query context"); err != nil {
		return ContextAttr{}, err
	}
	defer c.leave()
	ncv, core := new(uint32), new(uint64)
	r := abi.NewRequest(c.api, c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_CONTEXT).
		Out(abi.UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, bytesOf(ncv)).
		Out(abi.UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, bytesOf(core))
	if c.drv == abi.RDMA_DRIVER_MLX5 {
		r.Out(abi.MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, bytesOf(new(abi.Mlx5IbAllocUcontextResp)))
	}
	if err := c.do(r); err != nil {
		return ContextAttr{}, c.err("query context", err)
	}
	return ContextAttr{NumCompVectors: *ncv, CoreSupport: *core}, nil
}

// PortAttr is what QueryPort returns (struct ibv_port_attr).
type PortAttr struct {
	State         rdma.PortState `json:"state"`
	MaxMTU        MTU            `json:"max_mtu"`
	ActiveMTU     MTU            `json:"active_mtu"`
	GIDTableLen   uint32         `json:"gid_tbl_len"`
	PortCapFlags  uint32         `json:"port_cap_flags"` // IB_UVERBS_PCF_*
	MaxMsgSize    uint32         `json:"max_msg_sz"`
	BadPKeyCntr   uint32         `json:"bad_pkey_cntr"`
	QKeyViolCntr  uint32         `json:"qkey_viol_cntr"`
	PKeyTableLen  uint16         `json:"pkey_tbl_len"`
	LID           uint16         `json:"lid"`
	SMLID         uint16         `json:"sm_lid"`
	LMC           uint8          `json:"lmc"`
	MaxVLNum      uint8          `json:"max_vl_num"`
	SMSL          uint8          `json:"sm_sl"`
	SubnetTimeout uint8          `json:"subnet_timeout"`
	InitTypeReply uint8          `json:"init_type_reply"`
	ActiveWidth   uint8          `json:"active_width"`    // 1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X
	ActiveSpeed   uint8          `json:"active_speed"`    // 1 SDR … 128 NDR (clamped)
	ActiveSpeedEx uint32         `json:"active_speed_ex"` // unclamped (Linux 6.12 and later; else 0)
	PhysState     uint8          `json:"phys_state"`
	LinkLayer     rdma.LinkLayer `json:"link_layer"`
	Flags         uint8          `json:"flags"` // IB_UVERBS_QPF_GRH_REQUIRED
	PortCapFlags2 uint16         `json:"port_cap_flags2"`
}

// QueryPort returns the attributes of port (1-based), like ibv_query_port:
// UVERBS_METHOD_QUERY_PORT. It builds its request in a scratch of the
// Context's, so in steady state it allocates nothing; concurrent calls on
// one Context take different scratches and run in parallel.
//
// Errors: an *Error wrapping EINVAL for port 0 or a port the device does
// not have (the kernel's answer), EIO once the device was removed,
// os.ErrClosed after Close.
func (c *Context) QueryPort(port int) (PortAttr, error) {
	if c == nil || !c.core.TryHold() { // enter, inlined
		return PortAttr{}, c.enterErr("query port")
	}
	// No defers: leave and putScratch are called on each return (the
	// success path is the hot one, see docs/performance.md).
	if port < 0 || port > maxPort {
		c.leave()
		return PortAttr{}, c.portErr(port, syscall.EINVAL)
	}
	// The request is written in place (verbs.Call): two attributes that
	// are QUERY_PORT's, with nothing for the builder to check.
	s := c.scr.get()
	rsp := &s.port
	*rsp = abi.IbUverbsQueryPortRespEx{}
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT)
	k.Inline(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, 8, uint64(port))
	k.OutHeld(abi.UVERBS_ATTR_QUERY_PORT_RESP, bytesOf(rsp))
	if err := c.core.DoCall(k); err != nil {
		c.scr.put(s)
		c.leave()
		return PortAttr{}, c.portErr(port, err)
	}
	l := &rsp.LegacyResp
	a := PortAttr{
		State: rdma.PortState(l.State), MaxMTU: MTU(l.MaxMtu), ActiveMTU: MTU(l.ActiveMtu),
		GIDTableLen: l.GidTblLen, PortCapFlags: l.PortCapFlags, MaxMsgSize: l.MaxMsgSz,
		BadPKeyCntr: l.BadPkeyCntr, QKeyViolCntr: l.QkeyViolCntr, PKeyTableLen: l.PkeyTblLen,
		LID: l.Lid, SMLID: l.SmLid, LMC: l.Lmc, MaxVLNum: l.MaxVlNum, SMSL: l.SmSl,
		SubnetTimeout: l.SubnetTimeout, InitTypeReply: l.InitTypeReply,
		ActiveWidth: l.ActiveWidth, ActiveSpeed: l.ActiveSpeed, ActiveSpeedEx: rsp.ActiveSpeedEx,
		PhysState: l.PhysState, LinkLayer: rdma.LinkLayer(l.LinkLayer), Flags: l.Flags,
		PortCapFlags2: rsp.PortCapFlags2,
	}
	c.scr.put(s)
	c.leave()
	return a, nil
}

// portErr is kept out of QueryPort so the success path does not allocate.
func (c *Context) portErr(port int, err error) error {
	// EINVAL for a port the device does not have (rdma_is_port_valid):
	// name the limit, from the device's ports in sysfs.
	if errors.Is(err, syscall.EINVAL) && c.dev.SysfsPath != "" {
		if ents, rerr := os.ReadDir(filepath.Join(c.dev.SysfsPath, "ports")); rerr == nil && len(ents) > 0 &&
			(port <= 0 || port > len(ents)) {
			err = fmt.Errorf("port %d does not exist: %s has ports 1 to %d: %w", port, c.dev.Name, len(ents), err)
		}
	}
	return c.err(fmt.Sprintf("query port %d", port), err)
}

// GIDEntry is one valid GID table entry (struct ibv_gid_entry), as the
// kernel's QUERY_GID_TABLE and QUERY_GID_ENTRY methods report it.
// sysfs.GIDEntry is the same entry read from sysfs, with the same field
// types except the network device: the ioctl reports its ifindex, sysfs
// its name.
type GIDEntry struct {
	GID           rdma.GID
	Index         int
	Port          int
	Type          GIDType
	NetdevIfindex uint32 // 0 when the GID has no netdev
}

// QueryGIDTable returns every valid GID entry of every port, like
// ibv_query_gid_table: UVERBS_METHOD_QUERY_GID_TABLE, with room for the sum
// of the ports' GID table lengths.
//
// Errors: an *Error wrapping the errno (EPROTONOSUPPORT, which matches
// ErrNotSupported, on kernels older than 5.10).
func (c *Context) QueryGIDTable() ([]GIDEntry, error) {
	dev, err := c.QueryDevice()
	if err != nil {
		return nil, err
	}
	total := 0
	for p := 1; p <= int(dev.PhysPortCnt); p++ {
		pa, err := c.QueryPort(p)
		if err != nil {
			return nil, err
		}
		total += int(pa.GIDTableLen)
	}
	if total == 0 {
		return nil, nil
	}
	out := make([]GIDEntry, total)
	n, err := c.QueryGIDTableInto(out)
	if err != nil {
		return nil, err
	}
	return out[:n:n], nil
}

// QueryGIDTableInto fills entries with the valid GID entries of every
// port and returns how many it wrote, like ibv_query_gid_table with
// max_entries = len(entries): one UVERBS_METHOD_QUERY_GID_TABLE call, with
// no query of the device and ports to size the table first (QueryGIDTable
// makes those). A table with more valid entries than entries fails as
// libibverbs' does (the kernel's EINVAL); at most abi.MaxAttrLen/32
// entries are asked for.
//
// Errors: an *Error wrapping EINVAL for an empty entries or a table that
// does not fit, the kernel's errno otherwise (EPROTONOSUPPORT, which
// matches ErrNotSupported, before Linux 5.10); os.ErrClosed after Close.
func (c *Context) QueryGIDTableInto(entries []GIDEntry) (int, error) {
	const op = "query GID table"
	if c == nil || !c.core.TryHold() { // enter, inlined
		return 0, c.enterErr(op)
	}
	total := min(len(entries), abi.MaxAttrLen/gidEntrySize)
	if total == 0 {
		c.leave()
		return 0, c.err(op, errArg("no room for an entry"))
	}
	// The request is written in place in a scratch (verbs.Call), and the
	// kernel writes the entries into the scratch's buffer: the call
	// allocates nothing for a table of up to gidTableKept entries.
	s := c.scr.get()
	buf := s.gidTable(total)
	s.u64 = 0
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE)
	k.Inline(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, 8, uint64(gidEntrySize))
	k.OutHeld(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, buf)
	k.OutHeld(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, bytesOf(&s.u64))
	err := c.core.DoCall(k)
	runtime.KeepAlive(buf) // when not the scratch's own
	n := s.u64
	if err == nil && n > uint64(total) {
		err = gidCountErr(n, total)
	}
	if err == nil {
		for i := range int(n) {
			entries[i] = gidEntryAt(buf[i*gidEntrySize:])
		}
	}
	c.scr.put(s)
	c.leave()
	if err != nil {
		return 0, c.err(op, err)
	}
	return int(n), nil
}

// gidCountErr is kept out of QueryGIDTableInto so the success path does
// not allocate.
func gidCountErr(n uint64, total int) error {
	return fmt.Errorf("kernel reported %d entries for room for %d: %w", n, total, syscall.EPROTO)
}

// QueryGID returns GID table entry index of port, like ibv_query_gid_ex:
// UVERBS_METHOD_QUERY_GID_ENTRY.
//
// Errors: an *Error wrapping ENODATA for an empty entry, EINVAL for an
// invalid port or an index past the table.
func (c *Context) QueryGID(port, index int) (GIDEntry, error) {
	if err := c.enter("query GID"); err != nil {
		return GIDEntry{}, err
	}
	defer c.leave()
	if port < 0 || port > maxPort || index < 0 || index > math.MaxUint32 {
		return GIDEntry{}, c.err(fmt.Sprintf("query GID %d of port %d", index, port), syscall.EINVAL)
	}
	buf := make([]byte, gidEntrySize)
	r := abi.NewRequest(c.api, c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_ENTRY).
		Const(abi.UVERBS_ATTR_QUERY_GID_ENTRY_PORT, uint64(port)).
		Const(abi.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, uint64(index)).
		Flags(abi.UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0).
		Out(abi.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, buf)
	if err := c.do(r); err != nil {
		return GIDEntry{}, c.err(fmt.Sprintf("query GID %d of port %d", index, port), err)
	}
	e, err := decodeGIDEntry(buf)
	if err != nil {
		return GIDEntry{}, c.err(fmt.Sprintf("query GID %d of port %d", index, port), err)
	}
	return e, nil
}
