#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Download Debian's linux-image-<version>-dbg matching the VM rig's kernel
# (the one tests/vm/fetch-kernel.sh cached) and keep only its vmlinux:
#   ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/dbg/<version>/vmlinux
# Print the vmlinux path on stdout.  The package is about 1 GB; a complete
# cache entry is reused, an interrupted download leaves nothing behind.
#
# Usage: fetch-dbg.sh [VERSION]   (default: the newest cached amd64 VM kernel)
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors

root="${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}"
log() { echo "fetch-dbg: $*" >&2; }
# shellcheck source-path=SCRIPTDIR source=../lib/apt-download.sh
. "$(dirname "$0")/../lib/apt-download.sh"

ver=${1:-}
if [[ -z "$ver" ]]; then
	# The x86_64 rig's kernel: the cache also holds arm64 ones.
	ver=$(kcd_newest_entry "$root/kernel" '-amd64$')
fi
[[ -n "$ver" ]] || { log "no VM kernel cached; run tests/vm/fetch-kernel.sh first"; exit 1; }

dir="$root/dbg/$ver"
# A complete entry is final (it is moved into place whole): reuse it
# without the lock, which another version's download may hold for minutes.
if [[ -f "$dir/.complete" ]]; then
	echo "$dir/vmlinux"
	exit 0
fi
mkdir -p "$root/dbg"
exec 9> "$root/dbg/.lock"
flock 9
if [[ ! -f "$dir/.complete" ]]; then
	pkg="linux-image-$ver-dbg"
	tmp=$(mktemp -d "$root/dbg/.tmp-$ver.XXXXXX")
	chmod 0755 "$tmp" # apt-get download drops privileges to _apt
	trap 'rm -rf "$tmp"' EXIT
	log "downloading $pkg (about 1 GB)"
	# Debian 12's own kernels come from the machine's sources; newer ones
	# (7.x from trixie-backports) through the private configuration.
	if [[ $ver == *+deb12-* ]]; then
		deb=$(apt_download_deb "$tmp" "$pkg") || exit 1
	else
		deb=$(apt_private_download_deb "$tmp" "$pkg") || exit 1
	fi
	log "unpacking vmlinux from $(basename "$deb")"
	mkdir "$tmp/root"
	# 6.x packages hold the image as usr/lib/debug/boot/vmlinux-VER; from
	# 7.x that name is a symbolic link to usr/lib/debug/lib/modules/VER/
	# vmlinux, the regular file.  Take both names, keep the regular file.
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$tmp/root" --wildcards '*/boot/vmlinux-*' \
			"*/lib/modules/$ver/vmlinux" 2> "$tmp/tar.err" || true
	vml=$(find "$tmp/root" \( -name "vmlinux-*" -o -name vmlinux \) \
		-type f 2> /dev/null | head -n 1) || true
	[[ -n "$vml" ]] || sed 's/^/fetch-dbg: tar: /' "$tmp/tar.err" >&2
	[[ -n "$vml" ]] || { log "no vmlinux in $deb"; exit 1; }
	mkdir "$tmp/out"
	mv "$vml" "$tmp/out/vmlinux"
	echo "$pkg" > "$tmp/out/package"
	touch "$tmp/out/.complete"
	rm -rf "$dir"
	mv "$tmp/out" "$dir"
	rm -rf "$tmp"
	trap - EXIT
fi
echo "$dir/vmlinux"
