//go:build integration

package counters_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/uverbs"
)

// TestVMSeedExampleEndToEnd: the ibv_read_counters(3) example as a user
// runs it on mock0, whose mlx5 model now fills RAW_PACKET receive queues:
// a counters object (packets at index 0, bytes at 1) attached statically
// to an L2 flow on a RAW_PACKET QP with receives posted; n frames sent on
// the wire to the flow's MAC arrive in the QP's receive queue, every byte
// as sent, and are counted, n packets and n frames' bytes. Frames to
// another MAC are neither received nor counted.
func TestVMSeedExampleEndToEnd(t *testing.T) {
	vmtest.RequireMock(t)
	const n, size = 40, 300
	c, err := uverbs.Open(vmtest.MockDev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cs, err := counters.Create(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []counters.Description{counters.Packets, counters.Bytes} {
		if err := cs.Attach(counters.AttachAttr{Desc: d, Index: uint32(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 2 * n})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxRecvWR: n, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateInit, Port: 1}, uverbs.QPAttrState|uverbs.QPAttrPort); err != nil {
		t.Fatal(err)
	}
	if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	mr, err := pd.AllocMR(n*2048, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	wrs := make([]uverbs.RecvWR, n)
	for i := range wrs {
		sge, _ := mr.SGE(i*2048, 2048)
		wrs[i] = uverbs.RecvWR{ID: uint64(i), SGL: []uverbs.SGE{sge}}
	}
	if got, err := qp.PostRecv(wrs); err != nil || got != n {
		t.Fatalf("post %d receives: %d, %v", n, got, err)
	}
	dst := flow.MAC{0x02, 0x5e, 0xed, 0, 0, 1}
	all := flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	f, err := flow.Create(qp, &flow.Attr{Port: 1, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: dst}, Mask: flow.EthFilter{DstMAC: all}},
		&flow.Count{Counters: cs},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	payload := make([]byte, size-14)
	for i := range payload {
		payload[i] = byte(i*7 + 1)
	}
	frame := &vmtest.Frame{Dst: dst, Src: []byte{0x02, 0, 0, 0, 0, 0x77}, EtherType: 0x88b6, Payload: payload, Len: size}
	other := &vmtest.Frame{Dst: [6]byte{0x02, 0x5e, 0xed, 0, 0, 2}, Src: make([]byte, 6), Len: size}
	vmtest.SendFrames(t, n, frame, other)

	wc := make([]uverbs.WC, 8)
	got := 0
	deadline := time.Now().Add(30 * time.Second)
	for got < n && time.Now().Before(deadline) {
		k, err := cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wc[:k] {
			if w.Status != uverbs.WCSuccess || w.Opcode != uverbs.WCRecv || w.ByteLen != size {
				t.Fatalf("completion %d: %+v", got, w)
			}
			b := mr.Buf()[w.ID*2048:][:size]
			if !bytes.Equal(b, frame.Bytes()) {
				t.Fatalf("frame %d (wr %d) arrived as\n% x\nsent\n% x", got, w.ID, b, frame.Bytes())
			}
			got++
		}
	}
	if got != n {
		t.Fatalf("%d of %d frames arrived in the RAW_PACKET QP's receive queue", got, n)
	}
	if k, _ := cq.Poll(wc); k != 0 {
		t.Errorf("%d more completions than frames sent to the flow's MAC", k)
	}
	values := make([]uint64, 2)
	if err := cs.Read(values, 0); err != nil {
		t.Fatal(err)
	}
	if values[0] != n || values[1] != n*size {
		t.Errorf("counted PACKETS = %d, BYTES = %d; want %d, %d", values[0], values[1], n, n*size)
	}
	t.Logf("%s (kernel %s): %d frames of %d bytes sent, %d received in the RAW_PACKET QP, every byte as sent; PACKETS = %d, BYTES = %d",
		vmtest.MockDev, vmtest.Kernel(), n, size, got, values[0], values[1])
}

// TestVMRawPacketSend: frames a RAW_PACKET QP on mock0 sends (the
// library's mlx5 provider: an Ethernet segment with the first 18 bytes
// inline, the rest from a data segment) go out on mock0's port and arrive
// on the other end of the veth pair, every byte as posted.
func TestVMRawPacketSend(t *testing.T) {
	vmtest.RequireMock(t)
	const n, size = 20, 200
	// Capture on veth0 first: the frames of ethertype 0x88b7.
	ifi, err := net.InterfaceByName(vmtest.Net0)
	if err != nil {
		t.Fatal(err)
	}
	const ethType = 0x88b7
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(ethType)))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(ethType), Ifindex: ifi.Index}); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10}); err != nil {
		t.Fatal(err)
	}

	c, err := uverbs.Open(vmtest.MockDev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 2 * n})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: n, MaxSendSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		attr uverbs.QPAttr
		mask uverbs.QPAttrMask
	}{
		{uverbs.QPAttr{State: uverbs.QPStateInit, Port: 1}, uverbs.QPAttrState | uverbs.QPAttrPort},
		{uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState},
		{uverbs.QPAttr{State: uverbs.QPStateRTS}, uverbs.QPAttrState},
	} {
		if err := qp.Modify(&a.attr, a.mask); err != nil {
			t.Fatal(err)
		}
	}
	mr, err := pd.AllocMR(n*size, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	frames := make([][]byte, n)
	for i := range frames {
		f := mr.Buf()[i*size:][:size]
		copy(f, []byte{0x02, 0x5e, 0xed, 0, 0, 3, 0x02, 0, 0, 0, 0, 0x78, ethType >> 8, ethType & 0xff})
		for j := 14; j < size; j++ {
			f[j] = byte(i + j)
		}
		frames[i] = f
		sge, _ := mr.SGE(i*size, size)
		if _, err := qp.PostSend([]uverbs.SendWR{{ID: uint64(i), Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{sge}}}); err != nil {
			t.Fatal(err)
		}
	}
	wc := make([]uverbs.WC, n)
	for done, deadline := 0, time.Now().Add(10*time.Second); done < n; {
		k, err := cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wc[:k] {
			if w.Status != uverbs.WCSuccess || w.ID != uint64(done) {
				t.Fatalf("send completion %d: %+v", done, w)
			}
			done++
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sends completed", done, n)
		}
	}
	buf := make([]byte, 2048)
	for i := range n {
		k, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			t.Fatalf("frame %d on veth0: %v", i, err)
		}
		if !bytes.Equal(buf[:k], frames[i]) {
			t.Fatalf("frame %d arrived on veth0 as\n% x\nposted\n% x", i, buf[:k], frames[i])
		}
	}
	t.Logf("%s (kernel %s): %d frames of %d bytes sent from a RAW_PACKET QP arrived on veth0, in order, every byte as posted",
		vmtest.MockDev, vmtest.Kernel(), n, size)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
