#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Download Debian's linux-image-6.12.*-amd64-unsigned (newest available; or
# the newest linux-image-6.1.0-*-amd64-unsigned, Debian 12's own kernel,
# with --series 6.1; or linux-image-6.12.*-arm64-unsigned with --arch arm64,
# which needs `dpkg --add-architecture arm64` and an apt-get update) and
# unpack it into the cache, outside the source tree:
#   ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/kernel/<version>/
# Linux 7.x (--series 7.3: 7.3.4 from trixie-backports) comes through the
# private apt configuration of tests/lib/apt-download.sh (no change to the
# machine's apt sources, no dpkg architecture needed for arm64) and is split
# in three packages: linux-binary-unsigned-VER (usr/lib/modules/VER/
# vmlinuz.unsigned), linux-modules-VER and linux-base-VER (config,
# System.map); the entry gets the same layout as a 6.x one (boot/vmlinuz-VER,
# boot/config-VER, boot/System.map-VER, lib/modules/VER).
# Print the unpacked directory on stdout.  An existing complete cache entry is
# reused; an interrupted download never leaves a half-unpacked entry behind
# (work happens in a temp dir that is renamed into place when complete).
#
# Usage: fetch-kernel.sh [--series 6.12|6.1|7.N] [--arch amd64|arm64]
#                        [--package NAME] [--print-vmlinuz] [--skip-without-qemu]
#   --series S           the newest kernel of Linux 6.12 (default), 6.1 or
#                        7.N (e.g. 7.3)
#   --arch A             amd64 (default) or arm64 (6.12 and 7.N)
#   --package NAME       use this package instead of the newest of the series
#                        (7.N: the linux-binary-unsigned-VER one)
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
	-h|--help) sed -n '3,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
7.[0-9]|7.[0-9][0-9])
	# linux-binary-unsigned-7.3.4+deb13-amd64; not the -cloud-, -rt- or
	# -arm64-16k flavours.
	s_re=${series//./\\.}
	pkg_re="^linux-binary-unsigned-$s_re\\.[0-9]+\\+[a-z0-9]+-$arch\$" dir_re="^$s_re\\.[0-9]+\\+[a-z0-9]+-$arch\$" ;;
*) echo "fetch-kernel.sh: --series is 6.12, 6.1 or 7.N, not '$series'" >&2; exit 2 ;;
esac
split=0
[[ $series != 7.* ]] || split=1
# shellcheck source-path=SCRIPTDIR source=../lib/apt-download.sh
. "$(dirname "$0")/../lib/apt-download.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/shell.sh
. "$(dirname "$0")/../lib/shell.sh"
kcd_trap_errors

# One fetch at a time (parallel ctest runs share the cache).
mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9

# apt-cache of the machine (6.x) or of the private configuration (7.x).
apt_cache() {
	if [[ $split -eq 1 ]]; then
		apt_private apt-cache "$@"
	else
		apt-cache "$@"
	fi
}

newest_pkg() {
	apt_cache search --names-only "$pkg_re" 2>/dev/null |
		awk '{print $1}' | sort -V | tail -n 1
}

# A 6.x linux-image-VER-unsigned: one package with boot/ and lib/modules/.
unpack_image() {
	local tmp=$1 deb
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
}

# A 7.x kernel: linux-binary-unsigned-VER, linux-modules-VER and
# linux-base-VER of one version (Debian 13's split of linux-image-VER),
# each below usr/lib/modules/VER/; laid out as a 6.x entry.
unpack_split() {
	local tmp=$1 version part deb f m
	m=$tmp/x/usr/lib/modules/$ver
	# The binary's candidate version; the other two must be the same.
	version=$(apt_cache show "$pkg:$arch" 2>/dev/null |
		sed -n 's/^Version: //p' | sort -V | tail -n 1) || true
	[[ -n "$version" ]] || { log "apt knows no version of $pkg:$arch"; exit 1; }
	mkdir "$tmp/x"
	for part in linux-binary-unsigned linux-modules linux-base; do
		mkdir "$tmp/$part"
		chmod 0755 "$tmp/$part"
		log "downloading $part-$ver $version"
		deb=$(apt_private_download_deb "$tmp/$part" "$part-$ver:$arch=$version") || exit 1
		log "unpacking $(basename "$deb")"
		dpkg-deb -x "$deb" "$tmp/x"
		rm -f "$deb"
	done
	kver=$ver
	for f in vmlinuz.unsigned config System.map; do
		[[ -f "$m/$f" ]] || { log "unexpected package layout: no usr/lib/modules/$ver/$f in the $ver packages"; exit 1; }
	done
	[[ -d "$m/kernel" ]] || { log "unexpected package layout: no usr/lib/modules/$ver/kernel in linux-modules-$ver"; exit 1; }
	mkdir -p "$tmp/root/boot" "$tmp/root/lib/modules"
	mv "$m/vmlinuz.unsigned" "$tmp/root/boot/vmlinuz-$kver"
	mv "$m/config" "$tmp/root/boot/config-$kver"
	mv "$m/System.map" "$tmp/root/boot/System.map-$kver"
	mv "$m" "$tmp/root/lib/modules/$kver"
	echo "$version" > "$tmp/root/package-version"
	rm -rf "$tmp/x"
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
		if [[ -z "$pkg" && $split -eq 0 ]]; then
			log "no Linux $series image known to apt; running apt-get update"
			apt-get update -qq >&2
			pkg=$(newest_pkg)
		elif [[ -z "$pkg" ]]; then
			log "no Linux $series image known to the private apt configuration; refreshing its lists"
			pkg=$(KCD_APT_PRIVATE_REFRESH=1 newest_pkg)
		fi
		[[ -n "$pkg" ]] || { log "no Linux $series image package available"; exit 1; }
	fi
	# linux-image-6.12.117+deb12-amd64-unsigned -> 6.12.117+deb12-amd64,
	# linux-binary-unsigned-7.3.4+deb13-amd64 -> 7.3.4+deb13-amd64
	ver=${pkg#linux-image-}
	ver=${ver#linux-binary-unsigned-}
	ver=${ver%-unsigned}
	dir="$cache/$ver"
	if [[ ! -f "$dir/.complete" ]]; then
		tmp=$(mktemp -d "$cache/.tmp-$ver.XXXXXX")
		chmod 0755 "$tmp" # apt-get download drops privileges to _apt
		trap 'rm -rf "$tmp"' EXIT
		if [[ $split -eq 1 ]]; then
			unpack_split "$tmp"
		else
			log "downloading $pkg"
			unpack_image "$tmp"
		fi
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
