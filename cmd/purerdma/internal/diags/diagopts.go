package diags

// What ibroute, ibtracert and ibportstate share: infiniband-diags' common
// options as ibdiag_process_opts reads them (rdma-core 44,
// infiniband-diags/ibdiag_common.c) with the tool's own first, the usage
// ibdiag_show_usage prints from that table, the configuration file,
// libibmad's destinations (ib_portid_t, portid2str, str2drpath,
// resolve_portid_str) and its SMP calls (smp_query_status_via,
// smp_set_status_via) with a destination of any kind.

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
)

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
		d.p[d.cnt] = uint8(cAtoi(part))
		if !more {
			break
		}
		s = rest
	}
	return d, d.cnt >= 0
}

// diagClient is the tools' port: SMPs (and the SA for -G) through
// libibmad's RPC.
type diagClient struct {
	*smpClient
	o    *fabricOpts
	log  *madLog
	sa   umad.AgentID
	saOK bool
}

// openDiag opens the local port and registers the SMP clients, as
// mad_rpc_open_port does with the SMI, directed SMI and SA classes.
func (env *Env) openDiag(o *fabricOpts, log *madLog) (*diagClient, error) {
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
	binary.BigEndian.PutUint64(m[24:], c.o.common.mkey)
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
	switch c.o.common.dest {
	case destDR:
		if c.o.debug {
			c.log.dbg("str2drpath", "DR str: %s", s)
		}
		return drPortID(s)
	case destGUID:
		guid := cStrtoull(s)
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
	if c.o.common.smLID != 0 {
		smLID, smSL = c.o.common.smLID, 0
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
