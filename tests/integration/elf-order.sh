#!/bin/bash
# SPDX-License-Identifier: MIT
# Program header order of every ELF we write, and how Volatility 3 finds
# physical addresses in it (tests/tools/elf-scan.py models its Elf64Layer:
# PT_LOADs in header order, unsorted, an address found by binary search
# over their p_paddr; a scan runs from the first one's p_paddr to the last
# one's end):
#  - PT_NOTE first, then the PT_LOADs in ascending p_vaddr (the ELF ABI),
#    for dumps of every valid fixture, through a pipe and compressed, and
#    for ELF converted from kdump, LiME and AVML;
#  - Volatility's lookup finds every RAM byte (the ranges of a LiME file
#    of the same memory) in a segment that holds it, with the LiME file's
#    bytes, and its scan reaches every RAM byte: in the default ELF of a
#    kcore and of a vmcore (RAM, vmalloc, the kernel image, modules), in
#    ELF of RAM only, of RAM and the image, converted from kdump, LiME and
#    AVML, and in the ELF `kcoredump mount` serves of a .zst dump and of a
#    kdump with exact virtual addresses.  The kernel image lies physically
#    inside RAM and is listed last (ascending p_vaddr); with its physical
#    address in p_paddr every address above its end resolved to it and
#    was invalid (issue 43: linux.pslist failed), so its PT_LOAD has
#    p_paddr -1 and RAM's bytes (one copy), and the vmcore-x86_64 fixture
#    (whose image is not at the top of RAM) fails the old layout here.
#   elf-order.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'for m in "$tmp"/m-*; do [[ -d $m ]] && fusermount3 -u "$m" 2> /dev/null; done; rm -rf "$tmp"' EXIT
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

k convert -q --format lime "$kc" -o "$tmp/kc.lime" &&
	k convert -q --format lime "$vm" -o "$tmp/vm.lime" ||
	not_ok "convert of the fixtures to LiME (the reference)"
scan_ok "kcore fixture (RAM, vmalloc, text, modules): Volatility finds all RAM" \
	"$tmp/kcore-x86_64.elf" --lime "$tmp/kc.lime" "${ram_kc[@]}"
scan_ok "vmcore fixture (text, then RAM in the source): Volatility finds all RAM" \
	"$tmp/vmcore-x86_64.elf" --lime "$tmp/vm.lime" "${ram_vm[@]}"
scan_ok ".zst of the vmcore fixture, decompressed: Volatility finds all RAM" \
	"$tmp/vm-zst.elf" --lime "$tmp/vm.lime"
k dump -q --segments ram "$kc" -o "$tmp/ram.elf"
scan_ok "RAM only: Volatility finds all RAM" "$tmp/ram.elf" --lime "$tmp/kc.lime" "${ram_kc[@]}"
k dump -q --segments ram,text "$kc" -o "$tmp/ramtext.elf"
scan_ok "RAM and the kernel image: Volatility finds all RAM" \
	"$tmp/ramtext.elf" --lime "$tmp/kc.lime" "${ram_kc[@]}"
for fmt in kdump lime avml; do
	sel=()
	[[ $fmt == avml ]] && sel=(--phys -r 0x0-0x200000 -r 0x40000000+0x100000 -r 0x16fa00000+0x100000)
	if k convert -q --format $fmt "${sel[@]}" "$kc" -o "$tmp/x.$fmt" &&
		k convert -q --format elf "$tmp/x.$fmt" -o "$tmp/from-$fmt.elf"; then
		if [[ $fmt == avml ]]; then
			scan_ok "ELF from AVML: ascending, Volatility finds all RAM" \
				"$tmp/from-$fmt.elf" 1000-9f000 100000-200000 40000000-40100000 16fa00000-16fb00000
		else
			scan_ok "ELF from $fmt: ascending, Volatility finds all RAM" \
				"$tmp/from-$fmt.elf" --lime "$tmp/kc.lime" "${ram_kc[@]}"
		fi
	else
		not_ok "convert $fmt -> ELF"
	fi
done
# A kdump with exact virtual addresses (mkformats.py's): convert gives the
# kernel image's PT_LOAD besides RAM at the direct map, as the mount does.
formats=$fixdir/formats
if k convert -q --format elf "$formats/mem.kdump" -o "$tmp/mem.elf" &&
	k convert -q --format lime "$formats/mem.kdump" -o "$tmp/mem.lime"; then
	scan_ok "ELF from a kdump with the kernel image: Volatility finds all RAM" \
		"$tmp/mem.elf" --lime "$tmp/mem.lime"
else
	not_ok "convert of mem.kdump to ELF and LiME"
fi
# The ELF the mount serves: a .zst dump's own, a kdump's rebuilt.
if [[ -e /dev/fuse ]] && command -v fusermount3 > /dev/null; then
	for src in "$tmp/vm.elf.zst:$tmp/vm.lime" "$formats/mem.kdump:$tmp/mem.lime"; do
		m=$tmp/m-$(basename "${src%%:*}")
		mkdir -p "$m"
		if k mount "${src%%:*}" "$m"; then
			scan_ok "mounted $(basename "${src%%:*}"): Volatility finds all RAM" \
				"$m/vmcore" --lime "${src#*:}"
			fusermount3 -u "$m"
		else
			not_ok "mount ${src%%:*}"
		fi
	done
else
	ok "# SKIP mount: no /dev/fuse or fusermount3"
fi
finish
