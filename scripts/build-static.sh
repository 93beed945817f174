#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build one fully static kcoredump binary from Debian's own static
# libraries, for this machine or cross-compiled for aarch64, and check it.
#
# Usage: scripts/build-static.sh [--arch x86_64|aarch64] [--build-dir DIR]
#                                [--install-deps]
#   --arch A          target machine (default: this machine's)
#   --build-dir DIR   CMake build directory (default build-static-<arch>)
#   --install-deps    install what the build needs first (apt-get, as root):
#                     for aarch64 this adds dpkg's arm64 architecture and
#                     installs crossbuild-essential-arm64 and the :arm64
#                     -dev packages
# Prints the binary's path on the last line of stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=../tests/lib/shell.sh
. "$repo/tests/lib/shell.sh"
kcd_trap_errors

arch=$(uname -m)
build=
install_deps=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--arch) arch=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	--install-deps) install_deps=1; shift ;;
	-h|--help) sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "build-static: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
case $arch in
x86_64|amd64) arch=x86_64 deb_arch=amd64 triplet=x86_64-linux-gnu ;;
aarch64|arm64) arch=aarch64 deb_arch=arm64 triplet=aarch64-linux-gnu ;;
*) echo "build-static: --arch is x86_64 or aarch64, not '$arch'" >&2; exit 2 ;;
esac
build=${build:-$repo/build-static-$arch}
native=0
[[ $(uname -m) != "$arch" ]] || native=1

# The -dev packages carry the .a files (libelf.a, libdw.a, libbz2.a, ...).
# The C and C++ runtimes come with gcc natively, with crossbuild-essential
# (libc6-dev-arm64-cross, libstdc++-12-dev-arm64-cross) otherwise.
dev_pkgs=(libelf-dev libdw-dev libzstd-dev zlib1g-dev libdeflate-dev
	liblzma-dev liblzo2-dev libsnappy-dev libssl-dev nettle-dev libbz2-dev
	libcap-dev libacl1-dev)
if [[ $install_deps -eq 1 ]]; then
	sudo=""
	[[ $(id -u) -eq 0 ]] || sudo=sudo
	pkgs=(cmake make pkg-config file)
	if [[ $native -eq 1 ]]; then
		pkgs+=(gcc g++ libc6-dev "${dev_pkgs[@]}")
	else
		if ! dpkg --print-foreign-architectures | grep -qx "$deb_arch"; then
			echo "build-static: adding dpkg architecture $deb_arch" >&2
			$sudo dpkg --add-architecture "$deb_arch"
		fi
		pkgs+=("crossbuild-essential-$deb_arch")
		for p in "${dev_pkgs[@]}"; do pkgs+=("$p:$deb_arch"); done
	fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${pkgs[@]}"
fi

cmake_args=(-S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release
	-DKCOREDUMP_STATIC=ON -DKCOREDUMP_WERROR=ON -DBUILD_TESTING=OFF)
if [[ $native -eq 0 ]]; then
	command -v "$triplet-gcc" > /dev/null || {
		echo "build-static: no $triplet-gcc; run with --install-deps (or install crossbuild-essential-$deb_arch)" >&2
		exit 1
	}
	cmake_args+=(-DCMAKE_TOOLCHAIN_FILE="$repo/cmake/$triplet.cmake")
fi
cmake "${cmake_args[@]}" > "$build.configure.log" 2>&1 || {
	cat "$build.configure.log" >&2
	echo "build-static: cmake configure failed (missing -dev packages? try --install-deps)" >&2
	exit 1
}
rm -f "$build.configure.log"
cmake --build "$build" -j2 --target kcoredump >&2

bin=$build/kcoredump
desc=$(file -b "$bin")
echo "build-static: $desc" >&2
[[ $desc == *"statically linked"* ]] || {
	echo "build-static: '$bin' is not statically linked" >&2
	exit 1
}
size=$(stat -c %s "$bin")
"$triplet-strip" -o "$bin.stripped" "$bin" 2>/dev/null ||
	strip -o "$bin.stripped" "$bin"
echo "build-static: $arch size $size bytes ($(stat -c %s "$bin.stripped") stripped: $bin.stripped)" >&2
if [[ $native -eq 1 ]]; then
	"$bin" version >&2
fi
echo "$bin"
