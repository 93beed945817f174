#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: `kcoredump dump` of the live kernel's RAM (the default selection)
# to the share, then linux_banner and 2 MiB of kernel text read back from
# the dump by physical address (kcore-read, kpread) against /proc/kcore, and
# the dump's read throughput next to plain 1 MiB preads over the same RAM
# segments (kpread --bench before and after).  dump-ram.host.sh checks the
# ELF (eu-readelf, own parser, drgn).
set -eu

up() { cut -d' ' -f1 /proc/uptime; }
sym() { awk -v n="$1" '$3 == n { print "0x" $1; exit }' /proc/kallsyms; }
fail=0
check() { # what expected actual
	if [ "$2" = "$3" ]; then
		echo "ok - $1"
	else
		echo "not ok - $1: '$3' != '$2'"
		fail=1
	fi
}
sha() { sha256sum | cut -d' ' -f1; }

head -n 1 /proc/version > "$OUT/version"
kpread --phdrs > "$OUT/phdrs"
"$KCOREDUMP" info --json /proc/kcore > "$OUT/kcore-info.json"
text=$(sym _text)
banner=$(sym linux_banner)
if [ -z "$text" ] || [ -z "$banner" ]; then
	echo "dump-ram: no _text/linux_banner in kallsyms"
	exit 1
fi

# The text segment (a LOAD with a physical address holding _text) gives
# _text's physical address; the RAM segment holding that gives its direct
# map alias.  Kernel addresses are negative in ash's 64-bit arithmetic, so
# only differences are taken.
text_pa=
while read -r _i t va pa _off _fsz msz _ram; do
	if [ "$t" != LOAD ] || [ "$pa" = 0xffffffffffffffff ]; then
		continue
	fi
	d=$((text - va))
	if [ "$d" -ge 0 ] && [ "$d" -lt "$msz" ]; then
		text_pa=$(printf '0x%x' $((pa + d)))
		break
	fi
done < "$OUT/phdrs"
[ -n "$text_pa" ] || { echo "dump-ram: no text segment with a physical address"; exit 1; }
banner_pa=$(printf '0x%x' $((text_pa + banner - text)))
{
	echo "text_vaddr $text"
	echo "text_paddr $text_pa"
	echo "banner_vaddr $banner"
	echo "banner_paddr $banner_pa"
} > "$OUT/symbols"
cat "$OUT/symbols"

bench() { kpread --bench > "$OUT/$1"; tr '\n' ' ' < "$OUT/$1"; echo; }
bench bench-before

t0=$(up)
rc=0
# The limit follows the RAM to read: 60 s and 1 s per MiB (a quiet
# machine's TCG reads 15-55 MB/s; a loaded one several times less).
lim=$((60 + $(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)))
timeout "$lim" "$KCOREDUMP" dump -o "$OUT/ram.elf" --json > "$OUT/ram.json" 2> "$OUT/ram.stderr" || rc=$?
t1=$(up)
echo "$rc" > "$OUT/dump-rc"
echo "dump: exit $rc in $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s" | tee "$OUT/dump-time"
cat "$OUT/ram.stderr"
[ "$rc" -ne 143 ] || { echo "not ok - kcoredump dump of RAM timed out after $lim s"; exit 1; }
[ "$rc" -eq 0 ] || { echo "not ok - kcoredump dump exited $rc"; exit 1; }
ls -ls "$OUT/ram.elf"

bench bench-after

# Banner and kernel text by physical address: the dump against the live kernel.
head_line() { tr '\0' '\n' | head -n 1; }
want=$(cat "$OUT/version")
if command -v kcore-read > /dev/null; then
	kcore-read /proc/kcore --paddr "$banner_pa" --len 512 > "$OUT/banner.kcore.raw" || true
	kcore-read "$OUT/ram.elf" --paddr "$banner_pa" --len 512 > "$OUT/banner.dump.raw" || true
	check "kcore-read /proc/kcore --paddr linux_banner == /proc/version" "$want" "$(head_line < "$OUT/banner.kcore.raw")"
	check "kcore-read ram.elf --paddr linux_banner == /proc/version" "$want" "$(head_line < "$OUT/banner.dump.raw")"
	a=$(kcore-read /proc/kcore --paddr "$text_pa" --len 2097152 | sha)
	b=$(kcore-read "$OUT/ram.elf" --paddr "$text_pa" --len 2097152 | sha)
	check "kernel text (2 MiB at _text's paddr): ram.elf == /proc/kcore (kcore-read)" "$a" "$b"
else
	echo "kcore-read not given (--tool build/tests/tools/kcore-read)" | tee "$OUT/skipped"
fi

# The same through the direct map alias with kpread, our own ELF reader:
# the dump's RAM segments keep the kernel's virtual addresses.
alias=
while read -r _i _t va pa _off _fsz msz ram; do
	[ "$ram" = 1 ] || continue
	d=$((banner_pa - pa))
	if [ "$d" -ge 0 ] && [ "$d" -lt "$msz" ]; then
		alias=$(printf '0x%x' $((va + d)))
		break
	fi
done < "$OUT/phdrs"
echo "banner_direct_map $alias" >> "$OUT/symbols"
if [ -n "$alias" ]; then
	kpread --file "$OUT/ram.elf" --vaddr "$alias" --len 512 > "$OUT/banner.kpread.raw" || true
	check "kpread ram.elf --vaddr (direct map) linux_banner == /proc/version" "$want" "$(head_line < "$OUT/banner.kpread.raw")"
else
	echo "not ok - linux_banner's paddr $banner_pa is in no RAM segment"
	fail=1
fi
exit $fail
