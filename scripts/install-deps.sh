#!/bin/bash
# SPDX-License-Identifier: MIT
# Install the Debian 12 packages kcoredump builds and tests with.  Quiet and
# quick when they are already there.
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors

# --main: only what README command (1) needs (the build, the x86_64 VM rig
# and the readers); without it, everything the test suite uses too (the
# static and arm64 builds, the arm64 VM tier, the Debian package).
main_only=0
case ${1:-} in
--main) main_only=1 ;;
"") ;;
*)
	echo "install-deps: unknown argument '$1' (usage: install-deps.sh [--main])" >&2
	exit 2
	;;
esac

pkgs=(
	# build
	cmake gcc make pkg-config libelf-dev libdw-dev libzstd-dev zlib1g-dev libdeflate-dev liblzma-dev
	liblzo2-dev libsnappy-dev libfuse3-dev
	libssl-dev libcap-dev libacl1-dev
	# tools the tests use
	elfutils jq zstd xz-utils clang-format python3 gdb
	# kcoredump mount: fusermount3 mounts and unmounts
	fuse3
	# the real-kernel VM rig (tests/vm)
	qemu-system-x86 busybox-static cpio libc6-dev
	# independent readers of our outputs
	python3-drgn crash makedumpfile python3-snappy python3-crcmod
	# the newest readers (Debian sid) run in a root mmdebstrap makes
	# (tests/oracle/sid-root.sh)
	mmdebstrap
)
((main_only)) || pkgs+=(
	# the static binary (libdw.a needs libbz2.a) and the Debian package
	libbz2-dev file dpkg-dev debhelper lintian man-db
	# arm64: the cross-built static binary and the arm64 VM tier
	crossbuild-essential-arm64 qemu-system-arm qemu-user gdb-multiarch
	libelf-dev:arm64 libdw-dev:arm64 libzstd-dev:arm64 zlib1g-dev:arm64
	libdeflate-dev:arm64 liblzma-dev:arm64 liblzo2-dev:arm64
	libsnappy-dev:arm64 libssl-dev:arm64 libbz2-dev:arm64 libfuse3-dev:arm64
	libcap-dev:arm64 libacl1-dev:arm64
)
sudo=""
[[ $(id -u) -eq 0 ]] || sudo=sudo
# The :arm64 packages above, Debian's arm64 kernel and busybox-static:arm64
# (tests/vm/fetch-kernel.sh, fetch-busybox.sh) need dpkg's arm64
# architecture.
added_arch=0
if ((!main_only)) && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "adding dpkg architecture arm64"
	$sudo dpkg --add-architecture arm64
	added_arch=1
fi
missing=()
native=$(dpkg --print-architecture)
for p in "${pkgs[@]}"; do
	# One line per installed architecture of the package: a plain name
	# wants this machine's own (or arch: all), NAME:ARCH that one.
	st=$(dpkg-query -W -f='${Status} ${Architecture}\n' "$p" 2>/dev/null) || st=
	want=" ($native|all)"
	[[ $p != *:* ]] || want=" ${p#*:}"
	[[ $st =~ (^|$'\n')"install ok installed"$want($'\n'|$) ]] || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "installing: ${missing[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${missing[@]}"
fi
if ((added_arch)) && ! ((${#missing[@]})); then
	$sudo apt-get update -qq
fi
