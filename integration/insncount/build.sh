#!/bin/sh
# Builds make bench's instruction-count tools into integration/.cache/insncount/
# (git ignores it): the qemu plugin libinsnmark.so, and cops, pqroce and
# marker for the guest. Needs gcc, libibverbs-dev, libibumad-dev and
# libibmad-dev (rdma-core 44 on Debian 12, as in the VM); the plugin needs
# no qemu headers (qemu-plugin.h).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../.cache/insncount
mkdir -p "$out"
gcc -O2 -Wall -Wextra -Wno-unused-parameter -shared -fPIC -o "$out/libinsnmark.so" "$here/insnmark.c" -lpthread
gcc -O2 -Wall -Wextra -std=gnu11 -o "$out/cops" "$here/cops.c" -libverbs -libumad
gcc -O2 -Wall -Wextra -std=gnu11 -o "$out/pqroce" "$here/pqroce.c" -libmad -libumad
gcc -O2 -Wall -Wextra -static -o "$out/marker" "$here/marker.c"
echo "$out"
