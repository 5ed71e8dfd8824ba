package diags

// smpquery and sminfo: SMP queries of one node, like infiniband-diags'
// (rdma-core 44, infiniband-diags/smpquery.c and sminfo.c), through
// package umad. The output is the C tools', byte for byte (the tests
// compare them on a simulated fabric); sminfo's activity count is the
// SM's own and moves between two queries.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
)

// smpqueryOps are smpquery.c's match_tbl in its order: name, alias,
// whether a port number follows the address (for the usage), and the
// operation.
var smpqueryOps = []struct {
	name, alias string
	port        bool
	op          smpOp
}{
	{"NodeInfo", "NI", false, smpNodeInfo}, {"NodeDesc", "ND", false, smpNodeDesc}, {"PortInfo", "PI", true, smpPortInfo},
	{"PortInfoExtended", "PIE", true, smpPortInfoExt}, {"SwitchInfo", "SI", false, smpSwitchInfo}, {"PKeyTable", "PKeys", true, smpPKeys},
	{"SL2VLTable", "SL2VL", true, smpSL2VL}, {"VLArbitration", "VLArb", true, smpVLArb}, {"GUIDInfo", "GI", false, smpGUIDs},
	{"MlnxExtPortInfo", "MEPI", true, smpMlnxExtPortInfo},
}

// smpOpNamed is match_op: the operation whose name or alias, lowered, is
// name lowered; nil when none is.
func smpOpNamed(name string) smpOp {
	l := strings.ToLower(name)
	for _, r := range smpqueryOps {
		if l == strings.ToLower(r.name) || l == strings.ToLower(r.alias) {
			return r.op
		}
	}
	return nil
}

// smpqueryUsageArgs is smpquery's usage_args: the operands and the ops.
func smpqueryUsageArgs() string {
	var b strings.Builder
	b.WriteString("<op> <dest dr_path|lid|guid> [op params]\n\nSupported ops (and aliases, case insensitive):\n")
	for _, r := range smpqueryOps {
		port := ""
		if r.port {
			port = " [<portnum>]"
		}
		fmt.Fprintf(&b, "  %s (%s) <addr>%s\n", r.name, r.alias, port)
	}
	return b.String()
}

type smpOp func(c *smpClient, d smpDest, args []string, w io.Writer) error

func (env *Env) runSMPQuery(args []string, stdout, stderr io.Writer) error {
	var extSpeeds bool
	var nnmFile string
	o := newFabricOpts()
	o, usage, err := parseDiagSpec(diagSpec{
		tool: "smpquery", usageArgs: smpqueryUsageArgs(),
		examples: []string{
			"portinfo 3 1\t\t\t\t# portinfo by lid, with port modifier",
			"-G switchinfo 0x2C9000100D051 1\t# switchinfo by guid",
			"-D nodeinfo 0\t\t\t\t# nodeinfo by direct route",
			"-c nodeinfo 6 0,12\t\t\t# nodeinfo by combined route",
		},
		custom: []diagOpt{
			{"combined", 'c', false, "", "use Combined route address argument", func(string) error {
				// ibd_dest_type, which a later -D, -L or -G sets again.
				o.common.dest, o.dr = destDRSLID, false
				return nil
			}},
			{"node-name-map", 1, true, "<file>", "node name map file", func(v string) error { nnmFile = v; return nil }},
			{"extended", 'x', false, "", "use extended speeds", func(string) error { extSpeeds = true; return nil }},
		},
		ours: retriesOpt(o), o: o,
	}, args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, "smpquery", usage, o, err)
	}
	if len(o.pos) < 2 {
		// ibdiag_show_usage, no message.
		return fabricHelp(stderr, usage.String())
	}
	combined := o.common.dest == destDRSLID
	exit := func(fn, format string, args ...any) error {
		return ibexit(stdout, "smpquery", o.debug, fn, format, args...)
	}
	op := smpOpNamed(o.pos[0])
	if op == nil {
		return exit("main", "operation '%s' not supported", o.pos[0])
	}
	log := o.madLog(stderr)
	c, err := env.openSMP(o.ca, o.port, o.timeout, o.tries(), log)
	if err != nil {
		return openFailed(stdout, stderr, "smpquery", o, err)
	}
	defer c.Close()
	c.mkey = o.common.mkey
	nnm := openNodeNameMap(nnmFile, nnmFile != "", stderr)
	switch strings.ToLower(o.pos[0]) {
	case "portinfo", "pi":
		if extSpeeds {
			// -x: the extended speeds bit of the modifier.
			op = func(c *smpClient, d smpDest, args []string, w io.Writer) error {
				return smpPortInfoMod(c, d, args, 1<<31, w)
			}
		}
	case "nodedesc", "nd":
		op = func(c *smpClient, d smpDest, args []string, w io.Writer) error {
			return smpNodeDescMap(c, d, nnm, w)
		}
	}
	var d smpDest
	opArgs := o.pos[2:]
	if combined {
		// "LID route": the route is the next operand ("(null)" when
		// there is none, as C's "%s" of NULL prints).
		route := "(null)"
		if len(o.pos) > 2 {
			route, opArgs = o.pos[2], o.pos[3:]
		}
		self, err := localPort(env.host(), c.port, o.timeout, o.tries())
		if err != nil || !selfResolves(o.port, self) {
			return exit("main", "can't resolve destination port %s %s", o.pos[1], route)
		}
		log.dbg("str2drpath", "DR str: %s", route)
		if d, err = parseCombinedDest(o.pos[1], route, uint16(ibU32(self.LID))); err != nil {
			return exit("main", "%v", err)
		}
	} else if o.common.dest == destGUID {
		// resolve_portid_str: the SA's PathRecord of the GUID (-s:
		// the SA's LID).
		if d, err = env.resolveDest(c, o, destGUID, o.pos[1]); err != nil {
			return exit("main", "can't resolve destination port %s", o.pos[1])
		}
	} else {
		if o.dr {
			log.dbg("str2drpath", "DR str: %s", o.pos[1])
		}
		if d, err = parseSMPDest(o.pos[1], o.dr); err != nil {
			return exit("main", "%v", err)
		}
	}
	var out strings.Builder
	err = op(c, d, opArgs, &out)
	io.WriteString(stdout, out.String())
	if err != nil {
		var f opFailed
		var x opExit
		switch {
		case errors.As(err, &x):
			return exit(x.fn, "%s", x.what)
		case errors.As(err, &f):
			return exit("main", "operation %s: %s", o.pos[0], f.what)
		}
		return exit("main", "operation %s: %v", o.pos[0], err)
	}
	return nil
}

// opExit is a query that ends the run where it failed, as IBEXIT in a
// libibmad helper does (fn, for -d).
type opExit struct {
	fn, what string
	cause    error
}

func (e opExit) Error() string { return e.what + ": " + e.cause.Error() }
func (e opExit) Unwrap() error { return e.cause }

// opFailed is a query of an op that failed: what says which, as
// smpquery's ops say it ("node info query failed"); the cause went to
// standard error as libibmad's warning.
type opFailed struct {
	what  string
	cause error
}

func (e opFailed) Error() string { return e.what + ": " + e.cause.Error() }
func (e opFailed) Unwrap() error { return e.cause }

func failed(what string, err error) error { return opFailed{what, err} }

// opPort is an op's port parameter, strtol(argv[0], NULL, 0) in an int
// as smpquery reads it (what does not parse is 0, "3x" is 3).
func opPort(args []string) int {
	if len(args) == 0 {
		return 0
	}
	return int(int32(cli.CStrtol(args[0])))
}

func smpNodeInfo(c *smpClient, d smpDest, _ []string, w io.Writer) error {
	b, err := c.get(d, umad.SMAttrNodeInfo, 0)
	if err != nil {
		return failed("node info query failed", err)
	}
	fmt.Fprintf(w, "# Node info: %s\n%s", d, dumpFields(b, nodeInfoFields))
	return nil
}

func smpNodeDesc(c *smpClient, d smpDest, _ []string, w io.Writer) error {
	return smpNodeDescMap(c, d, nil, w)
}

// smpNodeDescMap is smpquery's node_desc: the NodeDescription, or the
// name the node name map has for the node's GUID.
func smpNodeDescMap(c *smpClient, d smpDest, nnm *nodeNameMap, w io.Writer) error {
	ni, err := c.get(d, umad.SMAttrNodeInfo, 0)
	if err != nil {
		return failed("node info query failed", err)
	}
	b, err := c.get(d, umad.SMAttrNodeDescription, 0)
	if err != nil {
		return failed("node desc query failed", err)
	}
	name := nnm.remap(bits(ni, 96, 64), b)
	dots := "."
	if len(name) < 32 {
		dots = strings.Repeat(".", 32-len(name))
	}
	fmt.Fprintf(w, "Node Description:%s%s\n", dots, name)
	return nil
}

// cString is the bytes of b up to the first NUL.
func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

func smpPortInfo(c *smpClient, d smpDest, args []string, w io.Writer) error {
	return smpPortInfoMod(c, d, args, 0, w)
}

// smpPortInfoMod is smpquery's port_info with flags in the modifier
// besides the port (-x: bit 31, extended speeds).
func smpPortInfoMod(c *smpClient, d smpDest, args []string, flags uint32, w io.Writer) error {
	port := opPort(args)
	b, err := c.get(d, umad.SMAttrPortInfo, uint32(port)|flags)
	if err != nil {
		return failed("port info query failed", err)
	}
	fmt.Fprintf(w, "# Port info: %s port %d\n%s", d, port, dumpPortInfo(b))
	return nil
}

// portInfoExtFields are PortInfoExtended's, as mad_dump_portinfo_ext
// dumps them.
var portInfoExtFields = []ibField{
	{0, 32, "CapMask", dumpHex}, {32, 16, "FECModeActive", dumpUint},
	{48, 16, "FDRFECModeSupported", dumpHex}, {64, 16, "FDRFECModeEnabled", dumpHex},
	{80, 16, "EDRFECModeSupported", dumpHex}, {96, 16, "EDRFECModeEnabled", dumpHex},
}

// portInfoExtSupported is infiniband-diags' is_port_info_extended_supported:
// whether the PortInfo of port (port 0 on a switch) has CapabilityMask2
// with IsPortInfoExtendedSupported, warning where it does not. A failed
// query is an opExit.
func portInfoExtSupported(c *smpClient, d smpDest, port int) (bool, error) {
	const fn = "is_port_info_extended_supported"
	ni, err := c.get(d, umad.SMAttrNodeInfo, 0)
	if err != nil {
		return false, opExit{fn, "node info query failed", err}
	}
	if ni[2] == 2 {
		port = 0
	}
	pi, err := c.get(d, umad.SMAttrPortInfo, uint32(port))
	if err != nil {
		return false, opExit{fn, "port info query failed", err}
	}
	if bits(pi, 160, 32)&(1<<15) == 0 {
		c.rpc.log.warn(fn, "port info capability mask2 not supported")
		return false, nil
	}
	if cm2 := bits(pi, 480, 16); cm2&(1<<1) == 0 {
		c.rpc.log.warn(fn, "port info capability mask2 = 0x%x doesn't indicate PortInfoExtended support", cm2)
		return false, nil
	}
	return true, nil
}

func smpPortInfoExt(c *smpClient, d smpDest, args []string, w io.Writer) error {
	port := opPort(args)
	ok, err := portInfoExtSupported(c, d, port)
	if err != nil {
		return err
	}
	if !ok {
		return failed("port info extended not supported", errors.New("the port has no PortInfoExtended"))
	}
	b, err := c.get(d, umad.SMAttrPortInfoExtended, uint32(port))
	if err != nil {
		return failed("port info extended query failed", err)
	}
	fmt.Fprintf(w, "# Port info Extended: %s port %d\n%s", d, port, dumpFields(b, portInfoExtFields))
	return nil
}

// smAttrMlnxExtPortInfo is Mellanox's vendor SMP attribute
// MlnxExtPortInfo (IB_ATTR_MLNX_EXT_PORT_INFO).
const smAttrMlnxExtPortInfo umad.AttrID = 0xff90

var mlnxExtPortInfoFields = []ibField{
	{24, 8, "StateChangeEnable", dumpHex}, {56, 8, "LinkSpeedSupported", dumpHex},
	{88, 8, "LinkSpeedEnabled", dumpHex}, {120, 8, "LinkSpeedActive", dumpHex},
}

func smpMlnxExtPortInfo(c *smpClient, d smpDest, args []string, w io.Writer) error {
	port := opPort(args)
	b, err := c.get(d, smAttrMlnxExtPortInfo, uint32(port))
	if err != nil {
		return failed("Mellanox ext port info query failed", err)
	}
	fmt.Fprintf(w, "# MLNX ext Port info: %s port %d\n%s", d, port, dumpFields(b, mlnxExtPortInfoFields))
	return nil
}

func smpSwitchInfo(c *smpClient, d smpDest, _ []string, w io.Writer) error {
	b, err := c.get(d, umad.SMAttrSwitchInfo, 0)
	if err != nil {
		return failed("switch info query failed", err)
	}
	fmt.Fprintf(w, "# Switch info: %s\n%s", d, dumpFields(b, switchInfoFields))
	return nil
}

func smpPKeys(c *smpClient, d smpDest, args []string, w io.Writer) error {
	port := opPort(args)
	ni, err := c.get(d, umad.SMAttrNodeInfo, 0)
	if err != nil {
		return failed("node info query failed", err)
	}
	if port > int(ni[3]) {
		return errors.New("invalid port number")
	}
	n := int(binary.BigEndian.Uint16(ni[28:30]))
	if ni[2] == 2 && port != 0 {
		si, err := c.get(d, umad.SMAttrSwitchInfo, 0)
		if err != nil {
			return failed("switch info failed", err)
		}
		n = int(binary.BigEndian.Uint16(si[14:16]))
	}
	blocks := (n + 31) / 32
	for i := 0; i < blocks; i++ {
		b, err := c.get(d, umad.SMAttrPKeyTable, uint32(i|port<<16))
		if err != nil {
			return failed("pkey table query failed", err)
		}
		k := 32
		if i+1 == blocks {
			k = ((n + 7 - i*32) / 8) * 8
		}
		for j := 0; j+8 <= k && j+8 <= 32; j += 8 {
			fmt.Fprintf(w, "%4d:", i*32+j)
			for x := 0; x < 8; x++ {
				fmt.Fprintf(w, " 0x%04x", binary.BigEndian.Uint16(b[2*(j+x):]))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "%d pkeys capacity for this port\n", n)
	return nil
}

func sl2vlLine(c *smpClient, d smpDest, in, out int, w io.Writer) error {
	b, err := c.get(d, umad.SMAttrSLToVLTable, uint32(in<<8|out))
	if err != nil {
		return failed("slvl query failed", err)
	}
	fmt.Fprintf(w, "ports: in %2d, out %2d: |", in, out)
	for i := 0; i < 16; i++ {
		vl := b[i/2] >> 4
		if i%2 == 1 {
			vl = b[i/2] & 0xf
		}
		fmt.Fprintf(w, "%2d|", vl)
	}
	fmt.Fprintln(w)
	return nil
}

func smpSL2VL(c *smpClient, d smpDest, args []string, w io.Writer) error {
	port := opPort(args)
	ni, err := c.get(d, umad.SMAttrNodeInfo, 0)
	if err != nil {
		return failed("node info query failed", err)
	}
	nports := int(ni[3])
	if port > nports {
		return errors.New("invalid port number")
	}
	fmt.Fprintf(w, "# SL2VL table: %s\n#                 SL: |", d)
	for i := 0; i < 16; i++ {
		fmt.Fprintf(w, "%2d|", i)
	}
	fmt.Fprintln(w)
	if ni[2] != 2 {
		return sl2vlLine(c, d, 0, 0, w)
	}
	for i := 0; i <= nports; i++ {
		if err := sl2vlLine(c, d, i, port, w); err != nil {
			return err
		}
	}
	return nil
}

func vlarbBlock(c *smpClient, d smpDest, port, offset, n int, w io.Writer) error {
	b, err := c.get(d, umad.SMAttrVLArbitrationTable, uint32(offset<<16|port))
	if err != nil {
		return failed("vl arb query failed", err)
	}
	fmt.Fprint(w, "\nVL    : |")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "0x%-2X|", b[2*i]&0xf)
	}
	fmt.Fprint(w, "\nWEIGHT: |")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "0x%-2X|", b[2*i+1])
	}
	fmt.Fprintln(w)
	return nil
}

func smpVLArb(c *smpClient, d smpDest, args []string, w io.Writer) error {
	port := opPort(args)
	if port == 0 {
		ni, err := c.get(d, umad.SMAttrNodeInfo, 0)
		if err != nil {
			return failed("node info query failed", err)
		}
		if ni[2] == 2 {
			si, err := c.get(d, umad.SMAttrSwitchInfo, 0)
			if err != nil {
				return failed("switch info query failed", err)
			}
			if bits(si, 132, 1) == 0 {
				fmt.Fprintf(w, "# No VLArbitration tables (BSP0): %s port %d\n", d, 0)
				return nil
			}
		}
	}
	pi, err := c.get(d, umad.SMAttrPortInfo, uint32(port))
	if err != nil {
		return failed("port info query failed", err)
	}
	low, high := int(pi[40]), int(pi[39])
	fmt.Fprintf(w, "# VLArbitration tables: %s port %d LowCap %d HighCap %d\n", d, port, low, high)
	for _, t := range []struct {
		name   string
		offset int
		cap    int
	}{{"Low", 1, low}, {"High", 3, high}} {
		if t.cap <= 0 {
			continue
		}
		fmt.Fprintf(w, "# %s priority VL Arbitration Table:", t.name)
		if err := vlarbBlock(c, d, port, t.offset, min(t.cap, 32), w); err != nil {
			return err
		}
		if t.cap > 32 {
			if err := vlarbBlock(c, d, port, t.offset+1, t.cap-32, w); err != nil {
				return err
			}
		}
	}
	return nil
}

func smpGUIDs(c *smpClient, d smpDest, _ []string, w io.Writer) error {
	pi, err := c.get(d, umad.SMAttrPortInfo, 0)
	if err != nil {
		return failed("port info failed", err)
	}
	n := int(pi[50])
	blocks := (n + 7) / 8
	for i := 0; i < blocks; i++ {
		b, err := c.get(d, umad.SMAttrGUIDInfo, uint32(i))
		if err != nil {
			return failed("guid info query failed", err)
		}
		k := 8
		if i+1 == blocks {
			k = ((n + 1 - i*8) / 2) * 2
		}
		for j := 0; j < k && j+2 <= 8; j += 2 {
			fmt.Fprintf(w, "%4d: 0x%016x 0x%016x\n", i*8+j, binary.BigEndian.Uint64(b[8*j:]), binary.BigEndian.Uint64(b[8*j+8:]))
		}
	}
	fmt.Fprintf(w, "%d guids capacity for this port\n", n)
	return nil
}

var sminfoStates = []string{"SMINFO_NOTACTIVE", "SMINFO_DISCOVER", "SMINFO_STANDBY", "SMINFO_MASTER"}

func (env *Env) runSMInfo(args []string, stdout, stderr io.Writer) error {
	// -s, -p and -a: the SMInfo a Set (a modifier given) carries;
	// strtoul's value, cut to the field.
	var state, prio, act uint64
	num := func(p *uint64) func(string) error {
		return func(v string) error { *p = uint64(cli.CStrtol(v)); return nil }
	}
	o := newFabricOpts()
	o, usage, err := parseDiagSpec(diagSpec{
		tool: "sminfo", exclude: "sK", usageArgs: "<sm_lid|sm_dr_path> [modifier]",
		custom: []diagOpt{
			{"state", 's', true, "<0-3>", "set SM state", num(&state)},
			{"priority", 'p', true, "<0-15>", "set SM priority", num(&prio)},
			{"activity", 'a', true, "", "set activity count", num(&act)},
		},
		ours: retriesOpt(o), o: o,
	}, args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, "sminfo", usage, o, err)
	}
	o.ibdTimeout() // the SMInfo query's timeout
	exit := func(format string, args ...any) error {
		return ibexit(stdout, "sminfo", o.debug, "main", format, args...)
	}
	log := o.madLog(stderr)
	c, err := env.openSMP(o.ca, o.port, o.timeout, o.tries(), log)
	if err != nil {
		return openFailed(stdout, stderr, "sminfo", o, err)
	}
	defer c.Close()
	c.mkey = o.common.mkey
	var d smpDest
	if len(o.pos) > 0 && o.common.dest == destGUID {
		if d, err = env.resolveDest(c, o, destGUID, o.pos[0]); err != nil {
			return exit("can't resolve destination port %s", o.pos[0])
		}
	} else if len(o.pos) > 0 {
		if o.dr {
			log.dbg("str2drpath", "DR str: %s", o.pos[0])
		}
		if d, err = parseSMPDest(o.pos[0], o.dr); err != nil {
			return exit("%v", err)
		}
	} else {
		// resolve_sm_portid: the local port's PortInfo (from sysfs in
		// C, where libibmad prints nothing) names the SM.
		if o.port < 0 {
			if self, err := localPort(env.host(), c.port, o.timeout, o.tries()); err != nil || !selfResolves(o.port, self) {
				return exit("can't resolve sm port %s", "(null)")
			}
		}
		quiet := *c.rpc
		quiet.log = nil
		qc := *c
		qc.rpc = &quiet
		pi, err := qc.get(smpDest{dr: true}, umad.SMAttrPortInfo, 0)
		if err != nil {
			return exit("can't resolve sm port %s", "(null)")
		}
		d = smpDest{lid: binary.BigEndian.Uint16(pi[18:20])}
	}
	mod := 0
	if len(o.pos) > 1 {
		mod = cAtoi(o.pos[1])
	}
	// The SMInfo sminfo sends: GUID and SM_Key 0, the options' activity
	// count, priority and state.
	req := make([]byte, 64)
	binary.BigEndian.PutUint32(req[16:], uint32(act))
	req[20] = byte(prio&0xf)<<4 | byte(state&0xf)
	var b []byte
	if mod != 0 {
		b, err = c.set(d, umad.SMAttrSMInfo, uint32(mod), req)
	} else {
		c.rpc.log.dbg("smp_query_status_via", "attr 0x%x mod 0x%x route %s", uint16(umad.SMAttrSMInfo), 0, d)
		b, err = c.send(d, umad.MethodGet, umad.SMAttrSMInfo, 0, req)
	}
	if err != nil {
		return exit("query")
	}
	st := int(b[20] & 0xf)
	name := "???"
	if st < len(sminfoStates) {
		name = sminfoStates[st]
	}
	fmt.Fprintf(stdout, "sminfo: sm lid %d sm guid 0x%x, activity count %d priority %d state %d %s\n",
		d.lid, binary.BigEndian.Uint64(b[0:8]), binary.BigEndian.Uint32(b[16:20]), b[20]>>4, st, name)
	return nil
}
