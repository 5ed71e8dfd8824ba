#!/bin/sh
# tools.sh MARKER PURERDMA MINIGO REPS: guest.sh's tool rows, run by it
# pinned to CPU 0 (marker pin 0) so that this shell's own forks and waits
# stay off CPU 1, where each tool runs pinned inside a global window (the
# report counts CPU 1). Sample 2 is /bin/true, 3 a minimal Go program,
# then C tool 2k+2 and its purerdma twin 2k+3 for pair k, REPS times
# interleaved. The two start-ups run three times a round: every row
# subtracts one of them (the report takes each row's trimmed mean), and the
# minimal Go program's runs spread wider than a tool's. The last pair's
# C tool is pqroce (beside MINIGO): the work
# our perfquery does on RoCE, through libibmad, which rdma-core's
# perfquery cannot do there (pqroce.c). POSIX sh, for the guest's busybox.
set -u
M=$1 G=$2 minigo=$3 REPS=$4
dev=$(cat /sys/class/infiniband_mad/umad0/ibdev)
i=0
while [ "$i" -lt "$REPS" ]; do
	i=$((i + 1))
	for n in 1 2 3; do
		$M start; $M pin 1 /bin/true; $M stop 2
		$M start; $M pin 1 "$minigo"; $M stop 3
	done
	k=0
	for pair in "ibv_devices|devices" "ibv_devinfo|devinfo" "ibv_devinfo -v|devinfo -v" \
		"ibstat|ibstat" "ibstatus|ibstatus" "perfquery -C $dev -P 1|perfquery -C $dev -P 1" \
		"rdma link|link" "rdma statistic show|statistic show" "rdma resource|resource" \
		"$(dirname "$minigo")/pqroce -C $dev -P 1|perfquery -C $dev -P 1"; do
		k=$((k + 1))
		c=${pair%|*} g=${pair#*|}
		$M start; $M pin 1 $c >/dev/null 2>&1; $M stop $((2 * k + 2))
		$M start; $M pin 1 $G $g >/dev/null 2>&1; $M stop $((2 * k + 3))
	done
done
