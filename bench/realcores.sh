#!/bin/bash
# SPDX-License-Identifier: MIT
# Real process cores written by the 6.12 kernel in the VM rig (the
# process-cores case: a dense 3-thread core and a 64 GiB sparse one), dumped
# by kcoredump side by side with zstd -1 -T2 and cp --sparse=always; medians
# of REPS runs.  Boots the rig unless CORE_DIR already holds the cores.
# Usage: bench/realcores.sh [BUILD_DIR] [REPS] [CORE_DIR]
#   (writes bench/results/realcores.{md,json})
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
reps=${2:-3}
cores=${3:-}
K=$build/kcoredump
work=${BENCH_DIR:-/dev/shm/kcoredump-bench-real}
out=$here/results
mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT

if [[ -z $cores ]]; then
	echo "== making real cores in the VM rig"
	"$here/../tests/vm/run.sh" --kcoredump "$K" --results "$work/vm" \
		--no-host-check process-cores > "$work/vm.log" 2>&1 ||
		{ tail -20 "$work/vm.log"; exit 1; }
	cores=$work/vm/cores
fi

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
r() { echo "scale=1; $1 / $2" | bc -l; }

rows=()
json='{}'
for core in "$cores"/*.core; do
	name=$(basename "$core" .core)
	size=$(stat -c %s "$core")
	alloc=$(($(stat -c %b "$core") * 512))
	k=$(timeit "$reps" "$K" dump -q -f -T 2 "$core" -o "$work/out.zst")
	"$K" dump -q -f -T 2 "$core" -o "$work/out.zst"
	ks=$(stat -c %s "$work/out.zst")
	ke=$(timeit "$reps" "$K" dump -q -f -T 2 "$core" -o "$work/out.elf")
	z=$(timeit "$reps" zstd -q -1 -T2 -f "$core" -o "$work/out.zst")
	zstd -q -1 -T2 -f "$core" -o "$work/out.zst"
	zs=$(stat -c %s "$work/out.zst")
	c=$(timeit "$reps" cp --sparse=always "$core" "$work/out.cp")
	rows+=("| $name ($((size >> 20)) MiB, $((alloc >> 20)) MiB allocated) | .zst ${k} s, $((ks >> 10)) KiB; sparse ELF ${ke} s | zstd -1 -T2: ${z} s, $((zs >> 10)) KiB; cp --sparse: ${c} s | $(r "$z" "$k")x / $(r "$c" "$ke")x |")
	json=$(jq --arg n "$name" --arg k "$k" --arg ke "$ke" --arg z "$z" --arg c "$c" \
		--arg ks "$ks" --arg zs "$zs" --arg size "$size" \
		'.[$n] = {size: ($size|tonumber), kcoredump_zst_s: ($k|tonumber),
		  kcoredump_zst_bytes: ($ks|tonumber), kcoredump_elf_s: ($ke|tonumber),
		  zstd_s: ($z|tonumber), zstd_bytes: ($zs|tonumber), cp_sparse_s: ($c|tonumber)}' <<<"$json")
done
{
	echo "Real cores from the VM rig's 6.12 kernel; $(nproc) CPUs; medians of $reps runs."
	echo
	echo "| core | kcoredump | baselines | speed-up vs zstd / vs cp |"
	echo "|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee "$out/realcores.md"
echo "$json" > "$out/realcores.json"
