package uverbs

// Rings shared with the kernel or the device.
//
// Every work queue and completion queue of the data path is a ring with
// two sides: one writes entries and advances the producer index, the other
// reads them and advances the consumer index. Each index has one writer.
// The memory ordering is the same for every ring, and lives here:
//
//   - an index the other side writes is read with acquire, so that what
//     the other side did before advancing it (wrote a completion; finished
//     reading a work request) is visible before we touch the slots it
//     covers;
//   - an index we write is published with release, so that what we did
//     to the slots (wrote a work request; finished reading a completion)
//     is visible before the other side sees the index move;
//   - our own index we read with a plain load: nobody else writes it, and
//     we write it under the queue's lock.
//
// The kernel's side of rxe uses smp_load_acquire and smp_store_release
// (drivers/infiniband/sw/rxe/rxe_queue.h queue_get_producer,
// queue_advance_producer, queue_advance_consumer); rdma-core's mlx5 side
// uses udma_to_device_barrier before the doorbell record and
// udma_from_device_barrier after a CQE's owner bit. Go's sync/atomic loads
// and stores are sequentially consistent, so at least acquire and release:
// amd64 MOV and XCHG, arm64 LDAR and STLR. (For a device rather than the
// kernel's CPU code, arm64 would want outer-shareable barriers; see
// below and mlx5_data.go.)
//
// acquire and release are the only ways the data path reads or writes an
// index the other side can see.
//
// # arm64
//
// What Go gives: atomic.LoadUint32 is LDARW, atomic.StoreUint32 STLRW and
// atomic.StoreUint64 STLR, with no DMB around them (go tool objdump of a
// GOARCH=arm64 build, go1.26). LDAR and STLR are RCsc: no access after an
// LDAR in program order is observed before it, no access before an STLR is
// observed after it, and an STLR is not reordered with a later LDAR.
//
// Why that is enough for rxe: the "device" is the kernel's rxe code on
// another CPU (the requester, responder and completer tasks), and the
// queues are normal cacheable memory (vmalloc_user, mapped into the
// process), so both sides are CPUs in the inner-shareable domain. The
// kernel's side is smp_load_acquire and smp_store_release, which arm64
// implements as LDAR and STLR (arch/arm64/include/asm/barrier.h), and
// rdma-core 44's own rxe provider uses C11 memory_order_acquire and
// memory_order_release on the same words (providers/rxe/rxe_queue.h), not
// the udma barriers: those are for DMA by a bus master. The Go code runs
// the same instructions as both, on the same words, in the same places.
// The rxe doorbell is a write() system call after the release, and the
// kernel reads the index with acquire regardless.
//
// Where arm64 differs from amd64, and where each rule matters:
//   - posting: the WQE's plain stores must be visible before the producer
//     index. amd64 (TSO) keeps stores in order anyway; arm64 does not,
//     and only the STLR keeps the kernel from seeing the new index with
//     part of the WQE still unwritten (rdma-core's store_producer_index,
//     "flush writes to work queue before moving index");
//   - polling: the CQE's plain loads must be done before the consumer
//     index moves, or the kernel may overwrite the slot while we read
//     it. amd64 never lets a store pass an earlier load; arm64 does, and
//     the STLR of the consumer index forbids it. The LDAR of the producer
//     index keeps the CQE's loads from being satisfied before it.
//
// What the arm64 guest's test shows (make integration-arm64: the data
// path under load on the arm64 kernel's rxe, every byte checked): the
// arm64 code, layouts and kernel together. It cannot show the absence of
// a missing barrier: qemu's TCG runs the guest's loads and stores as the
// x86 host's, which keeps them in TSO order whatever the guest code
// allows. The argument above is the proof of ordering; real arm64
// hardware would be the test.
//
// Device memory (mlx5, mlx5_data.go) is another matter. rdma-core's arm64
// barriers there are udma_to_device_barrier = DMB OSHST (before the
// doorbell record), udma_from_device_barrier = DMB OSHLD (after a CQE's
// owner bit) and mmio_flush_writes = DSB ST (around the UAR and BlueFlame
// stores to write-combining memory). A PCIe device observes in the outer
// shareable domain; LDAR and STLR order accesses in the shareability
// domain of the address, and Linux maps normal memory inner shareable.
// Linux itself does not lean on STLR for DMA: dma_wmb is DMB OSHST and
// writel puts it before the device store (arch/arm64/include/asm/io.h).
// Go cannot emit DMB OSH* or DSB without assembly, so the mlx5 path is
// not claimed for arm64 hardware: a port would add three small arm64
// assembly barriers where mlx5_data.go's comments name rdma-core's.
// (mock0, the only mlx5 device the tests have, is amd64 only.)

import (
	"sync/atomic"
	"unsafe"

	"github.com/purerdma/rdma/abi"
)

// acquire loads an index the other side writes.
func acquire(p *uint32) uint32 { return atomic.LoadUint32(p) }

// release publishes an index we write.
func release(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

// rxeRing is one mapped struct rxe_queue_buf (include/uapi/rdma/
// rdma_user_rxe.h): indices masked by index_mask, slots of
// 1 << log2_elem_size bytes from byte 384. It is full when
// producer+1 == consumer.
type rxeRing struct {
	hdr   *abi.RxeQueueBuf
	mask  uint32
	shift uint32
}

func newRxeRing(m []byte) rxeRing {
	q := (*abi.RxeQueueBuf)(ptrOf(m))
	// rxeMap checked the header against the mapping's size.
	return rxeRing{hdr: q, mask: q.IndexMask, shift: q.Log2ElemSize}
}

func (r *rxeRing) slot(i uint32) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(r.hdr), rxeQueueHdr+uintptr(i&r.mask)<<r.shift)
}

func (r *rxeRing) slotSize() uintptr { return 1 << r.shift }

func (r *rxeRing) next(i uint32) uint32 { return (i + 1) & r.mask }

// post is the producer side (send and receive queues): it fills up to n
// slots from our producer index with fill(slot, k) for k = 0, 1, … and
// publishes those filled with one release. A full queue stops it with
// errFull; an error of fill stops it too, that slot unpublished. It
// returns how many it published.
func (r *rxeRing) post(n int, fill func(slot unsafe.Pointer, k int) error) (int, error) {
	prod := r.hdr.ProducerIndex // ours
	done := 0
	var err error
	for ; done < n; done++ {
		if r.next(prod) == acquire(&r.hdr.ConsumerIndex) {
			err = errFull
			break
		}
		if err = fill(r.slot(prod), done); err != nil {
			break
		}
		prod = r.next(prod)
	}
	if done > 0 {
		release(&r.hdr.ProducerIndex, prod)
	}
	return done, err
}
