package abi_test

import (
	"fmt"

	"github.com/purerdma/rdma/abi"
)

// Build the umad header for a GMP sent over RoCE (GRH addressing, QP1, the
// GSI Q_Key), put the MAD after it as one write() buffer would hold, and
// read the header back as a receive would.
func ExampleMadHdr() {
	hdr := abi.MadHdr{
		AgentID:    0, // from IB_USER_MAD_REGISTER_AGENT2
		TimeoutMs:  100,
		Retries:    3,
		QPN:        1,
		QKey:       0x80010000,
		GRHPresent: true,
		HopLimit:   64,
		GID:        [16]byte{10: 0xff, 11: 0xff, 12: 192, 13: 168, 14: 1, 15: 10},
	}
	mad := make([]byte, 256) // the MAD itself: common header, class data

	buf := make([]byte, 0, abi.MadHdrSize+len(mad))
	buf, err := hdr.AppendTo(buf, abi.MadHdrSize)
	if err != nil {
		fmt.Println(err)
		return
	}
	buf = append(buf, mad...)
	fmt.Printf("write %d bytes; qpn on the wire % x\n", len(buf), buf[20:24])

	var got abi.MadHdr
	if err := got.Decode(buf, abi.MadHdrSize); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("qpn %d qkey %#x grh %v hop limit %d\n", got.QPN, got.QKey, got.GRHPresent, got.HopLimit)

	// The 56-byte header cannot carry a P_Key index.
	hdr.PKeyIndex = 1
	_, err = hdr.AppendTo(nil, abi.MadHdrSizeOld)
	fmt.Println(err)
	// Output:
	// write 320 bytes; qpn on the wire 00 00 00 01
	// qpn 1 qkey 0x80010000 grh true hop limit 64
	// abi: struct ib_user_mad_hdr_old has no pkey_index, PKeyIndex must be 0: value out of range
}
