//go:build integration

package flow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/uverbs"
)

var (
	dstA = [6]byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05}
	dstB = [6]byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x06}
	ipA  = [4]byte{10, 1, 0, 1}
	ipB  = [4]byte{10, 1, 0, 2}
	ip6A = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}
	ip6B = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}
	ones = [4]byte{255, 255, 255, 255}
	all6 = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// countingFlow creates a flow of specs with a packets+bytes counters
// object and returns the object.
func countingFlow(t *testing.T, qp *uverbs.QP, prio uint16, flags flow.AttrFlags, specs ...flow.Spec) *counters.Object {
	t.Helper()
	cs, err := counters.Create(qp.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for i, d := range []counters.Description{counters.Packets, counters.Bytes} {
		if err := cs.Attach(counters.AttachAttr{Desc: d, Index: uint32(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	f, err := flow.Create(qp, &flow.Attr{Port: 1, Priority: prio, Flags: flags, Specs: append(specs, &flow.Count{Counters: cs})})
	if err != nil {
		t.Fatalf("flow %v: %v", specs, err)
	}
	t.Cleanup(func() { f.Close() })
	return cs
}

func values(t *testing.T, cs *counters.Object) [2]uint64 {
	t.Helper()
	var v [2]uint64
	if err := cs.Read(v[:], 0); err != nil {
		t.Fatal(err)
	}
	return v
}

// Every spec with a packet meaning, on real frames: a flow counts the
// frames its spec matches, exactly, and none of the near misses sent with
// them (each miss differs in one field).
func TestVMSpecsMatchRealFrames(t *testing.T) {
	vmtest.RequireMock(t)
	udp := func(dst [6]byte, src, dstIP [4]byte, sport, dport uint16) *vmtest.Frame {
		return &vmtest.Frame{Dst: dst, IPv4: &vmtest.IPv4{Src: src, Dst: dstIP}, Proto: 17, SrcPort: sport, DstPort: dport, Len: 100}
	}
	eth := func(et uint16) *flow.Eth {
		return &flow.Eth{Value: flow.EthFilter{DstMAC: dstA, EtherType: et}, Mask: flow.EthFilter{DstMAC: all, EtherType: 0xffff}}
	}
	for _, tc := range []struct {
		name  string
		specs []flow.Spec
		hit   *vmtest.Frame
		miss  []*vmtest.Frame
	}{
		{"ETH destination MAC", []flow.Spec{&flow.Eth{Value: flow.EthFilter{DstMAC: dstA}, Mask: flow.EthFilter{DstMAC: all}}},
			&vmtest.Frame{Dst: dstA, Len: 64}, []*vmtest.Frame{{Dst: dstB, Len: 64}}},
		{"ETH source MAC and ethertype", []flow.Spec{&flow.Eth{
			Value: flow.EthFilter{SrcMAC: flow.MAC{2, 0, 0, 0, 0, 9}, EtherType: 0x88b6},
			Mask:  flow.EthFilter{SrcMAC: all, EtherType: 0xffff}}},
			&vmtest.Frame{Dst: dstB, Src: []byte{2, 0, 0, 0, 0, 9}, EtherType: 0x88b6, Len: 70},
			[]*vmtest.Frame{{Dst: dstB, Src: []byte{2, 0, 0, 0, 0, 8}, EtherType: 0x88b6, Len: 70}, {Dst: dstB, Src: []byte{2, 0, 0, 0, 0, 9}, EtherType: 0x88b7, Len: 70}}},
		{"ETH VLAN", []flow.Spec{&flow.Eth{Value: flow.EthFilter{DstMAC: dstA, VLANTag: 100}, Mask: flow.EthFilter{DstMAC: all, VLANTag: 0x0fff}}},
			&vmtest.Frame{Dst: dstA, VLAN: 100, Len: 80}, []*vmtest.Frame{{Dst: dstA, VLAN: 101, Len: 80}, {Dst: dstA, Len: 80}}},
		{"IPv4 addresses", []flow.Spec{eth(0x0800), &flow.IPv4{Value: flow.IPv4Filter{Src: ipA, Dst: ipB}, Mask: flow.IPv4Filter{Src: ones, Dst: ones}}},
			udp(dstA, ipA, ipB, 1, 2), []*vmtest.Frame{udp(dstA, ipB, ipB, 1, 2), udp(dstA, ipA, ipA, 1, 2)}},
		{"UDP ports", []flow.Spec{eth(0x0800), &flow.IPv4{}, &flow.UDP{Value: flow.PortFilter{DstPort: 5000, SrcPort: 6000}, Mask: flow.PortFilter{DstPort: 0xffff, SrcPort: 0xffff}}},
			udp(dstA, ipA, ipB, 6000, 5000), []*vmtest.Frame{udp(dstA, ipA, ipB, 6000, 5001), udp(dstA, ipA, ipB, 6001, 5000),
				{Dst: dstA, IPv4: &vmtest.IPv4{Src: ipA, Dst: ipB}, Proto: 6, SrcPort: 6000, DstPort: 5000, Len: 100}}},
		{"TCP port", []flow.Spec{eth(0x0800), &flow.IPv4{}, &flow.TCP{Value: flow.PortFilter{DstPort: 80}, Mask: flow.PortFilter{DstPort: 0xffff}}},
			&vmtest.Frame{Dst: dstA, IPv4: &vmtest.IPv4{Src: ipA, Dst: ipB}, Proto: 6, SrcPort: 1234, DstPort: 80, Len: 120},
			[]*vmtest.Frame{{Dst: dstA, IPv4: &vmtest.IPv4{Src: ipA, Dst: ipB}, Proto: 6, SrcPort: 1234, DstPort: 81, Len: 120}, udp(dstA, ipA, ipB, 1234, 80)}},
		{"IPv6 addresses and flow label", []flow.Spec{eth(0x86dd), &flow.IPv6{
			Value: flow.IPv6Filter{Src: ip6A, Dst: ip6B, FlowLabel: 0x12345}, Mask: flow.IPv6Filter{Src: all6, Dst: all6, FlowLabel: 0xfffff}}},
			&vmtest.Frame{Dst: dstA, IPv6: &vmtest.IPv6{Src: ip6A, Dst: ip6B, FlowLabel: 0x12345}, Proto: 17, SrcPort: 1, DstPort: 2, Len: 110},
			[]*vmtest.Frame{{Dst: dstA, IPv6: &vmtest.IPv6{Src: ip6A, Dst: ip6B, FlowLabel: 0x12346}, Proto: 17, SrcPort: 1, DstPort: 2, Len: 110},
				{Dst: dstA, IPv6: &vmtest.IPv6{Src: ip6B, Dst: ip6B, FlowLabel: 0x12345}, Proto: 17, SrcPort: 1, DstPort: 2, Len: 110}}},
		{"VXLAN VNI and inner headers", []flow.Spec{eth(0x0800), &flow.IPv4{}, &flow.UDP{Value: flow.PortFilter{DstPort: 4789}, Mask: flow.PortFilter{DstPort: 0xffff}},
			&flow.VXLAN{VNI: 42, Mask: 0xffffff},
			&flow.Eth{Inner: true, Value: flow.EthFilter{DstMAC: dstB}, Mask: flow.EthFilter{DstMAC: all}},
			&flow.UDP{Inner: true, Value: flow.PortFilter{DstPort: 7}, Mask: flow.PortFilter{DstPort: 0xffff}}},
			&vmtest.Frame{Dst: dstA, IPv4: &vmtest.IPv4{Src: ipA, Dst: ipB}, Proto: 17, SrcPort: 999, DstPort: 4789,
				VXLAN: &vmtest.VXLAN{VNI: 42, Inner: udp(dstB, ipA, ipB, 3, 7)}, Len: 150},
			[]*vmtest.Frame{
				{Dst: dstA, IPv4: &vmtest.IPv4{Src: ipA, Dst: ipB}, Proto: 17, SrcPort: 999, DstPort: 4789, VXLAN: &vmtest.VXLAN{VNI: 43, Inner: udp(dstB, ipA, ipB, 3, 7)}, Len: 150},
				{Dst: dstA, IPv4: &vmtest.IPv4{Src: ipA, Dst: ipB}, Proto: 17, SrcPort: 999, DstPort: 4789, VXLAN: &vmtest.VXLAN{VNI: 42, Inner: udp(dstA, ipA, ipB, 3, 7)}, Len: 150},
				{Dst: dstA, IPv4: &vmtest.IPv4{Src: ipA, Dst: ipB}, Proto: 17, SrcPort: 999, DstPort: 4789, VXLAN: &vmtest.VXLAN{VNI: 42, Inner: udp(dstB, ipA, ipB, 3, 8)}, Len: 150}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, qp := mlx5(t)
			cs := countingFlow(t, qp, 0, flow.FlagDontTrap, tc.specs...)
			vmtest.SendFrames(t, 3, tc.hit)
			vmtest.SendFrames(t, 2, tc.miss...)
			want := [2]uint64{3, 3 * uint64(len(tc.hit.Bytes()))}
			if got := values(t, cs); got != want {
				t.Errorf("[packets bytes] = %v, want %v (3 hits of %d bytes, %d near misses twice)", got, want, len(tc.hit.Bytes()), len(tc.miss))
			}
		})
	}
}

// Priorities, as mlx5 steers: the matching flow of the highest priority
// (lowest number) counts a frame; a DONT_TRAP flow counts it and lets it
// go on to the next matching flow; any other flow takes it.
func TestVMPriorityAndDontTrap(t *testing.T) {
	vmtest.RequireMock(t)
	_, _, qp := mlx5(t)
	spec := func() flow.Spec {
		return &flow.Eth{Value: flow.EthFilter{DstMAC: dstA}, Mask: flow.EthFilter{DstMAC: all}}
	}
	watch := countingFlow(t, qp, 1, flow.FlagDontTrap, spec()) // sees everything, passes it on
	take := countingFlow(t, qp, 2, 0, spec())                  // takes what reaches it
	never := countingFlow(t, qp, 3, 0, spec())                 // reached by nothing
	vmtest.SendFrames(t, 5, &vmtest.Frame{Dst: dstA, Len: 64})
	got := fmt.Sprint(values(t, watch), values(t, take), values(t, never))
	if want := "[5 320] [5 320] [0 0]"; got != want {
		t.Errorf("prio 1 DONT_TRAP, prio 2, prio 3: %s, want %s", got, want)
	}
	// A flow of a higher priority than all of them, without DONT_TRAP,
	// takes the frames first.
	first := countingFlow(t, qp, 0, 0, spec())
	vmtest.SendFrames(t, 2, &vmtest.Frame{Dst: dstA, Len: 64})
	got = fmt.Sprint(values(t, first), values(t, watch), values(t, take))
	if want := "[2 128] [5 320] [5 320]"; got != want {
		t.Errorf("prio 0 added: %s, want %s", got, want)
	}
	if l := strings.Join(vmtest.MockRequests(t), "\n"); !strings.Contains(l, "flags=0x2") {
		t.Errorf("no DONT_TRAP flow recorded:\n%s", l)
	}
}
