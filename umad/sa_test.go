package umad

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

func TestSAQueryAppend(t *testing.T) {
	q := SAQuery{Method: MethodGetTable, Attr: SAAttrNodeRecord, Modifier: 7, CompMask: NRCompLID,
		SMKey: 0x1122334455667788, Data: []byte{0, 5}}
	b := q.Append(nil, 0xabcd)
	if len(b) != MADSize {
		t.Fatalf("%d bytes", len(b))
	}
	be := binary.BigEndian
	// IBA 13.4.2 and 15.2.1: the common header, the RMPP header left to
	// the kernel, the SA header, the data.
	if b[0] != 1 || b[1] != 0x03 || b[2] != 2 || b[3] != 0x12 || be.Uint64(b[8:16]) != 0xabcd ||
		be.Uint16(b[16:18]) != 0x11 || be.Uint32(b[20:24]) != 7 || !bytes.Equal(b[24:36], make([]byte, 12)) ||
		be.Uint64(b[36:44]) != 0x1122334455667788 || be.Uint64(b[48:56]) != 1 || be.Uint16(b[56:58]) != 5 {
		t.Fatalf("request:\n% x", b)
	}
}

// saAnswer builds a GetTableResp of n records of size bytes (record i
// filled with byte i+1), status st, in a message of its length.
func saAnswer(n, size int, st MADStatus) []byte {
	b := make([]byte, SAHeaderSize+n*size)
	h := NewMADHeader(ClassSubnAdm, MethodGetTableResp, SAAttrLinkRecord, 0, 9)
	h.ClassVersion = 2
	h.Status = st
	h.put(b)
	binary.BigEndian.PutUint16(b[44:46], uint16(size/8))
	for i := 0; i < n; i++ {
		for j := 0; j < size; j++ {
			b[SAHeaderSize+i*size+j] = byte(i + 1)
		}
	}
	return b
}

func TestSAResponseRecords(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want int
	}{
		{saAnswer(12, 8, 0), 12},
		{saAnswer(3, 64, 0), 3},
		{saAnswer(3, 64, 0)[:SAHeaderSize+150], 2}, // a record cut short is not one
		{saAnswer(3, 64, SAStatusNoRecords<<8), 0},
		{saAnswer(0, 8, 0), 0},
	} {
		r, err := DecodeSAResponse(tc.b)
		if err != nil {
			t.Fatal(err)
		}
		recs := r.Records()
		if len(recs) != tc.want {
			t.Fatalf("%d records, want %d", len(recs), tc.want)
		}
		for i, rec := range recs {
			if rec[0] != byte(i+1) || len(rec) != int(r.AttrOffset)*8 {
				t.Fatalf("record %d: % x", i, rec)
			}
		}
	}
	// A Get's answer is one record; an offset of 0 none.
	b := saAnswer(1, 72, 0)
	b[3] = byte(MethodGetResp)
	if r, _ := DecodeSAResponse(b); len(r.Records()) != 1 {
		t.Fatal("GetResp: not one record")
	}
	b = saAnswer(2, 8, 0)
	b[44], b[45] = 0, 0
	if r, _ := DecodeSAResponse(b); len(r.Records()) != 0 {
		t.Fatal("offset 0: records")
	}
	if _, err := DecodeSAResponse(b[:55]); !errors.Is(err, ErrShortMAD) {
		t.Fatalf("short: %v", err)
	}
	b[1] = 0x81
	if _, err := DecodeSAResponse(b); !errors.Is(err, ErrWrongClass) {
		t.Fatalf("class 0x81: %v", err)
	}
	if SAStatusText(SAStatusNoRecords<<8) != "SA_ERR_NO_RECORDS" || SAStatusText(0xff00) != "SA_ERR_UNKNOWN" {
		t.Fatal("SAStatusText")
	}
}

// rmppSegments cuts an SA message (headers and data) into RMPP DATA
// segments as a sender does (IBA 13.6.2.1 and 13.6.4): every segment
// carries the 56 bytes of headers and up to 200 bytes of data; segment
// numbers count from 1; the first has the First flag and the whole
// payload length, the last the Last flag and its own payload length
// (both counting from byte 36, the SA header included), the others 0.
func rmppSegments(msg []byte) [][]byte {
	hdr, data := msg[:SAHeaderSize], msg[SAHeaderSize:]
	n := max((len(data)+SADataSize-1)/SADataSize, 1)
	var segs [][]byte
	for i := 0; i < n; i++ {
		s := make([]byte, MADSize)
		copy(s, hdr)
		chunk := data[i*SADataSize : min((i+1)*SADataSize, len(data))]
		copy(s[SAHeaderSize:], chunk)
		h := RMPPHeader{Version: 1, Type: RMPPTypeData, Flags: RMPPFlagActive, Data1: uint32(i + 1)}
		if i == 0 {
			h.Flags |= RMPPFlagFirst
			h.Data2 = uint32(len(msg) - 36)
		}
		if i == n-1 {
			h.Flags |= RMPPFlagLast
			h.Data2 = uint32(SAHeaderSize - 36 + len(chunk))
		}
		h.put(s[24:36])
		segs = append(segs, s)
	}
	return segs
}

func TestRMPPReassembly(t *testing.T) {
	for _, n := range []int{1, 12, 25, 26, 60, 75} {
		msg := saAnswer(n, 8, 0)
		var r RMPPReassembler
		segs := rmppSegments(msg)
		for i, s := range segs {
			last, err := r.Add(s)
			if err != nil || last != (i == len(segs)-1) {
				t.Fatalf("%d records, segment %d: last %v, %v", n, i+1, last, err)
			}
		}
		got := r.Message()
		if len(got) != len(msg) || !bytes.Equal(got[SAHeaderSize:], msg[SAHeaderSize:]) {
			t.Fatalf("%d records: %d bytes, want %d", n, len(got), len(msg))
		}
		resp, err := DecodeSAResponse(got)
		if err != nil || len(resp.Records()) != n {
			t.Fatalf("%d records: %v, %d decoded", n, err, len(resp.Records()))
		}
	}
	segs := rmppSegments(saAnswer(60, 8, 0)) // three segments
	for _, tc := range []struct {
		name string
		seq  []int // segments by index, -1: a bad header
		want error
	}{
		{"no first", []int{1}, ErrRMPPSegment},
		{"gap", []int{0, 2}, ErrRMPPSegment},
		{"repeat", []int{0, 0}, ErrRMPPSegment},
		{"after last", []int{0, 1, 2, 2}, ErrRMPPSegment},
		{"not data", []int{0, -1}, ErrRMPPHeader},
	} {
		var r RMPPReassembler
		var err error
		for _, i := range tc.seq {
			s := []byte(nil)
			if i < 0 {
				s = append([]byte(nil), segs[1]...)
				s[25] = RMPPTypeAck
			} else {
				s = segs[i]
			}
			if _, err = r.Add(s); err != nil {
				break
			}
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if (r.Message() != nil) != (tc.name == "after last") {
			t.Errorf("%s: message %v", tc.name, r.Message() != nil)
		}
	}
	var r RMPPReassembler
	if _, err := r.Add(make([]byte, 35)); !errors.Is(err, ErrShortMAD) {
		t.Fatalf("short: %v", err)
	}
	r.Reset()
	if _, err := r.Add(segs[0]); err != nil {
		t.Fatal(err)
	}
}

func TestSARecordDecoders(t *testing.T) {
	b := make([]byte, 176)
	for i := range b {
		b[i] = byte(i)
	}
	var nr NodeRecord
	if err := nr.Decode(b); err != nil || nr.LID != 0x0001 || nr.NodeInfo.NodeType != 6 || nr.NodeDesc[0] != 44 {
		t.Fatalf("NodeRecord %+v: %v", nr, err)
	}
	var pr PathRecord
	if err := pr.Decode(b); err != nil || pr.DLID != 0x2829 || pr.SL != 5 || pr.QoSClass != 0x343 || pr.MTU != 54 {
		t.Fatalf("PathRecord %+v: %v", pr, err)
	}
	var lr LinkRecord
	if err := lr.Decode(b); err != nil || lr != (LinkRecord{FromLID: 1, FromPort: 2, ToPort: 3, ToLID: 0x0405}) {
		t.Fatalf("LinkRecord %+v: %v", lr, err)
	}
	var sm SMInfoRecord
	if err := sm.Decode(b); err != nil || sm.GUID != 0x0405060708090a0b || sm.Priority != 1 || sm.State != 8 {
		t.Fatalf("SMInfoRecord %+v: %v", sm, err)
	}
	var mc MCMemberRecord
	if err := mc.Decode(b); err != nil || mc.MLID != 0x2425 || mc.SL != 2 || mc.FlowLabel != 0xc2d2e || mc.Scope != 3 {
		t.Fatalf("MCMemberRecord %+v: %v", mc, err)
	}
	var pir PortInfoRecord
	if err := pir.Decode(b); err != nil || pir.PortNum != 2 || pir.PortInfo[0] != 4 {
		t.Fatalf("PortInfoRecord %+v: %v", pir, err)
	}
	var sl SL2VLTableRecord
	if err := sl.Decode(b); err != nil || sl.InPort != 2 || sl.VL[0] != 0 || sl.VL[1] != 8 || sl.VL[3] != 9 {
		t.Fatalf("SL2VLTableRecord %+v: %v", sl, err)
	}
	var va VLArbTableRecord
	if err := va.Decode(b); err != nil || va.Port != 2 || va.Block != 3 || va.Entries[0] != (VLArbEntry{8, 9}) {
		t.Fatalf("VLArbTableRecord %+v: %v", va, err)
	}
	var pk PKeyTableRecord
	if err := pk.Decode(b); err != nil || pk.Block != 0x0203 || pk.Port != 4 || pk.PKeys[0] != 0x0809 {
		t.Fatalf("PKeyTableRecord %+v: %v", pk, err)
	}
	var lft LFTRecord
	if err := lft.Decode(b); err != nil || lft.Block != 0x0203 || lft.Ports[0] != 8 || lft.Ports[63] != 71 {
		t.Fatalf("LFTRecord %+v: %v", lft, err)
	}
	var mft MFTRecord
	if err := mft.Decode(b); err != nil || mft.Position != 0 || mft.Block != 3 || mft.Masks[31] != 0x4647 {
		t.Fatalf("MFTRecord %+v: %v", mft, err)
	}
	var gi GUIDInfoRecord
	if err := gi.Decode(b); err != nil || gi.Block != 2 || gi.GUIDs[0] != 0x08090a0b0c0d0e0f {
		t.Fatalf("GUIDInfoRecord %+v: %v", gi, err)
	}
	var si SwitchInfoRecord
	if err := si.Decode(b); err != nil || si.LID != 1 || si.SwitchInfo[0] != 4 || si.SwitchInfo[19] != 23 {
		t.Fatalf("SwitchInfoRecord %+v: %v", si, err)
	}
	var sr ServiceRecord
	if err := sr.Decode(b); err != nil || sr.ID != 0x0001020304050607 || sr.PKey != 0x1819 || sr.Lease != 0x1c1d1e1f ||
		sr.Name[0] != 48 || sr.Data16[0] != 0x8081 || sr.Data64[1] != 0xa8a9aaabacadaeaf {
		t.Fatalf("ServiceRecord %+v: %v", sr, err)
	}
	var ii InformInfoRecord
	if err := ii.Decode(b); err != nil || ii.SubscriberEnum != 0x1011 || ii.LIDRangeBegin != 0x2829 || ii.IsGeneric != 46 ||
		ii.Type != 0x3031 || ii.QPN != 0x343536 || ii.RespTimeValue != 0x17 || ii.ProducerTypeOrVendorID != 0x393a3b {
		t.Fatalf("InformInfoRecord %+v: %v", ii, err)
	}
	for _, d := range []interface{ Decode([]byte) error }{&nr, &pr, &lr, &sm, &mc, &pir, &sl, &va, &pk, &lft, &mft, &gi, &si, &sr, &ii} {
		if err := d.Decode(b[:5]); !errors.Is(err, ErrShortMAD) {
			t.Fatalf("%T of 5 bytes: %v", d, err)
		}
	}
}

// TestSAClientKernelRMPP runs an SAClient against an SA on another port
// of the modelled kernel fabric, whose answer is larger than one MAD: the
// agents use the kernel's RMPP, so the client reads the whole message.
func TestSAClientKernelRMPP(t *testing.T) {
	e := newEnv(t, ibPair()...)
	cp, sp := e.open(t, "mlx5_0", 1), e.open(t, "mlx5_1", 1)
	sa, err := sp.RegisterAgent(Registration{Class: ClassSubnAdm, Version: 2, RMPPVersion: 1,
		Methods: MethodMaskOf(MethodGetTable)})
	if err != nil {
		t.Fatal(err)
	}
	const n = 60 // 480 bytes of LinkRecords: three segments on a wire
	go func() {
		pkt := NewPacket()
		if _, err := sp.Recv(pkt, 5*time.Second); err != nil {
			return
		}
		req := pkt.MAD()
		ans := saAnswer(n, 8, 0)
		copy(ans[8:16], req[8:16])
		ans[24], ans[25], ans[26] = 1, RMPPTypeData, RMPPFlagActive
		addr := pkt.Addr()
		if pkt.SetMAD(ans) != nil || pkt.SetAddr(addr.LID, addr.QPN, 0, QP1QKey) != nil {
			return
		}
		_ = sp.Send(sa, pkt, time.Second, 0)
	}()
	c, err := NewSAClient(cp, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	recs, err := c.GetTable(SAAttrLinkRecord, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	var lr LinkRecord
	if err := lr.Decode(recs[n-1]); err != nil || lr.FromLID != uint16(n)<<8|uint16(n) {
		t.Fatalf("last record %+v: %v", lr, err)
	}
}

// TestSAClientNoAnswer: a query nobody answers comes back from the
// kernel's send timeout, as sa_query's umad_status sees it.
func TestSAClientNoAnswer(t *testing.T) {
	e := newEnv(t, ibPair()...)
	c, err := NewSAClient(e.open(t, "mlx5_0", 1), 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout = 50 * time.Millisecond
	_, err = c.GetTable(SAAttrNodeRecord, 0, nil)
	var ue *Error
	if !errors.Is(err, ErrTimeout) || !errors.As(err, &ue) || ue.Op != "SA query" {
		t.Fatalf("%v, want a timed-out SA query", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Query(SAQuery{}); err == nil {
		t.Fatal("a query after Close")
	}
}
