#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The arm64 builds of the independent readers, for checking an arm64
# guest's dumps on an x86_64 host under qemu-user (qemu-aarch64 -L ROOT):
# Debian's crash and makedumpfile are built for one architecture each, and
# the x86_64 crash refuses an arm64 dump ("machine type mismatch").
# crash:arm64 and makedumpfile:arm64 and the arm64 libraries they need
# that the host does not have are downloaded (apt-get download; needs
# `dpkg --add-architecture arm64`) and unpacked, not installed, into
#   ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/arm64-readers/<crash version>/
# The other libraries come from the host's :arm64 packages
# (scripts/install-deps.sh).  Prints the directory.
#
# Usage: fetch-arm64-readers.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/shell.sh
. "$(dirname "$0")/../lib/shell.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/apt-download.sh
. "$(dirname "$0")/../lib/apt-download.sh"
kcd_trap_errors
log() { echo "fetch-arm64-readers: $*" >&2; }
[[ $# -eq 0 ]] || { sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

cache="${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/arm64-readers"
mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9

best=$(kcd_newest_entry "$cache" '^[0-9]')
if [[ -n "$best" ]]; then
	echo "$cache/$best"
	exit 0
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	log "apt cannot download arm64 packages: run 'dpkg --add-architecture arm64 && apt-get update' (scripts/install-deps.sh does)"
	exit 1
fi
tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/root"
for p in crash makedumpfile libncursesw6 libtinfo6; do
	mkdir "$tmp/$p"
	log "downloading $p:arm64"
	deb=$(apt_download_deb "$tmp/$p" "$p:arm64") || exit 1
	dpkg-deb -x "$deb" "$tmp/root"
	[[ $p != crash ]] || ver=$(dpkg-deb -f "$deb" Version)
done
[[ -x "$tmp/root/usr/bin/crash" && -x "$tmp/root/usr/bin/makedumpfile" ]] ||
	{ log "unexpected package layout"; exit 1; }
ver=${ver//[:~]/_}
touch "$tmp/root/.complete"
rm -rf "${cache:?}/$ver"
mv "$tmp/root" "$cache/$ver"
echo "$cache/$ver"
