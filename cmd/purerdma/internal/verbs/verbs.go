// Package verbs holds purerdma's tools of the libibverbs and librdmacm
// family: rdma-core's examples and tools (devices, devinfo, rc_pingpong,
// asyncwatch, rping, ucmatose/cmatose, udaddy) and purerdma's counters and
// flowcount, through uverbs and rdma_cm.
package verbs

import (
	"context"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/uverbs"
)

// Env is what the verbs tools reach the system through. DefaultEnv is the
// running system; tests pass fake kernels, fixtures and clocks.
type Env struct {
	// Uverbs is how devices, devinfo and asyncwatch find and open devices.
	Uverbs *uverbs.Options
	// Counters is where the counters tool looks (nil: the defaults).
	Counters *counters.Options
	// Flowcount is how flowcount opens devices (nil: the defaults).
	Flowcount *uverbs.Options
	// FlowcountTick, when set, runs before every read of flowcount
	// (tests: traffic on the fake).
	FlowcountTick func()
	// AsyncContext is what stops asyncwatch (the running system: SIGINT
	// or SIGTERM).
	AsyncContext func() (context.Context, context.CancelFunc)
}

// DefaultEnv is the running system.
func DefaultEnv() *Env {
	return &Env{Uverbs: &uverbs.Options{Generic: true}, AsyncContext: signalContext}
}

// Tools are the family's tools, bound to env.
func Tools(env *Env) []cli.Tool { return cli.BindAll(tools[:], env) }

// Tool is the family's tool called name, bound to env.
func Tool(env *Env, name string) (cli.Tool, bool) { return cli.Find(tools[:], env, name) }

// tools are the family's tools, in the order they are listed.
var tools = [...]cli.Entry[*Env]{
	{Name: "asyncwatch", Run: (*Env).runAsyncwatch,
		Summary: "print a device's async events (port up/down, GID change, ...), like rdma-core's ibv_asyncwatch [-d DEV]"},
	{Name: "ibv_asyncwatch", Run: (*Env).runAsyncwatch,
		Summary: "the same as asyncwatch, under rdma-core's name"},
	{Name: "counters", Batch: true, Run: (*Env).runCounters,
		Summary: "the counter sets of a device (flow, PMA, hw_counters, netlink) with current values: [-d DEV] [--json]"},
	{Name: "devices", Batch: true, Run: (*Env).runDevices,
		Summary: "the RDMA devices with a uverbs node and their node GUIDs, like rdma-core's ibv_devices (--json too)"},
	{Name: "ibv_devices", Batch: true, Run: (*Env).runDevices,
		Summary: "the same as devices, under rdma-core's name"},
	{Name: "devinfo", Batch: true, Run: (*Env).runDevinfo,
		Summary: "device and port attributes through uverbs, like rdma-core's ibv_devinfo [-v] [-d DEV] [-i PORT] (--json too)"},
	{Name: "ibv_devinfo", Batch: true, Run: (*Env).runDevinfo,
		Summary: "the same as devinfo, under rdma-core's name"},
	{Name: "flowcount", Run: (*Env).runFlowcount,
		Summary: "count a MAC's packets and bytes with a verbs counters object on a flow, like the example of ibv_read_counters(3): -d DEV -p PORT --dst-mac MAC [--interval 1s] [--count N]"},
	{Name: "rc_pingpong", Run: (*Env).runRCPingpong,
		Summary: "RC ping-pong over the verbs data path, like rdma-core's ibv_rc_pingpong (interoperates with it)"},
	{Name: "ibv_rc_pingpong", Run: (*Env).runRCPingpong,
		Summary: "the same as rc_pingpong, under rdma-core's name"},
	{Name: "ud_pingpong", Run: (*Env).runUDPingpong,
		Summary: "UD ping-pong over the verbs data path, like rdma-core's ibv_ud_pingpong (interoperates with it)"},
	{Name: "ibv_ud_pingpong", Run: (*Env).runUDPingpong,
		Summary: "the same as ud_pingpong, under rdma-core's name"},
	{Name: "rping", Run: (*Env).runRping,
		Summary: "RDMA ping-pong over the connection manager, like librdmacm's rping (interoperates with it)"},
	{Name: "ucmatose", Run: (*Env).runUcmatose,
		Summary: "RDMA CM connection and RC data test, like rdma-core's ucmatose (interoperates with it)"},
	{Name: "cmatose", Run: (*Env).runUcmatose,
		Summary: "the same as ucmatose, under the name of its source"},
	{Name: "udaddy", Run: (*Env).runUdaddy,
		Summary: "RDMA CM UD (SIDR) connection and data test, like rdma-core's udaddy (interoperates with it)"},
}
