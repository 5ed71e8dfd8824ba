package rdmacm

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/uverbs"
)

func TestSockaddrRoundTrip(t *testing.T) {
	for _, s := range []string{"10.77.0.1:7471", "0.0.0.0:0", "[::]:7174", "[fe80::5054:ff:fe12:3401%3]:1", "[2001:db8::1]:65535"} {
		ap := netip.MustParseAddrPort(s)
		var b [128]byte
		n, err := putSockaddr(b[:], ap)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want := sizeofSockaddrIn6
		if ap.Addr().Is4() {
			want = sizeofSockaddrIn
		}
		if n != want {
			t.Errorf("%s: size %d, want %d", s, n, want)
		}
		if got := sockaddr(b[:n]); got != ap {
			t.Errorf("%s: decoded %s", s, got)
		}
	}
	var b [128]byte
	if _, err := putSockaddr(b[:], netip.AddrPort{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("zero address: %v", err)
	}
	if _, err := putSockaddr(b[:], netip.MustParseAddrPort("[fe80::1%no-such-if0]:1")); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("unknown zone: %v", err)
	}
}

func TestSockaddrIB(t *testing.T) {
	var b [sizeofSockaddrIB]byte
	binary.LittleEndian.PutUint16(b[0:], afIB)
	gid := netip.MustParseAddr("fe80::2:c903:a:b")
	a16 := gid.As16()
	copy(b[8:24], a16[:])
	binary.BigEndian.PutUint64(b[24:], 0x0000000001061d4f) // RDMA_PS_TCP << 16 | 7503
	if got := sockaddr(b[:]); got != netip.AddrPortFrom(gid, 7503) {
		t.Errorf("AF_IB: %s", got)
	}
	if got := sockaddr(b[:20]); got.IsValid() {
		t.Errorf("short AF_IB: %s", got)
	}
}

func TestDecodePaths(t *testing.T) {
	b := make([]byte, 8+2*72)
	binary.LittleEndian.PutUint32(b, 5) // more than the buffer holds
	rec := b[8+8 : 8+72]
	rec[8], rec[24] = 0xfe, 0xfe
	binary.BigEndian.PutUint16(rec[40:], 0x11)
	binary.BigEndian.PutUint32(rec[44:], 0x12345<<8|64)
	rec[49] = 0x80 | 1
	binary.BigEndian.PutUint16(rec[50:], 0xffff)
	binary.BigEndian.PutUint16(rec[52:], 3)
	rec[54] = 0x80 | 5
	binary.LittleEndian.PutUint32(b[8:], abi.IB_PATH_PRIMARY|abi.IB_PATH_GMP)
	p := decodePaths(b)
	if len(p) != 2 {
		t.Fatalf("%d paths, want the 2 the buffer holds", len(p))
	}
	want := PathRecord{Flags: abi.IB_PATH_PRIMARY | abi.IB_PATH_GMP, DLID: 0x11, FlowLabel: 0x12345, HopLimit: 64,
		Reversible: true, NumbPath: 1, PKey: 0xffff, SL: 3, MTU: 5}
	want.DGID[0], want.SGID[0] = 0xfe, 0xfe
	if p[0] != want {
		t.Errorf("path %+v\nwant %+v", p[0], want)
	}
	if decodePaths(b[:7]) != nil {
		t.Error("short buffer decoded")
	}
}

func TestNames(t *testing.T) {
	if s := EventEstablished.String(); s != "RDMA_CM_EVENT_ESTABLISHED" {
		t.Error(s)
	}
	if s := EventTimewaitExit.String(); s != "RDMA_CM_EVENT_TIMEWAIT_EXIT" {
		t.Error(s)
	}
	if s := EventType(99).String(); s != "UNKNOWN EVENT (99)" {
		t.Error(s)
	}
	if s := RejectInvalidServiceID.String(); s != "invalid service ID (nobody listens) (8)" {
		t.Error(s)
	}
	if s := RejectReason(77).String(); s != "reject reason 77" {
		t.Error(s)
	}
	if PortSpaceUDP.String() != "udp" || PortSpace(1).String() != "port space 1" {
		t.Error(PortSpaceUDP, PortSpace(1))
	}
}

func TestEventErr(t *testing.T) {
	ev := &Event{Type: EventAddrError, Status: -int32(syscall.ETIMEDOUT)}
	if err := ev.Err(); !errors.Is(err, syscall.ETIMEDOUT) {
		t.Errorf("ADDR_ERROR: %v", err)
	}
	ev = &Event{Type: EventRejected, Status: 28, Conn: ConnParam{PrivateData: []byte("no")}}
	var rej *RejectError
	if err := ev.Err(); !errors.As(err, &rej) || rej.Reason != RejectConsumerDefined || string(rej.PrivateData) != "no" || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("REJECTED: %v", err)
	}
	if err := (&Event{Type: EventEstablished}).Err(); err != nil {
		t.Errorf("ESTABLISHED: %v", err)
	}
}

// TestNilAndZero: methods of nil or zero values answer EINVAL and do not
// panic.
func TestNilAndZero(t *testing.T) {
	var ch *EventChannel
	if _, err := ch.CreateID(PortSpaceTCP); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil channel CreateID: %v", err)
	}
	if _, err := ch.GetEvent(context.TODO()); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil channel GetEvent: %v", err)
	}
	if err := ch.Close(); !errors.Is(err, syscall.EINVAL) || ch.Fd() != -1 {
		t.Errorf("nil channel Close (%v) or Fd", err)
	}
	if _, err := new(EventChannel).CreateID(PortSpaceTCP); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("zero channel: %v", err)
	}
	var id *ID
	for name, err := range map[string]error{
		"bind":    id.Bind(netip.MustParseAddrPort("10.0.0.1:1")),
		"resolve": id.ResolveAddr(netip.AddrPort{}, netip.MustParseAddrPort("10.0.0.1:1"), 0),
		"route":   id.ResolveRoute(0),
		"listen":  id.Listen(1),
		"connect": id.Connect(nil),
		"accept":  id.Accept(nil),
		"reject":  id.Reject(nil),
		"disc":    id.Disconnect(),
		"tos":     id.SetTOS(1),
		"migrate": id.Migrate(nil),
		"join":    id.JoinMulticast(netip.MustParseAddr("239.1.1.1"), false),
		"leave":   id.LeaveMulticast(netip.MustParseAddr("239.1.1.1")),
	} {
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("nil ID %s: %v", name, err)
		}
	}
	if _, err := id.CreateQP(nil, uverbs.QPInitAttr{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil ID CreateQP: %v", err)
	}
	if _, err := id.QueryAddr(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil ID QueryAddr: %v", err)
	}
	if err := id.Close(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil ID Close: %v, want EINVAL", err)
	}
	if err := id.DestroyQP(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil ID DestroyQP: %v, want EINVAL", err)
	}
	if id.Verbs() != nil || id.PD() != nil || id.QP() != nil || id.Port() != 0 || id.String() != "<nil>" {
		t.Error("nil ID accessors")
	}
	var ev *Event
	ev.Ack()
	if ev.String() != "<nil>" || !errors.Is(ev.Err(), syscall.EINVAL) {
		t.Errorf("nil event: %q, %v", ev.String(), ev.Err())
	}
}

func TestNewEventChannelMissing(t *testing.T) {
	_, err := NewEventChannel(&Options{Path: filepath.Join(t.TempDir(), "rdma_cm")})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing device: %v", err)
	}
	if want := "modprobe rdma_ucm"; !strings.Contains(err.Error(), want) {
		t.Errorf("%v: no %q", err, want)
	}
}

// FuzzProcessEvent hands the event processing any response the kernel
// could write, for IDs of every kind on a channel without a device: it
// must not panic, and private data stays within the event.
func FuzzProcessEvent(f *testing.F) {
	var r abi.RdmaUcmEventResp
	for _, typ := range []EventType{EventConnectRequest, EventEstablished, EventRejected, EventMulticastJoin, EventAddrResolved, EventConnectResponse, 99} {
		r.Event, r.Id, r.Uid = uint32(typ), 1, 1
		f.Add(append([]byte(nil), bytesOf(&r)...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r abi.RdmaUcmEventResp
		copy(bytesOf(&r), b)
		ch := &EventChannel{ids: map[uint32]*ID{}, uids: map[uint64]*ID{}, mcs: map[uint64]*mcast{}}
		rc := &ID{ps: PortSpaceTCP, qpType: 2, handle: 1, uid: 1, ch: ch}
		ud := &ID{ps: PortSpaceUDP, qpType: 4, handle: 2, uid: 2, ch: ch}
		for _, id := range []*ID{rc, ud} {
			ch.ids[id.handle], ch.uids[id.uid] = id, id
		}
		ch.mcs[1] = &mcast{id: ud, uid: 1}
		ev := ch.process(&r)
		if ev == nil {
			return
		}
		if len(ev.Conn.PrivateData) > len(ev.private) || len(ev.UD.PrivateData) > len(ev.private) {
			t.Fatal("private data past the event")
		}
		_ = ev.String()
		ev.Ack()
	})
}

func TestLayoutOfScratch(t *testing.T) {
	// The largest command fits the scratch.
	for name, n := range map[string]uintptr{
		"accept": unsafe.Sizeof(abi.RdmaUcmAccept{}), "connect": unsafe.Sizeof(abi.RdmaUcmConnect{}),
		"resolve addr": unsafe.Sizeof(abi.RdmaUcmResolveAddr{}), "reject": unsafe.Sizeof(abi.RdmaUcmReject{}),
		"join": unsafe.Sizeof(abi.RdmaUcmJoinMcast{}),
	} {
		if n > unsafe.Sizeof(cmdScratch{}.buf)-8 {
			t.Errorf("%s: %d bytes do not fit", name, n)
		}
	}
	if unsafe.Sizeof(abi.RdmaUcmQueryAddrResp{}) > unsafe.Sizeof(cmdScratch{}.resp) {
		t.Error("query response does not fit")
	}
}
