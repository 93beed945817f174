#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the README's main job on the guest's real /proc/kcore: describe it,
# dump all RAM and the mapped vmalloc areas, verify both.
set -eu

"$KCOREDUMP" info /proc/kcore > "$OUT/info.txt"
"$KCOREDUMP" info --json /proc/kcore > "$OUT/info.json"
"$KCOREDUMP" dump -o "$OUT/ram.elf.zst" --json > "$OUT/ram.json"
"$KCOREDUMP" --vmalloc-range -o "$OUT/vmalloc.elf" --json > "$OUT/vmalloc.json"
"$KCOREDUMP" verify "$OUT/ram.elf.zst" > "$OUT/verify-ram.txt"
"$KCOREDUMP" verify "$OUT/vmalloc.elf" > "$OUT/verify-vmalloc.txt"
uname -r > "$OUT/uname-r"
head -n 5 "$OUT/info.txt"
cat "$OUT/verify-ram.txt" "$OUT/verify-vmalloc.txt"
