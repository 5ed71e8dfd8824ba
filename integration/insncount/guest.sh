#!/bin/sh
# guest.sh DIR [N REPS PPREPS [OP]]: make bench's instruction counts, run in the guest by vmrun
# with qemu loading the insnmark plugin (mk/bench-insn.sh). DIR holds what
# the host built: cops, marker, pqroce (C), goops, minigo, purerdma (Go). The
# plugin appends the samples to its output file on the host; this script
# only runs the windows. POSIX sh, for the guest's busybox.
#
#   per operation  cops N, then goops N (windows in the programs, CPU 1)
#   per tool       each C tool and its purerdma twin, REPS times
#                  interleaved, pinned to CPU 1 in a global window (fork
#                  to exit; the report counts CPU 1): tools.sh, itself
#                  on CPU 0
#   per message    rc_pingpong -e, 64 B: a C server on CPU 0 and a client
#                  on CPU 1, C then Go, N1 and N2 iterations; the report
#                  takes (N2 run - N1 run) / (N2 - N1): one iteration
#   per read       RD readers of one counters object at once (cops rate,
#                  goops rate), R1 and R2 reads each, unpinned, in global
#                  windows; the report takes (R2 run - R1 run) /
#                  (RD * (R2 - R1)) over every CPU: one read under
#                  contention, with whatever the threads' scheduling costs
#
# N samples per operation (40), REPS runs per tool (41), PPREPS pairs of
# rc_pingpong, perftest and concurrent-read runs (5: C's least 2,000-
# iteration rc_pingpong run moved by 14 % among three pairs on 6.12); OP,
# for a profile (mk/bench-insn.sh INSN_PROF=1), runs goops's operation OP
# alone and nothing else (tool-ARGS: one run of purerdma ARGS, commas for
# spaces; run-PROG,ARGS: of PROG, a program in DIR such as minigo, or a
# guest's C tool); perop runs cops and goops and nothing else; when OP is
# pp-c or pp-go, one rc_pingpong client of N iterations (rdma-core's or
# ours) in a global window, and copies the guest's /proc/kallsyms to
# DIR/kallsyms.txt for the kernel profile, as a single operation does
# (OP a number). make bench-insn boots each kernel three times: OP
# notools runs everything but the tool rows, OP tools the tool rows alone
# (under qemu's -icount: mk/bench-insn.sh), OP rate counters'
# TestVMReadRate alone (DIR/counters.test; -icount too).
set -u
N=${2:-40} REPS=${3:-41} PPREPS=${4:-5} N1=100 N2=2000 RD=4 R1=100 R2=1000 PT1=200 PT2=2000
# A kernel booted with maxcpus=1 (an -icount boot: mk/bench-insn.sh)
# gets its other CPUs now.
for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
	[ -f "$c" ] && [ "$(cat "$c")" = 0 ] && echo 1 >"$c"
done
# Transparent huge pages on madvise, not Debian's always: under always
# the Go runtime's first touches of its heap arena fault in 2 MiB pages,
# 2 M instructions of zeroing each, and how many depends on how many free
# huge pages the kernel has at that moment (0 to 5 per run seen), which
# made the tool rows and rc_pingpong swing. docs/performance.md gives
# that cost apart.
thp=/sys/kernel/mm/transparent_hugepage/enabled
[ -w $thp ] && echo madvise >$thp
echo "== insncount on Linux $(uname -r): $N samples per operation, $REPS runs per tool, THP $(cat $thp 2>/dev/null), ASLR $(cat /proc/sys/kernel/randomize_va_space), CPUs isolated: $(cat /sys/devices/system/cpu/isolated)"
if [ "${5:-}" = rate ]; then
	# counters' TestVMReadRate alone, in an -icount boot of every CPU
	# (mk/bench-insn.sh), from counters/ as go test runs it, at its
	# full rounds (make bench's); none of the programs below
	echo "== counters read rate (under -icount a guest second is 10^9 instructions over both CPUs)"
	root=$(pwd) dir=$(cd "$1" && pwd)
	. "$root/mk/guest-run.sh"
	export PURERDMA_BENCH=1
	run counters counters.test TestVMReadRate 'read rate|^ {8}|^(--- |FAIL|ok|PASS)'
	exit 0
fi
tmp=$(mktemp -d)
cp "$1/cops" "$1/goops" "$1/marker" "$1/minigo" "$1/pqroce" "$1/purerdma" "$tmp/"
M=$tmp/marker G=$tmp/purerdma
# mock0's executor, the kernel thread mockrdma-dp that plays the
# device's hardware, on CPU 0: a SCHED_FIFO thread woken by a doorbell
# runs on the CPU it last ran on, which is CPU 1 in some boots, and then
# its whole turn (15 k instructions a PostSend) fell inside the mlx5
# PostSend window there, in others not.
for p in /proc/[0-9]*; do
	[ "$(cat "$p/comm" 2>/dev/null)" = mockrdma-dp ] && { $M pinpid 0 "${p#/proc/}" || echo "guest.sh: mockrdma-dp not pinned"; }
done
P=18800
pp() { # code iterations client...
	code=$1 n=$2
	shift 2
	P=$((P + 1))
	$M pin 0 ibv_rc_pingpong -d rxe0 -g 0 -n "$n" -s 64 -p $P -e >/dev/null 2>&1 &
	sp=$!
	hp=$(printf '%04X' $P) w=0
	while ! grep -q ":$hp 00000000:0000 0A" /proc/net/tcp && [ $w -lt 120 ]; do sleep 0.5; w=$((w + 1)); done
	$M start; $M pin 1 "$@" -d rxe1 -g 0 -n "$n" -s 64 -p $P -e 127.0.0.1 >"$tmp/pp" 2>&1; rc=$?; $M stop "$code"
	wait $sp
	echo "rc_pingpong sample $code: $n iterations, exit $rc: $(tail -1 "$tmp/pp")"
}
# wakeups on|off: the scheduler's wakeup preemption (debugfs's
# sched/features), off for the tool rows. Their programs run on one CPU,
# and a Go program's start there hands its P from thread to thread (the
# main goroutine is locked to the main thread while packages
# initialize): when the woken thread preempts the one that woke it
# before that one has parked, the runtime finds no idle thread and
# starts another. On 6.12 (EEVDF) that was 13 of 20 runs of the minimal
# Go program, 4 % more instructions each (232 k user, 2.05 M kernel
# against 223 k and 1.9 M); with wakeup preemption off, none of 20.
wakeups() {
	f=/sys/kernel/debug/sched/features
	[ -e $f ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
	[ -w $f ] || { echo "guest.sh: no $f: wakeup preemption stays on"; return 0; }
	case $1 in on) echo WAKEUP_PREEMPTION >$f ;; *) echo NO_WAKEUP_PREEMPTION >$f ;; esac
}
# the tool rows, tools.sh on CPU 0
tools() {
	wakeups off
	"$M" pin 0 sh "$(dirname "$0")/tools.sh" "$M" "$G" "$tmp/minigo" "$REPS"
	wakeups on
}
case "${5:-}" in
tools)
	tools
	rm -rf "$tmp"
	echo "== insncount done"
	exit 0
	;;
"" | perop | notools)
	# past the first 64 numbers of each kind of object (cops.c's warm)
	"$tmp/cops" warm 100 || echo "cops warm failed: $?"
	;;
tool-* | run-*)
	# a purerdma tool's second run (run-: any program's), in a global
	# window on CPU 1 (sample 3), its arguments after "tool-" with commas
	# for spaces
	cat /proc/kallsyms >"$1/kallsyms.txt"
	# (the shell on CPU 0, as tools.sh's: the window counts all CPU 1 runs)
	case "$5" in
	tool-*) args="$G $(echo "${5#tool-}" | tr , ' ')" ;;
	*) args=$(echo "${5#run-}" | tr , ' ') ;;
	esac
	# a program of DIR's (the host's builds) runs from the guest's copy
	prog=${args%% *}
	[ "$prog" = "${prog#*/}" ] && [ -x "$1/$prog" ] && cp "$1/$prog" "$tmp/" && args="$tmp/$args"
	wakeups off
	$M pin 0 sh -c "$M pin 1 $args >/dev/null 2>&1; $M start; $M pin 1 $args >/dev/null 2>&1; $M stop 3"
	rm -rf "$tmp"
	exit 0
	;;
pp-c | pp-go)
	cat /proc/kallsyms >"$1/kallsyms.txt"
	if [ "$5" = pp-c ]; then pp 100 "$N" ibv_rc_pingpong; else pp 102 "$N" $G rc_pingpong; fi
	rm -rf "$tmp"
	exit 0
	;;
*)
	cat /proc/kallsyms >"$1/kallsyms.txt"
	"$tmp/goops" "$N" "$5" || echo "goops failed: $?"
	rm -rf "$tmp"
	exit 0
	;;
esac
"$tmp/cops" "$N" || echo "cops failed: $?"
"$tmp/goops" "$N" || echo "goops failed: $?"
if [ "${5:-}" = perop ]; then
	rm -rf "$tmp"
	exit 0
fi
[ "${5:-}" = notools ] || tools
echo "== rc_pingpong -e: C server on CPU 0, client on CPU 1"
j=0
while [ $j -lt "$PPREPS" ]; do
	j=$((j + 1))
	pp 100 "$N1" ibv_rc_pingpong
	pp 101 "$N2" ibv_rc_pingpong
	pp 102 "$N1" $G rc_pingpong
	pp 103 "$N2" $G rc_pingpong
done
echo "== perftest _bw clients: C server on CPU 0, client (perftest's, then ours) on CPU 1"
# 64-byte messages (atomics: 8), no peak search (-N: print_report_bw's
# search is quadratic in the iterations), waiting on completion events (-e)
# where perftest can: ib_write_bw cannot ("Events feature not available
# on WRITE verb"), so its client busy-polls and its row counts the empty
# polls too, which depend on timing.
pt() { # code iterations tool client...
	code=$1 n=$2 t=$3
	shift 3
	P=$((P + 1))
	a="-N"
	case $t in ib_atomic_bw) a="-N -e" ;; ib_write_bw) a="-N -s 64" ;; *) a="-N -e -s 64" ;; esac
	$M pin 0 $t -d rxe0 -x 0 -n "$n" -p $P $a >/dev/null 2>&1 &
	sp=$!
	hp=$(printf '%04X' $P) w=0
	while ! grep -q ":$hp 00000000:0000 0A" /proc/net/tcp && [ $w -lt 120 ]; do sleep 0.5; w=$((w + 1)); done
	$M start; $M pin 1 "$@" $t -d rxe1 -x 0 -n "$n" -p $P $a 127.0.0.1 >"$tmp/pt" 2>&1; rc=$?; $M stop "$code"
	wait $sp
	echo "perftest sample $code: $t $n iterations, exit $rc: $(sed -n '/#bytes/{n;p;}' "$tmp/pt")"
}
j=0
while [ $j -lt "$PPREPS" ]; do
	j=$((j + 1))
	k=0
	for t in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw; do
		pt $((120 + 2 * k)) "$PT1" $t env
		pt $((121 + 2 * k)) "$PT2" $t env
		pt $((130 + 2 * k)) "$PT1" $t $G
		pt $((131 + 2 * k)) "$PT2" $t $G
		k=$((k + 1))
	done
done
echo "== counters Read: $RD readers of one object at once, C then Go, $R1 and $R2 reads each"
j=0
while [ $j -lt "$PPREPS" ]; do
	j=$((j + 1))
	$M start; "$tmp/cops" rate $RD $R1; $M stop 110
	$M start; "$tmp/cops" rate $RD $R2; $M stop 111
	$M start; "$tmp/goops" rate $RD $R1; $M stop 112
	$M start; "$tmp/goops" rate $RD $R2; $M stop 113
done
rm -rf "$tmp"
echo "== insncount done"
