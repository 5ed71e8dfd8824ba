package uverbs

import (
	"fmt"
	"syscall"

	"github.com/purerdma/rdma/abi"
)

// rxeProvider is Soft-RoCE (rdma_rxe): no driver data on the context, PD
// or query_device (rxe rejects any with EINVAL); CQ and QP responses carry
// the mmap offsets of their queues, which live in kernel memory shared with
// the process (rxe_verbs.c rxe_create_cq/rxe_create_qp and rxe_mmap.c).
type rxeProvider struct{}

func (*rxeProvider) name() string                          { return "rxe" }
func (*rxeProvider) contextData() ([]byte, []byte)         { return nil, nil }
func (*rxeProvider) contextCreated(*Context, []byte) error { return nil }
func (*rxeProvider) queryDeviceData() ([]byte, []byte)     { return nil, nil }
func (*rxeProvider) deviceAttr(raw *abi.IbUverbsExQueryDeviceResp, _ []byte, a *DeviceAttr) {
	a.FWVer = fwVersionDotted(raw.Base.FwVer)
}
func (*rxeProvider) pdData() ([]byte, []byte) { return nil, nil }
func (*rxeProvider) reqNotify() bool          { return true }
func (*rxeProvider) close(*Context)           {}

func (*rxeProvider) prepareCQ(c *Context, cqe uint32, d *driverRes, x *drvScratch) error {
	d.ms = c.maps
	x.rxeCQ = abi.RxeCreateCqResp{}
	x.out, x.cqe = bytesOf(&x.rxeCQ), cqe
	return nil
}

func (*rxeProvider) cqCreated(c *Context, d *driverRes, x *drvScratch) error {
	return rxeMap(c, d, x.rxeCQ.Mi, "CQ")
}

func (*rxeProvider) prepareQP(c *Context, _ QPInitAttr, d *driverRes, x *drvScratch) error {
	rxePrepareQP(c, d, x)
	return nil
}

// rxePrepareQP is prepareQP, for createQPWith's direct call.
func rxePrepareQP(c *Context, d *driverRes, x *drvScratch) {
	d.ms = c.maps
	x.rxeQP = abi.RxeCreateQpResp{}
	x.out = bytesOf(&x.rxeQP)
}

func (*rxeProvider) qpCreated(c *Context, d *driverRes, x *drvScratch) error {
	return rxeQPCreated(c, d, x)
}

// rxeQPCreated is qpCreated, for createQPWith's direct call.
func rxeQPCreated(c *Context, d *driverRes, x *drvScratch) error {
	resp := &x.rxeQP
	// The RQ descriptor is empty when the QP uses an SRQ.
	if resp.RqMi.Size != 0 {
		if err := rxeMap(c, d, resp.RqMi, "receive queue"); err != nil {
			return err
		}
	}
	return rxeMap(c, d, resp.SqMi, "send queue")
}

// rxeMap maps one queue the way rdma-core's rxe provider does (read/write,
// shared) and checks its header.
func rxeMap(c *Context, d *driverRes, mi abi.Mminfo, what string) error {
	if mi.Size < rxeQueueHdr {
		return fmt.Errorf("rxe returned a %s of %d bytes (mmap offset %#x): %w", what, mi.Size, mi.Offset, syscall.EPROTO)
	}
	m, r, err := c.maps.DeviceHeld(c.fd, c.core.Number(), int64(mi.Offset), int(mi.Size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the %s: %w", what, err)
	}
	d.addMap(m, r)
	q := (*abi.RxeQueueBuf)(ptrOf(m))
	slots := uint64(q.IndexMask) + 1
	if q.IndexMask&(q.IndexMask+1) != 0 || q.Log2ElemSize > 16 || rxeQueueHdr+slots<<q.Log2ElemSize > uint64(mi.Size) {
		return fmt.Errorf("the mapped %s has an invalid header (index_mask %#x, log2_elem_size %d, %d bytes): %w",
			what, q.IndexMask, q.Log2ElemSize, mi.Size, syscall.EPROTO)
	}
	return nil
}

// rxeQueueHdr is sizeof(struct rxe_queue_buf): the indices, then the slots.
const rxeQueueHdr = 384
