#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: kcoredump cat on the live /proc/kcore: --symbol through
# /proc/kallsyms, the same bytes by virtual and physical address, and the
# error when kptr_restrict hides kallsyms addresses.
set -eu

uname -r > "$OUT/uname-r"
cat /proc/version > "$OUT/version"
"$KCOREDUMP" cat --symbol init_uts_ns --len 390 --raw > "$OUT/uts.bin"
"$KCOREDUMP" cat --json --symbol linux_banner --len 64 > "$OUT/banner.json"
# linux_banner by physical address: the kernel text segment's paddr.
va=$(awk '$3 == "linux_banner" { print "0x" $1 }' /proc/kallsyms)
echo "$va" > "$OUT/banner-va"
"$KCOREDUMP" cat --raw --addr "$va" --len 64 > "$OUT/banner-virt.bin"
# The text segment's "VADDR-END" and paddr from info's table (no jq in
# the guest); kernel text addresses share their upper 32 bits.
set -- $("$KCOREDUMP" info --segments-only --no-holes /proc/kcore |
	awk '$4 == "text" { split($5, r, "-"); print r[1], $6; exit }')
echo "$1 $2" > "$OUT/text-seg"
low() { printf '%d' "0x$(printf '%s' "$1" | tail -c 8)"; }
phys=$(printf '0x%x' $(( $2 + $(low "$va") - $(low "$1") )))
echo "$phys" > "$OUT/banner-pa"
"$KCOREDUMP" cat --raw --phys --addr "$phys" --len 64 > "$OUT/banner-phys.bin"
old=$(cat /proc/sys/kernel/kptr_restrict)
echo 2 > /proc/sys/kernel/kptr_restrict
rc=0
"$KCOREDUMP" cat --symbol linux_banner --len 16 --raw > /dev/null 2> "$OUT/kptr.err" || rc=$?
echo "$rc" > "$OUT/kptr.rc"
echo "$old" > /proc/sys/kernel/kptr_restrict
echo "cat-kcore: linux_banner at $va (phys $phys)"
