package diags

// perfquery's counter groups besides PortCounters and
// PortCountersExtended: one PerfMgmt attribute each, read with
// pma_query_via, printed with libibmad's mad_dump_perfcounters_* and
// reset with performance_reset_via (rdma-core 44,
// infiniband-diags/perfquery.c: common_func and the *_query functions;
// libibmad/dump.c and fields.c for the dumps).

import (
	"fmt"
	"strconv"

	"github.com/purerdma/rdma/umad"
)

// pmGroup is one of perfquery's counter groups: its option, the
// attribute's name as perfquery prints it, the attribute (a
// umad.PerfCounterSet), and its counters' names in libibmad's dump: a
// prefix numbered from 0, or one name each.
type pmGroup struct {
	short  byte
	long   string
	desc   string // perfquery.c's description of the group's option
	name   string
	attr   umad.AttrID
	prefix string
	names  []string
}

// counterNames are the group's counters' names, as many as the attribute
// has.
func (g *pmGroup) counterNames() []string {
	if g.names != nil {
		return g.names
	}
	n, _, _ := umad.PerfCounterSetLayout(g.attr)
	names := make([]string, n)
	for i := range names {
		names[i] = g.prefix + strconv.Itoa(i)
	}
	return names
}

// dump is the group's mad_dump_perfcounters_* lines: PortSelect and
// CounterSelect (IB_PC_EXT_PORT_SELECT_F, IB_PC_EXT_COUNTER_SELECT_F),
// then the counters.
func (g *pmGroup) dump(data []byte) ([]string, error) {
	set := umad.PerfCounterSet{ID: g.attr}
	if err := set.Decode(data); err != nil {
		return nil, err
	}
	lines := []string{
		fieldLine("PortSelect", dumpUint(uint64(set.PortSelect), 8)),
		fieldLine("CounterSelect", dumpHex(uint64(set.CounterSelect), 16)),
	}
	_, w, _ := umad.PerfCounterSetLayout(g.attr)
	for i, name := range g.counterNames() {
		if i < len(set.Counters) {
			lines = append(lines, fieldLine(name, dumpUint(set.Counters[i], w)))
		}
	}
	return lines, nil
}

// pmGroups are perfquery's groups in the order perfquery tries them
// (the first one asked for is the one queried).
var pmGroups = [...]pmGroup{
	{'X', "xmtsl", "show Xmt SL port counters", "PortXmitDataSL", umad.PMAttrPortXmitDataSL, "XmtDataSL", nil},
	{'S', "rcvsl", "show Rcv SL port counters", "PortRcvDataSL", umad.PMAttrPortRcvDataSL, "RcvDataSL", nil},
	{'D', "xmtdisc", "show Xmt Discard Details", "PortXmitDiscardDetails", umad.PMAttrPortXmitDiscardDetails, "", []string{
		"PortInactiveDiscards", "PortNeighborMTUDiscards", "PortSwLifetimeLimitDiscards", "PortSwHOQLifetimeLimitDiscards",
	}},
	{'E', "rcverr", "show Rcv Error Details", "PortRcvErrorDetails", umad.PMAttrPortRcvErrorDetails, "", []string{
		"PortLocalPhysicalErrors", "PortMalformedPktErrors", "PortBufferOverrunErrors",
		"PortDLIDMappingErrors", "PortVLMappingErrors", "PortLoopingErrors",
	}},
	// Its own layout and dumps: pescFields.
	{'T', "extended_speeds", "show port extended speeds counters", "PortExtendedSpeedsCounters", umad.PMAttrPortExtendedSpeedsCounters, "", nil},
	{0, "oprcvcounters", "show Rcv Counters per Op code", "PortOpRcvCounters", umad.PMAttrPortOpRcvCounters, "", []string{"PortOpRcvPkts", "PortOpRcvData"}},
	{0, "flowctlcounters", "show flow control counters", "PortFlowCtlCounters", umad.PMAttrPortFlowCtlCounters, "", []string{"PortXmitFlowPkts", "PortRcvFlowPkts"}},
	{0, "vloppackets", "show packets received per Op code per VL", "PortVLOpPackets", umad.PMAttrPortVLOpPackets, "PortVLOpPackets", nil},
	{0, "vlopdata", "show data received per Op code per VL", "PortVLOpData", umad.PMAttrPortVLOpData, "PortVLOpData", nil},
	{0, "vlxmitflowctlerrors", "show flow control update errors per VL", "PortVLXmitFlowCtlUpdateErrors", umad.PMAttrPortVLXmitFlowCtlUpdateErrors, "PortVLXmitFlowCtlUpdateErrors", nil},
	{0, "vlxmitcounters", "show ticks waiting to transmit counters per VL", "PortVLXmitWaitCounters", umad.PMAttrPortVLXmitWaitCounters, "PortVLXmitWait", nil},
	{0, "swportvlcong", "show sw port VL congestion", "SwPortVLCongestion", umad.PMAttrSwPortVLCongestion, "SWPortVLCongestion", nil},
	{0, "rcvcc", "show Rcv congestion control counters", "PortRcvConCtrl", umad.PMAttrPortRcvConCtrl, "", []string{"PortPktRcvFECN", "PortPktRcvBECN"}},
	{0, "slrcvfecn", "show SL Rcv FECN counters", "PortSLRcvFECN", umad.PMAttrPortSLRcvFECN, "PortSLRcvFECN", nil},
	{0, "slrcvbecn", "show SL Rcv BECN counters", "PortSLRcvBECN", umad.PMAttrPortSLRcvBECN, "PortSLRcvBECN", nil},
	{0, "xmitcc", "show Xmit congestion control counters", "PortXmitConCtrl", umad.PMAttrPortXmitConCtrl, "", []string{"PortXmitTimeCong"}},
	{0, "vlxmittimecc", "show VL Xmit Time congestion control counters", "PortVLXmitTimeCong", umad.PMAttrPortVLXmitTimeCong, "PortVLXmitTimeCong", nil},
}

// pescLines is PortExtendedSpeedsCounters as perfquery -T dumps it:
// mad_dump_port_ext_speeds_counters, or with RS-FEC active
// mad_dump_port_ext_speeds_counters_rsfec_active (the per-lane
// correctable block counters are symbol counters then, and the three
// port counters at the end count).
func pescLines(data []byte, rsfec bool) ([]string, error) {
	var e umad.PortExtendedSpeedsCounters
	if err := e.Decode(data); err != nil {
		return nil, err
	}
	u := func(name string, v uint64) string { return fieldLine(name, dumpUint(v, 0)) }
	lines := []string{
		u("PortSelect", uint64(e.PortSelect)), fieldLine("CounterSelect", dumpHex(e.CounterSelect, 64)),
		u("SyncHeaderErrorCounter", uint64(e.SyncHeaderErrorCounter)), u("UnknownBlockCounter", uint64(e.UnknownBlockCounter)),
	}
	lane := func(prefix string, i int) string { return prefix + strconv.Itoa(i) }
	if rsfec {
		for i, v := range e.FECCorrectableBlockCtrLane {
			lines = append(lines, u(lane("FECCorrectableSymbolCtrLane", i), uint64(v)))
		}
		return append(lines, u("PortFECCorrectableBlockCtr", uint64(e.PortFECCorrectableBlockCtr)),
			u("PortFECUncorrectableBlockCtr", uint64(e.PortFECUncorrectableBlockCtr)),
			u("PortFECCorrectedSymbolCtr", uint64(e.PortFECCorrectedSymbolCtr))), nil
	}
	for i, v := range e.ErrorDetectionCounterLane {
		lines = append(lines, u(lane("ErrorDetectionCounterLane", i), uint64(v)))
	}
	for i, v := range e.FECCorrectableBlockCtrLane {
		lines = append(lines, u(lane("FECCorrectableBlockCtrLane", i), uint64(v)))
	}
	for i, v := range e.FECUncorrectableBlockCtrLane {
		lines = append(lines, u(lane("FECUncorrectableBlockCtrLane", i), uint64(v)))
	}
	return lines, nil
}

// psControlLines is PortSamplesControl as mad_dump_portsamples_control
// dumps it (perfquery -c): mad_dump_hex gives a field two digits a byte
// of its size.
func psControlLines(data []byte) ([]string, error) {
	var c umad.PortSamplesControl
	if err := c.Decode(data); err != nil {
		return nil, err
	}
	h := func(name string, v uint64, w int) string { return fieldLine(name, dumpHex(v, w)) }
	u := func(name string, v uint64) string { return fieldLine(name, dumpUint(v, 0)) }
	lines := []string{
		h("OpCode", uint64(c.OpCode), 8), u("PortSelect", uint64(c.PortSelect)), h("Tick", uint64(c.Tick), 8),
		u("CounterWidth", uint64(c.CounterWidth)), h("CounterMask0", uint64(c.CounterMask0), 3),
		h("CounterMasks1to9", uint64(c.CounterMasks1to9), 27), h("CounterMasks10to14", uint64(c.CounterMasks10to14), 15),
		u("SampleMechanisms", uint64(c.SampleMechanisms)), u("SampleStatus", uint64(c.SampleStatus)),
		h("OptionMask", c.OptionMask, 64), h("VendorMask", c.VendorMask, 64),
		u("SampleStart", uint64(c.SampleStart)), u("SampleInterval", uint64(c.SampleInterval)), h("Tag", uint64(c.Tag), 16),
	}
	for i, v := range c.CounterSelect {
		lines = append(lines, h("CounterSelect"+strconv.Itoa(i), uint64(v), 16))
	}
	return append(lines, h("SamplesOnlyOptionMask", c.SamplesOnlyOptionMask, 64)), nil
}

// cDump is libibmad's dump of lines into a caller's buffer of bufsz bytes
// (_dump_fields, once or more into what is left): a line while the
// buffer lasts, a line cut where it ends, nothing more once fewer than
// 34 bytes are left.
func cDump(lines []string, bufsz int) string {
	var out []byte
	for _, line := range lines {
		// mad_dump_field gets bufsz-1 bytes and refuses 32 or less.
		size := bufsz - 1
		if bufsz <= 0 || size <= 32 {
			break
		}
		if len(line) > size-1 {
			line = line[:size-1]
		}
		out = append(out, line...)
		out = append(out, '\n')
		bufsz -= len(line) + 1
	}
	return string(out)
}

// pmGroupDump is how perfquery prints a group (common_func): its
// header and libibmad's dump into perfquery's 1536-byte buffer.
func pmGroupDump(name, display string, port int, lines []string) string {
	return fmt.Sprintf("# %s counters: %s port %d\n%s", name, display, port, cDump(lines, 1536))
}
