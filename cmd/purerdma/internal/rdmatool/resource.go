package rdmatool

// resource: iproute2's `rdma resource show` (rdma/res.c, res-qp.c,
// res-cq.c, res-pd.c, res-mr.c, res-ctx.c, res-cmid.c; Debian 12's
// iproute2 6.1) through RDMA netlink (rdmanl.Conn.ResourceSummaries,
// Resources), text for text, and -j for its JSON.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/rdmanl"
)

// ResourceNetlink is what resource asks.
type ResourceNetlink interface {
	Devices() ([]rdmanl.Device, error)
	ResourceSummaries() ([]rdmanl.ResourceSummary, error)
	Resources(kind rdmanl.ResourceKind, devIndex uint32) ([]rdmanl.ResourceObject, error)
}

// procComm reads a process's name for user objects from /proc.
func procComm(pid uint32) (string, bool) {
	s, err := sys.ReadString("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/comm")
	if err != nil {
		return "", false
	}
	// get_task_name reads it with fscanf("%ms"): the first word.
	f := strings.Fields(s)
	if len(f) == 0 {
		return "", false
	}
	return f[0], true
}

const resourceUsage = `Usage: purerdma resource [-j] [show [DEV]]
       purerdma resource [-j] show {qp|cm_id|cq|mr|pd|ctx} [dev DEV | link DEV[/PORT]]

Like iproute2's rdma resource show: without an object kind, each device's
count of tracked objects; with one, every object of that kind with its
numbers and its owner (a process: pid and comm; the kernel: [module]).

Options:
  -j, --json             print JSON, as rdma -j does
  -h, --help             this help
`

// A resField is one word of an object's line.
type resField struct {
	name string
	attr uint16
	kind int // resU32, resU64, resKey, resType, resState, resPathMig, resPollCtx, resDim
}

const (
	resU32 = iota
	resU64
	resKey
	resQPType
	resQPState
	resPathMig
	resPollCtx
	resDim
	resCMState // a u8, cm_id_state_to_str
	resCMPs    // a u32, cm_id_ps_to_str
)

// resCMStates are the rdma_cm ID states (enum rdma_cm_state) by number,
// as iproute2's res-cmid.c cm_id_state_to_str names them.
var resCMStates = []string{"IDLE", "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY", "ROUTE_RESOLVED",
	"CONNECT", "DISCONNECT", "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING"}

// resCMPsName is res-cmid.c cm_id_ps_to_str (which names RDMA_PS_IB
// "IPoIB" too).
func resCMPsName(ps uint32) string {
	switch ps {
	case 0x0002, 0x013f: // RDMA_PS_IPOIB, RDMA_PS_IB
		return "IPoIB"
	case 0x0106: // RDMA_PS_TCP
		return "TCP"
	case 0x0111: // RDMA_PS_UDP
		return "UDP"
	}
	return "---"
}

// resFields are the words each kind prints, in iproute2 6.1's order (a
// word whose attribute the kernel did not send is left out).
var resFields = [...][]resField{
	rdmanl.ResQP: {
		{"lqpn", abi.RDMA_NLDEV_ATTR_RES_LQPN, resU32},
		{"rqpn", abi.RDMA_NLDEV_ATTR_RES_RQPN, resU32},
		{"type", abi.RDMA_NLDEV_ATTR_RES_TYPE, resQPType},
		{"state", abi.RDMA_NLDEV_ATTR_RES_STATE, resQPState},
		{"rq-psn", abi.RDMA_NLDEV_ATTR_RES_RQ_PSN, resU32},
		{"sq-psn", abi.RDMA_NLDEV_ATTR_RES_SQ_PSN, resU32},
		{"path-mig-state", abi.RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, resPathMig},
		{"pdn", abi.RDMA_NLDEV_ATTR_RES_PDN, resU32},
	},
	// res-cmid.c res_cm_id_parse_cb (iproute2 6.1): the addresses come
	// after pid and comm (resObjectLine).
	rdmanl.ResCMID: {
		{"cm-idn", abi.RDMA_NLDEV_ATTR_RES_CM_IDN, resU32},
		{"lqpn", abi.RDMA_NLDEV_ATTR_RES_LQPN, resU32},
		{"qp-type", abi.RDMA_NLDEV_ATTR_RES_TYPE, resQPType},
		{"state", abi.RDMA_NLDEV_ATTR_RES_STATE, resCMState},
		{"ps", abi.RDMA_NLDEV_ATTR_RES_PS, resCMPs},
	},
	rdmanl.ResCQ: {
		{"cqn", abi.RDMA_NLDEV_ATTR_RES_CQN, resU32},
		{"cqe", abi.RDMA_NLDEV_ATTR_RES_CQE, resU32},
		{"users", abi.RDMA_NLDEV_ATTR_RES_USECNT, resU64},
		{"poll-ctx", abi.RDMA_NLDEV_ATTR_RES_POLL_CTX, resPollCtx},
		{"adaptive-moderation", abi.RDMA_NLDEV_ATTR_DEV_DIM, resDim},
		{"ctxn", abi.RDMA_NLDEV_ATTR_RES_CTXN, resU32},
	},
	rdmanl.ResMR: {
		{"mrn", abi.RDMA_NLDEV_ATTR_RES_MRN, resU32},
		{"rkey", abi.RDMA_NLDEV_ATTR_RES_RKEY, resKey},
		{"lkey", abi.RDMA_NLDEV_ATTR_RES_LKEY, resKey},
		{"iova", abi.RDMA_NLDEV_ATTR_RES_IOVA, resKey},
		{"mrlen", abi.RDMA_NLDEV_ATTR_RES_MRLEN, resU64},
		{"pdn", abi.RDMA_NLDEV_ATTR_RES_PDN, resU32},
	},
	rdmanl.ResPD: {
		{"pdn", abi.RDMA_NLDEV_ATTR_RES_PDN, resU32},
		{"local_dma_lkey", abi.RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY, resKey},
		{"users", abi.RDMA_NLDEV_ATTR_RES_USECNT, resU64},
		{"unsafe_global_rkey", abi.RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY, resKey},
		{"ctxn", abi.RDMA_NLDEV_ATTR_RES_CTXN, resU32},
	},
	rdmanl.ResCtx: {
		{"ctxn", abi.RDMA_NLDEV_ATTR_RES_CTXN, resU32},
	},
}

var (
	resQPTypes   = []string{"SMI", "GSI", "RC", "UC", "UD", "RAW_IPV6", "RAW_ETHERTYPE", "UNKNOWN", "RAW_PACKET", "XRC_INI", "XRC_TGT"}
	resQPStates  = []string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}
	resPathMigs  = []string{"MIGRATED", "REARM", "ARMED"}
	resPollCtxs  = []string{"DIRECT", "SOFTIRQ", "WORKQUEUE", "UNBOUND_WORKQUEUE"}
	errResWrongD = errors.New("wrong device name")
)

func (env *Env) runResource(args []string, stdout, stderr io.Writer) error {
	asJSON := false
	var words []string
	for _, a := range args {
		switch a {
		case "-j", "--json":
			asJSON = true
		case "-h", "--help", "help":
			fmt.Fprint(stdout, resourceUsage)
			return nil
		default:
			if strings.HasPrefix(a, "-") {
				fmt.Fprintf(stderr, "resource: unknown option %s\n%s", a, resourceUsage)
				return cli.ExitError{Code: 2}
			}
			words = append(words, a)
		}
	}
	if len(words) > 0 && (words[0] == "show" || words[0] == "list") {
		words = words[1:]
	}
	nlc, done := keepSocket(env.Resource)
	defer done()
	devs, err := nlc.Devices()
	if err != nil {
		fmt.Fprintf(stderr, "resource: %v\n", err)
		return cli.ExitError{Code: 1}
	}
	var lines []*resLine
	switch {
	case len(words) == 0 || (len(words) == 1 && resDevKnown(devs, words[0])):
		only := ""
		if len(words) == 1 {
			only = words[0]
		}
		lines, err = resSummaryLines(nlc, only)
	default:
		kind, ok := rdmanl.ParseResourceKind(words[0])
		if !ok {
			// rdma: rd_exec_cmd's "Unknown parameter", and rdma 6.1
			// exits 0 after it.
			fmt.Fprintf(stderr, "Unknown parameter '%s'.\n", words[0])
			return nil
		}
		lines, err = env.resObjectLines(nlc, kind, devs, words[1:])
	}
	if err == errResWrongD {
		if asJSON {
			fmt.Fprintln(stdout, "[]") // rdma -j has opened its array
		}
		fmt.Fprintln(stderr, "Wrong device name")
		return cli.ExitError{Code: 1}
	}
	if err != nil {
		fmt.Fprintf(stderr, "resource: %v\n", err)
		return cli.ExitError{Code: 1}
	}
	if asJSON {
		if lines == nil {
			lines = []*resLine{}
		}
		b, err := json.Marshal(lines)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return nil
	}
	for _, l := range lines {
		fmt.Fprintf(stdout, "%s\n", l.text.String())
	}
	return nil
}

func resDevKnown(devs []rdmanl.Device, name string) bool {
	for _, d := range devs {
		if d.Name == name {
			return true
		}
	}
	return false
}

func resSummaryLines(nlc ResourceNetlink, only string) ([]*resLine, error) {
	sums, err := nlc.ResourceSummaries()
	if err != nil {
		return nil, err
	}
	var lines []*resLine
	for _, s := range sums {
		if only != "" && s.Device != only {
			continue
		}
		l := &resLine{}
		l.add("ifindex", fmt.Sprintf("%d: ", s.Index), s.Index)
		l.add("ifname", s.Device+": ", s.Device)
		for _, c := range s.Counts {
			l.add(c.Name, fmt.Sprintf("%s %d ", c.Name, c.Value), c.Value)
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// resObjectLines lists the objects of kind on every device, or on the one
// "dev DEV" / "link DEV[/PORT]" names, device by device and, for QPs and
// CM IDs, port by port (those without a port first), as rdma does
// (utils.c, rd_exec_link).
func (env *Env) resObjectLines(nlc ResourceNetlink, kind rdmanl.ResourceKind, devs []rdmanl.Device, rest []string) ([]*resLine, error) {
	port := -1
	if len(rest) > 0 {
		if len(rest) != 2 || (rest[0] != "dev" && rest[0] != "link") {
			return nil, fmt.Errorf("unexpected %q: want dev DEV or link DEV[/PORT]", strings.Join(rest, " "))
		}
		name, p, hasPort := strings.Cut(rest[1], "/")
		if !resDevKnown(devs, name) {
			return nil, errResWrongD
		}
		if hasPort && p != "" {
			n, err := strconv.ParseUint(p, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("invalid port %q", p)
			}
			port = int(n)
		}
		var keep []rdmanl.Device
		for _, d := range devs {
			if d.Name == name {
				keep = append(keep, d)
			}
		}
		devs = keep
	}
	var lines []*resLine
	for _, d := range devs {
		objs, err := nlc.Resources(kind, d.Index)
		if err != nil {
			return nil, err
		}
		if !kind.PerPort() {
			for i := range objs {
				lines = append(lines, env.resObjectLine(kind, &objs[i]))
			}
			continue
		}
		for p := 0; p <= d.NumPorts; p++ {
			if port >= 0 && p != port {
				continue
			}
			for i := range objs {
				op := 0
				if objs[i].Port != nil {
					op = int(*objs[i].Port)
				}
				if op == p {
					lines = append(lines, env.resObjectLine(kind, &objs[i]))
				}
			}
		}
	}
	return lines, nil
}

func (env *Env) resObjectLine(kind rdmanl.ResourceKind, o *rdmanl.ResourceObject) *resLine {
	l := &resLine{}
	if kind.PerPort() {
		// print_link: JSON ifindex, ifname, port; text "link DEV/PORT".
		l.keys = append(l.keys, "ifindex", "ifname")
		l.vals = append(l.vals, o.Index, o.Device)
		if o.Port != nil {
			l.add("port", fmt.Sprintf("link %s/%d ", o.Device, *o.Port), *o.Port)
		} else {
			l.text.WriteString("link " + o.Device + "/- ")
		}
	} else {
		l.keys = append(l.keys, "ifindex")
		l.vals = append(l.vals, o.Index)
		l.add("ifname", "dev "+o.Device+" ", o.Device)
	}
	var fields []resField
	if kind >= 0 && int(kind) < len(resFields) {
		fields = resFields[kind]
	}
	l.fields(o, fields)
	if o.PID != nil {
		l.add("pid", fmt.Sprintf("pid %d ", *o.PID), *o.PID)
	}
	// print_comm: "[name]" for a kernel object, the process's name for a
	// user one, at most 17 characters (a char[18]); JSON gets it whole.
	var comm string
	have := false
	if o.KernName != nil {
		comm, have = *o.KernName, true
	} else if o.PID != nil {
		comm, have = env.Comm(*o.PID)
	}
	if have {
		text := comm
		if o.PID == nil {
			text = "[" + comm + "]"
		}
		if len(text) > 17 {
			text = text[:17]
		}
		l.add("comm", "comm "+text+" ", comm)
	}
	// res-cmid.c print_ipaddr: "src-addr ADDR:PORT", in JSON one string.
	for _, a := range []struct {
		key string
		ap  *netip.AddrPort
	}{{"src-addr", o.SrcAddr}, {"dst-addr", o.DstAddr}} {
		if a.ap != nil {
			v := fmt.Sprintf("%s:%d", a.ap.Addr(), a.ap.Port())
			l.add(a.key, a.key+" "+v+" ", v)
		}
	}
	return l
}

// fields adds the words fs of object o that the kernel sent.
func (l *resLine) fields(o *rdmanl.ResourceObject, fs []resField) {
	for _, f := range fs {
		switch f.kind {
		case resU32:
			if v, ok := o.U32[f.attr]; ok {
				l.add(f.name, fmt.Sprintf("%s %d ", f.name, v), v)
			}
		case resU64:
			if v, ok := o.U64[f.attr]; ok {
				l.add(f.name, fmt.Sprintf("%s %d ", f.name, v), v)
			}
		case resKey:
			v, ok := uint64(0), false
			if x, in := o.U32[f.attr]; in {
				v, ok = uint64(x), true
			} else if x, in := o.U64[f.attr]; in {
				v, ok = x, true
			}
			if ok {
				l.add(f.name, fmt.Sprintf("%s 0x%x ", f.name, v), fmt.Sprintf("%x", v))
			}
		case resQPType, resQPState, resPathMig, resPollCtx:
			v, ok := o.U8[f.attr]
			if !ok {
				continue
			}
			table := map[int][]string{resQPType: resQPTypes, resQPState: resQPStates, resPathMig: resPathMigs, resPollCtx: resPollCtxs}[f.kind]
			s := resName(table, v)
			l.add(f.name, fmt.Sprintf("%s %s ", f.name, s), s)
		case resDim:
			if v, ok := o.U8[f.attr]; ok {
				s := "off"
				if v != 0 {
					s = "on"
				}
				l.add(f.name, fmt.Sprintf("%s %s ", f.name, s), v != 0) // JSON: a bool
			}
		case resCMState:
			if v, ok := o.U8[f.attr]; ok {
				s := resName(resCMStates, v)
				l.add(f.name, fmt.Sprintf("%s %s ", f.name, s), s)
			}
		case resCMPs:
			if v, ok := o.U32[f.attr]; ok {
				s := resCMPsName(v)
				l.add(f.name, fmt.Sprintf("%s %s ", f.name, s), s)
			}
		}
	}
}
