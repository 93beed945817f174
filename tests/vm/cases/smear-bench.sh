#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the smear bench of issue 51 (bench/results/smear.md), one boot:
# under the same load, `kcoredump dump --smear-check` of the RAM in the
# default order (volatile-first on the live kernel) and then with
# --read-order address, each to /dev/null with its record on the share.
# stress-ng is not in the busybox initramfs (Debian's is linked against
# a dozen shared libraries), so the load is busybox's: two memory
# workers rewriting 8 MiB of tmpfs each from /dev/urandom, two fork
# workers starting `true` over and over, and `dirtier` (16 locked pages
# rewritten every millisecond).  smear-bench.host.sh prints the rows.
set -eu

up() { cut -d' ' -f1 /proc/uptime; }
pids=
dirtier 16 "$OUT/dirty-pages" > "$OUT/dirtier.log" 2>&1 &
pids="$pids $!"
for w in 1 2; do
	(while :; do dd if=/dev/urandom of=/tmp/mem$w bs=64k count=128 2> /dev/null; done) &
	pids="$pids $!"
	(while :; do true; /bin/true; done) &
	pids="$pids $!"
done
sleep 2
lim=$((120 + 2 * $(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)))
rc=0
for order in volatile-first address; do
	t0=$(up)
	# The default order first: no --read-order for it.
	opt=
	[ "$order" = address ] && opt="--read-order address"
	# shellcheck disable=SC2086 # opt is empty or two words
	timeout "$lim" "$KCOREDUMP" dump -q --smear-check $opt -o - \
		--record "$OUT/$order-record.json" > /dev/null \
		2> "$OUT/$order.stderr" || rc=$?
	echo "dump --smear-check ($order): exit $rc in $(awk -v a="$t0" -v b="$(up)" 'BEGIN { print b - a }') s"
	cat "$OUT/$order.stderr"
	[ "$rc" -eq 0 ] || break
done
# shellcheck disable=SC2086 # a list of pids
kill $pids 2> /dev/null || true
[ "$rc" -eq 0 ] || { echo "not ok - kcoredump dump --smear-check exited $rc"; exit 1; }
echo "ok - dump --smear-check in both orders under load"
