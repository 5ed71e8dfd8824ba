package counters

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/verbs"
	"github.com/purerdma/rdma/uverbs"
)

// Description says what a counter point counts (enum ibv_counter_description;
// the kernel's enum ib_counters_description has the same values).
type Description uint32

// The counter descriptions.
const (
	Packets Description = 0 // IBV_COUNTER_PACKETS
	Bytes   Description = 1 // IBV_COUNTER_BYTES
)

// String returns "packets", "bytes" or "Description(N)".
func (d Description) String() string {
	switch d {
	case Packets:
		return "packets"
	case Bytes:
		return "bytes"
	}
	return fmt.Sprintf("Description(%d)", uint32(d))
}

// InitAttr are the attributes of a new counters object (struct
// ibv_counters_init_attr). No CompMask bit is defined.
type InitAttr struct {
	CompMask uint32
}

// AttachAttr is one counter point (struct ibv_counter_attach_attr): what to
// count (Desc) and where to put it (Index, the position in the values Read
// returns). No CompMask bit is defined.
type AttachAttr struct {
	Desc     Description
	Index    uint32
	CompMask uint32
}

// ReadFlags are the flags of Read (enum ibv_read_counters_flags).
type ReadFlags uint32

// PreferCached asks for the driver's cached values instead of a hardware
// access (IBV_READ_COUNTERS_ATTR_PREFER_CACHED). mlx5 accepts it and
// queries the device anyway.
const PreferCached ReadFlags = abi.IB_UVERBS_READ_COUNTERS_PREFER_CACHED

// MaxValues is the most values one Read can return: the read buffer's
// length is a 16-bit attribute length (8191 u64s). A counter point's index
// must be below it.
const MaxValues = abi.MaxAttrLen / 8

// Target is a verbs object a counter point can be attached to dynamically:
// a *flow.Flow. Attach takes nil for a static attach.
type Target interface {
	Handle() uint32
	Context() *uverbs.Context
}

// Object is a verbs counters object (struct ibv_counters) with its
// counter points and its binding state.
type Object struct {
	c *uverbs.Context

	// b is the binding state flow's count action uses (Binding): the
	// context's core, the handle, the lifecycle, the counter points and
	// the bound flows. b.Own's lock is taken after the context's Hold:
	// exclusively by the destruction, shared by Read, Attach and a flow
	// being created that binds the object; the points and the bound
	// flows have a lock of their own inside b.
	b verbs.Binding

	// calls hold the READ requests: each Read takes one for its call,
	// so that reads of one object run together, as ibv_read_counters
	// builds its command on the caller's stack and takes no lock. A
	// request is heap memory: the kernel finds the attributes at the
	// addresses it carries.
	calls verbs.CallList
}

// Binding returns the object's binding state, for this module's package
// flow, whose count action binds the object. Code outside the module
// cannot call it (short of reflection): its argument's type is internal.
// It returns nil for a nil Object.
func (cs *Object) Binding(verbs.Seal) *verbs.Binding {
	if cs == nil {
		return nil
	}
	return &cs.b
}

// Create creates a counters object on the context, like
// ibv_create_counters: UVERBS_METHOD_COUNTERS_CREATE. Its values are zero
// and only grow once it is bound (see Attach). attr may be nil.
//
// Errors (all *Error): EINVAL for a nil context; EOPNOTSUPP
// (ErrNotSupported) for a non-zero attr.CompMask (rdma-core's rule), for a
// driver without counters (every driver but mlx5 in Linux 6.12: the kernel
// answers EPROTONOSUPPORT; the message names the driver) and for a driver
// this package cannot bind counters on; os.ErrClosed after the context's
// Close; the kernel's errno otherwise.
func Create(c *uverbs.Context, attr *InitAttr) (*Object, error) {
	const op = "create counters"
	if c == nil {
		return nil, errs.New(op, "", errArg("nil context"))
	}
	dev := c.Device()
	fail := func(err error) (*Object, error) { return nil, errs.New(op, dev.Name, err) }
	if attr != nil && attr.CompMask != 0 {
		return fail(fmt.Errorf("comp_mask %#x: no bit is defined: %w", attr.CompMask, syscall.EOPNOTSUPP))
	}
	core := c.Core(verbs.Seal{})
	if err := core.Hold(op); err != nil {
		return fail(os.ErrClosed)
	}
	defer core.Release()
	r := core.NewRequest(abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_CREATE).
		NewHandle(abi.UVERBS_ATTR_CREATE_COUNTERS_HANDLE)
	if err := core.InvokeHeld(r); err != nil {
		err = errnoOf(err)
		if errs.Is(err, ErrNotSupported) {
			err = fmt.Errorf("the %s driver has no verbs counters: %w", dev.DriverID, err)
		}
		return fail(err)
	}
	h, err := r.Created(abi.UVERBS_ATTR_CREATE_COUNTERS_HANDLE)
	if err != nil {
		return fail(err)
	}
	cs := &Object{c: c, b: verbs.Binding{Core: core, Handle: h}}
	if c.DriverID() != rdma.DriverMLX5 {
		// A kernel newer than 6.12 with counters on another driver: how
		// that driver takes counter points is unknown here.
		cs.destroy(core.InvokeHeld)
		return fail(fmt.Errorf("purerdma binds counters only on mlx5, not on the %s driver: %w", dev.DriverID, syscall.EOPNOTSUPP))
	}
	cs.b.Own = core.Own(verbs.StageCounters, "destroy counters", cs.destroy)
	return cs, nil
}

// Handle returns the kernel's handle of the object.
func (cs *Object) Handle() uint32 {
	if cs == nil {
		return 0
	}
	return cs.b.Handle
}

// Context returns the context the object was created on.
func (cs *Object) Context() *uverbs.Context {
	if cs == nil {
		return nil
	}
	return cs.c
}

// Points returns the attached counter points, in attach order.
func (cs *Object) Points() []AttachAttr {
	if cs == nil {
		return nil
	}
	points, _ := cs.b.State()
	out := make([]AttachAttr, len(points))
	for i, p := range points {
		out[i] = AttachAttr{Desc: Description(p.Description), Index: p.Index}
	}
	return out
}

// Bound returns how many live flows created through package flow count
// into the object.
func (cs *Object) Bound() int {
	if cs == nil {
		return 0
	}
	_, flows := cs.b.State()
	return flows
}

// Attach adds a counter point, like ibv_attach_counters_point_flow: the
// value attr.Desc describes will be added at attr.Index of what Read
// returns. With obj nil the attach is static: the object starts counting
// when a flow is created with a Count action naming it (flow.Create), and
// every flow created with it adds into the same indexes. Attaching the
// same index more than once, with the same or another description, sums
// those values there.
//
// The rules are the man page's as rdma-core's mlx5 provider implements
// them, in its order:
//
//   - ENOTSUP (ErrNotSupported) for a dynamic attach (obj not nil): mlx5
//     supports only static attach;
//   - EOPNOTSUPP (ErrNotSupported) for a non-zero attr.CompMask;
//   - ENOTSUP (ErrNotSupported) for a description other than Packets and
//     Bytes;
//   - EINVAL for an index that no Read could return (MaxValues or more);
//     rdma-core would store it and fail every read;
//   - EBUSY while the object is bound to a flow: no attach until every
//     flow counting into it is destroyed (then the points accumulate with
//     the earlier ones, and the next flow sends them all).
//
// Errors are *Error values; os.ErrClosed after Close.
func (cs *Object) Attach(attr AttachAttr, obj Target) error {
	const op = "attach counter point"
	if cs == nil || cs.c == nil {
		return errs.New(op, "", errArg("nil counters, or not made by Create"))
	}
	fail := func(err error) error { return errs.New(op, cs.c.Device().Name, err) }
	if obj != nil && obj.Context() != nil {
		return fail(fmt.Errorf("the %s driver supports only static attach (no flow; attach before creating the flow): %w", cs.c.Device().DriverID, syscall.ENOTSUP))
	}
	if attr.CompMask != 0 {
		return fail(fmt.Errorf("comp_mask %#x: no bit is defined: %w", attr.CompMask, syscall.EOPNOTSUPP))
	}
	if attr.Desc != Packets && attr.Desc != Bytes {
		return fail(fmt.Errorf("counter description %d is not supported on a flow (packets and bytes are): %w", uint32(attr.Desc), syscall.ENOTSUP))
	}
	if attr.Index >= MaxValues {
		return fail(errArg("index %d: a read returns at most %d values", attr.Index, MaxValues))
	}
	bound, err := cs.b.AddPoint(abi.Mlx5IbFlowCountersDesc{Description: uint32(attr.Desc), Index: attr.Index})
	if err != nil {
		return fail(err)
	}
	if bound > 0 {
		return fail(fmt.Errorf("the counters object is bound statically to %d flow(s); no attach until none is left: %w", bound, syscall.EBUSY))
	}
	return nil
}

// Read reads the values into values, like ibv_read_counters with ncounters
// = len(values): UVERBS_METHOD_COUNTERS_READ with a buffer of len(values)
// u64s and flags (0 for a hardware access, PreferCached). Entry i holds the
// sum of the values of every counter point attached at index i, over every
// flow bound to the object; entries no point names are 0. Values start at
// zero and only grow: destroying the flows and binding new ones keeps
// counting from where they were.
//
// As with libibverbs, values shorter than the largest attached index + 1
// fails (EINVAL from the kernel, mlx5) and a longer one is fine (the rest
// is zeroed); more than MaxValues fails EINVAL before the system call. The
// object can be read only while a flow counts into it: before the first
// bind and after the last flow is gone the kernel answers EINVAL. It does
// not allocate.
//
// Reads of one object run together, in the library and in the kernel
// (the READ method holds the object shared; mlx5 serializes only its
// query of the hardware counter); a Close waits for the reads under way,
// so that none names a destroyed handle, which the kernel could give to a
// new object.
//
// Errors (all *Error): EINVAL as above and for flags the kernel does not
// know; os.ErrClosed after Close or the context's Close.
func (cs *Object) Read(values []uint64, flags ReadFlags) error {
	const op = "read counters"
	if cs == nil || cs.c == nil {
		return errs.New(op, "", errArg("nil counters, or not made by Create"))
	}
	// The fast path holds one of the object's Calls, and nothing else:
	// the object's destruction drains the Calls before it names the
	// handle to the kernel (destroy), and the context's Close destroys
	// every counters object before it closes the descriptor, so the
	// handle and the descriptor number both stay valid for the call
	// without the context's hold or the object's lock, as
	// ibv_read_counters takes none. No defers: the read is a hot path.
	k, slot, ok := cs.calls.TryGet()
	if ok {
		k.Pace() // a loop of reads passes through the scheduler (verbs.Call.Pace)
	} else {
		// Closing, closed, or eight reads in flight: hold the context
		// and the object's lock shared, which wait for a destruction in
		// progress (it may fail, EBUSY, and the object stay), and make
		// a Call of its own.
		var err error
		if k, err = cs.lockForRead(op); err != nil {
			return err
		}
	}
	core := cs.b.Core
	// COUNTERS_READ written in place (verbs.Call): the attributes
	// rdma-core's ibv_read_counters sends, less FLAGS when it is 0.
	// The kernel takes a missing FLAGS for 0 (uverbs_get_flags32), and
	// not looking up and checking one attribute saves it about 115 of a
	// read's 4.3 k kernel instructions (3 %).
	k.Start(core.Driver(), abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_READ)
	k.Handle(abi.UVERBS_ATTR_READ_COUNTERS_HANDLE, cs.b.Handle)
	// values may be on the caller's stack, which may move before the
	// system call: its address is written in the ioctl's own frame
	// (verbs.Call.OutLate). More than MaxValues is refused by OutLate,
	// then by DoCallLate (EINVAL, no system call): explainRead says why.
	k.OutLate(abi.UVERBS_ATTR_READ_COUNTERS_BUFF, len(values)*8)
	if flags != 0 {
		k.Inline(abi.UVERBS_ATTR_READ_COUNTERS_FLAGS, 4, uint64(flags))
	}
	err := core.DoCallLate(k, unsafe.Pointer(unsafe.SliceData(values)))
	if slot >= 0 { // TryGet's: -1 on the locked path
		cs.calls.Put(slot)
	} else {
		cs.unlockRead()
	}
	if err != nil {
		if slot >= 0 && core.Closing() {
			// The context's Close began meanwhile: its teardown may
			// have destroyed the flows (EINVAL) before this object.
			return errs.New(op, cs.c.Device().Name, os.ErrClosed)
		}
		return errs.New(op, cs.c.Device().Name, cs.explainRead(err, len(values)))
	}
	return nil
}

// lockForRead is the start of Read's locked path: the context held, the
// object's lock shared and a Call of the path's own, unless the context
// or the object is gone (os.ErrClosed, nothing held). unlockRead ends it.
func (cs *Object) lockForRead(op string) (*verbs.Call, error) {
	core, own := cs.b.Core, cs.b.Own
	if !core.TryHold() {
		return nil, errs.New(op, cs.c.Device().Name, os.ErrClosed)
	}
	own.RLock()
	if own.Destroyed() {
		own.RUnlock()
		core.Release()
		return nil, errs.New(op, cs.c.Device().Name, os.ErrClosed)
	}
	return new(verbs.Call), nil
}

func (cs *Object) unlockRead() {
	cs.b.Own.RUnlock()
	cs.b.Core.Release()
}

// explainRead says which of the kernel's EINVAL rules a failed read most
// likely met.
func (cs *Object) explainRead(err error, n int) error {
	if !errors.Is(err, syscall.EINVAL) {
		return err
	}
	points, flows := cs.b.State()
	need := 0
	for _, p := range points {
		need = max(need, int(p.Index)+1)
	}
	switch {
	case n > MaxValues:
		return fmt.Errorf("%d values: a read returns at most %d: %w", n, MaxValues, err)
	case flows == 0:
		return fmt.Errorf("the object is not bound to a flow: it is readable only while a flow counts into it: %w", err)
	case n < need:
		return fmt.Errorf("room for %d values, the counter points need %d (largest index + 1): %w", n, need, err)
	}
	return err
}

// Close destroys the object, like ibv_destroy_counters
// (UVERBS_METHOD_COUNTERS_DESTROY). Closing a closed object, or one whose
// context was closed, returns nil.
//
// Errors: an *Error wrapping EBUSY while flows count into the object (the
// kernel refuses; destroy the flows first, the object stays usable); the
// kernel's errno otherwise. A removed device (EIO) counts as success.
func (cs *Object) Close() error {
	if cs == nil {
		return errs.New("destroy counters", "", errArg("nil counters"))
	}
	return cs.b.Own.Close()
}

// destroy runs UVERBS_METHOD_COUNTERS_DESTROY; b.Own's lock is held.
func (cs *Object) destroy(invoke verbs.Invoker) error {
	c := cs.c
	// No read may hold a Call while the handle is destroyed (Read's fast
	// path holds nothing else); those that come meanwhile take the
	// object's lock, which the caller holds exclusively, and wait.
	cs.calls.Drain()
	r := cs.b.Core.NewRequest(abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_DESTROY).
		Handle(abi.UVERBS_ATTR_DESTROY_COUNTERS_HANDLE, cs.b.Handle)
	if err := invoke(r); err != nil && !errors.Is(err, syscall.EIO) {
		// The object stays: reads take the fast path again, unless the
		// context is closing, whose descriptor is closed next.
		if !cs.b.Core.Closing() {
			cs.calls.Reopen()
		}
		err = errnoOf(err)
		if errors.Is(err, syscall.EBUSY) {
			if _, flows := cs.b.State(); flows > 0 {
				err = fmt.Errorf("the counters object still counts %d flow(s); destroy them first: %w", flows, err)
			} else {
				err = fmt.Errorf("the counters object is still bound to a flow; destroy the flow first: %w", err)
			}
		}
		return errs.New("destroy counters", c.Device().Name, err)
	}
	return nil
}

// errnoOf takes the kernel's answer out of a uverbs error.
func errnoOf(err error) error {
	var ue *uverbs.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
