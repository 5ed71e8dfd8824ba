#!/bin/sh
# Builds the C peer of the error-completion VM test into
# integration/.cache/wcerr/ (git ignores it), where the test looks for it.
# Needs gcc and libibverbs-dev (rdma-core 44 on Debian 12, as in the VM,
# where libmlx5 drives mock0):
#   apt-get install gcc libibverbs-dev
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../.cache/wcerr
mkdir -p "$out"
gcc -O2 -Wall -Wextra -std=gnu11 -o "$out/wcerr" "$here/wcerr.c" -libverbs
echo "$out/wcerr"
