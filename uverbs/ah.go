package uverbs

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"syscall"

	"github.com/purerdma/rdma"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/verbs"
)

// AH is an address handle (struct ibv_ah): where a UD send goes.
type AH struct {
	c      *Context
	handle uint32
	num    uint32 // rxe's ah_num, which UD send WQEs carry
	seqV   uint64
	// mlx5: the address vector UD send WQEs copy (struct mlx5_wqe_av,
	// without the destination QP and Q_Key the send gives), and whether
	// the kernel holds an AH too (kern: RoCE; an InfiniBand port's AH is
	// user space only, as libmlx5's).
	m5av   [mlx5AVSize]byte
	m5     bool
	noKern bool

	lifecycle
}

// CreateAH creates an address handle on the PD, like ibv_create_ah: write
// command CREATE_AH through INVOKE_WRITE, with rxe's driver output (struct
// rxe_create_ah_resp: the ah_num UD sends name it by). RoCE ports need
// IsGlobal with a GRH whose DGID is the peer's GID.
//
// Errors: an *Error wrapping the kernel's errno (EINVAL for a bad port or
// a missing GRH on RoCE); ErrNotSupported where the driver gives no
// ah_num (rxe before Linux 5.11, and providers without a data path here);
// os.ErrClosed after Close.
func (pd *PD) CreateAH(attr AHAttr) (*AH, error) {
	const op = "create ah"
	if pd == nil {
		return nil, errs.New(op, "", errNil)
	}
	c := pd.c
	if err := c.enter(op); err != nil {
		return nil, err
	}
	defer c.leave()
	if err := pd.alive(c, op); err != nil {
		return nil, err
	}
	if attr.Port < 0 || attr.Port > maxPort {
		return nil, c.err(op, errArg("port %d: port numbers are 1 to %d", attr.Port, maxPort))
	}
	if m5, ok := c.prov.(*mlx5Provider); ok {
		return pd.createMlx5AH(op, m5, &attr)
	}
	if _, ok := c.prov.(*rxeProvider); !ok {
		return nil, c.err(op, errNoDataPath(c))
	}
	d := qpDest(&attr)
	req := &abi.IbUverbsCreateAh{PdHandle: pd.handle, Attr: abi.IbUverbsAhAttr{
		Grh: abi.IbUverbsGlobalRoute{Dgid: d.Dgid, FlowLabel: d.FlowLabel, SgidIndex: d.SgidIndex,
			HopLimit: d.HopLimit, TrafficClass: d.TrafficClass},
		Dlid: d.Dlid, Sl: d.Sl, SrcPathBits: d.SrcPathBits, StaticRate: d.StaticRate, IsGlobal: d.IsGlobal, PortNum: d.PortNum}}
	resp := new(abi.IbUverbsCreateAhResp)
	req.Response = addrOf(bytesOf(resp))
	drv := new(abi.RxeCreateAhResp)
	if err := c.invokeWrite(abi.IB_USER_VERBS_CMD_CREATE_AH, bytesOf(req), bytesOf(resp), nil, bytesOf(drv)); err != nil {
		return nil, c.err(op, err)
	}
	ah := &AH{c: c, handle: resp.AhHandle, num: drv.AhNum}
	if ah.num == 0 {
		ah.destroyLocked(false)
		return nil, c.err(op, fmt.Errorf("the driver gave no ah_num (a kernel older than 5.11): %w", syscall.EOPNOTSUPP))
	}
	ah.seqV = c.core.NextSeq()
	c.track(ah, 0)
	return ah, nil
}

// Handle returns the kernel's handle of the AH.
func (ah *AH) Handle() uint32 {
	if ah == nil {
		return 0
	}
	return ah.handle
}

func (ah *AH) stage() verbs.Stage { return verbs.StageAH }
func (ah *AH) seq() uint64        { return ah.seqV }

// Close destroys the AH, like ibv_destroy_ah (UVERBS_METHOD_AH_DESTROY).
// Closing a closed AH, or one whose Context was closed, returns nil.
//
// Errors: an *Error wrapping the kernel's errno.
func (ah *AH) Close() error {
	if ah == nil {
		return errs.New("destroy ah", "", errNil)
	}
	return closeObject(ah.c, "destroy ah", ah)
}

func (ah *AH) destroyLocked(bool) error {
	c := ah.c
	if ah.noKern {
		return ah.destroyOnce(c, "destroy ah", func() error { return nil }, func() { c.untrack(ah, 0) })
	}
	return ah.destroyOnce(c, "destroy ah", func() error {
		return c.do(abi.NewRequest(c.api, c.drv, abi.UVERBS_OBJECT_AH, abi.UVERBS_METHOD_AH_DESTROY).
			Handle(abi.UVERBS_ATTR_DESTROY_AH_HANDLE, ah.handle))
	}, func() { c.untrack(ah, 0) })
}

// The address vector of an mlx5 UD send (struct mlx5_wqe_av,
// include/linux/mlx5/qp.h; rdma-core's mlx5dv.h): what a datagram segment
// carries.
const (
	mlx5AVSize        = 48
	mlx5AVQKey        = 0  // key.qkey.qkey, big-endian
	mlx5AVDQP         = 8  // dqp_dct: the QP number | MLX5_EXTENDED_UD_AV
	mlx5AVStatRateSL  = 12 // stat_rate_sl
	mlx5AVFlMLID      = 13 // fl_mlid
	mlx5AVRLID        = 14 // rlid, or the RoCE v2 UDP source port
	mlx5AVRMAC        = 20 // rmac[6]
	mlx5AVTClass      = 26
	mlx5AVHopLimit    = 27
	mlx5AVGRHGIDFL    = 28 // grh_gid_fl: grh << 30 | sgid_index << 20 | flow label
	mlx5AVRGID        = 32 // rgid[16]
	mlx5ExtendedUDAV  = 0x80000000
	roceUDPSportMin   = 0xc000 // IB_ROCE_UDP_ENCAP_VALID_PORT_MIN
	grhFlowLabelMask  = 0xfffff
	mlx5StatRateCount = 22
)

// mlx5Rates maps enum ibv_rate to mlx5's stat_rate (providers/mlx5/verbs.c
// ib_to_mlx5_rate_table): 0 is no limit.
var mlx5Rates = [mlx5StatRateCount]uint8{0, 0, 7, 8, 9, 10, 11, 12, 13, 14, 15, 11, 13, 15, 0, 9, 15, 0, 0, 9, 13, 0}

// createMlx5AH is libmlx5's mlx5_create_ah: the address vector built in
// user space (a RoCE port needs a GRH; a RoCE v2 GID gives the UDP source
// port from the flow label, or a random one), and on RoCE the kernel's AH,
// whose driver output is the destination MAC the core resolved (struct
// mlx5_ib_create_ah_resp), when the kernel offers it
// (MLX5_USER_CMDS_SUPP_UHW_CREATE_AH, as mlx5 does on Ethernet ports).
func (pd *PD) createMlx5AH(op string, p *mlx5Provider, attr *AHAttr) (*AH, error) {
	c := pd.c
	port, err := c.QueryPort(attr.Port)
	if err != nil {
		return nil, err
	}
	eth := port.LinkLayer == rdma.LinkLayerEthernet
	if !attr.IsGlobal && (eth || port.Flags&abi.IB_UVERBS_QPF_GRH_REQUIRED != 0) {
		return nil, c.err(op, errArg("port %d needs a GRH (IsGlobal)", attr.Port))
	}
	ah := &AH{c: c, m5: true, noKern: !eth}
	av := ah.m5av[:]
	rate := uint8(0)
	if int(attr.StaticRate) < len(mlx5Rates) {
		rate = mlx5Rates[attr.StaticRate]
	}
	grh := uint32(0)
	if eth {
		g, err := c.QueryGID(attr.Port, int(attr.GRH.SGIDIndex))
		if err != nil {
			return nil, err
		}
		if g.Type == GIDTypeRoCEv2 {
			sport := uint16(roceUDPSportMin + rand.IntN(0x10000-roceUDPSportMin))
			if fl := attr.GRH.FlowLabel & grhFlowLabelMask; fl != 0 {
				sport = uint16((fl&0x3fff)^(fl>>14)) | roceUDPSportMin // ibv_flow_label_to_udp_sport
			}
			binary.BigEndian.PutUint16(av[mlx5AVRLID:], sport)
		}
		av[mlx5AVStatRateSL] = rate<<4 | (attr.SL&7)<<1
	} else {
		av[mlx5AVFlMLID] = attr.SrcPathBits & 0x7f
		binary.BigEndian.PutUint16(av[mlx5AVRLID:], attr.DLID)
		grh = 1
		av[mlx5AVStatRateSL] = rate<<4 | attr.SL&0xf
	}
	if attr.IsGlobal {
		av[mlx5AVTClass] = attr.GRH.TrafficClass
		av[mlx5AVHopLimit] = attr.GRH.HopLimit
		binary.BigEndian.PutUint32(av[mlx5AVGRHGIDFL:], grh<<30|uint32(attr.GRH.SGIDIndex)<<20|attr.GRH.FlowLabel&grhFlowLabelMask)
		copy(av[mlx5AVRGID:], attr.GRH.DGID[:])
	}
	if eth {
		if p.resp.CmdsSuppUhw&abi.MLX5_USER_CMDS_SUPP_UHW_CREATE_AH == 0 {
			return nil, c.err(op, fmt.Errorf("this kernel does not resolve the destination MAC (no MLX5_USER_CMDS_SUPP_UHW_CREATE_AH), and resolving it in user space is not implemented: %w", ErrNotSupported))
		}
		d := qpDest(attr)
		req := &abi.IbUverbsCreateAh{PdHandle: pd.handle, Attr: abi.IbUverbsAhAttr{
			Grh: abi.IbUverbsGlobalRoute{Dgid: d.Dgid, FlowLabel: d.FlowLabel, SgidIndex: d.SgidIndex,
				HopLimit: d.HopLimit, TrafficClass: d.TrafficClass},
			Dlid: d.Dlid, Sl: d.Sl, SrcPathBits: d.SrcPathBits, StaticRate: d.StaticRate, IsGlobal: d.IsGlobal, PortNum: d.PortNum}}
		resp := new(abi.IbUverbsCreateAhResp)
		req.Response = addrOf(bytesOf(resp))
		drv := new(abi.Mlx5IbCreateAhResp)
		if err := c.invokeWrite(abi.IB_USER_VERBS_CMD_CREATE_AH, bytesOf(req), bytesOf(resp), nil, bytesOf(drv)); err != nil {
			return nil, c.err(op, err)
		}
		ah.handle = resp.AhHandle
		copy(av[mlx5AVRMAC:], drv.Dmac[:])
	}
	ah.seqV = c.core.NextSeq()
	c.track(ah, 0)
	return ah, nil
}
