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

	// mu guards Points and Flows. Lock order: Own's lock (shared or
	// exclusive), then mu; holders of mu alone take no other lock.
	mu sync.Mutex
	// Points are the attached counter points, in attach order.
	Points []abi.Mlx5IbFlowCountersDesc
	// Flows counts the live flows bound to the object (rdma-core's
	// refcount).
	Flows int
}

// Lock locks the binding state (Points and Flows). A caller that holds
// the object's lock (Own) takes it after that one.
func (b *Binding) Lock() {
	if b != nil {
		b.mu.Lock()
	}
}

// Unlock unlocks what Lock locked.
func (b *Binding) Unlock() {
	if b != nil {
		b.mu.Unlock()
	}
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
	if b.Flows > 0 {
		return nil, nil // described: the kernel reuses the layout
	}
	if len(b.Points) == 0 {
		b.mu.Unlock()
		b.Own.RUnlock()
		return nil, errArg("the counters object has no counter point: Attach before creating the flow")
	}
	// rdma-core keeps the points on a list it pushes at the front, and
	// sends them in list order: the newest first.
	pairs := make([]abi.Mlx5IbFlowCountersDesc, len(b.Points))
	for i, p := range b.Points {
		pairs[len(pairs)-1-i] = p
	}
	return pairs, nil
}

// EndBind ends what BeginBind began; ok says the flow was created, which
// makes it count one more bound flow.
func (b *Binding) EndBind(ok bool) {
	if b == nil {
		return
	}
	if ok {
		b.Flows++
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
	if b.Flows > 0 {
		b.Flows--
	}
	b.mu.Unlock()
}
