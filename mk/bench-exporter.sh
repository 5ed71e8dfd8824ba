#!/bin/bash
# bench-exporter.sh RDMA_EXPORTER NODE_EXPORTER SYNTHTREE [DEVICES...]:
# the CPU a scrape costs rdma_exporter and node_exporter (its infiniband
# collector alone) on the same synthetic sysfs tree of DEVICES mlx5-like
# devices of two ports with their counters/ and hw_counters/ (default 64
# and 1024), and the descriptors each holds after the scrapes.
#
# Both serve the tree through --path.sysfs. After one scrape each to warm
# up, R rounds (R=${R:-5}) scrape node_exporter, rdma_exporter (every
# sysfs source), and rdma_exporter without hw_counters (the same series
# as node_exporter, which exports the hw counters under its own names
# only), interleaved; a scrape's CPU is the process's utime+stime
# (/proc/PID/stat) across it. It prints the median and the ratio to
# node_exporter's. It reports; it never fails on a figure.
set -u
ours=$1 ne=$2 synth=$3
shift 3
R=${R:-5}
devices=${*:-64 1024}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
tick=$(getconf CLK_TCK)

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# start NAME PORT CMD...: run CMD and wait until it answers on PORT.
start() {
	local name=$1 port=$2
	shift 2
	"$@" >"$tmp/$name.log" 2>&1 &
	local pid=$!
	pids+=("$pid")
	for _ in $(seq 100); do
		curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && { echo "$pid"; return; }
		sleep 0.2
	done
	echo "bench-exporter: $name did not answer on $port" >&2
	cat "$tmp/$name.log" >&2
	echo 0
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : 0)}'; }

for n in $devices; do
	tree=$tmp/tree$n
	"$synth" -n "$n" -ports 2 -counters "$tree" || exit 1
	declare -A pid port
	port=([ne]=19101 [ours]=19916 [ours-nohw]=19917)
	pid[ne]=$(start ne 19101 "$ne" --collector.disable-defaults --collector.infiniband --path.sysfs="$tree" --web.listen-address=127.0.0.1:19101)
	pid[ours]=$(start ours 19916 "$ours" --path.sysfs="$tree" --web.listen-address=127.0.0.1:19916 --no-collector.netlink --no-collector.flows)
	pid[ours-nohw]=$(start ours-nohw 19917 "$ours" --path.sysfs="$tree" --web.listen-address=127.0.0.1:19917 --no-collector.netlink --no-collector.flows --no-collector.hw_counters)
	for k in ne ours ours-nohw; do
		[ "${pid[$k]}" != 0 ] || exit 1
		: >"$tmp/$k.ms"
	done
	for _ in $(seq "$R"); do
		for k in ne ours ours-nohw; do
			t0=$(cpu "${pid[$k]}")
			curl -sf -o "$tmp/$k.out" "http://127.0.0.1:${port[$k]}/metrics"
			t1=$(cpu "${pid[$k]}")
			echo $(( (t1 - t0) * 1000 / tick )) >>"$tmp/$k.ms"
		done
	done
	nems=$(median <"$tmp/ne.ms")
	for k in ne ours ours-nohw; do
		ms=$(median <"$tmp/$k.ms")
		series=$(grep -c -v '^#' "$tmp/$k.out")
		fds=$(ls "/proc/${pid[$k]}/fd" | wc -l)
		ratio=$(awk -v a="$ms" -v b="$nems" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}')
		printf '%5d devices  %-10s  median %5d ms CPU a scrape (%s)  %6d series  %3d fds  / node_exporter %s\n' \
			"$n" "$k" "$ms" "$(tr '\n' ' ' <"$tmp/$k.ms" | sed 's/ $//')" "$series" "$fds" "$ratio"
	done
	for k in ne ours ours-nohw; do kill "${pid[$k]}"; wait "${pid[$k]}" 2>/dev/null; done
	pids=()
	rm -rf "$tree"
done
