package umad

import (
	"encoding/binary"
	"fmt"
)

// PerfCounterSet is one of the PerfMgmt attributes that hold a port's
// counters of one kind side by side (IBA 16.1.4 and the congestion
// control annex A10): PortSelect at byte 1, CounterSelect at bytes 2–3,
// then the counters from byte 4 on, all of one width, big-endian and
// packed without gaps (libibmad's IB_PC_XMT_DATA_SL_* ...
// IB_PC_VL_XMIT_TIME_CONG_* fields). ID says which attribute it is, and
// with it how many counters there are and how wide
// (PerfCounterSetLayout):
//
//	PMAttrPortXmitDataSL, PMAttrPortRcvDataSL        16 × 32 bits (per SL)
//	PMAttrPortXmitDiscardDetails                     4 × 16
//	PMAttrPortRcvErrorDetails                        6 × 16
//	PMAttrPortOpRcvCounters, PMAttrPortFlowCtlCounters  2 × 32
//	PMAttrPortVLOpPackets                            16 × 16 (per VL)
//	PMAttrPortVLOpData                               16 × 32
//	PMAttrPortVLXmitFlowCtlUpdateErrors              16 × 2
//	PMAttrPortVLXmitWaitCounters                     16 × 16
//	PMAttrSwPortVLCongestion                         16 × 16
//	PMAttrPortRcvConCtrl                             2 × 32 (FECN, BECN)
//	PMAttrPortSLRcvFECN, PMAttrPortSLRcvBECN         16 × 32
//	PMAttrPortXmitConCtrl                            1 × 32
//	PMAttrPortVLXmitTimeCong                         15 × 32 (VL 0–14)
//
// libibmad reads them with pma_query_via and infiniband-diags' perfquery
// prints them with mad_dump_perfcounters_xmt_sl, ..._rcv_sl,
// ..._xmt_disc, ..._rcv_err, ..._port_op_rcv_counters,
// ..._port_flow_ctl_counters, ..._port_vl_op_packet, ..._port_vl_op_data,
// ..._port_vl_xmit_flow_ctl_update_errors,
// ..._port_vl_xmit_wait_counters, ..._sw_port_vl_congestion,
// ..._rcv_con_ctrl, ..._sl_rcv_fecn, ..._sl_rcv_becn, ..._xmit_con_ctrl
// and ..._vl_xmit_time_cong (perfquery -X, -S, -D, -E, --oprcvcounters
// ... --vlxmittimecc); a Set with CounterSelect bits clears counters, as
// libibmad's performance_reset_via sends it.
type PerfCounterSet struct {
	ID            AttrID
	PortSelect    uint8  // PortSelect: 8, 8 (AllPortSelect: every port)
	CounterSelect uint16 // CounterSelect: 16, 16
	// Counters are the counters in wire order; Decode sets as many as
	// the attribute has, reusing the slice's room.
	Counters []uint64
}

// PerfCounterSetLayout returns how many counters the PerfMgmt attribute
// id holds as a PerfCounterSet and how many bits wide each is; ok is
// false for an attribute that is not one. (A switch, not a map: a
// package-level map is built at every start of every program that links
// the package.)
func PerfCounterSetLayout(id AttrID) (n, width int, ok bool) {
	switch id {
	case PMAttrPortXmitDataSL:
		return 16, 32, true
	case PMAttrPortRcvDataSL:
		return 16, 32, true
	case PMAttrPortXmitDiscardDetails:
		return 4, 16, true
	case PMAttrPortRcvErrorDetails:
		return 6, 16, true
	case PMAttrPortOpRcvCounters:
		return 2, 32, true
	case PMAttrPortFlowCtlCounters:
		return 2, 32, true
	case PMAttrPortVLOpPackets:
		return 16, 16, true
	case PMAttrPortVLOpData:
		return 16, 32, true
	case PMAttrPortVLXmitFlowCtlUpdateErrors:
		return 16, 2, true
	case PMAttrPortVLXmitWaitCounters:
		return 16, 16, true
	case PMAttrSwPortVLCongestion:
		return 16, 16, true
	case PMAttrPortRcvConCtrl:
		return 2, 32, true
	case PMAttrPortSLRcvFECN:
		return 16, 32, true
	case PMAttrPortSLRcvBECN:
		return 16, 32, true
	case PMAttrPortXmitConCtrl:
		return 1, 32, true
	case PMAttrPortVLXmitTimeCong:
		return 15, 32, true
	}
	return 0, 0, false
}

// PerfCounterSetSize returns the attribute's size in bytes (the header
// and the counters, rounded up to a byte), 0 for an attribute that is
// not a PerfCounterSet.
func PerfCounterSetSize(id AttrID) int {
	n, w, ok := PerfCounterSetLayout(id)
	if !ok {
		return 0
	}
	return 4 + (n*w+7)/8
}

// AttributeID returns ID.
func (p *PerfCounterSet) AttributeID() AttrID {
	if p == nil {
		return 0
	}
	return p.ID
}

// bitsAt reads the w-bit big-endian field at bit off of b.
func bitsAt(b []byte, off, w int) uint64 {
	var v uint64
	for i := 0; i < w; i++ {
		o := off + i
		v = v<<1 | uint64(b[o/8]>>(7-o%8)&1)
	}
	return v
}

// putBitsAt writes v's low w bits at bit off of b.
func putBitsAt(b []byte, off, w int, v uint64) {
	for i := 0; i < w; i++ {
		o := off + i
		bit := byte(v>>(w-1-i)) & 1
		b[o/8] = b[o/8]&^(1<<(7-o%8)) | bit<<(7-o%8)
	}
}

// Append appends the attribute to b (PerfCounterSetSize(ID) bytes, the
// reserved byte zero), each counter modulo its width, missing counters
// zero and extra ones left out. An ID that is no PerfCounterSet appends
// the 4-byte header alone.
func (p *PerfCounterSet) Append(b []byte) []byte {
	if p == nil {
		return b
	}
	n, w, ok := PerfCounterSetLayout(p.ID)
	size := 4
	if ok {
		size = PerfCounterSetSize(p.ID)
	}
	b, t := grow(b, size)
	t[1] = p.PortSelect
	binary.BigEndian.PutUint16(t[2:4], p.CounterSelect)
	for i := 0; i < n && i < len(p.Counters); i++ {
		putBitsAt(t, 32+i*w, w, p.Counters[i])
	}
	return b
}

// Decode sets p from the start of b (a PerfMAD's Data) for the attribute
// p.ID. It returns an error wrapping ErrUnknownAttribute when ID is no
// PerfCounterSet and one wrapping ErrShortMAD when b is shorter than
// the attribute.
func (p *PerfCounterSet) Decode(b []byte) error {
	if p == nil {
		return errNil("PerfCounterSet.Decode")
	}
	n, w, ok := PerfCounterSetLayout(p.ID)
	if !ok {
		return fmt.Errorf("umad: PerfMgmt attribute %#04x is no counter set: %w", uint16(p.ID), ErrUnknownAttribute)
	}
	if size := PerfCounterSetSize(p.ID); len(b) < size {
		return madError(fmt.Sprintf("PerfCounterSet %#04x needs %d bytes", uint16(p.ID), size), &ErrShortMAD)
	}
	p.PortSelect = b[1]
	p.CounterSelect = binary.BigEndian.Uint16(b[2:4])
	if cap(p.Counters) >= n {
		p.Counters = p.Counters[:n]
	} else {
		p.Counters = make([]uint64, n)
	}
	for i := range p.Counters {
		p.Counters[i] = bitsAt(b, 32+i*w, w)
	}
	return nil
}

// Validate reports an ID that is no PerfCounterSet (ErrUnknownAttribute),
// more counters than the attribute has, and a counter wider than its
// field (ErrFieldRange).
func (p *PerfCounterSet) Validate() error {
	if p == nil {
		return errNil("PerfCounterSet.Validate")
	}
	n, w, ok := PerfCounterSetLayout(p.ID)
	if !ok {
		return fmt.Errorf("umad: PerfMgmt attribute %#04x is no counter set: %w", uint16(p.ID), ErrUnknownAttribute)
	}
	if len(p.Counters) > n {
		return madError(fmt.Sprintf("PerfCounterSet %#04x has %d counters, not %d", uint16(p.ID), n, len(p.Counters)), &ErrFieldRange)
	}
	for i, c := range p.Counters {
		if w < 64 && c>>w != 0 {
			return rangeError("PerfCounterSet", fmt.Sprintf("Counters[%d]", i), c, w)
		}
	}
	return nil
}

// MarshalBinary is Validate followed by Append.
func (p *PerfCounterSet) MarshalBinary() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p.Append(nil), nil
}

// UnmarshalBinary is Decode.
func (p *PerfCounterSet) UnmarshalBinary(b []byte) error {
	if p == nil {
		return errNil("PerfCounterSet.UnmarshalBinary")
	}
	return p.Decode(b)
}
