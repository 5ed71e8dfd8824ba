package verbs

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

func TestUdaddyFlags(t *testing.T) {
	checkCmParse(t, parseUdaddy, nil, cmOpts{ps: rdmacm.PortSpaceUDP, conns: 1, count: 10, size: 100, port: "7174"})
	checkCmParse(t, parseUdaddy, []string{"-s", "10.77.0.1", "-b", "10.77.0.2", "-c10", "-C", "3", "-S", "512", "-t", "8", "--port", "7000"},
		cmOpts{dst: "10.77.0.1", haveDst: true, src: "10.77.0.2", ps: rdmacm.PortSpaceUDP, conns: 10, count: 3,
			size: 512, port: "7000", setTOS: true, tos: 8})
	var out, errb bytes.Buffer
	// -p is the port space, as in the C tool; -P names it.
	for _, c := range []struct {
		args []string
		ps   rdmacm.PortSpace
	}{{[]string{"-p", "0x2"}, rdmacm.PortSpaceIPoIB}, {[]string{"-p", "0x111"}, rdmacm.PortSpaceUDP},
		{[]string{"-P", "ipoib"}, rdmacm.PortSpaceIPoIB}, {[]string{"-P", "UDP"}, rdmacm.PortSpaceUDP}} {
		if o, err := parseUdaddy(c.args, &out, &errb); err != nil || o.ps != c.ps || o.port != "7174" {
			t.Errorf("%v: %v %+v", c.args, err, o)
		}
	}
	errb.Reset()
	if o, err := parseUdaddy([]string{"-P", "tcp"}, &out, &errb); err != nil || o.ps != rdmacm.PortSpaceUDP ||
		!strings.Contains(errb.String(), "Warning: unknown port space format") {
		t.Errorf("-P tcp: %v %+v %q", err, o, errb.String())
	}
	checkCmUsage(t, parseUdaddy, "udaddy", "0x111 for UDP (default), 0x2 for IPOIB",
		[]string{"-m"}, []string{"-S"}, []string{"-h"}, []string{"--port", "70000"}, []string{"--port", "x"})
}

// ipv4Header is a RoCE v2 packet's IPv4 header with a valid checksum.
func ipv4Header(src, dst [4]byte, tos, ttl byte) []byte {
	h := []byte{0x45, tos, 0, 148, 0, 0, 0x40, 0, ttl, 17, 0, 0}
	h = append(append(h, src[:]...), dst[:]...)
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
	return h
}

func TestGRHVersion(t *testing.T) {
	grh := make([]byte, 40)
	copy(grh[20:], ipv4Header([4]byte{10, 77, 0, 2}, [4]byte{10, 77, 0, 1}, 0, 64))
	if v := grhVersion(grh); v != 4 {
		t.Errorf("RoCE v2 IPv4: version %d", v)
	}
	// A first word that reads as IPv6 leaves it to the checksum.
	grh[0] = 0x60
	if v := grhVersion(grh); v != 4 {
		t.Errorf("IPv4 behind a 6: version %d", v)
	}
	grh[30] ^= 1 // the checksum no longer matches
	if v := grhVersion(grh); v != 6 {
		t.Errorf("a bad IPv4 checksum: version %d", v)
	}
	clear(grh)
	grh[0] = 0x60
	grh[20] = 0x12
	if v := grhVersion(grh); v != 6 {
		t.Errorf("IPv6 GRH: version %d", v)
	}
	clear(grh)
	if v := grhVersion(grh); v != 0 {
		t.Errorf("neither: version %d", v)
	}
}

// Without a GRH the address is the completion's LID and SL (IB); a
// multicast destination or an unknown next header is refused before the
// GID table is needed.
func TestAHFromWC(t *testing.T) {
	grh := make([]byte, 40)
	binary.BigEndian.PutUint32(grh, 6<<28|0x12345)
	wc := &uverbs.WC{SLID: 7, SL: 3, DLIDPathBits: 1}
	a, err := ahFromWC(nil, 1, wc, grh)
	if err != nil || a.IsGlobal || a.DLID != 7 || a.SL != 3 || a.SrcPathBits != 1 || a.Port != 1 || a.GRH.FlowLabel != 0x12345 {
		t.Errorf("no GRH: %+v, %v", a, err)
	}
	wc.Flags = uverbs.WCWithGRH
	copy(grh[20:], ipv4Header([4]byte{10, 77, 0, 2}, [4]byte{224, 0, 0, 1}, 0, 64))
	if _, err := ahFromWC(nil, 1, wc, grh); err == nil {
		t.Error("a multicast destination passed")
	}
	clear(grh)
	grh[0], grh[6] = 0x60, 59
	if _, err := ahFromWC(nil, 1, wc, grh); err == nil {
		t.Error("next header 59 passed")
	}
}
