// Package countbind connects package flow's count action to package
// counters' binding state, without making the binding protocol part of
// either package's exported API. Package counters sets Of in its init
// function; package flow imports counters, so Of is set whenever flow
// runs.
//
// The protocol is rdma-core's (providers/mlx5/verbs.c: mlx5_create_flow,
// get_flow_mcounters, mlx5_destroy_flow; mlx5 fs.c, mlx5_ib_flow_counters_set_data; uverbs_std_types_counters.c): the
// counters object's lock is held from BeginBind to EndBind, across the
// EX_CREATE_FLOW call; the first flow bound to the object sends the
// (description, index) pairs, later ones send none; the count of bound
// flows drops when they are destroyed, and at zero the next bind sends the
// pairs again.
package countbind

import (
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/uverbs"
)

// Binder is one counters object as package flow binds it.
type Binder interface {
	// Context returns the context the object was created on.
	Context() *uverbs.Context
	// BeginBind locks the object for a flow being created and returns
	// its handle and the pairs to send: nil when a live flow already
	// bound the object (the kernel keeps its description). The caller
	// holds the context (uverbs.Context.Hold). Errors: os.ErrClosed for
	// a destroyed object, EINVAL when no counter point was attached.
	BeginBind() (handle uint32, pairs []abi.Mlx5IbFlowCountersDesc, err error)
	// EndBind unlocks the object; ok says the flow was created, which
	// makes it count one more bound flow.
	EndBind(ok bool)
	// Unbind records that a flow bound to the object was destroyed.
	Unbind()
}

// Of returns the Binder of a *counters.Counters (nil for nil).
var Of func(counters any) Binder
