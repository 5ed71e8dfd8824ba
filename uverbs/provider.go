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
	// prepareCQ allocates what a CQ of at least cqe entries needs into
	// d, the CQ's own, and fills x, the create call's driver data;
	// cqCreated finishes after the kernel created the CQ (an error makes
	// the caller destroy it). prepareQP and qpCreated are the same for
	// a QP.
	prepareCQ(c *Context, cqe uint32, d *driverRes, x *drvScratch) error
	cqCreated(c *Context, d *driverRes, x *drvScratch) error
	prepareQP(c *Context, attr QPInitAttr, d *driverRes, x *drvScratch) error
	qpCreated(c *Context, d *driverRes, x *drvScratch) error
	// reqNotify reports whether REQ_NOTIFY_CQ through the kernel arms a
	// CQ of this driver (mlx5 arms through its doorbell page instead).
	reqNotify() bool
	// close releases the context-level resources (after every object is
	// destroyed, before the device file is closed).
	close(c *Context)
}

// driverRes is what one CQ or QP holds of its provider: the memory and
// the provider's resources to release after destroy. It lives in the CQ or
// QP struct itself, and holds its mappings in fixed arrays, so that
// creating an object allocates the object and nothing beside it (the
// create call's driver data is in its scratch, drvScratch).
type driverRes struct {
	ms *sys.MapSet // the context's, which records every mapping
	// maps are the mappings of the device file (rxe queues: the receive
	// queue, then the send queue), anon the anonymous memory (mlx5
	// buffers); nmaps and nanon count them.
	maps         [2][]byte
	anon         [2][]byte
	mapRefs      [2]sys.MapRef // ms's names of maps
	anonRefs     [2]sys.MapRef // and of anon
	nmaps, nanon uint8
	// db is a slot of the context's pool dbp (mlx5's doorbell record),
	// not 0 while held.
	db  uint64
	dbp *dbPool
	// What the mlx5 provider hands out per object, returned by release:
	// a user index (uidx, not 0), the QP's entry in its table (qpKey,
	// when keyed).
	keyed bool
	uidx  uint32
	qpKey uint32
	m5    *mlx5Provider
	// pins says the kernel pinned the anonymous memory (the object was
	// created with it): it counts in pinned until release.
	pins bool
}

type driverAttr struct {
	id  uint16 // 0: none
	u32 uint32
}

// addMap records m, a mapping of the device file, which ms named r.
func (d *driverRes) addMap(m []byte, r sys.MapRef) {
	d.maps[d.nmaps], d.mapRefs[d.nmaps] = m, r // more than len(d.maps) is a bug: panic
	d.nmaps++
}

// addAnon records m, anonymous memory, which ms named r.
func (d *driverRes) addAnon(m []byte, r sys.MapRef) {
	d.anon[d.nanon], d.anonRefs[d.nanon] = m, r
	d.nanon++
}

// mapped returns the device file's mappings, anonymous the anonymous ones.
func (d *driverRes) mapped() [][]byte    { return d.maps[:d.nmaps] }
func (d *driverRes) anonymous() [][]byte { return d.anon[:d.nanon] }

// anonBytes is how much memory the kernel pins when an object is created
// on the anonymous memory (mlx5's queue buffers, ib_umem_get).
func (d *driverRes) anonBytes() int64 {
	var n int64
	for _, m := range d.anonymous() {
		n += pinnedBytes(m)
	}
	return n
}

// created records that the kernel created the object on the anonymous
// memory, which it pins until the object is destroyed (release).
func (d *driverRes) created() {
	if d != nil && !d.pins && d.nanon > 0 {
		d.pins = true
		pinned.Add(d.anonBytes())
	}
}

// createFailed returns err, the failed create's, with the hint on
// RLIMIT_MEMLOCK when pinning the anonymous memory explains it
// (memlockHint), and releases what d holds.
func (d *driverRes) createFailed(err error) error {
	if d != nil && d.nanon > 0 {
		err = memlockHint(err, d.anonBytes())
	}
	d.release()
	return err
}

// release unmaps and frees everything; safe on nil and more than once.
func (d *driverRes) release() {
	if d == nil {
		return
	}
	if d.pins {
		pinned.Add(-d.anonBytes())
		d.pins = false
	}
	for i, m := range d.mapped() {
		d.ms.Unmap(m, d.mapRefs[i])
		d.maps[i] = nil
	}
	for i, m := range d.anonymous() {
		d.ms.Unmap(m, d.anonRefs[i])
		d.anon[i] = nil
	}
	d.nmaps, d.nanon = 0, 0
	if d.db != 0 {
		d.dbp.put(d.db)
		d.db = 0
	}
	if p := d.m5; p != nil {
		if d.keyed {
			p.qps.set(d.qpKey, nil)
			d.keyed = false
		}
		if d.uidx != 0 {
			p.uidx.free(d.uidx)
			d.uidx = 0
		}
	}
}

// Driver ABI versions (sysfs uverbsN/abi_version) each provider accepts,
// as rdma-core's providers declare them.
func providerABI(d rdma.DriverID) (r [2]int, ok bool) {
	switch d {
	case rdma.DriverRXE:
		return [2]int{1, 2}, true
	case rdma.DriverMLX5:
		return [2]int{1, 1}, true
	}
	return r, false
}

func newProvider(d Device, generic bool) (provider, error) {
	if r, ok := providerABI(d.DriverID); ok && d.ABIVersion != 0 && (d.ABIVersion < r[0] || d.ABIVersion > r[1]) {
		return nil, fmt.Errorf("%s driver ABI version %d is outside what the provider supports (%d..%d): %w",
			d.DriverID, d.ABIVersion, r[0], r[1], ErrNotSupported)
	}
	switch d.DriverID {
	case rdma.DriverRXE:
		return &rxeProvider{}, nil
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
func (genericProvider) prepareCQ(c *Context, _ uint32, _ *driverRes, _ *drvScratch) error {
	return fmt.Errorf("the generic provider cannot create CQs for the %s driver: %w", c.dev.DriverID, ErrNotSupported)
}
func (genericProvider) cqCreated(*Context, *driverRes, *drvScratch) error { return nil }
func (genericProvider) prepareQP(c *Context, _ QPInitAttr, _ *driverRes, _ *drvScratch) error {
	return fmt.Errorf("the generic provider cannot create QPs for the %s driver: %w", c.dev.DriverID, ErrNotSupported)
}
func (genericProvider) qpCreated(*Context, *driverRes, *drvScratch) error { return nil }
func (genericProvider) reqNotify() bool                                   { return true }
func (genericProvider) close(*Context)                                    {}

// fwVersionDotted is the "%d.%d.%d" firmware format of rxe and most
// providers: major = bits 32–47, minor = bits 16–31, sub-minor = bits 0–15.
func fwVersionDotted(raw uint64) string {
	return fmt.Sprintf("%d.%d.%d", (raw>>32)&0xffff, (raw>>16)&0xffff, raw&0xffff)
}
