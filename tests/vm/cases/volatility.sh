#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the live kernel's RAM as an ELF dump for Volatility 3 on the host
# (tests/oracle/volatility.sh, heavy, which converts it to LiME and AVML:
# 1 GiB through 9p under TCG takes longer than the rig allows); the
# guest's own process list, read from /proc before and after the dump, is
# the truth.
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
ls -ls "$OUT/ram.elf"
