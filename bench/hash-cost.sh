#!/bin/bash
# SPDX-License-Identifier: MIT
# What integrity costs: a dense core of mixed content on tmpfs copied to a
# sparse ELF by cp --sparse=always (the baseline), by kcoredump dump with
# SHA-256 (the default) and with --hash none, side by side in one run;
# plus the machine's single-core SHA-256 rate (openssl speed) to explain
# the difference.  Medians of REPS runs.
# Usage: bench/hash-cost.sh [BUILD_DIR] [REPS] [GIB]
#   (writes bench/results/hash-cost.{md,json})
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
reps=${2:-5}
gib=${3:-2}
K=$build/kcoredump
MK=$build/tests/tools/mkcore
work=${BENCH_DIR:-/dev/shm/kcoredump-hash-bench}
out=$here/results
mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

printf 'load vaddr=0x10000000 flags=rw\n\thole %sG\nend\n' "$gib" > "$work/dense.spec"
"$MK" "$work/dense.spec" "$work/dense.core"
off=$("$K" info --json "$work/dense.core" | jq -r '.segments[] | select(.type == "LOAD") | .offset')
(
	set +o pipefail # head closes its pipe early
	# Half executables and libraries, a quarter zeros, a quarter random.
	find /usr/bin /usr/lib -type f -size +64k 2> /dev/null | head -4000 |
		xargs cat 2> /dev/null | head -c $((gib << 29))
	head -c $((gib << 28)) /dev/zero
	head -c $((gib << 28)) /dev/urandom
) | dd of="$work/dense.core" bs=1M seek=$((off)) oflag=seek_bytes conv=notrunc status=none
truncate -s $((off + (gib << 30))) "$work/dense.core"

t_cp=$(timeit "$reps" cp --sparse=always "$work/dense.core" "$work/out.cp")
t_sha=$(timeit "$reps" "$K" dump -q -f -T 2 "$work/dense.core" -o "$work/out.elf")
t_none=$(timeit "$reps" "$K" dump -q -f -T 2 --hash none "$work/dense.core" -o "$work/out.elf")
sha_mbs=$(openssl speed -bytes 1048576 -seconds 2 sha256 2> /dev/null |
	awk '/^sha256/ { sub(/k$/, "", $2); printf "%.0f", $2 * 1000 / 1048576 }')
r() { echo "scale=2; $1 / $2" | bc -l; }
mbs() { echo "scale=0; $gib * 1024 / $1" | bc -l; }
cpu=$(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo | sed 's/^ *//')
{
	echo "# What SHA-256 costs a dump"
	echo
	echo "Machine: $(nproc) CPUs ($cpu), single-core SHA-256 $sha_mbs MiB/s (openssl speed, 1 MiB blocks); a $gib GiB core (half binaries, a quarter zeros, a quarter random) on tmpfs to tmpfs; medians of $reps runs."
	echo
	echo "| copy | seconds | MiB/s | vs cp --sparse=always |"
	echo "|---|---:|---:|---:|"
	echo "| cp --sparse=always | $t_cp | $(mbs "$t_cp") | 1x |"
	echo "| kcoredump dump (SHA-256, default) | $t_sha | $(mbs "$t_sha") | $(r "$t_cp" "$t_sha")x |"
	echo "| kcoredump dump --hash none | $t_none | $(mbs "$t_none") | $(r "$t_cp" "$t_none")x |"
} | tee "$out/hash-cost.md"
jq -n --argjson gib "$gib" --argjson reps "$reps" --arg cp "$t_cp" --arg sha "$t_sha" \
	--arg none "$t_none" --arg rate "$sha_mbs" \
	'{gib: $gib, reps: $reps, sha256_mib_per_s: ($rate|tonumber),
	  cp_sparse_s: ($cp|tonumber), kcoredump_sha256_s: ($sha|tonumber),
	  kcoredump_hash_none_s: ($none|tonumber)}' > "$out/hash-cost.json"
