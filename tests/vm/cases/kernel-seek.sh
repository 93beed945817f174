#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: SEEK_DATA/SEEK_HOLE on /proc/kcore (kernel/patches/0002).  Needs
# --tool kcore-seek (kernel/test/kcore-seek.c, static) and --tool
# kcore_test.ko; kernel/test.sh passes both.  Records the extents, the
# vmallocinfo (real addresses: kptr_restrict=1) before and after, the
# segments (kcoredump info --json), samples holes for zeros, reads the test
# module's areas through kcore and runs kcoredump dump --vmalloc-range.
# The host check (kernel-seek.host.sh) compares.
set -eu

if [ -e /tools/kcore_test.ko ]; then insmod /tools/kcore_test.ko; fi
echo 1 > /proc/sys/kernel/kptr_restrict
p=/sys/module/kcore_test/parameters
for a in ram ram2 vmalloc vmap big gapa gapc tail huge; do
	[ -e "$p/${a}_addr" ] && [ "$(cat "$p/${a}_addr")" != 0 ] &&
		printf '%s 0x%x\n' "$a" "$(cat "$p/${a}_addr")"
done > "$OUT/test-areas"
[ ! -e "$p/gapb_addr" ] || printf "0x%x\n" "$(cat "$p/gapb_addr")" > "$OUT/gap"
"$KCOREDUMP" info --json /proc/kcore > "$OUT/info.json"
cat /proc/vmallocinfo > "$OUT/vmallocinfo.before"
kcore-seek > "$OUT/extents"
cat /proc/vmallocinfo > "$OUT/vmallocinfo.after"
tail -n 1 "$OUT/extents"
rc=0
# the series' selftest (tools/testing/selftests/proc/proc-kcore-seek.c)
if command -v proc-kcore-seek > /dev/null; then
	proc-kcore-seek > "$OUT/selftest" 2>&1 || rc=1
	tail -n 3 "$OUT/selftest"
else
	echo "proc-kcore-seek not given (kernel/test.sh builds it from the patched tree)"
	rc=1
fi
kcore-seek --check-holes > "$OUT/holes" || rc=1
grep -E '^hole-' "$OUT/holes" | head -n 20
# Races: enumerate while other processes come and go (their kernel stacks
# are vmalloc areas) and the test module is unloaded and reloaded.
churn() { while :; do sh -c 'cat /proc/vmallocinfo > /dev/null'; done; }
churn & c1=$!
churn & c2=$!
i=0 serr=0
while [ $i -lt 20 ]; do
	kcore-seek > /tmp/ext.$i 2>&1 || serr=$((serr + 1))
	if [ $i = 10 ] && [ -e /sys/module/kcore_test ]; then
		rmmod kcore_test && insmod /tools/kcore_test.ko
	fi
	i=$((i + 1))
done
kill $c1 $c2
wait $c1 $c2 2>/dev/null || true
echo "stress: 20 enumerations under churn, $serr failed" | tee "$OUT/stress"
[ $serr = 0 ] || rc=1
dmesg | grep -E 'BUG:|WARNING:|Oops|Call Trace|lockdep' && rc=1
"$KCOREDUMP" dump --allow-ram-output --vmalloc-range -o /tmp/v.elf --json > "$OUT/dump-vmalloc.json" 2> "$OUT/dump-vmalloc.err" || rc=1
grep -o '"seek_data": *[a-z]*' "$OUT/dump-vmalloc.json" || true
exit $rc
