#!/usr/bin/env bash
# Build a test kernel (kernel/build.sh), the test module against it, and run
# a kernel-* VM case on it.
#
#   kernel/test.sh [--base 6.12|7.3] [--stock|--patched] [--upto N] [--debug]
#                  [--patches DIR]
#                  [--5lvl] [--icount N] [--mem SIZE] [--append STR]
#                  [--results DIR]
#                  [--timeout S] [--kernel BZIMAGE]
#                  [CASE [ARG...]]
#
# --base picks the kernel (build.sh --base; default 6.12 with
# kernel/patches, 7.3 with kernel/patches-7.3).  --kernel takes a bzImage
# that build.sh made before (in its O= directory, which the module is built
# against) instead of running build.sh; --stock/--patched must say which
# it is.
# CASE defaults to kernel-vmap-ram (others: kernel-vread, kernel-seek,
# kernel-coredump, kernel-lock, kernel-kunit, or any tests/vm case such as
# info-kcore);
# ARGs go to the guest script.  --patches DIR builds the series in DIR
# (build.sh --patches); --5lvl, --icount (guest time = instructions),
# --mem and --append (kernel command line, repeatable; kernel-vread gets
# vsyscall=emulate) go to tests/vm/run.sh.
# kcoredump
# and kcore-read for the guest come from $KCOREDUMP_BUILD (default
# /tmp/kbuild-kcd, built here with cmake if missing).  Exit status is
# run.sh's (0 pass, 1 fail, 77 skip).  The results directory gets
# kernel-image (the bzImage booted) and kernel-config-sum (the sha256 of
# the one config build.sh checked it was built with, and that config's
# path).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/lib/shell.sh
source "$top/tests/lib/shell.sh"
kcd_trap_errors
variant=--stock
base=(--base 6.12)
prebuilt=
upto=()
debug=()
patches=()
vmopts=()
append=
results=
case_name=kernel-vmap-ram
case_args=()
timeout_s=${KCOREDUMP_VM_TIMEOUT:-300}

while [[ $# -gt 0 ]]; do
	case "$1" in
	--stock|--patched) variant=$1; shift ;;
	--base) base=(--base "$2"); shift 2 ;;
	--kernel) prebuilt=$2; shift 2 ;;
	--upto) upto=(--upto "$2"); shift 2 ;;
	--debug) debug=(--debug); shift ;;
	--patches) patches=(--patches "$2"); shift 2 ;;
	--5lvl) vmopts+=(--5lvl); shift ;;
	--icount) vmopts+=(--icount "$2"); shift 2 ;;
	--mem) vmopts+=(--mem "$2"); shift 2 ;;
	--append) append+=" $2"; shift 2 ;;
	--results) results=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	-h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

if [[ -n "$prebuilt" ]]; then
	[[ -f "$prebuilt" && -e "$(dirname "$prebuilt")/../../../.config" ]] ||
		{ echo "test.sh: --kernel $prebuilt is not a bzImage in a build.sh O= directory" >&2; exit 2; }
	bz=$(cd "$(dirname "$prebuilt")" && pwd)/$(basename "$prebuilt")
else
	bz=$("$here/build.sh" "${base[@]}" "$variant" ${upto[@]+"${upto[@]}"} ${debug[@]+"${debug[@]}"} \
		${patches[@]+"${patches[@]}"} | tail -n 1)
fi
kdir=$(dirname "$(dirname "$(dirname "$(dirname "$bz")")")")

# The module, built out of tree into a per-kernel copy of kernel/test, and
# the guest's programs beside it: built under a per-kernel lock (two runs
# on one kernel at once, e.g. bench/kernel-ab.sh's two clocks, would write
# the same files), then copied for this run alone.
mdir=$kdir/kcore_test
mkdir -p "$mdir"
exec {mlock}> "$kdir/.kcore_test.lock"
flock "$mlock"
cp "$here/test/kcore_test.c" "$here/test/vmalloc_lat.c" "$here/test/Makefile" "$mdir/"
make -s -C "$kdir" M="$mdir" modules >&2
chmod +x "$mdir/kcore_test.ko" "$mdir/vmalloc_lat.ko"   # run.sh --tool wants executables
gcc -O2 -Wall -static -o "$mdir/kcore-seek" "$here/test/kcore-seek.c"
gcc -O2 -Wall -static -o "$mdir/kcore-vread" "$here/test/kcore-vread.c"
# crash-shapes: nolibc from the same tree, for deterministic process memory
nolibc=$kdir/source/tools/include/nolibc
gcc -O2 -Wall -static -nostdlib -fno-stack-protector \
	-fno-asynchronous-unwind-tables -include "$nolibc/nolibc.h" \
	-I "$nolibc" -o "$mdir/crash-shapes" "$here/test/crash-shapes.c" -lgcc
# the host check's core checker (kernel-coredump)
gcc -O2 -Wall -o "$mdir/corecheck" "$here/test/corecheck.c"
# the coredump socket server of kernel-coredump's SHAPE:sock
gcc -O2 -Wall -static -o "$mdir/coresock" "$here/test/coresock.c"
tools=(--tool "$mdir/corecheck")
# The series' selftests, from the tree just built; on stock, from the
# stock tree with the series' selftest hunks applied (to show them fail
# there); with --kernel, from the tree with those of the hunks applied that
# it lacks (the tree may be in another state than the kernel was built in).
st=$kdir/source/tools/testing/selftests
if [[ "$variant" == --stock || -n "$prebuilt" ]]; then
	sdir=$mdir/selftests
	rm -rf "$sdir"
	mkdir -p "$sdir/tools/testing/selftests"
	for f in kselftest_harness.h kselftest.h proc coredump; do
		[[ ! -e "$st/$f" ]] || cp -r "$st/$f" "$sdir/tools/testing/selftests/"
	done
	# the coredump socket's uapi header, which the series extends
	mkdir -p "$sdir/include/uapi/linux"
	cp "$kdir/source/include/uapi/linux/coredump.h" "$sdir/include/uapi/linux/"
	git -C "$sdir" init -q
	case "${base[1]}" in
	7.3) sp=("$here"/patches-7.3/*/[0-9][0-9][0-9][1-9]-*.patch) ;;
	*) sp=("$here"/patches/[0-9][0-9][0-9][1-9]-*.patch) ;;
	esac
	# (hunks already there are left as they are)
	for p in "${sp[@]}"; do
		inc=(--include='tools/testing/selftests/*' --include='include/uapi/linux/coredump.h')
		if (cd "$sdir" && git apply "${inc[@]}" --check "$p") 2>/dev/null; then
			(cd "$sdir" && git apply "${inc[@]}" "$p")
		elif ! (cd "$sdir" && git apply "${inc[@]}" -R --check "$p") 2>/dev/null; then
			echo "test.sh: the selftest hunks of $p do not apply to stock" >&2
			exit 1
		fi
	done
	st=$sdir/tools/testing/selftests
	uapi_coredump=$sdir/include/uapi/linux/coredump.h
else
	uapi_coredump=$kdir/source/include/uapi/linux/coredump.h
fi
if [[ -e "$st/proc/proc-kcore-seek.c" ]]; then
	gcc -O2 -Wall -static -I "$st" -o "$mdir/proc-kcore-seek" "$st/proc/proc-kcore-seek.c"
	tools+=(--tool "$mdir/proc-kcore-seek")
else
	rm -f "$mdir/proc-kcore-seek"
fi
# and the coredump selftest of 7.3's posting 3 (kernel-selftest)
if [[ -e "$st/coredump/coredump_holes_test.c" ]]; then
	gcc -O2 -Wall -static -I "$st" -o "$mdir/coredump_holes_test" \
		"$st/coredump/coredump_holes_test.c"
	tools+=(--tool "$mdir/coredump_holes_test")
else
	rm -f "$mdir/coredump_holes_test"
fi
# and of posting 4: with the tree's (or the series') linux/coredump.h alone,
# not the host's (its linux-libc-dev may predate the coredump socket)
if [[ -e "$st/coredump/coredump_socket_holes_test.c" ]]; then
	mkdir -p "$mdir/uapi/linux"
	cp "$uapi_coredump" "$mdir/uapi/linux/coredump.h"
	gcc -O2 -Wall -static -I "$st" -I "$mdir/uapi" -o "$mdir/coredump_socket_holes_test" \
		"$st/coredump/coredump_socket_holes_test.c"
	tools+=(--tool "$mdir/coredump_socket_holes_test")
else
	rm -f "$mdir/coredump_socket_holes_test"
fi
priv=$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-kernel-tools.XXXXXX")
trap 'rm -rf "$priv"' EXIT
cp -a "$mdir/." "$priv/"
exec {mlock}>&-
tools=("${tools[@]/#"$mdir"/"$priv"}")
mdir=$priv

# kernel-vread reads the vsyscall page after the module segment: it must be
# mapped (vsyscall=emulate; the default xonly mode maps nothing there, and
# every kernel's read of it fails with EFAULT)
[[ "$case_name" != kernel-vread || "$append" == *vsyscall=* ]] ||
	append+=" vsyscall=emulate"
[[ -z "$append" ]] || vmopts+=(--append "${append# }")
[[ -n "$results" ]] || results=$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-kernel.XXXXXX")
rc=0
"$top/tests/vm/run.sh" --kernel "$bz" --kcoredump "$kcd/kcoredump" \
	--tool "$kcd/tests/tools/kcore-read" --tool "$mdir/kcore_test.ko" \
	--tool "$mdir/kcore-seek" --tool "$mdir/crash-shapes" --tool "$mdir/kcore-vread" \
	--tool "$mdir/vmalloc_lat.ko" --tool "$mdir/coresock" ${tools[@]+"${tools[@]}"} ${vmopts[@]+"${vmopts[@]}"} \
	--timeout "$timeout_s" --results "$results" \
	"$top/tests/vm/cases/$case_name.sh" ${case_args[@]+"${case_args[@]}"} || rc=$?
# which kernel and config this was (bench/kernel-ab.sh compares the configs)
echo "$bz" > "$results/kernel-image"
if [[ -s "$kdir/.kcoredump-config-sum" ]]; then
	cp "$kdir/.kcoredump-config-sum" "$results/kernel-config-sum"
else
	echo "none: $kdir was built before build.sh checked its config" > "$results/kernel-config-sum"
fi
exit $rc
