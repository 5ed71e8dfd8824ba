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
// mlx5_data.go.)
//
// acquire and release are the only ways the data path reads or writes an
// index the other side can see.

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
