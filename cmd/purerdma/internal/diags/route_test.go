package diags

import (
	"strings"
	"testing"
)

// TestRouteToolsBadInput runs ibroute, ibtracert and ibportstate on
// command lines of every shape with no fabric to open (an ibsim socket
// nobody serves): each ends with C's status for it (2 for a usage, 255
// for a failure, 0 for -V), never a panic. What they print is checked
// against infiniband-diags' on the simulated fabrics
// (fabric_route_test.go).
func TestRouteToolsBadInput(t *testing.T) {
	env := &Env{IBSim: "purerdma-test-none-" + t.Name() + ":h1"}
	odd := [][]string{
		{}, {"-h"}, {"-V"}, {"--"}, {"-"}, {"--bogus"}, {"-t"}, {"-t", "-5", "1"}, {"-t", "99999999999", "1"},
		{"-s", "0xffff", "1"}, {"-y", "zz", "1"}, {"-z"}, {"-D", "", ""}, {"-D", strings.Repeat("1,", 100), "1"},
		{"-G", "0", "0"}, {"-G", "-1", "-1"}, {"1", "-1", "-1"}, {"0x", "0x", "0x"}, {"99999999999999999999", "1"},
		{"--node-name-map"}, {"--ports-file"}, {"-m"}, {"-m", "-1", "1", "2"}, {"1", "1", "speed"}, {"1", "1", "mkey", ""},
		{"1", "1", "query", "query"}, {"1", "1", "lid", "-1"}, {"1", "1", "width", "255", "espeed", "99"},
		{"\x00", "\xff\xfe"}, {"-D", "0,1", "0", "disable"}, {"-M", "1", "0xffffffffff", "-0x10"},
	}
	for _, tool := range []string{"ibroute", "ibtracert", "ibportstate"} {
		for _, args := range odd {
			_, _, code := env.runTool(append([]string{tool}, args...)...)
			if code != 0 && code != 2 && code != 255 {
				t.Errorf("%s %q: exit status %d", tool, args, code)
			}
		}
	}
}
