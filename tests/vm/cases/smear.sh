#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the smear of a live acquisition (issue 51).  `dirtier` keeps 16
# locked pages changing every millisecond (their physical addresses in
# dirty-pages) and a busybox workload rewrites a tmpfs file; meanwhile
# `kcoredump dump --smear-check` takes the RAM (the default selection, in
# the default volatile-first order) to the share with a record, and
# `kcoredump verify --live` compares that dump with the live kernel.  smear.host.sh finds every page of the buffer
# among the changed pages the report lists, reads their read time back
# (`info --read-time`), and prints the changed fraction (the bench row of
# bench/results/smear.md).
set -eu

up() { cut -d' ' -f1 /proc/uptime; }
rm -f "$OUT/dirty-pages"
dirtier 16 "$OUT/dirty-pages" > "$OUT/dirtier.log" 2>&1 &
dirty=$!
# A busybox workload: 1 MiB of tmpfs rewritten over and over.
(while :; do dd if=/dev/urandom of=/tmp/load bs=64k count=16 2> /dev/null; done) &
load=$!
i=0
while [ ! -s "$OUT/dirty-pages" ] && [ "$i" -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -s "$OUT/dirty-pages" ] || { echo "not ok - dirtier gave no addresses: $(cat "$OUT/dirtier.log")"; exit 1; }

# The limit follows the RAM to read twice: 120 s and 2 s per MiB.
lim=$((120 + 2 * $(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)))
t0=$(up)
rc=0
timeout "$lim" "$KCOREDUMP" dump --smear-check -o "$OUT/smear.elf" --json \
	--record "$OUT/smear-record.json" > "$OUT/smear.json" 2> "$OUT/smear.stderr" || rc=$?
t1=$(up)
echo "dump --smear-check: exit $rc in $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s"
cat "$OUT/smear.stderr"
[ "$rc" -ne 143 ] || { echo "not ok - kcoredump dump --smear-check timed out after $lim s"; exit 1; }
[ "$rc" -eq 0 ] || { echo "not ok - kcoredump dump --smear-check exited $rc"; exit 1; }
# verify --live: the dump against the live kernel, the dirtier still at
# work (exit 3: pages changed).
rc=0
timeout "$lim" "$KCOREDUMP" verify --live --json "$OUT/smear.elf" \
	> "$OUT/verify-live.json" 2> "$OUT/verify-live.stderr" || rc=$?
echo "$rc" > "$OUT/verify-live.rc"
echo "verify --live: exit $rc in $(awk -v a="$t1" -v b="$(up)" 'BEGIN { print b - a }') s"
cat "$OUT/verify-live.stderr"
kill "$dirty" "$load" 2> /dev/null || true
[ "$rc" -eq 3 ] || { echo "not ok - kcoredump verify --live exited $rc, not 3"; exit 1; }
"$KCOREDUMP" dump -q --smear-check -o "$OUT/text.elf" --segments text > "$OUT/text.out" 2>&1 || {
	echo "not ok - dump --smear-check --segments text: $(cat "$OUT/text.out")"
	exit 1
}
echo "ok - dump --smear-check of RAM and of the kernel text, verify --live"
