package sysfs

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestZeroValues: values the package's constructors did not make (zero
// values; nil *FS and *Netlink too) answer every method with an error or a
// zero value; the zero FS and Netlink read the running system. Nil
// pointers of the data types (CA, Port, …) panic like most Go types'.
func TestZeroValues(t *testing.T) {
	// LinkAdd and LinkDelete change the system: on the zero Netlink (the
	// running kernel) LinkDelete(0) removes the device with index 0, which
	// in the VM is rxe0, under the tests that come after.
	zerotest.Methods(t, []string{"Netlink.LinkAdd", "Netlink.LinkDelete"},
		new(FS), new(Netlink), new(CA), new(Port), new(HwCounterSet), new(CounterSet), new(PortStatusReader), new(PortStatus), new(CAWatch), new(CharDev), new(DevNumber),
		new(GIDEntry), new(NetlinkDevice), new(NetlinkChardev), new(PortStats), new(Rate),
		new(ResourceKind), new(NetlinkPort), new(ResourceSummary), new(ResourceObject),
		(*FS)(nil), (*Netlink)(nil))
}
