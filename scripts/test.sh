#!/bin/bash
# SPDX-License-Identifier: MIT
# README command (2): install what is missing, build warning-free, and run
# a tier of the test suite (ctest labels; tests/vm/README.md).
#
#   scripts/test.sh            the fast tier: unit, integration, lint,
#                              security, package, and two real-kernel smoke
#                              boots (Linux 6.12 and 7.3, x86_64)
#   scripts/test.sh --vm       the real-kernel tier: every other VM case
#                              (label vm, both architectures), the readers
#                              on the VM's dumps (oracle) and the newest
#                              readers from Debian sid (newest)
#   scripts/test.sh --all      both, in one ctest run
#   scripts/test.sh --series S [--arch A]
#                              one column of the matrix (every case on
#                              Linux S, 6.12 or 7.3, on A, x86_64 or
#                              arm64; both architectures without --arch)
#   scripts/test.sh --arch A   the matrix's columns for A (both series)
#
# Anything after `--` goes to ctest (e.g. `-- -R formats`).  Opt-in tests
# (label heavy: hours of boots, kernel builds, Volatility) run only by
# name: `ctest --test-dir build -L heavy`.  The first run downloads
# Debian's kernels into $KCOREDUMP_CACHE (default ~/.cache/kcoredump).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
cd "$(dirname "$0")/.."

usage()
{
	sed -n '/^#   scripts/,/^#   \{10,\}arm64)/s/^#   //p; /^#   scripts.*--arch A  /p' "$0" >&2
	echo "usage: scripts/test.sh [--vm | --all | --series 6.12|7.3 [--arch x86_64|arm64] | --arch x86_64|arm64] [-- CTEST-ARGS...]" >&2
	exit "${1:-2}"
}

tier=fast series='' arch=''
while [ $# -gt 0 ]; do
	case $1 in
	--vm) tier=vm ;;
	--all) tier=all ;;
	--series)
		[ $# -ge 2 ] || usage
		series=$2
		shift
		;;
	--arch)
		[ $# -ge 2 ] || usage
		arch=$2
		shift
		;;
	-h | --help) usage 0 2>&1 ;;
	--)
		shift
		break
		;;
	*)
		echo "test.sh: unknown argument '$1'" >&2
		usage
		;;
	esac
	shift
done
case $series in
'' | 6.12 | 7.3) ;;
*)
	echo "test.sh: --series takes 6.12 or 7.3, not '$series'" >&2
	exit 2
	;;
esac
case $arch in
'' | x86_64 | arm64) ;;
*)
	echo "test.sh: --arch takes x86_64 or arm64, not '$arch'" >&2
	exit 2
	;;
esac

# The tiers, as ctest label selections.  A test's fixtures (the kernel
# downloads, the static builds, the generated inputs) are pulled in by
# ctest whatever their labels.
case $tier in
fast) select=(-LE 'vm|oracle|newest|heavy|kernel|matrix|arm64') ;;
vm) select=(-L 'vm|oracle|newest' -LE 'heavy|kernel|matrix') ;;
all) select=(-LE 'heavy|kernel|matrix') ;;
esac
if [ -n "$series$arch" ]; then
	[ "$tier" = fast ] || {
		echo "test.sh: --series/--arch pick a matrix column; not with --vm or --all" >&2
		exit 2
	}
	# vm-matrix-CASE-SERIES-ARCH
	s='(6\.12|7\.3)' a='(x86_64|arm64)'
	[ -z "$series" ] || s=${series//./\\.}
	[ -z "$arch" ] || a=$arch
	select=(-L matrix -R "^vm-matrix-.*-$s-$a\$")
fi

scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCOREDUMP_WERROR=ON
cmake --build "$build" -j"$(nproc)"
# Independent tests run two at a time (this machine's CPUs, at least 2):
# the VM boots ask for both CPUs (PROCESSORS 2) and run alone, and tests
# that change machine-wide settings share a RESOURCE_LOCK.
jobs=$(nproc)
[ "$jobs" -ge 2 ] || jobs=2
start=$SECONDS
status=0
ctest --test-dir "$build" --output-on-failure -j"$jobs" "${select[@]}" "$@" || status=$?
echo "test.sh: the $tier tier${series:+ (series $series)}${arch:+ (arch $arch)} took $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s of testing"
exit "$status"
