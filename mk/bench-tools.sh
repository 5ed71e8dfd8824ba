#!/bin/bash
# bench-tools.sh PURERDMA SYNTHTREE [DEVICES...]: rdma-core's tools against
# purerdma's on synthetic sysfs trees (internal/testmodel/sysfstest), on this host.
# (mk/bench-tools-live.sh does the same on a machine's own devices: the VM.)
#
# A synthetic tree is written by SYNTHTREE and bound over /sys/class in a
# private mount namespace (unshare -m, as root), where infiniband-diags'
# ibstat and ibstatus and purerdma read it alike. For each pair it checks
# that both print the same bytes, counts their system calls with strace -f
# -c (without the memory and thread management calls, which differ by
# runtime, not by work: mmap, futex, rt_sig*, clone, ...), and times R
# interleaved runs (C, Go, C, Go, ...; R=${R:-21}) with min and median wall
# milliseconds. Machines are shared and noisy: read the medians and the
# ratios. It reports; it never fails on a figure. Missing tools are skipped.
set -u
go=$1
shift
R=${R:-21}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/inner.sh" <<'INNER'
set -u
go=$1 label=$2 R=$3 tmp=$4
shift 4
skip='^(mmap|munmap|mprotect|madvise|brk|futex|nanosleep|clock_nanosleep|sched_yield|sched_getaffinity|rt_sigaction|rt_sigprocmask|rt_sigreturn|sigaltstack|clone|clone3|gettid|getpid|tgkill|set_tid_address|set_robust_list|rseq|prlimit64|arch_prctl|exit_group|execve|epoll_pwait|clock_gettime|getrandom)$'
calls() {
	command -v strace >/dev/null || { echo "-"; return; }
	strace -f -qq -c -o "$tmp/sc" "$@" >/dev/null 2>&1
	awk -v skip="$skip" '$NF != "total" && $NF !~ /^-/ && NF >= 4 && $NF !~ skip && $4 ~ /^[0-9]+$/ {s += $4} END {print s + 0}' "$tmp/sc"
}
us() { # wall microseconds of one run of "$@"
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1
	local t1=$EPOCHREALTIME
	echo "$((${t1/./} - ${t0/./}))"
}
stats() { # min and median of microseconds on stdin, as ms
	sort -n | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; printf "%.1f %.1f", a[1]/1000, m/1000}'
}
echo "start-up of the Go binary alone (purerdma version): $(calls "$go" version) calls, counted in each Go figure below"
printf '%-22s %-8s | %-14s %-14s %6s | %8s %8s | %s\n' "C tool | purerdma" where "C ms min/med" "Go ms min/med" "Go/C" "C calls" "Go calls" output
for pair in "$@"; do
	c=${pair%|*} g=${pair#*|}
	command -v "${c%% *}" >/dev/null || continue
	$c >"$tmp/oc" 2>&1
	"$go" $g >"$tmp/og" 2>&1
	same=same
	cmp -s "$tmp/oc" "$tmp/og" || same=differs
	case $c in "rdma statistic"*) same="n/a (other format)" ;; esac
	: >"$tmp/tc"
	: >"$tmp/tg"
	for i in $(seq "$R"); do
		us $c >>"$tmp/tc"
		us "$go" $g >>"$tmp/tg"
	done
	read -r cmin cmed < <(stats <"$tmp/tc")
	read -r gmin gmed < <(stats <"$tmp/tg")
	ratio=$(awk -v a="$gmed" -v b="$cmed" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')
	printf '%-22s %-8s | %-14s %-14s %6s | %8s %8s | %s\n' "$c | $g" "$label" "$cmin/$cmed" "$gmin/$gmed" "$ratio" "$(calls $c)" "$(calls "$go" $g)" "$same"
done
INNER
synth=$1
shift
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
	echo "bench-tools: skipped (needs root and unshare for a mount namespace)"
	exit 0
fi
sizes=${*:-1 256}
echo "tools on synthetic sysfs trees (mlx5-like CAs, 2 ports each), $R interleaved runs; wall ms min/median; system calls per run"
for n in $sizes; do
	"$synth" -n "$n" "$tmp/t$n" || exit 0
	unshare -m bash -c 'mount --bind "$1/class" /sys/class && exec bash "$2" "${@:3}"' _ "$tmp/t$n" "$tmp/inner.sh" \
		"$go" "$n CAs" "$R" "$tmp" "ibstat|ibstat" "ibstat -s|ibstat -s" "ibstat -p|ibstat -p" "ibstatus|ibstatus"
	rm -rf "$tmp/t$n"
done
exit 0
