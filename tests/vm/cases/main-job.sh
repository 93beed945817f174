#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the README's main job on the guest's real /proc/kcore: describe it,
# dump all RAM and the mapped vmalloc areas, verify both.
set -eu

"$KCOREDUMP" info /proc/kcore > "$OUT/info.txt"
"$KCOREDUMP" info --json /proc/kcore > "$OUT/info.json"
"$KCOREDUMP" dump -o "$OUT/ram.elf.zst" --json > "$OUT/ram.json"
"$KCOREDUMP" dump --vmalloc-range -o "$OUT/vmalloc.elf" --json > "$OUT/vmalloc.json"
# The same files as scripts/main-job-dumps.sh leaves, for
# scripts/main-job-summary.py.
"$KCOREDUMP" verify --json "$OUT/ram.elf.zst" > "$OUT/verify-ram.json"
"$KCOREDUMP" verify --json "$OUT/vmalloc.elf" > "$OUT/verify-vmalloc.json"
uname -r > "$OUT/uname-r"
