package sysfs

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestZeroValues: values the package's constructors did not make (zero
// values; nil *FS too) answer every method with an error or a zero value;
// the zero FS reads the running system. Nil
// pointers of the data types (CA, Port, …): TestNilReceivers.
func TestZeroValues(t *testing.T) {
	zerotest.Methods(t, nil,
		new(FS), new(CA), new(Port), new(HwCounterSet), new(CounterSet), new(PortStatusReader), new(PortStatus), new(CAWatch), new(CharDev), new(DevNumber),
		new(GIDEntry), new(Rate),
		(*FS)(nil))
}
