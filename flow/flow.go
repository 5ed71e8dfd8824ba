package flow

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/verbs"
	"github.com/purerdma/rdma/uverbs"
)

// Flow is a flow steering rule attached to a QP (struct ibv_flow).
type Flow struct {
	c      *uverbs.Context
	core   *verbs.Core
	qp     *uverbs.QP
	handle uint32
	bound  *verbs.Binding // the counters its count action bound, or nil
	own    *verbs.Owned
}

// Create attaches a flow to qp, like ibv_create_flow: the extended write
// command EX_CREATE_FLOW (carried by UVERBS_METHOD_INVOKE_WRITE) with
// struct ib_uverbs_create_flow, the specs, and on mlx5 the driver data
// struct mlx5_ib_create_flow. A Count action binds its counters object:
// the first flow bound to the object sends the object's counter points
// (its (description, index) pairs), later flows send none while one of
// them lives (rdma-core's rule; mlx5 counters.c mlx5_ib_flow_counters_set_data, rdma-core providers/mlx5/verbs.c mlx5_attach_counters_point_flow). The flow is destroyed
// by Close, or by the context's Close before the counters and QPs.
//
// The kernel requires CAP_NET_RAW, and a UD or RAW_PACKET QP (mlx5 steers
// to the RAW_PACKET QP's receive queue).
//
// Errors (all *Error): EINVAL, checked before any system call, for a nil QP
// or attr, more than one Count action (one counters object per flow), a
// Count without Counters or with counters of another context, counters
// without counter points, specs that do not encode; ErrNotSupported
// (EOPNOTSUPP) for a Count on an mlx5 flow other than AttrNormal (mlx5
// builds those from fixed specs and would count nothing) and from drivers
// without flow steering (rxe: every QP type); os.ErrClosed for destroyed
// counters or a closed context; the kernel's errno otherwise: EPERM
// (os.ErrPermission) without CAP_NET_RAW, EINVAL for the core's checks
// (uverbs_cmd.c ib_uverbs_ex_create_flow, in its order; docs/mock0.md: flags, more than 10 specs, a QP that is not UD or
// RAW_PACKET, an invalid port, malformed specs) and mlx5's, ENOMEM from
// mlx5 for a priority above 15.
func Create(qp *uverbs.QP, attr *Attr) (*Flow, error) {
	const op = "create flow"
	if qp == nil || attr == nil {
		return nil, errs.New(op, "", errArg("a flow needs a QP and attributes"))
	}
	c := qp.Context()
	dev := c.Device().Name
	fail := func(err error) (*Flow, error) { return nil, errs.New(op, dev, err) }

	var count *Count
	for i, s := range attr.Specs {
		if cs, ok := s.(*Count); ok {
			if count != nil {
				return fail(errArg("specs %d and an earlier one are both count actions; a flow takes one", i))
			}
			if cs == nil {
				return fail(errArg("spec %d is a nil *Count", i))
			}
			count = cs
		}
	}
	core := c.Core(verbs.Seal{})
	var binder *verbs.Binding
	if count != nil {
		if count.Counters == nil {
			return fail(errArg("the count action has no Counters (a *counters.Object from counters.Create)"))
		}
		binder = count.Counters.Binding(verbs.Seal{})
		if count.Counters.Context() != c || binder.Core != core {
			return fail(errArg("the counters object belongs to another context than the QP"))
		}
		if c.DriverID() == abi.RDMA_DRIVER_MLX5 && attr.Type != AttrNormal {
			return fail(fmt.Errorf("mlx5 builds %s flows from fixed specs and attaches no counters to them: %w", attr.Type, syscall.EOPNOTSUPP))
		}
	}

	if err := core.Hold(op); err != nil {
		return fail(os.ErrClosed)
	}
	defer core.Release()

	var pairs []abi.Mlx5IbFlowCountersDesc
	if binder != nil {
		var err error
		if pairs, err = binder.BeginBind(); err != nil {
			return fail(err)
		}
	}
	ok := false
	defer func() {
		if binder != nil {
			binder.EndBind(ok)
		}
	}()

	// struct ib_uverbs_create_flow, then the specs.
	cmd := make([]byte, 8, 8+AttrHdrSize+attr.Size())
	binary32(cmd[4:], qp.Handle())
	cmd, err := attr.AppendBinary(cmd)
	if err != nil {
		var fe *Error
		if errors.As(err, &fe) {
			err = fe.Err
		}
		return fail(err)
	}
	var drv []byte
	if c.DriverID() == abi.RDMA_DRIVER_MLX5 {
		drv = mlx5DriverData(count != nil, pairs)
	}
	resp := new(abi.IbUverbsCreateFlowResp)
	r := abi.InvokeWrite(core.API(), core.Driver(), abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_CREATE_FLOW,
		cmd, structBytes(resp), drv, nil)
	err = core.InvokeHeld(r)
	runtime.KeepAlive(pairs) // their address is inside drv
	if err != nil {
		err = kernelErr(err)
		if errs.Is(err, ErrNotSupported) && core.API().Method(abi.UVERBS_OBJECT_FLOW, abi.UVERBS_METHOD_FLOW_DESTROY) == nil {
			err = fmt.Errorf("the %s driver has no flow steering: %w", c.Device().DriverID, err)
		}
		return fail(err)
	}
	f := &Flow{c: c, core: core, qp: qp, handle: resp.FlowHandle, bound: binder}
	f.own = core.Own(verbs.StageFlow, "destroy flow", f.destroy)
	ok = true
	return f, nil
}

// mlx5DriverData is struct mlx5_ib_create_flow as rdma-core's
// mlx5_create_flow builds it: 8 bytes without a count action; with one, one
// struct mlx5_ib_flow_counters_data entry, filled (ncounters_data = 1) only
// when the pairs must be sent.
func mlx5DriverData(count bool, pairs []abi.Mlx5IbFlowCountersDesc) []byte {
	if !count {
		return make([]byte, 8)
	}
	b := make([]byte, 8+16)
	if pairs != nil {
		binary32(b[0:], 1) // ncounters_data
		var addr uint64
		if len(pairs) > 0 {
			addr = uint64(uintptr(unsafe.Pointer(&pairs[0])))
		}
		binary64(b[8:], addr)                // counters_data
		binary32(b[16:], uint32(len(pairs))) // ncounters
	}
	return b
}

func binary32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func binary64(b []byte, v uint64) {
	binary32(b, uint32(v))
	binary32(b[4:], uint32(v>>32))
}

func structBytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// kernelErr takes the errno out of a uverbs error and says what EPERM
// means here.
func kernelErr(err error) error {
	var ue *uverbs.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, syscall.EPERM) {
		return fmt.Errorf("the kernel requires CAP_NET_RAW to create a flow and the caller lacks it: %w", err)
	}
	return err
}

// Handle returns the kernel's handle of the flow.
func (f *Flow) Handle() uint32 {
	if f == nil {
		return 0
	}
	return f.handle
}

// Context returns the context the flow belongs to (nil for a nil Flow).
func (f *Flow) Context() *uverbs.Context {
	if f == nil {
		return nil
	}
	return f.c
}

// QP returns the QP the flow steers to.
func (f *Flow) QP() *uverbs.QP {
	if f == nil {
		return nil
	}
	return f.qp
}

// Close destroys the flow, like ibv_destroy_flow: UVERBS_METHOD_FLOW_DESTROY,
// or the write command EX_DESTROY_FLOW where the kernel has no ioctl method
// for it (rdma-core's fallback). The counters it counted into lose one
// bound flow; when it was the last one, the kernel forgets their counter
// points and the next flow sends them again. Closing a closed flow, or one
// whose context was closed, returns nil.
//
// Errors: an *Error wrapping the kernel's errno; a removed device (EIO)
// counts as success.
func (f *Flow) Close() error {
	if f == nil {
		return errs.New("destroy flow", "", errArg("nil flow"))
	}
	return f.own.Close()
}

// destroy runs UVERBS_METHOD_FLOW_DESTROY (or EX_DESTROY_FLOW); own's lock
// is held.
func (f *Flow) destroy(invoke verbs.Invoker) error {
	c := f.c
	r := f.core.NewRequest(abi.UVERBS_OBJECT_FLOW, abi.UVERBS_METHOD_FLOW_DESTROY).
		Handle(abi.UVERBS_ATTR_DESTROY_FLOW_HANDLE, f.handle)
	err := invoke(r)
	if errors.Is(err, syscall.EPROTONOSUPPORT) {
		req := new(abi.IbUverbsDestroyFlow)
		req.FlowHandle = f.handle
		err = invoke(abi.InvokeWrite(f.core.API(), f.core.Driver(), abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_DESTROY_FLOW,
			structBytes(req), nil, nil, nil))
	}
	if err != nil && !errors.Is(err, syscall.EIO) {
		return errs.New("destroy flow", c.Device().Name, kernelErr(err))
	}
	if f.bound != nil {
		f.bound.Unbind()
	}
	return nil
}
