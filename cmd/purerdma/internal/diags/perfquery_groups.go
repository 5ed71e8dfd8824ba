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
// attribute's name as perfquery prints it, the attribute, and the
// fields libibmad dumps after PortSelect and CounterSelect.
type pmGroup struct {
	short  byte
	long   string
	name   string
	attr   umad.AttrID
	fields []ibField
}

// pmGroupHead is what every group's dump starts with: the
// IB_PC_EXT_PORT_SELECT_F and IB_PC_EXT_COUNTER_SELECT_F fields.
var pmGroupHead = []ibField{{8, 8, "PortSelect", dumpUint}, {16, 16, "CounterSelect", dumpHex}}

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
	{'X', "xmtsl", "PortXmitDataSL", umad.PMAttrPortXmitDataSL, pmSeries("XmtDataSL", 32, 32, 16)},
	{'S', "rcvsl", "PortRcvDataSL", umad.PMAttrPortRcvDataSL, pmSeries("RcvDataSL", 32, 32, 16)},
	{'D', "xmtdisc", "PortXmitDiscardDetails", umad.PMAttrPortXmitDiscardDetails, []ibField{
		{32, 16, "PortInactiveDiscards", dumpUint}, {48, 16, "PortNeighborMTUDiscards", dumpUint},
		{64, 16, "PortSwLifetimeLimitDiscards", dumpUint}, {80, 16, "PortSwHOQLifetimeLimitDiscards", dumpUint},
	}},
	{'E', "rcverr", "PortRcvErrorDetails", umad.PMAttrPortRcvErrorDetails, []ibField{
		{32, 16, "PortLocalPhysicalErrors", dumpUint}, {48, 16, "PortMalformedPktErrors", dumpUint},
		{64, 16, "PortBufferOverrunErrors", dumpUint}, {80, 16, "PortDLIDMappingErrors", dumpUint},
		{96, 16, "PortVLMappingErrors", dumpUint}, {112, 16, "PortLoopingErrors", dumpUint},
	}},
	{'T', "extended_speeds", "PortExtendedSpeedsCounters", umad.PMAttrPortExtendedSpeedsCounters, nil},
	{0, "oprcvcounters", "PortOpRcvCounters", umad.PMAttrPortOpRcvCounters, []ibField{
		{32, 32, "PortOpRcvPkts", dumpUint}, {64, 32, "PortOpRcvData", dumpUint},
	}},
	{0, "flowctlcounters", "PortFlowCtlCounters", umad.PMAttrPortFlowCtlCounters, []ibField{
		{32, 32, "PortXmitFlowPkts", dumpUint}, {64, 32, "PortRcvFlowPkts", dumpUint},
	}},
	{0, "vloppackets", "PortVLOpPackets", umad.PMAttrPortVLOpPackets, pmSeries("PortVLOpPackets", 32, 16, 16)},
	{0, "vlopdata", "PortVLOpData", umad.PMAttrPortVLOpData, pmSeries("PortVLOpData", 32, 32, 16)},
	{0, "vlxmitflowctlerrors", "PortVLXmitFlowCtlUpdateErrors", umad.PMAttrPortVLXmitFlowCtlUpdateErrors,
		pmSeries("PortVLXmitFlowCtlUpdateErrors", 32, 2, 16)},
	{0, "vlxmitcounters", "PortVLXmitWaitCounters", umad.PMAttrPortVLXmitWaitCounters, pmSeries("PortVLXmitWait", 32, 16, 16)},
	{0, "swportvlcong", "SwPortVLCongestion", umad.PMAttrSwPortVLCongestion, pmSeries("SWPortVLCongestion", 32, 16, 16)},
	{0, "rcvcc", "PortRcvConCtrl", umad.PMAttrPortRcvConCtrl, []ibField{
		{32, 32, "PortPktRcvFECN", dumpUint}, {64, 32, "PortPktRcvBECN", dumpUint},
	}},
	{0, "slrcvfecn", "PortSLRcvFECN", umad.PMAttrPortSLRcvFECN, pmSeries("PortSLRcvFECN", 32, 32, 16)},
	{0, "slrcvbecn", "PortSLRcvBECN", umad.PMAttrPortSLRcvBECN, pmSeries("PortSLRcvBECN", 32, 32, 16)},
	{0, "xmitcc", "PortXmitConCtrl", umad.PMAttrPortXmitConCtrl, []ibField{{32, 32, "PortXmitTimeCong", dumpUint}}},
	// Fifteen: libibmad's table stops at VL 14.
	{0, "vlxmittimecc", "PortVLXmitTimeCong", umad.PMAttrPortVLXmitTimeCong, pmSeries("PortVLXmitTimeCong", 32, 32, 15)},
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

// cDump is libibmad's dump into a caller's buffer of bufsz bytes
// (_dump_fields): a line per field while the buffer lasts, a line cut
// where the buffer ends, nothing more once fewer than 34 bytes are
// left. Parts are dumped one after the other into what the ones before
// left, each stopping the whole dump when it runs out (the
// mad_dump_perfcounters_* functions dump the head, then the counters).
func cDump(b []byte, bufsz int, parts ...[]ibField) string {
	var out []byte
	for _, fields := range parts {
		for _, f := range fields {
			if bufsz <= 0 {
				break
			}
			// mad_dump_field gets bufsz-1 bytes and refuses 32 or less.
			size := bufsz - 1
			if size <= 32 {
				return string(out)
			}
			line := fieldLine(f.name, f.dump(bits(b, f.off, f.w), f.w))
			if len(line) > size-1 {
				line = line[:size-1]
			}
			out = append(out, line...)
			out = append(out, '\n')
			bufsz -= len(line) + 1
		}
	}
	return string(out)
}

// pmGroupDump is how perfquery prints a group (common_func): its
// header and libibmad's dump into perfquery's 1536-byte buffer.
func pmGroupDump(name, display string, port int, data []byte, parts ...[]ibField) string {
	return fmt.Sprintf("# %s counters: %s port %d\n%s", name, display, port, cDump(data, 1536, parts...))
}
