#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The static busybox of another architecture for the VM rig's initramfs:
# Debian's busybox-static:<arch> (apt-get download, which needs
# `dpkg --add-architecture <arch>` and an apt-get update), unpacked into
#   ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/busybox/<arch>-<version>/
# Prints the path of the busybox binary.  The host's own architecture uses
# the installed busybox-static instead (tests/vm/run.sh).
#
# Usage: fetch-busybox.sh --arch ARCH
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/shell.sh
. "$(dirname "$0")/../lib/shell.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/apt-download.sh
. "$(dirname "$0")/../lib/apt-download.sh"
kcd_trap_errors

arch=
while [[ $# -gt 0 ]]; do
	case "$1" in
	--arch) arch=$2; shift 2 ;;
	-h|--help) sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "fetch-busybox.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[[ -n "$arch" ]] || { echo "fetch-busybox.sh: --arch is required" >&2; exit 2; }
log() { echo "fetch-busybox: $*" >&2; }

cache="${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/busybox"
mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9

best=$(kcd_newest_entry "$cache" "^$arch-")
if [[ -z "$best" ]]; then
	if ! dpkg --print-foreign-architectures | grep -qx "$arch" &&
		[[ $arch != "$(dpkg --print-architecture)" ]]; then
		log "apt cannot download $arch packages: run 'dpkg --add-architecture $arch && apt-get update' (scripts/install-deps.sh does)"
		exit 1
	fi
	tmp=$(mktemp -d "$cache/.tmp-$arch.XXXXXX")
	chmod 0755 "$tmp" # apt-get download drops privileges to _apt
	trap 'rm -rf "$tmp"' EXIT
	log "downloading busybox-static:$arch"
	deb=$(apt_download_deb "$tmp" "busybox-static:$arch") || exit 1
	mkdir "$tmp/root"
	dpkg-deb -x "$deb" "$tmp/root"
	[[ -x "$tmp/root/bin/busybox" ]] || { log "no bin/busybox in $deb"; exit 1; }
	ver=$(dpkg-deb -f "$deb" Version)
	ver=${ver//[:~]/_}
	best=$arch-$ver
	touch "$tmp/root/.complete"
	rm -rf "${cache:?}/$best"
	mv "$tmp/root" "$cache/$best"
	rm -rf "$tmp"
	trap - EXIT
fi
echo "$cache/$best/bin/busybox"
