// Command synthtree writes a synthetic sysfs tree (sysfstest.Synthetic) for
// the tool benchmarks: synthtree [-n DEVICES] [-ports PORTS] DIR writes
// DIR/class/infiniband, DIR/class/infiniband_mad and
// DIR/class/infiniband_verbs, which a private mount namespace can bind over
// /sys/class so that rdma-core's tools and ours read the same tree
// (mk/bench-tools.sh). With -counters each port also gets an mlx5 port's
// counters/ and hw_counters/ (sysfstest.SyntheticCounters), for the
// exporter's benchmark (mk/bench-exporter.sh).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

func main() {
	n := flag.Int("n", 256, "devices")
	ports := flag.Int("ports", 2, "ports per device")
	counters := flag.Bool("counters", false, "write counters/ and hw_counters/ too")
	flag.Parse()
	if flag.NArg() != 1 || *n < 0 || *ports < 1 {
		fmt.Fprintln(os.Stderr, "usage: synthtree [-n DEVICES] [-ports PORTS] [-counters] DIR")
		os.Exit(2)
	}
	if err := sysfstest.Synthetic(flag.Arg(0), *n, *ports); err != nil {
		fmt.Fprintln(os.Stderr, "synthtree:", err)
		os.Exit(1)
	}
	if *counters {
		if err := sysfstest.SyntheticCounters(flag.Arg(0), *n, *ports); err != nil {
			fmt.Fprintln(os.Stderr, "synthtree:", err)
			os.Exit(1)
		}
	}
}
