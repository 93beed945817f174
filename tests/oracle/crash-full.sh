#!/bin/bash
# SPDX-License-Identifier: MIT
# Heavy oracle test (ctest label "heavy", opt-in): crash(8) with the
# guest kernel's vmlinux (linux-image-<version>-dbg, about 1 GB, fetched
# once into the cache by fetch-dbg.sh) opens the VM guest's dumps -- the
# ELF dump, the flattened kdump from its pipe, and the kdump, zlib kdump
# and ELF that kcoredump convert makes of the ELF dump -- and runs sys,
# ps, log and kmem -i without an error.
#   crash-full.sh KCOREDUMP RESULTS_DIR
# RESULTS_DIR is the vm-formats case's results (ram.elf, ram.flat, uname-r).
set -uo pipefail
kcoredump=$1 d=$2
here=$(cd "$(dirname "$0")" && pwd)
command -v crash > /dev/null || { echo "# SKIP: crash not installed"; exit 77; }
[[ -r $d/ram.elf && -r $d/uname-r ]] ||
	{ echo "# SKIP: no guest dump in $d (run ctest -R vm-formats first)"; exit 77; }
rel=$(cat "$d/uname-r")
vmlinux=$("$here/fetch-dbg.sh" "$rel") || { echo "# SKIP: no vmlinux for $rel"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-crash.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
"$kcoredump" convert -q -T 2 --format kdump "$d/ram.elf" -o "$tmp/ram.kdump"
"$kcoredump" convert -q -T 2 --format kdump --codec zlib "$d/ram.elf" -o "$tmp/zlib.kdump"
"$kcoredump" convert -q -T 2 --format elf "$d/ram.elf" -o "$tmp/converted.elf"
printf '%s\n' sys ps log "kmem -i" exit > "$tmp/cmds"
for f in "$d/ram.elf" "$d/ram.flat" "$tmp/ram.kdump" "$tmp/zlib.kdump" "$tmp/converted.elf"; do
	n=$((n + 1))
	out=$tmp/$(basename "$f").out
	crash -s "$vmlinux" "$f" < "$tmp/cmds" > "$out" 2>&1
	rc=$?
	# What crash says when it cannot read or make sense of something.
	errors=$(grep -E "^crash: |page excluded|invalid|seek error|read error|cannot|not match" "$out" |
		grep -v "^crash: cannot determine .* task" | head -n 5)
	if [[ $rc -eq 0 ]] && [[ -z $errors ]] && grep -q "RELEASE: $rel" "$out" &&
		grep -q "PID: *1 .*\| *1 *0 .*systemd\|init" "$out" &&
		grep -q "TOTAL MEM" "$out" && grep -q "Linux version" "$out"; then
		echo "ok $n - crash $(basename "$f"): sys, ps, log, kmem -i without errors"
	else
		echo "not ok $n - crash $(basename "$f") (exit $rc)"
		printf '%s\n' "$errors" | sed 's/^/#   /'
		tail -n 15 "$out" | sed 's/^/#   /'
		fail=1
	fi
done
echo "1..$n"
exit $fail
