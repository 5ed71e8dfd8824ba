package rdmatool

import (
	"testing"

	"github.com/purerdma/rdma/rdmanl"
)

// TestDevPort pins rdma's DEV[/PORT] rules for link show (strict) and
// statistic (not strict), the forms the VM tests compare with iproute2.
func TestDevPort(t *testing.T) {
	devs := []rdmanl.Device{{Name: "rxe0", NumPorts: 1}, {Name: "mock0", NumPorts: 2}}
	for _, c := range []struct {
		arg    string
		strict bool
		port   uint32
		ok     bool
	}{
		{"rxe0/1", true, 1, true},
		{"mock0/2", true, 2, true},
		{"mock0/3", true, 0, false},
		{"mock0/0", true, 0, false},
		{"mock0", true, 0, false},
		{"mock0/1x", true, 0, false},
		{"nosuch/1", true, 0, false},
		{"rxe0", false, 0, true},
		{"mock0/2", false, 2, true},
		{"mock0/2x", false, 2, true},
		{"mock0/x", false, 0, false},
		{"mock0/", false, 0, false},
		{"mock0/3", false, 0, false},
		{"nosuch", false, 0, false},
	} {
		name, port, ok := devPort(devs, c.arg, c.strict)
		if ok != c.ok || port != c.port || (ok && name == "") {
			t.Errorf("devPort(%q, strict %v) = %q, %d, %v; want port %d, ok %v", c.arg, c.strict, name, port, ok, c.port, c.ok)
		}
	}
}
