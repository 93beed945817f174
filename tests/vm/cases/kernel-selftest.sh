#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: run kselftests the series adds, built static from the kernel tree
# by kernel/test.sh and passed with --tool:
#
#   kernel-selftest NAME...      (e.g. proc-kcore-seek coredump_holes_test)
#
# Each must exist and exit 0; a skip (exit 4, KSFT_SKIP) counts as a
# failure here, since the rig provides what they need (root, tmpfs /tmp).
set -eu
[ $# -gt 0 ] || { echo "not ok - no selftest named"; exit 1; }
uname -r > "$OUT/uname"
fail=0
for t in "$@"; do
	if [ ! -x "/tools/$t" ]; then
		echo "not ok - $t: not built (is it in this kernel tree?)"
		fail=1
		continue
	fi
	rc=0
	"/tools/$t" > "$OUT/$t.tap" 2>&1 || rc=$?
	sed 's/^/#   /' "$OUT/$t.tap"
	if [ "$rc" -eq 0 ]; then
		echo "ok - $t"
	else
		echo "not ok - $t: exit $rc"
		fail=1
	fi
done
exit "$fail"
