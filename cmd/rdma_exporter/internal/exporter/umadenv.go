package exporter

import (
	"os"
	"strconv"
	"strings"

	"github.com/purerdma/rdma/umad"
)

// The environment switches of the fabric mode, as cmd/purerdma's tools
// take them (the umad package reads no environment).
const (
	// envIBSim, "SOCKET:NODE", makes the fabric mode start from a port of
	// an ibsim fabric (umad.OpenSimPort) instead of a kernel port.
	envIBSim = "PURERDMA_IBSIM"
	// envUmadDebug sets umad's debug level (umad.SetDebug); a value that
	// is not a number means 1.
	envUmadDebug = "PURERDMA_UMAD_DEBUG"
)

// openFabricPort opens the port the fabric scan starts from:
// umad.OpenPort(ca, port), or, with PURERDMA_IBSIM set, umad.OpenSimPort
// on the fabric it names. It first applies PURERDMA_UMAD_DEBUG when that
// is set.
func openFabricPort(ca string, port int) (*umad.Port, error) {
	if v := os.Getenv(envUmadDebug); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			n = 1
		}
		umad.SetDebug(max(n, 0))
	}
	if v := os.Getenv(envIBSim); v != "" {
		sock, node, _ := strings.Cut(v, ":")
		return umad.OpenSimPort(sock, node)
	}
	return umad.OpenPort(ca, port)
}
