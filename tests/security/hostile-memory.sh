#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 10 (readers of kdump files): memory follows what the file
# holds.  A kdump whose bitmaps claim 4 GiB but hold one page (a sparse
# file of a few KB) made info allocate 2.1 GB and read 4 GiB of holes.
# Now bitmap 2 is kept as the chunks with bits set and holes are skipped:
# peak RSS under 200 MB, seconds.  (The .zst frame that claims 1 GiB is
# issue 17's, src/lib/stream/stream-reader.c.)
#   hostile-memory.sh KCOREDUMP HOSTILE-PY
set -uo pipefail
kcoredump=$1 gen=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

"$PY" "$gen" sparse-kdump 4 "$tmp/sparse.kdump"
check "the file: $(du -k "$tmp/sparse.kdump" | cut -f1) KB on disk, $(stat -c %s "$tmp/sparse.kdump") bytes apparent" \
	[ "$(du -k "$tmp/sparse.kdump" | cut -f1)" -lt 1024 ]
for cmd in "info" "cat --phys --addr $((12345 * 4096)) --len 16 --raw"; do
	# shellcheck disable=SC2086 # cmd is words
	/usr/bin/time -f "%e %M" -o "$tmp/time" timeout -k 5 120 "$kcoredump" $cmd "$tmp/sparse.kdump" \
		> "$tmp/out" 2>"$tmp/err"
	rc=$?
	read -r sec kb < <(tail -n 1 "$tmp/time")
	check "$cmd: exit $rc in $sec s, peak RSS $kb KB (< 200 MB)" \
		[ "$rc" -eq 0 -a "${kb:-9999999}" -lt 204800 ] && [ "$(echo "${sec:-999} < 60" | bc)" = 1 ]
done
check "the one page reads back" bash -c "[ \"\$(head -c 16 '$tmp/out')\" = BBBBBBBBBBBBBBBB ]"
finish
