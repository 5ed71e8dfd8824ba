package umad_test

import (
	"fmt"

	"github.com/purerdma/rdma/umad"
)

// Build a PerfMgmt Get(PortCounters) for port 1, as perfquery sends it to a
// port's PMA on QP1, and decode the GetResp that comes back. The reply is
// made up here; on a real port it is what a receive returns after the
// umad header.
func ExamplePerfMAD() {
	req := umad.PerfMAD{
		Header: umad.NewMADHeader(umad.ClassPerfMgmt, umad.MethodGet, umad.PMAttrPortCounters, 0, 7),
	}
	if err := req.SetAttribute(&umad.PortCounters{PortSelect: 1}); err != nil {
		fmt.Println(err)
		return
	}
	wire := req.Append(make([]byte, 0, umad.MADSize)) // the MAD to send after the umad header
	fmt.Printf("request: %d bytes, header % x\n", len(wire), wire[:umad.MADHeaderSize])

	// What the PMA answers: the request turned into a GetResp, counters
	// filled in.
	resp := req
	resp.Header.Method = req.Header.Method.Response()
	if err := resp.SetAttribute(&umad.PortCounters{PortSelect: 1, PortXmitData: 1000, PortRcvData: 250, PortXmitPkts: 12, PortRcvPkts: 5}); err != nil {
		fmt.Println(err)
		return
	}
	received := resp.Append(nil)

	var reply umad.PerfMAD
	if err := reply.Decode(received); err != nil {
		fmt.Println(err)
		return
	}
	if reply.Header.Status != 0 || reply.Header.TransactionID != req.Header.TransactionID {
		fmt.Println("bad reply:", reply.Header.Status)
		return
	}
	var pc umad.PortCounters
	if err := pc.Decode(reply.Data[:]); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%v port %d: xmit %d octets in %d packets, rcv %d octets in %d packets\n",
		reply.Header.Method, pc.PortSelect, pc.XmitDataOctets(), pc.PortXmitPkts, pc.RcvDataOctets(), pc.PortRcvPkts)
	// Output:
	// request: 256 bytes, header 01 04 01 01 00 00 00 00 00 00 00 00 00 00 00 07 00 12 00 00 00 00 00 00
	// GetResp port 1: xmit 4000 octets in 12 packets, rcv 1000 octets in 5 packets
}

// A directed-route Get(NodeInfo) to the node two hops away, out through
// port 1 of the local node and port 3 of the next one.
func ExampleSMP_SetInitialPath() {
	smp := umad.SMP{
		Header: umad.NewMADHeader(umad.ClassSubnMgmtDirectedRoute, umad.MethodGet, umad.SMAttrNodeInfo, 0, 1),
		DrSLID: umad.PermissiveLID,
		DrDLID: umad.PermissiveLID,
	}
	if err := smp.SetInitialPath(1, 3); err != nil {
		fmt.Println(err)
		return
	}
	b, err := smp.MarshalBinary()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("hop pointer %d, hop count %d, initial path % x\n", b[6], b[7], b[128:131])
	// Output: hop pointer 0, hop count 2, initial path 00 01 03
}

// Decode received MADs of any class.
func ExampleDecodeMAD() {
	smp := umad.SMP{Header: umad.NewMADHeader(umad.ClassSubnMgmt, umad.MethodGetResp, umad.SMAttrNodeDescription, 0, 2)}
	var desc umad.NodeDescription
	_ = desc.SetString("rxe0 HCA-1")
	_ = smp.SetAttribute(&desc)
	cm := umad.RawMAD{Header: umad.NewMADHeader(umad.ClassCM, umad.MethodSend, 0x0010, 0, 3)}

	for _, b := range [][]byte{smp.Append(nil), cm.Append(nil)} {
		m, err := umad.DecodeMAD(b)
		if err != nil {
			fmt.Println(err)
			continue
		}
		switch m := m.(type) {
		case *umad.SMP:
			a, err := m.Attribute()
			if err != nil {
				fmt.Println(err)
				continue
			}
			fmt.Printf("%v %v: %v\n", m.Header.MgmtClass, m.Header.Method, a)
		default:
			h := m.MADHeader()
			fmt.Printf("%v %v: raw attribute %#04x\n", h.MgmtClass, h.Method, uint16(h.AttributeID))
		}
	}
	// Output:
	// SubnMgmt GetResp: rxe0 HCA-1
	// CM Send: raw attribute 0x0010
}

// A switch's linear forwarding table is read in blocks of 64 LIDs, as
// ibroute and ibtracert read it: the Get's attribute modifier is the
// block, the LID's out port its entry.
func ExampleLFTBlock() {
	block, i := umad.LFTBlock(200)
	smp := umad.SMP{Header: umad.NewMADHeader(umad.ClassSubnMgmt, umad.MethodGet, umad.SMAttrLinearForwardingTable, block, 1)}
	// … smp sent, the answer decoded into smp …
	smp.Data[i] = 7
	var lft umad.LinearForwardingTable
	if err := lft.Decode(smp.Data[:]); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(block, i, lft[i])
	// Output: 3 8 7
}

// A multicast forwarding table block holds 32 MLIDs' masks of 16 ports;
// a switch of more than 15 ports has further positions.
func ExampleMFTModifier() {
	mod, i, ok := umad.MFTModifier(0xc021, 2) // ports 32 to 47
	fmt.Printf("%#x %d %v\n", mod, i, ok)
	_, _, ok = umad.MFTModifier(0x10, 0)
	fmt.Println(ok)
	// Output:
	// 0x20000001 1 true
	// false
}
