#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: kcoredump pid on a pidtarget that is killed while its 64 MiB area
# is being copied (the core goes to a pipe that is read only after the
# kill): on the real kernel the dump must exit 7 (incomplete) and list the
# unread ranges.  Needs --tool build/tests/tools/pidtarget.
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
	head -c 1048576 > /dev/null
	read -r _ < /tmp/pk.go
	cat > /dev/null
} &
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
