#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: kcoredump info --json on the live /proc/kcore, plus the kernel's own
# views (iomem, kallsyms, phdrs via kpread) for info-kcore.host.sh to compare.
set -eu

"$KCOREDUMP" info --json /proc/kcore > "$OUT/info.json"
cat /proc/iomem > "$OUT/iomem"
grep -E ' (_text|_etext|linux_banner)$' /proc/kallsyms > "$OUT/kallsyms"
cat /proc/version > "$OUT/version"
uname -r > "$OUT/uname-r"
head -n 100 /proc/vmallocinfo > "$OUT/vmallocinfo.head"
cat /sys/kernel/vmcoreinfo > "$OUT/vmcoreinfo"
cat /proc/cmdline > "$OUT/cmdline"
kpread --phdrs > "$OUT/phdrs"
echo "info-kcore: $(grep -c LOAD "$OUT/phdrs") PT_LOAD segments"
