package umad

// Bit-layout tests: every field of every attribute is checked against a
// table transcribed from the IBA field tables (bit offset from the start of
// the attribute, most significant bit of byte 0 first, and width), the
// same numbers libibmad/fields.c passes to BITSOFFS. The tables are typed
// in independently of the codecs' byte arithmetic: for each field the test
// sets exactly that field's bits, decodes, checks that only the Go field of
// that name came out non-zero and all ones, and encodes back to the same
// bits.

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type madBitField struct {
	name  string // Go field name
	off   int    // bit offset
	width int    // bits
}

var madPortInfoFields = []madBitField{
	{"MKey", 0, 64},
	{"GIDPrefix", 64, 64},
	{"LID", 128, 16},
	{"MasterSMLID", 144, 16},
	{"CapabilityMask", 160, 32},
	{"DiagCode", 192, 16},
	{"MKeyLeasePeriod", 208, 16},
	{"LocalPortNum", 224, 8},
	{"LinkWidthEnabled", 232, 8},
	{"LinkWidthSupported", 240, 8},
	{"LinkWidthActive", 248, 8},
	{"LinkSpeedSupported", 256, 4},
	{"PortState", 260, 4},
	{"PortPhysicalState", 264, 4},
	{"LinkDownDefaultState", 268, 4},
	{"MKeyProtectBits", 272, 2},
	{"LMC", 277, 3},
	{"LinkSpeedActive", 280, 4},
	{"LinkSpeedEnabled", 284, 4},
	{"NeighborMTU", 288, 4},
	{"MasterSMSL", 292, 4},
	{"VLCap", 296, 4},
	{"InitType", 300, 4},
	{"VLHighLimit", 304, 8},
	{"VLArbitrationHighCap", 312, 8},
	{"VLArbitrationLowCap", 320, 8},
	{"InitTypeReply", 328, 4},
	{"MTUCap", 332, 4},
	{"VLStallCount", 336, 3},
	{"HOQLife", 339, 5},
	{"OperationalVLs", 344, 4},
	{"PartitionEnforcementInbound", 348, 1},
	{"PartitionEnforcementOutbound", 349, 1},
	{"FilterRawInbound", 350, 1},
	{"FilterRawOutbound", 351, 1},
	{"MKeyViolations", 352, 16},
	{"PKeyViolations", 368, 16},
	{"QKeyViolations", 384, 16},
	{"GUIDCap", 400, 8},
	{"ClientReregister", 408, 1},
	{"MulticastPKeyTrapSuppressionEnabled", 409, 2},
	{"SubnetTimeOut", 411, 5},
	{"RespTimeValue", 419, 5},
	{"LocalPhyErrors", 424, 4},
	{"OverrunErrors", 428, 4},
	{"MaxCreditHint", 432, 16},
	{"LinkSpeedExtActive2", 449, 2},
	{"LinkSpeedExtSupported2", 451, 2},
	{"LinkSpeedExtEnabled2", 453, 3},
	{"LinkRoundTripLatency", 456, 24},
	{"CapabilityMask2", 480, 16},
	{"LinkSpeedExtActive", 496, 4},
	{"LinkSpeedExtSupported", 500, 4},
	{"LinkSpeedExtEnabled", 507, 5},
}

var madNodeInfoFields = []madBitField{
	{"BaseVersion", 0, 8},
	{"ClassVersion", 8, 8},
	{"NodeType", 16, 8},
	{"NumPorts", 24, 8},
	{"SystemImageGUID", 32, 64},
	{"NodeGUID", 96, 64},
	{"PortGUID", 160, 64},
	{"PartitionCap", 224, 16},
	{"DeviceID", 240, 16},
	{"Revision", 256, 32},
	{"LocalPortNum", 288, 8},
	{"VendorID", 296, 24},
}

var madClassPortInfoFields = []madBitField{
	{"BaseVersion", 0, 8},
	{"ClassVersion", 8, 8},
	{"CapabilityMask", 16, 16},
	{"CapabilityMask2", 32, 27},
	{"RespTimeValue", 59, 5},
	{"RedirectGID", 64, 128},
	{"RedirectTC", 192, 8},
	{"RedirectSL", 200, 4},
	{"RedirectFL", 204, 20},
	{"RedirectLID", 224, 16},
	{"RedirectPKey", 240, 16},
	{"RedirectQP", 264, 24},
	{"RedirectQKey", 288, 32},
	{"TrapGID", 320, 128},
	{"TrapTC", 448, 8},
	{"TrapSL", 456, 4},
	{"TrapFL", 460, 20},
	{"TrapLID", 480, 16},
	{"TrapPKey", 496, 16},
	{"TrapHL", 512, 8},
	{"TrapQP", 520, 24},
	{"TrapQKey", 544, 32},
}

var madPortCountersFields = []madBitField{
	{"PortSelect", 8, 8},
	{"CounterSelect", 16, 16},
	{"SymbolErrorCounter", 32, 16},
	{"LinkErrorRecoveryCounter", 48, 8},
	{"LinkDownedCounter", 56, 8},
	{"PortRcvErrors", 64, 16},
	{"PortRcvRemotePhysicalErrors", 80, 16},
	{"PortRcvSwitchRelayErrors", 96, 16},
	{"PortXmitDiscards", 112, 16},
	{"PortXmitConstraintErrors", 128, 8},
	{"PortRcvConstraintErrors", 136, 8},
	{"CounterSelect2", 144, 8},
	{"LocalLinkIntegrityErrors", 152, 4},
	{"ExcessiveBufferOverrunErrors", 156, 4},
	{"QP1Dropped", 160, 16},
	{"VL15Dropped", 176, 16},
	{"PortXmitData", 192, 32},
	{"PortRcvData", 224, 32},
	{"PortXmitPkts", 256, 32},
	{"PortRcvPkts", 288, 32},
	{"PortXmitWait", 320, 32},
}

var madPortCountersExtFields = []madBitField{
	{"PortSelect", 8, 8},
	{"CounterSelect", 16, 16},
	{"CounterSelect2", 32, 32},
	{"PortXmitData", 64, 64},
	{"PortRcvData", 128, 64},
	{"PortXmitPkts", 192, 64},
	{"PortRcvPkts", 256, 64},
	{"PortUnicastXmitPkts", 320, 64},
	{"PortUnicastRcvPkts", 384, 64},
	{"PortMulticastXmitPkts", 448, 64},
	{"PortMulticastRcvPkts", 512, 64},
	{"SymbolErrorCounter", 576, 64},
	{"LinkErrorRecoveryCounter", 640, 64},
	{"LinkDownedCounter", 704, 64},
	{"PortRcvErrors", 768, 64},
	{"PortRcvRemotePhysicalErrors", 832, 64},
	{"PortRcvSwitchRelayErrors", 896, 64},
	{"PortXmitDiscards", 960, 64},
	{"PortXmitConstraintErrors", 1024, 64},
	{"PortRcvConstraintErrors", 1088, 64},
	{"LocalLinkIntegrityErrors", 1152, 64},
	{"ExcessiveBufferOverrunErrors", 1216, 64},
	{"VL15Dropped", 1280, 64},
	{"PortXmitWait", 1344, 64},
	{"QP1Dropped", 1408, 64},
}

// The RMPP header, offsets from byte 24 of the MAD (libibmad IB_RMPP_*_F,
// which counts from the least significant bit of the word: RmppResp
// BE_OFFS(24*8+11, 5) is bits 16-20 here).
var madRMPPFields = []madBitField{
	{"Version", 0, 8},
	{"Type", 8, 8},
	{"RespTime", 16, 5},
	{"Flags", 21, 3},
	{"Status", 24, 8},
	{"Data1", 32, 32},
	{"Data2", 64, 32},
}

// The common MAD header (IBA 13.4.2; libibmad IB_MAD_*_F).
var madHeaderFields = []madBitField{
	{"BaseVersion", 0, 8},
	{"MgmtClass", 8, 8},
	{"ClassVersion", 16, 8},
	{"Method", 24, 8},
	{"Status", 32, 16},
	{"ClassSpecific", 48, 16},
	{"TransactionID", 64, 64},
	{"AttributeID", 128, 16},
	{"Reserved", 144, 16},
	{"AttributeModifier", 160, 32},
}

// madCodec is what the layout tests need of a type.
type madCodec interface {
	Append(b []byte) []byte
	Decode(b []byte) error
}

// madSetBits sets bits [off, off+width) of b, MSB of byte 0 first.
func madSetBits(b []byte, off, width int) {
	for i := off; i < off+width; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
}

// madDefinedMask returns size bytes with every bit some field covers set.
func madDefinedMask(size int, fields []madBitField) []byte {
	m := make([]byte, size)
	for _, f := range fields {
		madSetBits(m, f.off, f.width)
	}
	return m
}

// madAllOnes reports whether v holds all ones of width bits.
func madAllOnes(v reflect.Value, width int) bool {
	switch v.Kind() {
	case reflect.Bool:
		return width == 1 && v.Bool()
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 1<<width-1 || (width == 64 && v.Uint() == ^uint64(0))
	case reflect.Array:
		if v.Len()*8 != width {
			return false
		}
		for i := 0; i < v.Len(); i++ {
			if v.Index(i).Uint() != 0xff {
				return false
			}
		}
		return true
	}
	return false
}

// madCheckLayout runs the per-field walk over a type whose zero value
// newV returns (a pointer to a struct).
func madCheckLayout(t *testing.T, newV func() madCodec, size int, fields []madBitField) {
	t.Helper()
	typ := reflect.TypeOf(newV()).Elem()

	// The table covers every field of the Go type, without overlaps, inside
	// the attribute.
	covered := make([]byte, size)
	inTable := map[string]bool{}
	for _, f := range fields {
		if f.off+f.width > size*8 {
			t.Fatalf("%s: bits %d+%d outside %d bytes", f.name, f.off, f.width, size)
		}
		for i := f.off; i < f.off+f.width; i++ {
			if covered[i/8]&(0x80>>(i%8)) != 0 {
				t.Fatalf("%s overlaps another field at bit %d", f.name, i)
			}
		}
		madSetBits(covered, f.off, f.width)
		if _, ok := typ.FieldByName(f.name); !ok {
			t.Fatalf("table names %s, which %v lacks", f.name, typ)
		}
		inTable[f.name] = true
	}
	for i := 0; i < typ.NumField(); i++ {
		if !inTable[typ.Field(i).Name] {
			t.Errorf("%v.%s is not in the layout table", typ, typ.Field(i).Name)
		}
	}

	for _, f := range fields {
		in := make([]byte, size)
		madSetBits(in, f.off, f.width)
		v := newV()
		if err := v.Decode(in); err != nil {
			t.Fatalf("%s: Decode: %v", f.name, err)
		}
		rv := reflect.ValueOf(v).Elem()
		for i := 0; i < rv.NumField(); i++ {
			name := typ.Field(i).Name
			fv := rv.Field(i)
			if name == f.name {
				if !madAllOnes(fv, f.width) {
					t.Errorf("%s: bits %d+%d set decode as %v, want all %d bits set", f.name, f.off, f.width, fv, f.width)
				}
			} else if !fv.IsZero() {
				t.Errorf("%s: bits %d+%d set leak into %s = %v", f.name, f.off, f.width, name, fv)
			}
		}
		if diff := cmp.Diff(in, v.Append(nil)); diff != "" {
			t.Errorf("%s: re-encoded (-want +got):\n%s", f.name, diff)
		}
	}

	// Reserved bits are ignored on decode and written as zero.
	ones := make([]byte, size)
	for i := range ones {
		ones[i] = 0xff
	}
	v := newV()
	if err := v.Decode(ones); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(madDefinedMask(size, fields), v.Append(nil)); diff != "" {
		t.Errorf("all ones re-encoded (-want +got):\n%s", diff)
	}
}

func TestMADLayoutPortInfo(t *testing.T) {
	madCheckLayout(t, func() madCodec { return new(PortInfo) }, PortInfoSize, madPortInfoFields)
}

func TestMADLayoutNodeInfo(t *testing.T) {
	madCheckLayout(t, func() madCodec { return new(NodeInfo) }, NodeInfoSize, madNodeInfoFields)
}

func TestMADLayoutClassPortInfo(t *testing.T) {
	madCheckLayout(t, func() madCodec { return new(ClassPortInfo) }, ClassPortInfoSize, madClassPortInfoFields)
}

func TestMADLayoutPortCounters(t *testing.T) {
	madCheckLayout(t, func() madCodec { return new(PortCounters) }, PortCountersSize, madPortCountersFields)
}

func TestMADLayoutPortCountersExtended(t *testing.T) {
	madCheckLayout(t, func() madCodec { return new(PortCountersExtended) }, PortCountersExtendedSize, madPortCountersExtFields)
}

func TestMADLayoutRMPPHeader(t *testing.T) {
	madCheckLayout(t, func() madCodec { return new(RMPPHeader) }, RMPPHeaderSize, madRMPPFields)
}

func TestMADLayoutHeader(t *testing.T) {
	madCheckLayout(t, func() madCodec { return new(MADHeader) }, MADHeaderSize, madHeaderFields)
}
