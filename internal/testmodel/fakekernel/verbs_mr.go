package fakekernel

import (
	"encoding/binary"
	"syscall"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

type mrVal struct {
	pd          *Object
	start, size uint64
	access      uint32
	pinned      uint64 // bytes of the whole pages start:start+size covers
}

func init() {
	writeCmds[abi.IB_USER_VERBS_CMD_REG_MR] = writeCmd{"REG_MR", 40, 12, (*Verbs).wRegMR}
	objectHandlers[abi.UVERBS_OBJECT_MR] = func(v *Verbs, c *Call) error {
		if c.Header.MethodID != abi.UVERBS_METHOD_MR_DESTROY {
			return ErrNoHandler
		}
		o := c.Object(abi.UVERBS_ATTR_DESTROY_MR_HANDLE)
		mv := o.Value.(*mrVal)
		mv.pd.Users--
		v.mu.Lock()
		v.pinned[c.File] -= mv.pinned
		v.mu.Unlock()
		v.logf("dereg mr %d", o.Handle)
		return nil
	}
}

// wRegMR is ib_uverbs_reg_mr: the PD must exist (ENOENT, EINVAL for
// another type), start and hca_va must agree in their offset within a
// page (EINVAL), a length of 0 is EINVAL, and ib_check_mr_access refuses
// remote write or atomic without local write (EINVAL). The keys follow
// rxe: lkey = index << 8 | key byte, the rkey the lkey with remote access
// and 0 without (6.1's rxe_mr_init_user).
func (v *Verbs) wRegMR(c *Call, in []byte) error {
	req, err := request(in, 40)
	if err != nil {
		return err
	}
	r := fromBytes[abi.IbUverbsRegMr](req)
	pd, err := c.lookup(abi.UVERBS_OBJECT_PD, r.PdHandle)
	if err != nil {
		return err
	}
	if r.Length == 0 || (r.Start^r.HcaVa)&4095 != 0 {
		return syscall.EINVAL
	}
	const remote = abi.IB_UVERBS_ACCESS_REMOTE_WRITE | abi.IB_UVERBS_ACCESS_REMOTE_ATOMIC
	if r.AccessFlags&remote != 0 && r.AccessFlags&abi.IB_UVERBS_ACCESS_LOCAL_WRITE == 0 {
		return syscall.EINVAL
	}
	// ib_umem_get pins the pages and counts them in the process's
	// pinned_vm, which must stay within RLIMIT_MEMLOCK.
	const page = 4096
	pinned := (r.Start+r.Length+page-1)&^(page-1) - r.Start&^(page-1)
	v.mu.Lock()
	total := pinned
	for _, n := range v.pinned {
		total += n
	}
	v.mu.Unlock()
	if limit, ok := sys.MemlockLimit(); v.Memlock && ok && total > limit&^(page-1) {
		return syscall.ENOMEM
	}
	o, err := c.create(abi.UVERBS_OBJECT_MR, false)
	if err != nil {
		return err
	}
	pd.Users++
	o.Value = &mrVal{pd: pd, start: r.Start, size: r.Length, access: r.AccessFlags, pinned: pinned}
	v.mu.Lock()
	if v.pinned == nil {
		v.pinned = map[*File]uint64{}
	}
	v.pinned[c.File] += pinned
	v.mu.Unlock()
	lkey := o.Handle<<8 | 0x42
	rkey := uint32(0)
	if r.AccessFlags&(remote|abi.IB_UVERBS_ACCESS_REMOTE_READ) != 0 {
		rkey = lkey
	}
	v.logf("reg mr %d", o.Handle)
	resp := binary.LittleEndian.AppendUint32(nil, o.Handle)
	resp = binary.LittleEndian.AppendUint32(resp, lkey)
	resp = binary.LittleEndian.AppendUint32(resp, rkey)
	return response(c, resp)
}

// postSendDoorbell is the write() of IB_USER_VERBS_CMD_POST_SEND with no
// work requests that rxe's userspace rings (ib_uverbs_post_send): the
// command header must say 8 + 24 bytes in and 4 out, wqe_size must be at
// least sizeof(struct ib_uverbs_send_wr) (56: the rule of newer kernels),
// and the QP handle must exist. It counts the doorbells (Doorbells) and
// changes nothing else: the test reads the send queue itself.
func (f *File) postSendDoorbell(p []byte) (int, error) {
	if len(p) != 32 || binary.LittleEndian.Uint16(p[4:]) != 8 || binary.LittleEndian.Uint16(p[6:]) != 1 {
		return 0, syscall.EINVAL
	}
	req := fromBytes[abi.IbUverbsPostSend](p[8:])
	if req.WrCount != 0 || req.SgeCount != 0 || req.WqeSize < 56 {
		return 0, syscall.EINVAL
	}
	f.mu.Lock()
	o, ok := f.objects[req.QpHandle]
	f.mu.Unlock()
	if !ok || o.Type != abi.UVERBS_OBJECT_QP {
		return 0, syscall.EINVAL
	}
	f.k.doorbells.Add(1)
	return len(p), nil
}

// Doorbells returns how many POST_SEND doorbells the device was rung.
func (k *Kernel) Doorbells() int64 { return k.doorbells.Load() }

func init() {
	writeCmds[abi.IB_USER_VERBS_CMD_CREATE_AH] = writeCmd{"CREATE_AH", 56, 4, (*Verbs).wCreateAH}
	objectHandlers[abi.UVERBS_OBJECT_AH] = func(v *Verbs, c *Call) error {
		if c.Header.MethodID != abi.UVERBS_METHOD_AH_DESTROY {
			return ErrNoHandler
		}
		o := c.Object(abi.UVERBS_ATTR_DESTROY_AH_HANDLE)
		o.Value.(*Object).Users--
		v.logf("destroy ah %d", o.Handle)
		return nil
	}
}

// wCreateAH is ib_uverbs_create_ah with rxe's rules (rxe_create_ah,
// rxe_av_chk_attr): the PD must exist, the port must exist, a RoCE port
// needs the GRH (EINVAL); the driver output, when there is room for
// struct rxe_create_ah_resp, gets the ah_num.
func (v *Verbs) wCreateAH(c *Call, in []byte) error {
	req, err := request(in, 56)
	if err != nil {
		return err
	}
	r := fromBytes[abi.IbUverbsCreateAh](req)
	pd, err := c.lookup(abi.UVERBS_OBJECT_PD, r.PdHandle)
	if err != nil {
		return err
	}
	if v.port(uint64(r.Attr.PortNum)) == nil || r.Attr.IsGlobal == 0 {
		return syscall.EINVAL
	}
	o, err := c.create(abi.UVERBS_OBJECT_AH, false)
	if err != nil {
		return err
	}
	pd.Users++
	o.Value = pd
	if v.DriverID == abi.RDMA_DRIVER_RXE && c.OutLen(abi.UVERBS_ATTR_UHW_OUT) >= 8 {
		if err := c.Out(abi.UVERBS_ATTR_UHW_OUT, binary.LittleEndian.AppendUint64(nil, uint64(o.Handle)), false); err != nil {
			return err
		}
	}
	v.logf("create ah %d", o.Handle)
	return response(c, binary.LittleEndian.AppendUint32(nil, o.Handle))
}
