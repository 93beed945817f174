#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the live kernel's RAM as an ELF dump (the default selection) and as
# a flattened kdump written to a pipe.  formats.host.sh has crash, drgn and
# makedumpfile read them and what kcoredump convert makes of the ELF dump
# (tests/oracle/readers.sh); the heavy oracle-crash-full test opens them in
# crash with the matching vmlinux.
set -eu
uname -r > "$OUT/uname-r"
"$KCOREDUMP" dump -T 2 -o "$OUT/ram.elf" --json > "$OUT/ram.json"
"$KCOREDUMP" dump -T 2 --format kdump -o - 2> "$OUT/flat.txt" |
	cat > "$OUT/ram.flat"
cat "$OUT/flat.txt"
# Without free, cache and user pages (makedumpfile -d 31), by the struct
# pages read through the vmemmap segment; MemFree just before, to compare.
grep '^MemFree:' /proc/meminfo > "$OUT/memfree"
"$KCOREDUMP" dump -T 2 --format kdump --exclude 31 -o "$OUT/x31.kdump" --json > "$OUT/x31.json"
ls -ls "$OUT/ram.elf" "$OUT/ram.flat" "$OUT/x31.kdump"
