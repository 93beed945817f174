#!/bin/bash
# SPDX-License-Identifier: MIT
# README command (1)'s work on a kcore (scripts/main-job.sh runs it on this
# machine's /proc/kcore; tests/integration/main-job-summary.sh on a
# fixture): describe it, dump all of its RAM (zstd) and its mapped vmalloc
# areas, verify both, leaving in OUT
#   info.txt info.json            what info says (VMCOREINFO and all)
#   ram.elf.zst ram.json          the RAM dump and its JSON summary
#   vmalloc.elf vmalloc.json      the vmalloc dump and its JSON summary
#   verify-ram.json verify-vmalloc.json   their verification
# for scripts/main-job-summary.py.  The dumps show their progress on a
# terminal; nothing else is printed.  Exit status: verify's, when a dump
# does not verify.
#   main-job-dumps.sh KCOREDUMP SOURCE OUT
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
kcoredump=$1 source=$2 out=$3

mkdir -p "$out"
"$kcoredump" info "$source" > "$out/info.txt"
"$kcoredump" info --json "$source" > "$out/info.json"
"$kcoredump" dump -f "$source" -o "$out/ram.elf.zst" --json > "$out/ram.json"
"$kcoredump" dump -f --vmalloc-range "$source" -o "$out/vmalloc.elf" \
	--json > "$out/vmalloc.json"
# A dump that does not verify is said in the summary (verify's JSON), and
# in the exit status.
status=0
"$kcoredump" verify --json "$out/ram.elf.zst" > "$out/verify-ram.json" ||
	status=$?
"$kcoredump" verify --json "$out/vmalloc.elf" > "$out/verify-vmalloc.json" ||
	status=$?
exit "$status"
