#!/bin/sh
# Builds the C peer of the uverbs VM tests into integration/.cache/verbsbench/
# (git ignores it), where the tests look for it. Needs gcc and
# libibverbs-dev (rdma-core 44 on Debian 12, as in the VM):
#   apt-get install gcc libibverbs-dev
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../.cache/verbsbench
mkdir -p "$out"
gcc -O2 -Wall -Wextra -std=gnu11 -o "$out/verbsbench" "$here/verbsbench.c" -libverbs
echo "$out/verbsbench"
