package counters_test

import (
	"fmt"
	"testing"

	"github.com/purerdma/rdma/counters"
)

// TestReadIntoStackAtEveryDepth reads into an array on the reading
// goroutine's stack, from a fresh goroutine at each of many call depths,
// so that at some depth a function between the request's building and
// the system call grows the stack and the runtime copies it elsewhere.
// The kernel (here a fake's Go code, which may move the stack itself)
// must still write the values where the array is when it writes them:
// an address taken before the move names the old stack, freed memory,
// and the values read would be lost. TestVMReadIntoStackAtEveryDepth is
// the same on mock0's kernel.
func TestReadIntoStackAtEveryDepth(t *testing.T) {
	e, cs := boundCounters(t)
	e.frames(macA, 3, 100)
	if bad := readsAtEveryDepth(cs, 600, [2]uint64{3, 300}); bad != "" {
		t.Fatal(bad)
	}
}

// readsAtEveryDepth reads cs at depths 0 to n-1 (readAtDepth), each in a
// goroutine of its own, and says where a read did not see want.
func readsAtEveryDepth(cs *counters.Object, n int, want [2]uint64) string {
	for depth := range n {
		type result struct {
			got [2]uint64
			err error
		}
		done := make(chan result, 1)
		go func() {
			var r result
			r.err = readAtDepth(cs, depth, &r.got)
			done <- r
		}()
		if r := <-done; r.err != nil || r.got != want {
			return fmt.Sprintf("depth %d: Read = %#x, %v; want %#x (%#x: not written)", depth, r.got, r.err, want, notRead)
		}
	}
	return ""
}

// readAtDepth recurses depth frames of about 64 bytes, then reads into an
// array of its frame, which it fills first with a value no read returns.
//
//go:noinline
func readAtDepth(cs *counters.Object, depth int, out *[2]uint64) error {
	var pad [4]uint64
	if depth > 0 {
		err := readAtDepth(cs, depth-1, out)
		pad[depth%4] = uint64(depth)
		out[1] += pad[(depth+1)%4] // 0: keeps pad in the frame
		return err
	}
	vals := [2]uint64{notRead, notRead}
	err := cs.Read(vals[:], counters.PreferCached)
	*out = vals
	return err
}

// notRead is what readAtDepth's array holds until a read writes it.
const notRead = 0xdead
