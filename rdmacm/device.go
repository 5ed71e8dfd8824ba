package rdmacm

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/uverbs"
)

// device is the verbs side of an RDMA device the IDs use (librdmacm's
// struct cma_device): one uverbs Context per device in the process,
// shared by every ID on it, with a PD for QPs created without one and the
// depths ConnParam's MaxDepth stands for. It is opened by the first ID
// that reaches the device and closed with the last.
type device struct {
	guid    rdma.GUID
	name    string
	ctx     *uverbs.Context
	pd      *uverbs.PD
	maxInit uint8 // max_qp_init_rd_atom
	maxResp uint8 // max_qp_rd_atom
	refs    int
}

var devices struct {
	sync.Mutex
	m map[rdma.GUID]*device
}

// bindDeviceLocked queries the ID's address and, when the kernel bound it
// to a device, takes a reference on that device.
func (id *ID) bindDeviceLocked() error {
	var resp abi.RdmaUcmQueryAddrResp
	if err := query(id.ch, "query addr", "", id.handle, abi.RDMA_USER_CM_QUERY_ADDR, bytesOf(&resp)); err != nil {
		return err
	}
	info := addrInfo(&resp)
	if info.NodeGUID == 0 {
		return nil // not bound to a device (a wildcard address)
	}
	if id.dev != nil && id.dev.guid == info.NodeGUID {
		id.port = info.Port
		return nil
	}
	d, err := acquireDevice(id.ch.opts.verbs(), info.NodeGUID, info.DeviceIndex)
	if err != nil {
		return err
	}
	if id.dev != nil {
		id.dev.release()
	}
	id.dev, id.port = d, info.Port
	return nil
}

// addrResolved binds the ID to the device ResolveAddr found
// (ucma_process_addr_resolved).
func (id *ID) addrResolved() error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed {
		return syscall.EINVAL
	}
	if err := id.bindDeviceLocked(); err != nil {
		return err
	}
	if id.dev == nil {
		return syscall.ENODEV
	}
	return nil
}

// acquireDevice returns the device with the node GUID (or, when the
// kernel gave one, the index), opening it when no ID uses it yet.
func acquireDevice(opts *uverbs.Options, guid rdma.GUID, index uint32) (*device, error) {
	devices.Lock()
	defer devices.Unlock()
	if d, ok := devices.m[guid]; ok {
		d.refs++
		return d, nil
	}
	list, err := uverbs.Devices(opts)
	if err != nil {
		return nil, err
	}
	var found *uverbs.Device
	for i := range list {
		if list[i].Index >= 0 && uint32(list[i].Index) == index && list[i].NodeGUID == guid {
			found = &list[i]
			break
		}
	}
	if found == nil {
		for i := range list {
			if list[i].NodeGUID == guid {
				found = &list[i]
				break
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no verbs device has node GUID %s: %w", guid, syscall.ENODEV)
	}
	ctx, err := uverbs.OpenDevice(*found, opts)
	if err != nil {
		return nil, err
	}
	attr, err := ctx.QueryDevice()
	if err != nil {
		ctx.Close()
		return nil, err
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		ctx.Close()
		return nil, err
	}
	d := &device{guid: guid, name: found.Name, ctx: ctx, pd: pd,
		maxInit: uint8(min(attr.MaxQPInitRdAtom, 0xff)), maxResp: uint8(min(attr.MaxQPRdAtom, 0xff)), refs: 1}
	if devices.m == nil {
		devices.m = map[rdma.GUID]*device{}
	}
	devices.m[guid] = d
	return d, nil
}

// release drops a reference; the last one closes the context (and what
// is left on it).
func (d *device) release() {
	devices.Lock()
	d.refs--
	last := d.refs == 0
	if last && devices.m[d.guid] == d {
		delete(devices.m, d.guid)
	}
	devices.Unlock()
	if last {
		d.ctx.Close()
	}
}

// deviceRemoved forgets the ID's device on DEVICE_REMOVAL, as librdmacm
// marks it dead: the IDs that hold it keep it until they close, and an ID
// that reaches a device of the same GUID later (the device added again)
// opens it anew. (Where the driver cannot disassociate a verbs context,
// as rxe, the kernel's removal waits until the last ID closes it.)
func (id *ID) deviceRemoved() {
	d := id.device()
	if d == nil {
		return
	}
	devices.Lock()
	if devices.m[d.guid] == d {
		delete(devices.m, d.guid)
	}
	devices.Unlock()
}
