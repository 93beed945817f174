#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump mount against the extracted file (issue 17), side by side:
#  - drgn (tests/oracle/mount-readers.py): open with the guest's debug
#    vmlinux, walk the task list, read 10,000 random pages with data, on
#    the mounted vmcore of the VM guest's 1 GiB RAM dump in zstd (4M
#    frames, the default, and 256K frames) and on the extracted ELF;
#  - crash -s start-up (vmlinux, --kaslr=auto --no_modules, "exit");
#  - the 1 TiB sparse .zst: mount, and crash --osrelease on its vmcore.
# A new mount starts with a cold cache (its prefetch fills the page cache
# beside the reader); the extracted file is in the page cache (it was just
# written).  Medians of 3.  Writes
# bench/results/mount.md.
#   bench/mount.sh [BUILD_DIR] [REPS] [ELF] [VMLINUX]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../tests/lib/shell.sh
. "$here/../tests/lib/shell.sh"
kcd_trap_errors
# shellcheck source=lib.sh
. "$here/lib.sh"
bench_init mount "${1:-}" "${2:-3}" "${3:-}"
vmlinux=${4:-}
if [[ -z $vmlinux ]]; then
	ver=$(cat "$(dirname "$input")/uname-r" 2> /dev/null || true)
	[[ -n $ver ]] && vmlinux=$("$here/../tests/oracle/fetch-dbg.sh" "$ver" 2> /dev/null || true)
fi
readers=$here/../tests/oracle/mount-readers.py
mounts=()
cleanup() {
	for m in "${mounts[@]}"; do fusermount3 -u "$m" 2> /dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

load_start=$(cut -d" " -f1 /proc/loadavg)
"$K" dump -q -T 2 "$input" -o "$work/ram.zst"
"$K" dump -q -T 2 --frame-size 256K "$input" -o "$work/ram256.zst"
"$K" extract -q "$work/ram.zst" -o "$work/ram.elf"

# mount_fresh DUMP DIR: (re)mount DUMP on DIR, cold.
mount_fresh() {
	fusermount3 -u "$2" 2> /dev/null || true
	mkdir -p "$2"
	mounts+=("$2")
	"$K" mount "$1" "$2"
}
declare -A drgn pages crash
for v in ram.zst ram256.zst ram.elf; do
	d=() p=() c=()
	for i in $(seq "$reps"); do
		f=$work/$v
		if [[ $v != ram.elf ]]; then
			mount_fresh "$work/$v" "$work/m-$v"
			f=$work/m-$v/vmcore
		fi
		res=$(/usr/bin/python3 "$readers" "$f" "$work/ram.elf" --only ${vmlinux:+--vmlinux "$vmlinux"})
		d+=("$(awk '$2 == "total" { print $3 }' <<< "$res")")
		p+=("$(awk '$2 == "pages" { print $3 }' <<< "$res")")
		if [[ -n $vmlinux ]]; then
			[[ $v != ram.elf ]] && mount_fresh "$work/$v" "$work/m-$v"
			t0=$(date +%s.%N)
			# crash 8.0.2 may stop early on 6.12; the time to get there
			# is what is compared.
			(echo exit | crash -s --kaslr=auto --no_modules "$vmlinux" "$f") > /dev/null 2>&1 || true
			t1=$(date +%s.%N)
			c+=("$(echo "$t1 - $t0" | bc -l)")
		fi
	done
	drgn[$v]=$(printf '%s\n' "${d[@]}" | median)
	pages[$v]=$(printf '%s\n' "${p[@]}" | median)
	[[ -n $vmlinux ]] && crash[$v]=$(printf '%s\n' "${c[@]}" | median)
done

"$build/tests/tools/mkcore" "$here/../tests/fixtures/sparse-1t.spec" "$work/core-1t"
"$K" dump -q -T 2 "$work/core-1t" -o "$work/s.zst"
tm=() tc=() te=()
for i in $(seq "$reps"); do
	fusermount3 -u "$work/m-s" 2> /dev/null || true
	mkdir -p "$work/m-s"
	mounts+=("$work/m-s")
	t0=$(date +%s.%N)
	"$K" mount "$work/s.zst" "$work/m-s"
	t1=$(date +%s.%N)
	crash --osrelease "$work/m-s/vmcore" > /dev/null 2>&1 || true
	t2=$(date +%s.%N)
	crash --osrelease "$work/core-1t" > /dev/null 2>&1 || true
	t3=$(date +%s.%N)
	tm+=("$(echo "$t1 - $t0" | bc -l)") tc+=("$(echo "$t2 - $t1" | bc -l)") te+=("$(echo "$t3 - $t2" | bc -l)")
done
fmt() { printf '%.3f' "$1"; }
ratio() { printf '%.2fx' "$(echo "$1 / $2" | bc -l)"; }
{
	echo "# kcoredump mount (bench/mount.sh)"
	echo
	echo "$(nproc) CPUs, $(date -u +%Y-%m-%d), medians of $reps, host load (1 min) $load_start at the start, $(cut -d" " -f1 /proc/loadavg) at the end. Input: $(basename "$input")"
	echo "($(numfmt --to=iec "$(size "$work/ram.elf")") logical), .zst $(numfmt --to=iec "$(size "$work/ram.zst")") (4M frames),"
	echo "$(numfmt --to=iec "$(size "$work/ram256.zst")") (256K frames). Each mount starts cold; the extracted file is in the page cache."
	echo "vmlinux: ${vmlinux:-none (no task walk, no crash)}"
	echo
	echo "| case | mounted .zst (4M frames) | mounted .zst (256K frames) | extracted ELF | ratio 4M / 256K |"
	echo "|---|---:|---:|---:|---:|"
	echo "| drgn: open$([[ -n $vmlinux ]] && echo ' + debug info + task list') + 10,000 random pages | $(fmt "${drgn[ram.zst]}") s | $(fmt "${drgn[ram256.zst]}") s | $(fmt "${drgn[ram.elf]}") s | $(ratio "${drgn[ram.zst]}" "${drgn[ram.elf]}") / $(ratio "${drgn[ram256.zst]}" "${drgn[ram.elf]}") |"
	echo "| of which 10,000 random pages | $(fmt "${pages[ram.zst]}") s | $(fmt "${pages[ram256.zst]}") s | $(fmt "${pages[ram.elf]}") s | $(ratio "${pages[ram.zst]}" "${pages[ram.elf]}") / $(ratio "${pages[ram256.zst]}" "${pages[ram.elf]}") |"
	if [[ -n $vmlinux ]]; then
		echo "| crash -s start-up | $(fmt "${crash[ram.zst]}") s | $(fmt "${crash[ram256.zst]}") s | $(fmt "${crash[ram.elf]}") s | $(ratio "${crash[ram.zst]}" "${crash[ram.elf]}") / $(ratio "${crash[ram256.zst]}" "${crash[ram.elf]}") |"
	fi
	echo
	echo "| 1 TiB sparse process core in .zst ($(numfmt --to=iec "$(size "$work/s.zst")")) | seconds |"
	echo "|---|---:|"
	echo "| kcoredump mount | $(fmt "$(printf '%s\n' "${tm[@]}" | median)") |"
	echo "| crash --osrelease on the mounted vmcore | $(fmt "$(printf '%s\n' "${tc[@]}" | median)") |"
	echo "| crash --osrelease on the sparse ELF itself (baseline) | $(fmt "$(printf '%s\n' "${te[@]}" | median)") |"
} > "$out/mount.md"
cat "$out/mount.md"
