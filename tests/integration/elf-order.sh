#!/bin/bash
# SPDX-License-Identifier: MIT
# Program header order of every ELF we write, and what Volatility 3 sees of
# it (tests/tools/elf-scan.py models its Elf64Layer: PT_LOADs in file
# order, unsorted, scanned from the first one's p_paddr to the last one's
# end, found by bisection):
#  - PT_NOTE first, then the PT_LOADs in ascending p_vaddr (the ELF ABI),
#    for dumps of every valid fixture, through a pipe and compressed, and
#    for ELF converted from kdump, LiME and AVML;
#  - every RAM byte is reached by a Volatility scan of an ELF of the RAM,
#    of a kernel core whose last PT_LOAD is not the kernel image, and of
#    ELF converted from the physical formats;
#  - where the kernel image is the last PT_LOAD (a dump of RAM and text),
#    the scan starts at the lowest RAM page, not at the image (it used to:
#    the text came first, as /proc/kcore lists it), and reaches the RAM up
#    to the image's end; Volatility's scan stops at the end of the last
#    PT_LOAD, so RAM above the image is beyond it (kcoredump(8) BUGS).
#   elf-order.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
k() { "$kcoredump" "$@"; }
scan() { python3 "$here/../tools/elf-scan.py" "$@"; }

# scan_ok WHAT FILE [RANGES...]
scan_ok() {
	local what=$1 out
	shift
	if out=$(scan "$@" 2>&1); then
		ok "$what"
	else
		not_ok "$what: $(head -c 400 <<< "$out")"
	fi
}

kc=$fixdir/kcore-x86_64.core vm=$fixdir/vmcore-x86_64.core
ram_kc=(1000-9f000 100000-7fee0000 100000000-180000000)
ram_vm=(1000-9f000 100000-5d000000 6d000000-7fee0000 100000000-180000000)

for f in $VALID_FIXTURES vmcore-twocopies; do
	if k dump -q "$fixdir/$f.core" -o "$tmp/$f.elf"; then
		scan_ok "$f: PT_NOTE first, PT_LOADs in ascending p_vaddr" "$tmp/$f.elf"
	else
		not_ok "dump of $f"
	fi
done
# A real pipe; cp keeps the zeros as holes (the scan reads the headers).
k dump -q "$vm" -o - | cp --sparse=always /dev/stdin "$tmp/pipe.elf" &&
	scan_ok "through a pipe: PT_LOADs in ascending p_vaddr" "$tmp/pipe.elf"
k dump -q "$vm" -o "$tmp/vm.elf.zst" && zstd -q -d "$tmp/vm.elf.zst" -o "$tmp/vm-zst.elf" &&
	scan_ok ".zst: PT_LOADs in ascending p_vaddr" "$tmp/vm-zst.elf"

scan_ok "kcore fixture (RAM, vmalloc, text, modules): Volatility reaches all RAM" \
	"$tmp/kcore-x86_64.elf" "${ram_kc[@]}"
k dump -q --segments ram "$kc" -o "$tmp/ram.elf"
scan_ok "RAM only: Volatility reaches all RAM" "$tmp/ram.elf" "${ram_kc[@]}"
for fmt in kdump lime avml; do
	sel=()
	[[ $fmt == avml ]] && sel=(--phys -r 0x0-0x200000 -r 0x40000000+0x100000 -r 0x16fa00000+0x100000)
	if k convert -q --format $fmt "${sel[@]}" "$kc" -o "$tmp/x.$fmt" &&
		k convert -q --format elf "$tmp/x.$fmt" -o "$tmp/from-$fmt.elf"; then
		if [[ $fmt == avml ]]; then
			scan_ok "ELF from AVML: ascending, Volatility reaches all RAM" \
				"$tmp/from-$fmt.elf" 1000-9f000 100000-200000 40000000-40100000 16fa00000-16fb00000
		else
			scan_ok "ELF from $fmt: ascending, Volatility reaches all RAM" \
				"$tmp/from-$fmt.elf" "${ram_kc[@]}"
		fi
	else
		not_ok "convert $fmt -> ELF"
	fi
done
# RAM and the kernel image (at physical 0x2f000000-0x32400000): the scan
# starts at the lowest RAM page.
k dump -q --segments ram,text "$kc" -o "$tmp/ramtext.elf"
scan_ok "RAM and text: Volatility's scan starts at the lowest RAM page" \
	"$tmp/ramtext.elf" 1000-9f000 100000-32400000
scan_ok "vmcore (text, then RAM in the source): the scan starts at the lowest RAM page" \
	"$tmp/vmcore-x86_64.elf" 1000-9f000 100000-32400000
finish
