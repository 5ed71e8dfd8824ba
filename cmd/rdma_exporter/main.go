// Command rdma_exporter is a Prometheus exporter for the RDMA devices of a
// host, in one static binary: port counters with node_exporter's
// infiniband names, hw_counters, RDMA netlink statistics, and the packets
// and bytes of the flows a config file lists (verbs counters on DONT_TRAP
// flows). It is also `purerdma exporter`. Run with -h for its flags.
package main

import (
	"os"

	"github.com/purerdma/rdma/cmd/rdma_exporter/internal/exporter"
)

func main() { os.Exit(exporter.Main(os.Args[1:], os.Stdout, os.Stderr)) }
