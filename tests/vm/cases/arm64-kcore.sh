#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest (arm64): the static aarch64 kcoredump on the real /proc/kcore of
# Debian's arm64 kernel: no libraries in the initramfs, the segment
# classes, linux_banner read at its kallsyms address (cat), the mapped
# vmalloc areas from the kernel's page tables (--vmalloc-range,
# verified), the struct page classes (--exclude 31), an ELF dump of
# RAM at dump level 31 (verified), and (argument "bench") the RAM dump's
# throughput against a pread loop.  arm64-kcore.host.sh checks the
# results with crash, drgn and kcoredump on the host.
set -eu
k=$KCOREDUMP
uname -r > "$OUT/kernel-release"
"$k" version > "$OUT/version.txt"
# Nothing to load the binary with: it must be static.
for l in /lib/ld-linux-aarch64.so.1 /lib/aarch64-linux-gnu /lib64; do
	if [ -e "$l" ] && [ -n "$(ls -A "$l" 2>/dev/null)" ]; then
		echo "the initramfs holds $l: libraries were copied"
		exit 1
	fi
done
"$k" info --json > "$OUT/info.json"
"$k" info > "$OUT/info.txt"
grep -E ' (linux_banner|init_uts_ns|_stext)$' /proc/kallsyms > "$OUT/kallsyms.txt"
cat /proc/version > "$OUT/proc-version.txt"
# linux_banner where kallsyms lists it (6.12); Debian's arm64 6.1 has no
# CONFIG_KALLSYMS_ALL, so there init_uts_ns from VMCOREINFO (its release
# string at offset 130 of struct new_utsname).
banner=$(grep ' linux_banner$' /proc/kallsyms | cut -d' ' -f1) || banner=
if [ -n "$banner" ]; then
	echo "banner $banner" > "$OUT/probe.txt"
	"$k" cat --addr "0x$banner" --len 256 --raw > "$OUT/banner.bin"
	"$k" cat --symbol linux_banner --len 256 --raw > "$OUT/banner-sym.bin"
else
	uts=$("$k" info --notes-only | sed -n 's/^ *SYMBOL(init_uts_ns)=//p' | head -n 1)
	off=$("$k" info --notes-only | sed -n 's/^ *OFFSET(uts_namespace.name)=//p' | head -n 1)
	# struct uts_namespace begins with its name on 6.1 and 6.12 (no
	# 64-bit arithmetic in ash to add another offset).
	[ "${off:-0}" = 0 ] || { echo "OFFSET(uts_namespace.name) is $off"; exit 1; }
	echo "uts $uts" > "$OUT/probe.txt"
	"$k" cat --addr "0x$uts" --len 390 --raw > "$OUT/banner.bin"
	"$k" cat --symbol init_uts_ns --len 390 --raw > "$OUT/banner-sym.bin"
fi
# Dumps go to the guest's tmpfs first: sparse writes and reads of a 1 GiB
# sparse file crawl over 9p under TCG (1 MB/s); sparsecp copies the data
# and keeps the holes.
"$k" dump -f --allow-ram-output --vmalloc-range --json -o /tmp/vmalloc.elf > "$OUT/vmalloc.json"
"$k" verify /tmp/vmalloc.elf > "$OUT/vmalloc-verify.txt" 2>&1
sparsecp /tmp/vmalloc.elf "$OUT/vmalloc.elf"
rm -f /tmp/vmalloc.elf
"$k" dump --exclude 31 -n --json > "$OUT/exclude.json"
grep -E '^(MemTotal|MemFree):' /proc/meminfo > "$OUT/meminfo.txt"
# zstd: a third of the bytes to push through 9p; the host extracts it.
"$k" dump -f --allow-ram-output --exclude 31 --json -o /tmp/ram31.elf.zst > "$OUT/ram31.json"
"$k" verify /tmp/ram31.elf.zst > "$OUT/ram31-verify.txt" 2>&1
cp /tmp/ram31.elf.zst "$OUT/ram31.elf.zst"
rm -f /tmp/ram31.elf.zst
# With the argument "bench": the throughput of the RAM segments, a pread
# loop (1 MiB) against the whole dump pipeline to /dev/null, as
# bench/kcore.sh does on x86_64 (3 GiB read: not in the default smoke).
[ "${1:-}" = bench ] || exit 0
kpread --bench > "$OUT/pread.txt"
# --hash none for the copy speed; the default SHA-256 beside it.
for h in none sha256; do
	t0=$(cut -d' ' -f1 /proc/uptime)
	"$k" dump -f --segments ram --hash "$h" -q -o /dev/null --special-output
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo "dump_ram_s_$h $(echo "$t1 $t0" | awk '{print $1 - $2}')"
done > "$OUT/dump-time.txt"
