#!/bin/bash
# SPDX-License-Identifier: MIT
# Real readers on `kcoredump mount` of a real kernel's memory: the VM
# guest's RAM dump (vm-formats leaves ram.elf) as ram.elf.zst, ram.kdump
# and ram.lime, each mounted, and the ELF `convert --format elf` makes of
# the kdump:
#  - crash --osrelease prints the guest's release (LiME too: its machine
#    and VMCOREINFO are found in the memory, issue 43);
#  - drgn (tests/oracle/mount-readers.py) reads init_uts_ns's release by
#    its virtual address and 2000 random pages with data as on the
#    extracted ELF; with VMLINUX (the heavy tier:
#    tests/oracle/fetch-dbg.sh), also linux_banner and the task list.
#    The kdump holds physical memory only: its mounted and converted ELF
#    get the kernel image and direct map at their exact virtual addresses
#    (drgn 0.0.22 reads swapper_pg_dir through the first).  So does the
#    LiME file, with the VMCOREINFO found in its memory.
# The mounted .zst's vmcore is compared with cmp against extract's output;
# the mounted kdump's program headers with those of the converted ELF.
#   mount-kernel.sh KCOREDUMP RAM_ELF [VMLINUX]
set -uo pipefail
kcoredump=$1 ram=$2 vmlinux=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../integration/lib.sh"
[[ -e /dev/fuse ]] || { echo "1..0 # SKIP no /dev/fuse"; exit 77; }
[[ -r $ram ]] || { echo "1..0 # SKIP no guest dump $ram (ctest -R vm-formats)"; exit 77; }
command -v crash > /dev/null || { echo "1..0 # SKIP crash not installed"; exit 77; }
tmp=$(mktemp -d)
mounts=()
cleanup() {
	for m in "${mounts[@]}"; do fusermount3 -u "$m" 2> /dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
rel=$(cat "$(dirname "$ram")/uname-r" 2> /dev/null ||
	"$kcoredump" info --json --no-holes --no-modules "$ram" | jq -r .source.kernel_release)
"$kcoredump" dump -q -T 2 "$ram" -o "$tmp/ram.elf.zst" &&
	"$kcoredump" convert -q -T 2 --format kdump "$ram" -o "$tmp/ram.kdump" &&
	"$kcoredump" convert -q -T 2 --format lime "$ram" -o "$tmp/ram.lime" &&
	"$kcoredump" convert -q -T 2 --format elf "$tmp/ram.kdump" -o "$tmp/kdump.elf" &&
	"$kcoredump" extract -q "$tmp/ram.elf.zst" -o "$tmp/ram-ext.elf" || not_ok "dumps of $ram"
# drgn on FILE (NAME in the output), reading by virtual address unless
# physical-only, with the task list when VMLINUX is there.
drgn_on() {
	local name=$1 file=$2 out args=(--pages 2000)
	if [[ ${3:-} == physical ]]; then
		args+=(--physical-only)
	elif [[ -n $vmlinux ]]; then
		args+=(--vmlinux "$vmlinux")
	fi
	if out=$(/usr/bin/python3 "$here/mount-readers.py" "$file" "$tmp/ram-ext.elf" "${args[@]}" 2>&1); then
		while read -r line; do
			[[ $line == ok* ]] && ok "$name: drgn: ${line#ok * - }"
		done <<< "$out"
	else
		not_ok "$name: drgn"
		grep -v '^time' <<< "$out" | tail -n 6 | sed 's/^/#   /'
	fi
}
# The program headers readelf shows, from the first PT_LOAD on.
loads() {
	eu-readelf -l "$1" | awk '$1 == "LOAD" { print $3, $4, $6 }'
}
for f in ram.elf.zst ram.kdump ram.lime; do
	m=$tmp/m-$f
	mkdir -p "$m"
	mounts+=("$m")
	if ! "$kcoredump" mount "$tmp/$f" "$m"; then
		not_ok "$f: mounted"
		continue
	fi
	got=$(crash --osrelease "$m/vmcore" 2>&1 | tail -n 1)
	[[ $got == "$rel" ]] && ok "$f: crash --osrelease on the mount says $got" ||
		not_ok "$f: crash --osrelease on the mount says '$got', not $rel"
	drgn_on "$f (mounted)" "$m/vmcore"
done
drgn_on "kdump.elf (convert --format elf of ram.kdump)" "$tmp/kdump.elf"
cmp "$tmp/m-ram.elf.zst/vmcore" "$tmp/ram-ext.elf" &&
	ok "ram.elf.zst: the mounted vmcore equals extract's output (cmp)" ||
	not_ok "ram.elf.zst: the mounted vmcore differs from extract's output"
# The kdump's mount serves the PT_LOADs convert writes: the kernel image
# (as the guest's /proc/kcore dump has it, to its last mapped page) and
# RAM at the direct map.
want=$(loads "$tmp/kdump.elf")
got=$(loads "$tmp/m-ram.kdump/vmcore")
[[ -n $want && $got == "$want" ]] &&
	ok "ram.kdump: the mount's PT_LOADs (vaddr, paddr, size) are convert's: $(wc -l <<< "$got") loads" ||
	not_ok "ram.kdump: the mount's PT_LOADs differ from convert's: '$got' vs '$want'"
orig=$(loads "$ram" | awk '{ print $1 }')
[[ $(awk '{ print $1 }' <<< "$want") == "$orig" ]] &&
	ok "kdump.elf: the virtual addresses of its PT_LOADs are those of the guest's ELF dump" ||
	not_ok "kdump.elf: PT_LOAD virtual addresses $(awk '{ print $1 }' <<< "$want" | xargs) differ from the guest's $(xargs <<< "$orig")"
finish
