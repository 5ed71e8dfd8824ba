// Package perf holds purerdma's perftest tools: ib_send_bw,
// ib_send_lat, ib_write_bw, ib_write_lat, ib_read_bw, ib_read_lat,
// ib_atomic_bw and ib_atomic_lat, the tools of linux-rdma/perftest 4.5
// (Debian's perftest 4.5+0.17) through purerdma's verbs.
//
// They speak perftest's out-of-band exchange over TCP
// (perftest_communication.c: exchange_versions, check_sys_data, check_mtu,
// ctx_hand_shake with the KEY_PRINT_FMT messages, xchg_bw_reports,
// ctx_close_connection) in the order each of perftest's mains does, so
// that either side may be perftest's C binary, and print its report
// (ctx_print_test_info, print_report_bw, print_report_lat in
// perftest_parameters.c) so that a script parsing perftest's output parses
// theirs. The measurements themselves are the C tool's: the same work
// requests, signalling and polling (run_iter_bw, run_iter_bw_server,
// run_iter_lat, run_iter_lat_write, run_iter_lat_send in
// perftest_resources.c), timed with the monotonic clock in nanoseconds
// where perftest reads the CPU's cycle counter.
package perf

import (
	"io"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// Tools are the perftest tools.
func Tools() []cli.Tool {
	var tools []cli.Tool
	for _, t := range []struct {
		name string
		v    verb
		t    testKind
		sum  string
	}{
		{"ib_send_bw", verbSend, testBW, "send bandwidth, like perftest's ib_send_bw (interoperates with it)"},
		{"ib_send_lat", verbSend, testLat, "send latency, like perftest's ib_send_lat (interoperates with it)"},
		{"ib_write_bw", verbWrite, testBW, "RDMA write bandwidth, like perftest's ib_write_bw (interoperates with it)"},
		{"ib_write_lat", verbWrite, testLat, "RDMA write latency, like perftest's ib_write_lat (interoperates with it)"},
		{"ib_read_bw", verbRead, testBW, "RDMA read bandwidth, like perftest's ib_read_bw (interoperates with it)"},
		{"ib_read_lat", verbRead, testLat, "RDMA read latency, like perftest's ib_read_lat (interoperates with it)"},
		{"ib_atomic_bw", verbAtomic, testBW, "atomic bandwidth, like perftest's ib_atomic_bw (interoperates with it)"},
		{"ib_atomic_lat", verbAtomic, testLat, "atomic latency, like perftest's ib_atomic_lat (interoperates with it)"},
	} {
		t := t
		tools = append(tools, cli.Tool{Name: t.name, Summary: t.sum,
			Run: func(args []string, stdout, stderr io.Writer) error {
				return run(t.name, t.v, t.t, args, stdout, stderr)
			}})
	}
	return tools
}
