package umad

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// madGolden checks that want encodes to wantBytes (Append onto a prefix,
// MarshalBinary) and that wantBytes decodes to want (Decode,
// UnmarshalBinary).
func madGolden[T any, P interface {
	*T
	madCodec
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}](t *testing.T, want T, wantBytes []byte) {
	t.Helper()
	prefix := []byte{0xee, 0xee}
	got := P(&want).Append(append([]byte(nil), prefix...))
	if diff := cmp.Diff(append(prefix, wantBytes...), got); diff != "" {
		t.Errorf("Append (-want +got):\n%s", diff)
	}
	m, err := P(&want).MarshalBinary()
	if err != nil {
		t.Fatalf("MarshalBinary: %v", err)
	}
	if diff := cmp.Diff(wantBytes, m); diff != "" {
		t.Errorf("MarshalBinary (-want +got):\n%s", diff)
	}
	var dec, unm T
	if err := P(&dec).Decode(wantBytes); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if diff := cmp.Diff(want, dec); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
	if err := P(&unm).UnmarshalBinary(wantBytes); err != nil {
		t.Fatalf("UnmarshalBinary: %v", err)
	}
	if diff := cmp.Diff(want, unm); diff != "" {
		t.Errorf("UnmarshalBinary (-want +got):\n%s", diff)
	}
}

func TestMADHeaderGolden(t *testing.T) {
	madGolden(t, madHeaderVec, madHex(t, madHeaderHex))
}

func TestMADHeaderDecodeOfWholeMAD(t *testing.T) {
	// A header decodes from the front of a longer buffer: a whole MAD, or
	// the 24-byte record umad returns for a timed-out send.
	b := madPerfRespBytes(t)
	var h MADHeader
	if err := h.Decode(b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(madPerfResp.Header, h); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := h.Decode(b[:MADHeaderSize]); err != nil {
		t.Errorf("24-byte record: %v", err)
	}
}

func TestMADNodeInfoGolden(t *testing.T) {
	madGolden(t, madNodeInfoVec, madHex(t, madNodeInfoHex))
}

func TestMADPortInfoGolden(t *testing.T) {
	b := madHex(t, madPortInfoHex)
	if len(b) != PortInfoSize {
		t.Fatalf("vector has %d bytes", len(b))
	}
	madGolden(t, madPortInfoVec, b)
}

func TestMADClassPortInfoGolden(t *testing.T) {
	madGolden(t, madClassPortInfoVec, madHex(t, madClassPortInfoHex))
}

func TestMADPortCountersGolden(t *testing.T) {
	madGolden(t, madPortCountersVec, madHex(t, madPortCountersHex))
}

func TestMADPortCountersExtendedGolden(t *testing.T) {
	b := madHex(t, madPortCountersExtHex)
	if len(b) != PortCountersExtendedSize {
		t.Fatalf("vector has %d bytes", len(b))
	}
	madGolden(t, madPortCountersExtVec, b)
}

func TestMADRMPPHeaderGolden(t *testing.T) {
	madGolden(t, madVendor.RMPP, madHex(t, madVendorHex)[MADHeaderSize:VendorOUIOffset])
}

func TestMADNodeDescriptionGolden(t *testing.T) {
	var d NodeDescription
	if err := d.SetString("rxe0 HCA-1"); err != nil {
		t.Fatal(err)
	}
	madGolden(t, d, madPad([]byte("rxe0 HCA-1"), NodeDescriptionSize))
	if got := d.String(); got != "rxe0 HCA-1" {
		t.Errorf("String = %q", got)
	}
	// Not NUL-terminated when all 64 bytes are text.
	full := strings.Repeat("x", NodeDescriptionSize)
	if err := d.SetString(full); err != nil {
		t.Fatal(err)
	}
	if d.String() != full {
		t.Errorf("64-byte text: String = %q", d.String())
	}
}

func TestMADPerfMADGolden(t *testing.T) {
	want := madPerfResp
	if err := want.SetAttribute(&madPortCountersVec); err != nil {
		t.Fatal(err)
	}
	b := madPerfRespBytes(t)
	madGolden(t, want, b)

	var m PerfMAD
	if err := m.Decode(b); err != nil {
		t.Fatal(err)
	}
	a, err := m.Attribute()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&madPortCountersVec, a); diff != "" {
		t.Errorf("Attribute (-want +got):\n%s", diff)
	}
}

func TestMADSMPDirectedRouteGolden(t *testing.T) {
	want := madDRSMP
	if err := want.SetAttribute(&madNodeInfoVec); err != nil {
		t.Fatal(err)
	}
	b := madDRSMPBytes(t)
	madGolden(t, want, b)

	var s SMP
	if err := s.Decode(b); err != nil {
		t.Fatal(err)
	}
	if !s.DirectedRoute() || !s.Direction || s.Header.Status != 0 || s.Header.ClassSpecific != 0 {
		t.Errorf("DR fields: %v %v status %v class-specific %#x", s.DirectedRoute(), s.Direction, s.Header.Status, s.Header.ClassSpecific)
	}
	if s.MADHeader() != &s.Header {
		t.Error("MADHeader does not point at Header")
	}
	a, err := s.Attribute()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&madNodeInfoVec, a); diff != "" {
		t.Errorf("Attribute (-want +got):\n%s", diff)
	}
}

func TestMADSMPDirectedRouteStatus(t *testing.T) {
	// D and a 15-bit status share bytes 4-5: 0x801c is D plus "invalid
	// attribute value".
	b := madDRSMPBytes(t)
	b[4], b[5] = 0x80, 0x1c
	var s SMP
	if err := s.Decode(b); err != nil {
		t.Fatal(err)
	}
	if !s.Direction || s.Header.Status != StatusInvalidAttrValue {
		t.Errorf("Direction %v Status %v, want true and 0x001c", s.Direction, s.Header.Status)
	}
	if got := s.Append(nil); !cmp.Equal(got, b) {
		t.Errorf("re-encoded bytes 4-5 % x, want 80 1c", got[4:6])
	}
	b[4] = 0 // D clear: on the way out
	if err := s.Decode(b); err != nil || s.Direction {
		t.Errorf("D clear: Direction %v, err %v", s.Direction, err)
	}
}

func TestMADSMPLIDRoutedGolden(t *testing.T) {
	want := SMP{Header: NewMADHeader(ClassSubnMgmt, MethodGet, SMAttrPortInfo, 1, 5), MKey: 0x0102030405060708}
	b := madPad(madHex(t, madLIDSMPHex), MADSize)
	madGolden(t, want, b)

	// In a LID-routed SMP bytes 6-7 are ClassSpecific and the DR areas
	// are reserved: ignored when read.
	dirty := append([]byte(nil), b...)
	dirty[6], dirty[7] = 0x12, 0x34
	for i := 32; i < 64; i++ {
		dirty[i] = 0xff
	}
	for i := 128; i < MADSize; i++ {
		dirty[i] = 0xff
	}
	var s SMP
	if err := s.Decode(dirty); err != nil {
		t.Fatal(err)
	}
	want.Header.ClassSpecific = 0x1234
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMADSMPSetInitialPath(t *testing.T) {
	s := SMP{Header: NewMADHeader(ClassSubnMgmtDirectedRoute, MethodGet, SMAttrNodeInfo, 0, 1),
		DrSLID: PermissiveLID, DrDLID: PermissiveLID}
	s.HopPointer = 9
	if err := s.SetInitialPath(1, 3); err != nil {
		t.Fatal(err)
	}
	if s.HopCount != 2 || s.HopPointer != 0 || s.InitialPath != ([SMPMaxHops]byte{1: 1, 2: 3}) {
		t.Errorf("HopCount %d HopPointer %d path % x", s.HopCount, s.HopPointer, s.InitialPath[:4])
	}
	b := s.Append(nil)
	if b[7] != 2 || b[129] != 1 || b[130] != 3 || b[32] != 0xff {
		t.Errorf("wire: hop count %d path % x DrSLID % x", b[7], b[128:132], b[32:34])
	}
	if err := s.SetInitialPath(); err != nil || s.HopCount != 0 || s.InitialPath != ([SMPMaxHops]byte{}) {
		t.Errorf("empty path: %v, HopCount %d", err, s.HopCount)
	}
	if err := s.SetInitialPath(make([]uint8, SMPMaxHops-1)...); err != nil {
		t.Errorf("63 hops: %v", err)
	}
	if err := s.SetInitialPath(make([]uint8, SMPMaxHops)...); !errors.Is(err, ErrFieldRange) {
		t.Errorf("64 hops: %v, want ErrFieldRange", err)
	}
}

func TestMADVendorGolden(t *testing.T) {
	madGolden(t, madVendor, madPad(madHex(t, madVendorHex), MADSize))
}

func TestMADRawGolden(t *testing.T) {
	// An SA Get(ClassPortInfo) has no Go type here: it stays raw.
	b := madPad(madHex(t, `01 03 02 01  00 00 00 00  00 00 00 00 00 00 00 09  00 01 00 00  00 00 00 00`), MADSize)
	b[100] = 0x5a
	want := RawMAD{Header: NewMADHeader(ClassSubnAdm, MethodGet, AttrClassPortInfo, 0, 9)}
	want.Data[100-MADHeaderSize] = 0x5a
	madGolden(t, want, b)
}

func TestMADNewMADHeader(t *testing.T) {
	for class, version := range map[MgmtClass]uint8{
		ClassSubnMgmt: 1, ClassSubnMgmtDirectedRoute: 1, ClassPerfMgmt: 1, ClassSubnAdm: 2,
		ClassCM: 2, ClassCongestionMgmt: 2, ClassBM: 1, 0x30: 1,
	} {
		h := NewMADHeader(class, MethodSet, 0x42, 7, 99)
		want := MADHeader{BaseVersion: 1, MgmtClass: class, ClassVersion: version, Method: MethodSet,
			TransactionID: 99, AttributeID: 0x42, AttributeModifier: 7}
		if h != want {
			t.Errorf("%v: %+v, want %+v", class, h, want)
		}
	}
}

func TestMADMethod(t *testing.T) {
	for _, tc := range []struct {
		m, resp Method
		isResp  bool
		name    string
	}{
		{MethodGet, MethodGetResp, false, "Get"},
		{MethodSet, MethodGetResp, false, "Set"},
		{MethodTrap, MethodTrapRepress, false, "Trap"},
		{MethodReport, MethodReportResp, false, "Report"},
		{MethodGetTable, MethodGetTableResp, false, "GetTable"},
		{MethodGetResp, MethodGetResp, true, "GetResp"},
		{MethodTrapRepress, 0x87, false, "TrapRepress"},
		{0x7f, 0xff, false, "Method(0x7f)"},
	} {
		if got := tc.m.Response(); got != tc.resp {
			t.Errorf("%v.Response() = %v, want %v", tc.m, got, tc.resp)
		}
		if got := tc.m.IsResponse(); got != tc.isResp {
			t.Errorf("%v.IsResponse() = %v", tc.m, got)
		}
		if got := tc.m.String(); got != tc.name {
			t.Errorf("String() = %q, want %q", got, tc.name)
		}
	}
}

func TestMADClass(t *testing.T) {
	for _, tc := range []struct {
		c          MgmtClass
		name       string
		sm, v1, v2 bool
	}{
		{ClassSubnMgmt, "SubnMgmt", true, false, false},
		{ClassSubnMgmtDirectedRoute, "SubnMgmtDirectedRoute", true, false, false},
		{ClassPerfMgmt, "PerfMgmt", false, false, false},
		{0x09, "Vendor1(0x09)", false, true, false},
		{0x0f, "Vendor1(0x0f)", false, true, false},
		{0x30, "Vendor2(0x30)", false, false, true},
		{0x4f, "Vendor2(0x4f)", false, false, true},
		{0x50, "MgmtClass(0x50)", false, false, false},
	} {
		if tc.c.String() != tc.name || tc.c.IsSubnMgmt() != tc.sm || tc.c.IsVendorRange1() != tc.v1 || tc.c.IsVendorRange2() != tc.v2 {
			t.Errorf("%#x: %q sm %v v1 %v v2 %v", uint8(tc.c), tc.c.String(), tc.c.IsSubnMgmt(), tc.c.IsVendorRange1(), tc.c.IsVendorRange2())
		}
	}
}

func TestMADStatusString(t *testing.T) {
	for s, want := range map[MADStatus]string{
		0:                                   "0x0000 (ok)",
		StatusMethodAttrUnsupported:         "0x000c (method/attribute unsupported)",
		StatusInvalidAttrValue | StatusBusy: "0x001d (invalid attribute value, busy)",
		StatusRedirectRequired:              "0x0002 (ok, redirect required)",
		0x0010:                              "0x0010 (reserved code)",
	} {
		if got := s.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint16(s), got, want)
		}
	}
	if StatusInvalidAttrValue.Code() != StatusInvalidAttrValue || (StatusBusy|0x0100).Code() != 0 {
		t.Error("Code")
	}
}

func TestMADDataOctets(t *testing.T) {
	pc := PortCounters{PortXmitData: 0xffffffff, PortRcvData: 3}
	if pc.XmitDataOctets() != 4*0xffffffff || pc.RcvDataOctets() != 12 {
		t.Errorf("PortCounters: %d %d", pc.XmitDataOctets(), pc.RcvDataOctets())
	}
	ext := PortCountersExtended{PortXmitData: 1 << 62, PortRcvData: 1<<62 - 1}
	if ext.XmitDataOctets() != ^uint64(0) {
		t.Errorf("saturation: %#x", ext.XmitDataOctets())
	}
	if ext.RcvDataOctets() != 1<<64-4 {
		t.Errorf("largest exact value: %#x", ext.RcvDataOctets())
	}
}

func TestMADDecodeMAD(t *testing.T) {
	perf := madPerfRespBytes(t)
	dr := madDRSMPBytes(t)
	vendor := madPad(madHex(t, madVendorHex), MADSize)
	opa := append([]byte(nil), dr...)
	opa[0] = 0x80
	vendor1 := madPad([]byte{1, 0x09, 1, 1}, MADSize)
	cm := madPad([]byte{1, byte(ClassCM), 2, 3}, MADSize)

	for name, tc := range map[string]struct {
		b    []byte
		want Message
	}{
		"perf":    {perf, &PerfMAD{}},
		"dr smp":  {dr, &SMP{}},
		"vendor2": {vendor, &VendorMAD{}},
		"opa":     {opa, &RawMAD{}},
		"vendor1": {vendor1, &RawMAD{}},
		"cm":      {cm, &RawMAD{}},
	} {
		m, err := DecodeMAD(tc.b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := tc.want.Decode(tc.b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(tc.want, m); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		if got := m.Append(nil); !cmp.Equal(got, tc.b) {
			t.Errorf("%s: re-encoded differs", name)
		}
		if *m.MADHeader() != madHeaderOf(tc.b) && name != "dr smp" {
			t.Errorf("%s: MADHeader %+v", name, *m.MADHeader())
		}
	}
}

func madHeaderOf(b []byte) MADHeader {
	var h MADHeader
	h.get(b)
	return h
}

func TestMADDecodeAttribute(t *testing.T) {
	data := func(hexs string) []byte { return madPad(madHex(t, hexs), PerfDataSize) }
	var desc NodeDescription
	_ = desc.SetString("node")
	for _, tc := range []struct {
		class MgmtClass
		id    AttrID
		data  []byte
		want  Attribute
	}{
		{ClassSubnMgmt, SMAttrNodeInfo, data(madNodeInfoHex)[:SMPDataSize], &madNodeInfoVec},
		{ClassSubnMgmtDirectedRoute, SMAttrPortInfo, madHex(t, madPortInfoHex), &madPortInfoVec},
		{ClassSubnMgmt, SMAttrNodeDescription, desc[:], &desc},
		{ClassPerfMgmt, AttrClassPortInfo, data(madClassPortInfoHex), &madClassPortInfoVec},
		{ClassPerfMgmt, PMAttrPortCounters, data(madPortCountersHex), &madPortCountersVec},
		{ClassPerfMgmt, PMAttrPortCountersExtended, data(madPortCountersExtHex), &madPortCountersExtVec},
		{ClassSubnAdm, AttrClassPortInfo, data(madClassPortInfoHex), &madClassPortInfoVec},
	} {
		a, err := DecodeAttribute(tc.class, tc.id, tc.data)
		if err != nil {
			t.Errorf("%v %#x: %v", tc.class, tc.id, err)
			continue
		}
		if diff := cmp.Diff(tc.want, a); diff != "" {
			t.Errorf("%v %#x (-want +got):\n%s", tc.class, tc.id, diff)
		}
		if a.AttributeID() != tc.id {
			t.Errorf("%v %#x: AttributeID %#x", tc.class, tc.id, a.AttributeID())
		}
	}
}

// madErrCase is one error path: the call and the sentinel it must wrap.
type madErrCase struct {
	name string
	err  error
	want error
}

func TestMADErrors(t *testing.T) {
	perf := madPerfRespBytes(t)
	dr := madDRSMPBytes(t)
	vendor := madPad(madHex(t, madVendorHex), MADSize)
	with := func(b []byte, i int, v byte) []byte {
		b = append([]byte(nil), b...)
		b[i] = v
		return b
	}
	long := make([]byte, MADSize+1)
	copy(long, perf)

	var (
		h   MADHeader
		smp SMP
		pm  PerfMAD
		vm  VendorMAD
		raw RawMAD
		ni  NodeInfo
		pi  PortInfo
		nd  NodeDescription
		cpi ClassPortInfo
		pc  PortCounters
		pcx PortCountersExtended
		rh  RMPPHeader
	)
	mustFail := func(_ []byte, err error) error { return err }
	cases := []madErrCase{
		// Lengths.
		{"header short", h.Decode(make([]byte, MADHeaderSize-1)), ErrShortMAD},
		{"header nil", h.UnmarshalBinary(nil), ErrShortMAD},
		{"SMP short", smp.Decode(dr[:MADSize-1]), ErrShortMAD},
		{"SMP long", smp.Decode(append(append([]byte(nil), dr...), 0)), ErrLongMAD},
		{"PerfMAD short", pm.Decode(perf[:100]), ErrShortMAD},
		{"PerfMAD long", pm.Decode(long), ErrLongMAD},
		{"VendorMAD short", vm.Decode(vendor[:VendorDataOffset]), ErrShortMAD},
		{"VendorMAD long", vm.UnmarshalBinary(append(append([]byte(nil), vendor...), 0)), ErrLongMAD},
		{"RawMAD short", raw.Decode(perf[:MADHeaderSize]), ErrShortMAD},
		{"RawMAD long", raw.Decode(long), ErrLongMAD},
		{"DecodeMAD short", mustFail(nil, madDecodeMADErr(perf[:MADSize-1])), ErrShortMAD},
		{"DecodeMAD long", madDecodeMADErr(long), ErrLongMAD},
		{"DecodeMAD empty", madDecodeMADErr(nil), ErrShortMAD},
		{"NodeInfo short", ni.Decode(make([]byte, NodeInfoSize-1)), ErrShortMAD},
		{"PortInfo short", pi.Decode(make([]byte, PortInfoSize-1)), ErrShortMAD},
		{"NodeDescription short", nd.Decode(make([]byte, NodeDescriptionSize-1)), ErrShortMAD},
		{"ClassPortInfo short", cpi.Decode(make([]byte, ClassPortInfoSize-1)), ErrShortMAD},
		{"PortCounters short", pc.Decode(make([]byte, PortCountersSize-1)), ErrShortMAD},
		{"PortCountersExtended short", pcx.Decode(make([]byte, PortCountersExtendedSize-1)), ErrShortMAD},
		{"RMPP header short", rh.Decode(make([]byte, RMPPHeaderSize-1)), ErrShortMAD},
		{"DecodeAttribute short", madDecodeAttrErr(ClassPerfMgmt, PMAttrPortCountersExtended, make([]byte, 100)), ErrShortMAD},
		{"DecodeAttribute ClassPortInfo in SMP data", madDecodeAttrErr(ClassSubnMgmt, AttrClassPortInfo, make([]byte, SMPDataSize)), ErrUnknownAttribute},

		// Versions and classes.
		{"SMP base version", smp.Decode(with(dr, 0, 0x80)), ErrBaseVersion},
		{"SMP class", smp.Decode(perf), ErrWrongClass},
		{"PerfMAD base version", pm.Decode(with(perf, 0, 2)), ErrBaseVersion},
		{"PerfMAD class", pm.Decode(dr), ErrWrongClass},
		{"VendorMAD base version", vm.Decode(with(vendor, 0, 0)), ErrBaseVersion},
		{"VendorMAD range 1", vm.Decode(with(vendor, 1, 0x09)), ErrWrongClass},
		{"VendorMAD class 0x50", vm.Decode(with(vendor, 1, 0x50)), ErrWrongClass},
		{"DecodeAttribute unknown", madDecodeAttrErr(ClassPerfMgmt, PMAttrPortSamplesResult, make([]byte, PerfDataSize)), ErrUnknownAttribute},
		{"DecodeAttribute SMInfo", madDecodeAttrErr(ClassSubnMgmt, SMAttrSMInfo, make([]byte, SMPDataSize)), ErrUnknownAttribute},
		{"DecodeAttribute SwitchInfo short", madDecodeAttrErr(ClassSubnMgmt, SMAttrSwitchInfo, make([]byte, SwitchInfoSize-1)), ErrShortMAD},

		// Validate, through MarshalBinary.
		{"SMP validate version", mustFail((&SMP{Header: MADHeader{MgmtClass: ClassSubnMgmt}}).MarshalBinary()), ErrBaseVersion},
		{"SMP validate class", mustFail((&SMP{Header: NewMADHeader(ClassPerfMgmt, MethodGet, 0, 0, 0)}).MarshalBinary()), ErrWrongClass},
		{"SMP DR status bit 15", mustFail((&SMP{Header: MADHeader{BaseVersion: 1, MgmtClass: ClassSubnMgmtDirectedRoute, Status: StatusDirection}}).MarshalBinary()), ErrFieldRange},
		{"SMP DR class-specific", mustFail((&SMP{Header: MADHeader{BaseVersion: 1, MgmtClass: ClassSubnMgmtDirectedRoute, ClassSpecific: 0x0102}}).MarshalBinary()), ErrFieldRange},
		{"SMP LID hop count", mustFail((&SMP{Header: NewMADHeader(ClassSubnMgmt, MethodGet, 0, 0, 0), HopCount: 1}).MarshalBinary()), ErrFieldRange},
		{"SMP LID direction", mustFail((&SMP{Header: NewMADHeader(ClassSubnMgmt, MethodGet, 0, 0, 0), Direction: true}).MarshalBinary()), ErrFieldRange},
		{"SMP LID DrDLID", mustFail((&SMP{Header: NewMADHeader(ClassSubnMgmt, MethodGet, 0, 0, 0), DrDLID: PermissiveLID}).MarshalBinary()), ErrFieldRange},
		{"SMP LID path", mustFail((&SMP{Header: NewMADHeader(ClassSubnMgmt, MethodGet, 0, 0, 0), ReturnPath: [SMPMaxHops]byte{5: 1}}).MarshalBinary()), ErrFieldRange},
		{"PerfMAD validate version", mustFail((&PerfMAD{Header: MADHeader{MgmtClass: ClassPerfMgmt}}).MarshalBinary()), ErrBaseVersion},
		{"PerfMAD validate class", mustFail((&PerfMAD{Header: NewMADHeader(ClassCM, MethodGet, 0, 0, 0)}).MarshalBinary()), ErrWrongClass},
		{"VendorMAD validate version", mustFail((&VendorMAD{Header: MADHeader{MgmtClass: 0x30}}).MarshalBinary()), ErrBaseVersion},
		{"VendorMAD validate class", mustFail((&VendorMAD{Header: NewMADHeader(0x0a, MethodGet, 0, 0, 0)}).MarshalBinary()), ErrWrongClass},
		{"VendorMAD OUI", mustFail((&VendorMAD{Header: NewMADHeader(0x30, MethodGet, 0, 0, 0), OUI: 1 << 24}).MarshalBinary()), ErrFieldRange},
		{"VendorMAD RMPP flags", mustFail((&VendorMAD{Header: NewMADHeader(0x30, MethodGet, 0, 0, 0), RMPP: RMPPHeader{Flags: 8}}).MarshalBinary()), ErrFieldRange},
		{"RMPP resp time", mustFail((&RMPPHeader{RespTime: 32}).MarshalBinary()), ErrFieldRange},
		{"NodeInfo VendorID", mustFail((&NodeInfo{VendorID: 1 << 24}).MarshalBinary()), ErrFieldRange},
		{"PortInfo LMC", mustFail((&PortInfo{LMC: 8}).MarshalBinary()), ErrFieldRange},
		{"PortInfo PortState", mustFail((&PortInfo{PortState: 16}).MarshalBinary()), ErrFieldRange},
		{"PortInfo LinkSpeedExtEnabled", mustFail((&PortInfo{LinkSpeedExtEnabled: 32}).MarshalBinary()), ErrFieldRange},
		{"PortInfo LinkRoundTripLatency", mustFail((&PortInfo{LinkRoundTripLatency: 1 << 24}).MarshalBinary()), ErrFieldRange},
		{"ClassPortInfo CapabilityMask2", mustFail((&ClassPortInfo{CapabilityMask2: 1 << 27}).MarshalBinary()), ErrFieldRange},
		{"ClassPortInfo RedirectFL", mustFail((&ClassPortInfo{RedirectFL: 1 << 20}).MarshalBinary()), ErrFieldRange},
		{"ClassPortInfo TrapQP", mustFail((&ClassPortInfo{TrapQP: 1 << 24}).MarshalBinary()), ErrFieldRange},
		{"PortCounters LocalLinkIntegrityErrors", mustFail((&PortCounters{LocalLinkIntegrityErrors: 16}).MarshalBinary()), ErrFieldRange},
		{"PortCounters ExcessiveBufferOverrunErrors", mustFail((&PortCounters{ExcessiveBufferOverrunErrors: 16}).MarshalBinary()), ErrFieldRange},

		// Setters.
		{"NodeDescription too long", nd.SetString(strings.Repeat("x", NodeDescriptionSize+1)), ErrFieldRange},
		{"SMP SetAttribute ClassPortInfo", (&SMP{}).SetAttribute(&ClassPortInfo{}), ErrAttributeSize},
		{"PerfMAD SetAttribute too big", (&PerfMAD{}).SetAttribute(&madBigAttr{}), ErrAttributeSize},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		} else if !strings.HasPrefix(tc.err.Error(), "umad: ") {
			t.Errorf("%s: message %q lacks the package prefix", tc.name, tc.err)
		}
	}
}

func madDecodeMADErr(b []byte) error {
	m, err := DecodeMAD(b)
	if m != nil {
		return errors.New("DecodeMAD returned a message with its error")
	}
	return err
}

func madDecodeAttrErr(c MgmtClass, id AttrID, b []byte) error {
	a, err := DecodeAttribute(c, id, b)
	if a != nil {
		return errors.New("DecodeAttribute returned an attribute with its error")
	}
	return err
}

// madBigAttr is an attribute larger than any data area.
type madBigAttr struct{ NodeDescription }

func (*madBigAttr) Append(b []byte) []byte { return append(b, make([]byte, MADSize)...) }

func TestMADDecodeErrorLeavesValue(t *testing.T) {
	// A failed MAD decode leaves the destination as it was.
	want := madDRSMP
	s := want
	if err := s.Decode(madPerfRespBytes(t)); err == nil {
		t.Fatal("no error")
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	pm := madPerfResp
	if err := pm.Decode(madDRSMPBytes(t)); err == nil || pm != madPerfResp {
		t.Errorf("PerfMAD: err %v, changed %v", err, pm != madPerfResp)
	}
}

func TestMADSetAttributeClearsData(t *testing.T) {
	var m PerfMAD
	for i := range m.Data {
		m.Data[i] = 0xaa
	}
	if err := m.SetAttribute(&madPortCountersVec); err != nil {
		t.Fatal(err)
	}
	if m.Header.AttributeID != PMAttrPortCounters {
		t.Errorf("AttributeID %#x", m.Header.AttributeID)
	}
	for i := PortCountersSize; i < PerfDataSize; i++ {
		if m.Data[i] != 0 {
			t.Fatalf("Data[%d] = %#x after SetAttribute", i, m.Data[i])
		}
	}
	if err := m.SetAttribute(&madBigAttr{}); err == nil || m.Data != ([PerfDataSize]byte{}) {
		t.Errorf("too big: err %v, data not cleared", err)
	}
}

// The encoders and decoders of the hot path must not allocate.
func TestMADZeroAllocs(t *testing.T) {
	buf := make([]byte, 0, MADSize)
	in := madPerfRespBytes(t)
	dr := madDRSMPBytes(t)
	vendor := madPad(madHex(t, madVendorHex), MADSize)
	var (
		m  = madPerfResp
		pc = madPortCountersVec
		h  = madHeaderVec
	)
	for name, f := range map[string]func(){
		"header Append":              func() { buf = h.Append(buf[:0]) },
		"header Decode":              func() { _ = h.Decode(in) },
		"PortCounters MAD encode":    func() { pc.Append(m.Data[:0]); buf = m.Append(buf[:0]) },
		"PortCounters MAD decode":    func() { _ = m.Decode(in); _ = pc.Decode(m.Data[:]) },
		"PortCountersExtended":       func() { var x PortCountersExtended; _ = x.Decode(m.Data[:]); buf = x.Append(buf[:0]) },
		"SMP round trip":             func() { var s SMP; _ = s.Decode(dr); buf = s.Append(buf[:0]) },
		"PortInfo round trip":        func() { var p PortInfo; _ = p.Decode(m.Data[:]); buf = p.Append(buf[:0]) },
		"VendorMAD round trip":       func() { var v VendorMAD; _ = v.Decode(vendor); buf = v.Append(buf[:0]) },
		"failed decode (static err)": func() { _ = m.Decode(in[:10]) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs/op", name, n)
		}
	}
}
