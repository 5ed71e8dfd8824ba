// Package umadenv is the tools' side of the environment switches of umad
// (the umad package reads no environment): PURERDMA_IBSIM, which puts a
// tool's port on an ibsim fabric, and PURERDMA_UMAD_DEBUG, umad's debug
// level. cmd/purerdma's diags tools and cmd/rdma_exporter's fabric mode
// open their port through it.
package umadenv

import (
	"strconv"
	"strings"

	"github.com/purerdma/rdma/umad"
)

// The environment variables the tools read.
const (
	// IBSim, "SOCKET:NODE", opens the port on an ibsim fabric
	// (umad.OpenSimPort: ibsim's socket base, "" for ibsim's "sim", and
	// the node to attach at, "" for ibsim's default) instead of the
	// kernel's umad devices.
	IBSim = "PURERDMA_IBSIM"
	// UmadDebug sets umad's debug level (umad.SetDebug) as a number; any
	// other non-empty value means 1.
	UmadDebug = "PURERDMA_UMAD_DEBUG"
)

// Open opens a tool's port: h.OpenPort(ca, port) (umad.OpenPort when h is
// nil), or, with ibsim set (IBSim's value), umad.OpenSimPort on the fabric
// it names, ca and port ignored. It first applies debug (UmadDebug's
// value) when that is set.
func Open(h *umad.Host, ibsim, debug, ca string, port int) (*umad.Port, error) {
	if debug != "" {
		umad.SetDebug(DebugLevel(debug))
	}
	if ibsim != "" {
		sock, node, _ := strings.Cut(ibsim, ":")
		return umad.OpenSimPort(sock, node)
	}
	if h == nil {
		return umad.OpenPort(ca, port)
	}
	return h.OpenPort(ca, port)
}

// DebugLevel is the level UmadDebug's value v sets.
func DebugLevel(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 1
	}
	return max(n, 0)
}
