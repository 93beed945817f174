#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the live kernel's RAM as an ELF dump, and the same dump converted
# to LiME and AVML, for Volatility 3 on the host
# (tests/oracle/volatility.sh, heavy); the guest's own process list, read
# from /proc before and after the dump, is the truth.
set -eu
uname -r > "$OUT/uname-r"
procs() {
	for d in /proc/[0-9]*; do
		[ -r "$d/comm" ] && echo "${d#/proc/} $(cat "$d/comm" 2>/dev/null)"
	done | sort -n
}
procs > "$OUT/ps-before.txt"
"$KCOREDUMP" dump -T 2 -o "$OUT/ram.elf" --json > "$OUT/ram.json"
procs > "$OUT/ps-after.txt"
"$KCOREDUMP" convert -T 2 "$OUT/ram.elf" --format lime -o "$OUT/ram.lime" -q
"$KCOREDUMP" convert -T 2 "$OUT/ram.elf" --format avml -o "$OUT/ram.avml" -q
ls -ls "$OUT/ram.elf" "$OUT/ram.lime" "$OUT/ram.avml"
