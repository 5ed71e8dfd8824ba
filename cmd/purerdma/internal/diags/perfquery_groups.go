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

// pmSeries is n fields named prefix0..prefix(n-1), w bits each from bit
// off.
func pmSeries(prefix string, off, w, n int) []ibField {
	f := make([]ibField, n)
	for i := range f {
		f[i] = ibField{off + i*w, w, prefix + strconv.Itoa(i), dumpUint}
	}
	return f
}

// pmGroups are perfquery's groups in the order perfquery tries them
// (the first one asked for is the one queried).
var pmGroups = []pmGroup{
	{'X', "xmtsl", "PortXmitDataSL", umad.PMAttrPortXmitDataSL, "XmtDataSL", nil},
	{'S', "rcvsl", "PortRcvDataSL", umad.PMAttrPortRcvDataSL, "RcvDataSL", nil},
	{'D', "xmtdisc", "PortXmitDiscardDetails", umad.PMAttrPortXmitDiscardDetails, "", []string{
		"PortInactiveDiscards", "PortNeighborMTUDiscards", "PortSwLifetimeLimitDiscards", "PortSwHOQLifetimeLimitDiscards",
	}},
	{'E', "rcverr", "PortRcvErrorDetails", umad.PMAttrPortRcvErrorDetails, "", []string{
		"PortLocalPhysicalErrors", "PortMalformedPktErrors", "PortBufferOverrunErrors",
		"PortDLIDMappingErrors", "PortVLMappingErrors", "PortLoopingErrors",
	}},
	// Its own layout and dumps: pescFields.
	{'T', "extended_speeds", "PortExtendedSpeedsCounters", umad.PMAttrPortExtendedSpeedsCounters, "", nil},
	{0, "oprcvcounters", "PortOpRcvCounters", umad.PMAttrPortOpRcvCounters, "", []string{"PortOpRcvPkts", "PortOpRcvData"}},
	{0, "flowctlcounters", "PortFlowCtlCounters", umad.PMAttrPortFlowCtlCounters, "", []string{"PortXmitFlowPkts", "PortRcvFlowPkts"}},
	{0, "vloppackets", "PortVLOpPackets", umad.PMAttrPortVLOpPackets, "PortVLOpPackets", nil},
	{0, "vlopdata", "PortVLOpData", umad.PMAttrPortVLOpData, "PortVLOpData", nil},
	{0, "vlxmitflowctlerrors", "PortVLXmitFlowCtlUpdateErrors", umad.PMAttrPortVLXmitFlowCtlUpdateErrors, "PortVLXmitFlowCtlUpdateErrors", nil},
	{0, "vlxmitcounters", "PortVLXmitWaitCounters", umad.PMAttrPortVLXmitWaitCounters, "PortVLXmitWait", nil},
	{0, "swportvlcong", "SwPortVLCongestion", umad.PMAttrSwPortVLCongestion, "SWPortVLCongestion", nil},
	{0, "rcvcc", "PortRcvConCtrl", umad.PMAttrPortRcvConCtrl, "", []string{"PortPktRcvFECN", "PortPktRcvBECN"}},
	{0, "slrcvfecn", "PortSLRcvFECN", umad.PMAttrPortSLRcvFECN, "PortSLRcvFECN", nil},
	{0, "slrcvbecn", "PortSLRcvBECN", umad.PMAttrPortSLRcvBECN, "PortSLRcvBECN", nil},
	{0, "xmitcc", "PortXmitConCtrl", umad.PMAttrPortXmitConCtrl, "", []string{"PortXmitTimeCong"}},
	{0, "vlxmittimecc", "PortVLXmitTimeCong", umad.PMAttrPortVLXmitTimeCong, "PortVLXmitTimeCong", nil},
}

// PortExtendedSpeedsCounters, as mad_dump_port_ext_speeds_counters and
// (RS-FEC active) mad_dump_port_ext_speeds_counters_rsfec_active dump it.
var (
	pescHead = []ibField{
		{8, 8, "PortSelect", dumpUint}, {64, 64, "CounterSelect", dumpHex},
		{128, 16, "SyncHeaderErrorCounter", dumpUint}, {144, 16, "UnknownBlockCounter", dumpUint},
	}
	pescFields = concatFields(pescHead,
		pmSeries("ErrorDetectionCounterLane", 160, 16, 12),
		pmSeries("FECCorrectableBlockCtrLane", 352, 32, 12),
		pmSeries("FECUncorrectableBlockCtrLane", 736, 32, 12))
	pescRSFECFields = concatFields(pescHead,
		pmSeries("FECCorrectableSymbolCtrLane", 352, 32, 12),
		[]ibField{
			{1120, 32, "PortFECCorrectableBlockCtr", dumpUint},
			{1152, 32, "PortFECUncorrectableBlockCtr", dumpUint},
			{1184, 32, "PortFECCorrectedSymbolCtr", dumpUint},
		})
)

// PortSamplesControl, as mad_dump_portsamples_control dumps it.
var psControlFields = concatFields([]ibField{
	{0, 8, "OpCode", dumpHex}, {8, 8, "PortSelect", dumpUint}, {16, 8, "Tick", dumpHex},
	{29, 3, "CounterWidth", dumpUint}, {34, 3, "CounterMask0", dumpHex},
	{37, 27, "CounterMasks1to9", dumpHex}, {65, 15, "CounterMasks10to14", dumpHex},
	{80, 8, "SampleMechanisms", dumpUint}, {94, 2, "SampleStatus", dumpUint},
	{96, 64, "OptionMask", dumpHex}, {160, 64, "VendorMask", dumpHex},
	{224, 32, "SampleStart", dumpUint}, {256, 32, "SampleInterval", dumpUint},
	{288, 16, "Tag", dumpHex},
}, pmHexSeries("CounterSelect", 304, 16, 15), []ibField{{576, 64, "SamplesOnlyOptionMask", dumpHex}})

func pmHexSeries(prefix string, off, w, n int) []ibField {
	f := pmSeries(prefix, off, w, n)
	for i := range f {
		f[i].dump = dumpHex
	}
	return f
}

func concatFields(parts ...[]ibField) []ibField {
	var f []ibField
	for _, p := range parts {
		f = append(f, p...)
	}
	return f
}

// fieldLines are the dump lines of fields of b.
func fieldLines(b []byte, fields ...[]ibField) []string {
	var lines []string
	for _, part := range fields {
		for _, f := range part {
			lines = append(lines, fieldLine(f.name, f.dump(bits(b, f.off, f.w), f.w)))
		}
	}
	return lines
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
