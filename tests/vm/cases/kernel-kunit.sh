#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the KUnit suites built into the kernel (CONFIG_KUNIT=y,
# kernel/kcoredump-7.3.config) ran at boot; their TAP is in the kernel log.
#
#   kernel-kunit [SUITE...]      (default: vread)
#
# Each SUITE named must have run and passed ("ok N SUITE" at the top level
# of KUnit's TAP); a suite that did not run at all (not built in, or KUnit
# off) fails, so the case cannot pass on a kernel without the test.  The
# vread suite is posting 1's test of vread_iter() on vm_map_ram() areas
# (kernel/patches-7.3/1-*): it fails on stock 7.3 with only the test
# applied, and passes with the fix (kernel/README.md).
set -eu

[ $# -gt 0 ] || set -- vread
dmesg > "$OUT/dmesg" 2>&1 || { echo "not ok - cannot read the kernel log"; exit 1; }
# KUnit's own lines, for the log
# (a timestamp first with CONFIG_PRINTK_TIME)
ts='^(\[[ 0-9.]+\] )?'
grep -E "${ts}(KTAP|# |ok |not ok |    )" "$OUT/dmesg" > "$OUT/kunit.tap" || true
fail=0
for s in "$@"; do
	if grep -qE "${ts}ok [0-9]+ $s\$" "$OUT/dmesg"; then
		echo "ok - KUnit suite $s passed"
	elif grep -qE "${ts}not ok [0-9]+ $s\$" "$OUT/dmesg"; then
		echo "not ok - KUnit suite $s failed:"
		grep -E "${ts} *(# |not ok )" "$OUT/dmesg" | head -n 40 | sed 's/^/#   /'
		fail=1
	else
		echo "not ok - KUnit suite $s did not run (not built in?)"
		fail=1
	fi
done
exit "$fail"
