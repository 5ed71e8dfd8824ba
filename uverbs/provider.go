package uverbs

import (
	"fmt"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// provider is the driver-specific half of the library, chosen by the
// device's driver id (rdma-core's providers/*): the driver data of
// GET_CONTEXT, query_device, alloc_pd, CQ and QP creation, and the memory
// those objects need (mapped queues, rings, doorbell records).
type provider interface {
	name() string
	// contextData returns the driver data of GET_CONTEXT; contextCreated
	// reads the driver's answer.
	contextData() (in, out []byte)
	contextCreated(c *Context, out []byte) error
	// queryDeviceData returns the driver data of EX_QUERY_DEVICE;
	// deviceAttr completes a with the driver's answer and formats the
	// firmware version the way the rdma-core provider does.
	queryDeviceData() (in, out []byte)
	deviceAttr(raw *abi.IbUverbsExQueryDeviceResp, out []byte, a *DeviceAttr)
	// pdData returns the driver data of ALLOC_PD.
	pdData() (in, out []byte)
	// prepareCQ allocates what a CQ of at least cqe entries needs and
	// returns the driver data; cqCreated finishes after the kernel
	// created the CQ (an error makes the caller destroy it).
	prepareCQ(c *Context, cqe uint32) (*driverRes, error)
	cqCreated(c *Context, d *driverRes) error
	prepareQP(c *Context, attr QPInitAttr) (*driverRes, error)
	qpCreated(c *Context, d *driverRes) error
	// reqNotify reports whether REQ_NOTIFY_CQ through the kernel arms a
	// CQ of this driver (mlx5 arms through its doorbell page instead).
	reqNotify() bool
	// close releases the context-level resources (after every object is
	// destroyed, before the device file is closed).
	close(c *Context)
}

// driverRes is what one CQ or QP holds of its provider: the driver data of
// the create call and the memory to release after destroy.
type driverRes struct {
	in, out []byte
	// cqe is the CQ size to ask the kernel for (mlx5 rounds it).
	cqe uint32
	// attrs are extra driver attributes for the create request.
	attrs []driverAttr
	ms    *sys.MapSet // the context's, which records every mapping
	maps  [][]byte    // mappings of the device file (rxe queues)
	anon  [][]byte    // anonymous memory (mlx5 buffers)
	free  func()      // returns a doorbell record, a user index, …
}

type driverAttr struct {
	id  uint16
	u32 uint32
}

func (d *driverRes) add(r *abi.Request) {
	addUHW(r, d.in, d.out)
	for _, a := range d.attrs {
		r.InU32(a.id, a.u32)
	}
}

// release unmaps and frees everything; safe on nil and more than once.
func (d *driverRes) release() {
	if d == nil {
		return
	}
	for _, m := range d.maps {
		d.ms.Unmap(m)
	}
	for _, m := range d.anon {
		d.ms.Unmap(m)
	}
	d.maps, d.anon = nil, nil
	if d.free != nil {
		d.free()
		d.free = nil
	}
}

// Driver ABI versions (sysfs uverbsN/abi_version) each provider accepts,
// as rdma-core's providers declare them.
var providerABI = map[rdma.DriverID][2]int{
	rdma.DriverRXE:  {1, 2},
	rdma.DriverMLX5: {1, 1},
}

func newProvider(d Device, generic bool) (provider, error) {
	if r, ok := providerABI[d.DriverID]; ok && d.ABIVersion != 0 && (d.ABIVersion < r[0] || d.ABIVersion > r[1]) {
		return nil, fmt.Errorf("%s driver ABI version %d is outside what the provider supports (%d..%d): %w",
			d.DriverID, d.ABIVersion, r[0], r[1], ErrNotSupported)
	}
	switch d.DriverID {
	case rdma.DriverRXE:
		return rxeProvider{}, nil
	case rdma.DriverMLX5:
		return newMlx5Provider(), nil
	}
	if generic && d.DriverID != rdma.DriverUnknown {
		return genericProvider{}, nil
	}
	return nil, fmt.Errorf("purerdma has no provider for the %s driver (Options.Generic allows queries with the generic provider): %w",
		d.DriverID, errNoProvider)
}

// genericProvider sends no driver data.
type genericProvider struct{}

func (genericProvider) name() string                          { return "generic" }
func (genericProvider) contextData() ([]byte, []byte)         { return nil, nil }
func (genericProvider) contextCreated(*Context, []byte) error { return nil }
func (genericProvider) queryDeviceData() ([]byte, []byte)     { return nil, nil }
func (genericProvider) deviceAttr(raw *abi.IbUverbsExQueryDeviceResp, _ []byte, a *DeviceAttr) {
	a.FWVer = fwVersionDotted(raw.Base.FwVer)
}
func (genericProvider) pdData() ([]byte, []byte) { return nil, nil }
func (genericProvider) prepareCQ(c *Context, _ uint32) (*driverRes, error) {
	return nil, fmt.Errorf("the generic provider cannot create CQs for the %s driver: %w", c.dev.DriverID, ErrNotSupported)
}
func (genericProvider) cqCreated(*Context, *driverRes) error { return nil }
func (genericProvider) prepareQP(c *Context, _ QPInitAttr) (*driverRes, error) {
	return nil, fmt.Errorf("the generic provider cannot create QPs for the %s driver: %w", c.dev.DriverID, ErrNotSupported)
}
func (genericProvider) qpCreated(*Context, *driverRes) error { return nil }
func (genericProvider) reqNotify() bool                      { return true }
func (genericProvider) close(*Context)                       {}

// fwVersionDotted is the "%d.%d.%d" firmware format of rxe and most
// providers: major = bits 32–47, minor = bits 16–31, sub-minor = bits 0–15.
func fwVersionDotted(raw uint64) string {
	return fmt.Sprintf("%d.%d.%d", (raw>>32)&0xffff, (raw>>16)&0xffff, raw&0xffff)
}
