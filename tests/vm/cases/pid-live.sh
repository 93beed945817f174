#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: kcoredump pid on a live pidtarget (3 parked threads, 16 MiB dense,
# 64 GiB NORESERVE with 16 touched pages) on the real kernel, then the
# kernel's own core of the same process (SIGSEGV while it is still idle).
# Needs --tool build/tests/tools/pidtarget.  pid-live.host.sh compares them.
set -eu

# The sparse area in GiB (the argument): 64 by default; the arm64 tier
# takes 1, as its kernel walks the area page by page to write its own core
# and under TCG emulation that takes over 10 minutes for 64 GiB.
sparse=${1:-64}
echo "$sparse" > "$OUT/sparse-gib"
mkdir -p /tmp/cores
echo '/tmp/cores/core.%p' > /proc/sys/kernel/core_pattern
# shellcheck disable=SC3045 # busybox ash has ulimit -c
ulimit -c unlimited
command -v pidtarget > /dev/null || { echo "pidtarget is not on PATH (--tool)"; exit 1; }
mkfifo /tmp/pt.in
# Without rseq: the kernel rewrites each thread's rseq area (cpu_id,
# mm_cid) whenever a thread resumes on another CPU, which the dump itself
# causes, so two snapshots of an idle process would differ there.
GLIBC_TUNABLES=glibc.pthread.rseq=0 \
	pidtarget --dense 16 --sparse "$sparse" --touched 16 --threads 3 \
	< /tmp/pt.in > "$OUT/ready.txt" 2>&1 &
pid=$!
exec 3> /tmp/pt.in
i=0
until grep -q '^ready' "$OUT/ready.txt"; do
	i=$((i + 1))
	[ "$i" -lt 200 ] || { echo "pidtarget did not start"; exit 1; }
	sleep 0.1
done
# "ready" is printed just before the main thread blocks in fgets(): give
# it time to get there (stdin's buffer is set up on the way), so both
# cores see the same idle process.
sleep 2
"$KCOREDUMP" pid "$pid" -o /tmp/cores/ours.core --json > "$OUT/pid.json"
"$KCOREDUMP" pid "$pid" -o "$OUT/ours.core.zst" -q
kill -SEGV "$pid"
wait "$pid" || true
ls -ls /tmp/cores
# 9p has no SEEK_DATA/SEEK_HOLE: sparsecp keeps the holes on the share.
sparsecp /tmp/cores/ours.core "$OUT/ours.core"
sparsecp "/tmp/cores/core.$pid" "$OUT/kernel.core"
uname -r > "$OUT/kernel-release"
