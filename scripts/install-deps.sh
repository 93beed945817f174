#!/bin/bash
# SPDX-License-Identifier: MIT
# Install the Debian 12 packages kcoredump builds and tests with.  Quiet and
# quick when they are already there.
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors

pkgs=(
	# build
	cmake gcc make pkg-config libelf-dev libdw-dev libzstd-dev zlib1g-dev libdeflate-dev liblzma-dev
	liblzo2-dev libsnappy-dev
	libssl-dev libcap-dev libacl1-dev
	# tools the tests use
	elfutils jq zstd xz-utils clang-format python3 gdb
	# the real-kernel VM rig (tests/vm)
	qemu-system-x86 busybox-static cpio libc6-dev
	# independent readers of our outputs
	python3-drgn crash makedumpfile python3-snappy python3-crcmod
)
missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || st=
	[[ $st == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "installing: ${missing[*]}"
	sudo=""
	[[ $(id -u) -eq 0 ]] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${missing[@]}"
fi
