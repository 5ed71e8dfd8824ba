package verbs

// devinfo: rdma-core's ibv_devinfo (libibverbs/examples/devinfo.c, rdma-core
// 44) through package uverbs, text for text, plus --json.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/uverbs"
)

const devinfoUsage = `Usage: %s             print the ca attributes

Options:
  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)
  -i, --ib-port=<port>   use port <port> of IB device (default all ports)
  -l, --list             print only the IB devices names
  -v, --verbose          print all the attributes of the IB device(s)
`

// devinfoHelp adds what purerdma has beyond ibv_devinfo; the usage text
// itself is ibv_devinfo's, word for word, as its error paths print it.
const devinfoHelp = `      --json             print JSON instead of text
  -h, --help             this help
`

// devinfoHCA is what ibv_devinfo prints for one device.
type devinfoHCA struct {
	Dev            uverbs.Device
	Attr           uverbs.DeviceAttr
	BoardID        string
	NumCompVectors int
	Ports          []devinfoPort
}

type devinfoPort struct {
	Num  uint8
	Attr uverbs.PortAttr
	GIDs []uverbs.GIDEntry // valid entries of this port, by index
}

func (env *Env) runDevinfo(args []string, stdout, stderr io.Writer) error {
	var devName string
	var port int64
	var verbose, list, asJSON bool
	opts := []cli.Option{
		{Short: 'd', Long: "ib-dev", Arg: true, Set: func(v string) error { devName = v; return nil }},
		{Short: 'i', Long: "ib-port", Arg: true, Set: func(v string) error {
			port = cli.CStrtol(v)
			if port <= 0 {
				return cli.ErrUsage
			}
			return nil
		}},
		{Short: 'l', Long: "list", Set: func(string) error { list = true; return nil }},
		{Short: 'v', Long: "verbose", Set: func(string) error { verbose = true; return nil }},
		{Long: "json", Set: func(string) error { asJSON = true; return nil }},
		{Short: 'h', Long: "help", Set: func(string) error { return cli.ErrHelp }},
	}
	prog := "ibv_devinfo"
	if err := cli.Getopt(prog, args, opts, stderr); err != nil {
		fmt.Fprintf(stdout, devinfoUsage, prog)
		switch {
		case errors.Is(err, cli.ErrHelp):
			fmt.Fprint(stdout, devinfoHelp)
			return nil
		case errors.Is(err, cli.ErrUsage):
			return cli.ExitError{Code: 1} // ib_port <= 0: usage, return 1
		}
		return cli.ExitError{Code: 255} // getopt error: usage, return -1
	}
	devs, err := uverbs.Devices(env.Uverbs)
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get IB devices list: %v\n", err)
		return cli.ExitError{Code: 255}
	}
	if list {
		return devinfoList(devs, asJSON, stdout)
	}
	if devName != "" {
		var found []uverbs.Device
		for _, d := range devs {
			if d.Name == devName {
				found = append(found, d)
				break
			}
		}
		if len(found) == 0 {
			fmt.Fprintf(stderr, "IB device '%s' wasn't found\n", devName)
			return cli.ExitError{Code: 255}
		}
		devs = found
	} else if len(devs) == 0 {
		fmt.Fprintln(stderr, "No IB devices found")
		return cli.ExitError{Code: 255}
	}
	rc := 0
	var all []devinfoJSON
	for _, d := range devs {
		// print_hca_cap takes the port as a uint8_t: -i 257 is port 1.
		hca, code := env.devinfoGather(d, uint8(port), verbose, stderr)
		rc |= code
		if hca == nil {
			continue
		}
		if asJSON {
			all = append(all, hca.json())
			continue
		}
		devinfoPrint(stdout, hca, verbose)
	}
	if asJSON {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		if err := e.Encode(all); err != nil {
			return err
		}
	}
	if rc != 0 {
		return cli.ExitError{Code: rc & 0xff}
	}
	return nil
}

func devinfoList(devs []uverbs.Device, asJSON bool, stdout io.Writer) error {
	if asJSON {
		names := make([]string, 0, len(devs))
		for _, d := range devs {
			names = append(names, d.Name)
		}
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		return e.Encode(names)
	}
	s := "s"
	if len(devs) == 1 {
		s = ""
	}
	fmt.Fprintf(stdout, "%d HCA%s found:\n", len(devs), s)
	for _, d := range devs {
		fmt.Fprintf(stdout, "\t%s\n", d.Name)
	}
	fmt.Fprintln(stdout)
	return nil
}

// devinfoGather opens d and queries what print_hca_cap prints, with its
// error messages and return codes: 1 open failed, 2 query_device failed, 4
// invalid port, the errno of a failed port or GID query, 3 close failed.
// On a port failure the ports gathered so far are kept (ibv_devinfo printed
// them before failing).
func (env *Env) devinfoGather(d uverbs.Device, port uint8, verbose bool, stderr io.Writer) (hca *devinfoHCA, rc int) {
	c, err := uverbs.OpenDevice(d, env.Uverbs)
	if err != nil {
		fmt.Fprintln(stderr, "Failed to open device")
		debugErr(stderr, err)
		return nil, 1
	}
	defer func() {
		if err := c.Close(); err != nil {
			fmt.Fprint(stderr, "Failed to close device")
			debugErr(stderr, err)
			rc = 3
		}
	}()
	attr, err := c.QueryDevice()
	if err != nil {
		fmt.Fprintln(stderr, "Failed to query device props")
		debugErr(stderr, err)
		return nil, 2
	}
	if port != 0 && port > attr.PhysPortCnt {
		fmt.Fprintln(stderr, "Invalid port requested for device")
		return nil, 4
	}
	hca = &devinfoHCA{Dev: d, Attr: attr, NumCompVectors: c.NumCompVectors()}
	hca.BoardID = readSysfsLine(filepath.Join(d.SysfsPath, "board_id"))
	var table []uverbs.GIDEntry
	tableErr := errNotRead
	for p := uint8(1); p <= attr.PhysPortCnt && p != 0; p++ {
		if port != 0 && p != port {
			continue
		}
		pa, err := c.QueryPort(int(p))
		if err != nil {
			fmt.Fprintf(stderr, "Failed to query port %d props\n", p)
			debugErr(stderr, err)
			return hca, cli.ErrnoCode(err)
		}
		dp := devinfoPort{Num: p, Attr: pa}
		if verbose {
			if tableErr == errNotRead {
				table, tableErr = c.QueryGIDTable()
			}
			if dp.GIDs, err = portGIDs(c, p, pa, table, tableErr); err != nil {
				hca.Ports = append(hca.Ports, dp)
				fmt.Fprintf(stderr, "Failed to query gid to port %d, index %d\n", p, gidIndexOf(err))
				debugErr(stderr, err)
				return hca, cli.ErrnoCode(err)
			}
		}
		hca.Ports = append(hca.Ports, dp)
	}
	return hca, 0
}

var errNotRead = errors.New("not read")

// gidErr remembers which index failed.
type gidErr struct {
	index uint32
	err   error
}

func (e *gidErr) Error() string { return e.err.Error() }
func (e *gidErr) Unwrap() error { return e.err }

func gidIndexOf(err error) uint32 {
	var g *gidErr
	if errors.As(err, &g) {
		return g.index
	}
	return 0
}

// portGIDs returns port's valid GIDs: from the GID table when the kernel
// has QUERY_GID_TABLE, else entry by entry like ibv_devinfo's
// ibv_query_gid loop (an empty entry, ENODATA, is skipped).
func portGIDs(c *uverbs.Context, port uint8, pa uverbs.PortAttr, table []uverbs.GIDEntry, tableErr error) ([]uverbs.GIDEntry, error) {
	if tableErr == nil {
		var out []uverbs.GIDEntry
		for _, g := range table {
			if g.Port == int(port) {
				out = append(out, g)
			}
		}
		return out, nil
	}
	if !errors.Is(tableErr, uverbs.ErrNotSupported) {
		return nil, &gidErr{0, tableErr}
	}
	var out []uverbs.GIDEntry
	for i := uint32(0); i < pa.GIDTableLen; i++ {
		g, err := c.QueryGID(int(port), int(i))
		if err != nil {
			if errors.Is(err, syscall.ENODATA) {
				continue
			}
			return out, &gidErr{i, err}
		}
		out = append(out, g)
	}
	return out, nil
}

func readSysfsLine(path string) string {
	s, err := sys.ReadString(path)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(s, "\n")
}

// debugErr adds the library's error, which says why, under rdma-core's
// message when PURERDMA_DEBUG is set (rdma-core's tools print only theirs).
func debugErr(w io.Writer, err error) {
	if os.Getenv("PURERDMA_DEBUG") != "" {
		fmt.Fprintf(w, "  (%v)\n", err)
	}
}

func devinfoPrint(w io.Writer, h *devinfoHCA, verbose bool) {
	a := &h.Attr
	tr := h.Dev.Transport()
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("hca_id:\t%s\n", h.Dev.Name)
	p("\ttransport:\t\t\t%s (%d)\n", tr, int(tr))
	if a.FWVer != "" {
		p("\tfw_ver:\t\t\t\t%s\n", a.FWVer)
	}
	p("\tnode_guid:\t\t\t%s\n", a.NodeGUID.String())
	p("\tsys_image_guid:\t\t\t%s\n", a.SysImageGUID.String())
	p("\tvendor_id:\t\t\t0x%04x\n", a.VendorID)
	p("\tvendor_part_id:\t\t\t%d\n", int32(a.VendorPartID))
	p("\thw_ver:\t\t\t\t0x%X\n", a.HWVer)
	if h.BoardID != "" {
		p("\tboard_id:\t\t\t%s\n", h.BoardID)
	}
	p("\tphys_port_cnt:\t\t\t%d\n", a.PhysPortCnt)
	if verbose {
		devinfoVerbose(p, h)
	}
	for _, port := range h.Ports {
		pa := &port.Attr
		p("\t\tport:\t%d\n", port.Num)
		p("\t\t\tstate:\t\t\t%s (%d)\n", portStateStr(pa.State), pa.State)
		p("\t\t\tmax_mtu:\t\t%s (%d)\n", mtuStr(pa.MaxMTU), pa.MaxMTU)
		p("\t\t\tactive_mtu:\t\t%s (%d)\n", mtuStr(pa.ActiveMTU), pa.ActiveMTU)
		p("\t\t\tsm_lid:\t\t\t%d\n", pa.SMLID)
		p("\t\t\tport_lid:\t\t%d\n", pa.LID)
		p("\t\t\tport_lmc:\t\t0x%02x\n", pa.LMC)
		p("\t\t\tlink_layer:\t\t%s\n", pa.LinkLayer)
		if verbose {
			p("\t\t\tmax_msg_sz:\t\t0x%x\n", pa.MaxMsgSize)
			p("\t\t\tport_cap_flags:\t\t0x%08x\n", pa.PortCapFlags)
			p("\t\t\tport_cap_flags2:\t0x%04x\n", pa.PortCapFlags2)
			p("\t\t\tmax_vl_num:\t\t%s (%d)\n", vlStr(pa.MaxVLNum), pa.MaxVLNum)
			p("\t\t\tbad_pkey_cntr:\t\t0x%x\n", pa.BadPKeyCntr)
			p("\t\t\tqkey_viol_cntr:\t\t0x%x\n", pa.QKeyViolCntr)
			p("\t\t\tsm_sl:\t\t\t%d\n", pa.SMSL)
			p("\t\t\tpkey_tbl_len:\t\t%d\n", pa.PKeyTableLen)
			p("\t\t\tgid_tbl_len:\t\t%d\n", int32(pa.GIDTableLen))
			p("\t\t\tsubnet_timeout:\t\t%d\n", pa.SubnetTimeout)
			p("\t\t\tinit_type_reply:\t%d\n", pa.InitTypeReply)
			p("\t\t\tactive_width:\t\t%sX (%d)\n", widthStr(pa.ActiveWidth), pa.ActiveWidth)
			p("\t\t\tactive_speed:\t\t%s (%d)\n", speedStr(pa.ActiveSpeed), pa.ActiveSpeed)
			if tr == uverbs.TransportIB {
				p("\t\t\tphys_state:\t\t%s (%d)\n", physStateStr(pa.PhysState), pa.PhysState)
			}
			for _, g := range port.GIDs {
				printGID(p, g, pa.LinkLayer)
			}
		}
		p("\n")
	}
}

func devinfoVerbose(p func(string, ...any), h *devinfoHCA) {
	a := &h.Attr
	i := func(v uint32) int32 { return int32(v) } // C's int fields, printed with %d
	p("\tmax_mr_size:\t\t\t0x%x\n", a.MaxMRSize)
	p("\tpage_size_cap:\t\t\t0x%x\n", a.PageSizeCap)
	p("\tmax_qp:\t\t\t\t%d\n", i(a.MaxQP))
	p("\tmax_qp_wr:\t\t\t%d\n", i(a.MaxQPWR))
	p("\tdevice_cap_flags:\t\t0x%08x\n", a.DeviceCapFlags)
	printFlags(p, uint64(a.DeviceCapFlags), deviceCapNames, "%X")
	p("\tmax_sge:\t\t\t%d\n", i(a.MaxSGE))
	p("\tmax_sge_rd:\t\t\t%d\n", i(a.MaxSGERd))
	p("\tmax_cq:\t\t\t\t%d\n", i(a.MaxCQ))
	p("\tmax_cqe:\t\t\t%d\n", i(a.MaxCQE))
	p("\tmax_mr:\t\t\t\t%d\n", i(a.MaxMR))
	p("\tmax_pd:\t\t\t\t%d\n", i(a.MaxPD))
	p("\tmax_qp_rd_atom:\t\t\t%d\n", i(a.MaxQPRdAtom))
	p("\tmax_ee_rd_atom:\t\t\t%d\n", i(a.MaxEERdAtom))
	p("\tmax_res_rd_atom:\t\t%d\n", i(a.MaxResRdAtom))
	p("\tmax_qp_init_rd_atom:\t\t%d\n", i(a.MaxQPInitRdAtom))
	p("\tmax_ee_init_rd_atom:\t\t%d\n", i(a.MaxEEInitRdAtom))
	p("\tatomic_cap:\t\t\t%s (%d)\n", a.AtomicCap, i(uint32(a.AtomicCap)))
	p("\tmax_ee:\t\t\t\t%d\n", i(a.MaxEE))
	p("\tmax_rdd:\t\t\t%d\n", i(a.MaxRDD))
	p("\tmax_mw:\t\t\t\t%d\n", i(a.MaxMW))
	p("\tmax_raw_ipv6_qp:\t\t%d\n", i(a.MaxRawIPv6QP))
	p("\tmax_raw_ethy_qp:\t\t%d\n", i(a.MaxRawEthyQP))
	p("\tmax_mcast_grp:\t\t\t%d\n", i(a.MaxMcastGrp))
	p("\tmax_mcast_qp_attach:\t\t%d\n", i(a.MaxMcastQPAttach))
	p("\tmax_total_mcast_qp_attach:\t%d\n", i(a.MaxTotalMcastQPAttach))
	p("\tmax_ah:\t\t\t\t%d\n", i(a.MaxAH))
	p("\tmax_fmr:\t\t\t%d\n", i(a.MaxFMR))
	if a.MaxFMR != 0 {
		p("\tmax_map_per_fmr:\t\t%d\n", i(a.MaxMapPerFMR))
	}
	p("\tmax_srq:\t\t\t%d\n", i(a.MaxSRQ))
	if a.MaxSRQ != 0 {
		p("\tmax_srq_wr:\t\t\t%d\n", i(a.MaxSRQWR))
		p("\tmax_srq_sge:\t\t\t%d\n", i(a.MaxSRQSGE))
	}
	p("\tmax_pkeys:\t\t\t%d\n", a.MaxPKeys)
	p("\tlocal_ca_ack_delay:\t\t%d\n", a.LocalCAAckDelay)

	// print_odp_caps
	p("\tgeneral_odp_caps:\n")
	printFlags(p, a.ODPCaps.GeneralCaps, odpGeneralNames, "%X")
	for _, tc := range []struct {
		name string
		caps uint32
	}{{"rc", a.ODPCaps.RCODPCaps}, {"uc", a.ODPCaps.UCODPCaps}, {"ud", a.ODPCaps.UDODPCaps}, {"xrc", a.XRCODPCaps}} {
		p("\t%s_odp_caps:\n", tc.name)
		if tc.caps == 0 {
			p("\t\t\t\t\tNO SUPPORT\n")
		} else {
			printFlags(p, uint64(tc.caps), odpTransportNames, "%X")
		}
	}
	if a.CompletionTimestampMask != 0 {
		p("\tcompletion timestamp_mask:\t\t\t0x%016x\n", a.CompletionTimestampMask)
	} else {
		p("\tcompletion_timestamp_mask not supported\n")
	}
	if a.HCACoreClock != 0 {
		p("\thca_core_clock:\t\t\t%dkHZ\n", a.HCACoreClock)
	} else {
		p("\tcore clock not supported\n")
	}
	if a.RawPacketCaps != 0 {
		p("\traw packet caps:\n")
		for _, f := range rawPacketCapNames {
			if a.RawPacketCaps&uint32(f.bit) != 0 {
				p("\t\t\t\t\t%s\n", f.name)
			}
		}
	}
	p("\tdevice_cap_flags_ex:\t\t0x%X\n", a.DeviceCapFlagsEx)
	printFlags(p, a.DeviceCapFlagsEx&0xffffffff00000000, deviceCapExNames, "%X")
	// print_tso_caps
	p("\ttso_caps:\n")
	p("\t\tmax_tso:\t\t\t%d\n", i(a.TSOCaps.MaxTSO))
	if a.TSOCaps.MaxTSO != 0 {
		p("\t\tsupported_qp:\n")
		printQPTs(p, a.TSOCaps.SupportedQPTs)
	}
	// print_rss_caps
	p("\trss_caps:\n")
	p("\t\tmax_rwq_indirection_tables:\t\t\t%d\n", a.RSSCaps.MaxRWQIndirectionTables)
	p("\t\tmax_rwq_indirection_table_size:\t\t\t%d\n", a.RSSCaps.MaxRWQIndirectionTableSize)
	p("\t\trx_hash_function:\t\t\t\t0x%x\n", a.RSSCaps.RxHashFunction)
	p("\t\trx_hash_fields_mask:\t\t\t\t0x%X\n", a.RSSCaps.RxHashFieldsMask)
	if a.RSSCaps.SupportedQPTs != 0 {
		p("\t\tsupported_qp:\n")
		printQPTs(p, a.RSSCaps.SupportedQPTs)
	}
	p("\tmax_wq_type_rq:\t\t\t%d\n", a.MaxWQTypeRQ)
	// print_packet_pacing_caps
	p("\tpacket_pacing_caps:\n")
	p("\t\tqp_rate_limit_min:\t%dkbps\n", a.PacketPacingCaps.QPRateLimitMin)
	p("\t\tqp_rate_limit_max:\t%dkbps\n", a.PacketPacingCaps.QPRateLimitMax)
	if a.PacketPacingCaps.QPRateLimitMax != 0 {
		p("\t\tsupported_qp:\n")
		printQPTs(p, a.PacketPacingCaps.SupportedQPTs)
	}
	// print_tm_caps
	if tm := a.TMCaps; tm.MaxNumTags != 0 {
		p("\tmax_rndv_hdr_size:\t\t%d\n", tm.MaxRndvHdrSize)
		p("\tmax_num_tags:\t\t\t%d\n", tm.MaxNumTags)
		p("\tmax_ops:\t\t\t%d\n", tm.MaxOps)
		p("\tmax_sge:\t\t\t%d\n", tm.MaxSGE)
		p("\tflags:\n")
		if tm.Flags&1 != 0 {
			p("\t\t\t\t\tIBV_TM_CAP_RC\n")
		}
	} else {
		p("\ttag matching not supported\n")
	}
	// print_cq_moderation_caps
	if m := a.CQModCaps; m.MaxCQCount != 0 && m.MaxCQPeriod != 0 {
		p("\n\tcq moderation caps:\n")
		p("\t\tmax_cq_count:\t%d\n", m.MaxCQCount)
		p("\t\tmax_cq_period:\t%d us\n\n", m.MaxCQPeriod)
	}
	if a.MaxDMSize != 0 {
		p("\tmaximum available device memory:\t%dBytes\n\n", a.MaxDMSize)
	}
	p("\tnum_comp_vectors:\t\t%d\n", h.NumCompVectors)
}

type flagName struct {
	bit  uint64
	name string
}

// The flag names ibv_devinfo prints, in its order (enum ibv_device_cap_flags
// and friends in <infiniband/verbs.h>).
var (
	deviceCapNames = []flagName{
		{1 << 0, "RESIZE_MAX_WR"}, {1 << 1, "BAD_PKEY_CNTR"}, {1 << 2, "BAD_QKEY_CNTR"}, {1 << 3, "RAW_MULTI"},
		{1 << 4, "AUTO_PATH_MIG"}, {1 << 5, "CHANGE_PHY_PORT"}, {1 << 6, "UD_AV_PORT_ENFORCE"}, {1 << 7, "CURR_QP_STATE_MOD"},
		{1 << 8, "SHUTDOWN_PORT"}, {1 << 9, "INIT_TYPE"}, {1 << 10, "PORT_ACTIVE_EVENT"}, {1 << 11, "SYS_IMAGE_GUID"},
		{1 << 12, "RC_RNR_NAK_GEN"}, {1 << 13, "SRQ_RESIZE"}, {1 << 14, "N_NOTIFY_CQ"}, {1 << 17, "MEM_WINDOW"},
		{1 << 18, "UD_IP_CSUM"}, {1 << 20, "XRC"}, {1 << 21, "MEM_MGT_EXTENSIONS"}, {1 << 23, "MEM_WINDOW_TYPE_2A"},
		{1 << 24, "MEM_WINDOW_TYPE_2B"}, {1 << 25, "RC_IP_CSUM"}, {1 << 26, "RAW_IP_CSUM"}, {1 << 29, "MANAGED_FLOW_STEERING"},
	}
	deviceCapExNames  = []flagName{{1 << 34, "RAW_SCATTER_FCS"}, {1 << 36, "PCI_WRITE_END_PADDING"}}
	odpGeneralNames   = []flagName{{1 << 0, "ODP_SUPPORT"}, {1 << 1, "ODP_SUPPORT_IMPLICIT"}}
	odpTransportNames = []flagName{
		{1 << 0, "SUPPORT_SEND"}, {1 << 1, "SUPPORT_RECV"}, {1 << 2, "SUPPORT_WRITE"},
		{1 << 3, "SUPPORT_READ"}, {1 << 4, "SUPPORT_ATOMIC"}, {1 << 5, "SUPPORT_SRQ"},
	}
	rawPacketCapNames = []flagName{
		{1 << 0, "C-VLAN stripping offload"}, {1 << 1, "Scatter FCS offload"}, {1 << 2, "IP csum offload"}, {1 << 3, "Delay drop"},
	}
)

// printFlags prints the names of the bits set in v, then "Unknown flags"
// with the others in hex (format "%X": PRIX32/PRIX64).
func printFlags(p func(string, ...any), v uint64, names []flagName, format string) {
	var known uint64
	for _, f := range names {
		known |= f.bit
		if v&f.bit != 0 {
			p("\t\t\t\t\t%s\n", f.name)
		}
	}
	if v&^known != 0 {
		p("\t\t\t\t\tUnknown flags: 0x"+format+"\n", v&^known)
	}
}

// printQPTs prints a supported_qpts bitmap (bits are IBV_QPT_* numbers).
func printQPTs(p func(string, ...any), qpts uint32) {
	const raw, ud = 1 << 8, 1 << 4
	if qpts&raw != 0 {
		p("\t\t\t\t\tSUPPORT_RAW_PACKET\n")
	}
	if qpts&ud != 0 {
		p("\t\t\t\t\tSUPPORT_UD\n")
	}
	if qpts&^(raw|ud) != 0 {
		p("\t\t\t\t\tUnknown flags: 0x%X\n", qpts&^(raw|ud))
	}
}

// printGID is print_formated_gid: GIDs whose interface id (bytes 8–15) is
// zero are skipped; IB and RoCE v1 GIDs print as eight groups of hex, RoCE
// v2 GIDs as inet_ntop does; on Ethernet ports the type follows.
func printGID(p func(string, ...any), g uverbs.GIDEntry, ll rdma.LinkLayer) {
	zero := true
	for _, b := range g.GID[8:] {
		zero = zero && b == 0
	}
	if zero {
		return
	}
	suffix := ""
	v2 := g.Type == uverbs.GIDTypeRoCEv2
	if ll == rdma.LinkLayerEthernet {
		if v2 {
			suffix = ", RoCE v2"
		} else {
			suffix = ", RoCE v1"
		}
	}
	s := g.GID.Hex()
	if v2 {
		s = g.GID.String()
	}
	p("\t\t\tGID[%3d]:\t\t%s%s\n", g.Index, s, suffix)
}

func portStateStr(s rdma.PortState) string {
	switch s {
	case rdma.PortDown:
		return "PORT_DOWN"
	case rdma.PortInit:
		return "PORT_INIT"
	case rdma.PortArmed:
		return "PORT_ARMED"
	case rdma.PortActive:
		return "PORT_ACTIVE"
	}
	return "invalid state"
}

func physStateStr(s uint8) string {
	names := []string{"", "SLEEP", "POLLING", "DISABLED", "PORT_CONFIGURATION TRAINNING", "LINK_UP", "LINK_ERROR_RECOVERY", "PHY TEST"}
	if s >= 1 && int(s) < len(names) {
		return names[s]
	}
	return "invalid physical state"
}

func mtuStr(m uverbs.MTU) string {
	if m.Bytes() == 0 {
		return "invalid MTU"
	}
	return fmt.Sprint(m.Bytes())
}

func widthStr(w uint8) string {
	switch w {
	case 1:
		return "1"
	case 2:
		return "4"
	case 4:
		return "8"
	case 8:
		return "12"
	case 16:
		return "2"
	}
	return "invalid width"
}

func speedStr(s uint8) string {
	switch s {
	case 1:
		return "2.5 Gbps"
	case 2:
		return "5.0 Gbps"
	case 4, 8:
		return "10.0 Gbps"
	case 16:
		return "14.0 Gbps"
	case 32:
		return "25.0 Gbps"
	case 64:
		return "50.0 Gbps"
	case 128:
		return "100.0 Gbps"
	}
	return "invalid speed"
}

func vlStr(v uint8) string {
	switch v {
	case 1:
		return "1"
	case 2:
		return "2"
	case 3:
		return "4"
	case 4:
		return "8"
	case 5:
		return "15"
	}
	return "invalid value"
}
