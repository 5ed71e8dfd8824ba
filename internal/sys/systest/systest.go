// Package systest holds the test support every package that opens
// descriptors shares: a TestMain body that fails the run when a test
// leaves an internal/sys descriptor open (the habit of cilium/ebpf's
// testutils).
package systest

import (
	"fmt"
	"os"
	"testing"

	"github.com/purerdma/rdma/internal/sys"
)

// Main runs the tests with descriptor stacks traced and returns the exit
// code: 1 when the tests passed but a descriptor is still open, listing
// each with the stack that opened it. Use it as
//
//	func TestMain(m *testing.M) { os.Exit(systest.Main(m)) }
func Main(m *testing.M) int {
	sys.TraceStacks = true
	code := m.Run()
	if live := sys.Live(); code == 0 && len(live) > 0 {
		fmt.Fprintln(os.Stderr, "leaked descriptors:")
		for _, l := range live {
			fmt.Fprintln(os.Stderr, "  "+l)
		}
		code = 1
	}
	return code
}
