#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest (a kernel with kcoredump's 7.3 posting 4, COREDUMP_HOLES; e.g.
# kernel/test.sh --base 7.3 --patched core-socket-holes 64): kcoredump
# core-handler on the coredump socket ("@@", the request protocol) asks
# for the holes as records when the kernel offers them; crash-sparse (GIB
# GiB NORESERVE, 4 touched pages) and crash-dense crash into it, timed,
# then into the kernel's own core files (ASLR off: the same memory).
# core-socket-holes.host.sh checks the stored cores are the core files.
set -eu

GIB=${1:-64}
SOCK=/tmp/kcoredump.socket
mkdir -p /tmp/ks /tmp/file "$OUT/cores"
chmod 700 /tmp/ks
# shellcheck disable=SC3045 # busybox ash has ulimit -c
ulimit -c unlimited
echo 0 > /proc/sys/kernel/randomize_va_space
cp /helpers/crash-dense /helpers/crash-sparse "$OUT/"
uname -r > "$OUT/uname.txt"

# now_ms: the guest's monotonic clock (its uptime), in ms
now_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }
# crash NAME MODE: run NAME's program (exit 134 wanted), time it
crash() {
	rc=0 t0=$(now_ms)
	if [ "$1" = crash-sparse ]; then
		crash-sparse "$OUT/$2.$1.txt" "$GIB" || rc=$?
	else
		crash-dense "$OUT/$2.$1.txt" || rc=$?
	fi
	echo "$2 $1 ms $(($(now_ms) - t0))" >> "$OUT/times"
	[ "$rc" -eq 134 ] || { echo "$2 $1: expected exit 134, got $rc"; exit 1; }
}

# shellcheck source-path=SCRIPTDIR source=socket-lib.sh
. /cases/socket-lib.sh
start_listener /tmp/ks "$SOCK" "$OUT/listener.log"
echo "@@$SOCK" > /proc/sys/kernel/core_pattern
n=0
for h in crash-sparse crash-dense; do
	crash "$h" socket
	n=$((n + 1))
	i=0
	while [ "$(find /tmp/ks -maxdepth 1 -name 'core.*.json' | wc -l)" -lt $n ] && [ $i -lt 900 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	# shellcheck disable=SC2012 # our own names, no odd characters
	meta=$(ls -t /tmp/ks/core.*.json | head -n 1)
	cp "$meta" "$OUT/socket.$h.json"
	sparsecp "${meta%.json}" "$OUT/cores/socket.$h"
done
kill "$listener"
wait "$listener" || true

echo '/tmp/file/core.%p' > /proc/sys/kernel/core_pattern
for h in crash-sparse crash-dense; do
	crash "$h" file
	pid=$(awk '$1 == "pid" { print $2 }' "$OUT/file.$h.txt")
	sparsecp "/tmp/file/core.$pid" "$OUT/cores/file.$h"
	rm -f "/tmp/file/core.$pid"
done
echo core > /proc/sys/kernel/core_pattern
echo 'all done'
