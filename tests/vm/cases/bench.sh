#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: `kcoredump bench --json` on the live /proc/kcore, bounded to about
# 30 s (2 block sizes x 2 thread counts x 3 modes x 6 classes, at most
# 0.25 s or 8 MiB each), then a shorter text run for the log.  With
# kernel.kptr_restrict=1 /proc/vmallocinfo shows real addresses, so the
# vmalloc and module classes are the areas it lists.  bench.host.sh checks
# that every kernel class was measured.
set -eu

kptr=$(cat /proc/sys/kernel/kptr_restrict)
echo 1 > /proc/sys/kernel/kptr_restrict
rc=0
timeout 90 "$KCOREDUMP" bench --json --no-progress --block-size 64K,1M \
	--threads 1,2 --time 0.25 --limit 8M > "$OUT/bench.json" \
	2> "$OUT/bench.stderr" || rc=$?
echo "$rc" > "$OUT/bench.rc"
cat "$OUT/bench.stderr"
[ "$rc" -eq 0 ] || { echo "not ok - kcoredump bench --json exited $rc"; exit 1; }
rc=0
timeout 60 "$KCOREDUMP" bench --no-progress --block-size 1M --threads 1 \
	--time 0.25 --limit 16M > "$OUT/bench.txt" 2>&1 || rc=$?
cat "$OUT/bench.txt"
echo "$kptr" > /proc/sys/kernel/kptr_restrict
[ "$rc" -eq 0 ] || { echo "not ok - kcoredump bench exited $rc"; exit 1; }
