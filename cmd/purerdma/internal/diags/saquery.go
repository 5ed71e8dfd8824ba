package diags

// saquery: Subnet Administration queries, like infiniband-diags' saquery
// (rdma-core 44, infiniband-diags/saquery.c and ibdiag_sa.c), through
// umad.SAClient. The output, the messages and the exit statuses are the
// C tool's, byte for byte (the tests compare them on simulated fabrics).

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
)

// saUsageArgs is saquery's usage_args: its operands and query names.
func saUsageArgs() string {
	var b strings.Builder
	b.WriteString("[query-name] [<name> | <lid> | <guid>]\n\nSupported query names (and aliases):\n")
	for _, q := range saQueryCmds() {
		fmt.Fprintf(&b, "  %s (%s) %s\n", q.name, q.alias, q.usage)
	}
	b.WriteString("\n  Queries node records by default.")
	return b.String()
}

// saParams is saquery's struct query_params.
type saParams struct {
	serviceID             uint64
	sgid, dgid, gid, mgid [16]byte
	slid, dlid, mlid      uint16
	flowLabel             uint32
	hopLimit              int32
	tclass                uint8
	reversible, numbPath  int32
	pkey                  uint16
	qosClass, sl          int32
	mtu, rate, pktLife    uint8
	qkey                  uint32
	scope, joinState      uint8
	proxyJoin             int32
	cpi                   []byte // the SA's ClassPortInfo (query_sa_cpi)

	showKeys bool // -K
	smKey    uint64
	ca       string
	port     int
	timeout  time.Duration
	debug    int

	nameMap          *nodeNameMap
	nodeNameMapFile  string
	nodeNameMapSet   bool
	printDesc        int // node_print_desc
	requestedName    string
	requestedNameSet bool
	requestedLID     uint16
	requestedLIDSet  bool
	requestedGUID    uint64
	requestedGUIDSet bool
	srcSet           bool // --src-to-dst
	src, dst         string
}

// The node_print_desc modes.
const (
	descAll = iota
	descLIDOnly
	descUniqueLIDOnly
	descGUIDOnly
	descAllDesc
	descNameOfLID
	descNameOfGUID
)

// The saquery commands.
const (
	saCmdQuery = iota
	saCmdNodeRecord
	saCmdClassPortInfo
	saCmdIsSM
	saCmdMCGroups
	saCmdMCMembers
)

// saRun is one run of saquery.
type saRun struct {
	p   *saParams
	out *bufio.Writer
	err io.Writer
	c   *umad.SAClient
}

// saExit is an exit of saquery with status code, after what it printed.
type saExit struct{ code int }

func (e saExit) Error() string { return fmt.Sprintf("exit %d", e.code) }

// saQueryCmd is an entry of saquery's query_cmds.
type saQueryCmd struct {
	name, alias, usage string
	attr               umad.AttrID
	handler            func(r *saRun, args []string) error
}

// saQueryCmds returns saquery's query_cmds, made at the first use: the
// handlers reach the table back (usage), so it cannot be laid out as
// data, and an init function would build it at every start of every
// tool of the binary.
func saQueryCmds() []saQueryCmd {
	saQueryOnce.Do(func() { saQueryTable = makeSAQueryCmds() })
	return saQueryTable
}

var (
	saQueryOnce  sync.Once
	saQueryTable []saQueryCmd
)

func makeSAQueryCmds() []saQueryCmd {
	return []saQueryCmd{
		{"ClassPortInfo", "CPI", "", umad.SAAttrClassPortInfo, func(r *saRun, _ []string) error { r.dumpCPI(); return nil }},
		{"NodeRecord", "NR", "[lid]", umad.SAAttrNodeRecord, (*saRun).queryNodeRecords},
		{"PortInfoRecord", "PIR", "[[lid]/[port]/[options]]", umad.SAAttrPortInfoRecord, (*saRun).queryPortInfoRecords},
		{"SL2VLTableRecord", "SL2VL", "[[lid]/[in_port]/[out_port]]", umad.SAAttrSL2VLTableRecord, (*saRun).querySL2VLRecords},
		{"PKeyTableRecord", "PKTR", "[[lid]/[port]/[block]]", umad.SAAttrPKeyTableRecord, (*saRun).queryPKeyRecords},
		{"VLArbitrationTableRecord", "VLAR", "[[lid]/[port]/[block]]", umad.SAAttrVLArbTableRecord, (*saRun).queryVLArbRecords},
		{"InformInfoRecord", "IIR", "[subscriber_gid]", umad.SAAttrInformInfoRecord, (*saRun).queryInformInfoRecords},
		{"LinkRecord", "LR", "[[from_lid]/[from_port]] [[to_lid]/[to_port]]", umad.SAAttrLinkRecord, (*saRun).queryLinkRecords},
		{"ServiceRecord", "SR", "", umad.SAAttrServiceRecord, func(r *saRun, _ []string) error {
			return r.getAndDump(umad.SAAttrServiceRecord, 0, nil, (*saRun).dumpServiceRecord)
		}},
		{"PathRecord", "PR", "", umad.SAAttrPathRecord, (*saRun).queryPathRecords},
		{"MCMemberRecord", "MCMR", "", umad.SAAttrMCMemberRecord, (*saRun).queryMCMemberRecords},
		{"LFTRecord", "LFTR", "[[lid]/[block]]", umad.SAAttrLFTRecord, (*saRun).queryLFTRecords},
		{"MFTRecord", "MFTR", "[[mlid]/[position]/[block]]", umad.SAAttrMFTRecord, (*saRun).queryMFTRecords},
		{"GUIDInfoRecord", "GIR", "[[lid]/[block]]", umad.SAAttrGUIDInfoRecord, (*saRun).queryGUIDInfoRecords},
		{"SwitchInfoRecord", "SWIR", "[lid]", umad.SAAttrSwitchInfoRecord, (*saRun).querySwitchInfoRecords},
		{"SMInfoRecord", "SMIR", "[lid]", umad.SAAttrSMInfoRecord, (*saRun).querySMInfoRecords},
	}
}

func findSAQuery(name string) *saQueryCmd {
	cmds := saQueryCmds()
	for i := range cmds {
		q := &cmds[i]
		if strings.EqualFold(name, q.name) || strings.EqualFold(name, q.alias) {
			return q
		}
	}
	return nil
}

func findSAQueryByType(attr umad.AttrID) *saQueryCmd {
	cmds := saQueryCmds()
	for i := range cmds {
		if cmds[i].attr == attr {
			return &cmds[i]
		}
	}
	return nil
}

func (env *Env) runSAQuery(args []string, stdout, stderr io.Writer) error {
	p := &saParams{hopLimit: -1, reversible: -1, numbPath: -1, qosClass: -1, sl: -1, proxyJoin: -1,
		timeout: time.Second}
	var queryType umad.AttrID
	command := saCmdQuery
	gid := func(dst *[16]byte) func(string) error {
		return func(v string) error {
			g, ok := inetPton6(v)
			if !ok {
				return errDiagUsage
			}
			*dst = g
			return nil
		}
	}
	u := func(f func(v uint64)) func(string) error {
		return func(v string) error { f(cStrtoul(v)); return nil }
	}
	flag := func(f func()) func(string) error { return func(string) error { f(); return nil } }
	desc := func(mode int) func(string) error {
		return flag(func() { p.printDesc = mode; command = saCmdNodeRecord })
	}
	keyed := func(what string, set func(uint64)) func(string) error {
		return func(v string) error {
			if v == "" || !isXDigit(v[0]) {
				v = getpass(what+": ", stderr)
			}
			set(cStrtoul(v))
			return nil
		}
	}
	fo := newFabricOpts()
	// saquery's options (ibdiag_common's -D, -G, -L, -s and -y are
	// excluded).
	custom := []diagOpt{
		{"p", 'p', false, "", "get PathRecord info", flag(func() { queryType = umad.SAAttrPathRecord })},
		{"N", 'N', false, "", "get NodeRecord info", flag(func() { command = saCmdNodeRecord })},
		{"L", 'L', false, "", "return the Lids of the name specified", desc(descLIDOnly)},
		{"l", 'l', false, "", "return the unique Lid of the name specified", desc(descUniqueLIDOnly)},
		{"G", 'G', false, "", "return the Guids of the name specified", desc(descGUIDOnly)},
		{"O", 'O', false, "", "return name for the Lid specified", desc(descNameOfLID)},
		{"U", 'U', false, "", "return name for the Guid specified", desc(descNameOfGUID)},
		{"s", 's', false, "", "return the PortInfoRecords with isSM or isSMdisabled capability mask bit on",
			flag(func() { command = saCmdIsSM })},
		{"g", 'g', false, "", "get multicast group info", flag(func() { command = saCmdMCGroups })},
		{"m", 'm', false, "", "get multicast member info (if multicast group specified, list member GIDs only for group specified, for example 'saquery -m 0xC000')",
			flag(func() { command = saCmdMCMembers })},
		{"x", 'x', false, "", "get LinkRecord info", flag(func() { queryType = umad.SAAttrLinkRecord })},
		{"c", 'c', false, "", "get the SA's class port info", flag(func() { command = saCmdClassPortInfo })},
		{"S", 'S', false, "", "get ServiceRecord info", flag(func() { queryType = umad.SAAttrServiceRecord })},
		{"I", 'I', false, "", "get InformInfoRecord (subscription) info", flag(func() { queryType = umad.SAAttrInformInfoRecord })},
		{"list", 'D', false, "", "the node desc of the CA's", desc(descAllDesc)},
		{"src-to-dst", 1, true, "<src:dst>", "get a PathRecord for <src:dst> where src and dst are either node names or LIDs", func(v string) error {
			i := strings.IndexByte(v, ':')
			if i < 0 {
				return errDiagUsage
			}
			p.src, p.dst, p.srcSet = v[:i], v[i+1:], true
			p.numbPath = 0x7f
			queryType = umad.SAAttrPathRecord
			return nil
		}},
		{"sgid-to-dgid", 2, true, "<sgid-dgid>", "get a PathRecord for <sgid-dgid> where sgid and dgid are addresses in IPv6 format", func(v string) error {
			i := strings.IndexByte(v, '-')
			if i < 0 {
				return errDiagUsage
			}
			s, ok1 := inetPton6(v[:i])
			d, ok2 := inetPton6(v[i+1:])
			if !ok1 || !ok2 {
				return errDiagUsage
			}
			p.sgid, p.dgid = s, d
			p.numbPath = 0x7f
			queryType = umad.SAAttrPathRecord
			return nil
		}},
		{"node-name-map", 3, true, "<file>", "specify a node name map file", func(v string) error {
			p.nodeNameMapFile, p.nodeNameMapSet = v, true
			return nil
		}},
		{"smkey", 4, true, "<val>", "SA SM_Key value for the query. If non-numeric value (like 'x') is specified then saquery will prompt for a value.  Default (when not specified here or in ibdiag.conf) is to  use SM_Key == 0 (or \"untrusted\")",
			keyed("SM_Key", func(v uint64) { fo.common.saKey = v })},
		{"slid", 5, true, "<lid>", "Source LID (PathRecord)", u(func(v uint64) { p.slid = uint16(v) })},
		{"dlid", 6, true, "<lid>", "Destination LID (PathRecord)", u(func(v uint64) { p.dlid = uint16(v) })},
		{"mlid", 7, true, "<lid>", "Multicast LID (MCMemberRecord)", u(func(v uint64) { p.mlid = uint16(v) })},
		{"sgid", 14, true, "<gid>", "Source GID (IPv6 format) (PathRecord)", gid(&p.sgid)},
		{"dgid", 15, true, "<gid>", "Destination GID (IPv6 format) (PathRecord)", gid(&p.dgid)},
		{"gid", 16, true, "<gid>", "Port GID (MCMemberRecord)", gid(&p.gid)},
		{"mgid", 17, true, "<gid>", "Multicast GID (MCMemberRecord)", gid(&p.mgid)},
		{"reversible", 'r', true, "", "Reversible path (PathRecord)", u(func(v uint64) { p.reversible = int32(v) })},
		{"numb_path", 'n', true, "", "Number of paths (PathRecord)", u(func(v uint64) { p.numbPath = int32(v) })},
		{"pkey", 18, true, "", "P_Key (PathRecord, MCMemberRecord). If non-numeric value (like 'x') is specified then saquery will prompt for a value",
			keyed("P_Key", func(v uint64) { p.pkey = uint16(v) })},
		{"qos_class", 'Q', true, "", "QoS Class (PathRecord)", u(func(v uint64) { p.qosClass = int32(v) })},
		{"sl", 19, true, "", "Service level (PathRecord, MCMemberRecord)", u(func(v uint64) { p.sl = int32(v) })},
		{"mtu", 'M', true, "", "MTU and selector (PathRecord, MCMemberRecord)", u(func(v uint64) { p.mtu = uint8(v) })},
		{"rate", 'R', true, "", "Rate and selector (PathRecord, MCMemberRecord)", u(func(v uint64) { p.rate = uint8(v) })},
		{"pkt_lifetime", 20, true, "", "Packet lifetime and selector (PathRecord, MCMemberRecord)", u(func(v uint64) { p.pktLife = uint8(v) })},
		{"qkey", 'q', true, "", "Q_Key (MCMemberRecord). If non-numeric value (like 'x') is specified then saquery will prompt for a value",
			keyed("Q_Key", func(v uint64) { p.qkey = uint32(v) })},
		{"tclass", 'T', true, "", "Traffic Class (PathRecord, MCMemberRecord)", u(func(v uint64) { p.tclass = uint8(v) })},
		{"flow_label", 'F', true, "", "Flow Label (PathRecord, MCMemberRecord)", u(func(v uint64) { p.flowLabel = uint32(v) })},
		{"hop_limit", 'H', true, "", "Hop limit (PathRecord, MCMemberRecord)", u(func(v uint64) { p.hopLimit = int32(v) })},
		{"scope", 21, true, "", "Scope (MCMemberRecord)", u(func(v uint64) { p.scope = uint8(v) })},
		{"join_state", 'J', true, "", "Join state (MCMemberRecord)", u(func(v uint64) { p.joinState = uint8(v) })},
		{"proxy_join", 'X', true, "", "Proxy join (MCMemberRecord)", u(func(v uint64) { p.proxyJoin = int32(v) })},
		{"service_id", 22, true, "", "ServiceID (PathRecord)", u(func(v uint64) { p.serviceID = v })},
	}
	// ibd_timeout: DEFAULT_SA_TIMEOUT_MS unless ibdiag.conf or -t say
	// otherwise.
	fo.common.timeoutMS, fo.common.timeoutMSSet = 1000, true
	fo, usageText, err := parseDiagSpec(diagSpec{tool: "saquery", exclude: "DGLsy", usageArgs: saUsageArgs(), custom: custom, o: fo}, args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, "saquery", usageText, fo, err)
	}
	pos := fo.pos
	p.ca, p.port, p.smKey, p.showKeys, p.debug = fo.ca, fo.port, fo.common.saKey, fo.common.showKeys, fo.common.debugN
	p.timeout = time.Duration(fo.common.timeoutMS) * time.Millisecond

	var q *saQueryCmd
	if queryType == 0 && command == saCmdQuery {
		if len(pos) > 0 {
			q = findSAQuery(pos[0])
		}
		if q == nil {
			queryType = umad.SAAttrNodeRecord
		} else {
			queryType = q.attr
			pos = pos[1:]
		}
	}
	if len(pos) > 0 {
		switch p.printDesc {
		case descNameOfLID:
			p.requestedLID, p.requestedLIDSet = uint16(cStrtoul(pos[0])), true
		case descNameOfGUID:
			p.requestedGUID, p.requestedGUIDSet = cStrtoul(pos[0]), true
		default:
			p.requestedName, p.requestedNameSet = pos[0], true
		}
	}
	badUsage := func(msg string) error {
		fmt.Fprintf(stderr, "ERROR: %s\n", msg)
		io.WriteString(stderr, usageText.String())
		return cli.ExitError{Code: 2}
	}
	switch {
	case (p.printDesc == descLIDOnly || p.printDesc == descUniqueLIDOnly || p.printDesc == descGUIDOnly) && !p.requestedNameSet:
		return badUsage("name not specified")
	case p.printDesc == descNameOfLID && !p.requestedLIDSet:
		return badUsage("lid not specified")
	case p.printDesc == descNameOfGUID && !p.requestedGUIDSet:
		return badUsage("guid not specified")
	case p.printDesc == descNameOfLID && p.requestedLID == 0:
		return badUsage("lid invalid")
	}

	// sa_get_handle: the SM's LID from the port (sysfs's sm_lid), the
	// port opened and an SA agent registered.
	pt, err := env.openPort(env.host(), p.ca, p.port)
	if err != nil {
		return saBindFailed(stderr, p, err, true)
	}
	defer pt.Close()
	info, err := localPort(env.host(), pt, p.timeout, madDefTries)
	if err != nil || info.SMLID == nil || *info.SMLID == 0 {
		if err == nil {
			err = errors.New("the port knows no SM (its SM LID is 0)")
		}
		return saBindFailed(stderr, p, err, false)
	}
	var sl uint8
	if info.SMSL != nil {
		sl = *info.SMSL
	}
	c, err := umad.NewSAClient(pt, uint16(*info.SMLID), sl)
	if err != nil {
		ca := "(null)"
		if p.ca != "" {
			ca = ""
		}
		fmt.Fprintf(stderr, "ibwarn: [%d] sa_get_handle: umad_register for SA class failed on port %s:%d\n", os.Getpid(), ca, p.port)
		fmt.Fprintf(stderr, "saquery: %v\n", err)
		fmt.Fprintf(stderr, "ibpanic: [%d] main: Failed to bind to the SA: %s\n", os.Getpid(), cli.Strerror(cli.ErrnoOf(err)))
		return cli.ExitError{Code: 255}
	}
	defer c.Close()
	c.Timeout = p.timeout

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	r := &saRun{p: p, out: out, err: stderr, c: c}
	p.nameMap = openNodeNameMap(p.nodeNameMapFile, p.nodeNameMapSet, stderr)

	status := r.run(command, queryType, q, pos)
	var ex saExit
	if errors.As(status, &ex) {
		if ex.code == 0 {
			return nil
		}
		return cli.ExitError{Code: ex.code & 0xff}
	}
	return status
}

// getpass is glibc's getpass as saquery calls it for a key that is not
// a number: the prompt and a line read on the terminal (/dev/tty; unlike
// glibc's, the line echoes), or, without one, the prompt on stderr and a
// line from standard input ("" at its end).
func getpass(prompt string, stderr io.Writer) string {
	in := io.Reader(os.Stdin)
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		defer tty.Close()
		in = tty
		io.WriteString(tty, prompt)
	} else {
		io.WriteString(stderr, prompt)
	}
	var line []byte
	var c [1]byte
	for {
		n, err := in.Read(c[:])
		if n == 0 || err != nil || c[0] == '\n' {
			break
		}
		line = append(line, c[0])
	}
	return string(line)
}

// saBindFailed is sa_get_handle failing: its warning, our explanation,
// and IBPANIC's "Failed to bind to the SA" with its errno's text, exit
// status 255. noPort is a port that did not open: umad_get_port failed
// reading sysfs, and IBPANIC's %m says ENOENT; otherwise the port has no
// SM LID, and errno is still 0.
func saBindFailed(stderr io.Writer, p *saParams, err error, noPort bool) error {
	ca := "(null)"
	if p.ca != "" {
		ca = "" // sa_get_handle prints "" for a CA given (its test is inverted)
	}
	fmt.Fprintf(stderr, "ibwarn: [%d] sa_get_handle: No SM/SA found on port %s:%d\n", os.Getpid(), ca, p.port)
	fmt.Fprintf(stderr, "saquery: %v\n", err)
	errno := syscall.Errno(0)
	if noPort {
		errno = syscall.ENOENT
	}
	fmt.Fprintf(stderr, "ibpanic: [%d] main: Failed to bind to the SA: %s\n", os.Getpid(), cli.Strerror(errno))
	return cli.ExitError{Code: 255}
}

// run is saquery's main from the SA handle on; it returns saExit.
func (r *saRun) run(command int, queryType umad.AttrID, q *saQueryCmd, args []string) error {
	p := r.p
	exitWith := func(err error) error {
		var ex saExit
		if errors.As(err, &ex) {
			return ex
		}
		return err
	}
	if p.srcSet && p.src != "" {
		lid, err := r.getLID(p.src)
		if err != nil {
			return exitWith(err)
		}
		p.slid = lid
	}
	if p.srcSet && p.dst != "" {
		lid, err := r.getLID(p.dst)
		if err != nil {
			return exitWith(err)
		}
		p.dlid = lid
	}
	if command == saCmdClassPortInfo || queryType == umad.SAAttrClassPortInfo || queryType == umad.SAAttrSwitchInfoRecord {
		if st := r.queryCPI(); st != 0 {
			fmt.Fprintf(r.err, "Failed to query SA:ClassPortInfo\n")
			return saExit{st}
		}
	}
	var err error
	switch command {
	case saCmdNodeRecord:
		err = r.printNodeRecords()
	case saCmdClassPortInfo:
		r.dumpCPI()
	case saCmdIsSM:
		err = r.printIsSMRecords()
	case saCmdMCGroups:
		err = r.getAndDump(umad.SAAttrMCMemberRecord, 0, nil, (*saRun).dumpMCGroupRecord)
	case saCmdMCMembers:
		err = r.printMCMemberRecords()
	default:
		if q == nil {
			q = findSAQueryByType(queryType)
		}
		if q == nil {
			fmt.Fprintf(r.err, "Unknown query type %d\n", queryType)
			return saExit{int(syscall.EINVAL)}
		}
		err = q.handler(r, args)
	}
	if err != nil {
		return exitWith(err)
	}
	return saExit{0}
}

// query is ibdiag_sa.c's sa_query and saquery's get_any_records: the
// records of a successful answer, or saExit with the status saquery
// returns after its message.
func (r *saRun) query(method umad.Method, attr umad.AttrID, mod uint32, mask uint64, data []byte) ([][]byte, error) {
	resp, err := r.c.Query(umad.SAQuery{Method: method, Attr: attr, Modifier: mod, CompMask: mask, SMKey: r.p.smKey, Data: data})
	if err != nil {
		// sa_query: a failed umad_send or umad_recv (a receive that
		// timed out among them) warns; a request back with a status
		// (umad_status) does not.
		errno := cli.ErrnoOf(err)
		if errors.Is(err, umad.ErrTimeout) {
			errno = syscall.ETIMEDOUT
		}
		var ue *umad.Error
		if errors.As(err, &ue) && (ue.Op == "send" || ue.Op == "receive") {
			fn := map[string]string{"send": "umad_send", "receive": "umad_recv"}[ue.Op]
			fmt.Fprintf(r.err, "ibwarn: [%d] sa_query: %s failed: attr 0x%x: %s\n\n", os.Getpid(), fn, uint16(attr), cli.Strerror(errno))
		}
		fmt.Fprintf(r.err, "Query SA failed: %s\n", cli.Strerror(errno))
		return nil, saExit{int(errno)}
	}
	if resp.Header.Status != 0 {
		saReportErr(r.err, uint16(resp.Header.Status))
		return nil, saExit{int(syscall.EIO)}
	}
	return resp.Records(), nil
}

func (r *saRun) getTable(attr umad.AttrID, mod uint32, mask uint64, data []byte) ([][]byte, error) {
	return r.query(umad.MethodGetTable, attr, mod, mask, data)
}

func (r *saRun) getAndDump(attr umad.AttrID, mask uint64, data []byte, dump func(*saRun, []byte)) error {
	recs, err := r.getTable(attr, 0, mask, data)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		dump(r, rec)
	}
	return nil
}

var saMADInvFieldText = []string{"MAD No invalid fields", "MAD Bad version", "MAD Method specified is not supported",
	"MAD Method/Attribute combination is not supported", "MAD Reserved", "MAD Reserved", "MAD Reserved",
	"MAD Invalid value in Attribute field(s) or Attribute Modifier", "MAD UNKNOWN ERROR"}

// saReportErr is ibdiag_sa.c's sa_report_err.
func saReportErr(w io.Writer, status uint16) {
	st := int(status & 0xff)
	madErr, saErr := "", ""
	if st != 0 {
		busy, redir := "", ""
		if st&1 != 0 {
			busy = "BUSY"
		}
		if st&2 != 0 {
			redir = "Redirection Required"
		}
		f := st >> 2
		if f >= len(saMADInvFieldText) {
			f = len(saMADInvFieldText) - 1
		}
		madErr = fmt.Sprintf(" (%s; %s; %s)", busy, redir, saMADInvFieldText[f])
	}
	if st := status >> 8; st != 0 {
		saErr = fmt.Sprintf(" SA(%s)", umad.SAStatusText(umad.MADStatus(status)))
	}
	fmt.Fprintf(w, "ERROR: Query result returned 0x%04x, %s%s\n", status, madErr, saErr)
}

// queryCPI is saquery's query_sa_cpi: a Get of the SA's ClassPortInfo;
// it returns the status saquery goes on with.
func (r *saRun) queryCPI() int {
	recs, err := r.query(umad.MethodGet, umad.SAAttrClassPortInfo, 0, 0, nil)
	var ex saExit
	if errors.As(err, &ex) {
		return ex.code
	}
	if err != nil {
		return int(syscall.EIO)
	}
	if len(recs) > 0 {
		r.p.cpi = recs[0]
	}
	return 0
}

// getLID is saquery's get_lid: a LID, or the LID of the node whose
// description is name; it fails with saquery's exit.
func (r *saRun) getLID(name string) (uint16, error) {
	if name != "" && isAlpha(name[0]) {
		recs, err := r.getTable(umad.SAAttrNodeRecord, 0, 0, nil)
		if err != nil {
			var ex saExit
			if errors.As(err, &ex) {
				fmt.Fprintf(r.err, "Failed to find lid for \"%s\": %s\n", name, cli.Strerror(syscall.Errno(ex.code)))
			}
			return 0, err
		}
		for _, rec := range recs {
			if len(rec) >= 108 && strncmp64(name, rec[44:108]) {
				return binary.BigEndian.Uint16(rec[0:2]), nil
			}
		}
		fmt.Fprintf(r.err, "Failed to find lid for \"%s\": %s\n", name, cli.Strerror(syscall.ENONET))
		return 0, saExit{int(syscall.ENONET)}
	}
	v, ok := cStrtol(name)
	if !ok || v <= 0 || v > 0xffff {
		fmt.Fprintf(r.err, "Invalid lid specified: \"%s\"\n", name)
		return 0, saExit{int(syscall.EINVAL)}
	}
	return uint16(v), nil
}

// parseLIDAndPorts is saquery's parse_lid_and_ports: "lid/port1/port2",
// each part optional (a port that is not a number is -1).
func (r *saRun) parseLIDAndPorts(s string, port1, port2 *int64) (uint16, error) {
	if port1 != nil {
		*port1 = -1
	}
	if port2 != nil {
		*port2 = -1
	}
	parts := strings.SplitN(s, "/", 3)
	lid, err := r.getLID(parts[0])
	if err != nil {
		return 0, err
	}
	if len(parts) > 1 && port1 != nil {
		*port1 = cStrtoulPort(parts[1])
	}
	if len(parts) > 2 && port2 != nil {
		// the rest of the string, slashes and all
		*port2 = cStrtoulPort(parts[2])
	}
	return lid, nil
}

// cStrtoulPort is `strtoul(str, &e, 0)` with -1 when no digits were read,
// as an int.
func cStrtoulPort(s string) int64 {
	v, n := cStrtoulN(s)
	if n == 0 {
		return -1
	}
	return int64(int32(uint32(v)))
}

// setIf is saquery's CHECK_AND_SET_VAL: when val, cut to size bits as a
// signed number, differs from cmp (cut the same way), put it big-endian
// at b[off:] and add bit to mask.
func setIf(b []byte, off int, val int64, size int, cmp int64, mask *uint64, bit uint64) bool {
	cut := func(v int64) int64 {
		switch size {
		case 8:
			return int64(int8(v))
		case 16:
			return int64(int16(v))
		case 32:
			return int64(int32(v))
		}
		return v
	}
	if cut(val) == cut(cmp) {
		return false
	}
	switch size {
	case 8:
		b[off] = uint8(val)
	case 16:
		binary.BigEndian.PutUint16(b[off:], uint16(val))
	case 32:
		binary.BigEndian.PutUint32(b[off:], uint32(val))
	case 64:
		binary.BigEndian.PutUint64(b[off:], uint64(val))
	}
	*mask |= bit
	return true
}

// setGID is CHECK_AND_SET_GID: a GID other than 0 goes in.
func setGID(b []byte, off int, g [16]byte, mask *uint64, bit uint64) {
	if g != ([16]byte{}) {
		copy(b[off:], g[:])
		*mask |= bit
	}
}

// setSel is CHECK_AND_SET_VAL_AND_SEL: a value other than 0 goes in with
// the field's and its selector's bits.
func setSel(b []byte, off int, v uint8, mask *uint64, bits uint64) {
	if v != 0 {
		b[off] = v
		*mask |= bits
	}
}

func (r *saRun) queryNodeRecords(args []string) error {
	rec := make([]byte, 108)
	var mask uint64
	var lid uint16
	if len(args) > 0 {
		var err error
		if lid, err = r.parseLIDAndPorts(args[0], nil, nil); err != nil {
			return err
		}
	}
	setIf(rec, 0, int64(lid), 16, 0, &mask, umad.NRCompLID)
	return r.getAndDump(umad.SAAttrNodeRecord, mask, rec, (*saRun).dumpNodeRecord)
}

func (r *saRun) queryPortInfoRecords(args []string) error {
	rec := make([]byte, 72)
	var mask uint64
	var lid uint16
	port, options := int64(-1), int64(-1)
	if len(args) > 0 {
		var err error
		if lid, err = r.parseLIDAndPorts(args[0], &port, &options); err != nil {
			return err
		}
	}
	setIf(rec, 0, int64(lid), 16, 0, &mask, umad.PIRCompLID)
	setIf(rec, 2, port, 8, -1, &mask, umad.PIRCompPortNum)
	setIf(rec, 3, options, 8, -1, &mask, umad.PIRCompOptions)
	return r.getAndDump(umad.SAAttrPortInfoRecord, mask, rec, (*saRun).dumpOnePortInfoRecord)
}

func (r *saRun) queryLidPortsRecord(attr umad.AttrID, size int, args []string, set func(rec []byte, lid uint16, p1, p2 int64, mask *uint64), dump func(*saRun, []byte)) error {
	rec := make([]byte, size)
	var mask uint64
	var lid uint16
	p1, p2 := int64(-1), int64(-1)
	if len(args) > 0 {
		var err error
		if lid, err = r.parseLIDAndPorts(args[0], &p1, &p2); err != nil {
			return err
		}
	}
	set(rec, lid, p1, p2, &mask)
	return r.getAndDump(attr, mask, rec, dump)
}

func (r *saRun) querySL2VLRecords(args []string) error {
	return r.queryLidPortsRecord(umad.SAAttrSL2VLTableRecord, 16, args, func(rec []byte, lid uint16, in, out int64, mask *uint64) {
		setIf(rec, 0, int64(lid), 16, 0, mask, 1<<0)
		setIf(rec, 2, in, 8, -1, mask, 1<<1)
		setIf(rec, 3, out, 8, -1, mask, 1<<2)
	}, (*saRun).dumpSL2VLRecord)
}

func (r *saRun) queryVLArbRecords(args []string) error {
	return r.queryLidPortsRecord(umad.SAAttrVLArbTableRecord, 72, args, func(rec []byte, lid uint16, port, block int64, mask *uint64) {
		setIf(rec, 0, int64(lid), 16, 0, mask, 1<<0)
		setIf(rec, 2, port, 8, -1, mask, 1<<1)
		setIf(rec, 3, block, 8, -1, mask, 1<<2)
	}, (*saRun).dumpVLArbRecord)
}

func (r *saRun) queryPKeyRecords(args []string) error {
	return r.queryLidPortsRecord(umad.SAAttrPKeyTableRecord, 72, args, func(rec []byte, lid uint16, port, block int64, mask *uint64) {
		setIf(rec, 0, int64(lid), 16, 0, mask, 1<<0)
		setIf(rec, 4, port, 8, -1, mask, 1<<2)
		setIf(rec, 2, block, 16, -1, mask, 1<<1)
	}, (*saRun).dumpPKeyRecord)
}

func (r *saRun) queryLFTRecords(args []string) error {
	return r.queryLidPortsRecord(umad.SAAttrLFTRecord, 72, args, func(rec []byte, lid uint16, block, _ int64, mask *uint64) {
		setIf(rec, 0, int64(lid), 16, 0, mask, 1<<0)
		setIf(rec, 2, block, 16, -1, mask, 1<<1)
	}, (*saRun).dumpLFTRecord)
}

func (r *saRun) queryGUIDInfoRecords(args []string) error {
	return r.queryLidPortsRecord(umad.SAAttrGUIDInfoRecord, 72, args, func(rec []byte, lid uint16, block, _ int64, mask *uint64) {
		setIf(rec, 0, int64(lid), 16, 0, mask, 1<<0)
		setIf(rec, 2, block, 8, -1, mask, 1<<1)
	}, (*saRun).dumpGUIDInfoRecord)
}

func (r *saRun) queryMFTRecords(args []string) error {
	return r.queryLidPortsRecord(umad.SAAttrMFTRecord, 72, args, func(rec []byte, lid uint16, position, block int64, mask *uint64) {
		setIf(rec, 0, int64(lid), 16, 0, mask, 1<<0)
		setIf(rec, 2, block, 16, -1, mask, 1<<3)
		pb := binary.BigEndian.Uint16(rec[2:4]) & 0x01ff
		var pos [1]byte
		setIf(pos[:], 0, position, 8, -1, mask, 1<<1)
		binary.BigEndian.PutUint16(rec[2:4], pb|uint16(pos[0])<<12)
	}, (*saRun).dumpMFTRecord)
}

func (r *saRun) querySMInfoRecords(args []string) error {
	return r.queryLidPortsRecord(umad.SAAttrSMInfoRecord, 36, args[:min(len(args), 1)], func(rec []byte, lid uint16, _, _ int64, mask *uint64) {
		setIf(rec, 0, int64(lid), 16, 0, mask, umad.SMIRCompLID)
	}, (*saRun).dumpSMInfoRecord)
}

func (r *saRun) querySwitchInfoRecords(args []string) error {
	return r.queryLidPortsRecord(umad.SAAttrSwitchInfoRecord, 24, args, func(rec []byte, lid uint16, _, _ int64, mask *uint64) {
		setIf(rec, 0, int64(lid), 16, 0, mask, 1<<0)
	}, (*saRun).dumpSwitchInfoRecord)
}

func (r *saRun) queryInformInfoRecords(args []string) error {
	rec := make([]byte, 60)
	var mask uint64
	if len(args) > 0 {
		g, ok := inetPton6(args[0])
		if !ok {
			fmt.Fprintf(r.err, "Invalid SubscriberGID specified: \"%s\"\n", args[0])
			return saExit{int(syscall.EINVAL)}
		}
		copy(rec[0:16], g[:])
		mask = 1 << 0
	}
	return r.getAndDump(umad.SAAttrInformInfoRecord, mask, rec, (*saRun).dumpInformInfoRecord)
}

func (r *saRun) queryLinkRecords(args []string) error {
	rec := make([]byte, 8)
	var mask uint64
	var from, to uint16
	fromPort, toPort := int64(-1), int64(-1)
	var err error
	if len(args) > 0 {
		if from, err = r.parseLIDAndPorts(args[0], &fromPort, nil); err != nil {
			return err
		}
	}
	if len(args) > 1 {
		if to, err = r.parseLIDAndPorts(args[1], &toPort, nil); err != nil {
			return err
		}
	}
	setIf(rec, 0, int64(from), 16, 0, &mask, umad.LRCompFromLID)
	setIf(rec, 2, fromPort, 8, -1, &mask, umad.LRCompFromPort)
	setIf(rec, 4, int64(to), 16, 0, &mask, umad.LRCompToLID)
	setIf(rec, 3, toPort, 8, -1, &mask, umad.LRCompToPort)
	return r.getAndDump(umad.SAAttrLinkRecord, mask, rec, (*saRun).dumpLinkRecord)
}

func (r *saRun) queryPathRecords(_ []string) error {
	p := r.p
	rec := make([]byte, 64)
	var mask uint64
	setIf(rec, 0, int64(p.serviceID), 64, 0, &mask, umad.PRCompServiceID)
	setGID(rec, 24, p.sgid, &mask, umad.PRCompSGID)
	setGID(rec, 8, p.dgid, &mask, umad.PRCompDGID)
	setIf(rec, 42, int64(p.slid), 16, 0, &mask, umad.PRCompSLID)
	setIf(rec, 40, int64(p.dlid), 16, 0, &mask, umad.PRCompDLID)
	setIf(rec, 44, int64(p.hopLimit), 32, -1, &mask, umad.PRCompHopLimit)
	var flow [1]byte
	setIf(flow[:], 0, int64(p.flowLabel), 8, 0, &mask, umad.PRCompFlowLabel)
	hfr := binary.BigEndian.Uint32(rec[44:48]) | uint32(flow[0])<<8
	binary.BigEndian.PutUint32(rec[44:48], hfr)
	setIf(rec, 48, int64(p.tclass), 8, 0, &mask, umad.PRCompTClass)
	var rev [1]byte
	setIf(rev[:], 0, int64(p.reversible), 8, -1, &mask, umad.PRCompReversible)
	setIf(rec, 49, int64(p.numbPath), 8, -1, &mask, umad.PRCompNumbPath)
	rec[49] |= rev[0] << 7
	setIf(rec, 50, int64(p.pkey), 16, 0, &mask, umad.PRCompPKey)
	setIf(rec, 52, int64(p.sl), 16, -1, &mask, umad.PRCompSL)
	var qos int32
	if p.qosClass != -1 {
		qos = p.qosClass
		mask |= umad.PRCompQoSClass
	}
	qs := binary.BigEndian.Uint16(rec[52:54])&0xf | uint16(qos)<<4
	binary.BigEndian.PutUint16(rec[52:54], qs)
	setSel(rec, 54, p.mtu, &mask, umad.PRCompMTUSelect|umad.PRCompMTU)
	setSel(rec, 55, p.rate, &mask, umad.PRCompRateSelect|umad.PRCompRate)
	setSel(rec, 56, p.pktLife, &mask, umad.PRCompLifeSelect|umad.PRCompLife)
	return r.getAndDump(umad.SAAttrPathRecord, mask, rec, (*saRun).dumpPathRecord)
}

func (r *saRun) queryMCMemberRecords(_ []string) error {
	p := r.p
	rec := make([]byte, 56)
	var mask uint64
	setGID(rec, 0, p.mgid, &mask, umad.MCRCompMGID)
	setGID(rec, 16, p.gid, &mask, umad.MCRCompPortGID)
	setIf(rec, 36, int64(p.mlid), 16, 0, &mask, umad.MCRCompMLID)
	setIf(rec, 32, int64(p.qkey), 32, 0, &mask, umad.MCRCompQKey)
	setSel(rec, 38, p.mtu, &mask, umad.MCRCompMTUSelect|umad.MCRCompMTU)
	setSel(rec, 42, p.rate, &mask, umad.MCRCompRateSelect|umad.MCRCompRate)
	setSel(rec, 43, p.pktLife, &mask, umad.MCRCompLifeSelect|umad.MCRCompLife)
	setIf(rec, 39, int64(p.tclass), 8, 0, &mask, umad.MCRCompTClass)
	setIf(rec, 40, int64(p.pkey), 16, 0, &mask, umad.MCRCompPKey)
	var sl, flow, hop, scope [1]byte
	setIf(sl[:], 0, int64(p.sl), 8, -1, &mask, umad.MCRCompSL)
	setIf(flow[:], 0, int64(p.flowLabel), 8, 0, &mask, umad.MCRCompFlowLabel)
	setIf(hop[:], 0, int64(p.hopLimit), 8, -1, &mask, umad.MCRCompHopLimit)
	// ib_member_set_sl_flow_hop
	binary.BigEndian.PutUint32(rec[44:48], uint32(sl[0])<<28|uint32(flow[0])<<8|uint32(hop[0]))
	setIf(scope[:], 0, int64(p.scope), 8, 0, &mask, umad.MCRCompScope)
	setIf(rec, 48, int64(p.joinState), 8, 0, &mask, umad.MCRCompJoinState)
	rec[48] |= scope[0] << 4
	// proxy_join is a one-bit C bit-field: bit 0 of its byte on
	// little-endian hosts.
	var pj [1]byte
	if setIf(pj[:], 0, int64(p.proxyJoin), 8, -1, &mask, umad.MCRCompProxyJoin) {
		rec[49] = rec[49]&^1 | pj[0]&1
	}
	return r.getAndDump(umad.SAAttrMCMemberRecord, mask, rec, (*saRun).dumpMCMemberRecord)
}

// printNodeRecords is saquery's print_node_records.
func (r *saRun) printNodeRecords() error {
	p := r.p
	recs, err := r.getTable(umad.SAAttrNodeRecord, 0, 0, nil)
	if err != nil {
		return err
	}
	if p.printDesc == descAllDesc {
		fmt.Fprintf(r.out, "   LID \"name\"\n")
		fmt.Fprintf(r.out, "================\n")
	}
	for _, rec := range recs {
		if len(rec) < 108 {
			continue
		}
		lid := binary.BigEndian.Uint16(rec[0:2])
		switch p.printDesc {
		case descAllDesc:
			if rec[6] == 1 { // a CA
				fmt.Fprintf(r.out, "%6d  \"%s\"\n", lid, r.nodeName(rec))
			}
		case descNameOfLID:
			if p.requestedLID == lid {
				r.printNodeRecord(rec)
			}
		case descNameOfGUID:
			if p.requestedGUID == binary.BigEndian.Uint64(rec[24:32]) {
				r.printNodeRecord(rec)
			}
		default:
			name := r.nodeName(rec)
			if !p.requestedNameSet || strncmp64(p.requestedName, rec[44:108]) || strncmp64(p.requestedName, []byte(name)) {
				r.printNodeRecord(rec)
				if p.printDesc == descUniqueLIDOnly {
					return saExit{0}
				}
			}
		}
	}
	return nil
}

// printNodeRecord is saquery's print_node_record.
func (r *saRun) printNodeRecord(rec []byte) {
	switch r.p.printDesc {
	case descLIDOnly, descUniqueLIDOnly:
		fmt.Fprintf(r.out, "%d\n", binary.BigEndian.Uint16(rec[0:2]))
	case descGUIDOnly:
		fmt.Fprintf(r.out, "0x%016x\n", binary.BigEndian.Uint64(rec[24:32]))
	case descNameOfLID, descNameOfGUID:
		fmt.Fprintf(r.out, "%s\n", r.nodeName(rec))
	default:
		r.dumpNodeRecord(rec)
	}
}

// nodeName is remap_node_name for a NodeRecord: the map's name for the
// node GUID, or the cleaned description.
func (r *saRun) nodeName(rec []byte) string {
	return r.p.nameMap.remap(binary.BigEndian.Uint64(rec[16:24]), rec[44:108])
}

// printIsSMRecords is saquery's print_issm_records.
func (r *saRun) printIsSMRecords() error {
	for i, capMask := range []uint32{1 << 1, 1 << 10} { // IsSM, IsSMdisabled
		rec := make([]byte, 72)
		binary.BigEndian.PutUint32(rec[4+20:], capMask)
		recs, err := r.getTable(umad.SAAttrPortInfoRecord, 1<<31, umad.PIRCompCapMask, rec)
		if err != nil {
			return err
		}
		if i == 0 {
			fmt.Fprintf(r.out, "IsSM ports\n")
		} else {
			fmt.Fprintf(r.out, "\nIsSMdisabled ports\n")
		}
		for _, rec := range recs {
			r.dumpPortInfoRecord(rec)
		}
	}
	return nil
}

// printMCMemberRecords is saquery's print_multicast_member_records.
func (r *saRun) printMCMemberRecords() error {
	mcs, err := r.getTable(umad.SAAttrMCMemberRecord, 0, 0, nil)
	if err != nil {
		return err
	}
	nrs, err := r.getTable(umad.SAAttrNodeRecord, 0, 0, nil)
	if err != nil {
		return err
	}
	for _, rec := range mcs {
		r.dumpMCMember(rec, nrs)
	}
	return nil
}

// rec returns b grown with zeros to n bytes: a record shorter than its
// attribute (a truncated answer) dumps as zeros, never out of range.
func rec(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	c := make([]byte, n)
	copy(c, b)
	return c
}

var (
	be16 = func(b []byte, o int) uint16 { return binary.BigEndian.Uint16(b[o:]) }
	be32 = func(b []byte, o int) uint32 { return binary.BigEndian.Uint32(b[o:]) }
)

func saNodeTypeStr(t uint8) string {
	switch t {
	case 1:
		return "Channel Adapter"
	case 2:
		return "Switch"
	case 3:
		return "Router"
	}
	return "UNKNOWN"
}

func (r *saRun) dumpNodeRecord(b []byte) {
	var nr umad.NodeRecord
	_ = nr.Decode(rec(b, umad.NodeRecordSize))
	ni := &nr.NodeInfo
	fmt.Fprintf(r.out, "NodeRecord dump:\n"+
		"\t\tlid.....................%d\n"+
		"\t\treserved................0x%X\n"+
		"\t\tbase_version............0x%X\n"+
		"\t\tclass_version...........0x%X\n"+
		"\t\tnode_type...............%s\n"+
		"\t\tnum_ports...............%d\n"+
		"\t\tsys_guid................0x%016x\n"+
		"\t\tnode_guid...............0x%016x\n"+
		"\t\tport_guid...............0x%016x\n"+
		"\t\tpartition_cap...........0x%X\n"+
		"\t\tdevice_id...............0x%X\n"+
		"\t\trevision................0x%X\n"+
		"\t\tport_num................%d\n"+
		"\t\tvendor_id...............0x%X\n"+
		"\t\tNodeDescription.........%s\n",
		nr.LID, nr.Reserved, ni.BaseVersion, ni.ClassVersion, saNodeTypeStr(ni.NodeType), ni.NumPorts,
		ni.SystemImageGUID, ni.NodeGUID, ni.PortGUID, ni.PartitionCap, ni.DeviceID, ni.Revision,
		ni.LocalPortNum, ni.VendorID, r.p.nameMap.remap(ni.NodeGUID, nr.NodeDesc[:]))
}

func (r *saRun) dumpPathRecord(b []byte) {
	var pr umad.PathRecord
	_ = pr.Decode(rec(b, umad.PathRecordSize))
	fmt.Fprintf(r.out, "PathRecord dump:\n"+
		"\t\tservice_id..............0x%016x\n"+
		"\t\tdgid....................%s\n"+
		"\t\tsgid....................%s\n"+
		"\t\tdlid....................%d\n"+
		"\t\tslid....................%d\n"+
		"\t\thop_flow_raw............0x%X\n"+
		"\t\ttclass..................0x%X\n"+
		"\t\tnum_path_revers.........0x%X\n"+
		"\t\tpkey....................0x%X\n"+
		"\t\tqos_class...............0x%X\n"+
		"\t\tsl......................0x%X\n"+
		"\t\tmtu.....................0x%X\n"+
		"\t\trate....................0x%X\n"+
		"\t\tpkt_life................0x%X\n"+
		"\t\tpreference..............0x%X\n"+
		"\t\tresv2...................0x%02X\n",
		pr.ServiceID, inetNtop6(pr.DGID[:]), inetNtop6(pr.SGID[:]), pr.DLID, pr.SLID, pr.HopFlowRaw,
		pr.TClass, pr.NumPath, pr.PKey, pr.QoSClass, pr.SL, pr.MTU, pr.Rate, pr.PktLife, pr.Preference,
		pr.Reserved[:])
}

func (r *saRun) dumpCPI() {
	c := rec(r.p.cpi, 72)
	fmt.Fprintf(r.out, "SA ClassPortInfo:\n"+
		"\t\tBase version.............%d\n"+
		"\t\tClass version............%d\n"+
		"\t\tCapability mask..........0x%04X\n"+
		"\t\tCapability mask 2........0x%08X\n"+
		"\t\tResponse time value......0x%02X\n"+
		"\t\tRedirect GID.............%s\n"+
		"\t\tRedirect TC/SL/FL........0x%08X\n"+
		"\t\tRedirect LID.............%d\n"+
		"\t\tRedirect PKey............0x%04X\n"+
		"\t\tRedirect QP..............0x%08X\n"+
		"\t\tRedirect QKey............0x%08X\n"+
		"\t\tTrap GID.................%s\n"+
		"\t\tTrap TC/SL/FL............0x%08X\n"+
		"\t\tTrap LID.................%d\n"+
		"\t\tTrap PKey................0x%04X\n"+
		"\t\tTrap HL/QP...............0x%08X\n"+
		"\t\tTrap QKey................0x%08X\n",
		c[0], c[1], be16(c, 2), be32(c, 4)>>5, be32(c, 4)&0x1f, inetNtop6(c[8:24]),
		be32(c, 24), be16(c, 28), be16(c, 30), be32(c, 32), be32(c, 36), inetNtop6(c[40:56]),
		be32(c, 56), be16(c, 60), be16(c, 62), be32(c, 64), be32(c, 68))
}

func (r *saRun) dumpPortInfoRecord(b []byte) {
	b = rec(b, 68)
	pi := b[4:68]
	fmt.Fprintf(r.out, "PortInfoRecord dump:\n"+
		"\t\tEndPortLid..............%d\n"+
		"\t\tPortNum.................%d\n"+
		"\t\tbase_lid................%d\n"+
		"\t\tmaster_sm_base_lid......%d\n"+
		"\t\tcapability_mask.........0x%X\n",
		be16(b, 0), b[2], be16(pi, 16), be16(pi, 18), be32(pi, 20))
}

func (r *saRun) dumpOnePortInfoRecord(b []byte) {
	b = rec(b, 68)
	fmt.Fprintf(r.out, "PortInfoRecord dump:\n"+
		"\tRID\n"+
		"\t\tEndPortLid..............%d\n"+
		"\t\tPortNum.................%d\n"+
		"\t\tOptions.................0x%x\n"+
		"\tPortInfo dump:\n",
		be16(b, 0), b[2], b[3])
	// dump_portinfo with two tabs before each field.
	f := append([]ibField(nil), portInfoFields...)
	f[0].dump = func(uint64, int) string { return "<not displayed>" }
	if r.p.showKeys {
		f[0].dump = dumpHex
	}
	for _, fl := range f {
		r.out.WriteString("\t\t" + dumpFields(b[4:68], []ibField{fl}))
	}
}

func (r *saRun) dumpMCMemberRecord(b []byte) {
	var mc umad.MCMemberRecord
	_ = mc.Decode(rec(b, umad.MCMemberRecordSize))
	fmt.Fprintf(r.out, "MCMember Record dump:\n"+
		"\t\tMGID....................%s\n"+
		"\t\tPortGid.................%s\n"+
		"\t\tqkey....................0x%x\n"+
		"\t\tmlid....................0x%x\n"+
		"\t\tmtu.....................0x%x\n"+
		"\t\tTClass..................0x%x\n"+
		"\t\tpkey....................0x%x\n"+
		"\t\trate....................0x%x\n"+
		"\t\tpkt_life................0x%x\n"+
		"\t\tSL......................0x%x\n"+
		"\t\tFlowLabel...............0x%x\n"+
		"\t\tHopLimit................0x%x\n"+
		"\t\tScope...................0x%x\n"+
		"\t\tJoinState...............0x%x\n"+
		"\t\tProxyJoin...............0x%x\n",
		inetNtop6(mc.MGID[:]), inetNtop6(mc.PortGID[:]), mc.QKey, mc.MLID, mc.MTU, mc.TClass, mc.PKey,
		mc.Rate, mc.PktLife, mc.SL, mc.FlowLabel, mc.HopLimit, mc.Scope, mc.JoinState, mc.ProxyJoinByte&1)
}

func (r *saRun) dumpMCGroupRecord(b []byte) {
	var mc umad.MCMemberRecord
	_ = mc.Decode(rec(b, umad.MCMemberRecordSize))
	fmt.Fprintf(r.out, "MCMemberRecord group dump:\n"+
		"\t\tMGID....................%s\n"+
		"\t\tMlid....................0x%X\n"+
		"\t\tMtu.....................0x%X\n"+
		"\t\tpkey....................0x%X\n"+
		"\t\tRate....................0x%X\n"+
		"\t\tSL......................0x%X\n",
		inetNtop6(mc.MGID[:]), mc.MLID, mc.MTU, mc.PKey, mc.Rate, mc.SL)
}

// dumpMCMember is saquery's dump_multicast_member_record.
func (r *saRun) dumpMCMember(b []byte, nrs [][]byte) {
	var mc umad.MCMemberRecord
	_ = mc.Decode(rec(b, umad.MCMemberRecordSize))
	// The node whose port GUID is the port GID's interface ID names it.
	name := "<unknown>"
	for _, b := range nrs {
		var nr umad.NodeRecord
		if nr.Decode(b) == nil && nr.NodeInfo.PortGUID == binary.BigEndian.Uint64(mc.PortGID[8:16]) {
			name = r.p.nameMap.remap(nr.NodeInfo.NodeGUID, nr.NodeDesc[:])
			break
		}
	}
	if r.p.requestedNameSet {
		if v, _ := cStrtol(r.p.requestedName); v == int64(mc.MLID) {
			fmt.Fprintf(r.out, "\t\tPortGid.................%s (%s)\n", inetNtop6(mc.PortGID[:]), name)
		}
		return
	}
	fmt.Fprintf(r.out, "MCMemberRecord member dump:\n"+
		"\t\tMGID....................%s\n"+
		"\t\tMlid....................0x%X\n"+
		"\t\tPortGid.................%s\n"+
		"\t\tScopeState..............0x%X\n"+
		"\t\tProxyJoin...............0x%X\n"+
		"\t\tNodeDescription.........%s\n",
		inetNtop6(mc.MGID[:]), mc.MLID, inetNtop6(mc.PortGID[:]), mc.Scope<<4|mc.JoinState, mc.ProxyJoinByte&1, name)
}

func (r *saRun) dumpServiceRecord(b []byte) {
	var sr umad.ServiceRecord
	_ = sr.Decode(rec(b, umad.ServiceRecordSize))
	key := "<not displayed>"
	if r.p.showKeys {
		key = fmt.Sprintf("0x%x", sr.Key[:])
	}
	var s strings.Builder
	fmt.Fprintf(&s, "ServiceRecord dump:\n"+
		"\t\tServiceID...............0x%016x\n"+
		"\t\tServiceGID..............%s\n"+
		"\t\tServiceP_Key............0x%X\n"+
		"\t\tServiceLease............0x%X\n"+
		"\t\tServiceKey..............%s\n"+
		"\t\tServiceName.............%s\n",
		sr.ID, inetNtop6(sr.GID[:]), sr.PKey, sr.Lease, key, cString(sr.Name[:]))
	for i, v := range sr.Data8 {
		s.WriteString(dottedLine(fmt.Sprintf("ServiceData8.%d", i+1), fmt.Sprintf("0x%X", v)))
	}
	for i, v := range sr.Data16 {
		s.WriteString(dottedLine(fmt.Sprintf("ServiceData16.%d", i+1), fmt.Sprintf("0x%X", v)))
	}
	for i, v := range sr.Data32 {
		s.WriteString(dottedLine(fmt.Sprintf("ServiceData32.%d", i+1), fmt.Sprintf("0x%X", v)))
	}
	for i, v := range sr.Data64 {
		s.WriteString(dottedLine(fmt.Sprintf("ServiceData64.%d", i+1), fmt.Sprintf("0x%016x", v)))
	}
	r.out.WriteString(s.String())
}

// dottedLine is one of dump_service_record's lines: two tabs, the name
// padded with dots to 24 columns, the value.
func dottedLine(name, val string) string {
	return "\t\t" + name + strings.Repeat(".", max(24-len(name), 0)) + val + "\n"
}

func (r *saRun) dumpSMInfoRecord(b []byte) {
	var sm umad.SMInfoRecord
	_ = sm.Decode(rec(b, umad.SMInfoRecordSize))
	fmt.Fprintf(r.out, "SMInfoRecord dump:\n"+
		"\t\tRID\n"+
		"\t\tLID...................%d\n"+
		"\t\tSMInfo dump:\n"+
		"\t\tGUID..................0x%016x\n"+
		"\t\tSM_Key................0x%016x\n"+
		"\t\tActCount..............%d\n"+
		"\t\tPriority..............%d\n"+
		"\t\tSMState...............%d\n",
		sm.LID, sm.GUID, sm.SMKey, sm.ActCount, sm.Priority, sm.State)
}

func (r *saRun) dumpSwitchInfoRecord(b []byte) {
	b = rec(b, 24)
	si := b[4:24]
	fmt.Fprintf(r.out, "SwitchInfoRecord dump:\n"+
		"\t\tRID\n"+
		"\t\tLID.....................................%d\n"+
		"\t\tSwitchInfo dump:\n"+
		"\t\tLinearFDBCap............................0x%X\n"+
		"\t\tRandomFDBCap............................0x%X\n"+
		"\t\tMulticastFDBCap.........................0x%X\n"+
		"\t\tLinearFDBTop............................0x%X\n"+
		"\t\tDefaultPort.............................%d\n"+
		"\t\tDefaultMulticastPrimaryPort.............%d\n"+
		"\t\tDefaultMulticastNotPrimaryPort..........%d\n"+
		"\t\tLifeTimeValue/PortStateChange/OpSL2VL...0x%X\n"+
		"\t\tLIDsPerPort.............................0x%X\n"+
		"\t\tPartitionEnforcementCap.................0x%X\n"+
		"\t\tflags...................................0x%X\n",
		be16(b, 0), be16(si, 0), be16(si, 2), be16(si, 4), be16(si, 6), si[8], si[9], si[10], si[11],
		be16(si, 12), be16(si, 14), si[16])
	cpi := rec(r.p.cpi, 8)
	if (be32(cpi, 4)>>5)&(1<<3) != 0 {
		fmt.Fprintf(r.out, "\t\tMulticastFDBTop.........................0x%X\n", be16(si, 18))
	}
}

func (r *saRun) dumpInformInfoRecord(b []byte) {
	var ir umad.InformInfoRecord
	_ = ir.Decode(rec(b, umad.InformInfoRecordSize))
	fmt.Fprintf(r.out, "InformInfoRecord dump:\n"+
		"\t\tRID\n"+
		"\t\tSubscriberGID...........%s\n"+
		"\t\tSubscriberEnum..........0x%X\n"+
		"\t\tInformInfo dump:\n"+
		"\t\tgid.....................%s\n"+
		"\t\tlid_range_begin.........%d\n"+
		"\t\tlid_range_end...........%d\n"+
		"\t\tis_generic..............0x%X\n"+
		"\t\tsubscribe...............0x%X\n"+
		"\t\ttrap_type...............0x%X\n",
		inetNtop6(ir.SubscriberGID[:]), ir.SubscriberEnum, inetNtop6(ir.GID[:]), ir.LIDRangeBegin,
		ir.LIDRangeEnd, ir.IsGeneric, ir.Subscribe, ir.Type)
	if ir.IsGeneric != 0 {
		fmt.Fprintf(r.out, "\t\ttrap_num................%d\n", ir.TrapNumberOrDeviceID)
	} else {
		fmt.Fprintf(r.out, "\t\tdev_id..................0x%X\n", ir.TrapNumberOrDeviceID)
	}
	if r.p.showKeys {
		fmt.Fprintf(r.out, "\t\tqpn.....................0x%06X\n", ir.QPN)
	} else {
		fmt.Fprintf(r.out, "\t\tqpn.....................<not displayed>\n")
	}
	what := "vendor_id..............."
	if ir.IsGeneric != 0 {
		what = "node_type..............."
	}
	fmt.Fprintf(r.out, "\t\tresp_time_val...........0x%X\n\t\t%s0x%06X\n", ir.RespTimeValue, what, ir.ProducerTypeOrVendorID)
}

func (r *saRun) dumpLinkRecord(b []byte) {
	var lr umad.LinkRecord
	_ = lr.Decode(rec(b, umad.LinkRecordSize))
	fmt.Fprintf(r.out, "LinkRecord dump:\n"+
		"\t\tFromLID....................%d\n"+
		"\t\tFromPort...................%d\n"+
		"\t\tToPort.....................%d\n"+
		"\t\tToLID......................%d\n",
		lr.FromLID, lr.FromPort, lr.ToPort, lr.ToLID)
}

func (r *saRun) dumpSL2VLRecord(b []byte) {
	var t umad.SL2VLTableRecord
	_ = t.Decode(rec(b, umad.SL2VLTableRecordSize))
	fmt.Fprintf(r.out, "SL2VLTableRecord dump:\n"+
		"\t\tLID........................%d\n"+
		"\t\tInPort.....................%d\n"+
		"\t\tOutPort....................%d\n"+
		"\t\tSL: 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|\n"+
		"\t\tVL:", t.LID, t.InPort, t.OutPort)
	for _, vl := range t.VL {
		fmt.Fprintf(r.out, "%2d|", vl)
	}
	r.out.WriteString("\n")
}

func (r *saRun) dumpVLArbRecord(b []byte) {
	var t umad.VLArbTableRecord
	_ = t.Decode(rec(b, umad.VLArbTableRecordSize))
	fmt.Fprintf(r.out, "VLArbTableRecord dump:\n"+
		"\t\tLID........................%d\n"+
		"\t\tPort.......................%d\n"+
		"\t\tBlock......................%d\n", t.LID, t.Port, t.Block)
	for i := 0; i < len(t.Entries); i += 16 {
		r.out.WriteString("\t\tVL    :")
		for _, e := range t.Entries[i : i+16] {
			fmt.Fprintf(r.out, "%2d|", e.VL)
		}
		r.out.WriteString("\n\t\tWeight:")
		for _, e := range t.Entries[i : i+16] {
			fmt.Fprintf(r.out, "%2d|", e.Weight)
		}
		r.out.WriteString("\n")
	}
}

func (r *saRun) dumpPKeyRecord(b []byte) {
	var t umad.PKeyTableRecord
	_ = t.Decode(rec(b, umad.PKeyTableRecordSize))
	fmt.Fprintf(r.out, "PKeyTableRecord dump:\n"+
		"\t\tLID........................%d\n"+
		"\t\tPort.......................%d\n"+
		"\t\tBlock......................%d\n"+
		"\t\tPKey Table:\n", t.LID, t.Port, t.Block)
	for i := 0; i < len(t.PKeys); i += 8 {
		k := t.PKeys[i : i+8]
		fmt.Fprintf(r.out, "\t\t0x%04x 0x%04x 0x%04x 0x%04x 0x%04x 0x%04x 0x%04x 0x%04x\n",
			k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7])
	}
	r.out.WriteString("\n")
}

func (r *saRun) dumpLFTRecord(b []byte) {
	var t umad.LFTRecord
	_ = t.Decode(rec(b, umad.LFTRecordSize))
	fmt.Fprintf(r.out, "LFT Record dump:\n"+
		"\t\tLID........................%d\n"+
		"\t\tBlock......................%d\n"+
		"\t\tLFT:\n\t\tLID\tPort Number\n", t.LID, t.Block)
	for i, port := range t.Ports {
		fmt.Fprintf(r.out, "\t\t%d\t%d\n", uint32(t.Block)*64+uint32(i), port)
	}
	r.out.WriteString("\n")
}

func (r *saRun) dumpGUIDInfoRecord(b []byte) {
	var t umad.GUIDInfoRecord
	_ = t.Decode(rec(b, umad.GUIDInfoRecordSize))
	fmt.Fprintf(r.out, "GUIDInfo Record dump:\n"+
		"\t\tLID........................%d\n"+
		"\t\tBlock......................%d\n", t.LID, t.Block)
	for i, g := range t.GUIDs {
		fmt.Fprintf(r.out, "\t\tGUID %d.....................0x%016x\n", i, g)
	}
}

func (r *saRun) dumpMFTRecord(b []byte) {
	var t umad.MFTRecord
	_ = t.Decode(rec(b, umad.MFTRecordSize))
	fmt.Fprintf(r.out, "MFT Record dump:\n"+
		"\t\tLID........................%d\n"+
		"\t\tPosition...................%d\n"+
		"\t\tBlock......................%d\n"+
		"\t\tMFT:\n\t\tMLID\tPort Mask\n", t.LID, t.Position, t.Block)
	for i, m := range t.Masks {
		fmt.Fprintf(r.out, "\t\t0x%04x\t0x%04x\n", 0xc000+uint32(t.Block)*32+uint32(i), m)
	}
	r.out.WriteString("\n")
}
