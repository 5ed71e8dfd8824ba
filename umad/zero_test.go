package umad

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestZeroValues: values the package's constructors did not make (zero
// values) answer every method with an error or a zero value. Nil pointers
// are TestNilReceivers'.
// Packet.Format is left out: fmt never passes it a nil fmt.State.
func TestZeroValues(t *testing.T) {
	zerotest.Methods(t, []string{"Packet.Format"},
		new(Host), new(Port), new(Packet), new(Addr), new(GRH), new(CA), new(CAPort), new(Registration),
		new(MADHeader), new(SMP), new(PerfMAD), new(VendorMAD), new(RawMAD), new(RMPPHeader),
		new(NodeInfo), new(PortInfo), new(ClassPortInfo), new(PortCounters), new(PortCountersExtended))
}
