#!/bin/bash
# SPDX-License-Identifier: MIT
# Real readers on `kcoredump mount` of a real kernel's memory: the VM
# guest's RAM dump (vm-formats leaves ram.elf) as ram.elf.zst and as
# ram.kdump, each mounted:
#  - crash --osrelease prints the guest's release;
#  - drgn (tests/oracle/mount-readers.py) reads init_uts_ns's release and
#    2000 random pages with data as on the extracted ELF; with VMLINUX (the
#    heavy tier: tests/oracle/fetch-dbg.sh), also linux_banner and the
#    task list.
# The mounted .zst's vmcore is compared with cmp against extract's output.
# drgn on the mounted kdump: physical reads only (its ELF image has no
# kernel-image mapping for drgn's page-table walk; crash needs none).
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
	"$kcoredump" extract -q "$tmp/ram.elf.zst" -o "$tmp/ram-ext.elf" || not_ok "dumps of $ram"
for f in ram.elf.zst ram.kdump; do
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
	args=(--pages 2000)
	if [[ $f == ram.kdump ]]; then
		args+=(--physical-only)
	elif [[ -n $vmlinux ]]; then
		args+=(--vmlinux "$vmlinux")
	fi
	if out=$(/usr/bin/python3 "$here/mount-readers.py" "$m/vmcore" "$tmp/ram-ext.elf" "${args[@]}" 2>&1); then
		while read -r line; do
			[[ $line == ok* ]] && ok "$f: drgn: ${line#ok * - }"
		done <<< "$out"
	else
		not_ok "$f: drgn on the mount"
		grep -v '^time' <<< "$out" | tail -n 6 | sed 's/^/#   /'
	fi
done
cmp "$tmp/m-ram.elf.zst/vmcore" "$tmp/ram-ext.elf" &&
	ok "ram.elf.zst: the mounted vmcore equals extract's output (cmp)" ||
	not_ok "ram.elf.zst: the mounted vmcore differs from extract's output"
finish
