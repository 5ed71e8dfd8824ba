package uverbs

import (
	"github.com/purerdma/rdma/rdmanl"
	"github.com/purerdma/rdma/sysfs"
)

// netlinkDriverIDs fills Index and DriverID of devs from RDMA netlink
// (rdmanl.Conn): RDMA_NLDEV_CMD_GET (dump) for the device indices, then
// RDMA_NLDEV_CMD_GET_CHARDEV with type "uverbs" per device, whose reply
// carries the driver id and the chardev name. Like `rdma dev show` it
// needs no privilege. Errors leave the fields alone; the sysfs fallback
// then applies.
func netlinkDriverIDs(devs []Device) {
	// One socket for the list and every device's chardev request.
	nl, err := rdmanl.Open()
	if err != nil {
		return
	}
	defer nl.Close()
	links, err := nl.Devices()
	if err != nil {
		return
	}
	for i := range devs {
		for _, l := range links {
			if l.Name != devs[i].Name {
				continue
			}
			devs[i].Index = int(l.Index)
			c, err := nl.Chardev(l.Index, sysfs.KindUverbs, 0)
			if err == nil && c.DriverID != nil && c.Name == devs[i].Node {
				devs[i].DriverID = *c.DriverID
			}
		}
	}
}
