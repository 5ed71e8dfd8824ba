package rdmanl

import (
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/zerotest"
)

// TestZeroValues: values the package's constructors did not make (zero
// values; a nil *Conn too) answer every method with an error or a zero
// value; the zero Conn asks the running kernel.
func TestZeroValues(t *testing.T) {
	// LinkAdd and LinkDelete change the system: on the zero Conn (the
	// running kernel) LinkDelete(0) removes the device with index 0, which
	// in the VM is rxe0, under the tests that come after.
	zerotest.Methods(t, []string{"Conn.LinkAdd", "Conn.LinkDelete"},
		new(Conn), new(Device), new(Chardev), new(Stats),
		new(ResourceKind), new(Port), new(ResourceSummary), new(ResourceObject),
		(*Conn)(nil))
}

// TestNilReceivers: a nil *Stats maps to nil; a nil *Conn asks the running
// kernel like New's (TestZeroValues); the other types have value methods.
func TestNilReceivers(t *testing.T) {
	var s *Stats
	if m := s.Map(); m != nil {
		t.Errorf("(*Stats)(nil).Map() = %v", m)
	}
	var c *Conn
	if err := c.Close(); err != nil {
		t.Errorf("(*Conn)(nil).Close() = %v", err)
	}
}
