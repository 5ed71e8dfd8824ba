#!/bin/sh
# capture.sh OUT.tar.gz — capture the RDMA part of this machine's sysfs as a
# fixture tree for package sysfs, written as a gzipped tar.
#
# It is meant for the project's Soft-RoCE VM (rxe0 and rxe1), from the
# repository root on the host:
#
#   go run ./integration/vmrun -kernel 6.12 -- sh sysfs/testdata/capture.sh \
#       sysfs/testdata/rxe-6.12/sysfs.tar.gz
#
# (the guest mounts the repository at its host path, so OUT lands in the
# host's tree). It needs only busybox: sh, find, cat, readlink, tar, gzip.
#
# What is captured, relative to /sys:
#   class/infiniband/*, class/infiniband_verbs/*, class/infiniband_mad/*:
#       the class entries, as the relative symlinks they are, and the class
#       files (abi_version);
#   the directory each symlink points to (devices/…/rxe0, …/uverbs0, …):
#       every regular file, recursively, through the ports/ subdirectories,
#       but not into power/ nor through the symlinks inside (device,
#       subsystem), so the capture stays the RDMA devices, not the whole
#       device tree.
# Files are copied with cat, not tar: sysfs reports a size of 4096 for every
# attribute, which tar would believe. A file whose read fails (EINVAL for
# the gid_attrs of an empty GID slot, write-only attributes) is left out and
# listed with its error in capture-errors.txt; uname -r and the date go to
# capture-info.txt. Both lie beside class/ and devices/ in the tar.
set -eu
out=${1:?usage: capture.sh OUT.tar.gz}
case $out in /*) ;; *) out=$PWD/$out ;; esac
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
errors=$stage/capture-errors.txt
: >"$errors"

# copyfile SYSPATH: copy one attribute file into the stage, or log its error.
copyfile() {
	dst=$stage/${1#/sys/}
	mkdir -p "$(dirname "$dst")"
	if ! msg=$(cat "$1" 2>&1 >"$dst"); then
		rm -f "$dst"
		echo "${1#/sys/}: ${msg##*: }" >>"$errors"
	fi
}

# copydev DIR: copy the regular files under a device directory.
copydev() {
	find "$1" \( -name power -prune \) -o -type f -print | sort | while read -r f; do
		copyfile "$f"
	done
}

for class in infiniband infiniband_verbs infiniband_mad; do
	c=/sys/class/$class
	[ -d "$c" ] || continue
	mkdir -p "$stage/class/$class"
	for e in "$c"/*; do
		[ -e "$e" ] || continue
		name=${e##*/}
		if [ -L "$e" ]; then
			ln -s "$(readlink "$e")" "$stage/class/$class/$name"
			target=$(cd "$e" && pwd -P)
			copydev "$target"
		elif [ -f "$e" ]; then
			copyfile "$e"
		fi
	done
done

{
	echo "kernel: $(uname -r)"
	echo "captured: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "command: sh sysfs/testdata/capture.sh"
	echo "unreadable files: $(wc -l <"$errors")"
} >"$stage/capture-info.txt"

mkdir -p "$(dirname "$out")"
tar -C "$stage" -czf "$out" .
echo "capture.sh: wrote $out ($(wc -l <"$errors") unreadable files listed)" >&2
