package uverbs

// Shared receive queues on mlx5: the Go side of rdma-core's
// providers/mlx5 (verbs.c mlx5_create_srq, srq.c mlx5_alloc_srq_buf,
// mlx5_post_srq_recv, mlx5_free_srq_wqe; cq.c for the completions) and the
// kernel's drivers/infiniband/hw/mlx5/srq.c (create_srq_user).
//
// UNPROVEN ON HARDWARE, like the rest of the mlx5 data path (mlx5_data.go):
// tested against the fake device only.
//
// The buffer is max WQEs of 1 << wqeShift bytes (at least 32, a power of
// two): struct mlx5_wqe_srq_next_seg (16 bytes, next_wqe_index a
// big-endian u16 at byte 2), then data segments, a short list ended by
// MLX5_INVALID_LKEY. The free WQEs form a list through next_wqe_index
// from head to tail: a post takes the WQE at head and moves head to its
// next; a completion (wqe_counter names the WQE) links the WQE after tail
// and makes it the tail. head == tail is full: one WQE is always kept
// back. The doorbell record's first word is the count of posted WQEs,
// big-endian. libmlx5 doubles the buffer for a wait queue where the
// device allows, which only ODP page faults use (srq_cooldown_wqe); this
// provider has no ODP and makes none, as libmlx5 does when the device's
// max_srq_recv_wr leaves no room for one.
//
// Completions for a QP created with an SRQ name the QP (its user index,
// or its number with CQE version 0), whose SRQ owns the WQE the CQE's
// wqe_counter names (mlx5_poll_one: the QP's srq, then
// srq->wrid[wqe_ctr] and mlx5_free_srq_wqe).

import (
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/purerdma/rdma/abi"
)

const (
	mlx5SRQNextSegSize = 16 // struct mlx5_wqe_srq_next_seg
	mlx5SRQNextWQEOff  = 2  // its next_wqe_index (__be16)
)

// mlx5SRQ is the userspace half of an mlx5 SRQ (rdma-core's struct
// mlx5_srq without the wait queue).
type mlx5SRQ struct {
	mu       sync.Mutex // posts and the pollers' frees (srq->lock)
	buf      unsafe.Pointer
	wqeShift uint32
	max      uint32 // WQEs in the buffer, a power of two
	maxGS    int
	head     uint32
	tail     uint32
	counter  uint32
	dbrec    *uint32 // big-endian
	wrid     []uint64
}

func (s *mlx5SRQ) wqe(i uint32) unsafe.Pointer {
	return unsafe.Add(s.buf, uintptr(i&(s.max-1))<<s.wqeShift)
}

func (s *mlx5SRQ) next(i uint32) uint32 {
	return uint32(get16(s.wqe(i), mlx5SRQNextWQEOff))
}

func (s *mlx5SRQ) setNext(i, n uint32) {
	p := unsafe.Slice((*byte)(unsafe.Add(s.wqe(i), mlx5SRQNextWQEOff)), 2)
	p[0], p[1] = byte(n>>8), byte(n)
}

// mlx5Create is mlx5_create_srq: the buffer and its free list, a
// doorbell record, then CREATE_SRQ with struct mlx5_ib_create_srq.
func (s *SRQ) mlx5Create(c *Context, p *mlx5Provider, attr SRQAttr) error {
	if attr.MaxWR > p.resp.MaxSrqRecvWr {
		return errArg("max_wr %d: the device's max_srq_recv_wr is %d", attr.MaxWR, p.resp.MaxSrqRecvWr)
	}
	if maxSGE := uint32(p.resp.MaxRqDescSz) / mlx5DataSegSize; attr.MaxSGE > maxSGE {
		return errArg("max_sge %d: the device takes %d", attr.MaxSGE, maxSGE)
	}
	size := roundPow2(max(32, mlx5SRQNextSegSize+attr.MaxSGE*mlx5DataSegSize))
	if size > p.resp.MaxRecvWr { // mlx5_alloc_srq_buf compares with max_recv_wr
		return errArg("a %d-byte SRQ WQE", size)
	}
	x := &mlx5SRQ{wqeShift: uint32(bits.TrailingZeros32(size)), maxGS: int(size-mlx5SRQNextSegSize) / mlx5DataSegSize}
	x.max = roundPow2(attr.MaxWR + 1)
	x.tail = x.max - 1
	d := &s.res
	d.ms, d.m5 = c.maps, p
	buf, r, err := c.maps.Anon(pageRound(int(x.max) << x.wqeShift))
	if err != nil {
		return fmt.Errorf("allocate the SRQ buffer: %w", err)
	}
	d.addAnon(buf, r)
	x.buf = ptrOf(buf)
	for i := uint32(0); i < x.tail; i++ {
		x.setNext(i, i+1)
	}
	db, err := p.db.alloc()
	if err != nil {
		d.release()
		return err
	}
	d.db, d.dbp = db, &p.db
	x.dbrec = (*uint32)(ptrOf(p.db.slot(db)))
	x.wrid = make([]uint64, x.max)

	resp := new(abi.IbUverbsCreateSrqResp)
	req := &abi.IbUverbsCreateSrq{Response: addrOf(bytesOf(resp)), UserHandle: s.uh, PdHandle: s.pd.handle,
		MaxWr: x.max - 1, MaxSge: uint32(x.maxGS), SrqLimit: attr.Limit}
	cmd := &abi.Mlx5IbCreateSrq{BufAddr: addrOf(buf), DbAddr: db}
	drv := new(abi.Mlx5IbCreateSrqResp)
	if err := c.invokeWrite(abi.IB_USER_VERBS_CMD_CREATE_SRQ, bytesOf(req), bytesOf(resp), bytesOf(cmd), bytesOf(drv)); err != nil {
		return d.createFailed(err)
	}
	d.created()
	s.handle, s.num = resp.SrqHandle, drv.Srqn
	s.m5 = x
	return nil
}

// postRecv is mlx5_post_srq_recv, under x.mu.
func (x *mlx5SRQ) postRecv(wrs []RecvWR) (int, error) {
	n := 0
	var err error
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SGL) > x.maxGS {
			err = errArg("%d SGEs: the SRQ takes %d", len(wr.SGL), x.maxGS)
			break
		}
		if x.head == x.tail {
			err = errFull
			break
		}
		w := x.wqe(x.head)
		x.wrid[x.head&(x.max-1)] = wr.ID
		x.head = x.next(x.head)
		j := 0
		for _, s := range wr.SGL {
			d := unsafe.Add(w, mlx5SRQNextSegSize+j*mlx5DataSegSize)
			put32(d, 0, s.Length)
			put32(d, 4, s.LKey)
			put64(d, 8, s.Addr)
			j++
		}
		if j < x.maxGS {
			d := unsafe.Add(w, mlx5SRQNextSegSize+j*mlx5DataSegSize)
			put32(d, 0, 0)
			put32(d, 4, mlx5InvalidLKey)
			put64(d, 8, 0)
		}
		n++
	}
	if n > 0 {
		x.counter += uint32(n)
		release(x.dbrec, be32(x.counter)) // udma_to_device_barrier, then the record
	}
	return n, err
}

// complete returns the ID of the WQE a CQE's wqe_counter names and puts
// the WQE back on the free list (mlx5_free_srq_wqe).
func (x *mlx5SRQ) complete(ctr uint32) uint64 {
	i := ctr & (x.max - 1)
	x.mu.Lock()
	id := x.wrid[i]
	x.setNext(x.tail, i)
	x.tail = i
	x.mu.Unlock()
	return id
}

// errSRQProvider is CreateSRQ's error on a provider without SRQs here.
func errSRQProvider(c *Context) error {
	return fmt.Errorf("shared receive queues on the %s provider are not implemented: %w", c.prov.name(), ErrNotSupported)
}
