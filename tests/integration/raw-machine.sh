#!/bin/bash
# SPDX-License-Identifier: MIT
# The machine of a LiME or AVML image, whose headers name none (issue 43
# item 2): found in its memory (src/lib/format/detect.c), else --arch.
# tests/tools/mkformats.py's images of one x86_64 kernel's memory:
#  - mem-vmcoreinfo.lime (the kernel's VMCOREINFO note and text pages, and
#    its banner): x86_64 from VMCOREINFO, which becomes the image's note;
#    info says so; `convert --format elf` (from the LiME and from an AVML
#    file of it) and the mounted vmcore have e_machine EM_X86_64
#    (readelf -h), the VMCOREINFO note (readelf -n) and the kernel image
#    at its virtual address; crash --osrelease prints the release on the
#    mounted files (it said "unknown": EM_NONE is "machine type
#    mismatch" to crash 9);
#  - mem-banner.lime, mem-banner-arm64.lime (a "Linux version" banner
#    only): x86_64, aarch64, from the banner;
#  - mem.lime (neither): EM_NONE, and info, convert and mount say to give
#    --arch; with --arch aarch64 info, convert and mount say AArch64;
#  - a LiME of 70 ranges, whose headers the note pushes past a page (the
#    data moves in the image): its data reads back, also through AVML;
#  - --arch against VMCOREINFO, or against an ELF header, is refused with
#    a one-line error naming the file, where, and both machines.
#   raw-machine.sh KCOREDUMP FORMATSDIR
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
k() { "$kcoredump" "$@"; }
RELEASE=6.12.0-kcoredump-test
has_fuse=
[[ -e /dev/fuse ]] && command -v fusermount3 > /dev/null && has_fuse=1

# machine_of FILE: readelf -h's Machine.
machine_of() { readelf -h "$1" 2> /dev/null | sed -n 's/^ *Machine: *//p'; }

# check_elf WHAT FILE MACHINE [vmcoreinfo]: readelf -h (and -n, -l).
check_elf()
{
	local what=$1 f=$2 want=$3 got
	got=$(machine_of "$f")
	[[ $got == "$want" ]] &&
		ok "$what: readelf -h says $got" ||
		not_ok "$what: readelf -h says '$got', not $want"
	[[ ${4:-} == vmcoreinfo ]] || return 0
	grep -q '^ *VMCOREINFO ' <(readelf -n "$f") &&
		ok "$what: has the VMCOREINFO note" ||
		not_ok "$what: no VMCOREINFO note"
	grep -q 'LOAD .* 0xffffffff80000000 0xffffffffffffffff' <(readelf -lW "$f") &&
		ok "$what: the kernel image at its virtual address" ||
		not_ok "$what: no kernel image PT_LOAD: $(readelf -lW "$f" | grep LOAD | head -n 4)"
	if command -v crash > /dev/null; then
		got=$(crash --osrelease "$f" 2>&1 | tail -n 1)
		[[ $got == "$RELEASE" ]] &&
			ok "$what: crash --osrelease prints $got" ||
			not_ok "$what: crash --osrelease prints '$got', not $RELEASE"
	fi
}

# check_mount WHAT FILE MACHINE [vmcoreinfo] [OPTIONS...]
check_mount()
{
	local what=$1 f=$2 want=$3 vi=${4:-}
	shift 4
	if [[ -z $has_fuse ]]; then
		ok "# SKIP mount $what: no /dev/fuse or fusermount3"
		return
	fi
	mkdir -p "$tmp/m"
	if k mount "$@" "$f" "$tmp/m"; then
		mounted=$tmp/m
		check_elf "mounted $what" "$tmp/m/vmcore" "$want" $vi
		fusermount3 -u "$tmp/m" && mounted=
	else
		not_ok "mount $what"
	fi
}

# info_is WHAT FILE MACHINE ORIGIN [OPTIONS...]: info --json's facts.
info_is()
{
	local what=$1 f=$2 m=$3 origin=$4 got
	shift 4
	got=$(k info --json --no-holes "$@" "$f" | jq -r '.source | "\(.machine) \(.machine_origin)"')
	[[ $got == "$m $origin" ]] &&
		ok "$what: info says $m from $origin" ||
		not_ok "$what: info says '$got', not '$m $origin'"
}

# VMCOREINFO in the memory.
vi=$dir/mem-vmcoreinfo.lime
info_is "LiME with VMCOREINFO" "$vi" x86_64 VMCOREINFO
got=$(k info --json --no-holes "$vi" | jq -r '.source | "\(.kind) \(.kernel_release) \(.vmcoreinfo_origin) \(.vmcoreinfo_paddr) \(.machine_paddr)"')
[[ $got == "kernel-vmcore $RELEASE memory 0x1000018 0x1000018" ]] &&
	ok "LiME with VMCOREINFO: a kernel vmcore, its VMCOREINFO from memory at 0x1000018" ||
	not_ok "LiME with VMCOREINFO: info says '$got'"
grep -q '^Machine: *x86_64, ELF64, little-endian (from the VMCOREINFO at physical 0x1000018)$' <(k info "$vi") &&
	ok "LiME with VMCOREINFO: info's text names where" ||
	not_ok "LiME with VMCOREINFO: info's text: $(k info "$vi" | grep '^Machine')"
if k convert -q --format elf "$vi" -o "$tmp/vi.elf"; then
	check_elf "convert --format elf of the LiME" "$tmp/vi.elf" "Advanced Micro Devices X86-64" vmcoreinfo
else
	not_ok "convert --format elf of the LiME"
fi
if k convert -q --format avml "$vi" -o "$tmp/vi.avml"; then
	info_is "AVML with VMCOREINFO" "$tmp/vi.avml" x86_64 VMCOREINFO
	if k convert -q --format elf "$tmp/vi.avml" -o "$tmp/vi-avml.elf"; then
		check_elf "convert --format elf of the AVML" "$tmp/vi-avml.elf" "Advanced Micro Devices X86-64" vmcoreinfo
	else
		not_ok "convert --format elf of the AVML"
	fi
	check_mount "AVML with VMCOREINFO" "$tmp/vi.avml" "Advanced Micro Devices X86-64" vmcoreinfo
else
	not_ok "convert --format avml of the LiME"
fi
check_mount "LiME with VMCOREINFO" "$vi" "Advanced Micro Devices X86-64" vmcoreinfo

# The banner only.
info_is "LiME with an x86_64 banner" "$dir/mem-banner.lime" x86_64 "kernel banner"
check_mount "LiME with an x86_64 banner" "$dir/mem-banner.lime" "Advanced Micro Devices X86-64" ""
info_is "LiME with an arm64 banner" "$dir/mem-banner-arm64.lime" aarch64 "kernel banner"
if k convert -q --format elf "$dir/mem-banner-arm64.lime" -o "$tmp/arm64.elf"; then
	check_elf "convert --format elf of the arm64 banner LiME" "$tmp/arm64.elf" AArch64
else
	not_ok "convert --format elf of the arm64 banner LiME"
fi

# Nothing in the memory: EM_NONE until --arch.
plain=$dir/mem.lime
got=$(k info --json --no-holes "$plain" | jq -r '.source | "\(.e_machine) \(.machine_origin)"')
[[ $got == "0 null" ]] && ok "LiME without either: EM_NONE" || not_ok "LiME without either: info says '$got'"
grep -q '^Machine: .*(unknown: no VMCOREINFO or kernel banner found in its memory; give --arch)$' <(k info "$plain") &&
	ok "LiME without either: info says to give --arch" ||
	not_ok "LiME without either: info's text: $(k info "$plain" | grep '^Machine')"
out=$(k convert --format elf "$plain" -o "$tmp/none.elf" 2>&1 > /dev/null)
[[ $out == *"'$plain' names no machine"*"e_machine EM_NONE, which crash refuses; give --arch x86_64 or --arch aarch64"* ]] &&
	ok "LiME without either: convert --format elf says to give --arch" ||
	not_ok "LiME without either: convert --format elf says '$out'"
if [[ -n $has_fuse ]]; then
	mkdir -p "$tmp/m"
	if out=$(k mount "$plain" "$tmp/m" 2>&1); then
		mounted=$tmp/m
		[[ $(machine_of "$tmp/m/vmcore") == None &&
			$out == *"e_machine EM_NONE, which crash refuses; mount it with --arch x86_64 or --arch aarch64"* ]] &&
			ok "LiME without either: mounted EM_NONE, and mount says to give --arch" ||
			not_ok "LiME without either: mount says '$out', readelf '$(machine_of "$tmp/m/vmcore")'"
		fusermount3 -u "$tmp/m" && mounted=
	else
		not_ok "mount of the LiME without either: $out"
	fi
fi
info_is "LiME without either, --arch aarch64" "$plain" aarch64 "--arch" --arch aarch64
if k convert -q --arch aarch64 --format elf "$plain" -o "$tmp/given.elf"; then
	check_elf "convert --arch aarch64 --format elf" "$tmp/given.elf" AArch64
else
	not_ok "convert --arch aarch64 --format elf"
fi
check_mount "--arch aarch64 of a LiME without either" "$plain" AArch64 "" --arch aarch64
check_mount "--arch x86_64 of the x86_64 banner LiME" "$dir/mem-banner.lime" "Advanced Micro Devices X86-64" "" --arch x86_64

# 70 ranges: the VMCOREINFO note pushes the image's headers past a page,
# so every range's data moves in the image (the readers take the new
# offsets): LiME -> LiME and LiME -> AVML -> LiME give the file back.
/usr/bin/python3 - "$tmp/many.lime" << 'PY'
import struct, sys
with open(sys.argv[1], "wb") as f:
    for i in range(70):
        s = 0x100000 * (i + 1)
        f.write(struct.pack("<IIQQQ", 0x4C694D45, 1, s, s + 0xFFF, 0))
        if i == 5:
            t = (b"OSRELEASE=6.1.0-test\nPAGESIZE=4096\n"
                 b"SYMBOL(init_top_pgt)=ffffffff82a0a000\n")
            f.write(t + bytes(4096 - len(t)))
        else:
            f.write(bytes((i * 7 + j) & 255 for j in range(4096)))
PY
got=$(k info --json --no-holes "$tmp/many.lime" | jq -r '"\(.source.machine_origin) \(.segments[1].offset)"')
[[ $got == "VMCOREINFO 0x2000" ]] &&
	ok "70 ranges: VMCOREINFO found, the data moved to 0x2000" ||
	not_ok "70 ranges: info says '$got'"
k convert -q --format lime "$tmp/many.lime" -o "$tmp/many2.lime" &&
	cmp -s "$tmp/many.lime" "$tmp/many2.lime" &&
	ok "70 ranges: convert --format lime gives the file back" ||
	not_ok "70 ranges: convert --format lime differs"
k convert -q --format avml "$tmp/many.lime" -o "$tmp/many.avml" &&
	k convert -q --format lime "$tmp/many.avml" -o "$tmp/many3.lime" &&
	cmp -s "$tmp/many.lime" "$tmp/many3.lime" &&
	ok "70 ranges: through AVML, the file back" ||
	not_ok "70 ranges: through AVML it differs"

# Contradictions: refused, one line naming the file, where and both.
refused()
{
	local what=$1 want=$2 out rc
	shift 2
	out=$(k "$@" 2>&1)
	rc=$?
	[[ $rc != 0 && $(wc -l <<< "$out") == 1 && $out == *"$want"* ]] &&
		ok "$what: refused ($out)" ||
		not_ok "$what: exit $rc, '$out'"
}
refused "--arch aarch64 on VMCOREINFO of x86_64" \
	"'$vi': --arch aarch64, but the VMCOREINFO in its memory (at physical 0x1000018) is x86_64's" \
	info --arch aarch64 "$vi"
refused "--arch aarch64 on an x86_64 ELF" \
	"'$dir/mem.elf': --arch aarch64, but its ELF header names x86_64 at offset 0x12" \
	convert -q --arch aarch64 --format lime "$dir/mem.elf" -o "$tmp/no.lime"
refused "--arch aarch64 on an x86_64 kdump" \
	"'$dir/mem.kdump': --arch aarch64, but its header names x86_64" \
	info --arch aarch64 "$dir/mem.kdump"
out=$(k info --arch sparc "$plain" 2>&1)
[[ $? == 2 && $out == *"--arch sparc: not a machine kcoredump knows (x86_64, aarch64)"* ]] &&
	ok "--arch sparc: a usage error" || not_ok "--arch sparc: '$out'"
finish
