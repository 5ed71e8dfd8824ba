#!/bin/bash
# mk/go-bootstrap.sh VERSION DEST: install Go VERSION (e.g. 1.24.13) for
# this machine into DEST (DEST/bin/go), from the Go module proxy, the way
# the go command itself fetches a toolchain (GOTOOLCHAIN, cmd/go's
# internal/toolchain): the module golang.org/toolchain at version
# v0.0.1-goVERSION.linux-ARCH is a plain module zip whose files sit under
# golang.org/toolchain@v0.0.1-goVERSION.linux-ARCH/.
#
# The zip is checked before anything in it runs: its h1: hash (the go.sum
# hash, golang.org/x/mod/sumdb/dirhash Hash1: the SHA-256 of the lines
# "sha256(file)  name\n" of every file, sorted by name, base64) must equal
# the line for it in mk/go-bootstrap.sum, or, for a version or platform
# that file does not list, the line of the checksum database
# sum.golang.org, asked through the proxy (PROXY/sumdb/sum.golang.org/
# lookup/MODULE@VERSION, as cmd/go asks it when GOSUMDB's proxy support
# is used).
#
# The proxy is the first entry of $GOPROXY (https://proxy.golang.org when
# unset). Downloaded zips are kept in $GO_BOOTSTRAP_DL (default: DEST's
# parent's dl/) and checked again whenever they are unpacked. curl (or
# wget), unzip and sha256sum are installed with apt-get when missing.
set -euo pipefail

version=${1:?usage: go-bootstrap.sh VERSION DEST}
dest=${2:?usage: go-bootstrap.sh VERSION DEST}
here=$(cd "$(dirname "$0")" && pwd)

say() { echo "go-bootstrap: $*" >&2; }
die() { say "$*"; exit 1; }

case "$(uname -m)" in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "no Go toolchain for $(uname -m) here: install Go $version or newer yourself (https://go.dev/dl/)" ;;
esac
[ "$(uname -s)" = Linux ] || die "only Linux is supported"

mod=golang.org/toolchain
ver=v0.0.1-go$version.linux-$arch

# The proxy: the first entry of GOPROXY that is a URL (entries are
# separated by ',' or '|'; "direct" and "off" are not proxies).
proxy=
IFS=',|' read -r -a entries <<<"${GOPROXY:-https://proxy.golang.org}"
for e in "${entries[@]}"; do
	case "$e" in
	http://* | https://* | file://*) proxy=${e%/}; break ;;
	esac
done
[ -n "$proxy" ] || die "GOPROXY=${GOPROXY:-} names no proxy; the toolchain comes from one (unset GOPROXY for https://proxy.golang.org)"

# needcmd CMD PACKAGE: apt-get install PACKAGE when CMD is missing.
needcmd() {
	command -v "$1" >/dev/null 2>&1 && return 0
	[ "$(id -u)" = 0 ] || die "$1 is missing; install the Debian package $2 (or run as root to let this script do it)"
	say "installing $2 (for $1) with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y --no-install-recommends "$2" ca-certificates >/dev/null 2>&1 ||
		{ apt-get update >/dev/null && apt-get install -y --no-install-recommends "$2" ca-certificates >/dev/null; } ||
		die "apt-get could not install $2"
}

fetch() { # URL FILE
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 3 -o "$2" "$1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1"
	else
		needcmd curl curl
		curl -fsSL --retry 3 -o "$2" "$1"
	fi
}

needcmd unzip unzip
needcmd sha256sum coreutils
needcmd base64 coreutils

dl=${GO_BOOTSTRAP_DL:-$(dirname "$dest")/dl}
mkdir -p "$dl"
zip=$dl/$ver.zip

# The expected hash: the pinned line, else the checksum database's.
want=$(awk -v m="$mod" -v v="$ver" '$1 == m && $2 == v { print $3 }' "$here/go-bootstrap.sum")
source="mk/go-bootstrap.sum"
if [ -z "$want" ]; then
	source="the checksum database (sum.golang.org through $proxy)"
	lookup=$(mktemp)
	trap 'rm -f "$lookup"' EXIT
	fetch "$proxy/sumdb/sum.golang.org/lookup/$mod@$ver" "$lookup" ||
		die "the checksum database has no line for $mod@$ver (asked $proxy/sumdb/sum.golang.org/lookup/$mod@$ver): is go$version a release for linux/$arch?"
	want=$(awk -v m="$mod" -v v="$ver" '$1 == m && $2 == v { print $3; exit }' "$lookup")
	[ -n "$want" ] || die "no h1: line for $mod@$ver in the checksum database's answer"
	say "$mod@$ver: $want (sum.golang.org, through $proxy)"
fi

if [ ! -s "$zip" ]; then
	say "downloading $proxy/$mod/@v/$ver.zip"
	fetch "$proxy/$mod/@v/$ver.zip" "$zip.part" || die "could not download $proxy/$mod/@v/$ver.zip"
	mv "$zip.part" "$zip"
fi

work=$(mktemp -d "$(dirname "$dest")/.unpack.XXXXXX")
trap 'rm -rf "$work" ${lookup:+"$lookup"}' EXIT
unzip -q "$zip" -d "$work" || { rm -f "$zip"; die "$zip is not a zip (removed; run again)"; }

# dirhash.Hash1 over the zip's files, in Go's byte order of their names.
# The list comes from the zip, so a file unzip left out fails the check.
names=$(unzip -Z1 "$zip" | LC_ALL=C sort)
got=$(cd "$work" && while IFS= read -r n; do
	case "$n" in */) continue ;; esac
	[ -f "$n" ] || { echo "go-bootstrap: $n is in the zip but was not unpacked" >&2; exit 1; }
	printf '%s\0' "$n"
done <<<"$names" | xargs -0 sha256sum | sha256sum | cut -d' ' -f1) || die "could not hash the unpacked zip"
case "$got" in *[!0-9a-f]*) die "could not hash the unpacked zip: $got" ;; esac
got="h1:$(printf "$(echo "$got" | sed 's/../\\x&/g')" | base64)"
if [ "$got" != "$want" ]; then
	rm -f "$zip"
	die "$mod@$ver: the zip's hash is $got, $source says $want: not used (the download was removed)"
fi

root=$work/$mod@$ver
[ -x "$root/bin/go" ] || chmod -R u+rwX "$root"
# Module zips keep no file modes: make the commands executable, as cmd/go
# does after fetching a toolchain module (internal/toolchain).
chmod +x "$root"/bin/* "$root"/pkg/tool/*/* 2>/dev/null || true
"$root/bin/go" version >/dev/null || die "the unpacked go does not run"
rm -rf "$dest"
mv "$root" "$dest"
say "installed $("$dest/bin/go" version | cut -d' ' -f3-) in $dest"
