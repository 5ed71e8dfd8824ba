#!/bin/sh
# integration/capture.sh: capture the requests an rdma-core tool makes on
# /dev/infiniband/*, for golden tests of the project's encoders. It runs in
# the vmrun guest:
#
#   go run ./integration/vmrun [-kernel 6.12] -- sh integration/capture.sh NAME TOOL [ARGS...]
#
# and writes, relative to the repository:
#
#   integration/testdata/captures/NAME.txt     rdmacapture (ptrace): ioctl headers,
#                                              attributes and the buffers they point to
#   integration/testdata/captures/NAME.strace  the same run under
#                                              strace -f -X raw -xx -s 4096 -e trace=openat,ioctl,write,read
#                                              -P /dev/infiniband/... (each device node)
#
# strace shows write/read buffers but RDMA_VERBS_IOCTL's argument only as a
# pointer, hence rdmacapture. The exact command goes into both headers.
set -eu
if [ $# -lt 2 ]; then
	echo "usage: vmrun -- sh integration/capture.sh NAME TOOL [ARGS...]" >&2
	exit 2
fi
name=$1
shift
dir=${VMRUN_REPO:?run this in the vmrun guest}/integration/testdata/captures
mkdir -p "$dir"
how="captured with: go run ./integration/vmrun -kernel ${VMRUN_KERNEL} -- sh integration/capture.sh $name $*"

rdmacapture -o "$dir/$name.txt" -note "$how" -- "$@" >/dev/null

# -P limits the trace to the RDMA device nodes (not the loader's reads).
paths=$(for f in /dev/infiniband/*; do printf ' -P %s' "$f"; done)
strace_flags="-f -X raw -xx -s 4096 -e trace=openat,ioctl,write,read$paths"
# shellcheck disable=SC2086
strace $strace_flags -o /tmp/capture.strace "$@" >/dev/null
{
	echo "# strace $strace_flags -- $*"
	echo "# $how"
	echo "# kernel: $(uname -r)"
	# pids differ from run to run; drop them
	sed 's/^[0-9]* *//' /tmp/capture.strace
} >"$dir/$name.strace"
echo "wrote $dir/$name.txt and $dir/$name.strace"
