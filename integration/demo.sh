#!/bin/sh
# integration/demo.sh: what `make -f mk/integration.mk demo` shows. It runs
# in the vmrun guest (vmrun -- sh integration/demo.sh), with the project's
# commands first on PATH and rdma-core's tools next to them.

section() { printf '\n===== %s\n' "$*"; }

# waitflow waits (30 s at most) until mock0 has a flow.
waitflow() {
	i=0
	until grep -q '^flow ' /sys/kernel/debug/mockrdma/mock0/flows 2>/dev/null || [ $i -ge 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

section "guest kernel (uname -r)"
uname -r

section "RDMA devices (ls /sys/class/infiniband)"
ls /sys/class/infiniband

section "port states (/sys/class/infiniband/*/ports/1/state)"
for d in /sys/class/infiniband/*; do
	printf '%s port 1: %s, %s, GID 0 %s\n' "${d##*/}" "$(cat "$d/ports/1/state")" \
		"$(cat "$d/ports/1/phys_state")" "$(cat "$d/ports/1/gids/0")"
done

section "rdma-core: ibv_devices"
ibv_devices

# The project's commands: each tool purerdma knows is run against the
# devices, next to rdma-core's tool of the same name.
if command -v purerdma >/dev/null 2>&1; then
	section "purerdma help"
	purerdma help
	for tool in version ibv_devices ibstat ibstatus ibv_devinfo; do
		purerdma help 2>/dev/null | grep -q "^ *$tool " || continue
		section "purerdma $tool"
		purerdma "$tool"
	done
	section "purerdma perfquery -C rxe0 (rxe has no PMA: the kernel answers status 0x000c)"
	purerdma perfquery -C rxe0 || echo "(exit status $?, as infiniband-diags' perfquery: no PMA on Soft-RoCE)"

	# mock0: the test-only mlx5-model device on veth1 (vmrun -mock=false
	# leaves it out), with verbs counters and flow steering.
	if [ -d /sys/class/infiniband/mock0 ]; then
		mac=$(cat /sys/class/net/veth1/address)
		section "purerdma flowcount -d mock0 --dst-mac $mac --count 3 (20 frames of 100 bytes arrive)"
		purerdma flowcount -d mock0 --dst-mac "$mac" --interval 1s --count 3 &
		pid=$!
		waitflow
		sendframes -dst "$mac" -n 20 -size 100
		wait $pid

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
else
	section "project commands"
	echo "(none built: the repository has no cmd/ main packages yet)"
fi
exit 0
