#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the same 2 MiB window of kernel text dumped plain and zstd
# compressed (by the .zst suffix); dump-verify-zst.host.sh decompresses and
# compares the PT_LOAD payloads.
set -eu

text=$(awk '$3 == "_text" { print "0x" $1; exit }' /proc/kallsyms)
[ -n "$text" ] || { echo "dump-verify-zst: no _text in kallsyms"; exit 1; }
echo "text_vaddr $text" > "$OUT/symbols"
timeout 60 "$KCOREDUMP" dump --range "$text+2M" -o "$OUT/t.elf.zst" --json > "$OUT/zst.json"
timeout 60 "$KCOREDUMP" dump --range "$text+2M" -o "$OUT/t.elf" --json > "$OUT/plain.json"
ls -l "$OUT/t.elf.zst" "$OUT/t.elf"
