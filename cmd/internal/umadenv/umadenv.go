// Package umadenv is the tools' side of the environment switches of umad
// (the umad package reads no environment): PURERDMA_IBSIM, which puts a
// tool's port on an ibsim fabric, and PURERDMA_UMAD_DEBUG, umad's debug
// level. cmd/purerdma's diags tools and cmd/rdma_exporter's fabric mode
// open their port through it.
package umadenv

import (
	"context"
	"fmt"
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

// SimCA is the one device libumad2sim shows a client of ibsim
// (umad2sim/umad2sim.c, umad2sim_init): a tool on an ibsim fabric takes
// it, or no name, for its CA.
const SimCA = "ibsim0"

// Open opens a tool's port: h.OpenPort(ca, port) (umad.OpenPort when h is
// nil), or, with ibsim set (IBSim's value), umad.OpenSimPort on the fabric
// it names. There, as under libumad2sim, ca is SimCA or "" and port is 0
// or the number of the port ibsim attached the client at (any number on a
// switch, whose SMA is port 0): anything else names a port that is not
// there, and fails matching umad.ErrNoDevice.
// It first applies debug (UmadDebug's value) when that is set.
func Open(h *umad.Host, ibsim, debug, ca string, port int) (*umad.Port, error) {
	return open(context.Background(), h, ibsim, debug, ca, port, false)
}

// OpenContext is Open that gives up waiting for ibsim's answer when ctx
// is done (umad.OpenSimPortContext); a kernel port's open does not wait.
func OpenContext(ctx context.Context, h *umad.Host, ibsim, debug, ca string, port int) (*umad.Port, error) {
	return open(ctx, h, ibsim, debug, ca, port, false)
}

// OpenServer is Open for a tool that answers requests (ibping -S): on
// ibsim the port attaches as its node's SM client (umad.OpenSimPortSM),
// the one client ibsim hands unsolicited vendor-class requests to.
func OpenServer(h *umad.Host, ibsim, debug, ca string, port int) (*umad.Port, error) {
	return open(context.Background(), h, ibsim, debug, ca, port, true)
}

func open(ctx context.Context, h *umad.Host, ibsim, debug, ca string, port int, server bool) (*umad.Port, error) {
	if debug != "" {
		umad.SetDebug(DebugLevel(debug))
	}
	if ibsim != "" {
		sock, node, _ := strings.Cut(ibsim, ":")
		var p *umad.Port
		var err error
		if server {
			p, err = umad.OpenSimPortSM(sock, node)
		} else {
			p, err = umad.OpenSimPortContext(ctx, sock, node)
		}
		if err != nil {
			return nil, err
		}
		if (ca != "" && ca != SimCA) || (port != 0 && !simPortOK(p, port)) {
			p.Close()
			return nil, &NoSimPortError{CA: ca, Port: port, SimPort: p.PortNum(), IBSim: ibsim}
		}
		return p, nil
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

// simPortOK is libibumad's resolve_ca_port (libibumad/umad.c) on the
// device libumad2sim shows: a switch takes any port (its SMA is port 0);
// a CA its one port, unless that port is Disabled.
func simPortOK(p *umad.Port, port int) bool {
	n, err := p.SimNode()
	if err != nil {
		return false
	}
	if n.NodeInfo[2] == 2 {
		return true
	}
	return port == p.PortNum() && n.PortInfo[33]>>4 != 3
}

// NoSimPortError is a CA or port that a tool on an ibsim fabric asked
// for and libumad2sim would not have: the fabric shows one device,
// SimCA, with one port, SimPort.
type NoSimPortError struct {
	CA      string
	Port    int
	SimPort int
	IBSim   string // PURERDMA_IBSIM's value
}

func (e *NoSimPortError) Error() string {
	what := fmt.Sprintf("port %d", e.Port)
	if e.CA != "" && e.CA != SimCA {
		what = fmt.Sprintf("CA %q", e.CA)
	}
	return fmt.Sprintf("no %s on the ibsim fabric (%s=%s): it has one device, %s, with one port, %d; leave -C and -P out, or name those",
		what, IBSim, e.IBSim, SimCA, e.SimPort)
}

// Unwrap makes the error match umad.ErrNoDevice.
func (e *NoSimPortError) Unwrap() error { return umad.ErrNoDevice }
