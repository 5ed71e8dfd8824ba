// Package ucontext is the plumbing of a uverbs Context that the packages
// adding objects to it (counters, flow) need and a user never calls:
// holding the context across several requests, running requests on it,
// the destroy-once lifecycle of an object it owns, the teardown order, and
// opening a device through a test backend. Package uverbs implements it
// and fills in the functions below when it is initialised; they take the
// *uverbs.Context (or *uverbs.Options) as ctx, which this package cannot
// name without an import cycle.
//
// It corresponds to what libibverbs keeps between its core and its
// providers (struct verbs_context, execute_ioctl, the ibv_cmd_* helpers),
// which applications do not see either.
package ucontext

import (
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// Stage orders what a Context's Close destroys: lower stages first. The
// stages keep the kernel's dependency order (uverbs_destroy_ufile_hw
// destroys in the same order: flows, counters, QPs, CQs, AHs, MRs, PDs).
type Stage int

// The teardown stages, in the order Close runs them.
const (
	StageFlow     Stage = 10
	StageCounters Stage = 20
	StageQP       Stage = 30
	StageCQ       Stage = 40
	StageAH       Stage = 44
	StageMR       Stage = 45
	StagePD       Stage = 50
	StageChannel  Stage = 60
)

// Invoker runs a request on a context whose caller holds it.
type Invoker func(r *abi.Request) error

// Owned is the destroy-once lifecycle of an object created on a context
// (a counters object, a flow): the owner's Close and the context's Close
// both end in at most one successful destroy, whichever comes first, in
// the stage order. Its lock serializes the owner's other operations with
// destruction; take it after Hold, as Close does. A nil *Owned (an owner's
// zero value, never created) has no lock and counts as destroyed.
type Owned struct{ impl Lifecycle }

// Lifecycle is what package uverbs implements behind an Owned.
type Lifecycle interface {
	Close() error
	Destroyed() bool
	Lock()
	Unlock()
}

// NewOwned wraps the implementation package uverbs made.
func NewOwned(l Lifecycle) *Owned { return &Owned{impl: l} }

// Close destroys the object unless it already was; the error is
// destroy's, and the object then stays registered.
func (o *Owned) Close() error {
	if o == nil || o.impl == nil {
		return nil
	}
	return o.impl.Close()
}

// Destroyed reports whether the object was destroyed; the caller holds
// the lock.
func (o *Owned) Destroyed() bool { return o == nil || o.impl == nil || o.impl.Destroyed() }

// Lock locks the object against destruction and the owner's other
// operations.
func (o *Owned) Lock() {
	if o != nil && o.impl != nil {
		o.impl.Lock()
	}
}

// Unlock unlocks what Lock locked.
func (o *Owned) Unlock() {
	if o != nil && o.impl != nil {
		o.impl.Unlock()
	}
}

// The context's operations, filled in by package uverbs. ctx is a
// *uverbs.Context; a nil or closed one makes them fail (or do nothing).
var (
	// Hold keeps the context open until Release: Close waits for it.
	// Every successful Hold is followed by exactly one Release.
	Hold func(ctx any, op string) error
	// Release ends a Hold.
	Release func(ctx any)
	// Invoke runs a request built for the context's device.
	Invoke func(ctx any, r *abi.Request) error
	// InvokeHeld runs a request for a caller that holds the context.
	InvokeHeld func(ctx any, r *abi.Request) error
	// Own registers an object created on the context: destroy runs,
	// with the object's lock held, when Owned.Close is called or when the
	// context closes (at stage), whichever comes first. op names the
	// destruction in errors ("destroy counters").
	Own func(ctx any, stage Stage, op string, destroy func(invoke Invoker) error) *Owned
	// OnClose registers destroy to run when the context closes, at stage;
	// cancel unregisters it.
	OnClose func(ctx any, stage Stage, destroy func(invoke Invoker) error) (cancel func())
	// API returns the method table of the context's device.
	API func(ctx any) *abi.API
	// WithOpener returns a copy of base (a *uverbs.Options, nil for the
	// defaults) whose device files are opened by open instead of open(2):
	// the seam where unit tests put a fake kernel behind the device node.
	WithOpener func(base any, open func(path string) (*sys.FD, error)) any
)
