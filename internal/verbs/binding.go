package verbs

import (
	"os"
	"sync"

	"github.com/purerdma/rdma/abi"
)

// Binding is a counters object as flow's count action binds it: the
// protocol of rdma-core's providers/mlx5/verbs.c (mlx5_create_flow,
// get_flow_mcounters, mlx5_destroy_flow; mlx5_attach_counters_point_flow).
// The binding state (Lock) is held from BeginBind to EndBind, across the
// EX_CREATE_FLOW call, with the object's lock (Own) held shared: binds
// take turns, the object cannot be destroyed meanwhile, and reads of it,
// which hold Own shared as well, go on. The first flow bound to the object
// sends the (description, index) pairs, later ones send none; the count
// of bound flows drops when they are destroyed, and at zero the next bind
// sends the pairs again. Package counters keeps one in each
// counters.Object and hands it to flow through counters.Object.Binding.
type Binding struct {
	// Core is the core of the context the object was created on.
	Core *Core
	// Handle is the kernel's handle of the object.
	Handle uint32
	// Own is the object's lifecycle.
	Own *Owned

	// mu guards points and flows. Lock order: Own's lock (shared or
	// exclusive), then mu; holders of mu alone take no other lock.
	mu sync.Mutex
	// points are the attached counter points, in attach order.
	points []abi.Mlx5IbFlowCountersDesc
	// flows counts the live flows bound to the object (rdma-core's
	// refcount).
	flows int
}

// State returns a copy of the attached counter points, in attach order,
// and the number of live flows bound to the object.
func (b *Binding) State() (points []abi.Mlx5IbFlowCountersDesc, flows int) {
	if b == nil {
		return nil, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]abi.Mlx5IbFlowCountersDesc(nil), b.points...), b.flows
}

// AddPoint attaches a counter point (ibv_attach_counters_point_flow's
// static attach). It adds nothing to an object bound to a flow: then it
// returns the number of bound flows.
//
// Errors: os.ErrClosed for a destroyed object.
func (b *Binding) AddPoint(p abi.Mlx5IbFlowCountersDesc) (bound int, err error) {
	if b == nil {
		return 0, errArg("nil counters binding")
	}
	b.Own.RLock()
	defer b.Own.RUnlock()
	if b.Own.Destroyed() {
		return 0, os.ErrClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.flows > 0 {
		return b.flows, nil
	}
	b.points = append(b.points, p)
	return 0, nil
}

// BeginBind holds the object for a flow being created and returns the
// pairs to send: nil when a live flow already bound the object (the kernel
// keeps its description). The caller holds the context (Core.Hold); after
// a nil error it calls EndBind.
//
// Errors: os.ErrClosed for a destroyed object, EINVAL when no counter
// point was attached.
func (b *Binding) BeginBind() ([]abi.Mlx5IbFlowCountersDesc, error) {
	if b == nil {
		return nil, errArg("nil counters binding")
	}
	b.Own.RLock()
	if b.Own.Destroyed() {
		b.Own.RUnlock()
		return nil, os.ErrClosed
	}
	b.mu.Lock()
	if b.flows > 0 {
		return nil, nil // described: the kernel reuses the layout
	}
	if len(b.points) == 0 {
		b.mu.Unlock()
		b.Own.RUnlock()
		return nil, errArg("the counters object has no counter point: Attach before creating the flow")
	}
	// rdma-core keeps the points on a list it pushes at the front, and
	// sends them in list order: the newest first.
	pairs := make([]abi.Mlx5IbFlowCountersDesc, len(b.points))
	for i, p := range b.points {
		pairs[len(pairs)-1-i] = p
	}
	return pairs, nil
}

// EndBind ends what BeginBind began; ok says the flow was created, which
// makes it count one more bound flow.
func (b *Binding) EndBind(ok bool) {
	if b == nil || b.Own == nil {
		return // BeginBind failed on it: nothing began
	}
	if ok {
		b.flows++
	}
	b.mu.Unlock()
	b.Own.RUnlock()
}

// Unbind records that a flow bound to the object was destroyed.
func (b *Binding) Unbind() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.flows > 0 {
		b.flows--
	}
	b.mu.Unlock()
}
