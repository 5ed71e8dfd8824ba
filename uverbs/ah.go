package uverbs

import (
	"fmt"
	"syscall"

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
	if _, ok := c.prov.(*rxeProvider); !ok {
		return nil, c.err(op, errNoDataPath(c))
	}
	if attr.Port < 0 || attr.Port > maxPort {
		return nil, c.err(op, errArg("port %d: port numbers are 1 to %d", attr.Port, maxPort))
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
	return ah.destroyOnce(c, "destroy ah", func() error {
		return c.do(abi.NewRequest(c.api, c.drv, abi.UVERBS_OBJECT_AH, abi.UVERBS_METHOD_AH_DESTROY).
			Handle(abi.UVERBS_ATTR_DESTROY_AH_HANDLE, ah.handle))
	}, func() { c.untrack(ah, 0) })
}
