#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: kcoredump pid on a pidtarget that is killed while its 64 MiB area
# is being copied (the core goes to a pipe that is read only after the
# kill): on the real kernel the dump must exit 7 (incomplete), list the
# unread ranges, and the core must say so (info, verify exit 7).  Needs --tool build/tests/tools/pidtarget.
# pid-killed.host.sh checks the results.
set -eu
command -v pidtarget > /dev/null || { echo "pidtarget is not on PATH (--tool)"; exit 1; }
mkfifo /tmp/pk.in /tmp/pk.go
pidtarget --dense 64 --sparse 0 --threads 2 < /tmp/pk.in > /tmp/pk.out 2>&1 &
pid=$!
exec 3> /tmp/pk.in
i=0
until grep -q '^ready' /tmp/pk.out; do
	i=$((i + 1))
	[ "$i" -lt 300 ] || { echo "pidtarget did not start"; exit 1; }
	sleep 0.1
done
(
	rc=0
	"$KCOREDUMP" pid "$pid" -o - -T 1 --block-size 1M --json \
		2> "$OUT/summary.json" || rc=$?
	echo "$rc" > "$OUT/pid.rc"
) | {
	# dd takes whole reads of the pipe (never more than the core's
	# first MiB), so the kept core is the one written.
	dd bs=65536 count=16 2> /dev/null
	read -r _ < /tmp/pk.go
	cat
} > /tmp/pk.core &
reader=$!
sleep 3
kill -9 "$pid"
# The target's SIGCHLD can interrupt the open of the FIFO (busybox ash
# does not restart it): try again.
until echo go 2> /dev/null > /tmp/pk.go; do sleep 0.1; done
wait "$reader"
# The status is written just after the core's last byte went through.
i=0
until [ -s "$OUT/pid.rc" ] || [ "$i" -ge 100 ]; do
	i=$((i + 1))
	sleep 0.1
done
echo "kcoredump pid of a target killed mid-dump: exit $(cat "$OUT/pid.rc")"
# The core records it: info names the unread bytes, verify exits 7.
"$KCOREDUMP" info --json /tmp/pk.core > "$OUT/info.json" 2>&1 || true
rc=0
"$KCOREDUMP" verify -q /tmp/pk.core || rc=$?
echo "$rc" > "$OUT/verify.rc"
rm -f /tmp/pk.core
