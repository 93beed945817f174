#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: kernel-written cores of the crash-shapes test programs (kernel/test,
# pass it with --tool), timed, for comparing a stock and a patched kernel
# (kernel/coredump-ab.sh).  ASLR is off and the programs' memory is
# deterministic, so the cores of two kernels must be identical outside
# their notes.  Args: the shapes (default: all but sparse1t).
set -eu

command -v crash-shapes > /dev/null || {
	echo "crash-shapes not given (--tool, built by kernel/test.sh)"
	exit 1
}
shapes=${*:-dense sparse64g strided thp file shmem zeropage mt}

echo 0 > /proc/sys/kernel/randomize_va_space
mkdir -p /tmp/cores "$OUT/cores"
echo '/tmp/cores/core.%p' > /proc/sys/kernel/core_pattern
# shellcheck disable=SC3045 # busybox ash has ulimit -c
ulimit -c unlimited
uname -r > "$OUT/uname"
cd /tmp

: > "$OUT/dump-times"
for s in $shapes; do
	# one program per shape: the same parent memory for every shape
	crash-shapes "$s" | tee -a "$OUT/dump-times"
	pid=$(awk -v s="$s" '$1 == s { print $3 }' "$OUT/dump-times" | tail -n 1)
	[ -f "/tmp/cores/core.$pid" ] || { echo "$s: no core /tmp/cores/core.$pid"; exit 1; }
	ls -ls "/tmp/cores/core.$pid"
	sparsecp "/tmp/cores/core.$pid" "$OUT/cores/$s.core"
	rm -f "/tmp/cores/core.$pid" /tmp/kc-shape-file
done
dmesg | grep -E 'BUG|WARNING|Oops|lockdep|KASAN' > "$OUT/dmesg-bad" || true
