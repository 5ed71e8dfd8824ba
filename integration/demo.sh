#!/bin/sh
# integration/demo.sh: what `make -f mk/integration.mk demo` shows. It runs
# in the vmrun guest (vmrun -- sh integration/demo.sh), with the project's
# commands first on PATH and rdma-core's tools next to them.

section() { printf '\n===== %s\n' "$*"; }

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
	for tool in version ibv_devices ibstat ibstatus ibv_devinfo perfquery; do
		purerdma help 2>/dev/null | grep -q "^ *$tool " || continue
		section "purerdma $tool"
		purerdma "$tool"
	done
else
	section "project commands"
	echo "(none built: the repository has no cmd/ main packages yet)"
fi
