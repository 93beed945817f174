#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: kcoredump core-handler as the kernel's core_pattern pipe.  The
# helpers crash (crash-dense: 3 threads, anon + file data; crash-sparse:
# GIB (the argument, default 2) GiB NORESERVE, 4 touched pages) three ways:
#   handler  |kcoredump core-handler ... (installed with --install)
#   file     the kernel's own regular-file core of the same program (ASLR
#            off, so the layout is the same)
#   tee      |coretee RAW kcoredump core-handler ...: the very stream the
#            handler read, kept raw, compared byte for byte in the guest
# core-handler.host.sh runs gdb, eu-stack and the pattern checks on the host.
set -eu

# Under TCG the kernel pushes zero pages into a pipe at tens of MB/s: 64 GiB
# would take half an hour, so the rig's default is smaller (bench/ runs 64).
GIB=${1:-2}
HT=$((300 + GIB * 60)) # the handler's --timeout
K=$KCOREDUMP
mkdir -p /tmp/kc /tmp/kc2 /tmp/raw /tmp/file "$OUT/cores"
chmod 700 /tmp/kc /tmp/kc2
# shellcheck disable=SC3045 # busybox ash has ulimit -c
ulimit -c unlimited
echo 0 > /proc/sys/kernel/randomize_va_space
cp /helpers/crash-dense /helpers/crash-sparse "$OUT/"

up() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(up)" 'BEGIN { printf "%.3f", b - a }'; }

# Wait (bounded) for the handler to publish the metadata of pid $2 in $1.
wait_meta() {
	i=0
	while [ $i -lt 600 ]; do
		for m in "$1"/core.*."$2".*.json; do
			[ -f "$m" ] && { echo "$m"; return 0; }
		done
		sleep 0.2
		i=$((i + 1))
	done
	echo "no metadata for pid $2 in $1" >&2
	return 1
}

crash() { # NAME DESC -> sets pid, secs
	t0=$(up)
	rc=0
	if [ "$1" = crash-sparse ]; then
		"$1" "$2" "$GIB" || rc=$?
	else
		"$1" "$2" || rc=$?
	fi
	secs=$(since "$t0")
	pid=$(awk '$1 == "pid" { print $2 }' "$2")
	[ "$rc" -eq 134 ] || { echo "$1: expected exit 134, got $rc"; exit 1; }
}

# --- 1. the handler, installed by itself ------------------------------------
"$K" core-handler --dir /tmp/kc --timeout $HT --print-pattern > "$OUT/pattern.txt"
"$K" core-handler --dir /tmp/kc --timeout $HT --install > "$OUT/installed.txt"
cat /proc/sys/kernel/core_pattern > "$OUT/core_pattern.txt"
for h in crash-dense crash-sparse; do
	crash "$h" "$OUT/$h.handler.txt"
	meta=$(wait_meta /tmp/kc "$pid")
	core=${meta%.json}
	echo "$h handler_s $secs" >> "$OUT/times"
	cp "$meta" "$OUT/$h.handler.json"
	# Allocated bytes on tmpfs (stat %b blocks of %B bytes) and the size.
	stat -c "%b %B %s" "$core" > "$OUT/$h.handler.stat"
	"$K" info --json "$core" > "$OUT/$h.guest-info.json" ||
		echo "$h: info in the guest failed"
	sparsecp "$core" "$OUT/cores/$h.stored"
done
"$K" list --dir /tmp/kc --json > "$OUT/list.json"
"$K" list --dir /tmp/kc > "$OUT/list.txt"

# --- 1b. the sparse crash again with --no-pagemap: every zero copied out of
# the pipe and looked at (at most 8 GiB of it: that is the slow way)
NOPM=$GIB
[ "$NOPM" -le 8 ] || NOPM=8
"$K" core-handler --dir /tmp/kc2 --timeout $HT --no-pagemap --install > /dev/null
t0=$(up)
rc=0
crash-sparse "$OUT/crash-sparse.nopm.txt" "$NOPM" || rc=$?
[ "$rc" -eq 134 ] || { echo "crash-sparse --no-pagemap: expected exit 134, got $rc"; exit 1; }
echo "crash-sparse nopm_s $(since "$t0")" >> "$OUT/times"
echo "nopm_gib $NOPM" >> "$OUT/times"
pid=$(awk '$1 == "pid" { print $2 }' "$OUT/crash-sparse.nopm.txt")
meta=$(wait_meta /tmp/kc2 "$pid")
cp "$meta" "$OUT/crash-sparse.nopm.json"
sparsecp "${meta%.json}" "$OUT/cores/crash-sparse.nopm"
rm -f "${meta%.json}" "$meta"

# --- 2. the kernel's regular-file core of the same programs ------------------
echo '/tmp/file/core.%p' > /proc/sys/kernel/core_pattern
for h in crash-dense crash-sparse; do
	crash "$h" "$OUT/$h.file.txt"
	echo "$h file_s $secs" >> "$OUT/times"
	stat -c "%b %B %s" "/tmp/file/core.$pid" > "$OUT/$h.file.stat"
	sparsecp "/tmp/file/core.$pid" "$OUT/cores/$h.file"
	rm -f "/tmp/file/core.$pid"
done

# --- 3. the same stream kept raw beside the handler -------------------------
for c in none zstd; do
	echo "|/helpers/coretee /tmp/raw/raw.%p /tools/kcoredump core-handler --dir /tmp/kc2 --compress $c %P %u %g %s %t %e" \
		> /proc/sys/kernel/core_pattern
	crash crash-dense "$OUT/tee-$c.txt"
	meta=$(wait_meta /tmp/kc2 "$pid")
	core=$(awk -F'"' '$2 == "core" { print $4 }' "$meta")
	cp "$meta" "$OUT/tee-$c.json"
	if [ "$c" = zstd ]; then
		"$K" extract -q "/tmp/kc2/$core" -o /tmp/kc2/extracted
		core=extracted
	fi
	if cmp "/tmp/raw/raw.$pid" "/tmp/kc2/$core"; then
		echo "tee-$c SAME" >> "$OUT/tee-results"
	else
		echo "tee-$c DIFFER" >> "$OUT/tee-results"
	fi
	rm -f "/tmp/raw/raw.$pid" /tmp/kc2/extracted
done

# --- 3b. page tables that change during the dump (1 GiB) ------------------
# late: a page appears (process_vm_writev from another process) where the
# handler's first look at the page tables found none and the kernel has
# not come yet; the stored core must still equal the raw stream and hold
# it.  sharer: another process shares the memory, so the page tables are
# not used at all.
echo "|/helpers/coretee /tmp/raw/raw.%p /tools/kcoredump core-handler --dir /tmp/kc2 --timeout $HT %P %u %g %s %t %e" \
	> /proc/sys/kernel/core_pattern
# tee_crash NAME GIB MODE [keep]: crash-sparse through coretee and the
# handler; its metadata as NAME.json, "NAME SAME|DIFFER" (stored core vs
# raw stream) in tee-results, with keep the stored core in cores/.
tee_crash() {
	rc=0
	crash-sparse "$OUT/$1.txt" "$2" "$3" || rc=$?
	[ "$rc" -eq 134 ] || { echo "crash-sparse $3: expected exit 134, got $rc"; exit 1; }
	pid=$(awk '$1 == "pid" { print $2 }' "$OUT/$1.txt")
	meta=$(wait_meta /tmp/kc2 "$pid")
	cp "$meta" "$OUT/$1.json"
	core=${meta%.json}
	r=DIFFER
	cmp "/tmp/raw/raw.$pid" "$core" && r=SAME
	echo "$1 $r" >> "$OUT/tee-results"
	[ $# -lt 4 ] || sparsecp "$core" "$OUT/cores/$1.stored"
	rm -f "/tmp/raw/raw.$pid" "$core"
}
tee_crash late 1 late keep
tee_crash sharer 1 sharer
kill -9 "$(awk '$1 == "sharer" { print $2 }' "$OUT/sharer.txt")" 2>/dev/null || true

# --- 4. the baseline: the kernel writing the same stream into a pipe that
# a reader drains with splice(2), no copy: what any pipe handler must wait
echo '|/helpers/drain /tmp/drain.out' > /proc/sys/kernel/core_pattern
crash crash-sparse "$OUT/crash-sparse.drain.txt"
i=0
while [ ! -s /tmp/drain.out ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
echo "crash-sparse drain_s $secs" >> "$OUT/times"
echo "crash-sparse drain $(cat /tmp/drain.out)" >> "$OUT/times"

# --- 5. a stalled pipe: the timeout ends the handler ------------------------
head -c 65536 "/tmp/kc/$(awk -F'"' '$2 == "core" { print $4 }' "$OUT/crash-dense.handler.json")" > /tmp/head.core
t0=$(up)
rc=0
(cat /tmp/head.core; sleep 8) | "$K" core-handler --dir /tmp/kc2 --timeout 2 1 0 0 6 1 stalled || rc=$?
echo "stalled rc $rc secs $(since "$t0")" > "$OUT/stalled.txt"
cp /tmp/kc2/core.stalled.*.json "$OUT/stalled.json" 2>/dev/null || true
echo "sparse_gib $GIB" >> "$OUT/times"
echo 'core' > /proc/sys/kernel/core_pattern
echo 'all done'
