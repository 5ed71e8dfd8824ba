package uverbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/purerdma/rdma/abi"
)

// DeviceAttr is what QueryDevice returns: struct ibv_device_attr_ex, every
// field `ibv_devinfo -v` prints. Fields keep the kernel's widths; GUIDs are
// in host order.
type DeviceAttr struct {
	FWVer                 string // formatted the way the driver's rdma-core provider does
	NodeGUID              uint64
	SysImageGUID          uint64
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HWVer                 uint32
	MaxQP                 uint32
	MaxQPWR               uint32
	DeviceCapFlags        uint32 // IB_UVERBS_DEVICE_* (low 32 bits)
	MaxSGE                uint32
	MaxSGERd              uint32
	MaxCQ                 uint32
	MaxCQE                uint32
	MaxMR                 uint32
	MaxPD                 uint32
	MaxQPRdAtom           uint32
	MaxEERdAtom           uint32
	MaxResRdAtom          uint32
	MaxQPInitRdAtom       uint32
	MaxEEInitRdAtom       uint32
	AtomicCap             AtomicCap
	MaxEE                 uint32
	MaxRDD                uint32
	MaxMW                 uint32
	MaxRawIPv6QP          uint32
	MaxRawEthyQP          uint32
	MaxMcastGrp           uint32
	MaxMcastQPAttach      uint32
	MaxTotalMcastQPAttach uint32
	MaxAH                 uint32
	MaxFMR                uint32
	MaxMapPerFMR          uint32
	MaxSRQ                uint32
	MaxSRQWR              uint32
	MaxSRQSGE             uint32
	MaxPKeys              uint16
	LocalCAAckDelay       uint8
	PhysPortCnt           uint8

	ODPCaps                 ODPCaps
	XRCODPCaps              uint32
	CompletionTimestampMask uint64
	HCACoreClock            uint64 // kHz
	DeviceCapFlagsEx        uint64
	TSOCaps                 TSOCaps
	RSSCaps                 RSSCaps
	MaxWQTypeRQ             uint32
	PacketPacingCaps        PacketPacingCaps
	RawPacketCaps           uint32 // IB_UVERBS_RAW_PACKET_CAP_*
	TMCaps                  TMCaps
	CQModCaps               CQModerationCaps
	MaxDMSize               uint64
}

// ODPCaps are the on-demand paging capabilities (struct ibv_odp_caps).
type ODPCaps struct {
	GeneralCaps uint64
	RCODPCaps   uint32
	UCODPCaps   uint32
	UDODPCaps   uint32
}

// TSOCaps are the TCP segmentation offload capabilities (mlx5 driver data).
type TSOCaps struct {
	MaxTSO        uint32
	SupportedQPTs uint32
}

// RSSCaps are the receive-side scaling capabilities.
type RSSCaps struct {
	SupportedQPTs              uint32
	MaxRWQIndirectionTables    uint32
	MaxRWQIndirectionTableSize uint32
	RxHashFieldsMask           uint64 // mlx5 driver data
	RxHashFunction             uint8  // mlx5 driver data
}

// PacketPacingCaps are the rate-limit capabilities (mlx5 driver data).
type PacketPacingCaps struct {
	QPRateLimitMin uint32 // kbps
	QPRateLimitMax uint32 // kbps
	SupportedQPTs  uint32
}

// TMCaps are the tag matching capabilities.
type TMCaps struct {
	MaxRndvHdrSize uint32
	MaxNumTags     uint32
	Flags          uint32
	MaxOps         uint32
	MaxSGE         uint32
}

// CQModerationCaps are the CQ moderation limits.
type CQModerationCaps struct {
	MaxCQCount  uint16
	MaxCQPeriod uint16
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
		return DeviceAttr{}, c.err("query device", err)
	}
	var a DeviceAttr
	fillDeviceAttr(raw, &a)
	c.prov.deviceAttr(raw, out, &a)
	return a, nil
}

func fillDeviceAttr(r *abi.IbUverbsExQueryDeviceResp, a *DeviceAttr) {
	b := &r.Base
	*a = DeviceAttr{
		NodeGUID: beU64(b.NodeGuid), SysImageGUID: beU64(b.SysImageGuid),
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
	State         PortState
	MaxMTU        MTU
	ActiveMTU     MTU
	GIDTableLen   uint32
	PortCapFlags  uint32 // IB_UVERBS_PCF_*
	MaxMsgSize    uint32
	BadPKeyCntr   uint32
	QKeyViolCntr  uint32
	PKeyTableLen  uint16
	LID           uint16
	SMLID         uint16
	LMC           uint8
	MaxVLNum      uint8
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8  // 1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X
	ActiveSpeed   uint8  // 1 SDR … 128 NDR (clamped)
	ActiveSpeedEx uint32 // unclamped (Linux 6.12 and later; else 0)
	PhysState     uint8
	LinkLayer     LinkLayer
	Flags         uint8 // IB_UVERBS_QPF_GRH_REQUIRED
	PortCapFlags2 uint16
}

// QueryPort returns the attributes of port (1-based), like ibv_query_port:
// UVERBS_METHOD_QUERY_PORT. It reuses one request and response buffer per
// Context, so in steady state it allocates nothing; concurrent calls on one
// Context are serialised.
//
// Errors: an *Error wrapping EINVAL for port 0 or a port the device does
// not have (the kernel's answer), EIO once the device was removed,
// os.ErrClosed after Close.
func (c *Context) QueryPort(port uint8) (PortAttr, error) {
	if err := c.enter("query port"); err != nil {
		return PortAttr{}, err
	}
	defer c.leave()
	c.portMu.Lock()
	defer c.portMu.Unlock()
	rsp := c.portRsp
	*rsp = abi.IbUverbsQueryPortRespEx{}
	r := c.portReq
	r.Reset(c.api, c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT)
	r.Const(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, uint64(port)).
		Out(abi.UVERBS_ATTR_QUERY_PORT_RESP, bytesOf(rsp))
	if err := c.do(r); err != nil {
		return PortAttr{}, c.portErr(port, err)
	}
	l := &rsp.LegacyResp
	return PortAttr{
		State: PortState(l.State), MaxMTU: MTU(l.MaxMtu), ActiveMTU: MTU(l.ActiveMtu),
		GIDTableLen: l.GidTblLen, PortCapFlags: l.PortCapFlags, MaxMsgSize: l.MaxMsgSz,
		BadPKeyCntr: l.BadPkeyCntr, QKeyViolCntr: l.QkeyViolCntr, PKeyTableLen: l.PkeyTblLen,
		LID: l.Lid, SMLID: l.SmLid, LMC: l.Lmc, MaxVLNum: l.MaxVlNum, SMSL: l.SmSl,
		SubnetTimeout: l.SubnetTimeout, InitTypeReply: l.InitTypeReply,
		ActiveWidth: l.ActiveWidth, ActiveSpeed: l.ActiveSpeed, ActiveSpeedEx: rsp.ActiveSpeedEx,
		PhysState: l.PhysState, LinkLayer: LinkLayer(l.LinkLayer), Flags: l.Flags,
		PortCapFlags2: rsp.PortCapFlags2,
	}, nil
}

// portErr is kept out of QueryPort so the success path does not allocate.
func (c *Context) portErr(port uint8, err error) error {
	return c.err(fmt.Sprintf("query port %d", port), err)
}

// GIDEntry is one valid GID table entry (struct ibv_gid_entry).
type GIDEntry struct {
	GID           GID
	Index         uint32
	Port          uint32
	Type          GIDType
	NetdevIfindex uint32 // 0 when the GID has no netdev
}

const gidEntrySize = 32 // sizeof(struct ib_uverbs_gid_entry)

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
		pa, err := c.QueryPort(uint8(p))
		if err != nil {
			return nil, err
		}
		total += int(pa.GIDTableLen)
	}
	if total == 0 {
		return nil, nil
	}
	if total > abi.MaxAttrLen/gidEntrySize {
		total = abi.MaxAttrLen / gidEntrySize
	}
	if err := c.enter("query GID table"); err != nil {
		return nil, err
	}
	defer c.leave()
	buf := make([]byte, total*gidEntrySize)
	n := new(uint64)
	r := abi.NewRequest(c.api, c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE).
		Const(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, gidEntrySize).
		Out(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, buf).
		Out(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, bytesOf(n))
	if err := c.do(r); err != nil {
		return nil, c.err("query GID table", err)
	}
	if *n > uint64(total) {
		return nil, c.err("query GID table", fmt.Errorf("kernel reported %d entries for room for %d: %w", *n, total, syscall.EPROTO))
	}
	out := make([]GIDEntry, *n)
	for i := range out {
		out[i] = decodeGIDEntry(buf[i*gidEntrySize:])
	}
	return out, nil
}

// QueryGID returns GID table entry index of port, like ibv_query_gid_ex:
// UVERBS_METHOD_QUERY_GID_ENTRY.
//
// Errors: an *Error wrapping ENODATA for an empty entry, EINVAL for an
// invalid port or an index past the table.
func (c *Context) QueryGID(port uint32, index uint32) (GIDEntry, error) {
	if err := c.enter("query GID"); err != nil {
		return GIDEntry{}, err
	}
	defer c.leave()
	buf := make([]byte, gidEntrySize)
	r := abi.NewRequest(c.api, c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_ENTRY).
		Const(abi.UVERBS_ATTR_QUERY_GID_ENTRY_PORT, uint64(port)).
		Const(abi.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, uint64(index)).
		Flags(abi.UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0).
		Out(abi.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, buf)
	if err := c.do(r); err != nil {
		return GIDEntry{}, c.err(fmt.Sprintf("query GID %d of port %d", index, port), err)
	}
	return decodeGIDEntry(buf), nil
}

func decodeGIDEntry(b []byte) GIDEntry {
	var e GIDEntry
	copy(e.GID[:], b[:16])
	e.Index = binary.LittleEndian.Uint32(b[16:])
	e.Port = binary.LittleEndian.Uint32(b[20:])
	e.Type = GIDType(binary.LittleEndian.Uint32(b[24:]))
	e.NetdevIfindex = binary.LittleEndian.Uint32(b[28:])
	return e
}
