package sys

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifconf is struct ifconf on the 64-bit hosts purerdma supports: the
// length, then the address of the buffer SIOCGIFCONF fills.
type ifconf struct {
	len int32
	_   int32
	buf uint64
}

// IoctlAt gives the kernel the address of memory on the caller's stack
// as it is at the system call: SIOCGIFCONF writes the interfaces through
// the address inside its request (as a counters read does), into an
// array of a goroutine's frame at each of many depths, where the stack
// has grown and moved before the call at some of them.
func TestIoctlAtStack(t *testing.T) {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no AF_INET socket to ask SIOCGIFCONF: %v", err)
	}
	defer unix.Close(s)
	for depth := range 400 {
		done := make(chan string, 1)
		go func() { done <- ifconfAtDepth(s, depth) }()
		switch name := <-done; {
		case name == "":
			t.Fatalf("depth %d: SIOCGIFCONF wrote no interface where the buffer is", depth)
		case name == "(none)":
			t.Skip("SIOCGIFCONF lists no interface with an IPv4 address here")
		case name[0] == '(':
			t.Fatalf("depth %d: SIOCGIFCONF: %s", depth, name)
		}
	}
}

// ifconfAtDepth recurses depth frames, then asks SIOCGIFCONF into an
// array of its frame, zeroed first: it returns the first interface's
// name as the array holds it after the call ("" when nothing was written
// there, "(none)" when the kernel listed none).
//
//go:noinline
func ifconfAtDepth(s, depth int) string {
	var pad [4]uint64
	if depth > 0 {
		name := ifconfAtDepth(s, depth-1)
		pad[depth%4] = 1
		if pad[(depth+1)%4] != 0 {
			return name + "?" // never: keeps pad in the frame
		}
		return name
	}
	var buf [4 * unix.IFNAMSIZ * 5 / 2]byte // room for four struct ifreq (40 bytes)
	ifc := ifconf{len: int32(len(buf))}
	if err := IoctlAt(s, unix.SIOCGIFCONF, unsafe.Pointer(&ifc), &ifc.buf, unsafe.Pointer(&buf)); err != nil {
		return "(error " + err.Error() + ")"
	}
	if ifc.len == 0 {
		return "(none)"
	}
	n := 0
	for n < unix.IFNAMSIZ && buf[n] != 0 {
		n++
	}
	return string(buf[:n])
}
