package diags

// ibqueryerrors: the fabric's ports whose error counters are beyond
// their thresholds, like infiniband-diags' ibqueryerrors (rdma-core 44,
// infiniband-diags/ibqueryerrors.c): the fabric from umad/netdisc, then
// per node (in libibnetdisc's list order) the PMA's ClassPortInfo,
// PortCounters (of all ports at once where the PMA has AllPortSelect,
// then of each port where that shows errors) and PortCountersExtended,
// the clears of -k and -K, and the summary. Output, warnings and exit
// statuses are the C tool's.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"syscall"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
	"github.com/purerdma/rdma/umad/netdisc"
)

// Where infiniband-diags finds its files (IBDIAG_CONFIG_PATH).
const (
	iqeThresholdFile = "/etc/infiniband-diags/error_thresholds"
)

// A pcField is one of libibmad's PortCounters fields: its name, bit
// offset and width in the attribute.
type pcField struct {
	name     string
	off, w   int
	extOff   int // the PortCountersExtended counter's offset (0: none)
	isData   bool
	notCount bool // CounterSelect2: skipped
}

// pcFields are IB_PC_FIRST_F to IB_PC_XMT_WAIT_F, in libibmad's order.
var pcFields = []pcField{
	{name: "PortSelect", off: 8, w: 8},
	{name: "CounterSelect", off: 16, w: 16},
	{name: "SymbolErrorCounter", off: 32, w: 16, extOff: 576},
	{name: "LinkErrorRecoveryCounter", off: 48, w: 8, extOff: 640},
	{name: "LinkDownedCounter", off: 56, w: 8, extOff: 704},
	{name: "PortRcvErrors", off: 64, w: 16, extOff: 768},
	{name: "PortRcvRemotePhysicalErrors", off: 80, w: 16, extOff: 832},
	{name: "PortRcvSwitchRelayErrors", off: 96, w: 16, extOff: 896},
	{name: "PortXmitDiscards", off: 112, w: 16, extOff: 960},
	{name: "PortXmitConstraintErrors", off: 128, w: 8, extOff: 1024},
	{name: "PortRcvConstraintErrors", off: 136, w: 8, extOff: 1088},
	{name: "CounterSelect2", off: 144, w: 8, notCount: true},
	{name: "LocalLinkIntegrityErrors", off: 152, w: 4, extOff: 1152},
	{name: "ExcessiveBufferOverrunErrors", off: 156, w: 4, extOff: 1216},
	{name: "VL15Dropped", off: 176, w: 16, extOff: 1280},
	{name: "PortXmitData", off: 192, w: 32, isData: true},
	{name: "PortRcvData", off: 224, w: 32, isData: true},
	{name: "PortXmitPkts", off: 256, w: 32},
	{name: "PortRcvPkts", off: 288, w: 32},
	{name: "PortXmitWait", off: 320, w: 32, extOff: 1344},
}

// Indexes into pcFields.
const (
	pcErrSym      = 2
	pcErrRcv      = 5
	pcSwitchRel   = 7
	pcXmtDiscards = 8
	pcVL15        = 14
	pcXmtBytes    = 15
	pcRcvPkts     = 18
	pcXmtWait     = 19
)

// pcExtData are PortCountersExtended's data counters
// (IB_PC_EXT_XMT_BYTES_F to IB_PC_EXT_RCV_MPKTS_F).
var pcExtData = []pcField{
	{name: "PortXmitData", off: 64, w: 64, isData: true},
	{name: "PortRcvData", off: 128, w: 64, isData: true},
	{name: "PortXmitPkts", off: 192, w: 64},
	{name: "PortRcvPkts", off: 256, w: 64},
	{name: "PortUnicastXmitPkts", off: 320, w: 64},
	{name: "PortUnicastRcvPkts", off: 384, w: 64},
	{name: "PortMulticastXmitPkts", off: 448, w: 64},
	{name: "PortMulticastRcvPkts", off: 512, w: 64},
}

// The details attributes' counters (PortRcvErrorDetails' and
// PortXmitDiscardDetails' fields).
var (
	rcvErrDetails = []pcField{
		{name: "PortLocalPhysicalErrors", off: 32, w: 16}, {name: "PortMalformedPktErrors", off: 48, w: 16},
		{name: "PortBufferOverrunErrors", off: 64, w: 16}, {name: "PortDLIDMappingErrors", off: 80, w: 16},
		{name: "PortVLMappingErrors", off: 96, w: 16}, {name: "PortLoopingErrors", off: 112, w: 16},
	}
	xmtDiscDetails = []pcField{
		{name: "PortInactiveDiscards", off: 32, w: 16}, {name: "PortNeighborMTUDiscards", off: 48, w: 16},
		{name: "PortSwLifetimeLimitDiscards", off: 64, w: 16}, {name: "PortSwHOQLifetimeLimitDiscards", off: 80, w: 16},
	}
)

// The PMA's attributes and capability bits (libibmad's iba_types.h).
const (
	pmaClassPortInfo     = 0x01
	pmaPortCounters      = 0x12
	pmaPortRcvErrDetails = 0x15
	pmaPortXmtDiscDetail = 0x16
	pmaPortCountersExt   = 0x1d

	pmAllPortSelect   = 1 << 8
	pmExtWidth        = 1 << 9
	pmExtWidthNoIETF  = 1 << 10
	pmXmitWait        = 1 << 12
	pm2AddlPortCtrExt = 1 << 1
)

// Node types to print (--switch, --ca, --router; all when none).
const (
	printSwitch = 1 << iota
	printCA
	printRouter
)

type iqeOpts struct {
	*fabricOpts
	suppressed             []int // indexes into pcFields
	nodeNameMap            string
	data, counters         bool
	details                bool
	types                  int
	loadCache              string
	thresholdFile          string
	skipSL                 bool
	guidStr                string
	guid                   uint64
	drPath                 string
	reportPort             bool
	clearErrors, clearCnts bool
	outstanding            int
}

// addSuppressed is add_suppressed: at most 64.
func (o *iqeOpts) addSuppressed(f int, stderr io.Writer) {
	if len(o.suppressed) >= 64 {
		o.madLog(stderr).warn("add_suppressed", "Maximum (%d) fields have been suppressed; skipping %s", len(o.suppressed), pcFields[f].name)
		return
	}
	o.suppressed = append(o.suppressed, f)
}

func (o *iqeOpts) suppress(f int) bool {
	for _, s := range o.suppressed {
		if s == f {
			return true
		}
	}
	return false
}

// iqeParse reads ibqueryerrors' command line: ibdiag_common's options
// but those ibqueryerrors excludes ("cDGKLnRrSs"), and its own; it
// returns the usage too.
func iqeParse(args []string, stderr io.Writer) (*iqeOpts, diagUsage, error) {
	fo := newFabricOpts()
	o := &iqeOpts{fabricOpts: fo, thresholdFile: iqeThresholdFile}
	var sup []string
	set := func(p *bool) func(string) error { return func(string) error { *p = true; return nil } }
	guid := func(v string) error { o.guidStr, o.guid = v, uint64(cStrtoul(v)); return nil }
	types := func(t int) func(string) error { return func(string) error { o.types |= t; return nil } }
	_, usage, err := parseDiagSpec(diagSpec{
		tool: "ibqueryerrors", exclude: "cDGKLnRrSs", o: fo,
		custom: []diagOpt{
			{"suppress", 's', true, "<err1,err2,...>", "suppress errors listed", func(v string) error { sup = append(sup, v); return nil }},
			{"suppress-common", 'c', false, "", "suppress some of the common counters", func(string) error { sup = append(sup, "\x00common"); return nil }},
			{"node-name-map", 1, true, "<file>", "node name map file", func(v string) error { o.nodeNameMap = v; return nil }},
			{"port-guid", 'G', true, "<port_guid>", "report the node containing the port specified by <port_guid>", guid},
			{"", 'S', true, "<port_guid>", "Same as \"-G\" for backward compatibility", guid},
			{"Direct", 'D', true, "<dr_path>", "report the node containing the port specified by <dr_path>", func(v string) error { o.drPath = v; return nil }},
			{"skip-sl", 10, false, "", "don't obtain SL to all destinations", set(&o.skipSL)},
			{"report-port", 'r', false, "", "report port link information", set(&o.reportPort)},
			{"threshold-file", 8, true, "", "specify an alternate threshold file, default: " + iqeThresholdFile, func(v string) error { o.thresholdFile = v; return nil }},
			{"GNDN", 'R', false, "", "(This option is obsolete and does nothing)", func(string) error { return nil }},
			{"data", 2, false, "", "include data counters for ports with errors", set(&o.data)},
			{"switch", 3, false, "", "print data for switches only", types(printSwitch)},
			{"ca", 4, false, "", "print data for CA's only", types(printCA)},
			{"router", 5, false, "", "print data for routers only", types(printRouter)},
			{"details", 6, false, "", "include transmit discard details", set(&o.details)},
			{"counters", 9, false, "", "print data counters only", set(&o.counters)},
			{"clear-errors", 'k', false, "", "Clear error counters after read", set(&o.clearErrors)},
			{"clear-counts", 'K', false, "", "Clear data counters after read", set(&o.clearCnts)},
			{"load-cache", 7, true, "<file>", "filename of ibnetdiscover cache to load", func(v string) error { o.loadCache = v; return nil }},
			{"outstanding_smps", 'o', true, "", "specify the number of outstanding SMP's which should be issued during the scan", func(v string) error {
				o.outstanding = int(uint32(cli.CStrtol(v)))
				return nil
			}},
		},
	}, args, stderr)
	if err != nil {
		return o, usage, err
	}
	// The suppressions in the order given (-s's names as
	// calculate_suppressed_fields matches them, -c's one).
	for _, s := range sup {
		if s == "\x00common" {
			o.addSuppressed(pcSwitchRel, stderr)
			continue
		}
		for _, name := range strings.Split(s, ",") {
			if name == "" {
				continue
			}
			for i, f := range pcFields {
				if f.name == name {
					o.addSuppressed(i, stderr)
				}
			}
		}
	}
	if o.types == 0 {
		o.types = printSwitch | printCA | printRouter
	}
	return o, usage, nil
}

// iqeThresholds are the thresholds of the error counters (by pcFields
// index) and the summary's "Thresholds: …" text; text is "" where the
// file does not open (C prints "(null)").
type iqeThresholds struct {
	val  map[int]uint64
	text string
	set  bool
}

// readThresholds is set_thresholds: NAME=VALUE lines, '#' comments.
func readThresholds(file string) iqeThresholds {
	t := iqeThresholds{val: map[int]uint64{}}
	b, err := readFileBounded(file, maxTextFile)
	if err != nil {
		return t
	}
	t.set, t.text = true, "Thresholds: "
	r := bufio.NewReader(bytes.NewReader(b))
	for {
		line, err := readCLine(r, 1023)
		if line == "" && err != nil {
			break
		}
		p := strings.TrimLeft(line, "\n")
		if i := strings.IndexByte(p, '\n'); i >= 0 {
			p = p[:i]
		}
		if p == "" || p[0] == '#' {
			continue
		}
		name, val, _ := strings.Cut(strings.TrimLeft(p, "="), "=")
		if i := strings.IndexByte(name, '='); i >= 0 {
			name = name[:i]
		}
		v := cStrtoul(val)
		if uint64(uint32(v)) != v && v>>32 != 0 {
			v = math.MaxUint64 // strtoul's overflow on a 64-bit long
		}
		for i, f := range pcFields {
			if f.extOff != 0 && f.name == name {
				t.val[i] = v
				t.text += fmt.Sprintf("[%s = %d]", name, v)
			}
		}
	}
	return t
}

// humanCount is conv_cnt_human_readable: val64 scaled by 1024s (data
// counters, which count 4-octet words, in bytes), computed in float as C
// does, and its unit.
func humanCount(val64 uint64, data bool) (float32, string) {
	ui, div := 0, uint64(1)
	for tmp := val64 / 1024; tmp != 0; tmp /= 1024 {
		ui++
		div *= 1024
	}
	v := float32(val64)
	if data {
		v *= 4
		if v/float32(div) > 1024 {
			ui++
			div *= 1024
		}
	}
	v /= float32(div)
	units := []string{"", "K", "M", "G", "T", "P", "E"}
	if data {
		units = []string{"B", "KB", "MB", "GB", "TB", "PB", "EB"}
	}
	if ui < len(units) {
		return v, units[ui]
	}
	return v, ""
}

func humanField(name string, v uint64, data bool) string {
	f, unit := humanCount(v, data)
	return fmt.Sprintf(" [%s == %d (%5.3f%s)]", name, v, f, unit)
}

// iqe is one run of ibqueryerrors.
type iqe struct {
	o       *iqeOpts
	stdout  io.Writer
	stderr  io.Writer
	log     *madLog
	nnMap   *nodeNameMap
	thres   iqeThresholds
	rpc     *madRPC
	agent   umad.AgentID
	tid     uint32
	out     strings.Builder
	lid2sl  map[uint16]uint8 // path_record_query's SLs
	summary struct{ nodes, badNodes, ports, badPorts, pmaFailures int }
}

// pma is pma_query_via (Get) and performance_reset_via (Set): the
// request's data is data (PortSelect and the rest set), the answer's
// data area comes back.
func (q *iqe) pma(lid uint16, method umad.Method, attr uint16, data []byte) ([]byte, error) {
	q.tid++
	m := make([]byte, umad.MADSize)
	m[0], m[1], m[2], m[3] = 1, byte(umad.ClassPerfMgmt), 1, byte(method)
	binary.BigEndian.PutUint64(m[8:], uint64(q.tid))
	binary.BigEndian.PutUint16(m[16:], attr)
	copy(m[64:], data)
	if method == umad.MethodSet {
		q.log.dbg("performance_reset_via", "lid %d port %d mask 0x%x", lid, data[1], binary.BigEndian.Uint16(data[2:4]))
	} else {
		q.log.dbg("pma_query_via", "lid %d port %d", lid, data[1])
	}
	dest := fmt.Sprintf("Lid %d", lid)
	sl := q.lid2sl[lid]
	r, err := q.rpc.do(q.agent, m, func(p *umad.Packet) error { return p.SetAddr(lid, 1, sl, umad.QP1QKey) }, dest)
	if err != nil {
		return nil, err
	}
	if len(r) < umad.MADSize {
		return nil, errors.New("a short PMA answer")
	}
	return append([]byte(nil), r[64:umad.MADSize]...), nil
}

func (q *iqe) get(lid uint16, port int, attr uint16) ([]byte, error) {
	d := make([]byte, umad.MADSize-64)
	d[1] = byte(port)
	return q.pma(lid, umad.MethodGet, attr, d)
}

// reset is performance_reset_via: CounterSelect mask, CounterSelect2
// mask>>16 (PortCountersExtended's at its own place).
func (q *iqe) reset(lid uint16, port int, mask uint32, attr uint16) error {
	if mask == 0 {
		mask = ^uint32(0)
	}
	d := make([]byte, umad.MADSize-64)
	d[1] = byte(port)
	binary.BigEndian.PutUint16(d[2:], uint16(mask))
	if attr == pmaPortCountersExt {
		binary.BigEndian.PutUint32(d[4:], mask>>16)
	} else {
		d[18] = byte(mask >> 16)
	}
	_, err := q.pma(lid, umad.MethodSet, attr, d)
	return err
}

// resetExt is ibqueryerrors' reset_pc_ext: PortCountersExtended's
// CounterSelect and CounterSelect2.
func (q *iqe) resetExt(lid uint16, port int, mask uint32) error {
	if mask == 0 {
		mask = ^uint32(0)
	}
	d := make([]byte, umad.MADSize-64)
	d[1] = byte(port)
	binary.BigEndian.PutUint16(d[2:], uint16(mask))
	binary.BigEndian.PutUint32(d[4:], mask>>16)
	q.log.dbg("reset_pc_ext", "lid %d port %d mask 0x%x", lid, port, mask)
	_, err := q.pma(lid, umad.MethodSet, pmaPortCountersExt, d)
	return err
}

type iqeNode struct {
	n        *netdisc.Node
	name     string
	capMask  uint16
	capMask2 uint32
}

func (q *iqe) warn(fn, format string, args ...any) { q.log.warn(fn, format, args...) }

// queryCapMask is query_cap_mask: the PMA's ClassPortInfo.
func (q *iqe) queryCapMask(nd *iqeNode, lid uint16, port int) bool {
	pc, err := q.get(lid, port, pmaClassPortInfo)
	if err != nil {
		q.warn("query_cap_mask", "classportinfo query failed on %s, Lid %d port %d", nd.name, lid, port)
		q.summary.pmaFailures++
		return false
	}
	nd.capMask = binary.BigEndian.Uint16(pc[2:4])
	nd.capMask2 = binary.BigEndian.Uint32(pc[4:8]) >> 5
	return true
}

// checkThreshold is check_threshold: the counter f, from
// PortCountersExtended where the PMA has the additional counters.
func (q *iqe) checkThreshold(nd *iqeNode, pc, pce []byte, f int, b *strings.Builder) bool {
	fd := pcFields[f]
	thres := q.thres.val[f]
	if nd.capMask2&pm2AddlPortCtrExt != 0 {
		var v uint64
		if pce != nil {
			v = bits(pce, fd.extOff, 64)
		}
		if v > thres {
			b.WriteString(humanField(fd.name, v, false))
			return true
		}
		return false
	}
	v := bits(pc, fd.off, fd.w)
	if v > thres {
		fmt.Fprintf(b, " [%s == %d]", fd.name, v)
		return true
	}
	return false
}

// queryAndDump is query_and_dump: a details attribute's non-zero
// counters.
func (q *iqe) queryAndDump(b *strings.Builder, nd *iqeNode, lid uint16, port int, what string, attr uint16, fields []pcField) {
	pc, err := q.get(lid, port, attr)
	if err != nil {
		q.warn("query_and_dump", "%s query failed on %s, Lid %d port %d", what, nd.name, lid, port)
		q.summary.pmaFailures++
		return
	}
	for _, f := range fields {
		if v := bits(pc, f.off, f.w); v != 0 {
			fmt.Fprintf(b, " [%s == %d]", f.name, v)
		}
	}
}

// printResults is print_results: the port's counters beyond their
// thresholds (and with --data its data counters), the node's header
// before its first; it reports whether any was.
func (q *iqe) printResults(nd *iqeNode, lid uint16, pc, pce []byte, port int, header *bool) bool {
	var b strings.Builder
	n := nd.n
	for i := pcErrSym; i <= pcVL15; i++ {
		if q.o.suppress(i) || pcFields[i].notCount {
			continue
		}
		if q.checkThreshold(nd, pc, pce, i, &b) && q.o.details {
			// ibqueryerrors.c reads the discard details with the
			// receive errors' fields, and the other way round.
			if i == pcXmtDiscards {
				q.queryAndDump(&b, nd, lid, port, "PortXmitDiscardDetails", pmaPortXmtDiscDetail, rcvErrDetails)
			} else if i == pcErrRcv {
				q.queryAndDump(&b, nd, lid, port, "PortRcvErrorDetails", pmaPortRcvErrDetails, xmtDiscDetails)
			}
		}
	}
	if !q.o.suppress(pcXmtWait) {
		q.checkThreshold(nd, pc, pce, pcXmtWait, &b)
	}
	if b.Len() == 0 {
		return false
	}
	if q.o.data {
		data, fields := pc, pcFields[pcXmtBytes:pcRcvPkts+1]
		if pce != nil {
			data, fields = pce, pcExtData[:4]
			if nd.capMask&pmExtWidth != 0 {
				fields = pcExtData
			}
		}
		for _, f := range fields {
			if v := bits(data, f.off, f.w); v != 0 {
				b.WriteString(humanField(f.name, v, f.isData))
			}
		}
	}
	if !*header {
		if n.Type == netdisc.TypeSwitch {
			fmt.Fprintf(&q.out, "Errors for 0x%x \"%s\"\n", n.Ports[0].GUID, nd.name)
		} else {
			fmt.Fprintf(&q.out, "Errors for \"%s\"\n", nd.name)
		}
		*header = true
		q.summary.badNodes++
	}
	if port == 0xff {
		if n.Type == netdisc.TypeSwitch {
			fmt.Fprintf(&q.out, "   GUID 0x%x port ALL:%s\n", n.Ports[0].GUID, b.String())
		}
	} else {
		fmt.Fprintf(&q.out, "   GUID 0x%x port %d:%s\n", n.Ports[port].GUID, port, b.String())
		if q.o.reportPort {
			q.printPortConfig(n, port)
		}
		q.summary.badPorts++
	}
	return true
}

// printErrors is print_errors: PortCounters (and PortCountersExtended
// where the PMA has extended width) of the port, then printResults; it
// reports whether errors were printed.
func (q *iqe) printErrors(nd *iqeNode, lid uint16, port int, header *bool) bool {
	pc, err := q.get(lid, port, pmaPortCounters)
	if err != nil {
		q.warn("print_errors", "IB_GSI_PORT_COUNTERS query failed on %s, Lid %d port %d", nd.name, lid, port)
		q.summary.pmaFailures++
		return false
	}
	var pce []byte
	if nd.capMask&(pmExtWidth|pmExtWidthNoIETF) != 0 {
		pce, err = q.get(lid, port, pmaPortCountersExt)
		if err != nil {
			q.warn("print_errors", "IB_GSI_PORT_COUNTERS_EXT query failed on %s, Lid %d port %d", nd.name, lid, port)
			q.summary.pmaFailures++
			return false
		}
	}
	if nd.capMask&pmXmitWait == 0 {
		binary.BigEndian.PutUint32(pc[40:44], 0)
	}
	return q.printResults(nd, lid, pc, pce, port, header)
}

// printDataCounters is print_data_cnts (--counters).
func (q *iqe) printDataCounters(nd *iqeNode, lid uint16, port int, header *bool) {
	n := nd.n
	var pc []byte
	var err error
	fields := pcFields[pcXmtBytes : pcRcvPkts+1]
	if nd.capMask&(pmExtWidth|pmExtWidthNoIETF) != 0 {
		if pc, err = q.get(lid, port, pmaPortCountersExt); err != nil {
			q.warn("print_data_cnts", "IB_GSI_PORT_COUNTERS_EXT query failed on %s, Lid %d port %d", nd.name, lid, port)
			q.summary.pmaFailures++
			return
		}
		fields = pcExtData[:4]
		if nd.capMask&pmExtWidth != 0 {
			fields = pcExtData
		}
	} else if pc, err = q.get(lid, port, pmaPortCounters); err != nil {
		q.warn("print_data_cnts", "IB_GSI_PORT_COUNTERS query failed on %s, Lid %d port %d", nd.name, lid, port)
		q.summary.pmaFailures++
		return
	}
	if !*header {
		fmt.Fprintf(&q.out, "Data Counters for 0x%x \"%s\"\n", n.GUID, nd.name)
		*header = true
	}
	if port == 0xff {
		fmt.Fprintf(&q.out, "   GUID 0x%x port ALL:", n.GUID)
	} else {
		fmt.Fprintf(&q.out, "   GUID 0x%x port %d:", n.GUID, port)
	}
	for _, f := range fields {
		q.out.WriteString(humanField(f.name, bits(pc, f.off, f.w), f.isData))
	}
	q.out.WriteString("\n")
	if port != 0xff && q.o.reportPort {
		q.printPortConfig(n, port)
	}
}

// clearPort is clear_port (-k, -K).
func (q *iqe) clearPort(nd *iqeNode, lid uint16, port int) {
	o := q.o
	var mask uint32
	if o.clearErrors {
		mask |= 0xfff
		if nd.capMask&pmXmitWait != 0 {
			mask |= 0x10000
		}
	}
	if o.clearCnts {
		mask |= 0xf000
	}
	if mask != 0 {
		if q.reset(lid, port, mask, pmaPortCounters) != nil {
			fmt.Fprintf(q.stderr, "Failed to reset errors %s port %d\n", nd.name, port)
		}
	}
	if o.clearErrors && o.details {
		_ = q.reset(lid, port, 0xf, pmaPortXmtDiscDetail)
		_ = q.reset(lid, port, 0x3f, pmaPortRcvErrDetails)
	}
	if nd.capMask&(pmExtWidth|pmExtWidthNoIETF) != 0 {
		mask = 0
		if o.clearCnts {
			mask = 0x0f
			if nd.capMask&pmExtWidth != 0 {
				mask = 0xff
			}
		}
		if o.clearErrors && nd.capMask2&pm2AddlPortCtrExt != 0 {
			mask |= 0xfff0000
			if nd.capMask&pmXmitWait != 0 {
				mask |= 1 << 28
			}
		}
		if mask != 0 && q.resetExt(lid, port, mask) != nil {
			fmt.Fprintf(q.stderr, "Failed to reset extended data counters %s, Lid %d port %d\n", nd.name, lid, port)
		}
	}
}

// printNode is print_node.
func (q *iqe) printNode(n *netdisc.Node) {
	typ := 0
	switch n.Type {
	case netdisc.TypeSwitch:
		typ = printSwitch
	case netdisc.TypeCA:
		typ = printCA
	case netdisc.TypeRouter:
		typ = printRouter
	}
	if typ&q.o.types == 0 {
		return
	}
	nd := &iqeNode{n: n, name: q.nnMap.remap(n.GUID, []byte(n.Desc))}
	startPort := 1
	if n.Type == netdisc.TypeSwitch && n.EnhancedPort0 {
		startPort = 0
	}
	var lid uint16
	p := 0
	if n.Type == netdisc.TypeSwitch {
		lid = n.SMALID
	} else {
		for p = 1; p <= n.NumPorts; p++ {
			if p < len(n.Ports) && n.Ports[p] != nil {
				lid = n.Ports[p].BaseLID
				break
			}
		}
	}
	allPorts := q.queryCapMask(nd, lid, p) && nd.capMask&pmAllPortSelect != 0
	header := false
	portLID := func(p int) uint16 {
		if n.Type == netdisc.TypeSwitch {
			return n.SMALID
		}
		return n.Ports[p].BaseLID
	}
	done := false
	if q.o.counters {
		for p := startPort; p <= n.NumPorts; p++ {
			if p < len(n.Ports) && n.Ports[p] != nil {
				lid = portLID(p)
				q.printDataCounters(nd, lid, p, &header)
				q.summary.ports++
				if !allPorts {
					q.clearPort(nd, lid, p)
				}
			}
		}
		done = true
	} else if allPorts && !q.printErrors(nd, lid, 0xff, &header) {
		q.summary.ports += n.NumPorts
		done = true
	}
	if !done {
		for p := startPort; p <= n.NumPorts; p++ {
			if p < len(n.Ports) && n.Ports[p] != nil {
				lid = portLID(p)
				q.printErrors(nd, lid, p, &header)
				q.summary.ports++
				if !allPorts {
					q.clearPort(nd, lid, p)
				}
			}
		}
	}
	q.summary.nodes++
	if allPorts {
		q.clearPort(nd, lid, 0xff)
	}
}

// printPortConfig is print_port_config (-r): the port's link, as
// iblinkinfo shows it.
func (q *iqe) printPortConfig(n *netdisc.Node, port int) {
	p := n.Ports[port]
	if p == nil {
		return
	}
	info := p.Info[:]
	width, speed := bits(info, 248, 8), bits(info, 280, 4)
	var espeed uint64
	if ci := capInfo(p); hasExtSpeeds(ci) {
		espeed = bits(info, 496, 4)
	}
	state, phys := bits(info, 260, 4), bits(info, 264, 4)
	var link string
	if state != 1 {
		sp := dumpLinkSpeed(speed, 4)
		if espeed != 0 {
			sp = dumpLinkSpeedExt(espeed, 4)
		}
		link = fmt.Sprintf("(%3s %18s %6s/%8s)", dumpLinkWidth(width, 8), sp, dumpPortState(state, 4), dumpPhysState(phys, 4))
	} else {
		link = fmt.Sprintf("(              %6s/%8s)", dumpPortState(state, 4), dumpPhysState(phys, 4))
	}
	remote := "           [  ] \"\" ( )\n"
	if r := p.Remote; r != nil {
		lid := r.BaseLID
		if lid == 0 {
			lid = r.Node.SMALID
		}
		wmsg, smsg := maxMsg(p)
		remote = fmt.Sprintf("0x%016x %6d %4d[%2s] \"%s\" (%s %s)\n", r.GUID, lid, r.Num, "", q.nnMap.remap(r.Node.GUID, []byte(r.Node.Desc)), wmsg, smsg)
	}
	lid := p.BaseLID
	if n.Type == netdisc.TypeSwitch {
		lid = n.SMALID
	}
	fmt.Fprintf(&q.out, "       Link info: %6d%4d[%2s] ==%s==>  %s", lid, p.Num, "", link, remote)
}

// summaryText is print_summary.
func (q *iqe) summaryText() {
	s := &q.summary
	fmt.Fprintf(&q.out, "\n## Summary: %d nodes checked, %d bad nodes found\n", s.nodes, s.badNodes)
	fmt.Fprintf(&q.out, "##          %d ports checked, %d ports have errors beyond threshold\n", s.ports, s.badPorts)
	if q.thres.set {
		fmt.Fprintf(&q.out, "## %s\n", q.thres.text)
	} else {
		q.out.WriteString("## (null)\n")
	}
	if s.pmaFailures != 0 {
		fmt.Fprintf(&q.out, "##          %d PMA query failures\n", s.pmaFailures)
	}
	q.out.WriteString("## Suppressed:")
	for _, f := range q.o.suppressed {
		q.out.WriteString(" " + pcFields[f].name)
	}
	q.out.WriteString("\n")
}

func (env *Env) runIBQueryErrors(args []string, stdout, stderr io.Writer) error {
	o, usage, err := iqeParse(args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, "ibqueryerrors", usage, o.fabricOpts, err)
	}
	o.ibdTimeout() // mad_rpc_set_timeout, config.timeout_ms
	exit := func(format string, args ...any) error {
		return ibexit(stdout, "ibqueryerrors", o.debug, "main", format, args...)
	}
	log := o.madLog(stderr)
	ca := o.ca
	if ca == "" {
		ca = "(null)"
	}
	port, err := env.openPort(env.host(), o.ca, max(o.port, 0))
	if err != nil {
		log.warn("mad_rpc_open_port", "can't open UMAD port (%s:%d)", ca, o.port)
		fmt.Fprintf(stderr, "ibqueryerrors: %v\n", err)
		return exit("Failed to open port; %s:%d\n", ca, o.port)
	}
	defer port.Close()
	if o.drPath != "" && o.loadCache != "" {
		fmt.Fprintf(stderr, "Cannot specify cache and direct route path\n")
		return cli.ExitError{Code: 255}
	}
	c, err := newSMPClient(port, o.timeout, o.tries(), log)
	if err != nil {
		return err
	}
	c.mkey = o.common.mkey // smp_mkey_set
	self, err := localPort(env.host(), port, o.timeout, o.tries())
	if err != nil || !selfResolves(o.port, self) {
		return exit("can't resolve self port (null)")
	}
	// resolve_self's GID: umad's prefix and port GUID; an ibsim port's
	// from its own PortInfo and NodeInfo.
	var selfGID [16]byte
	if isSim(port) {
		if pi, err := c.getQuiet(smpDest{dr: true}, umad.SMAttrPortInfo, 0); err == nil {
			copy(selfGID[:8], pi[8:16])
		}
		if ni, err := c.getQuiet(smpDest{dr: true}, umad.SMAttrNodeInfo, 0); err == nil {
			copy(selfGID[8:], ni[20:28])
		}
	} else {
		binary.BigEndian.PutUint64(selfGID[:8], self.GIDPrefix)
		binary.BigEndian.PutUint64(selfGID[8:], uint64(self.PortGUID))
	}
	q := &iqe{o: o, stdout: stdout, stderr: stderr, log: log, nnMap: openNodeNameMap(o.nodeNameMap, o.nodeNameMap != "", stderr)}
	// The node -D or -G names (a failure to resolve it is a warning: C
	// then scans the whole fabric, as we always do).
	var drDest smpDest
	resolved := false
	if o.drPath != "" {
		var ok bool
		drDest, ok = str2drpath(o.drPath)
		if !ok {
			log.warn("main", "Failed to resolve %s; attempting full scan", o.drPath)
		} else {
			resolved = true
		}
	} else if o.guidStr != "" {
		dest, err := env.resolveDest(c, o.fabricOpts, destGUID, o.guidStr)
		if err != nil {
			log.warn("main", "Failed to resolve %s; attempting full scan", o.guidStr)
		}
		if !o.skipSL {
			q.lid2sl = map[uint16]uint8{dest.lid: dest.sl} // the SL resolve_guid read
		}
	}
	var f *netdisc.Fabric
	if o.loadCache != "" {
		// ibnd_load_fabric: the fabric an ibnetdiscover --cache wrote
		// (ndcache.go), no scan.
		lf, err := loadCache(o.loadCache)
		if err != nil {
			fmt.Fprintf(stderr, "loading cached fabric failed\n")
			return cli.ExitError{Code: 255}
		}
		f = lf.f
	} else {
		// libibnetdisc scans around a -D node that does not answer, and
		// reports its first SMP's failure.
		if resolved {
			if _, err := c.getQuiet(drDest, umad.SMAttrNodeInfo, 0); err != nil {
				fmt.Fprintf(stderr, "./libibnetdisc/query_smp.c:186; umad (%s Attr 0x11:0) bad status 110; Connection timed out\n", drDest)
			}
		}
		dopts := *o.fabricOpts
		if !o.timeoutSet {
			dopts.timeout = 200 * time.Millisecond
		}
		dopts.retries = 3
		outstanding := 64
		if o.outstanding > 0 {
			outstanding = o.outstanding
		}
		if f, err = discoverFabric(port, &dopts, outstanding); err != nil {
			fmt.Fprintf(stderr, "discover failed\nibqueryerrors: %v\n", err)
			return cli.ExitError{Code: 255}
		}
	}
	q.thres = readThresholds(o.thresholdFile)
	agent, err := port.Register(umad.ClassPerfMgmt, umad.PerfClassVersion, umad.MethodMask{})
	if err != nil {
		return err
	}
	q.agent = agent
	q.rpc = newMadRPC(port, o.timeout, o.tries(), log)
	finish := func() error {
		if _, err := io.WriteString(stdout, q.out.String()); err != nil {
			return err
		}
		if q.summary.badPorts != 0 {
			return cli.ExitError{Code: 1}
		}
		return nil
	}
	findPort := func(guid uint64) *netdisc.Node {
		for _, n := range f.Nodes {
			for _, p := range n.Ports {
				if p != nil && p.GUID == guid {
					return n
				}
			}
		}
		return nil
	}
	switch {
	case o.guidStr != "":
		if n := findPort(o.guid); n != nil {
			q.printNode(n)
		} else {
			fmt.Fprintf(stderr, "Failed to find node: %s\n", o.guidStr)
		}
	case o.drPath != "":
		ni, err := c.get(drDest, umad.SMAttrNodeInfo, 0)
		if err != nil || !resolved {
			fmt.Fprintf(stderr, "Failed to query local Node Info\n")
			_, err := io.WriteString(stdout, q.out.String())
			return err
		}
		if n := findPort(binary.BigEndian.Uint64(ni[20:28])); n != nil {
			if !o.skipSL && !q.pathRecordQuery(port, self, selfGID, binary.BigEndian.Uint64(ni[20:28])) {
				_, err := io.WriteString(stdout, q.out.String())
				return err
			}
			q.printNode(n)
		} else {
			fmt.Fprintf(stderr, "Failed to find node: %s\n", o.drPath)
		}
	default:
		if !o.skipSL && !q.pathRecordQuery(port, self, selfGID, 0) {
			return nil
		}
		for i := len(f.Nodes) - 1; i >= 0; i-- {
			q.printNode(f.Nodes[i])
		}
	}
	q.summaryText()
	return finish()
}

// pathRecordQuery is ibqueryerrors.c's path_record_query: a PathRecord
// GetTable to the SA from the local GID (to dguid's port where non-zero;
// one reversible path each), as ibdiag_sa.c's sa_query sends it (one
// try of DEFAULT_HALF_WORLD_PR_TIMEOUT, the kernel doing RMPP); the SL of
// each record's DLID is kept for the PMA queries, whose timeout becomes
// that 3 s too. It reports whether the tool goes on (C ends without its
// summary otherwise).
func (q *iqe) pathRecordQuery(port *umad.Port, self *umad.CAPort, selfGID [16]byte, dguid uint64) bool {
	const timeout = 3 * time.Second
	q.rpc.timeout = timeout
	fail := func(why string) bool {
		fmt.Fprintf(q.stderr, "Query SA failed: %s; sa call path_query failed\n", why)
		return false
	}
	agent, err := port.RegisterAgent(umad.Registration{Class: umad.ClassSubnAdm, Version: 2, RMPPVersion: 1})
	if err != nil {
		return fail(cli.Strerror(cli.ErrnoOf(err)))
	}
	defer port.Unregister(agent)
	smLID := uint16(0)
	if self.SMLID != nil {
		smLID = uint16(*self.SMLID)
	}
	q.tid++
	m := make([]byte, umad.MADSize)
	m[0], m[1], m[2], m[3] = 1, byte(umad.ClassSubnAdm), 2, 0x12 // GetTable
	binary.BigEndian.PutUint64(m[8:], uint64(q.tid))
	binary.BigEndian.PutUint16(m[16:], 0x35) // PathRecord
	mask := uint64(1<<3 | 1<<11 | 1<<12)     // SGID, REVERSIBLE, NUMBPATH
	copy(m[56+24:], selfGID[:])
	if dguid != 0 {
		mask |= 1 << 2 // DGID
		copy(m[56+8:], selfGID[:8])
		binary.BigEndian.PutUint64(m[56+16:], dguid)
	}
	binary.BigEndian.PutUint64(m[48:], mask)
	m[56+49] = 0x81 // NumbPath 1, Reversible
	pkt := umad.NewPacket()
	if err := pkt.SetMAD(m); err != nil {
		return fail(err.Error())
	}
	if err := pkt.SetAddr(smLID, 1, 0, umad.QP1QKey); err != nil {
		return fail(err.Error())
	}
	if err := port.Send(agent, pkt, timeout, 0); err != nil {
		q.warn("sa_query", "umad_send failed: attr 0x35: %s\n", cli.Strerror(cli.ErrnoOf(err)))
		return fail(cli.Strerror(cli.ErrnoOf(err)))
	}
	for {
		if _, err := port.Recv(pkt, timeout+madRecvGrace); err != nil {
			q.warn("sa_query", "umad_recv failed: attr 0x35: %s\n", cli.Strerror(cli.ErrnoOf(err)))
			return fail(cli.Strerror(cli.ErrnoOf(err)))
		}
		r := pkt.MAD()
		if len(r) >= 24 && r[1] == byte(umad.ClassSubnAdm) && uint32(binary.BigEndian.Uint64(r[8:16])) == q.tid {
			break
		}
	}
	if st := pkt.Status(); st != 0 {
		return fail(cli.Strerror(syscall.Errno(st)))
	}
	r := pkt.MAD()
	if len(r) < 56 {
		return fail("a short answer")
	}
	if st := binary.BigEndian.Uint16(r[4:6]); st != 0 {
		fmt.Fprintf(q.stderr, "ERROR: Query result returned 0x%04X, %s\n", st, saStatusText(st))
		return false
	}
	size := int(binary.BigEndian.Uint16(r[44:46])) * 8
	if size == 0 {
		return true
	}
	if q.lid2sl == nil {
		q.lid2sl = map[uint16]uint8{}
	}
	for off := 56; off+size <= len(r) && off+64 <= len(r); off += size {
		q.lid2sl[binary.BigEndian.Uint16(r[off+40:off+42])] = r[off+52+1] & 0xf
	}
	return true
}

// saStatusText is ibdiag_sa.c's sa_report_err's text of an SA status.
func saStatusText(st uint16) string {
	texts := []string{"Success", "No Resources", "Request Invalid", "No Records",
		"Too Many Records", "Invalid GID", "Insufficient Components", "Invalid Request"}
	if i := int(st >> 8); i < len(texts) {
		return texts[i]
	}
	return "Unknown"
}
