package fakekernel

import (
	"encoding/binary"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// vopen opens a Verbs device; the descriptor closes with the test.
func vopen(t *testing.T, v *Verbs) *sys.FD {
	t.Helper()
	fd := v.Kernel().Open()
	t.Cleanup(func() { fd.Close() })
	return fd
}

func req(v *Verbs, object, method uint16) *abi.Request {
	return abi.NewRequest(nil, v.DriverID, object, method)
}

// ctxRXE opens rxe0 and creates its context.
func ctxRXE(t *testing.T) (*Verbs, *sys.FD) {
	v := RXE("rxe0", 0xacade8fffe375f42, [4]byte{10, 77, 0, 1})
	fd := vopen(t, v)
	if err := do(fd, req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT)); err != nil {
		t.Fatal(err)
	}
	return v, fd
}

func write(v *Verbs, cmd uint32, in, out, din, dout []byte) *abi.Request {
	return abi.InvokeWrite(nil, v.DriverID, cmd, in, out, din, dout)
}

func allocPD(t *testing.T, v *Verbs, fd *sys.FD, dout []byte) uint32 {
	t.Helper()
	out := make([]byte, 4)
	if err := do(fd, write(v, abi.IB_USER_VERBS_CMD_ALLOC_PD, make([]byte, 8), out, nil, dout)); err != nil {
		t.Fatalf("ALLOC_PD: %v", err)
	}
	return binary.LittleEndian.Uint32(out)
}

func cqReq(v *Verbs, cqe uint32, din, dout []byte) (*abi.Request, []byte) {
	resp := make([]byte, 4)
	r := req(v, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE).
		NewHandle(abi.UVERBS_ATTR_CREATE_CQ_HANDLE).
		Out(abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE, resp).
		InU32(abi.UVERBS_ATTR_CREATE_CQ_CQE, cqe).
		InU64(abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 1).
		InU32(abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0)
	if din != nil {
		r.In(abi.UVERBS_ATTR_UHW_IN, din)
	}
	if dout != nil {
		r.Out(abi.UVERBS_ATTR_UHW_OUT, dout)
	}
	return r, resp
}

func qpReq(v *Verbs, pd, cq uint32, typ uint64, capv abi.IbUverbsQpCap, din, dout []byte) *abi.Request {
	r := req(v, abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_CREATE).
		Handle(abi.UVERBS_ATTR_CREATE_QP_PD_HANDLE, pd).
		Handle(abi.UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, cq).
		Handle(abi.UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, cq).
		NewHandle(abi.UVERBS_ATTR_CREATE_QP_HANDLE).
		Const(abi.UVERBS_ATTR_CREATE_QP_TYPE, typ).
		InU64(abi.UVERBS_ATTR_CREATE_QP_USER_HANDLE, 2).
		In(abi.UVERBS_ATTR_CREATE_QP_CAP, structBytes(&capv)).
		Out(abi.UVERBS_ATTR_CREATE_QP_RESP_CAP, make([]byte, 20)).
		Out(abi.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, make([]byte, 4))
	if din != nil {
		r.In(abi.UVERBS_ATTR_UHW_IN, din)
	}
	if dout != nil {
		r.Out(abi.UVERBS_ATTR_UHW_OUT, dout)
	}
	return r
}

func created(t *testing.T, r *abi.Request, id uint16) uint32 {
	t.Helper()
	h, err := r.Created(id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var smallCap = abi.IbUverbsQpCap{MaxSendWr: 8, MaxRecvWr: 8, MaxSendSge: 1, MaxRecvSge: 1}

// Rule (§2.4): methods on the ucontext before GET_CONTEXT → EINVAL; a
// second GET_CONTEXT → EINVAL.
func TestVerbsNeedContext(t *testing.T) {
	v := RXE("rxe0", 1, [4]byte{})
	fd := vopen(t, v)
	wantErrno(t, do(fd, req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT).
		Const(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1).Out(abi.UVERBS_ATTR_QUERY_PORT_RESP, make([]byte, 48))), syscall.EINVAL)
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_CMD_ALLOC_PD, make([]byte, 8), make([]byte, 4), nil, nil)), syscall.EINVAL)
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE|abi.IB_USER_VERBS_CMD_FLAG_EXTENDED, make([]byte, 8), make([]byte, 304), nil, nil)), syscall.EINVAL)
	if err := do(fd, req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT)); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, do(fd, req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT)), syscall.EINVAL)
}

// Rules of INVOKE_WRITE (§1.7): bad command bits EINVAL, past the table
// EOPNOTSUPP, short CORE_IN/CORE_OUT ENOSPC, non-zero bytes past the
// request EOPNOTSUPP, ex comp_mask/reserved EINVAL.
func TestVerbsInvokeWrite(t *testing.T) {
	v, fd := ctxRXE(t)
	wantErrno(t, do(fd, write(v, 0x40000003, make([]byte, 8), make([]byte, 4), nil, nil)), syscall.EINVAL)
	wantErrno(t, do(fd, write(v, 41, make([]byte, 8), nil, nil, nil)), syscall.EOPNOTSUPP)
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|60, make([]byte, 8), nil, nil, nil)), syscall.EOPNOTSUPP)
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_CMD_ALLOC_PD, make([]byte, 4), make([]byte, 4), nil, nil)), syscall.ENOSPC)
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_CMD_ALLOC_PD, make([]byte, 8), nil, nil, nil)), syscall.ENOSPC)
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_CMD_QUERY_DEVICE, make([]byte, 8), make([]byte, 100), nil, nil)), syscall.ENOSPC)
	long := make([]byte, 16)
	long[12] = 1
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_CMD_ALLOC_PD, long, make([]byte, 4), nil, nil)), syscall.EOPNOTSUPP)
	ex := make([]byte, 8)
	ex[0] = 1
	wantErrno(t, do(fd, write(v, abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE|abi.IB_USER_VERBS_CMD_FLAG_EXTENDED, ex, make([]byte, 304), nil, nil)), syscall.EINVAL)
	// A longer response buffer is zero-filled; response_length says how
	// much the kernel wrote.
	out := make([]byte, 320)
	for i := range out {
		out[i] = 0xaa
	}
	if err := do(fd, write(v, abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE|abi.IB_USER_VERBS_CMD_FLAG_EXTENDED, make([]byte, 8), out, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(out[180:]) != 304 || out[319] != 0 || binary.LittleEndian.Uint32(out[40:]) != 0xffffff {
		t.Errorf("response_length %d, tail %#x, vendor %#x", binary.LittleEndian.Uint32(out[180:]), out[319], binary.LittleEndian.Uint32(out[40:]))
	}
}

// Rules of the queries: invalid port EINVAL; GID table entry size 0 or not
// dividing the buffer EINVAL, too small EINVAL; GID entry past the table
// EINVAL, empty ENODATA.
func TestVerbsQueries(t *testing.T) {
	v, fd := ctxRXE(t)
	for _, port := range []uint64{0, 2} {
		wantErrno(t, do(fd, req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT).
			Const(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, port).Out(abi.UVERBS_ATTR_QUERY_PORT_RESP, make([]byte, 48))), syscall.EINVAL)
	}
	gt := func(size uint64, n int) error {
		return do(fd, req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE).
			Const(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, size).
			Out(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, make([]byte, n)).
			Out(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, make([]byte, 8)))
	}
	wantErrno(t, gt(0, 64), syscall.EINVAL)
	wantErrno(t, gt(32, 48), syscall.EINVAL)
	wantErrno(t, gt(32, 32), syscall.EINVAL)
	if err := gt(32, 64); err != nil {
		t.Errorf("two entries: %v", err)
	}
	if err := gt(40, 80); err != nil {
		t.Errorf("larger entries: %v", err)
	}
	ge := func(port, idx uint64) error {
		return do(fd, req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_ENTRY).
			Const(abi.UVERBS_ATTR_QUERY_GID_ENTRY_PORT, port).Const(abi.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, idx).
			Flags(abi.UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0).Out(abi.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, make([]byte, 32)))
	}
	wantErrno(t, ge(2, 0), syscall.EINVAL)
	wantErrno(t, ge(1, 1024), syscall.EINVAL)
	wantErrno(t, ge(1, 2), syscall.ENODATA)
	if err := ge(1, 1); err != nil {
		t.Error(err)
	}
}

// Core QP rules (§2.8) and the QP state machine (ib_modify_qp_is_ok).
func TestVerbsQPRules(t *testing.T) {
	v, fd := ctxRXE(t)
	pd := allocPD(t, v, fd, nil)
	r, _ := cqReq(v, 8, nil, make([]byte, 16))
	if err := do(fd, r); err != nil {
		t.Fatal(err)
	}
	cq := created(t, r, abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	wantErrno(t, do(fd, qpReq(v, pd, cq, 5, smallCap, nil, make([]byte, 32))), syscall.EINVAL)     // unknown type
	wantErrno(t, do(fd, qpReq(v, pd, cq, qptRaw, smallCap, nil, make([]byte, 32))), syscall.EPERM) // no CAP_NET_RAW
	wantErrno(t, do(fd, qpReq(v, pd, cq, qptRC, smallCap, nil, make([]byte, 32)).
		Flags32(abi.UVERBS_ATTR_CREATE_QP_FLAGS, abi.IB_UVERBS_QP_CREATE_SCATTER_FCS)), syscall.EINVAL) // RC with a RAW-only flag
	big := smallCap
	big.MaxSendWr = 1 << 24
	wantErrno(t, do(fd, qpReq(v, pd, cq, qptRC, big, nil, make([]byte, 32))), syscall.EINVAL)
	qr := qpReq(v, pd, cq, qptRC, smallCap, nil, make([]byte, 32))
	if err := do(fd, qr); err != nil {
		t.Fatal(err)
	}
	qp := created(t, qr, abi.UVERBS_ATTR_CREATE_QP_HANDLE)

	modify := func(state uint8, mask uint32, set func(m *abi.IbUverbsModifyQp)) error {
		m := &abi.IbUverbsModifyQp{QpHandle: qp, AttrMask: mask | qpState, QpState: state}
		if set != nil {
			set(m)
		}
		return do(fd, write(v, abi.IB_USER_VERBS_CMD_MODIFY_QP, structBytes(m), nil, nil, nil))
	}
	wantErrno(t, modify(qpsRTR, 0, nil), syscall.EINVAL)                   // RESET→RTR
	wantErrno(t, modify(qpsInit, qpPort|qpPKeyIndex, nil), syscall.EINVAL) // missing ACCESS_FLAGS
	wantErrno(t, modify(qpsInit, qpPort|qpPKeyIndex|qpAccessFlags|qpQKey, nil), syscall.EINVAL)
	wantErrno(t, modify(qpsInit, qpPort|qpPKeyIndex|qpAccessFlags, func(m *abi.IbUverbsModifyQp) { m.PortNum = 2 }), syscall.EINVAL)
	wantErrno(t, modify(7, 0, nil), syscall.EINVAL)
	wantErrno(t, modify(qpsInit, 1<<25, nil), syscall.EOPNOTSUPP)
	if err := modify(qpsInit, qpPort|qpPKeyIndex|qpAccessFlags, func(m *abi.IbUverbsModifyQp) { m.PortNum = 1 }); err != nil {
		t.Fatal(err)
	}
	rtr := uint32(qpAV | qpPathMTU | qpDestQPN | qpRQPSN | qpMaxDestRdAtom | qpMinRNRTimer)
	wantErrno(t, modify(qpsRTR, rtr, func(m *abi.IbUverbsModifyQp) { m.Dest.PortNum = 1; m.PathMtu = 3 }), syscall.EINVAL) // RoCE without GRH
	wantErrno(t, modify(qpsRTR, rtr, func(m *abi.IbUverbsModifyQp) {
		m.Dest.PortNum, m.Dest.IsGlobal, m.Dest.SgidIndex, m.PathMtu = 1, 1, 9, 3
	}), syscall.ENODATA)
	wantErrno(t, modify(qpsRTR, rtr, func(m *abi.IbUverbsModifyQp) { m.Dest.PortNum, m.Dest.IsGlobal, m.PathMtu = 1, 1, 6 }), syscall.EINVAL)
	if err := modify(qpsRTR, rtr, func(m *abi.IbUverbsModifyQp) { m.Dest.PortNum, m.Dest.IsGlobal, m.PathMtu = 1, 1, 3 }); err != nil {
		t.Fatal(err)
	}
	rts := uint32(qpTimeout | qpRetryCnt | qpRNRRetry | qpSQPSN | qpMaxQPRdAtomic)
	wantErrno(t, modify(qpsRTS, rts, func(m *abi.IbUverbsModifyQp) { m.Timeout = 32 }), syscall.EINVAL)
	if err := modify(qpsRTS, rts, func(m *abi.IbUverbsModifyQp) { m.Timeout = 14 }); err != nil {
		t.Fatal(err)
	}
	if err := modify(qpsErr, 0, nil); err != nil {
		t.Errorf("RTS→ERR: %v", err)
	}
	// QUERY_QP reports the state.
	resp := make([]byte, 128)
	q := &abi.IbUverbsQueryQp{QpHandle: qp}
	if err := do(fd, write(v, abi.IB_USER_VERBS_CMD_QUERY_QP, structBytes(q), resp, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if resp[unsafe.Offsetof(abi.IbUverbsQueryQpResp{}.QpState)] != qpsErr {
		t.Errorf("queried state %d", resp[unsafe.Offsetof(abi.IbUverbsQueryQpResp{}.QpState)])
	}
	// The PD and CQ are busy while the QP lives.
	wantErrno(t, do(fd, req(v, abi.UVERBS_OBJECT_PD, abi.UVERBS_METHOD_PD_DESTROY).Handle(abi.UVERBS_ATTR_DESTROY_PD_HANDLE, pd)), syscall.EBUSY)
	wantErrno(t, do(fd, req(v, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_DESTROY).Handle(abi.UVERBS_ATTR_DESTROY_CQ_HANDLE, cq).
		Out(abi.UVERBS_ATTR_DESTROY_CQ_RESP, make([]byte, 8))), syscall.EBUSY)
	if err := do(fd, req(v, abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_DESTROY).Handle(abi.UVERBS_ATTR_DESTROY_QP_HANDLE, qp).
		Out(abi.UVERBS_ATTR_DESTROY_QP_RESP, make([]byte, 4))); err != nil {
		t.Fatal(err)
	}
	if err := do(fd, req(v, abi.UVERBS_OBJECT_PD, abi.UVERBS_METHOD_PD_DESTROY).Handle(abi.UVERBS_ATTR_DESTROY_PD_HANDLE, pd)); err != nil {
		t.Errorf("PD destroy after its QP: %v", err)
	}
}

// The state table itself, for the transitions the other tests do not
// reach.
func TestModifyOK(t *testing.T) {
	for _, tc := range []struct {
		cur, next, typ uint8
		mask           uint32
		ok             bool
	}{
		{qpsReset, qpsInit, qptUD, qpState | qpPKeyIndex | qpPort | qpQKey, true},
		{qpsReset, qpsInit, qptRaw, qpState | qpPort, true},
		{qpsReset, qpsInit, qptRaw, qpState | qpPort | qpQKey, false},
		{qpsInit, qpsRTR, qptUD, qpState, true},
		{qpsRTR, qpsRTS, qptUD, qpState, false},
		{qpsRTR, qpsRTS, qptUD, qpState | qpSQPSN, true},
		{qpsRTS, qpsRTS, qptRC, qpMinRNRTimer, true},
		{qpsRTS, qpsSQD, qptRC, qpState | qpEnSQDAsync, true},
		{qpsInit, qpsRTS, qptRC, qpState, false},
		{qpsInit, qpsInit, qptRC, qpState | qpCurState, false},
		{qpsRTS, qpsErr, qptRC, qpState, true},
		{qpsReset, qpsErr, qptRC, qpState, false},
		{qpsReset, qpsReset, qptUD, qpState, true},
		{qpsRTS, qpsReset, qptRC, qpState | qpPort, false},
	} {
		if got := modifyOK(tc.cur, tc.next, tc.typ, tc.mask); got != tc.ok {
			t.Errorf("%d→%d type %d mask %#x: %v", tc.cur, tc.next, tc.typ, tc.mask, got)
		}
	}
}

// Completion channels and async event files are descriptors the caller
// adopts; an fd of the wrong object type in an attribute is EBADF.
func TestVerbsEventFiles(t *testing.T) {
	v, fd := ctxRXE(t)
	out := make([]byte, 4)
	if err := do(fd, write(v, abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, make([]byte, 8), out, nil, nil)); err != nil {
		t.Fatal(err)
	}
	chFD := int(binary.LittleEndian.Uint32(out))
	ar := req(v, abi.UVERBS_OBJECT_ASYNC_EVENT, abi.UVERBS_METHOD_ASYNC_EVENT_ALLOC).NewFD(abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE)
	if err := do(fd, ar); err != nil {
		t.Fatal(err)
	}
	asyncFD, _ := ar.CreatedFD(abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE)
	r, _ := cqReq(v, 4, nil, make([]byte, 16))
	r.FD(abi.UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, asyncFD)
	wantErrno(t, do(fd, r), syscall.EBADF)
	r, _ = cqReq(v, 4, nil, make([]byte, 16))
	r.FD(abi.UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, chFD).FD(abi.UVERBS_ATTR_CREATE_CQ_EVENT_FD, asyncFD)
	if err := do(fd, r); err != nil {
		t.Fatal(err)
	}
	cq := created(t, r, abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	ch, err := fd.Adopt(chFD, "channel")
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := fd.Adopt(chFD, "again"); err == nil {
		t.Error("a descriptor adopted twice")
	}
	if _, err := fd.Adopt(12345, "x"); err == nil {
		t.Error("adopted an unknown descriptor")
	}
	if !v.PostCompEvent(cq) {
		t.Fatal("no channel")
	}
	buf := make([]byte, 4)
	if _, err := ch.Read(buf); err != syscall.EINVAL {
		t.Errorf("short read: %v", err)
	}
	buf = make([]byte, 8)
	if n, err := ch.Read(buf); n != 8 || err != nil || binary.LittleEndian.Uint64(buf) != 1 {
		t.Errorf("Read = %d %v %x", n, err, buf)
	}
	if _, err := ch.ReadNonblocking(buf); err != syscall.EAGAIN {
		t.Errorf("empty non-blocking read: %v", err)
	}
}
