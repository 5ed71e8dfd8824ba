package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/purerdma/rdma/umad"
)

// The environment switches of the umad tools. The umad package reads no
// environment; these are the tools' (and the exporter's) own.
const (
	// envIBSim makes the tools open their port on an ibsim fabric instead
	// of the kernel's umad devices: "SOCKET:NODE", ibsim's socket base
	// (its IBSIM_SOCKNAME; "" for ibsim's "sim") and the node to attach at
	// (like libumad2sim's SIM_HOST; "" for ibsim's default node). See
	// umad.OpenSimPort.
	envIBSim = "PURERDMA_IBSIM"
	// envUmadDebug sets umad's debug level (umad.SetDebug): "1" logs
	// opens, registrations and failures, "2" also every MAD; any other
	// non-empty value means 1.
	envUmadDebug = "PURERDMA_UMAD_DEBUG"
)

// openUmadPort opens the tools' port: h.OpenPort(ca, port), or, with
// PURERDMA_IBSIM set, umad.OpenSimPort on the fabric it names (ca and port
// ignored). It first applies PURERDMA_UMAD_DEBUG when that is set.
func openUmadPort(h *umad.Host, ca string, port int) (*umad.Port, error) {
	if v := os.Getenv(envUmadDebug); v != "" {
		umad.SetDebug(umadDebugLevel(v))
	}
	if v := os.Getenv(envIBSim); v != "" {
		sock, node, _ := strings.Cut(v, ":")
		return umad.OpenSimPort(sock, node)
	}
	return h.OpenPort(ca, port)
}

// umadDebugLevel is the level PURERDMA_UMAD_DEBUG's value v sets.
func umadDebugLevel(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 1
	}
	return max(n, 0)
}
