package fakekernel

import (
	"encoding/binary"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/abi"
)

// rxe driver rules (rxe_verbs.c rxe_create_cq/rxe_create_qp and rxe_mmap.c).
func TestRXERules(t *testing.T) {
	v, fd := ctxRXE(t)
	exq := abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE | abi.IB_USER_VERBS_CMD_FLAG_EXTENDED
	// EX_QUERY_DEVICE with any driver data: EINVAL.
	wantErrno(t, do(fd, write(v, uint32(exq), make([]byte, 8), make([]byte, 304), nil, make([]byte, 8))), syscall.EINVAL)
	wantErrno(t, do(fd, write(v, uint32(exq), make([]byte, 8), make([]byte, 304), make([]byte, 8), nil)), syscall.EINVAL)
	// QUERY_CONTEXT: rxe has no query_ucontext.
	wantErrno(t, do(fd, req(v, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_CONTEXT)), syscall.EOPNOTSUPP)
	// CQ: UHW_OUT ≥ 16, no flags, 1 ≤ cqe ≤ max_cqe.
	r, _ := cqReq(v, 8, nil, make([]byte, 8))
	wantErrno(t, do(fd, r), syscall.EINVAL)
	r, _ = cqReq(v, 8, nil, nil)
	wantErrno(t, do(fd, r), syscall.EINVAL)
	r, _ = cqReq(v, 8, nil, make([]byte, 16))
	wantErrno(t, do(fd, r.Flags(abi.UVERBS_ATTR_CREATE_CQ_FLAGS, abi.IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION)), syscall.EOPNOTSUPP)
	r, _ = cqReq(v, 0, nil, make([]byte, 16))
	wantErrno(t, do(fd, r), syscall.EINVAL)
	r, _ = cqReq(v, 32768, nil, make([]byte, 16))
	wantErrno(t, do(fd, r), syscall.EINVAL)
	// A completion vector past num_comp_vectors is the core's EINVAL.
	r = req(v, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE).NewHandle(abi.UVERBS_ATTR_CREATE_CQ_HANDLE).
		Out(abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE, make([]byte, 4)).InU32(abi.UVERBS_ATTR_CREATE_CQ_CQE, 4).
		InU64(abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 0).InU32(abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 2).
		Out(abi.UVERBS_ATTR_UHW_OUT, make([]byte, 16))
	wantErrno(t, do(fd, r), syscall.EINVAL)

	mi := make([]byte, 16)
	r, resp := cqReq(v, 100, nil, mi)
	if err := do(fd, r); err != nil {
		t.Fatal(err)
	}
	if cqe := binary.LittleEndian.Uint32(resp); cqe != 127 {
		t.Errorf("RESP_CQE = %d, want 127", cqe)
	}
	cq := created(t, r, abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	off, size := int64(binary.LittleEndian.Uint64(mi)), int(binary.LittleEndian.Uint32(mi[8:]))
	if size != 384+128*64 && size != 12288 {
		t.Errorf("queue size %d", size)
	}
	// Only the returned offset, at most its size, shared.
	if _, err := fd.Mmap(off+4096*16*7, size, syscall.PROT_READ, syscall.MAP_SHARED); err != syscall.EINVAL {
		t.Errorf("mmap of an unknown offset: %v", err)
	}
	if _, err := fd.Mmap(off, size+4096, syscall.PROT_READ, syscall.MAP_SHARED); err != syscall.EINVAL {
		t.Errorf("mmap longer than the queue: %v", err)
	}
	m, err := fd.Mmap(off, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(m[0:]) != 6 || binary.LittleEndian.Uint32(m[4:]) != 127 {
		t.Errorf("queue header: log2_elem_size %d index_mask %d", binary.LittleEndian.Uint32(m[0:]), binary.LittleEndian.Uint32(m[4:]))
	}
	unmap(m)

	// QP: UHW_OUT ≥ 32, no driver input, no create flags, RC/UC/UD only.
	pd := allocPD(t, v, fd, nil)
	wantErrno(t, do(fd, qpReq(v, pd, cq, qptRC, smallCap, nil, make([]byte, 16))), syscall.EINVAL)
	wantErrno(t, do(fd, qpReq(v, pd, cq, qptRC, smallCap, make([]byte, 8), make([]byte, 32))), syscall.EINVAL)
	wantErrno(t, do(fd, qpReq(v, pd, cq, qptUD, smallCap, nil, make([]byte, 32)).
		Flags32(abi.UVERBS_ATTR_CREATE_QP_FLAGS, abi.IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK)), syscall.EOPNOTSUPP)
	v.NetRaw = true
	wantErrno(t, do(fd, qpReq(v, pd, cq, qptRaw, smallCap, nil, make([]byte, 32))), syscall.EOPNOTSUPP)
	// SQ_SIG_ALL is not a create flag for the driver.
	qmi := make([]byte, 32)
	if err := do(fd, qpReq(v, pd, cq, qptRC, smallCap, nil, qmi).Flags32(abi.UVERBS_ATTR_CREATE_QP_FLAGS, abi.IB_UVERBS_QP_CREATE_SQ_SIG_ALL)); err != nil {
		t.Fatal(err)
	}
	for i, what := range []string{"rq", "sq"} {
		o, n := int64(binary.LittleEndian.Uint64(qmi[16*i:])), int(binary.LittleEndian.Uint32(qmi[16*i+8:]))
		m, err := fd.Mmap(o, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		if err != nil {
			t.Fatalf("map the %s: %v", what, err)
		}
		unmap(m)
	}
}
