#!/bin/sh
# Builds the C peer of the rdmacm VM benchmark into integration/.cache/cmbench/
# (git ignores it), where the test looks for it. Needs gcc and
# librdmacm-dev (rdma-core 44 on Debian 12, as in the VM):
#   apt-get install gcc librdmacm-dev
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../.cache/cmbench
mkdir -p "$out"
gcc -O2 -Wall -Wextra -std=gnu11 -o "$out/cmbench" "$here/cmbench.c" -lrdmacm -libverbs
echo "$out/cmbench"
