package diags

// The SMP side of the fabric tools (smpquery, sminfo, ibnetdiscover,
// iblinkinfo): a client that sends LID-routed and directed-route SMP Gets
// and waits for their answers, libibmad's field dumps (libibmad/fields.c,
// dump.c) and its destination strings (portid2str).

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
)

// smpDest is a destination: a LID, or a directed route (the out ports
// after the leading 0 of libibmad's "0,1,3").
//
// A combined route (smpquery -c) has both: LID-routed to lid, then
// directed along path, with slid its DrSLID (the local port's LID).
type smpDest struct {
	lid  uint16
	dr   bool
	path []uint8
	sl   uint8 // the SL of a LID (the SA's PathRecord for a GUID; else 0)
	slid uint16
	// hop0 is the route's first number (ib_dr_path_t's p[0], what
	// str2drpath read before the first comma): portid2str prints it and
	// the SMP's initial path carries it, though no SMA reads it.
	hop0 uint8
	// zeroDR is a directed route whose DrSLID and DrDLID were left 0, as
	// in ibtracert's zeroed ib_portid_t: portid2str prints the 0s, and
	// the SMP carries 0xffff for them as libibmad sends a 0.
	zeroDR bool
}

// String is libibmad's portid2str.
func (d smpDest) String() string {
	if !d.dr {
		return fmt.Sprintf("Lid %d", d.lid)
	}
	s := []string{strconv.Itoa(int(d.hop0))}
	for _, p := range d.path {
		s = append(s, strconv.Itoa(int(p)))
	}
	if d.lid != 0 {
		if len(d.path) == 0 {
			return fmt.Sprintf("Lid %d", d.lid)
		}
		return fmt.Sprintf("Lid %d DR path slid %d; dlid 65535; %s", d.lid, d.slid, strings.Join(s, ","))
	}
	if d.zeroDR {
		return "DR path slid 0; dlid 0; " + strings.Join(s, ",")
	}
	return "DR path slid 65535; dlid 65535; " + strings.Join(s, ",")
}

// clone is d with a path of its own: a copy of an ib_portid_t, whose
// route a later extension of d's must not change.
func (d smpDest) clone() smpDest {
	d.path = append([]uint8(nil), d.path...)
	return d
}

// extend is libibmad-style code's path->cnt++ and p[cnt] = port: port
// added as the route's last hop.
func (d *smpDest) extend(port uint8) {
	d.path = append(d.path, port)
}

// back is path->cnt--: the route's last hop taken off, and returned (a
// route with none keeps none and returns hop0, C's p[0]).
func (d *smpDest) back() uint8 {
	if len(d.path) == 0 {
		return d.hop0
	}
	h := d.path[len(d.path)-1]
	d.path = d.path[:len(d.path)-1]
	return h
}

// last is p[cnt]: the route's last hop, hop0 when it has none.
func (d *smpDest) last() uint8 {
	if len(d.path) == 0 {
		return d.hop0
	}
	return d.path[len(d.path)-1]
}

// cAtoi is C's atoi: (int)strtol(s, NULL, 10): blanks, a sign, decimal
// digits up to the first other character (none: 0), saturated at a
// long's bounds, then cut to an int.
func cAtoi(s string) int {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	var n uint64
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if n > (1<<63-d)/10 {
			n = 1 << 63 // beyond a long: saturated
		} else {
			n = n*10 + d
		}
	}
	v := int64(n) // 1<<63: LONG_MIN, which a minus keeps
	switch {
	case neg:
		v = -v
	case n == 1<<63:
		v = 1<<63 - 1
	}
	return int(int32(v))
}

// parseCombinedDest reads smpquery -c's destination: a LID and a
// directed route from the node of that LID ("0,12"), the DrSLID slid
// (resolve_portid_str's IB_DEST_DRSLID; str2drpath reads the hops with
// atoi).
func parseCombinedDest(lidArg, route string, slid uint16) (smpDest, error) {
	lid := cli.CStrtol(lidArg)
	if lid <= 0 || lid >= 0xc000 {
		return smpDest{}, fmt.Errorf("can't resolve destination port %s %s", lidArg, route)
	}
	d := smpDest{lid: uint16(lid), dr: true, slid: slid}
	for i, h := range strings.Split(route, ",") {
		if i > 0 && len(d.path) < 63 {
			d.path = append(d.path, uint8(cAtoi(h)))
		}
	}
	return d, nil
}

// parseSMPDest reads a destination as the C tools do: with dr a path such
// as "0,1,3" (libibmad's str2drpath), else a LID (strtoul base 0).
func parseSMPDest(s string, dr bool) (smpDest, error) {
	if !dr {
		n, err := strconv.ParseUint(s, 0, 16)
		if err != nil || n == 0 {
			return smpDest{}, fmt.Errorf("can't resolve destination port %s", s)
		}
		return smpDest{lid: uint16(n)}, nil
	}
	d := smpDest{dr: true}
	parts := strings.Split(s, ",")
	if parts[0] != "0" {
		return smpDest{}, fmt.Errorf("can't resolve destination port %s", s)
	}
	for _, p := range parts[1:] {
		n, err := strconv.ParseUint(p, 0, 8)
		if err != nil {
			return smpDest{}, fmt.Errorf("can't resolve destination port %s", s)
		}
		d.path = append(d.path, uint8(n))
	}
	if len(d.path) > 63 {
		return smpDest{}, fmt.Errorf("directed route %s has more than 63 hops", s)
	}
	return d, nil
}

// smpClient sends SMP Gets from a port's SMI agents, through libibmad's
// RPC (madRPC).
type smpClient struct {
	port    *umad.Port
	lid, dr umad.AgentID
	sa      umad.AgentID // registered on first use (ibaddr -G)
	rpc     *madRPC
	tid     uint32
	// mkey is the M_Key every SMP carries (-y; libibmad's
	// smp_mkey_set).
	mkey uint64
}

// selfResolves is whether resolve_self and resolve_sm_portid find the
// local port self that -P (port) opened: they take the number as a
// uint8_t where umad_open_port took an int, a number below 1 being its
// first active port; 0 is that port for them too.
func selfResolves(port int, self *umad.CAPort) bool {
	p := uint8(port)
	return port >= 0 || p == 0 || (self != nil && int(p) == self.Number)
}

// openSMP opens the local port (ca, port as the C tools' -C and -P; a
// port below 1 is libibumad's first active one) and registers a
// LID-routed and a directed-route SMP client.
func (env *Env) openSMP(ca string, port int, timeout time.Duration, tries int, log *madLog) (*smpClient, error) {
	p, err := env.openPort(env.host(), ca, max(port, 0))
	if err != nil {
		return nil, err
	}
	c, err := newSMPClient(p, timeout, tries, log)
	if err != nil {
		p.Close()
		return nil, err
	}
	return c, nil
}

// newSMPClient registers the SMP clients on an open port; log (nil:
// none) gets libibmad's warnings.
func newSMPClient(p *umad.Port, timeout time.Duration, tries int, log *madLog) (*smpClient, error) {
	c := &smpClient{port: p, rpc: newMadRPC(p, timeout, tries, log)}
	var err error
	if c.lid, err = p.Register(umad.ClassSubnMgmt, 1, umad.MethodMask{}); err == nil {
		c.dr, err = p.Register(umad.ClassSubnMgmtDirectedRoute, 1, umad.MethodMask{})
	}
	return c, err
}

// isSim reports whether p is a port of an ibsim fabric (umad.OpenSimPort).
func isSim(p *umad.Port) bool { return strings.HasPrefix(p.Device(), "ibsim:") }

// localPort describes the port p, as sysfs does for a kernel port; an
// ibsim port has no sysfs, so the PortInfo ibsim gave when the port was
// opened (SIM_CTL_GET_PORTINFO, umad.Port.SimNode) gives its number, its
// LIDs and its SM's SL, as libumad2sim's sysfs does (umad2sim.c,
// dev_sysfs_create, from the same control message at its start). No MAD
// is sent: a query of the port's own SMA could be dropped where ibsim
// makes the port lossy (its Error command), which the C tools' sysfs
// never is. timeout and tries are unused.
func localPort(h *umad.Host, p *umad.Port, timeout time.Duration, tries int) (*umad.CAPort, error) {
	if !isSim(p) {
		info := p.Info() // as OpenPort read it: sysfs is not read twice
		return &info, nil
	}
	n, err := p.SimNode()
	if err != nil {
		return nil, fmt.Errorf("can't resolve self port: %w", err)
	}
	pi := n.PortInfo[:]
	lid, smLID := uint32(binary.BigEndian.Uint16(pi[16:18])), uint32(binary.BigEndian.Uint16(pi[18:20]))
	smSL := uint8(bits(pi, 292, 4))
	return &umad.CAPort{Port: sysfs.Port{CA: p.CA(), Number: int(pi[28]), LinkLayer: rdma.LinkLayerInfiniBand,
		LID: &lid, SMLID: &smLID, SMSL: &smSL, State: rdma.PortActive}}, nil
}

func (c *smpClient) Close() error { return c.port.Close() }

// getQuiet is get without libibmad's warnings (the C tools read sysfs
// where ours query an ibsim port's SMA).
func (c *smpClient) getQuiet(d smpDest, attr umad.AttrID, mod uint32) ([]byte, error) {
	log := c.rpc.log
	c.rpc.log = nil
	defer func() { c.rpc.log = log }()
	return c.get(d, attr, mod)
}

// get is libibmad's smp_query_status_via: a Get of attr with modifier
// mod to d; it returns the 64-byte data area of the answer.
func (c *smpClient) get(d smpDest, attr umad.AttrID, mod uint32) ([]byte, error) {
	c.rpc.log.dbg("smp_query_status_via", "attr 0x%x mod 0x%x route %s", uint16(attr), mod, d)
	return c.send(d, umad.MethodGet, attr, mod, nil)
}

// getTimeout is get with timeout, not the port's, for each try (the
// timeout argument of smp_query_via).
func (c *smpClient) getTimeout(d smpDest, attr umad.AttrID, mod uint32, timeout time.Duration) ([]byte, error) {
	t := c.rpc.timeout
	c.rpc.timeout = timeout
	defer func() { c.rpc.timeout = t }()
	return c.get(d, attr, mod)
}

// set is libibmad's smp_set_status_via: a Set of attr with modifier mod
// and the 64-byte data to d; it returns the answer's data area.
func (c *smpClient) set(d smpDest, attr umad.AttrID, mod uint32, data []byte) ([]byte, error) {
	c.rpc.log.dbg("smp_set_status_via", "attr 0x%x mod 0x%x route %s", uint16(attr), mod, d)
	return c.send(d, umad.MethodSet, attr, mod, data)
}

func (c *smpClient) send(d smpDest, method umad.Method, attr umad.AttrID, mod uint32, data []byte) ([]byte, error) {
	c.tid++
	m := make([]byte, umad.MADSize)
	m[0], m[1], m[2], m[3] = 1, byte(umad.ClassSubnMgmt), 1, byte(method)
	binary.BigEndian.PutUint64(m[8:], uint64(c.tid))
	binary.BigEndian.PutUint16(m[16:], uint16(attr))
	binary.BigEndian.PutUint32(m[20:], mod)
	binary.BigEndian.PutUint64(m[24:], c.mkey)
	agent, lid := c.lid, d.lid
	if d.dr {
		m[1] = byte(umad.ClassSubnMgmtDirectedRoute)
		m[7] = byte(len(d.path))
		slid := uint16(0xffff) // libibmad sends a DrSLID of 0 as 0xffff
		if d.lid != 0 && d.slid != 0 {
			slid = d.slid
		}
		binary.BigEndian.PutUint16(m[32:], slid)
		binary.BigEndian.PutUint16(m[34:], 0xffff)
		m[128] = d.hop0
		copy(m[129:], d.path)
		agent = c.dr
		if d.lid == 0 {
			lid = 0xffff
		}
	}
	copy(m[64:128], data)
	r, err := c.rpc.do(agent, m, func(p *umad.Packet) error { return p.SetAddr(lid, 0, d.sl, 0) }, d.String())
	if err != nil {
		return nil, err
	}
	if len(r) < 128 {
		return nil, fmt.Errorf("%s: a short answer (%d bytes)", d, len(r))
	}
	return append([]byte(nil), r[64:128]...), nil
}

// bits returns the w-bit field at big-endian bit offset off of b
// (libibmad's fields, counted from the first byte's top bit).
func bits(b []byte, off, w int) uint64 {
	var v uint64
	for i := 0; i < w; i++ {
		o := off + i
		if o/8 >= len(b) {
			return 0
		}
		v = v<<1 | uint64(b[o/8]>>(7-o%8)&1)
	}
	return v
}

// ibField is one libibmad field: its bit offset and width, its name and
// how it is printed.
type ibField struct {
	off, w int
	name   string
	dump   func(v uint64, w int) string
}

func dumpUint(v uint64, _ int) string { return strconv.FormatUint(v, 10) }

// dumpHex is mad_dump_hex: two digits a byte of the field's size.
func dumpHex(v uint64, w int) string { return fmt.Sprintf("0x%0*x", 2*((w+7)/8), v) }

// fieldLine is _mad_dump_field: "Name:" padded with dots to 33 columns.
func fieldLine(name, val string) string {
	dots := ""
	if len(name) < 32 {
		dots = strings.Repeat(".", 32-len(name))
	}
	return name + ":" + dots + val
}

func dumpFields(b []byte, fields []ibField) string {
	var s strings.Builder
	for _, f := range fields {
		s.WriteString(fieldLine(f.name, f.dump(bits(b, f.off, f.w), f.w)))
		s.WriteByte('\n')
	}
	return s.String()
}

func pick(tbl []string, v uint64, undef string) string {
	if v < uint64(len(tbl)) && tbl[v] != "" {
		return tbl[v]
	}
	return fmt.Sprintf(undef, v)
}

func dumpNodeType(v uint64, _ int) string {
	return pick([]string{"", "Channel Adapter", "Switch", "Router"}, v, "?(%d)?")
}

// orList is dump_linkwidth / dump_linkspeed: the names of the set bits,
// " or " between them.
func orList(v uint64, names []string, undefAbove int) string {
	var s []string
	for i, n := range names {
		if v&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	out := strings.Join(s, " or ")
	if v == 0 || v>>undefAbove != 0 {
		if out != "" {
			out += " or "
		}
		out += fmt.Sprintf("undefined (%d)", v)
	}
	return out
}

var widthNames = []string{"1X", "4X", "8X", "12X", "2X"}

func dumpLinkWidth(v uint64, _ int) string {
	return pick([]string{1: "1X", 2: "4X", 4: "8X", 8: "12X", 16: "2X"}, v, "undefined (%d)")
}
func dumpLinkWidthEn(v uint64, _ int) string { return orList(v, widthNames, 5) }
func dumpLinkWidthSup(v uint64, _ int) string {
	s := orList(v, widthNames, 5)
	switch v {
	case 1, 3, 7, 11, 15, 17, 19, 23, 27, 31:
	default:
		if v>>5 == 0 {
			s += " (IBA extension)"
		}
	}
	return s
}
func dumpLinkSpeed(v uint64, _ int) string {
	return pick([]string{0: "Extended speed", 1: "2.5 Gbps", 2: "5.0 Gbps", 4: "10.0 Gbps"}, v, "undefined (%d)")
}
func dumpLinkSpeeds(v uint64, _ int) string {
	s := orList(v, []string{"2.5 Gbps", "5.0 Gbps", "10.0 Gbps"}, 3)
	switch v {
	case 1, 3, 5, 7:
	default:
		if v>>3 == 0 {
			s += " (IBA extension)"
		}
	}
	return s
}
func dumpLinkSpeedExt(v uint64, _ int) string {
	return pick([]string{0: "No Extended Speed", 1: "14.0625 Gbps", 2: "25.78125 Gbps", 4: "53.125 Gbps", 8: "106.25 Gbps"}, v, "undefined (%d)")
}
func dumpLinkSpeedExts(v uint64, _ int) string {
	if v == 0 {
		return "0"
	}
	var s []string
	for i, n := range []string{"14.0625 Gbps", "25.78125 Gbps", "53.125 Gbps", "106.25 Gbps"} {
		if v&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	out := strings.Join(s, " or ")
	if v>>4 != 0 {
		if out != "" {
			out += " or "
		}
		out += fmt.Sprintf("undefined (%d)", v)
	}
	return out
}
func dumpLinkSpeedExtEn(v uint64, w int) string {
	if v == 30 {
		return "Extended link speeds disabled"
	}
	return dumpLinkSpeedExts(v, w)
}
func dumpPortState(v uint64, _ int) string {
	return pick([]string{"NoChange", "Down", "Initialize", "Armed", "Active"}, v, "?(%d)")
}
func dumpLinkDownDef(v uint64, _ int) string {
	return pick([]string{"NoChange", "Sleep", "Polling"}, v, "?(%d)")
}
func dumpPhysState(v uint64, _ int) string {
	return pick([]string{"NoChange", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"}, v, "?(%d)")
}
func dumpMTU(v uint64, _ int) string {
	return pick([]string{1: "256", 2: "512", 3: "1024", 4: "2048", 5: "4096"}, v, "?(%d)")
}
func dumpVLCap(v uint64, _ int) string {
	return pick([]string{1: "VL0", 2: "VL0-1", 3: "VL0-3", 4: "VL0-7", 5: "VL0-14"}, v, "?(%d)")
}
func dumpOperVLs(v uint64, _ int) string {
	return pick([]string{"No change", "VL0", "VL0-1", "VL0-3", "VL0-7", "VL0-14"}, v, "?(%d)")
}

// capNames are mad_dump_portcapmask's, by bit.
var capNames = []string{1: "IsSM", 2: "IsNoticeSupported", 3: "IsTrapSupported", 4: "IsOptionalIPDSupported",
	5: "IsAutomaticMigrationSupported", 6: "IsSLMappingSupported", 7: "IsMKeyNVRAM", 8: "IsPKeyNVRAM",
	9: "IsLedInfoSupported", 10: "IsSMdisabled", 11: "IsSystemImageGUIDsupported",
	12: "IsPkeySwitchExternalPortTrapSupported", 14: "IsExtendedSpeedsSupported", 15: "IsCapabilityMask2Supported",
	16: "IsCommunicatonManagementSupported", 17: "IsSNMPTunnelingSupported", 18: "IsReinitSupported",
	19: "IsDeviceManagementSupported", 20: "IsVendorClassSupported", 21: "IsDRNoticeSupported",
	22: "IsCapabilityMaskNoticeSupported", 23: "IsBootManagementSupported", 24: "IsLinkRoundTripLatencySupported",
	25: "IsClientRegistrationSupported", 26: "IsOtherLocalChangesNoticeSupported",
	27: "IsLinkSpeedWidthPairsTableSupported", 28: "IsVendorSpecificMadsTableSupported",
	29: "IsMcastPkeyTrapSuppressionSupported", 30: "IsMulticastFDBTopSupported", 31: "IsHierarchyInfoSupported"}

// capNames2 are mad_dump_portcapmask2's.
var capNames2 = []string{0: "IsSetNodeDescriptionSupported", 1: "IsPortInfoExtendedSupported",
	2: "IsVirtualizationSupported", 3: "IsSwitchPortStateTableSupported", 4: "IsLinkWidth2xSupported",
	5: "IsLinkSpeedHDRSupported", 6: "IsMKeyProtectBitsExtSupported", 7: "IsEnhancedTrap128Supported",
	8: "IsPartitionTopSupported", 9: "IsEnhancedQoSArbiterSupported", 10: "IsLinkSpeedNDRSupported"}

// capList is mask v in hex with the names of its bits set (names indexed
// by bit; a slice, not a map, so that no code builds it at start-up).
func capList(v uint64, names []string) string {
	s := fmt.Sprintf("0x%x", v)
	for i := 0; i < 32 && i < len(names); i++ {
		if n := names[i]; n != "" && v&(1<<i) != 0 {
			s += "\n\t\t\t\t" + n
		}
	}
	return s
}
func dumpCapMask(v uint64, _ int) string  { return capList(v, capNames) }
func dumpCapMask2(v uint64, _ int) string { return capList(v, capNames2) }

// The attributes' fields, libibmad's tables (fields.c).
var (
	nodeInfoFields = []ibField{
		{0, 8, "BaseVers", dumpUint}, {8, 8, "ClassVers", dumpUint}, {16, 8, "NodeType", dumpNodeType},
		{24, 8, "NumPorts", dumpUint}, {32, 64, "SystemGuid", dumpHex}, {96, 64, "Guid", dumpHex},
		{160, 64, "PortGuid", dumpHex}, {224, 16, "PartCap", dumpUint}, {240, 16, "DevId", dumpHex},
		{256, 32, "Revision", dumpHex}, {288, 8, "LocalPort", dumpUint}, {296, 24, "VendorId", dumpHex},
	}
	portInfoFields = []ibField{
		{0, 64, "Mkey", nil}, {64, 64, "GidPrefix", dumpHex}, {128, 16, "Lid", dumpUint},
		{144, 16, "SMLid", dumpUint}, {160, 32, "CapMask", dumpCapMask}, {192, 16, "DiagCode", dumpHex},
		{208, 16, "MkeyLeasePeriod", dumpUint}, {224, 8, "LocalPort", dumpUint},
		{232, 8, "LinkWidthEnabled", dumpLinkWidthEn}, {240, 8, "LinkWidthSupported", dumpLinkWidthSup},
		{248, 8, "LinkWidthActive", dumpLinkWidth}, {256, 4, "LinkSpeedSupported", dumpLinkSpeeds},
		{260, 4, "LinkState", dumpPortState}, {264, 4, "PhysLinkState", dumpPhysState},
		{268, 4, "LinkDownDefState", dumpLinkDownDef}, {272, 2, "ProtectBits", dumpUint},
		{277, 3, "LMC", dumpUint}, {280, 4, "LinkSpeedActive", dumpLinkSpeed},
		{284, 4, "LinkSpeedEnabled", dumpLinkSpeeds}, {288, 4, "NeighborMTU", dumpMTU},
		{292, 4, "SMSL", dumpUint}, {296, 4, "VLCap", dumpVLCap}, {300, 4, "InitType", dumpHex},
		{304, 8, "VLHighLimit", dumpUint}, {312, 8, "VLArbHighCap", dumpUint},
		{320, 8, "VLArbLowCap", dumpUint}, {328, 4, "InitReply", dumpHex}, {332, 4, "MtuCap", dumpMTU},
		{336, 3, "VLStallCount", dumpUint}, {339, 5, "HoqLife", dumpUint}, {344, 4, "OperVLs", dumpOperVLs},
		{348, 1, "PartEnforceInb", dumpUint}, {349, 1, "PartEnforceOutb", dumpUint},
		{350, 1, "FilterRawInb", dumpUint}, {351, 1, "FilterRawOutb", dumpUint},
		{352, 16, "MkeyViolations", dumpUint}, {368, 16, "PkeyViolations", dumpUint},
		{384, 16, "QkeyViolations", dumpUint}, {400, 8, "GuidCap", dumpUint},
		{408, 1, "ClientReregister", dumpUint}, {409, 2, "McastPkeyTrapSuppressionEnabled", dumpUint},
		{411, 5, "SubnetTimeout", dumpUint}, {419, 5, "RespTimeVal", dumpUint},
		{424, 4, "LocalPhysErr", dumpUint}, {428, 4, "OverrunErr", dumpUint},
		{432, 16, "MaxCreditHint", dumpUint}, {456, 24, "RoundTrip", dumpUint},
		{480, 16, "CapabilityMask2", dumpCapMask2}, {496, 4, "LinkSpeedExtActive", dumpLinkSpeedExt},
		{500, 4, "LinkSpeedExtSupported", dumpLinkSpeedExts}, {507, 5, "LinkSpeedExtEnabled", dumpLinkSpeedExtEn},
	}
	switchInfoFields = []ibField{
		{0, 16, "LinearFdbCap", dumpUint}, {16, 16, "RandomFdbCap", dumpUint}, {32, 16, "McastFdbCap", dumpUint},
		{48, 16, "LinearFdbTop", dumpUint}, {64, 8, "DefPort", dumpUint}, {72, 8, "DefMcastPrimPort", dumpUint},
		{80, 8, "DefMcastNotPrimPort", dumpUint}, {88, 5, "LifeTime", dumpUint}, {93, 1, "StateChange", dumpUint},
		{94, 2, "OptSLtoVLMapping", dumpUint}, {96, 16, "LidsPerPort", dumpUint}, {112, 16, "PartEnforceCap", dumpUint},
		{128, 1, "InboundPartEnf", dumpUint}, {129, 1, "OutboundPartEnf", dumpUint},
		{130, 1, "FilterRawInbound", dumpUint}, {131, 1, "FilterRawOutbound", dumpUint},
		{132, 1, "EnhancedPort0", dumpUint}, {144, 16, "MulticastFDBTop", dumpHex},
	}
)

// dumpPortInfo is infiniband-diags' dump_portinfo: the M_Key is not
// shown.
func dumpPortInfo(b []byte) string {
	f := append([]ibField(nil), portInfoFields...)
	f[0].dump = func(uint64, int) string { return "<not displayed>" }
	return dumpFields(b, f)
}
