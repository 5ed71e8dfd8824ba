#!/bin/sh
# bench-tools-live.sh PURERDMA: rdma-core's tools against purerdma's on this
# machine's own RDMA devices: the VM (make bench runs it in the guest on
# each kernel). POSIX sh, for the guest's busybox.
#
# The binary is copied to tmpfs first (from the VM's 9p share each start
# costs seconds). For each pair: whether both print the same bytes, the
# system calls per run (strace -f -c, without the memory and thread
# management calls, which differ by runtime rather than by work: mmap,
# futex, rt_sig*, clone, ...), and wall milliseconds per run as min and
# median over K interleaved chunks of M runs (C chunk, Go chunk, ...;
# K=${K:-5}, M=${M:-10}), timed with busybox time (10 ms resolution per
# chunk). Under TCG on a shared host only the ratios mean anything. It
# reports; it never fails on a figure.
set -u
K=${K:-5} M=${M:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$1" "$tmp/purerdma"
go=$tmp/purerdma
# The device of the first umad node: perfquery and counters need one with
# a MAD interface (the mock device, when loaded, has none).
dev=$(cat /sys/class/infiniband_mad/umad0/ibdev)
skip='^(mmap|munmap|mprotect|madvise|brk|futex|nanosleep|clock_nanosleep|sched_yield|sched_getaffinity|rt_sigaction|rt_sigprocmask|rt_sigreturn|sigaltstack|clone|clone3|gettid|getpid|tgkill|set_tid_address|set_robust_list|rseq|prlimit64|arch_prctl|exit_group|execve|epoll_pwait|clock_gettime|getrandom)$'
calls() {
	strace -f -qq -c -o "$tmp/sc" "$@" >/dev/null 2>&1
	awk -v skip="$skip" '$NF != "total" && $NF !~ /^-/ && NF >= 4 && $NF !~ skip && $4 ~ /^[0-9]+$/ {s += $4} END {print s + 0}' "$tmp/sc"
}
chunk() { # ms per run of M runs of "$@"
	i=0
	: >"$tmp/loop"
	while [ $i -lt "$M" ]; do
		echo "$* >/dev/null 2>&1" >>"$tmp/loop"
		i=$((i + 1))
	done
	busybox time -p -o "$tmp/t" sh "$tmp/loop"
	awk -v m="$M" '$1 == "real" {printf "%.2f\n", $2 * 1000 / m}' "$tmp/t"
}
stats() { # min/median of stdin
	sort -n | awk '{a[NR]=$1} END {printf "%.1f/%.1f", a[1], a[int((NR+1)/2)]}'
}
echo "tools on this machine's devices ($(ls /sys/class/infiniband | tr '\n' ' ')), $K interleaved chunks of $M runs; ms per run min/median; system calls per run"
echo "start-up of the Go binary alone (purerdma version): $(calls "$go" version) calls, counted in each Go figure below"
printf '%-36s | %-12s %-12s %6s | %8s %8s | %s\n' "C tool | purerdma" "C ms" "Go ms" "Go/C" "C calls" "Go calls" output
for pair in "ibstat|ibstat" "ibstatus|ibstatus" "ibv_devices|devices" "ibv_devinfo|devinfo" \
	"ibv_devinfo -v|devinfo -v" "rdma link|link" "perfquery -C $dev -P 1|perfquery -C $dev -P 1" \
	"rdma statistic show|statistic show" "rdma resource|resource" "rdma statistic show|counters -d $dev"; do
	c=${pair%|*} g=${pair#*|}
	command -v "${c%% *}" >/dev/null || continue
	$c >"$tmp/oc" 2>&1
	$go $g >"$tmp/og" 2>&1
	same=same
	cmp -s "$tmp/oc" "$tmp/og" || same=differs
	case $g in counters*) same="n/a (another format)" ;; esac
	: >"$tmp/tc"
	: >"$tmp/tg"
	k=0
	while [ $k -lt "$K" ]; do
		chunk $c >>"$tmp/tc"
		chunk $go $g >>"$tmp/tg"
		k=$((k + 1))
	done
	cs=$(stats <"$tmp/tc") gs=$(stats <"$tmp/tg")
	ratio=$(awk -v a="${gs#*/}" -v b="${cs#*/}" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')
	printf '%-36s | %-12s %-12s %6s | %8s %8s | %s\n' "$c | $g" "$cs" "$gs" "$ratio" "$(calls $c)" "$(calls $go $g)" "$same"
done
exit 0
