#!/bin/sh
# Builds the C peer of the counters side-by-side VM test into
# integration/.cache/countersc/ (git ignores it), where the test looks for
# it. Needs gcc and libibverbs-dev (rdma-core 44 on Debian 12, as in the
# VM, where libmlx5 drives mock0):
#   apt-get install gcc libibverbs-dev
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../.cache/countersc
mkdir -p "$out"
gcc -O2 -Wall -Wextra -std=gnu11 -pthread -o "$out/countersc" "$here/countersc.c" -libverbs
echo "$out/countersc"
