#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Download Debian's linux-image-6.12.*-amd64-unsigned (newest available; or
# the newest linux-image-6.1.0-*-amd64-unsigned, Debian 12's own kernel,
# with --series 6.1; or linux-image-6.12.*-arm64-unsigned with --arch arm64,
# which needs `dpkg --add-architecture arm64` and an apt-get update) and
# unpack it into the cache, outside the source tree:
#   ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/kernel/<version>/
# Print the unpacked directory on stdout.  An existing complete cache entry is
# reused; an interrupted download never leaves a half-unpacked entry behind
# (work happens in a temp dir that is renamed into place when complete).
#
# Usage: fetch-kernel.sh [--series 6.12|6.1] [--arch amd64|arm64]
#                        [--package NAME] [--print-vmlinuz] [--skip-without-qemu]
#   --series S           the newest kernel of Linux 6.12 (default) or 6.1
#   --arch A             amd64 (default) or arm64 (6.12 only)
#   --package NAME       use this package instead of the newest of the series
#   --print-vmlinuz      print the path of the vmlinuz instead of the directory
#   --skip-without-qemu  exit 77 (ctest skip) when qemu-system-x86_64 (or
#                        -aarch64) is missing, as the VM tests themselves do
set -euo pipefail

cache="${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/kernel"
pkg=
series=6.12
print_vmlinuz=0
arch=amd64
skip_without_qemu=0

while [[ $# -gt 0 ]]; do
	case "$1" in
	--package) pkg="$2"; shift 2 ;;
	--series) series="$2"; shift 2 ;;
	--arch) arch="$2"; shift 2 ;;
	--print-vmlinuz) print_vmlinuz=1; shift ;;
	--skip-without-qemu) skip_without_qemu=1; shift ;;
	-h|--help) sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "fetch-kernel.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

log() { echo "fetch-kernel: $*" >&2; }
case $arch in
amd64) qemu=qemu-system-x86_64 ;;
arm64) qemu=qemu-system-aarch64 ;;
*) echo "fetch-kernel.sh: --arch is amd64 or arm64, not '$arch'" >&2; exit 2 ;;
esac
if [[ $skip_without_qemu -eq 1 ]] && ! command -v "$qemu" > /dev/null; then
	echo "fetch-kernel: $qemu not installed; skipping" >&2
	exit 77
fi
case $series in
6.12) pkg_re="^linux-image-6\\.12\\.[0-9.+a-z]*-$arch-unsigned\$" dir_re="^6\\.12\\..*-$arch\$" ;;
6.1) pkg_re="^linux-image-6\\.1\\.0-[0-9]*-$arch-unsigned\$" dir_re="^6\\.1\\.0-.*-$arch\$" ;;
*) echo "fetch-kernel.sh: --series is 6.12 or 6.1, not '$series'" >&2; exit 2 ;;
esac
# shellcheck source-path=SCRIPTDIR source=../lib/apt-download.sh
. "$(dirname "$0")/../lib/apt-download.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/shell.sh
. "$(dirname "$0")/../lib/shell.sh"
kcd_trap_errors

# One fetch at a time (parallel ctest runs share the cache).
mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9

newest_pkg() {
	apt-cache search --names-only "$pkg_re" 2>/dev/null |
		awk '{print $1}' | sort -V | tail -n 1
}

# Fast path: no package given and a complete entry is cached -> use the
# newest cached one without touching apt at all (works offline).
if [[ -z "$pkg" ]]; then
	best=$(kcd_newest_entry "$cache" "$dir_re")
	[[ -z "$best" ]] || dir="$cache/$best"
fi

if [[ -z "${dir:-}" ]]; then
	if [[ -z "$pkg" ]]; then
		pkg=$(newest_pkg)
		if [[ -z "$pkg" ]]; then
			log "no Linux $series image known to apt; running apt-get update"
			apt-get update -qq >&2
			pkg=$(newest_pkg)
		fi
		[[ -n "$pkg" ]] || { log "no Linux $series image package available"; exit 1; }
	fi
	# linux-image-6.12.117+deb12-amd64-unsigned -> 6.12.117+deb12-amd64
	ver=${pkg#linux-image-}
	ver=${ver%-unsigned}
	dir="$cache/$ver"
	if [[ ! -f "$dir/.complete" ]]; then
		tmp=$(mktemp -d "$cache/.tmp-$ver.XXXXXX")
		chmod 0755 "$tmp" # apt-get download drops privileges to _apt
		trap 'rm -rf "$tmp"' EXIT
		log "downloading $pkg"
		if [[ $arch != "$(dpkg --print-architecture)" ]] &&
			! dpkg --print-foreign-architectures | grep -qx "$arch"; then
			log "apt cannot download $arch packages: run 'dpkg --add-architecture $arch && apt-get update' (scripts/install-deps.sh --arm64 does)"
			exit 1
		fi
		deb=$(apt_download_deb "$tmp" "$pkg:$arch") || exit 1
		log "unpacking $(basename "$deb")"
		mkdir "$tmp/root"
		dpkg-deb -x "$deb" "$tmp/root"
		# Only what the rig needs: vmlinuz, config, System.map, modules.
		kver=$(find "$tmp/root/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null |
			head -n 1) || true
		[[ -n "$kver" && -f "$tmp/root/boot/vmlinuz-$kver" ]] ||
			{ log "unexpected package layout in $deb"; exit 1; }
		echo "$kver" > "$tmp/root/kernel-release"
		echo "$pkg" > "$tmp/root/package"
		touch "$tmp/root/.complete"
		rm -rf "$dir"
		mv "$tmp/root" "$dir"
		rm -rf "$tmp"
		trap - EXIT
	fi
fi

if [[ $print_vmlinuz -eq 1 ]]; then
	echo "$dir/boot/vmlinuz-$(cat "$dir/kernel-release")"
else
	echo "$dir"
fi
