#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Debian's stress-ng for the VM rig's busybox initramfs (the load of the
# smear bench, tests/vm/cases/smear-bench.sh): the package's binary and the
# shared libraries it needs that this machine does not have, in
#   ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/stress-ng/<version>/
#     bin/stress-ng, lib/ (those libraries), version
# and print that directory.  The .debs come through the machine's apt
# (`apt-get download`, tests/lib/apt-download.sh); nothing is installed.
# run.sh --stress-ng copies bin/stress-ng into the guest with every library
# ldd lists (the machine's own and lib/'s) and the loader.
# A complete entry (.complete) is reused without asking apt (offline).
#
# Usage: tests/vm/fetch-stress-ng.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/apt-download.sh
. "$here/../lib/apt-download.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/shell.sh
. "$here/../lib/shell.sh"
kcd_trap_errors
case ${1:-} in
'') ;;
-h|--help) sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) echo "fetch-stress-ng.sh: unknown argument '$1'" >&2; exit 2 ;;
esac
log() { echo "fetch-stress-ng: $*" >&2; }
die() { log "$*"; exit 1; }

cache=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/stress-ng
best=$(kcd_newest_entry "$cache" '^[0-9]')
if [[ -n $best ]]; then
	echo "$cache/$best"
	exit 0
fi
apt_cache_begin "$cache"

# fetch PKG: its .deb unpacked into $tmp/root; the .deb's path on stdout.
fetch() {
	apt_fetch_unpack "$tmp" "$1" "$tmp/root" || die "cannot download $1"
}
deb=$(fetch stress-ng)
version=$(dpkg-deb -f "$deb" Version)
bin=$tmp/root/usr/bin/stress-ng
[[ -x $bin ]] || die "$(basename "$deb") has no usr/bin/stress-ng"
# The dependencies this machine lacks (the first of each alternative).
for p in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/ //g'); do
	# (one line per architecture dpkg knows the package for)
	dpkg-query -W -f='${db:Status-Status}\n' "$p" 2> /dev/null | grep -qx installed ||
		{ log "downloading $p (not installed here)"; fetch "$p" > /dev/null; }
done
libdirs=$(find "$tmp/root" -name '*.so*' -printf '%h\n' | sort -u | paste -sd:) || true
missing=$(LD_LIBRARY_PATH=$libdirs ldd "$bin" | grep 'not found' || true)
[[ -z $missing ]] || die "stress-ng $version still lacks: $missing"

mkdir -p "$tmp/entry/bin" "$tmp/entry/lib"
cp "$bin" "$tmp/entry/bin/"
LD_LIBRARY_PATH=$libdirs ldd "$bin" | sed -n 's/.* => \(.*\) (0x.*/\1/p' |
	while read -r lib; do
		[[ $lib != "$tmp/root/"* ]] || cp -L "$lib" "$tmp/entry/lib/"
	done
echo "$version" > "$tmp/entry/version"
touch "$tmp/entry/.complete"
rm -rf "${cache:?}/$version"
mv "$tmp/entry" "$cache/$version"
echo "$cache/$version"
