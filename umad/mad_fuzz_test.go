package umad

// Fuzz targets: one per decoder. Each checks that a decode fails exactly
// when the input is malformed (and with the documented sentinel), and that
// what decodes round-trips: decode → encode gives the input with its
// reserved bits cleared (the expectation comes from the spec layout
// tables of mad_layout_test.go, not from the codecs), MarshalBinary accepts
// every decoded value and agrees with Append, and decode → encode → decode
// gives the same value. Seeds are the golden vectors, via f.Add and
// testdata/fuzz/<FuzzName>/.

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type madFuzzable interface {
	madCodec
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
	Validate() error
}

// madFuzzRoundTrip decodes b as a T. wantErr is the sentinel the decode
// must fail with (nil: it must succeed); size is the encoded size; mask has
// the bits of the first size bytes that survive a round trip.
func madFuzzRoundTrip[T any, P interface {
	*T
	madFuzzable
}](t *testing.T, b []byte, wantErr error, size int, mask []byte) {
	t.Helper()
	var v T
	err := P(&v).Decode(b)
	if wantErr != nil || err != nil {
		if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
			t.Fatalf("Decode of %d bytes: %v, want %v", len(b), err, wantErr)
		}
		return
	}
	enc := P(&v).Append(nil)
	if len(enc) != size {
		t.Fatalf("Append: %d bytes, want %d", len(enc), size)
	}
	want := make([]byte, size)
	for i := range want {
		want[i] = b[i] & mask[i]
	}
	if !bytes.Equal(enc, want) {
		t.Fatalf("decode → encode:\n got % x\nwant % x", enc, want)
	}
	if err := P(&v).Validate(); err != nil {
		t.Fatalf("Validate of a decoded value: %v", err)
	}
	m, err := P(&v).MarshalBinary()
	if err != nil || !bytes.Equal(m, enc) {
		t.Fatalf("MarshalBinary: %v, equal to Append: %v", err, bytes.Equal(m, enc))
	}
	var v2 T
	if err := P(&v2).UnmarshalBinary(enc); err != nil {
		t.Fatalf("decode of re-encoded: %v", err)
	}
	if diff := cmp.Diff(v, v2); diff != "" {
		t.Fatalf("decode → encode → decode (-first +second):\n%s", diff)
	}
}

func madOnes(n int) []byte { return bytes.Repeat([]byte{0xff}, n) }

// madAttrErr is the error an attribute decoder must return for b.
func madAttrErr(b []byte, size int) error {
	if len(b) < size {
		return ErrShortMAD
	}
	return nil
}

// madMADErr is the error a 256-byte MAD decoder must return for b, given
// which classes it takes.
func madMADErr(b []byte, classOK func(MgmtClass) bool) error {
	switch {
	case len(b) < MADSize:
		return ErrShortMAD
	case len(b) > MADSize:
		return ErrLongMAD
	case b[0] != BaseVersion:
		return ErrBaseVersion
	case !classOK(MgmtClass(b[1])):
		return ErrWrongClass
	}
	return nil
}

// madMask returns size bytes of ones with bytes [from, to) cleared.
func madMask(size int, holes ...[2]int) []byte {
	m := madOnes(size)
	for _, h := range holes {
		clear(m[h[0]:h[1]])
	}
	return m
}

// madSMPMask is the round-trip mask of an SMP of class c.
func madSMPMask(c MgmtClass) []byte {
	if c == ClassSubnMgmtDirectedRoute {
		return madMask(MADSize, [2]int{36, 64})
	}
	return madMask(MADSize, [2]int{32, 64}, [2]int{128, 256})
}

var (
	madPerfMask   = madMask(MADSize, [2]int{MADHeaderSize, PerfDataOffset})
	madVendorMask = madMask(MADSize, [2]int{VendorOUIOffset, VendorOUIOffset + 1})
)

func FuzzMADHeader(f *testing.F) {
	f.Add(madHex(f, madHeaderHex))
	f.Add(madPerfRespBytes(f))
	f.Add([]byte{1, 4, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		madFuzzRoundTrip[MADHeader](t, b, madAttrErr(b, MADHeaderSize), MADHeaderSize, madOnes(MADHeaderSize))
	})
}

func FuzzRMPPHeader(f *testing.F) {
	f.Add(madHex(f, madVendorHex)[MADHeaderSize:])
	f.Add(madOnes(RMPPHeaderSize))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		madFuzzRoundTrip[RMPPHeader](t, b, madAttrErr(b, RMPPHeaderSize), RMPPHeaderSize, madOnes(RMPPHeaderSize))
	})
}

func FuzzSMP(f *testing.F) {
	f.Add(madDRSMPBytes(f))
	f.Add(madPad(madHex(f, madLIDSMPHex), MADSize))
	f.Add(madOnes(MADSize))
	f.Add(madPerfRespBytes(f))
	f.Add(madDRSMPBytes(f)[:100])
	f.Fuzz(func(t *testing.T, b []byte) {
		want := madMADErr(b, MgmtClass.IsSubnMgmt)
		var mask []byte
		if want == nil {
			mask = madSMPMask(MgmtClass(b[1]))
		}
		madFuzzRoundTrip[SMP](t, b, want, MADSize, mask)
	})
}

func FuzzPerfMAD(f *testing.F) {
	f.Add(madPerfRespBytes(f))
	f.Add(append(madPerfRespBytes(f), 0))
	f.Add(madDRSMPBytes(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := madMADErr(b, func(c MgmtClass) bool { return c == ClassPerfMgmt })
		madFuzzRoundTrip[PerfMAD](t, b, want, MADSize, madPerfMask)
	})
}

func FuzzVendorMAD(f *testing.F) {
	f.Add(madPad(madHex(f, madVendorHex), MADSize))
	f.Add(madOnes(MADSize))
	f.Add(madPerfRespBytes(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := madMADErr(b, MgmtClass.IsVendorRange2)
		madFuzzRoundTrip[VendorMAD](t, b, want, MADSize, madVendorMask)
	})
}

func FuzzRawMAD(f *testing.F) {
	f.Add(madPerfRespBytes(f))
	f.Add(madOnes(MADSize))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		want := madMADErr(b, func(MgmtClass) bool { return true })
		if errors.Is(want, ErrBaseVersion) {
			want = nil // raw MADs take any base version
		}
		madFuzzRoundTrip[RawMAD](t, b, want, MADSize, madOnes(MADSize))
	})
}

// FuzzDecodeMAD checks the dispatcher: it fails only on length, picks the
// type by class and base version, and what it returns re-encodes to the
// input (reserved bytes cleared) and decodes again to the same message.
func FuzzDecodeMAD(f *testing.F) {
	f.Add(madPerfRespBytes(f))
	f.Add(madDRSMPBytes(f))
	f.Add(madPad(madHex(f, madVendorHex), MADSize))
	f.Add(madPad([]byte{0x80, 0x81}, MADSize))
	f.Add(madPad([]byte{1, 0x07}, MADSize))
	f.Add([]byte{1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMAD(b)
		if len(b) != MADSize {
			if err == nil || m != nil || !(errors.Is(err, ErrShortMAD) || errors.Is(err, ErrLongMAD)) {
				t.Fatalf("%d bytes: %T, %v", len(b), m, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("DecodeMAD: %v", err)
		}
		c := MgmtClass(b[1])
		mask := madOnes(MADSize)
		switch m.(type) {
		case *SMP:
			if b[0] != 1 || !c.IsSubnMgmt() {
				t.Fatalf("SMP for % x", b[:2])
			}
			mask = madSMPMask(c)
		case *PerfMAD:
			if b[0] != 1 || c != ClassPerfMgmt {
				t.Fatalf("PerfMAD for % x", b[:2])
			}
			mask = madPerfMask
		case *VendorMAD:
			if b[0] != 1 || !c.IsVendorRange2() {
				t.Fatalf("VendorMAD for % x", b[:2])
			}
			mask = madVendorMask
		case *RawMAD:
			if b[0] == 1 && (c.IsSubnMgmt() || c == ClassPerfMgmt || c.IsVendorRange2()) {
				t.Fatalf("RawMAD for % x", b[:2])
			}
		default:
			t.Fatalf("DecodeMAD returned %T", m)
		}
		enc := m.Append(nil)
		for i := range enc {
			if enc[i] != b[i]&mask[i] {
				t.Fatalf("%T: byte %d re-encoded as %#x, want %#x", m, i, enc[i], b[i]&mask[i])
			}
		}
		m2, err := DecodeMAD(enc)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(m, m2); diff != "" {
			t.Fatalf("(-first +second):\n%s", diff)
		}
		if m.MADHeader().TransactionID != m2.MADHeader().TransactionID {
			t.Fatal("MADHeader")
		}
	})
}

func FuzzNodeInfo(f *testing.F) {
	f.Add(madHex(f, madNodeInfoHex))
	f.Add(madOnes(SMPDataSize))
	f.Add([]byte{1, 1, 1})
	mask := madDefinedMask(NodeInfoSize, madNodeInfoFields)
	f.Fuzz(func(t *testing.T, b []byte) {
		madFuzzRoundTrip[NodeInfo](t, b, madAttrErr(b, NodeInfoSize), NodeInfoSize, mask)
	})
}

func FuzzNodeDescription(f *testing.F) {
	f.Add(madPad([]byte("rxe0 HCA-1"), NodeDescriptionSize))
	f.Add(bytes.Repeat([]byte("é"), 40))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		madFuzzRoundTrip[NodeDescription](t, b, madAttrErr(b, NodeDescriptionSize), NodeDescriptionSize, madOnes(NodeDescriptionSize))
	})
}

func FuzzPortInfo(f *testing.F) {
	f.Add(madHex(f, madPortInfoHex))
	f.Add(madOnes(PortInfoSize))
	f.Add(madHex(f, madPortInfoHex)[:PortInfoSize-1])
	mask := madDefinedMask(PortInfoSize, madPortInfoFields)
	f.Fuzz(func(t *testing.T, b []byte) {
		madFuzzRoundTrip[PortInfo](t, b, madAttrErr(b, PortInfoSize), PortInfoSize, mask)
	})
}

func FuzzClassPortInfo(f *testing.F) {
	f.Add(madHex(f, madClassPortInfoHex))
	f.Add(madOnes(PerfDataSize))
	f.Add(madOnes(SMPDataSize))
	mask := madDefinedMask(ClassPortInfoSize, madClassPortInfoFields)
	f.Fuzz(func(t *testing.T, b []byte) {
		madFuzzRoundTrip[ClassPortInfo](t, b, madAttrErr(b, ClassPortInfoSize), ClassPortInfoSize, mask)
	})
}

func FuzzPortCounters(f *testing.F) {
	f.Add(madHex(f, madPortCountersHex))
	f.Add(madOnes(PerfDataSize))
	f.Add(make([]byte, PortCountersSize-1))
	mask := madDefinedMask(PortCountersSize, madPortCountersFields)
	f.Fuzz(func(t *testing.T, b []byte) {
		madFuzzRoundTrip[PortCounters](t, b, madAttrErr(b, PortCountersSize), PortCountersSize, mask)
	})
}

func FuzzPortCountersExtended(f *testing.F) {
	f.Add(madHex(f, madPortCountersExtHex))
	f.Add(madOnes(PerfDataSize))
	f.Add(make([]byte, PortCountersExtendedSize-1))
	mask := madDefinedMask(PortCountersExtendedSize, madPortCountersExtFields)
	f.Fuzz(func(t *testing.T, b []byte) {
		madFuzzRoundTrip[PortCountersExtended](t, b, madAttrErr(b, PortCountersExtendedSize), PortCountersExtendedSize, mask)
	})
}

// FuzzDecodeAttribute checks the attribute dispatcher: known (class,
// attribute) pairs decode to their type and round-trip; other pairs fail
// with ErrUnknownAttribute; short data fails with ErrShortMAD.
func FuzzDecodeAttribute(f *testing.F) {
	f.Add(uint8(ClassSubnMgmt), uint16(SMAttrPortInfo), madHex(f, madPortInfoHex))
	f.Add(uint8(ClassSubnMgmtDirectedRoute), uint16(SMAttrNodeInfo), madHex(f, madNodeInfoHex))
	f.Add(uint8(ClassPerfMgmt), uint16(PMAttrPortCounters), madHex(f, madPortCountersHex))
	f.Add(uint8(ClassPerfMgmt), uint16(PMAttrPortCountersExtended), madHex(f, madPortCountersExtHex))
	f.Add(uint8(ClassSubnAdm), uint16(AttrClassPortInfo), madHex(f, madClassPortInfoHex))
	f.Add(uint8(ClassSubnMgmt), uint16(SMAttrSwitchInfo), madOnes(SMPDataSize))
	f.Fuzz(func(t *testing.T, class uint8, id uint16, data []byte) {
		a, err := DecodeAttribute(MgmtClass(class), AttrID(id), data)
		if err != nil {
			if a != nil || !(errors.Is(err, ErrUnknownAttribute) || errors.Is(err, ErrShortMAD)) {
				t.Fatalf("%T, %v", a, err)
			}
			return
		}
		if a.AttributeID() != AttrID(id) {
			t.Fatalf("%T for attribute %#x", a, id)
		}
		enc := a.Append(nil)
		a2, err := DecodeAttribute(MgmtClass(class), AttrID(id), enc)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, a2); diff != "" {
			t.Fatalf("(-first +second):\n%s", diff)
		}
	})
}

// FuzzForwardingTables is the one target of the switch family:
// SwitchInfo, LinearForwardingTable and MulticastForwardingTable, which
// the first byte picks.
func FuzzForwardingTables(f *testing.F) {
	si := []byte{0, 0x30, 0, 0, 0, 0, 0x04, 0, 0, 0x0e, 0, 0, 0, 0, 0xa0, 0, 1, 0, 0, 0, 0, 0x80, 0, 0, 0xc0, 0x1f}
	f.Add(si)
	f.Add(append([]byte{1}, madOnes(64)...))
	f.Add(append([]byte{2}, bytes.Repeat([]byte{0x80, 0x21}, 32)...))
	f.Add([]byte{0, 1, 2})
	f.Add(append([]byte{0}, madOnes(SwitchInfoSize)...))
	siMask := madOnes(SwitchInfoSize)
	siMask[16], siMask[17] = 0xf8, 0
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		kind, b := b[0]%3, b[1:]
		switch kind {
		case 0:
			madFuzzRoundTrip[SwitchInfo](t, b, madAttrErr(b, SwitchInfoSize), SwitchInfoSize, siMask)
		case 1:
			madFuzzRoundTrip[LinearForwardingTable](t, b, madAttrErr(b, LinearForwardingTableSize), LinearForwardingTableSize, madOnes(LinearForwardingTableSize))
		case 2:
			madFuzzRoundTrip[MulticastForwardingTable](t, b, madAttrErr(b, MulticastForwardingTableSize), MulticastForwardingTableSize, madOnes(MulticastForwardingTableSize))
		}
	})
}

// FuzzSA decodes SA answers and their records (DecodeSAResponse,
// Records, the record decoders) and RMPP segment sequences
// (RMPPReassembler): none may panic, every record lies inside the
// answer's data, and a reassembled message is never longer than its
// segments' data.
func FuzzSA(f *testing.F) {
	f.Add(saAnswer(3, 64, 0))
	f.Add(saAnswer(12, 8, 0))
	for _, s := range rmppSegments(saAnswer(60, 8, 0)) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeSAResponse(b); err == nil {
			for _, rec := range r.Records() {
				if len(rec) > len(r.Data) {
					t.Fatalf("record of %d bytes in %d", len(rec), len(r.Data))
				}
				var nr NodeRecord
				var pir PortInfoRecord
				var pr PathRecord
				var lr LinkRecord
				var sm SMInfoRecord
				var mc MCMemberRecord
				var sl SL2VLTableRecord
				var va VLArbTableRecord
				var pk PKeyTableRecord
				var lft LFTRecord
				var mft MFTRecord
				var gi GUIDInfoRecord
				var si SwitchInfoRecord
				var sr ServiceRecord
				var ii InformInfoRecord
				for _, d := range []interface{ Decode([]byte) error }{&nr, &pir, &pr, &lr, &sm, &mc,
					&sl, &va, &pk, &lft, &mft, &gi, &si, &sr, &ii} {
					_ = d.Decode(rec)
				}
			}
		}
		var r RMPPReassembler
		segs := 0
		for off := 0; off < len(b); off += MADSize {
			segs++
			if last, err := r.Add(b[off:min(off+MADSize, len(b))]); err != nil || last {
				break
			}
		}
		if m := r.Message(); len(m) > segs*MADSize {
			t.Fatalf("%d bytes from %d segments", len(m), segs)
		}
	})
}

// FuzzPerfAttributes decodes bytes as the PMA attributes perfquery
// reads besides PortCounters and PortCountersExtended: each
// PerfCounterSet (and attributes that are none), PortSamplesControl and
// PortExtendedSpeedsCounters. A decoded attribute encodes back to the
// bits it came from (reserved bits zero) and decodes again to itself;
// nothing panics.
func FuzzPerfAttributes(f *testing.F) {
	f.Add(uint16(PMAttrPortXmitDataSL), madOnes(PerfDataSize))
	f.Add(uint16(PMAttrPortVLXmitFlowCtlUpdateErrors), madOnes(8))
	f.Add(uint16(PMAttrPortVLXmitTimeCong), make([]byte, 63))
	f.Add(uint16(PMAttrPortCounters), madOnes(PerfDataSize))
	f.Add(uint16(PMAttrPortSamplesControl), madOnes(PortSamplesControlSize))
	f.Add(uint16(PMAttrPortExtendedSpeedsCounters), madOnes(PortExtendedSpeedsCountersSize))
	f.Fuzz(func(t *testing.T, id uint16, b []byte) {
		switch AttrID(id) {
		case PMAttrPortSamplesControl:
			perfFuzzRoundTrip[PortSamplesControl](t, b, PortSamplesControlSize)
		case PMAttrPortExtendedSpeedsCounters:
			perfFuzzRoundTrip[PortExtendedSpeedsCounters](t, b, PortExtendedSpeedsCountersSize)
		default:
			perfFuzzCounterSet(t, AttrID(id), b)
		}
	})
}

// perfFuzzRoundTrip checks one fixed-size attribute: short data fails
// with ErrShortMAD; else decode, encode (a subset of b's bits, the
// defined ones), decode again (the same value), Validate and
// MarshalBinary agree.
func perfFuzzRoundTrip[T any, P interface {
	*T
	Attribute
}](t *testing.T, b []byte, size int) {
	t.Helper()
	var v T
	err := P(&v).Decode(b)
	if len(b) < size {
		if !errors.Is(err, ErrShortMAD) {
			t.Fatalf("%d bytes: %v", len(b), err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	enc := P(&v).Append(nil)
	if len(enc) != size {
		t.Fatalf("Append: %d bytes, want %d", len(enc), size)
	}
	for i := range enc {
		if enc[i]&^b[i] != 0 {
			t.Fatalf("byte %d: % x from % x", i, enc[i], b[i])
		}
	}
	var w T
	if err := P(&w).UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, w); diff != "" {
		t.Fatalf("(-first +second):\n%s", diff)
	}
	if m, err := P(&v).MarshalBinary(); err != nil || !bytes.Equal(m, enc) {
		t.Fatalf("MarshalBinary: %v, equal to Append: %v", err, bytes.Equal(m, enc))
	}
}

// perfFuzzCounterSet checks PerfCounterSet for attribute id.
func perfFuzzCounterSet(t *testing.T, id AttrID, b []byte) {
	p := PerfCounterSet{ID: id}
	size := PerfCounterSetSize(p.ID)
	err := p.Decode(b)
	switch {
	case size == 0:
		if !errors.Is(err, ErrUnknownAttribute) || !errors.Is(p.Validate(), ErrUnknownAttribute) {
			t.Fatalf("attribute %#x: %v", id, err)
		}
		return
	case len(b) < size:
		if !errors.Is(err, ErrShortMAD) {
			t.Fatalf("%d bytes: %v", len(b), err)
		}
		return
	case err != nil:
		t.Fatal(err)
	}
	n, _, _ := PerfCounterSetLayout(p.ID)
	if len(p.Counters) != n {
		t.Fatalf("%d counters, want %d", len(p.Counters), n)
	}
	enc, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte{0}, b[1:size]...); !bytes.Equal(enc, want) {
		t.Fatalf("decode → encode:\n got % x\nwant % x", enc, want)
	}
	q := PerfCounterSet{ID: p.ID}
	if err := q.UnmarshalBinary(enc); err != nil || !slices.Equal(q.Counters, p.Counters) {
		t.Fatalf("%v: %v, want %v", err, q.Counters, p.Counters)
	}
}
