package diags

// What ibroute, ibtracert and ibportstate share: infiniband-diags' common
// options as ibdiag_process_opts reads them (rdma-core 44,
// infiniband-diags/ibdiag_common.c) with the tool's own first, the usage
// ibdiag_show_usage prints from that table, the configuration file,
// libibmad's destinations (ib_portid_t, portid2str, str2drpath,
// resolve_portid_str) and its SMP calls (smp_query_status_via,
// smp_set_status_via) with a destination of any kind.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
)

// routeOpt is one of ibdiag_common's struct ibdiag_opt: a long name, a
// letter (0 for none), whether it takes an argument, the argument's name
// in the usage and the description.
type routeOpt struct {
	name    string
	letter  byte
	arg     bool
	argName string
	desc    string
	set     func(v string) error
}

// ibdiagConfig is IBDIAG_CONFIG_GENERAL, read before the options.
const ibdiagConfig = "/etc/infiniband-diags/ibdiag.conf"

// routeOpts are the common options' values.
type routeOpts struct {
	fabricOpts
	destType byte   // 'L' (the default), 'D' or 'G'
	smLID    int    // -s: the SM's LID, 0 when not given
	verbose  int    // -v
	mkey     uint64 // -y
	showKeys bool   // -K
}

// errExitNow is an option that ends the tool at once with err (an
// ibexit, or the version).
type errExitNow struct{ err error }

func (e errExitNow) Error() string { return e.err.Error() }

// parseRouteOpts is ibdiag_process_opts: the configuration file, then the
// tool's options (custom) and the common ones but those whose letters
// are in exclude, through getopt_long. A -h, a refused command line or an
// unknown option prints the usage (status 2); an option that ends the
// tool (an invalid -t or -s, -V) returns errExitNow.
func parseRouteOpts(tool, exclude, usageArgs string, examples []string, args []string, stdout, stderr io.Writer, custom ...routeOpt) (*routeOpts, func() error, error) {
	o := &routeOpts{fabricOpts: fabricOpts{timeout: madDefTimeout, retries: madDefTries - 1}, destType: 'L'}
	o.readConfig(ibdiagConfig)
	exit := func(format string, a ...any) error {
		return errExitNow{ibexit(stdout, tool, o.debug, "process_opt", format, a...)}
	}
	common := []routeOpt{
		{"config", 'z', true, "<config>", "use config file, default: " + ibdiagConfig, func(v string) error { o.readConfig(v); return nil }},
		{"Ca", 'C', true, "<ca>", "Ca name to use", func(v string) error { o.ca = v; return nil }},
		{"Port", 'P', true, "<port>", "Ca port number to use", func(v string) error { o.port = int(uint32(cli.CStrtol(v))); return nil }},
		{"Direct", 'D', false, "", "use Direct address argument", func(string) error { o.destType = 'D'; o.dr = true; return nil }},
		{"Lid", 'L', false, "", "use LID address argument", func(string) error { o.destType = 'L'; o.dr = false; return nil }},
		{"Guid", 'G', false, "", "use GUID address argument", func(string) error { o.destType = 'G'; o.dr = false; return nil }},
		{"timeout", 't', true, "<ms>", "timeout in ms", func(v string) error {
			u, end := strtoullEnd(v) // strtol's digits, to the end
			n := int64(u)
			if end != len(v) || n <= 0 || n > 1<<31-1 {
				return exit("Invalid timeout \"%s\".  Timeout requires a positive integer value < %d.", v, 1<<31-1)
			}
			o.timeout, o.timeoutSet = time.Duration(n)*time.Millisecond, true
			return nil
		}},
		{"sm_port", 's', true, "<lid>", "SM port lid", func(v string) error {
			lid := cli.CStrtol(v)
			if lid < 1 || lid > 0xbfff {
				return exit("cannot resolve SM destination port %s", v)
			}
			o.smLID = int(lid)
			return nil
		}},
		{"show_keys", 'K', false, "", "display security keys in output", func(string) error { o.showKeys = true; return nil }},
		{"m_key", 'y', true, "<key>", "M_Key to use in request", func(v string) error {
			k, n := strtoullEnd(v)
			if n != len(v) {
				// C asks for the key on the terminal (getpass), and
				// without one (as under the tests) fails after the
				// prompt; we take the key from the command line only.
				fmt.Fprint(stderr, "M_Key: ")
				return exit("Bad M_Key")
			}
			o.mkey = k
			return nil
		}},
		{"errors", 'e', false, "", "show send and receive errors", func(string) error { o.errs = true; return nil }},
		{"verbose", 'v', false, "", "increase verbosity level", func(string) error { o.verbose++; return nil }},
		{"debug", 'd', false, "", "raise debug level", func(string) error { o.debug = true; return nil }},
		{"help", 'h', false, "", "help message", func(string) error { return errHelp }},
		{"version", 'V', false, "", "show version", func(string) error {
			fmt.Fprintf(stderr, "%s BUILD VERSION: 44.0\n", tool)
			return errExitNow{nil}
		}},
	}
	table := append([]routeOpt(nil), custom...)
	for _, c := range common {
		if strings.IndexByte(exclude, c.letter) < 0 {
			table = append(table, c)
		}
	}
	usage := func() error {
		fmt.Fprint(stderr, routeUsage(tool, usageArgs, table, examples))
		return cli.ExitError{Code: 2}
	}
	opts := make([]cli.Option, len(table))
	for i, d := range table {
		opts[i] = cli.Option{Short: d.letter, Long: d.name, Arg: d.arg, Set: d.set}
	}
	pos, err := cli.GetoptOperands(tool, args, opts, stderr)
	var ge cli.GetoptError
	var en errExitNow
	switch {
	case errors.As(err, &en):
		if en.err == nil {
			return nil, usage, cli.ExitError{Code: 0}
		}
		return nil, usage, en.err
	case errors.Is(err, errHelp), errors.As(err, &ge), errors.Is(err, cli.ErrGetopt):
		return nil, usage, usage()
	case err != nil:
		return nil, usage, err
	}
	o.pos = pos
	return o, usage, nil
}

// routeUsage is ibdiag_show_usage's text.
func routeUsage(tool, usageArgs string, table []routeOpt, examples []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nUsage: %s [options] %s\n\n", tool, usageArgs)
	if len(table) > 0 {
		b.WriteString("Options:\n")
	}
	for _, d := range table {
		line := "  --" + d.name
		if d.letter >= 0x20 && d.letter < 0x7f {
			line += ", -" + string(d.letter)
		}
		if d.arg {
			a := d.argName
			if a == "" {
				a = "<val>"
			}
			line += " " + a
		}
		if d.desc != "" {
			if pad := 24 - len(line); pad > 0 {
				line += strings.Repeat(" ", pad)
			}
			line += "  "
			line += prettyPrintStr(len(line), 74, d.desc)
		}
		b.WriteString(line + "\n")
	}
	if len(examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, e := range examples {
			fmt.Fprintf(&b, "  %s %s\n", tool, e)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// readConfig is read_ibdiag_config: CA, Port, timeout and m_key from
// file (names matched by prefix, as C does); a missing file is ignored.
func (o *routeOpts) readConfig(file string) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		if !ok || val == "" {
			continue
		}
		switch {
		case strings.HasPrefix(name, "CA"):
			o.ca = val
		case strings.HasPrefix(name, "Port"):
			o.port = int(uint32(cli.CStrtol(val)))
		case strings.HasPrefix(name, "timeout"):
			if ms := cli.CStrtol(val); ms > 0 {
				o.timeout = time.Duration(ms) * time.Millisecond
			}
		case strings.HasPrefix(name, "m_key"):
			o.mkey = uint64(cli.CStrtol(val))
		}
	}
}

// portID is libibmad's ib_portid_t as these tools use it: a LID, a
// directed route (p[0] then cnt hops) with its DrSLID and DrDLID, or
// both (a LID-routed part, then the directed route).
type portID struct {
	lid            int
	cnt            int
	p              [64]uint8
	drslid, drdlid int
}

// directed reports whether an SMP to d goes directed-route
// (smp_query_status_via's choice of class).
func (d *portID) directed() bool {
	return d.lid <= 0 || d.drslid == 0xffff || d.drdlid == 0xffff
}

// String is portid2str.
func (d *portID) String() string {
	var b strings.Builder
	if d.lid > 0 {
		fmt.Fprintf(&b, "Lid %d", d.lid)
		if d.cnt == 0 {
			return b.String()
		}
		b.WriteString(" ")
	}
	fmt.Fprintf(&b, "DR path slid %d; dlid %d; %d", d.drslid, d.drdlid, d.p[0])
	for i := 1; i <= d.cnt && i < len(d.p); i++ {
		fmt.Fprintf(&b, ",%d", d.p[i])
	}
	return b.String()
}

// drPortID is libibmad's str2drpath: the numbers between commas (atoi each) as
// p[0], p[1], …; it fails (false) on an empty string.
func drPortID(s string) (portID, bool) {
	d := portID{cnt: -1, drslid: 0xffff, drdlid: 0xffff}
	for s != "" {
		part, rest, more := strings.Cut(s, ",")
		if d.cnt+1 >= len(d.p) {
			return d, false
		}
		d.cnt++
		d.p[d.cnt] = uint8(atoi(part))
		if !more {
			break
		}
		s = rest
	}
	return d, d.cnt >= 0
}

// atoi is C's: strtol base 10, clamped as the conversion to int does.
func atoi(s string) int {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	v := 0
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		v = v*10 + int(s[i]-'0')
		if v > 1<<40 {
			break
		}
	}
	if neg {
		return -v
	}
	return v
}

// strtoullEnd is strtoull(s, &end, 0): the value and how many bytes of s
// it read (0 when there are no digits); a minus sign negates modulo 2^64.
func strtoullEnd(s string) (uint64, int) {
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	base := uint64(10)
	switch {
	case i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && routeHexVal(s[i+2]) >= 0:
		base, i = 16, i+2
	case i < len(s) && s[i] == '0':
		base = 8
	}
	start := i
	var v uint64
	over := false
	for ; i < len(s); i++ {
		d := routeHexVal(s[i])
		if d < 0 || uint64(d) >= base {
			break
		}
		if v > (^uint64(0)-uint64(d))/base {
			over = true
		}
		v = v*base + uint64(d)
	}
	if i == start {
		return 0, 0
	}
	if over {
		v = ^uint64(0)
	} else if neg {
		v = -v
	}
	return v, i
}

func routeHexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// diagClient is the tools' port: SMPs (and the SA for -G) through
// libibmad's RPC.
type diagClient struct {
	*smpClient
	o    *routeOpts
	log  *madLog
	sa   umad.AgentID
	saOK bool
}

// openDiag opens the local port and registers the SMP clients, as
// mad_rpc_open_port does with the SMI, directed SMI and SA classes.
func (env *Env) openDiag(o *routeOpts, log *madLog) (*diagClient, error) {
	c, err := env.openSMP(o.ca, o.port, o.timeout, o.tries(), log)
	if err != nil {
		return nil, err
	}
	d := &diagClient{smpClient: c, o: o, log: log}
	if d.sa, err = c.port.Register(umad.ClassSubnAdm, 2, umad.MethodMask{}); err == nil {
		d.saOK = true
	}
	return d, nil
}

// smp is smp_query_status_via (method Get) or smp_set_status_via (Set):
// the SMP to d with data as its data area (nil: zeros), timeout 0 for
// the default. It returns the answer's 64-byte data area.
func (c *diagClient) smp(d *portID, method umad.Method, attr umad.AttrID, mod uint32, data []byte, timeout time.Duration) ([]byte, error) {
	fn := "smp_query_status_via"
	if method == umad.MethodSet {
		fn = "smp_set_status_via"
	}
	c.log.dbg(fn, "attr 0x%x mod 0x%x route %s", uint16(attr), mod, d)
	c.tid++
	m := make([]byte, umad.MADSize)
	m[0], m[1], m[2], m[3] = 1, byte(umad.ClassSubnMgmt), 1, byte(method)
	binary.BigEndian.PutUint64(m[8:], uint64(c.tid))
	binary.BigEndian.PutUint16(m[16:], uint16(attr))
	binary.BigEndian.PutUint32(m[20:], mod)
	binary.BigEndian.PutUint64(m[24:], c.o.mkey)
	copy(m[64:128], data)
	agent, lid := c.lid, uint16(d.lid)
	if d.directed() {
		m[1] = byte(umad.ClassSubnMgmtDirectedRoute)
		if d.cnt > 0 {
			m[7] = byte(d.cnt)
		}
		slid, dlid := d.drslid, d.drdlid
		if slid == 0 {
			slid = 0xffff
		}
		if dlid == 0 {
			dlid = 0xffff
		}
		binary.BigEndian.PutUint16(m[32:], uint16(slid))
		binary.BigEndian.PutUint16(m[34:], uint16(dlid))
		copy(m[128:192], d.p[:])
		agent = c.dr
		if d.lid <= 0 {
			lid = 0xffff
		}
	}
	rpc := *c.rpc
	if timeout > 0 {
		rpc.timeout = timeout
	}
	r, err := rpc.do(agent, m, func(p *umad.Packet) error { return p.SetAddr(lid, 0, 0, 0) }, d.String())
	if err != nil {
		return nil, err
	}
	if len(r) < 128 {
		return nil, fmt.Errorf("%s: a short answer (%d bytes)", d, len(r))
	}
	return append([]byte(nil), r[64:128]...), nil
}

// get is smp_query_via.
func (c *diagClient) get(d *portID, attr umad.AttrID, mod uint32, timeout time.Duration) ([]byte, error) {
	return c.smp(d, umad.MethodGet, attr, mod, nil, timeout)
}

// resolve is ibdiag_common's resolve_portid_str for the options'
// destination type; ok is false where C's returns -1.
func (c *diagClient) resolve(s string) (portID, bool) {
	switch c.o.destType {
	case 'D':
		if c.o.debug {
			c.log.dbg("str2drpath", "DR str: %s", s)
		}
		return drPortID(s)
	case 'G':
		guid, _ := strtoullEnd(s)
		if guid == 0 {
			return portID{}, false
		}
		return c.resolveGUID(guid)
	}
	lid := cli.CStrtol(s)
	if lid < 1 || lid > 0xbfff {
		return portID{}, false
	}
	return portID{lid: int(lid)}, true
}

// cleanNodeDesc is clean_nodedesc: the text up to its first NUL, every
// byte that is not printable a space.
func cleanNodeDesc(nd string) string {
	if i := strings.IndexByte(nd, 0); i >= 0 {
		nd = nd[:i]
	}
	b := []byte(nd)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = ' '
		}
	}
	return string(b)
}

// selfPort is what resolve_self and resolve_sm_portid read of the local
// port (umad_get_port): its LID, GID prefix and GUID, and the SM's LID
// and SL. An ibsim port has no sysfs: its own PortInfo and NodeInfo give
// them (libumad2sim's sysfs comes from the same), without libibmad's
// warnings.
func (c *diagClient) selfPort() (lid, smLID int, smSL uint8, prefix, guid uint64, err error) {
	if !isSim(c.port) {
		info := c.port.Info()
		if info.LID != nil {
			lid = int(*info.LID)
		}
		if info.SMLID != nil {
			smLID = int(*info.SMLID)
		}
		if info.SMSL != nil {
			smSL = uint8(*info.SMSL)
		}
		return lid, smLID, smSL, info.GIDPrefix, uint64(info.PortGUID), nil
	}
	quiet := *c
	rpc := *c.rpc
	rpc.log = nil
	sc := *c.smpClient
	sc.rpc = &rpc
	quiet.smpClient = &sc
	quiet.log = nil
	self := portID{}
	pi, err := quiet.get(&self, umad.SMAttrPortInfo, 0, 0)
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	ni, err := quiet.get(&self, umad.SMAttrNodeInfo, 0, 0)
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	c.tid = sc.tid
	return int(binary.BigEndian.Uint16(pi[16:18])), int(binary.BigEndian.Uint16(pi[18:20])), pi[36] & 0xf,
		binary.BigEndian.Uint64(pi[8:16]), binary.BigEndian.Uint64(ni[20:28]), nil
}

// resolveGUID is resolve_guid: a PathRecord Get (libibmad's
// ib_path_query_via) from the local port's GID to the port guid under
// the same subnet prefix, sent to the SM (-s, else the local port's SM
// LID); the answer's DLID is the destination.
func (c *diagClient) resolveGUID(guid uint64) (portID, bool) {
	_, smLID, smSL, prefix, selfGUID, err := c.selfPort()
	if err != nil {
		return portID{}, false
	}
	if c.o.smLID != 0 {
		smLID, smSL = c.o.smLID, 0
	}
	if prefix == 0 {
		prefix = 0xfe80000000000000
	}
	sm := portID{lid: smLID}
	c.log.dbg("sa_rpc_call", "attr 0x%x mod 0x%x route %s", 0x35, 0, &sm)
	if smLID <= 0 {
		c.log.warn("sa_rpc_call", "only lid routes are supported")
		c.log.warn("ib_path_query_via", "sa call path_query failed")
		return portID{}, false
	}
	if !c.saOK {
		c.log.warn("ib_path_query_via", "sa call path_query failed")
		return portID{}, false
	}
	// The template PathRecord: DGID at byte 8, SGID at 24.
	rec := make([]byte, umad.PathRecordSize)
	binary.BigEndian.PutUint64(rec[8:], prefix)
	binary.BigEndian.PutUint64(rec[16:], guid)
	binary.BigEndian.PutUint64(rec[24:], prefix)
	binary.BigEndian.PutUint64(rec[32:], selfGUID)
	c.tid++
	q := umad.SAQuery{Method: umad.MethodGet, Attr: umad.SAAttrPathRecord, CompMask: umad.PRCompDGID | umad.PRCompSGID, Data: rec}
	m := q.Append(nil, uint64(c.tid))
	r, err := c.rpc.do(c.sa, m, func(p *umad.Packet) error {
		return p.SetAddr(uint16(smLID), 1, smSL, umad.QP1QKey)
	}, sm.String())
	var pr umad.PathRecord
	if err == nil {
		var a *umad.SAResponse
		if a, err = umad.DecodeSAResponse(r); err == nil {
			err = pr.Decode(a.Data)
		}
	}
	if err != nil {
		c.log.warn("ib_path_query_via", "sa call path_query failed")
		return portID{}, false
	}
	return portID{lid: int(pr.DLID)}, true
}

// ibdebug is the tools' DEBUG (IBDEBUG, with -d): "ibdebug: [pid] fn:
// message" on standard output, w.
func (o *routeOpts) ibdebug(w io.Writer, fn, format string, a ...any) {
	if o.debug {
		fmt.Fprintf(w, "ibdebug: [%d] %s: %s\n", os.Getpid(), fn, fmt.Sprintf(format, a...))
	}
}

// ibverbose is the tools' VERBOSE (IBVERBOSE, with -v): "[pid] fn:
// message" on standard output, w.
func (o *routeOpts) ibverbose(w io.Writer, fn, format string, a ...any) {
	if o.verbose > 0 {
		fmt.Fprintf(w, "[%d] %s: %s\n", os.Getpid(), fn, fmt.Sprintf(format, a...))
	}
}
