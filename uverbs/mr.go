package uverbs

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/verbs"
)

// MR is a registered memory region (struct ibv_mr): memory the device may
// read and write without the CPU, named by its local key (in SGEs) and its
// remote key (in a peer's RDMA reads and writes).
type MR struct {
	c      *Context
	pd     *PD
	handle uint32
	lkey   uint32
	rkey   uint32
	access AccessFlags
	buf    []byte
	owned  bool       // buf was mapped by AllocMR and is unmapped by Close
	bufRef sys.MapRef // the context's MapSet's name for it, when owned
	seqV   uint64

	lifecycle
}

// AllocMR maps length bytes (rounded up to whole pages) of zeroed memory
// outside the Go heap and registers them with access, like mmap followed by
// ibv_reg_mr: write command REG_MR through INVOKE_WRITE with hca_va = the
// address (neither 6.1 nor 6.12 has an ioctl REG_MR method for plain
// memory). The MR owns the memory: Close deregisters it, then unmaps it.
//
// Remote write or remote atomic access needs AccessLocalWrite as well
// (the kernel answers EINVAL otherwise: ib_check_mr_access).
//
// Errors: an *Error wrapping EINVAL for a length below 1 or a missing
// AccessLocalWrite (checked first), ENOMEM from mmap, or the kernel's
// errno; os.ErrClosed after Close. The kernel pins the memory and refuses
// (ENOMEM) past the process's RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK;
// the message then names the limit and how to raise it (ulimit -l).
func (pd *PD) AllocMR(length int, access AccessFlags) (*MR, error) {
	const op = "reg mr"
	if pd == nil {
		return nil, errs.New(op, "", errNil)
	}
	c := pd.c
	if err := c.enter(op); err != nil {
		return nil, err
	}
	defer c.leave()
	if length < 1 || length > 1<<40 {
		return nil, c.err(op, errArg("%d bytes: want 1 to %d", length, 1<<40))
	}
	if err := checkAccess(access); err != nil {
		return nil, c.err(op, err)
	}
	size := (length + sys.PageSize - 1) &^ (sys.PageSize - 1)
	buf, ref, err := c.maps.Anon(size)
	if err != nil {
		return nil, c.err(op, fmt.Errorf("map %d bytes: %w", size, err))
	}
	mr, err := pd.regLocked(op, buf, access)
	if err != nil {
		c.maps.Unmap(buf, ref)
		return nil, err
	}
	mr.owned, mr.bufRef = true, ref
	return mr, nil
}

// RegMR registers buf, memory the library mapped (a part of an MR's Buf,
// or of memory AllocMR made for another MR), with access, like
// ibv_reg_mr. The new MR does not own buf: keep the memory mapped until
// this MR is closed.
//
// Go heap memory (make, new, append, a composite literal) is refused: the
// collector may move the contents of a goroutine stack, reuse freed heap
// memory or return it to the system while the device still reads or writes
// it, so nothing outside memory the library mapped can be registered.
//
// Errors: an *Error wrapping EINVAL for an empty buf, memory the library
// did not map (the message says why) or a missing AccessLocalWrite; the
// kernel's errno otherwise (ENOMEM past RLIMIT_MEMLOCK, as for AllocMR);
// os.ErrClosed after Close.
func (pd *PD) RegMR(buf []byte, access AccessFlags) (*MR, error) {
	const op = "reg mr"
	if pd == nil {
		return nil, errs.New(op, "", errNil)
	}
	c := pd.c
	if err := c.enter(op); err != nil {
		return nil, err
	}
	defer c.leave()
	if len(buf) == 0 {
		return nil, c.err(op, errArg("empty buffer"))
	}
	if !sys.IsMapped(buf) {
		return nil, c.err(op, errArg("%d bytes at %#x are not memory purerdma mapped: Go heap or stack memory "+
			"cannot be registered (the runtime may move, reuse or release it while the device uses it); "+
			"allocate registered memory with PD.AllocMR", len(buf), addrOf(buf)))
	}
	if err := checkAccess(access); err != nil {
		return nil, c.err(op, err)
	}
	return pd.regLocked(op, buf, access)
}

// checkAccess is ib_check_mr_access's rule, checked before the call.
func checkAccess(a AccessFlags) error {
	if a&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && a&AccessLocalWrite == 0 {
		return errArg("access %#x: remote write and remote atomic need local write", uint32(a))
	}
	return nil
}

// regLocked runs REG_MR; the caller holds the context.
func (pd *PD) regLocked(op string, buf []byte, access AccessFlags) (*MR, error) {
	c := pd.c
	if err := pd.alive(c, op); err != nil {
		return nil, err
	}
	// The command, its response and the ioctl are written in place in a
	// scratch, as AllocPD's.
	s := c.scr.get()
	resp, req := &s.mrResp, &s.mrReq
	*resp = abi.IbUverbsRegMrResp{}
	a := addrOf(buf)
	*req = abi.IbUverbsRegMr{Response: addrOf(bytesOf(resp)), Start: a, Length: uint64(len(buf)),
		HcaVa: a, PdHandle: pd.handle, AccessFlags: uint32(access)}
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE)
	k.Inline(abi.UVERBS_ATTR_WRITE_CMD, 8, abi.IB_USER_VERBS_CMD_REG_MR)
	k.InHeld(abi.UVERBS_ATTR_CORE_IN, bytesOf(req))
	k.OutHeld(abi.UVERBS_ATTR_CORE_OUT, bytesOf(resp))
	err := c.core.DoCall(k)
	r := *resp
	c.scr.put(s)
	if err != nil {
		return nil, c.err(op, memlockHint(err, pinnedBytes(buf)))
	}
	pinned.Add(pinnedBytes(buf))
	mr := &MR{c: c, pd: pd, handle: r.MrHandle, lkey: r.Lkey, rkey: r.Rkey, access: access, buf: buf}
	mr.seqV = c.core.NextSeq()
	c.track(mr, 0)
	return mr, nil
}

// Handle returns the kernel's handle of the MR.
func (mr *MR) Handle() uint32 {
	if mr == nil {
		return 0
	}
	return mr.handle
}

// LKey returns the local key, for the SGEs of work requests on this
// context (ibv_mr.lkey).
func (mr *MR) LKey() uint32 {
	if mr == nil {
		return 0
	}
	return mr.lkey
}

// RKey returns the remote key a peer names the memory by in RDMA reads
// and writes (ibv_mr.rkey). Without remote access it means nothing: rxe
// gives 0 on Linux 6.1 and the lkey on 6.12.
func (mr *MR) RKey() uint32 {
	if mr == nil {
		return 0
	}
	return mr.rkey
}

// Access returns the access flags the MR was registered with.
func (mr *MR) Access() AccessFlags {
	if mr == nil {
		return 0
	}
	return mr.access
}

// Buf returns the registered memory, or nil once the MR was closed (by its
// Close or its Context's): AllocMR's memory is then unmapped, and a write
// through a slice kept from before is a fault the program cannot recover
// from, so do not keep the slice past Close.
func (mr *MR) Buf() []byte {
	if mr == nil {
		return nil
	}
	mr.mu.RLock()
	defer mr.mu.RUnlock()
	if mr.destroyed.Load() {
		return nil
	}
	return mr.buf
}

// Addr returns the address of the memory: the address SGEs and a peer's
// RDMA requests use (ibv_mr.addr; hca_va is the address itself).
func (mr *MR) Addr() uint64 {
	if mr == nil {
		return 0
	}
	return addrOf(mr.buf)
}

// Len returns the length of the memory in bytes.
func (mr *MR) Len() int {
	if mr == nil {
		return 0
	}
	return len(mr.buf)
}

// SGE returns the scatter/gather entry for off:off+n of the memory, or
// false when that range is outside it.
func (mr *MR) SGE(off, n int) (SGE, bool) {
	if mr == nil || off < 0 || n < 0 || off > len(mr.buf) || n > len(mr.buf)-off || n > 1<<31 {
		return SGE{}, false
	}
	return SGE{Addr: addrOf(mr.buf) + uint64(off), Length: uint32(n), LKey: mr.lkey}, true
}

func (mr *MR) stage() verbs.Stage { return verbs.StageMR }
func (mr *MR) seq() uint64        { return mr.seqV }

// Close deregisters the MR, like ibv_dereg_mr (UVERBS_METHOD_MR_DESTROY),
// then unmaps the memory when AllocMR mapped it. Closing a closed MR, or
// one whose Context was closed, returns nil.
//
// Errors: an *Error wrapping the kernel's errno (EBUSY while a memory
// window is bound to it); the MR then stays registered.
func (mr *MR) Close() error {
	if mr == nil {
		return errs.New("dereg mr", "", errNil)
	}
	return closeObject(mr.c, "dereg mr", mr)
}

func (mr *MR) destroyLocked(closing bool) error {
	c := mr.c
	if !mr.destroyBegin() {
		return nil
	}
	s := c.scr.get()
	k := &s.call
	k.Start(c.drv, abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_MR_DESTROY)
	k.Handle(abi.UVERBS_ATTR_DESTROY_MR_HANDLE, mr.handle)
	err := c.core.DoCall(k)
	c.scr.put(s)
	if !mr.destroyEnd(err, closing) {
		return c.err("dereg mr", err)
	}
	// Only now may the memory go: the device no longer knows it.
	pinned.Add(-pinnedBytes(mr.buf))
	if mr.owned {
		c.maps.Unmap(mr.buf, mr.bufRef)
	}
	c.untrack(mr, 0)
	mr.destroyDone()
	if err != nil { // off the hot path: keptErr is a call
		return keptErr(c, "dereg mr", err)
	}
	return nil
}

// pinned counts the bytes (whole pages) the live MRs of this process pin:
// what the kernel counts in the process's pinned_vm for them.
var pinned atomic.Int64

// pinnedBytes is how much memory registering b pins: the whole pages it
// touches.
func pinnedBytes(b []byte) int64 {
	a := addrOf(b)
	page := uint64(sys.PageSize)
	return int64((a+uint64(len(b))+page-1)&^(page-1) - a&^(page-1))
}

// memlockHint explains a registration of n bytes that failed with ENOMEM
// or EPERM when RLIMIT_MEMLOCK is what it crossed: ib_umem_get refuses to
// pin more than the limit for a process without CAP_IPC_LOCK (ENOMEM;
// older kernels and some drivers answer EPERM). Other errors, and those
// the limit does not explain, are returned as they are.
func memlockHint(err error, n int64) error {
	if !errors.Is(err, syscall.ENOMEM) && !errors.Is(err, syscall.EPERM) {
		return err
	}
	limit, ok := sys.MemlockLimit()
	if !ok {
		return err
	}
	held := pinned.Load()
	if uint64(held+n) <= limit {
		return err
	}
	return fmt.Errorf("pinning %d bytes more (%d already pinned by this process's MRs) exceeds RLIMIT_MEMLOCK, %d bytes: "+
		"raise it (ulimit -l, LimitMEMLOCK= in a systemd unit, memlock in /etc/security/limits.conf) or run with CAP_IPC_LOCK: %w",
		n, held, limit, err)
}
