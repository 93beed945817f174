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
	cmake gcc make pkg-config libelf-dev libdw-dev libzstd-dev libxxhash-dev zlib1g-dev libdeflate-dev liblzma-dev
	nettle-dev
	liblzo2-dev libsnappy-dev libfuse3-dev
	libssl-dev libcap-dev libacl1-dev
	# the core handler's journal entries (sd_journal_sendv)
	libsystemd-dev
	# tools the tests use
	elfutils jq zstd xz-utils clang-format python3 gdb
	# core-handler-journal: a private systemd-journald (Debian 12's systemd
	# package) and unshare/nsenter; coredumpctl is extracted from
	# systemd-coredump's .deb, never installed (it would take core_pattern)
	systemd util-linux
	# the --json outputs against docs/schema/ (tests/integration/json-schema.py)
	python3-jsonschema python3-xxhash
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
	libelf-dev:arm64 libdw-dev:arm64 libzstd-dev:arm64 libxxhash-dev:arm64 zlib1g-dev:arm64
	nettle-dev:arm64
	libdeflate-dev:arm64 liblzma-dev:arm64 liblzo2-dev:arm64
	libsnappy-dev:arm64 libssl-dev:arm64 libbz2-dev:arm64 libfuse3-dev:arm64
	libcap-dev:arm64 libacl1-dev:arm64 libsystemd-dev:arm64
)
# pid of a 32-bit (ia32) process (tests/integration/pid-32bit.sh builds its
# target with cc -m32): the i386 libc and libgcc, not gcc-multilib (in
# Debian 12 it conflicts with the arm64 cross compiler).
if ((!main_only)) && [[ $(dpkg --print-architecture) == amd64 ]]; then
	pkgs+=(libc6-dev-i386 lib32gcc-12-dev)
fi
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
# removals PKG...: the packages apt would remove to install PKG... (its
# simulation's "Remv NAME [VERSION]" lines), each followed by a space.
removals() {
	local out
	out=$(LC_ALL=C apt-get -s install --no-install-recommends "$@" 2>&1) || {
		echo "install-deps: apt-get cannot install $*:" >&2
		printf '%s\n' "$out" | tail -n 20 >&2
		exit 1
	}
	printf '%s\n' "$out" | awk '$1 == "Remv" { printf "%s ", $2 }'
}
if ((${#missing[@]})); then
	echo "installing: ${missing[*]}"
	$sudo apt-get update -qq
	# Never let apt remove a package to make room: in Debian 12
	# gcc-multilib conflicts with gcc-aarch64-linux-gnu (the arm64 cross
	# compiler), and "apt-get install -y" of one silently removes the other,
	# so the static aarch64 build or the 32-bit builds fail much later.
	removed=$(removals "${missing[@]}") || exit 1
	if [[ -n $removed ]]; then
		for p in "${missing[@]}"; do
			r=$(removals "$p") || exit 1
			[[ -z $r ]] ||
				echo "install-deps: installing $p would remove ${r}(it conflicts with $p or with what $p needs)" >&2
		done
		echo "install-deps: not removing ${removed}for kcoredump's packages; remove the conflicting package yourself (apt-get remove PACKAGE) if you do not need it, or install only what README command (1) needs with --main" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${missing[@]}"
fi
if ((added_arch)) && ! ((${#missing[@]})); then
	$sudo apt-get update -qq
fi
