#!/bin/bash
# SPDX-License-Identifier: MIT
# Exact kernel virtual addresses for physical-only dumps: a kdump holds
# physical memory only, but its VMCOREINFO (phys_base, init_top_pgt) and
# its own page tables say where the kernel image and the direct map are.
# tests/tools/mkformats.py's mem.kdump (and the flattened mem.flat) then:
#  - convert --format elf gives kexec-tools' /proc/vmcore segments in
#    ascending p_vaddr: RAM at p_vaddr = PAGE_OFFSET + p_paddr, then a
#    kernel-image PT_LOAD (p_vaddr in the kernel map), p_paddr -1, whose
#    file bytes are RAM's at __START_KERNEL_map - p_vaddr + phys_base (one
#    copy; physical ranges ascend for Volatility, see elf-order.sh),
#    checked against the fixture's facts;
#  - a reader that knows only program headers (this script's own ELF
#    reader, no page-table walk) finds init_uts_ns and direct-map bytes by
#    virtual address in that ELF and in the mounted kdump's vmcore (when
#    /dev/fuse exists), whose PT_LOADs are convert's;
#  - without the page tables (a kdump of RAM below them) and without
#    VMCOREINFO (LiME) the PT_LOADs stay physical-only (p_vaddr 0).
#   vmap.sh KCOREDUMP FORMATSDIR
set -uo pipefail
kcoredump=$1 dir=$2
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
mounted=
cleanup()
{
	[[ -n $mounted ]] && fusermount3 -u "$mounted" 2> /dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
PAGE_OFFSET=0xffff888000000000
START_KERNEL_MAP=0xffffffff80000000
PHYS_BASE=0x200000

# PT_LOADs of an ELF as "vaddr paddr memsz" lines (0x hex).
loads()
{
	eu-readelf -l "$1" | awk '$1 == "LOAD" { print $3, $4, $6 }'
}

# The file offset of physical address PA in ELF's PT_LOADs, or "none".
offset_of()
{
	local t o v p f m
	while read -r t o v p f m _; do
		[[ $t == LOAD && $p != 0xffffffffffffffff ]] || continue
		if (($2 >= p && $2 < p + m)); then
			printf '0x%x\n' $((o + $2 - p))
			return
		fi
	done < <(eu-readelf -l "$1")
	echo none
}

# sha256 of LEN bytes at virtual address VA of ELF, by its program headers.
read_va()
{
	/usr/bin/python3 - "$@" << 'PY'
import hashlib, struct, sys
path, va, n = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3])
with open(path, "rb") as f:
    eh = f.read(64)
    phoff, = struct.unpack_from("<Q", eh, 32)
    phnum, = struct.unpack_from("<H", eh, 56)
    f.seek(phoff)
    for _ in range(phnum):
        t, _, off, v, p, fs, ms, _ = struct.unpack("<IIQQQQQQ", f.read(56))
        if t == 1 and v <= va and va + n <= v + fs:
            f.seek(off + va - v)
            print(hashlib.sha256(f.read(n)).hexdigest())
            sys.exit(0)
print("unmapped")
PY
}

# check NAME ELF: the layout and the expected virtual reads.
check()
{
	local name=$1 elf=$2 got first rest bad=0 what va len sum
	got=$(loads "$elf")
	# Ascending p_vaddr, as every ELF we write: RAM at the direct map,
	# then the kernel image in the kernel map.
	[[ -n $got && $got == "$(sort <<< "$got")" ]] &&
		ok "$name: PT_LOADs in ascending p_vaddr" ||
		not_ok "$name: PT_LOADs not in ascending p_vaddr: $got"
	first=$(tail -n 1 <<< "$got")
	rest=$(head -n -1 <<< "$got")
	read -r v p _ <<< "$first"
	local pa=none off=none want=none
	if [[ -n $v ]] && (($v >= START_KERNEL_MAP)); then
		pa=$(printf '0x%x' $((v - START_KERNEL_MAP + PHYS_BASE)))
		off=$(eu-readelf -l "$elf" | awk -v v="$v" '$1 == "LOAD" && $3 == v { print $2; exit }')
		want=$(offset_of "$elf" "$pa")
	fi
	if [[ $p == 0xffffffffffffffff && $want != none ]] && ((off == want)); then
		ok "$name: the last PT_LOAD is the kernel image: $v, p_paddr -1, on RAM's bytes at physical $pa"
	else
		not_ok "$name: the last PT_LOAD is not the kernel image on RAM's bytes: $first (offset $off, RAM's at $pa: $want)"
	fi
	while read -r v p _; do
		(($v == PAGE_OFFSET + $p)) || bad=1
	done <<< "$rest"
	[[ -n $rest && $bad == 0 ]] &&
		ok "$name: $(wc -l <<< "$rest") RAM PT_LOADs at PAGE_OFFSET + p_paddr" ||
		not_ok "$name: RAM PT_LOADs are not at PAGE_OFFSET + p_paddr: $rest"
	while read -r what kind va len sum; do
		[[ $kind == virt && $sum != - ]] || continue
		[[ $what == vmalloc ]] && continue # no PT_LOAD: page tables only
		got=$(read_va "$elf" "${va#0x}" "$len")
		[[ $got == "$sum" ]] &&
			ok "$name: $what ($va, $len bytes) by its program headers" ||
			not_ok "$name: $what ($va) reads $got by its program headers, not $sum"
	done < "$dir/expect.txt"
}

for f in mem.kdump mem.flat; do
	if "$kcoredump" convert -q --format elf "$dir/$f" -o "$tmp/$f.elf"; then
		check "convert --format elf $f" "$tmp/$f.elf"
	else
		not_ok "convert --format elf $f"
	fi
done

# The mounted kdump serves the ELF convert writes.
if [[ -e /dev/fuse ]] && command -v fusermount3 > /dev/null; then
	mkdir -p "$tmp/m"
	if "$kcoredump" mount "$dir/mem.kdump" "$tmp/m"; then
		mounted=$tmp/m
		check "mounted mem.kdump" "$tmp/m/vmcore"
		[[ $(loads "$tmp/m/vmcore") == "$(loads "$tmp/mem.kdump.elf")" ]] &&
			ok "mounted mem.kdump: its PT_LOADs are convert's" ||
			not_ok "mounted mem.kdump: its PT_LOADs differ from convert's"
	else
		not_ok "mount mem.kdump"
	fi
else
	ok "# SKIP mount: no /dev/fuse or fusermount3"
fi

# No exact addresses: today's physical-only ELF.
all_zero()
{
	[[ -n $1 ]] && ! grep -qv '^0x0000000000000000 ' <<< "$1"
}
"$kcoredump" convert -q --format kdump --phys --range 0x100000-0x1400000 \
	"$dir/mem.elf" -o "$tmp/low.kdump" &&
	"$kcoredump" convert -q --format elf "$tmp/low.kdump" -o "$tmp/low.elf" ||
	not_ok "convert of RAM below the page tables"
got=$(loads "$tmp/low.elf")
all_zero "$got" &&
	ok "a kdump without its page tables stays physical-only ($(wc -l <<< "$got") PT_LOADs, p_vaddr 0)" ||
	not_ok "a kdump without its page tables: $got"
"$kcoredump" convert -q --format elf "$dir/mem.lime" -o "$tmp/lime.elf" ||
	not_ok "convert --format elf mem.lime"
got=$(loads "$tmp/lime.elf")
all_zero "$got" &&
	ok "LiME (no VMCOREINFO) stays physical-only" ||
	not_ok "LiME: $got"
finish
