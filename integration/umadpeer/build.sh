#!/bin/sh
# Builds the C peer of the umad VM tests into integration/.cache/umadpeer/
# (git ignores it), where the tests look for it. Needs gcc and
# libibumad-dev (rdma-core 44 on Debian 12, as in the VM, whose image has
# libibumad.so.3):
#   apt-get install gcc libibumad-dev
# make -f mk/integration.mk integration-cpeers installs both and runs this.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../.cache/umadpeer
mkdir -p "$out"
gcc -O2 -Wall -Wextra -std=gnu11 -o "$out/umadpeer" "$here/umadpeer.c" -libumad
echo "$out/umadpeer"
