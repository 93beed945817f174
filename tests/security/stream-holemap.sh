#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 10: a .zst hole map must not override the data.  A map
# with a valid CRC that called every byte a hole made extract write zeros
# (exit 0) and cat return nothing where zstd -d gives the bytes.  Now the
# map counts only for whole frames that decode to zeros (checked at open,
# one decode per distinct frame); a map that calls data a hole is dropped.
# t-stream checks that our own maps still spare the decoding.  The same
# for the compressed map (KCDHOLE2, issue 41), and for one whose encoded
# runs do not match its count (ignored).
#   stream-holemap.sh KCOREDUMP HOSTILE-PY
set -uo pipefail
kcoredump=$1 gen=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v zstd >/dev/null || { echo "1..0 # SKIP zstd(1) is not installed"; exit 77; }
"$PY" "$gen" flat-kdump 15 "$tmp/f"
"$kcoredump" convert "$tmp/f" --format elf -o "$tmp/e.zst" --frame-size 4K >/dev/null
# The raw map of earlier versions (KCDHOLE1), the compressed one
# (KCDHOLE2), and a compressed one whose runs end before its count.
for kind in zst-hole-map zst-hole-map2 zst-hole-map2-bad; do
	rm -f "$tmp/h.zst" "$tmp/x" "$tmp/c.elf"
	"$PY" "$gen" $kind "$tmp/e.zst" "$tmp/h.zst"
	zstd -dcq "$tmp/h.zst" >"$tmp/ref"
	check "$kind: zstd -d of the rewritten stream gives the dump" cmp -s "$tmp/ref" <(zstd -dcq "$tmp/e.zst")
	"$kcoredump" extract -q "$tmp/h.zst" -o "$tmp/x"
	check "$kind: extract gives what zstd -d gives" cmp "$tmp/x" "$tmp/ref"
	check "$kind: cat reads the page" \
		bash -c "[ \"\$('$kcoredump' cat --phys --addr 4096 --len 16 --raw '$tmp/h.zst')\" = BBBBBBBBBBBBBBBB ]"
	"$kcoredump" convert "$tmp/h.zst" --format elf -o "$tmp/c.elf" >/dev/null 2>"$tmp/err"
	check "$kind: convert exits 0" [ $? -eq 0 ]
	check "$kind: and its output holds the page" \
		bash -c "[ \"\$('$kcoredump' cat --phys --addr 4096 --len 16 --raw '$tmp/c.elf')\" = BBBBBBBBBBBBBBBB ]"
done
# Our own map of that dump is the compressed one.
check "the dump's own map is KCDHOLE2" grep -qa KCDHOLE2 "$tmp/e.zst"
finish
