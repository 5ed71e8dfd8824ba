package main

// exporter: the Prometheus exporter (internal/exporter), also built alone
// as cmd/rdma_exporter.

import (
	"io"

	"github.com/purerdma/rdma/internal/exporter"
)

func init() {
	register("exporter", "serve Prometheus metrics: port counters (node_exporter's infiniband names), hw_counters, netlink statistics, counted flows: [--web.listen-address :9915] [--config.flows FILE]", runExporter)
}

func runExporter(args []string, stdout, stderr io.Writer) error {
	if code := exporter.Main(args, stdout, stderr); code != 0 {
		return exitError{code}
	}
	return nil
}
