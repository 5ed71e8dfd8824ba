package vmtest

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/purerdma/rdma/integration/internal/vmproto"
)

// The test-only mlx5-model device (integration/mockrdma): the guest's init
// loads it by default, bound to veth1, so frames sent from veth0 arrive on
// its port. It has verbs counters and flow steering, which rxe has not.
const (
	MockDev = vmproto.MockDev    // "mock0"
	MockNet = vmproto.MockNetDev // "veth1", the port's netdev
)

// HasMock reports whether mock0 is there (vmrun -mock=false leaves it out).
func HasMock() bool {
	_, err := os.Stat(filepath.Join(SysfsRoot, MockDev))
	return InGuest() && err == nil
}

// RequireMock skips the test unless it runs in the guest with mock0.
func RequireMock(t testing.TB) {
	t.Helper()
	Require(t)
	if !HasMock() {
		t.Skip("needs the test device mock0; vmrun loads it unless -mock=false")
	}
}

// MockRequests returns the device's record of the driver calls it
// received since the last ClearMockRequests, one line each, without
// pointers or handles (integration/mockrdma describes the lines).
func MockRequests(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vmproto.MockDebugfs, "requests"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// ClearMockRequests empties the device's record.
func ClearMockRequests(t testing.TB) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(vmproto.MockDebugfs, "requests"), []byte("clear\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ReloadMock unloads the module and loads it again with params (netdev=
// is always veth1), then waits until the port is ACTIVE. The test puts the
// default parameters back when it ends. Every context on mock0 must be
// closed first (the module is in use otherwise: EBUSY).
func ReloadMock(t testing.TB, params string) {
	t.Helper()
	load := func(p string) error {
		if err := unix.DeleteModule("mockrdma", 0); err != nil && err != unix.ENOENT {
			return fmt.Errorf("unload mockrdma: %w", err)
		}
		f, err := os.Open(vmproto.MockModule)
		if err != nil {
			return err
		}
		defer f.Close()
		p = strings.TrimSpace("netdev=" + MockNet + " " + p)
		if err := unix.FinitModule(int(f.Fd()), p, 0); err != nil {
			return fmt.Errorf("load mockrdma %s: %w", p, err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if s, _ := PortState(MockDev); s == "4: ACTIVE" {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ACTIVE 30 s after loading it", MockDev)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := load(params); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := load(""); err != nil {
			t.Error(err)
		}
	})
}

// Frame is an Ethernet frame the tests send to mock0's port.
type Frame struct {
	Dst       [6]byte
	Src       net.HardwareAddr // nil: veth0's MAC
	VLAN      uint16           // 802.1Q TCI; 0: untagged
	EtherType uint16           // without IPv4/IPv6; 0: 0x88b5 (local experimental)
	IPv4      *IPv4
	IPv6      *IPv6
	// TCP or UDP ports (Proto says which, 6 or 17) after the IP header.
	Proto            uint8
	SrcPort, DstPort uint16
	// VXLAN puts Inner in a VXLAN packet (UDP to port 4789) with this VNI.
	VXLAN *VXLAN
	// Payload follows the headers (without IPv4/IPv6 only).
	Payload []byte
	// Len pads the frame with zeros to this many bytes, from the
	// destination MAC to the end of the payload (no FCS).
	Len int
}

// IPv4 is an IPv4 header's matchable fields.
type IPv4 struct {
	Src, Dst [4]byte
	TOS      uint8
}

// IPv6 is an IPv6 header's matchable fields.
type IPv6 struct {
	Src, Dst     [16]byte
	FlowLabel    uint32
	TrafficClass uint8
}

// VXLAN is a VXLAN header and the frame it carries.
type VXLAN struct {
	VNI   uint32
	Inner *Frame
}

// Bytes lays the frame out.
func (f *Frame) Bytes() []byte {
	src := f.Src
	if src == nil {
		src, _ = net.ParseMAC(MAC0)
	}
	b := append([]byte{}, f.Dst[:]...)
	b = append(b, src[:6]...)
	if f.VLAN != 0 {
		b = binary.BigEndian.AppendUint16(b, 0x8100)
		b = binary.BigEndian.AppendUint16(b, f.VLAN)
	}
	var l4 []byte
	if f.Proto != 0 {
		l4 = binary.BigEndian.AppendUint16(nil, f.SrcPort)
		l4 = binary.BigEndian.AppendUint16(l4, f.DstPort)
		if f.Proto == 17 {
			l4 = append(l4, 0, 0, 0, 0) // length, checksum (none)
		} else {
			l4 = append(l4, make([]byte, 16)...)
			l4[12] = 5 << 4 // data offset
		}
		if f.VXLAN != nil {
			l4 = append(l4, 0x08, 0, 0, 0)
			l4 = binary.BigEndian.AppendUint32(l4, f.VXLAN.VNI<<8)
			l4 = append(l4, f.VXLAN.Inner.Bytes()...)
		}
		if f.Proto == 17 {
			binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
		}
	}
	switch {
	case f.IPv4 != nil:
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		h := make([]byte, 20)
		h[0], h[1], h[8], h[9] = 0x45, f.IPv4.TOS, 64, f.Proto
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(l4)))
		copy(h[12:], f.IPv4.Src[:])
		copy(h[16:], f.IPv4.Dst[:])
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(h[i:]))
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
		b = append(append(b, h...), l4...)
	case f.IPv6 != nil:
		b = binary.BigEndian.AppendUint16(b, 0x86dd)
		h := make([]byte, 40)
		binary.BigEndian.PutUint32(h, 6<<28|uint32(f.IPv6.TrafficClass)<<20|f.IPv6.FlowLabel&0xfffff)
		binary.BigEndian.PutUint16(h[4:], uint16(len(l4)))
		h[6], h[7] = f.Proto, 64
		copy(h[8:], f.IPv6.Src[:])
		copy(h[24:], f.IPv6.Dst[:])
		b = append(append(b, h...), l4...)
	default:
		et := f.EtherType
		if et == 0 {
			et = 0x88b5
		}
		b = binary.BigEndian.AppendUint16(b, et)
		b = append(b, f.Payload...)
	}
	if len(b) < f.Len {
		b = append(b, make([]byte, f.Len-len(b))...)
	}
	return b
}

var fenceSeq atomic.Uint64

// SendFrames sends each frame n times from veth0, so that it arrives on
// mock0's port, and returns once mock0 has seen all of them: the frames
// and a closing fence frame go out from one CPU, whose backlog the
// receiving side works through in order, and the device's fence file
// shows the fence's number when everything before it was matched.
func SendFrames(t testing.TB, n int, frames ...*Frame) {
	t.Helper()
	if err := Send(n, frames...); err != nil {
		t.Fatal(err)
	}
}

// Send is SendFrames for programs: it returns an error instead.
func Send(n int, frames ...*Frame) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var one unix.CPUSet
	one.Set(0)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return fmt.Errorf("pin the sender to CPU 0: %w", err)
	}
	ifi, err := net.InterfaceByName(Net0)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_PACKET socket: %w", err)
	}
	defer unix.Close(fd)
	to := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
	for _, f := range frames {
		b := f.Bytes()
		for i := 0; i < n; i++ {
			if err := unix.Sendto(fd, b, 0, to); err != nil {
				return fmt.Errorf("send a frame on %s: %w", Net0, err)
			}
		}
	}
	seq := fenceSeq.Add(1) + uint64(time.Now().UnixNano())&0xffffffff00000000
	fence := (&Frame{Dst: [6]byte{0x02, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe}, EtherType: 0x88b5}).Bytes()
	fence = append(fence, "MOCKFENCE"...)
	fence = binary.LittleEndian.AppendUint64(fence, seq)
	fence = append(fence, make([]byte, 64-len(fence)%64)...)
	if err := unix.Sendto(fd, fence, 0, to); err != nil {
		return fmt.Errorf("send the fence frame: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(vmproto.MockDebugfs, "fence"))
		if err != nil {
			return err
		}
		if got, _ := strconv.ParseUint(strings.Fields(string(b))[0], 10, 64); got == seq {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not see the fence frame within 30 s (fence file: %q)", MockDev, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// WaitQuiet waits until mock0's port has seen no frame for quiet (30 s at
// most), so that a test that counts everything sent to veth1's MAC counts
// only its own frames, not the tail of an earlier test's RoCE traffic.
func WaitQuiet(t testing.TB, quiet time.Duration) {
	t.Helper()
	frames := func() string {
		b, err := os.ReadFile(filepath.Join(vmproto.MockDebugfs, "fence"))
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b)); len(f) == 2 {
			return f[1]
		}
		return string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	last, since := frames(), time.Now()
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			t.Fatalf("%s's port did not go quiet for %v within 30 s", MockDev, quiet)
		}
		time.Sleep(50 * time.Millisecond)
		if n := frames(); n != last {
			last, since = n, time.Now()
		}
	}
}
