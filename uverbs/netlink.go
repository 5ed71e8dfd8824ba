package uverbs

import (
	"encoding/binary"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/purerdma/rdma/abi"
)

// netlinkDriverIDs fills Index and DriverID of devs from RDMA netlink:
// RDMA_NLDEV_CMD_GET (dump) for the device indices, then
// RDMA_NLDEV_CMD_GET_CHARDEV with type "uverbs" per device, whose reply
// carries RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID (a u32) and the chardev name.
// Like `rdma dev show` it needs no privilege. Errors leave the fields
// alone; the sysfs fallback then applies.
func netlinkDriverIDs(devs []Device) {
	links, err := netlink.RdmaLinkList()
	if err != nil {
		return
	}
	for i := range devs {
		for _, l := range links {
			if l.Attrs.Name != devs[i].Name {
				continue
			}
			devs[i].Index = int(l.Attrs.Index)
			if id, node, ok := chardevUverbs(l.Attrs.Index); ok && (node == "" || node == devs[i].Node) {
				devs[i].DriverID = id
			}
		}
	}
}

// chardevUverbs asks GET_CHARDEV for the uverbs node of device index.
func chardevUverbs(index uint32) (driverID uint32, node string, ok bool) {
	req := nl.NewNetlinkRequest(abi.RDMA_NL_NLDEV<<10|abi.RDMA_NLDEV_CMD_GET_CHARDEV, 0)
	req.AddData(nl.NewRtAttr(abi.RDMA_NLDEV_ATTR_DEV_INDEX, nl.Uint32Attr(index)))
	req.AddData(nl.NewRtAttr(abi.RDMA_NLDEV_ATTR_CHARDEV_TYPE, nl.ZeroTerminated("uverbs")))
	msgs, err := req.Execute(unix.NETLINK_RDMA, 0)
	if err != nil || len(msgs) == 0 {
		return 0, "", false
	}
	attrs, err := nl.ParseRouteAttr(msgs[0])
	if err != nil {
		return 0, "", false
	}
	found := false
	for _, a := range attrs {
		switch a.Attr.Type {
		case abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID:
			// A u32, although the UAPI comment says u64.
			switch len(a.Value) {
			case 4:
				driverID, found = binary.LittleEndian.Uint32(a.Value), true
			case 8:
				driverID, found = uint32(binary.LittleEndian.Uint64(a.Value)), true
			}
		case abi.RDMA_NLDEV_ATTR_CHARDEV_NAME:
			node = string(trimNul(a.Value))
		}
	}
	return driverID, node, found
}

func trimNul(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
