#!/usr/bin/env bash
# Build a test kernel (kernel/build.sh), the test module against it, and run
# a kernel-* VM case on it.
#
#   kernel/test.sh [--stock|--patched] [--upto N] [--debug] [--results DIR]
#                  [--timeout S] [CASE [ARG...]]
#
# CASE defaults to kernel-vmap-ram (others: kernel-seek, kernel-coredump,
# or any tests/vm case such as info-kcore); ARGs go to the guest script.  kcoredump and kcore-read for the guest
# come from $KCOREDUMP_BUILD (default /tmp/kbuild-kcd, built here with cmake
# if missing).  Exit status is run.sh's (0 pass, 1 fail, 77 skip).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
variant=--stock
upto=()
debug=()
results=
case_name=kernel-vmap-ram
case_args=()
timeout_s=${KCOREDUMP_VM_TIMEOUT:-300}

while [[ $# -gt 0 ]]; do
	case "$1" in
	--stock|--patched) variant=$1; shift ;;
	--upto) upto=(--upto "$2"); shift 2 ;;
	--debug) debug=(--debug); shift ;;
	--results) results=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	-h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "test.sh: unknown option $1" >&2; exit 2 ;;
	*) case_name=$1; shift; case_args=("$@"); break ;;
	esac
done

command -v qemu-system-x86_64 >/dev/null || { echo "test.sh: no qemu-system-x86_64, skipping" >&2; exit 77; }

kcd=${KCOREDUMP_BUILD:-/tmp/kbuild-kcd}
if [[ ! -x "$kcd/kcoredump" || ! -x "$kcd/tests/tools/kcore-read" ]]; then
	cmake -S "$top" -B "$kcd" >&2
	cmake --build "$kcd" -j2 --target kcoredump kcore-read >&2
fi

bz=$("$here/build.sh" "$variant" ${upto[@]+"${upto[@]}"} ${debug[@]+"${debug[@]}"} | tail -n 1)
kdir=$(dirname "$(dirname "$(dirname "$(dirname "$bz")")")")

# The module, built out of tree into a per-kernel copy of kernel/test.
mdir=$kdir/kcore_test
mkdir -p "$mdir"
cp "$here/test/kcore_test.c" "$here/test/Makefile" "$mdir/"
make -s -C "$kdir" M="$mdir" modules >&2
chmod +x "$mdir/kcore_test.ko"   # run.sh --tool wants an executable
gcc -O2 -Wall -static -o "$mdir/kcore-seek" "$here/test/kcore-seek.c"
gcc -O2 -Wall -static -o "$mdir/kcore-vread" "$here/test/kcore-vread.c"
# crash-shapes: nolibc from the same tree, for deterministic process memory
nolibc=$kdir/source/tools/include/nolibc
gcc -O2 -Wall -static -nostdlib -fno-stack-protector \
	-fno-asynchronous-unwind-tables -include "$nolibc/nolibc.h" \
	-I "$nolibc" -o "$mdir/crash-shapes" "$here/test/crash-shapes.c" -lgcc

[[ -n "$results" ]] || results=$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-kernel.XXXXXX")
exec "$top/tests/vm/run.sh" --kernel "$bz" --kcoredump "$kcd/kcoredump" \
	--tool "$kcd/tests/tools/kcore-read" --tool "$mdir/kcore_test.ko" \
	--tool "$mdir/kcore-seek" --tool "$mdir/crash-shapes" --tool "$mdir/kcore-vread" \
	--timeout "$timeout_s" --results "$results" \
	"$top/tests/vm/cases/$case_name.sh" ${case_args[@]+"${case_args[@]}"}
