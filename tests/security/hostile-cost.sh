#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 9: cost follows the file, not its shape.  info on a
# 3.5 MB ELF with 65,000 PT_LOADs took 40 s (derive_page_offset compared
# every segment with every other); convert of a 72 KB kdump with 131k
# runs in bitmap 1 took 88 s, and of a LiME file with 131k ranges as
# long (first_copies: every output segment against every input segment;
# convert -n plans and prints the plan, without the writer's own
# per-segment work).
# Each shape runs at N = 131072 and at N/8: a quadratic step takes 64
# times as long, an n log n one about 8 times.  Bounds are loose for a
# loaded 2-CPU machine (and the asan build): the big run under 60 s (the
# code before took 2 to 3 minutes, now a second or two), the ratio under
# 32.
# bench/hostile.sh runs the same shapes at a million.
# Single shapes (issue 27) run once, bounded by 60 s and 200 MB.
#   hostile-cost.sh KCOREDUMP HOSTILE-PY
set -uo pipefail
kcoredump=$1 gen=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

secs() { # CMD...: wall seconds, or 999 on failure or after 180 s
	local t0 t1
	rm -f "$tmp"/out.*
	t0=$(date +%s%N)
	timeout -k 5 180 "$@" >/dev/null 2>"$tmp/err" || { echo 999; return; }
	t1=$(date +%s%N)
	echo "scale=3; ($t1 - $t0) / 1000000000" | bc
}
# shape NAME KIND N CMD...: CMD (with FILE for the input) at N and N/8.
shape() {
	local name=$1 kind=$2 n=$3 big small
	shift 3
	"$PY" "$gen" "$kind" "$n" "$tmp/$name.big"
	"$PY" "$gen" "$kind" $((n / 8)) "$tmp/$name.small"
	small=$(secs "${@//FILE/$tmp/$name.small}")
	big=$(secs "${@//FILE/$tmp/$name.big}")
	rm -f "$tmp"/out.*
	check "$name: N=$n in $big s, N/8 in $small s (ratio $(echo "scale=1; $big / ($small + 0.05)" | bc))" \
		[ "$(echo "$big < 60 && $big / ($small + 0.05) < 32" | bc)" = 1 ]
}
# once NAME RC CMD...: CMD ends with exit RC within 60 s and 200 MB, or is
# cut at 120 s.
once() {
	local name=$1 want=$2 rc sec kb
	shift 2
	/usr/bin/time -f "%e %M" -o "$tmp/time" timeout -k 5 120 "$@" \
		>/dev/null 2>"$tmp/err"
	rc=$?
	read -r sec kb < <(tail -n 1 "$tmp/time")
	check "$name: exit $rc (want $want) in ${sec:-?} s, peak RSS ${kb:-?} KB" \
		[ "$rc" -eq "$want" -a "${kb:-9999999}" -lt 204800 ] &&
		[ "$(echo "${sec:-999} < 60" | bc)" = 1 ]
}
shape "info of an ELF with many PT_LOADs" elf 131072 "$kcoredump" info FILE
shape "convert (the plan) of a kdump with many bitmap runs" kdump 131072 \
	"$kcoredump" convert FILE --format elf -n
shape "convert (the plan) of a LiME file with many ranges" lime 131072 \
	"$kcoredump" convert FILE --format elf -n
# Issue 27 item 3: a flattened kdump of 24 KB whose header declares 2^42
# pfns (bitmaps of 512 GiB each) kept every reader busy for minutes (2^45:
# hours), reading the gaps between records as zeros.  Now the gaps are
# holes, and the bitmaps must be in the records: a clean format error.
"$PY" "$gen" flat-kdump 42 "$tmp/flat.kdump"
for cmd in info verify "cat --phys --addr 4096 --len 16 --raw" "convert --format elf -n"; do
	# shellcheck disable=SC2086 # cmd is words
	once "$cmd of a flattened kdump declaring 2^42 pfns" 4 "$kcoredump" $cmd "$tmp/flat.kdump"
done
check "the error names max_mapnr" grep -q "max_mapnr" "$tmp/err"

# Issue 27 item 2: page-table walks cost the distinct tables, not the
# address space.  In a 45 KB kdump whose 236 direct-map PGD slots all point
# at one PUD, whose entries all point at one PMD, whose entries all point
# at one empty PTE table, convert (and mount) looked for the direct map one
# 4 KiB step at a time from the root: about 25 hours.  Each empty table is
# now read once (a few thousand entries): well under a second.
"$PY" "$gen" pgtable 236 "$tmp/pgtable.kdump"
for fmt in elf kdump; do
	once "convert --format $fmt -n, direct map aliased to one empty subtree" 0 \
		"$kcoredump" convert "$tmp/pgtable.kdump" --format "$fmt" -n
done
finish
