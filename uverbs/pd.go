package uverbs

import (
	"os"
	"unsafe"

	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/verbs"

	"github.com/purerdma/rdma/abi"
)

// PD is a protection domain (struct ibv_pd).
type PD struct {
	c      *Context
	handle uint32
	seqV   uint64

	lifecycle
}

// AllocPD allocates a protection domain, like ibv_alloc_pd: write command
// ALLOC_PD through INVOKE_WRITE (there is no ioctl method), with the
// provider's driver data (mlx5 always gets its 4-byte output buffer).
//
// Errors: an *Error wrapping the errno (EIO once the device was removed),
// or os.ErrClosed after Close.
func (c *Context) AllocPD() (*PD, error) {
	pd := new(PD)
	if err := c.allocPD(pd); err != nil {
		return nil, err
	}
	return pd, nil
}

// AllocPDInto is AllocPD into a PD the caller provides, for programs that
// allocate and deallocate protection domains at a high rate: pd, a zero PD
// or one that was closed (by its Close or its Context's), becomes the new
// PD, and the call allocates nothing. Pointers kept to pd from its earlier
// life then refer to the new PD; do not use pd from other goroutines
// while the call runs.
//
// Errors: those of AllocPD, which leave pd a zero PD; an *Error wrapping
// EBUSY, before any call, when pd is still live.
func (c *Context) AllocPDInto(pd *PD) error {
	const op = "alloc pd"
	if pd == nil || c == nil || c.fd == nil {
		return errs.New(op, "", errNil)
	}
	if pd.c != nil && !pd.isDestroyed() {
		return c.err(op, errLive("PD"))
	}
	*pd = PD{}
	err := c.allocPD(pd)
	if err != nil {
		*pd = PD{}
	}
	return err
}

// allocPD allocates the PD into pd, a zero PD.
func (c *Context) allocPD(pd *PD) error {
	if err := c.enter("alloc pd"); err != nil {
		return err
	}
	var err error
	var handle uint32
	if c.pdBare {
		// No driver data (rxe): the request is written in place
		// (verbs.Call), the scratch holding the response. The command,
		// struct ib_uverbs_alloc_pd, is its response field alone (which
		// INVOKE_WRITE ignores; rdma-core fills it too), 8 bytes the
		// attribute carries inline.
		s := c.scr.get()
		resp := &s.pdResp
		*resp = abi.IbUverbsAllocPdResp{}
		k := &s.call
		k.Start(c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE)
		k.Inline(abi.UVERBS_ATTR_WRITE_CMD, 8, abi.IB_USER_VERBS_CMD_ALLOC_PD)
		k.Inline(abi.UVERBS_ATTR_CORE_IN, uint16(unsafe.Sizeof(abi.IbUverbsAllocPd{})), addrOf(bytesOf(resp)))
		k.OutHeld(abi.UVERBS_ATTR_CORE_OUT, bytesOf(resp))
		err = c.core.DoCall(k)
		handle = resp.PdHandle
		c.scr.put(s)
	} else {
		in, out := c.prov.pdData()
		s := c.getScratch(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE)
		resp, req := &s.pdResp, &s.pdReq
		*resp = abi.IbUverbsAllocPdResp{}
		req.Response = addrOf(bytesOf(resp))
		err = c.do(invokeWriteInto(&s.r, abi.IB_USER_VERBS_CMD_ALLOC_PD, bytesOf(req), bytesOf(resp), in, out))
		handle = resp.PdHandle
		c.putScratch(s)
	}
	if err != nil {
		c.leave()
		return c.err("alloc pd", err)
	}
	pd.c, pd.handle = c, handle
	pd.seqV = c.core.NextSeq()
	c.track(pd, 0)
	c.leave()
	return nil
}

// Handle returns the kernel's handle of the PD.
func (pd *PD) Handle() uint32 {
	if pd == nil {
		return 0
	}
	return pd.handle
}

// Context returns the context the PD belongs to.
func (pd *PD) Context() *Context {
	if pd == nil {
		return nil
	}
	return pd.c
}

func (pd *PD) stage() verbs.Stage { return verbs.StagePD }
func (pd *PD) seq() uint64        { return pd.seqV }

// Close deallocates the PD, like ibv_dealloc_pd (UVERBS_METHOD_PD_DESTROY).
// Closing a closed PD, or one whose Context was closed, returns nil.
//
// Errors: an *Error wrapping EBUSY while QPs (or other objects) still use
// the PD; the PD then stays usable.
func (pd *PD) Close() error {
	if pd == nil {
		return errs.New("dealloc pd", "", errNil)
	}
	return closeObject(pd.c, "dealloc pd", pd)
}

// destroyLocked makes its request in line, as MR's does: a function
// shared by the two, a call the compiler does not inline, cost each
// destroy 25 user instructions (make bench-insn).
func (pd *PD) destroyLocked(closing bool) error {
	c := pd.c
	if !pd.destroyBegin() {
		return nil
	}
	s := c.scr.get()
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_PD, abi.UVERBS_METHOD_PD_DESTROY)
	k.Handle(abi.UVERBS_ATTR_DESTROY_PD_HANDLE, pd.handle)
	err := c.core.DoCall(k)
	c.scr.put(s)
	if !pd.destroyEnd(err, closing) {
		return c.err("dealloc pd", err)
	}
	c.untrack(pd, 0)
	pd.destroyDone()
	if err != nil { // off the hot path: keptErr is a call
		return keptErr(c, "dealloc pd", err)
	}
	return nil
}

// alive checks the PD for use by a create call (the caller holds the
// context's life lock).
func (pd *PD) alive(c *Context, op string) error {
	if pd.c != c {
		return c.err(op, errArg("the PD belongs to another context"))
	}
	if pd.isDestroyed() {
		return c.err(op, os.ErrClosed)
	}
	return nil
}
