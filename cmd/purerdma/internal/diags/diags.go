// Package diags holds purerdma's tools of the infiniband-diags family:
// ibstat, ibstatus, perfquery, smpquery, sminfo, saquery, ibnetdiscover,
// iblinkinfo, ibhosts, ibswitches, ibnodes, ibaddr, ibping, ibqueryerrors,
// ibroute, ibtracert, ibportstate and umad, through sysfs and umad, with
// infiniband-diags' texts and exit statuses.
package diags

import (
	"encoding/json"
	"io"
	"os"

	"github.com/purerdma/rdma/cmd/internal/umadenv"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
)

// Env is where the diags tools find the system. DefaultEnv is the running
// system; tests point it at a sysfs tree and umad nodes of their own.
type Env struct {
	SysfsRoot string // where ibstat, ibstatus and perfquery read sysfs ("/sys")
	DevDir    string // where they open umad nodes ("" means /dev/infiniband)
	// IBSim is PURERDMA_IBSIM's value: "SOCKET:NODE" opens the tools'
	// port on an ibsim fabric instead of the kernel's umad devices
	// (umad.OpenSimPort: ibsim's socket base, "" for ibsim's "sim", and
	// the node to attach at, "" for ibsim's default).
	IBSim string
	// UmadDebug is PURERDMA_UMAD_DEBUG's value: umad's debug level
	// (umad.SetDebug) as a number; any other non-empty value means 1.
	UmadDebug string

	// sysfsShown is the root ibstatus names in its messages where it
	// differs from SysfsRoot: "/sys" for the tree of an ibsim fabric
	// (simView).
	sysfsShown string

	// serverStop, closed, ends a serving tool (ibping -S) as a signal
	// would: the tests' in-process servers.
	serverStop chan struct{}
}

// DefaultEnv is the running system's /sys and /dev/infiniband, and the
// environment's PURERDMA_IBSIM and PURERDMA_UMAD_DEBUG.
func DefaultEnv() *Env {
	return &Env{SysfsRoot: sysfs.DefaultRoot, IBSim: os.Getenv(umadenv.IBSim), UmadDebug: os.Getenv(umadenv.UmadDebug)}
}

// Tools are the family's tools, bound to env.
func Tools(env *Env) []cli.Tool { return cli.BindAll(tools[:], env) }

// Tool is the family's tool called name, bound to env.
func Tool(env *Env, name string) (cli.Tool, bool) { return cli.Find(tools[:], env, name) }

// tools are the family's tools, in the order they are listed.
var tools = [...]cli.Entry[*Env]{
	{Name: "ibaddr", Run: (*Env).runIBAddr,
		Summary: "a port's GID and LID range, like infiniband-diags' ibaddr"},
	{Name: "ibhosts", Run: (*Env).runIBHosts,
		Summary: "the fabric's channel adapters, like infiniband-diags' ibhosts"},
	{Name: "iblinkinfo", Run: (*Env).runIBLinkInfo,
		Summary: "every port of the fabric and its link, like infiniband-diags' iblinkinfo"},
	{Name: "ibnetdiscover", Run: (*Env).runIBNetDiscover,
		Summary: "the fabric's topology from directed-route SMPs, like infiniband-diags' ibnetdiscover"},
	{Name: "ibnodes", Run: (*Env).runIBNodes,
		Summary: "the fabric's nodes (ibhosts, then ibswitches), like infiniband-diags' ibnodes"},
	{Name: "ibping", Run: (*Env).runIBPing,
		Summary: "ping a port over the vendor class 0x32, or answer pings (-S), like infiniband-diags' ibping"},
	{Name: "ibportstate", Run: (*Env).runIBPortState,
		Summary: "a port's state, speed and width, queried or set, like infiniband-diags' ibportstate"},
	{Name: "ibqueryerrors", Run: (*Env).runIBQueryErrors,
		Summary: "the fabric's ports with error counters beyond their thresholds, like infiniband-diags' ibqueryerrors"},
	{Name: "ibroute", Run: (*Env).runIBRoute,
		Summary: "a switch's unicast or multicast forwarding table, like infiniband-diags' ibroute"},
	{Name: "ibstat", Batch: true, Run: (*Env).runIbstat,
		Summary: "RDMA devices and their ports, like infiniband-diags' ibstat (--json too)"},
	{Name: "ibstatus", Batch: true, Run: (*Env).runIbstatus,
		Summary: "port status from sysfs, like infiniband-diags' ibstatus (--json too)"},
	{Name: "ibswitches", Run: (*Env).runIBSwitches,
		Summary: "the fabric's switches, like infiniband-diags' ibswitches"},
	{Name: "ibtracert", Run: (*Env).runIBTracert,
		Summary: "the route between two ports, unicast or multicast, like infiniband-diags' ibtracert"},
	{Name: "perfquery", Batch: true, Run: (*Env).runPerfquery,
		Summary: "a port's PortCounters (-x: PortCountersExtended) from its PMA, like infiniband-diags' perfquery"},
	{Name: "saquery", Run: (*Env).runSAQuery,
		Summary: "Subnet Administration queries (node, path, port info, link, SM info, multicast records…), like infiniband-diags' saquery"},
	{Name: "smpquery", Run: (*Env).runSMPQuery,
		Summary: "SMP queries of a node (nodeinfo, portinfo, nodedesc, switchinfo, pkeys, sl2vl, vlarb, guids), like infiniband-diags' smpquery"},
	{Name: "sminfo", Run: (*Env).runSMInfo,
		Summary: "the subnet manager's SMInfo, like infiniband-diags' sminfo"},
	{Name: "umad", Run: (*Env).runUmadTool,
		Summary: "send or serve vendor-class MADs (umad send | umad serve)"},
}

// ibJSON writes v as the tools' --json: indented by two spaces.
func ibJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// host is where the tools find the umad ports: env's sysfs and /dev.
func (env *Env) host() *umad.Host {
	h := &umad.Host{DevDir: env.DevDir}
	if env.SysfsRoot != "" && env.SysfsRoot != sysfs.DefaultRoot {
		f, err := sysfs.New(env.SysfsRoot)
		if err != nil {
			f = sysfs.NewFS(os.DirFS(env.SysfsRoot)) // its reads fail as the root does
		}
		h.Sysfs = f
	}
	return h
}

// openPort opens the tools' port on h through umadenv.Open, with env's
// IBSim and UmadDebug.
func (env *Env) openPort(h *umad.Host, ca string, port int) (*umad.Port, error) {
	return umadenv.Open(h, env.IBSim, env.UmadDebug, ca, port)
}
