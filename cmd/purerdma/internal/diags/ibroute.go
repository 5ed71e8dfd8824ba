package diags

// ibroute: a switch's unicast (linear) or multicast forwarding table,
// like infiniband-diags' (rdma-core 44, infiniband-diags/ibroute.c),
// through package umad. The output is the C tool's, byte for byte (the
// tests compare them on simulated fabrics).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/purerdma/rdma/umad"
)

var ibrouteExamples = []string{
	" -- Unicast examples:",
	"4\t# dump all lids with valid out ports of switch with lid 4",
	"-a 4\t# same, but dump all lids, even with invalid out ports",
	"-n 4\t# simple dump format - no destination resolving",
	"4 10\t# dump lids starting from 10",
	"4 0x10 0x20\t# dump lid range",
	"-G 0x08f1040023\t# resolve switch by GUID",
	"-D 0,1\t# resolve switch by direct path",
	" -- Multicast examples:",
	"-M 4\t# dump all non empty mlids of switch with lid 4",
	"-M 4 0xc010 0xc020\t# same, but with range",
	"-M -n 4\t# simple dump format",
}

// ibroute is one run's state: the options and, for the unicast dump,
// dump_lid's memory of the last LMC range.
type ibroute struct {
	c                        *smpClient
	log                      *madLog
	o                        *fabricOpts
	all, brief               bool
	names                    *nodeNameMap
	out                      *strings.Builder
	stderr                   io.Writer
	lastPortLID, basePortLID int
	portGUID                 uint64
}

func (env *Env) runIBRoute(args []string, stdout, stderr io.Writer) error {
	r := &ibroute{stderr: stderr, out: &strings.Builder{}}
	var mcast, mapSet bool
	var mapFile string
	custom := []diagOpt{
		{"all", 'a', false, "", "show all lids, even invalid entries", func(string) error { r.all = true; return nil }},
		{"no_dests", 'n', false, "", "do not try to resolve destinations", func(string) error { r.brief = true; return nil }},
		{"Multicast", 'M', false, "", "show multicast forwarding tables", func(string) error { mcast = true; return nil }},
		{"node-name-map", 1, true, "<file>", "node name map file", func(v string) error { mapFile, mapSet = v, true; return nil }},
	}
	o, usage, err := parseDiagSpec(diagSpec{tool: "ibroute", exclude: "K", usageArgs: "[<dest dr_path|lid|guid> [<startlid> [<endlid>]]]",
		examples: ibrouteExamples, custom: custom}, args, stderr)
	if err != nil {
		return diagOptsFailed(stdout, stderr, "ibroute", usage, o, err)
	}
	if len(o.pos) == 0 {
		return fabricHelp(stderr, usage.String())
	}
	r.o = o
	var start, end int
	if len(o.pos) > 1 {
		start = int(uint32(cStrtoul(o.pos[1])))
	}
	if len(o.pos) > 2 {
		end = int(uint32(cStrtoul(o.pos[2])))
	}
	r.names = openNodeNameMap(mapFile, mapSet, stderr)
	exit := func(format string, a ...any) error {
		return ibexit(stdout, "ibroute", o.debug, "main", format, a...)
	}
	log := o.madLog(stderr)
	log.out, log.verbose = r.out, o.common.verbose > 0
	c, err := env.openSMP(o.ca, o.port, o.timeout, o.tries(), log)
	if err != nil {
		return openFailed(stdout, stderr, "ibroute", o, err)
	}
	defer c.Close()
	c.mkey = o.common.mkey
	r.c, r.log = c, log
	d, err := env.resolveDest(c, o, o.common.dest, o.pos[0])
	if err != nil {
		return exit("can't resolve destination port %s", o.pos[0])
	}
	var msg string
	if mcast {
		msg = r.multicast(d, start, end)
	} else {
		// dump_unicast_tables takes the LIDs as ints.
		msg = r.unicast(d, int(int32(start)), int(int32(end)))
	}
	io.WriteString(stdout, r.out.String())
	if msg != "" {
		return exit("dump tables: %s", msg)
	}
	return nil
}

// checkSwitch is ibroute's check_switch: NodeInfo, NodeDescription and
// SwitchInfo of the switch at d; the failure is C's text.
func (r *ibroute) checkSwitch(d smpDest) (ni, nd, si []byte, msg string) {
	r.log.ibdebug("check_switch", "checking node type")
	ni, err := r.c.get(d, umad.SMAttrNodeInfo, 0)
	if err != nil {
		xdump(r.stderr, "nodeinfo\n", make([]byte, 64))
		return nil, nil, nil, "node info failed: valid addr?"
	}
	nd, err = r.c.get(d, umad.SMAttrNodeDescription, 0)
	if err != nil {
		return nil, nil, nil, "node desc failed"
	}
	if ni[2] != 2 {
		return nil, nil, nil, "not a switch"
	}
	r.log.ibdebug("check_switch", "Gathering information about switch")
	si, err = r.c.get(d, umad.SMAttrSwitchInfo, 0)
	if err != nil {
		return nil, nil, nil, "switch info failed: is a switch node?"
	}
	return ni, nd, si, ""
}

// xdump is libibmad's xdump: the text, then the bytes in pairs, a space
// between pairs and a line every 16 bytes.
func xdump(w io.Writer, text string, b []byte) {
	var s strings.Builder
	s.WriteString(text)
	i := 0
	for i < len(b) {
		fmt.Fprintf(&s, "%02x", b[i])
		if i++; i >= len(b) {
			break
		}
		fmt.Fprintf(&s, "%02x", b[i])
		if i++; i%16 != 0 {
			s.WriteByte(' ')
		} else {
			s.WriteByte('\n')
		}
	}
	if i%16 != 0 {
		s.WriteByte('\n')
	}
	io.WriteString(w, s.String())
}

func (r *ibroute) unicast(d smpDest, start, end int) string {
	ni, nd, si, msg := r.checkSwitch(d)
	if msg != "" {
		return msg
	}
	nports := int(ni[3])
	guid := binary.BigEndian.Uint64(ni[12:20])
	var sw umad.SwitchInfo
	_ = sw.Decode(si)
	top := int(sw.LinearFDBTop)
	if end == 0 || end > top {
		end = top
	}
	if end > 0xbfff {
		r.log.warn("dump_unicast_tables", "illegal lft top %d, truncate to %d", end, 0xbfff)
		end = 0xbfff
	}
	w := r.out
	fmt.Fprintf(w, "Unicast lids [0x%x-0x%x] of switch %s guid 0x%016x (%s):\n", uint32(start), uint32(end), d, guid, r.names.remap(guid, nd))
	r.log.ibdebug("dump_unicast_tables", "Switch top is 0x%x\n", top)
	fmt.Fprintf(w, "  Lid  Out   Destination\n")
	fmt.Fprintf(w, "       Port     Info \n")
	n := 0
	for block := start / 64; block < (end+63)/64; block++ {
		r.log.ibdebug("dump_unicast_tables", "reading block %d", block)
		b, err := r.c.get(d, umad.SMAttrLinearForwardingTable, uint32(block))
		if err != nil {
			fmt.Fprintf(r.stderr, "SubnGet() failed; MAD status 0x%x AM 0x%x\n", madStatusOf(err), uint32(block))
			return ""
		}
		var lft umad.LinearForwardingTable
		_ = lft.Decode(b)
		i, e := block*64, block*64+64
		i = max(i, start)
		e = min(e, end+1)
		for ; i < e; i++ {
			out := int(lft[i%64])
			valid := out <= nports
			if !valid && !r.all {
				continue
			}
			fmt.Fprintf(w, "0x%04x %03d %s\n", i, out, r.dumpLID(i, valid))
			n++
		}
	}
	all := "valid "
	if r.all {
		all = ""
	}
	fmt.Fprintf(w, "%d %slids dumped \n", n, all)
	return ""
}

// madStatusOf is the MAD status a failed query came back with (0 for
// none: C's status stays what it was, 0 at first).
func madStatusOf(err error) int {
	var s *errMADStatus
	if errors.As(err, &s) {
		return int(s.status)
	}
	return 0
}

// dumpLID is ibroute's dump_lid: what the LID's destination is, asked
// with a 100 ms timeout; the LIDs of a port's LMC range after its base
// LID are numbered paths.
func (r *ibroute) dumpLID(lid int, valid bool) string {
	if r.brief {
		return ""
	}
	if lid <= r.lastPortLID {
		switch {
		case !valid:
			return fmt.Sprintf(": (path #%d - illegal port)", lid-r.basePortLID)
		case r.portGUID == 0:
			return fmt.Sprintf(": (path #%d out of %d)", lid-r.basePortLID+1, r.lastPortLID-r.basePortLID+1)
		}
		return fmt.Sprintf(": (path #%d out of %d: portguid 0x%016x)", lid-r.basePortLID+1, r.lastPortLID-r.basePortLID+1, r.portGUID)
	}
	if !valid {
		return ": (illegal port)"
	}
	r.portGUID = 0
	d := smpDest{lid: uint16(lid)}
	const t = 100 * time.Millisecond
	nd, err := r.c.getTimeout(d, umad.SMAttrNodeDescription, 0, t)
	var pi, ni []byte
	if err == nil {
		pi, err = r.c.getTimeout(d, umad.SMAttrPortInfo, 0, t)
	}
	if err == nil {
		ni, err = r.c.getTimeout(d, umad.SMAttrNodeInfo, 0, t)
	}
	if err != nil {
		return ": (unknown node and type)"
	}
	guid := binary.BigEndian.Uint64(ni[12:20])
	r.portGUID = binary.BigEndian.Uint64(ni[20:28])
	base, lmc := int(binary.BigEndian.Uint16(pi[16:18])), int(pi[34]&7)
	if lmc > 0 {
		r.basePortLID, r.lastPortLID = base, base+(1<<lmc)-1
	}
	return fmt.Sprintf(": (%s portguid 0x%016x: '%s')", dumpNodeType(uint64(ni[2]), 8), r.portGUID, r.names.remap(guid, nd))
}

func (r *ibroute) multicast(d smpDest, start, end int) string {
	ni, nd, si, msg := r.checkSwitch(d)
	if msg != "" {
		return msg
	}
	nports := int(ni[3])
	guid := binary.BigEndian.Uint64(ni[12:20])
	var sw umad.SwitchInfo
	_ = sw.Decode(si)
	capacity, top := int(sw.MulticastFDBCap), int(sw.MulticastFDBTop)
	// C's arithmetic is unsigned.
	if end == 0 || uint32(end) > uint32(0xc000+capacity-1) {
		end = 0xc000 + capacity - 1
	}
	if !r.all && top != 0 && top < end {
		if top < 0xc000-1 {
			r.log.warn("dump_multicast_tables", "illegal top mlid %x", top)
		} else {
			end = top
		}
	}
	if start == 0 {
		start = 0xc000
	} else if start < 0xc000 {
		r.log.warn("dump_multicast_tables", "illegal start mlid %x, set to %x", start, 0xc000)
		start = 0xc000
	}
	if end > 0xfffe {
		r.log.warn("dump_multicast_tables", "illegal end mlid %x, truncate to %x", end, 0xfffe)
		end = 0xfffe
	}
	w := r.out
	fmt.Fprintf(w, "Multicast mlids [0x%x-0x%x] of switch %s guid 0x%016x (%s):\n", start, end, d, guid, r.names.remap(guid, nd))
	if r.brief {
		fmt.Fprintf(w, " MLid       Port Mask\n")
	} else {
		var s strings.Builder
		if nports > 9 {
			for i := 0; i <= nports; i++ {
				if i%10 != 0 {
					s.WriteString("  ")
				} else {
					fmt.Fprintf(&s, "%c ", '0'+byte(i/10))
				}
			}
			fmt.Fprintf(w, "            %s\n", s.String())
		}
		s.Reset()
		for i := 0; i <= nports; i++ {
			fmt.Fprintf(&s, "%d ", i%10)
		}
		fmt.Fprintf(w, "     Ports: %s\n", s.String())
		fmt.Fprintf(w, " MLid\n")
	}
	if r.o.common.verbose > 0 {
		fmt.Fprintf(w, "Switch multicast mlid capability is %d top is 0x%x\n", capacity, top)
	}
	chunks := (nports + 1 + 15) / 16
	var mft [16]umad.MulticastForwardingTable
	n := 0
	for block := start / 32; block <= end/32; block++ {
		for j := 0; j < chunks; j++ {
			mod := uint32(block-0xc000/32) | uint32(j)<<28
			r.log.ibdebug("dump_multicast_tables", "reading block %x chunk %d mod %x", block, j, mod)
			b, err := r.c.get(d, umad.SMAttrMulticastForwardingTable, mod)
			if err != nil {
				fmt.Fprintf(r.stderr, "SubnGet() failed; MAD status 0x%x AM 0x%x\n", madStatusOf(err), mod)
				return ""
			}
			_ = mft[j].Decode(b)
		}
		i, e := block*32, block*32+32
		i = max(i, start)
		e = min(e, end+1)
		for ; i < e; i++ {
			s, ok := r.dumpMLID(i, nports, chunks, &mft)
			if !ok {
				continue
			}
			fmt.Fprintf(w, "0x%04x      %s\n", i, s)
			n++
		}
	}
	all := "valid "
	if r.all {
		all = ""
	}
	fmt.Fprintf(w, "%d %smlids dumped \n", n, all)
	return ""
}

// dumpMLID is ibroute's dump_mlid: the ports of mlid, as a mask with -n,
// else an x under each port; ok is false for an empty entry (unless -a).
func (r *ibroute) dumpMLID(mlid, nports, chunks int, mft *[16]umad.MulticastForwardingTable) (string, bool) {
	nonzero := 0
	var s strings.Builder
	if r.brief {
		for i := 0; i < chunks; i++ {
			mask := mft[i][mlid%32]
			if mask != 0 {
				nonzero++
			}
			fmt.Fprintf(&s, "%04x", mask)
		}
		return s.String(), nonzero != 0 || r.all
	}
	for i := 0; i <= nports; i++ {
		mask := mft[i/16][mlid%32]
		if mask != 0 {
			nonzero++
		}
		if mask&(1<<(i%16)) != 0 {
			s.WriteString("x ")
		} else {
			s.WriteString("  ")
		}
	}
	return s.String(), nonzero != 0 || r.all
}
