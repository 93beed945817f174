#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the smear bench of issue 51 (bench/results/smear.md), one boot:
# under the same load, `kcoredump dump --smear-check` of the RAM in the
# default order (volatile-first on the live kernel) and then with
# --read-order address, each to /dev/null with its record on the share,
# then LiME's acquisition of the same RAM to a FIFO that `drain` empties
# (insmod lime.ko ... digest=sha256: the anchor of bench/kcore.sh).
# The load: stress-ng's memory and fork workers (run.sh --stress-ng puts
# Debian's stress-ng and its libraries in the initramfs; --lime puts
# lime.ko in /tools) and `dirtier` (16 locked pages rewritten every
# millisecond).  smear-bench.host.sh prints the rows.
set -eu
command -v stress-ng > /dev/null || { echo "not ok - no stress-ng in the guest (run.sh --stress-ng)"; exit 1; }
[ -f /tools/lime.ko ] || { echo "not ok - no /tools/lime.ko in the guest (run.sh --lime)"; exit 1; }

up() { cut -d' ' -f1 /proc/uptime; }
pids=
dirtier 16 "$OUT/dirty-pages" > "$OUT/dirtier.log" 2>&1 &
pids="$pids $!"
# Two memory workers rewriting 32 MiB each, two workers forking.
load="stress-ng $(stress-ng --version | awk '{ print $3 }'): --vm 2 --vm-bytes 32M --vm-keep --fork 2"
echo "$load" > "$OUT/load"
# shellcheck disable=SC2086 # the options after the colon
stress-ng --temp-path /tmp ${load#*: } --timeout 0 > "$OUT/stress-ng.log" 2>&1 &
pids="$pids $!"
sleep 5
kill -0 $! || { echo "not ok - stress-ng did not start: $(tail -n 3 "$OUT/stress-ng.log")"; exit 1; }
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
# LiME under the same load: from insmod to the reader's end of file.
if [ "$rc" -eq 0 ]; then
	mkfifo /tmp/lime.fifo
	drain "$OUT/lime.drain" < /tmp/lime.fifo &
	rd=$!
	t0=$(up)
	insmod /tools/lime.ko path=/tmp/lime.fifo format=lime digest=sha256 || rc=$?
	wait "$rd" || rc=$?
	t1=$(up)
	rmmod lime || true
	echo "$(cut -d' ' -f1 "$OUT/lime.drain") $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" > "$OUT/lime.time"
	echo "LiME digest=sha256 to a FIFO: exit $rc, bytes and seconds $(cat "$OUT/lime.time")"
fi
# shellcheck disable=SC2086 # a list of pids
kill $pids 2> /dev/null || true
[ "$rc" -eq 0 ] || { echo "not ok - kcoredump dump --smear-check or LiME exited $rc"; exit 1; }
echo "ok - dump --smear-check in both orders and LiME under load"
