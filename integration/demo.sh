#!/bin/sh
# integration/demo.sh: what `make -f mk/integration.mk demo` shows. It runs
# in the vmrun guest (vmrun -- sh integration/demo.sh), with the project's
# commands first on PATH and rdma-core's tools next to them.
#
# It exits 0 when every step did what it is expected to do, including the
# steps that are expected to fail (perfquery on a device without a PMA, a
# MAD to a class nobody serves, flowcount on rxe): those print their exit
# status as "expected". A step that does not behave as expected makes the
# demo exit 1 at the end, after every section has run.
# integration/vmrun's TestDemo runs `make demo` and checks the status and
# every section header ("===== ...").

cd "$(dirname "$0")/.." || exit 1

section() { printf '\n===== %s\n' "$*"; }

failed=0
fail() {
	echo "DEMO FAILURE: $*"
	failed=1
}

# expect CODE CMD...: runs CMD, which should exit with CODE, and says so.
expect() {
	want=$1
	shift
	"$@"
	got=$?
	if [ "$got" -eq "$want" ]; then
		if [ "$want" -ne 0 ]; then
			echo "(exit status $got, expected)"
		fi
	else
		fail "$* exited with $got, expected $want"
	fi
}

# same TITLE CMD_C CMD_GO: runs rdma-core's command and purerdma's, shows
# both and says whether their output is byte for byte the same.
same() {
	title=$1
	section "$title"
	echo "--- rdma-core: $2"
	sh -c "$2" >/tmp/demo.c 2>&1
	cat /tmp/demo.c
	echo "--- purerdma: $3"
	sh -c "$3" >/tmp/demo.go 2>&1
	cat /tmp/demo.go
	if cmp -s /tmp/demo.c /tmp/demo.go; then
		echo "--- identical, byte for byte"
	else
		diff -u /tmp/demo.c /tmp/demo.go
		fail "$3 differs from $2"
	fi
}

# waitflow waits (30 s at most) until mock0 has a flow.
waitflow() {
	i=0
	until grep -q '^flow ' /sys/kernel/debug/mockrdma/mock0/flows 2>/dev/null || [ $i -ge 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# waitline FILE TEXT waits (30 s at most) until FILE holds TEXT.
waitline() {
	i=0
	until grep -q "$2" "$1" 2>/dev/null || [ $i -ge 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

section "guest kernel (uname -r)"
uname -r

section "RDMA devices and ports (/sys/class/infiniband)"
for d in /sys/class/infiniband/*; do
	printf '%s port 1: %s, %s, netdev %s, GID 0 %s\n' "${d##*/}" "$(cat "$d/ports/1/state")" \
		"$(cat "$d/ports/1/phys_state")" "$(cat "$d/ports/1/gid_attrs/ndevs/0" 2>/dev/null)" \
		"$(cat "$d/ports/1/gids/0")"
done

if ! command -v purerdma >/dev/null 2>&1; then
	section "project commands"
	echo "(none built: vmrun -cmds=false?)"
	exit 1
fi

section "purerdma help"
purerdma help

section "purerdma version"
purerdma version

same "devices: rdma-core's ibv_devices and purerdma devices" "ibv_devices" "purerdma devices"
same "devinfo: rdma-core's ibv_devinfo and purerdma devinfo (-d rxe0)" "ibv_devinfo -d rxe0" "purerdma devinfo -d rxe0"
same "ibstat: infiniband-diags' ibstat and purerdma ibstat (rxe1)" "ibstat rxe1" "purerdma ibstat rxe1"
same "ibstatus: infiniband-diags' ibstatus and purerdma ibstatus (rxe0)" "ibstatus rxe0" "purerdma ibstatus rxe0"

same "resource: iproute2's rdma resource show and purerdma resource" "rdma resource show" "purerdma resource show"

# A MAD round trip: a vendor-class replier on rxe1, requests from rxe0 to
# rxe1's GID 0 over the veth pair.
gid1=$(cat /sys/class/infiniband/rxe1/ports/1/gids/0)
section "MAD round trip: purerdma umad serve on rxe1, purerdma umad send from rxe0 to $gid1"
purerdma umad serve -C rxe1 -P 1 -c 3 --data pong >/tmp/demo.serve 2>&1 &
srv=$!
waitline /tmp/demo.serve '^serving'
expect 0 purerdma umad send -C rxe0 -P 1 --dgid "$gid1" -c 3 --data ping -t 500 --retries 5
wait $srv || fail "umad serve exited with $?"
echo "--- the server's side:"
cat /tmp/demo.serve

section "MAD to a class nobody serves (0x31): the kernel answers status 0x000c"
expect 1 purerdma umad send -C rxe0 -P 1 --dgid "$gid1" --class 0x31 -t 500 --retries 1

# The counters of a real RC connection: rdma-core's ibv_rc_pingpong, server
# on rxe0, client on rxe1 (GID 0 on both sides), 100 messages of 1 KiB.
section "counters of rxe0 before ibv_rc_pingpong (purerdma counters -d rxe0)"
expect 0 purerdma counters -d rxe0 >/tmp/demo.before
cat /tmp/demo.before

section "ibv_rc_pingpong: server on rxe0, client on rxe1, 100 x 1 KiB"
ibv_rc_pingpong -d rxe0 -g 0 -n 100 -s 1024 >/tmp/demo.pps 2>&1 &
pps=$!
i=0
until grep -q ':4853 [0-9A-F:]* 0A ' /proc/net/tcp /proc/net/tcp6 2>/dev/null || [ $i -ge 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
expect 0 ibv_rc_pingpong -d rxe1 -g 0 -n 100 -s 1024 10.77.0.1
wait $pps || fail "ibv_rc_pingpong server exited with $?"
sed 's/^/server: /' /tmp/demo.pps
sleep 0.1 # past hw_counters' lifespan

section "counters of rxe0 after ibv_rc_pingpong (purerdma counters -d rxe0)"
expect 0 purerdma counters -d rxe0 >/tmp/demo.after
cat /tmp/demo.after
echo "--- grown (netlink set):"
awk '
	FNR == 1 { file++ }
	/source netlink/ { nl = 1; next }
	/^set / { nl = 0 }
	nl && NF == 2 { v[file, $1] = $2; names[$1] = 1 }
	END {
		n = 0
		for (k in names) if (v[2, k] != v[1, k]) { printf "    %s %d -> %d (+%d)\n", k, v[1, k], v[2, k], v[2, k] - v[1, k]; n++ }
		if (n == 0) { print "    nothing grew"; exit 1 }
	}' /tmp/demo.before /tmp/demo.after | sort || fail "no counter of rxe0 grew"

section "perfquery -C rxe0: rxe has no PMA, the kernel answers status 0x000c"
expect 255 purerdma perfquery -C rxe0

section "flowcount on rxe0: rxe has no verbs counters"
expect 1 purerdma flowcount -d rxe0 --dst-mac 52:54:00:12:34:01 --count 1

# mock0: the test-only mlx5-model device on veth1 (vmrun -mock=false
# leaves it out), with verbs counters and flow steering.
if [ -d /sys/class/infiniband/mock0 ]; then
	mac=$(cat /sys/class/net/veth1/address)
	section "purerdma flowcount -d mock0 --dst-mac $mac --count 3 (20 frames of 100 bytes arrive)"
	purerdma flowcount -d mock0 --dst-mac "$mac" --interval 1s --count 3 &
	pid=$!
	waitflow
	sendframes -dst "$mac" -n 20 -size 100
	wait $pid || fail "flowcount on mock0 exited with $?"

	peer=integration/.cache/countersc/countersc
	if [ -x "$peer" ]; then
		section "rdma-core 44 (libibverbs + libmlx5): the same example on mock0"
		{
			printf 'open mock0\ncreate a\nattach a 0 0\nattach a 1 1\nflow f a %s\n' "$mac"
			waitflow
			sendframes -dst "$mac" -n 20 -size 100 >&2
			printf 'read a 2 1\nunflow f\ndestroy a\n'
		} | "$peer" | awk 'NR==6 { printf "PACKETS = %s, BYTES = %s\n", $2, $3; next } { print "  " $0 }'
	fi
fi

section "demo result"
if [ $failed -ne 0 ]; then
	echo "something did not behave as expected (DEMO FAILURE lines above)"
	exit 1
fi
echo "every step behaved as expected"
exit 0
