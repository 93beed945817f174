#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: let the kernel write real process cores of the helper programs
# (dense: anon + file mapping + 3 threads; sparse: 64 GiB NORESERVE with 4
# touched pages).  Cores go to tmpfs first, then sparsecp keeps their holes
# on the 9p share; process-cores.host.sh checks them.
set -eu

mkdir -p /tmp/cores "$OUT/cores"
echo '/tmp/cores/core.%p' > /proc/sys/kernel/core_pattern
# shellcheck disable=SC3045 # busybox ash has ulimit -c
ulimit -c unlimited

up() { cut -d' ' -f1 /proc/uptime; }

for h in crash-dense crash-sparse; do
	t0=$(up)
	rc=0
	"$h" "$OUT/$h.txt" || rc=$?
	t1=$(up)
	pid=$(awk '$1 == "pid" { print $2 }' "$OUT/$h.txt")
	echo "$h: exit $rc, dump took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s" |
		tee -a "$OUT/dump-times"
	# 134 = 128 + SIGABRT
	[ "$rc" -eq 134 ] || { echo "$h: expected exit 134, got $rc"; exit 1; }
	[ -f "/tmp/cores/core.$pid" ] || { echo "$h: no core /tmp/cores/core.$pid"; exit 1; }
	ls -ls "/tmp/cores/core.$pid"
	# kcoredump in the guest reads the kernel's own file on tmpfs (9p has
	# no SEEK_DATA/SEEK_HOLE, so the copy on the share would be all data).
	"$KCOREDUMP" info --json "/tmp/cores/core.$pid" > "$OUT/$h.guest-info.json" ||
		echo "$h: kcoredump info in the guest failed (host check will tell)"
	sparsecp "/tmp/cores/core.$pid" "$OUT/cores/$h.core"
	rm -f "/tmp/cores/core.$pid"
done
# The file the dense helper mapped, for the host to compare with NT_FILE.
ls /tmp/kc-dense-file.* > "$OUT/dense-files"
