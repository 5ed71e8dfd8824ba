package umad

import (
	"bytes"
	"testing"
)

// TestPerfAttributeLayouts checks the PMA attributes' defined bits (an
// all-ones attribute decoded and encoded again keeps exactly those) and
// where counters land.
func TestPerfAttributeLayouts(t *testing.T) {
	ones := bytes.Repeat([]byte{0xff}, PerfDataSize)
	var sc PortSamplesControl
	if err := sc.Decode(ones); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{0xff}, PortSamplesControlSize)
	want[3], want[4], want[8], want[11] = 0x07, 0x3f, 0x7f, 0x03
	copy(want[68:72], []byte{0, 0, 0, 0})
	if got := sc.Append(nil); !bytes.Equal(got, want) {
		t.Errorf("PortSamplesControl:\n got % x\nwant % x", got, want)
	}
	var es PortExtendedSpeedsCounters
	if err := es.Decode(ones); err != nil {
		t.Fatal(err)
	}
	want = bytes.Repeat([]byte{0xff}, PortExtendedSpeedsCountersSize)
	copy(want[:8], []byte{0, 0xff, 0, 0, 0, 0, 0, 0})
	if got := es.Append(nil); !bytes.Equal(got, want) {
		t.Errorf("PortExtendedSpeedsCounters:\n got % x\nwant % x", got, want)
	}
	// PortVLXmitFlowCtlUpdateErrors: 2 bits a VL from byte 4.
	b := make([]byte, PerfDataSize)
	b[1], b[4], b[7] = 3, 0b11100100, 0b00000010
	s := PerfCounterSet{ID: PMAttrPortVLXmitFlowCtlUpdateErrors}
	if err := s.Decode(b); err != nil || s.PortSelect != 3 || s.Counters[0] != 3 || s.Counters[1] != 2 || s.Counters[2] != 1 ||
		s.Counters[3] != 0 || s.Counters[14] != 0 || s.Counters[15] != 2 {
		t.Errorf("%v %+v", err, s)
	}
	// PortXmitDataSL: 32 bits an SL; too many counters or a counter too
	// wide for its field fail Validate.
	s = PerfCounterSet{ID: PMAttrPortXmitDataSL, Counters: []uint64{1, 2}}
	if got := s.Append(nil); len(got) != 68 || got[7] != 1 || got[11] != 2 {
		t.Errorf("% x", got)
	}
	if err := (&PerfCounterSet{ID: PMAttrPortXmitDataSL, Counters: []uint64{1 << 32}}).Validate(); err == nil {
		t.Error("a 33-bit counter passed")
	}
	if err := (&PerfCounterSet{ID: PMAttrPortXmitConCtrl, Counters: []uint64{1, 2}}).Validate(); err == nil {
		t.Error("two counters of PortXmitConCtrl passed")
	}
}
