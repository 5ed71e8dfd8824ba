#!/bin/sh
# bench-vm.sh DIR: make bench's guest half, run by vmrun in one boot per
# kernel. DIR holds what the host built: purerdma (the tools) and the
# test binaries uverbs.test, umad.test, rdmacm.test, counters.test and
# verbs.test (go test -c -tags integration). In order: the tools against
# rdma-core's (bench-tools-live.sh); Go against C per uverbs operation
# (bare ioctl, QueryPort, PD, CQ, QP create+destroy) and per MAD exchange,
# in interleaved chunks; reads of one counters object on mock0, libmlx5's
# threads against goroutines; rc_pingpong's message rate, Go client
# against C client; rping's ping rate, Go pair against C pair; perftest's
# eight tools, Go client against C client. POSIX sh, for the guest's
# busybox. It reports; it never fails on a figure.
set -u
# The measuring tests take their full rounds (vmtest.Rounds); under make
# test they take one short round.
export PURERDMA_BENCH=1
dir=$(cd "$1" && pwd)
root=$(pwd)
echo "==== Linux ${VMRUN_KERNEL:-?} (TCG): only the ratios mean anything"
echo
echo "== the tools against rdma-core's on this machine's devices"
sh "$root/mk/bench-tools-live.sh" "$dir/purerdma"
# run PKG BINARY TEST FILTER: one VM test (mk/guest-run.sh)
. "$root/mk/guest-run.sh"
echo
echo "== uverbs: Go against C (rdma-core 44) per operation"
run uverbs uverbs.test TestVMBenchmarkGoVsC '^ {8}|^(--- |FAIL|ok|PASS)' | grep -v '^=== '
echo
echo "== umad: Go against C (libibumad) per MAD exchange, rxe0 to rxe1"
run umad umad.test TestVMBenchmarkGoVsC '^ {8}|^(--- |FAIL|ok|PASS)' | grep -v '^=== '
echo
echo "== rdmacm: Go against C (librdmacm) per connection set up and torn down"
run rdmacm rdmacm.test TestVMBenchmarkGoVsC '^ {8}|^(--- |FAIL|ok|PASS)' | grep -v '^=== '
(cd "$root/rdmacm" && "$dir/rdmacm.test" -test.run '^$' -test.bench '^BenchmarkVMGetEvent$' -test.benchmem 2>&1) | grep -E '^Benchmark|FAIL'
echo
echo "== counters: reads of one object on mock0, libmlx5 (C threads) against Go (goroutines)"
run counters counters.test TestVMReadRate 'read rate|^ {8}|^(--- |FAIL|ok)'
echo
echo "== rc_pingpong: Go client (yielding, and with --spin) against C client, same C server"
run cmd/purerdma/internal/verbs verbs.test TestVMRCPingpongRate 'rate on|^ {10}|^(--- |FAIL|ok)'
echo
echo "== rping: a Go pair against a C pair, alternating rounds"
run cmd/purerdma/internal/verbs verbs.test TestVMRpingRate 'rping rate|pings/s|^(--- |FAIL|ok)'
echo
echo "== perftest: Go client against C client, the same C server, interleaved rounds; each line a result row"
P=19500
for r in 1 2 3; do
	for t in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat; do
		for who in C Go; do
			P=$((P + 1))
			"$t" -d rxe0 -x 0 -p $P -n 1000 >/dev/null 2>&1 &
			hp=$(printf '%04X' $P) w=0
			while ! grep -q ":$hp 00000000:0000 0A" /proc/net/tcp && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
			if [ $who = C ]; then
				row=$("$t" -d rxe1 -x 0 -p $P -n 1000 10.77.0.1 2>&1 | sed -n '/#bytes/{n;p;}')
			else
				row=$("$dir/purerdma" "$t" -d rxe1 -x 0 -p $P -n 1000 --timeout 2m 10.77.0.1 2>&1 | sed -n '/#bytes/{n;p;}')
			fi
			wait
			printf 'round %d %-13s %-2s %s\n' $r "$t" $who "$row"
		done
	done
done
exit 0
