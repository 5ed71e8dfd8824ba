package diags

// ibaddr: a port's GID and LID range, like infiniband-diags' ibaddr
// (rdma-core 44, infiniband-diags/ibaddr.c): NodeInfo and PortInfo of the
// port, by LID, directed route (-D) or port GUID (-G, resolved through
// the SA's PathRecord as ibdiag_common's resolve_portid_str does), or of
// the local port. The output, warnings and exit statuses are the C
// tool's.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
)

// ibaddrExamples are ibaddr.c's usage_examples.
var ibaddrExamples = []string{
	"\t\t# local port's address",
	"32\t\t# show lid range and gid of lid 32",
	"-G 0x8f1040023\t# same but using guid address",
	"-l 32\t\t# show lid range only",
	"-L 32\t\t# show decimal lid range only",
	"-g 32\t\t# show gid address only",
}

func (env *Env) runIBAddr(args []string, stdout, stderr io.Writer) error {
	const tool = "ibaddr"
	showLID, showGID := 0, false
	o := newFabricOpts()
	o, usage, err := parseDiagSpec(diagSpec{
		tool: tool, exclude: "KL", usageArgs: "[<lid|dr_path|guid>]", examples: ibaddrExamples,
		custom: []diagOpt{
			{"gid_show", 'g', false, "", "show gid address only", func(string) error { showGID = true; return nil }},
			{"lid_show", 'l', false, "", "show lid range only", func(string) error { showLID++; return nil }},
			{"Lid_show", 'L', false, "", "show lid range (in decimal) only", func(string) error { showLID = -100; return nil }},
		},
		ours: retriesOpt(o), o: o,
	}, args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, tool, usage, o, err)
	}
	exit := func(format string, args ...any) error {
		return ibexit(stdout, "ibaddr", o.debug, "main", format, args...)
	}
	port := 0
	if len(o.pos) > 1 {
		port = int(uint32(cli.CStrtol(o.pos[1])))
	}
	if showLID == 0 && !showGID {
		showLID, showGID = 1, true
	}
	c, err := env.openSMP(o.ca, o.port, o.timeout, o.tries(), o.madLog(stderr))
	if err != nil {
		return openFailed(stdout, stderr, "ibaddr", o, err)
	}
	defer c.Close()
	c.mkey = o.common.mkey
	var dest smpDest
	if len(o.pos) > 0 {
		dest, err = env.resolveDest(c, o, o.common.dest, o.pos[0])
		if err != nil {
			return exit("can't resolve destination port %s", o.pos[0])
		}
	} else {
		self, err := localPort(env.host(), c.port, o.timeout, o.tries())
		if err != nil || self.LID == nil || !selfResolves(o.port, self) {
			return exit("can't resolve self port (null)")
		}
		dest, port = smpDest{lid: uint16(*self.LID)}, self.Number
	}
	ni, err := c.get(dest, umad.SMAttrNodeInfo, 0)
	if err != nil {
		return exit("can't resolve requested address")
	}
	pi, err := c.get(dest, umad.SMAttrPortInfo, uint32(port))
	if err != nil {
		return exit("can't resolve requested address")
	}
	lid := int(binary.BigEndian.Uint16(pi[16:18]))
	lmc := int(bits(pi, 277, 3))
	var b strings.Builder
	if showGID {
		var g rdma.GID
		copy(g[:8], pi[8:16])
		copy(g[8:], ni[20:28])
		fmt.Fprintf(&b, "GID %s ", g)
	}
	if showLID > 0 {
		fmt.Fprintf(&b, "LID start 0x%x end 0x%x", lid, lid+(1<<lmc)-1)
	} else if showLID < 0 {
		fmt.Fprintf(&b, "LID start %d end %d", lid, lid+(1<<lmc)-1)
	}
	b.WriteString("\n")
	_, err = io.WriteString(stdout, b.String())
	return err
}

// resolveDest is ibdiag_common's resolve_portid_str for a LID, a
// directed route or a port GUID (kind: destLID, destDR, destGUID; the
// common -L, -D, -G).
func (env *Env) resolveDest(c *smpClient, o *fabricOpts, kind int, s string) (smpDest, error) {
	switch kind {
	case destGUID:
		guid := cStrtoull(s)
		if guid == 0 {
			return smpDest{}, errors.New("no GUID")
		}
		lid, sl, err := env.pathQueryGUID(c, o, guid)
		if err != nil {
			return smpDest{}, err
		}
		return smpDest{lid: lid, sl: sl}, nil
	case destDR:
		c.rpc.log.dbg("str2drpath", "DR str: %s", s)
		d, ok := str2drpath(s)
		if !ok {
			return smpDest{}, fmt.Errorf("can't resolve destination port %s", s)
		}
		return d, nil
	}
	lid := cli.CStrtol(s)
	if lid < 1 || lid > 0xbfff {
		return smpDest{}, fmt.Errorf("can't resolve destination port %s", s)
	}
	return smpDest{lid: uint16(lid)}, nil
}

// pathQueryGUID is ibdiag_common's resolve_guid: a PathRecord Get to the
// SA (-s, or the local port's SM) from the local port's GID to the GID of
// guid under the local prefix (libibmad's ib_path_query_via); it returns
// the record's DLID and SL.
func (env *Env) pathQueryGUID(c *smpClient, o *fabricOpts, guid uint64) (uint16, uint8, error) {
	self, err := localPort(env.host(), c.port, o.timeout, o.tries())
	if err != nil {
		return 0, 0, err
	}
	if !selfResolves(o.port, self) {
		return 0, 0, fmt.Errorf("resolve_self: no port %d", uint8(o.port))
	}
	// resolve_sm_portid: -s (SL 0), else the local port's SM.
	smLID, smSL := o.common.smLID, uint8(0)
	if smLID == 0 && self.SMLID != nil {
		smLID = int(*self.SMLID)
		if self.SMSL != nil {
			smSL = *self.SMSL
		}
	}
	// The local GID: umad_get_port's prefix and port GUID; an ibsim port
	// has no sysfs, so its PortInfo and NodeInfo give them.
	var selfGID [16]byte
	if isSim(c.port) {
		pi, err := c.getQuiet(smpDest{dr: true}, umad.SMAttrPortInfo, 0)
		if err != nil {
			return 0, 0, err
		}
		ni, err := c.getQuiet(smpDest{dr: true}, umad.SMAttrNodeInfo, 0)
		if err != nil {
			return 0, 0, err
		}
		copy(selfGID[:8], pi[8:16])
		copy(selfGID[8:], ni[20:28])
	} else {
		info := c.port.Info()
		binary.BigEndian.PutUint64(selfGID[:8], info.GIDPrefix)
		binary.BigEndian.PutUint64(selfGID[8:], uint64(info.PortGUID))
	}
	prefix := binary.BigEndian.Uint64(selfGID[:8])
	if prefix == 0 {
		prefix = 0xfe80000000000000 // IB_DEFAULT_SUBN_PREFIX
	}
	log := c.rpc.log
	dest := fmt.Sprintf("Lid %d", smLID)
	log.dbg("sa_rpc_call", "attr 0x35 mod 0x0 route %s", dest)
	if smLID < 1 || smLID > 0xbfff {
		log.warn("sa_rpc_call", "only lid routes are supported")
		log.warn("ib_path_query_via", "sa call path_query failed")
		return 0, 0, errors.New("no SM LID")
	}
	if c.sa == 0 {
		if c.sa, err = c.port.Register(umad.ClassSubnAdm, 2, umad.MethodMask{}); err != nil {
			return 0, 0, err
		}
	}
	c.tid++
	m := make([]byte, umad.MADSize)
	m[0], m[1], m[2], m[3] = 1, byte(umad.ClassSubnAdm), 2, byte(umad.MethodGet)
	binary.BigEndian.PutUint64(m[8:], uint64(c.tid))
	binary.BigEndian.PutUint16(m[16:], 0x35) // PathRecord
	binary.BigEndian.PutUint64(m[48:], 0x0c) // DGID | SGID
	binary.BigEndian.PutUint64(m[64:], prefix)
	binary.BigEndian.PutUint64(m[72:], guid)
	copy(m[80:96], selfGID[:])
	// mad_rpc_rmpp's DEBUG names no RMPP context and the address of
	// resolve_guid's buffer on C's stack, which a stand-in replaces.
	log.dbg("mad_rpc_rmpp", "rmpp (nil) data 0x%012x", 0x7ffc00000000)
	c.rpc.fn = "mad_rpc_rmpp"
	r, err := c.rpc.do(c.sa, m, func(p *umad.Packet) error { return p.SetAddr(uint16(smLID), 1, smSL, 0x80010000) }, dest)
	c.rpc.fn = ""
	if err == nil && len(r) < 110 {
		err = errors.New("a short SA answer")
	}
	if err != nil {
		log.warn("ib_path_query_via", "sa call path_query failed")
		return 0, 0, err
	}
	return binary.BigEndian.Uint16(r[96:98]), r[56+53] & 0xf, nil
}

// str2drpath is libibmad's str2drpath as resolve_portid_str uses it:
// the comma-separated numbers (atoi's, cut to a byte), the first hop0
// (p[0], which no SMA reads); only an empty string fails. A route longer
// than an SMP carries (63 hops) fails too (C overruns its array).
func str2drpath(s string) (smpDest, bool) {
	if s == "" {
		return smpDest{}, false
	}
	parts := strings.Split(s, ",")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // "0,1,": strchr leaves nothing after the last comma
	}
	d := smpDest{dr: true, hop0: uint8(cAtoi(parts[0]))}
	for _, p := range parts[1:] {
		d.path = append(d.path, uint8(cAtoi(p)))
	}
	if len(d.path) > 63 {
		return smpDest{}, false
	}
	return d, true
}
