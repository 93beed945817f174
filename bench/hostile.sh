#!/bin/bash
# SPDX-License-Identifier: MIT
# Files whose cost is in their shape (issue 15 items 9 and 10), made by
# bench/hostile.py: an ELF vmcore with N data-less PT_LOADs, a kdump with
# N runs in bitmap 1, a LiME file with N one-byte ranges, at N = 64 Ki,
# 256 Ki and 1 Mi; and a kdump whose bitmaps claim 4 GiB of a few KB.
# For each: wall time and peak RSS of
#   kcoredump info FILE            (open, classify, holes, the text)
#   kcoredump convert FILE --format elf -n   (open and plan, printed)
# medians of REPS runs.  The baseline is the same command on the 64 Ki
# file of the same run: an n log n open and plan grows about 16x to 1 Mi,
# a quadratic one 256x.
# Usage: bench/hostile.sh [BUILD_DIR] [REPS]
#   (writes bench/results/hostile.{md,json})
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../tests/lib/shell.sh
. "$here/../tests/lib/shell.sh"
kcd_trap_errors
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
build=$(cd "${1:-$here/../build}" && pwd)
reps=${2:-3}
K=$build/kcoredump
work=${BENCH_DIR:-/tmp/kcoredump-bench-hostile}
out=$here/results
[[ -x $K ]] || { echo "bench/hostile.sh: no $K (build first)" >&2; exit 1; }
mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT

# rss CMD...: peak RSS (KiB) of one run.
rss() { /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -n 1; }

rows=()
json=()
for kind in elf kdump lime; do
	base_info="" base_plan=""
	for n in 65536 262144 1048576; do
		f=$work/$kind.$n
		/usr/bin/python3 "$here/hostile.py" "$kind" "$n" "$f"
		# A kdump may have one run per 16 bytes of bitmap 1, 64 Ki at
		# least (issue 27): these are refused at once, not timed.
		if ! "$K" info "$f" > /dev/null 2>&1; then
			echo "$kind N=$n: refused ($("$K" info "$f" 2>&1 >/dev/null | head -c 120))"
			rm -f "$f"
			continue
		fi
		t_info=$(printf '%.2f' "$(timeit "$reps" "$K" info "$f")")
		t_plan=$(printf '%.2f' "$(timeit "$reps" "$K" convert "$f" --format elf -n)")
		m_info=$(rss "$K" info "$f")
		m_plan=$(rss "$K" convert "$f" --format elf -n)
		: "${base_info:=$t_info}" "${base_plan:=$t_plan}"
		r_info=$(echo "scale=1; $t_info / $base_info" | bc)
		r_plan=$(echo "scale=1; $t_plan / $base_plan" | bc)
		echo "$kind N=$n: info $t_info s (${r_info}x, $m_info KiB), plan $t_plan s (${r_plan}x, $m_plan KiB)"
		rows+=("| $kind | $n | $(size "$f") | $t_info | ${r_info}x | $m_info | $t_plan | ${r_plan}x | $m_plan |")
		json+=("{\"kind\": \"$kind\", \"n\": $n, \"bytes\": $(size "$f"), \"info_s\": $t_info, \"info_ratio\": $r_info, \"info_rss_kib\": $m_info, \"plan_s\": $t_plan, \"plan_ratio\": $r_plan, \"plan_rss_kib\": $m_plan}")
		rm -f "$f"
	done
done
/usr/bin/python3 "$here/hostile.py" sparse-kdump 4 "$work/sparse.kdump"
t_sparse=$(printf '%.2f' "$(timeit "$reps" "$K" info "$work/sparse.kdump")")
m_sparse=$(rss "$K" info "$work/sparse.kdump")
echo "sparse kdump (4 GiB claimed, $(du -k "$work/sparse.kdump" | cut -f1) KiB on disk): info $t_sparse s, $m_sparse KiB"
load=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "# Hostile shapes (bench/hostile.sh, $(date -u +%Y-%m-%d), $(nproc) CPUs, load $load)"
	echo
	echo "Medians of $reps runs; the ratio is against the 64 Ki file of the same kind in the same run (n log n: about 16x at 1 Mi; quadratic: 256x)."
	echo
	echo "| kind | N | file bytes | info s | vs 64 Ki | info KiB | plan s | vs 64 Ki | plan KiB |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "A kdump whose bitmaps claim 4 GiB, a few KiB on disk: info $t_sparse s, peak RSS $m_sparse KiB."
} > "$out/hostile.md"
{
	echo "{\"load\": \"$load\", \"reps\": $reps, \"shapes\": ["
	(IFS=,; echo "${json[*]}")
	echo "], \"sparse_kdump\": {\"info_s\": $t_sparse, \"info_rss_kib\": $m_sparse}}"
} | jq . > "$out/hostile.json"
cat "$out/hostile.md"
