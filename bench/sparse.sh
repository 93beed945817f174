#!/bin/bash
# SPDX-License-Identifier: MIT
# Cost follows data (issue 17): a 1 TiB sparse process core (16 data pages,
# tests/fixtures/sparse-1t.spec) and a 64 GiB sparse kdump (the
# vmcore-x86_64 fixture with 60 GiB more of RAM holding 2 pages, converted
# to kdump), each through dump to .zst, extract, verify (of the .zst, of
# the .zst against the source, of two sparse files), convert --format
# kdump and lime (the kdump only: a process core has no physical memory)
# and info; baselines on the same files: cp --sparse=always of the
# extracted ELF, and zstd -d of the .zst (stopped after 60 s; the bytes it
# wrote by then give its rate).  Medians of 3 for kcoredump, one run of
# each baseline.  Then (issue 49) the .zst of only holes at the format's
# floor: dump -> .zst of the 1 TiB core and of the same core scaled to
# 64 GiB (one page every 4 GiB), their sizes, times and the 1 TiB / 64 GiB
# time ratio, and the same for BASE (another kcoredump, e.g. an older
# build) when set.  Writes bench/results/sparse.md.
#   [BASE=KCOREDUMP [BASE_LABEL=TEXT]] bench/sparse.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../tests/lib/shell.sh
. "$here/../tests/lib/shell.sh"
kcd_trap_errors
# shellcheck source=lib.sh
. "$here/lib.sh"
build=$(cd "${1:-$here/../build}" && pwd)
K=$build/kcoredump
work=${BENCH_DIR:-/var/tmp/kcoredump-bench-sparse}
out=$here/results
mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT
reps=3

"$build/tests/tools/mkcore" "$here/../tests/fixtures/sparse-1t.spec" "$work/core-1t"
sed -e 's/hole 64G-4K/hole 4G-4K/' -e 's/hole 64G-8K/hole 4G-8K/' \
	"$here/../tests/fixtures/sparse-1t.spec" > "$work/core-64g.spec"
"$build/tests/tools/mkcore" "$work/core-64g.spec" "$work/core-64g"
{
	cat "$here/../tests/fixtures/vmcore-x86_64.spec"
	printf 'load vaddr=0xffff8e1b80000000 paddr=0x180000000\n\tdata 4K\n\thole 60G-8K\n\tdata 4K\nend\n'
} > "$work/vm64.spec"
"$build/tests/tools/mkcore" "$work/vm64.spec" "$work/vm64.elf"
"$K" convert -q --format kdump "$work/vm64.elf" -o "$work/kdump-64g"

# t CMD...: median wall seconds of $reps runs.
t() { timeit "$reps" "$@"; }
# zstd_rate FILE.zst: seconds zstd -d takes, or "> 60 (N GiB/s)".
zstd_d() {
	local t0 t1 st=0 bytes
	t0=$(date +%s.%N)
	timeout 60 zstd -d -q -f "$1" -o "$work/zstd-d.out" 2> /dev/null || st=$?
	t1=$(date +%s.%N)
	bytes=$(stat -c %s "$work/zstd-d.out" 2> /dev/null || echo 0)
	rm -f "$work/zstd-d.out"
	if [[ $st == 0 ]]; then
		echo "$t1 - $t0" | bc -l
	else
		# Extrapolated from the bytes written in 60 s.
		echo "$(stat -c %s "$2") * 60 / ($bytes + 1)" | bc -l
	fi
}

row() { printf '| %s | %s | %.3f s | %s | %s |\n' "$@"; }
{
	echo "# Cost follows data: sparse and compressed inputs (bench/sparse.sh)"
	echo
	echo "$(nproc) CPUs, $(date -u +%Y-%m-%d). kcoredump: medians of $reps; baselines: one run."
	echo "zstd -d of a 1 TiB file does not finish in 60 s: its time is extrapolated"
	echo "from the bytes it wrote in 60 s (marked ~)."
	echo
	echo "| input | step | kcoredump | baseline | ratio |"
	echo "|---|---|---:|---|---:|"
} > "$out/sparse.md"

for name in core-1t kdump-64g; do
	src=$work/$name
	z=$work/$name.zst
	e=$work/$name.elf
	"$K" dump -q -T 2 "$src" -o "$z"
	"$K" extract -q "$z" -o "$e"
	cpb=$(t cp --sparse=always "$e" "$work/out.cp")
	zd=$(zstd_d "$z" "$e")
	approx=""
	[[ $(echo "$zd >= 60" | bc) == 1 ]] && approx="~"
	tdump=$(t "$K" dump -q -f -T 2 "$src" -o "$work/out.zst")
	text=$(t "$K" extract -q -f "$z" -o "$work/out.elf")
	tv=$(t "$K" verify -q "$z")
	tvs=$(t "$K" verify -q "$z" "$src")
	tvf=$(t "$K" verify -q "$e" "$src")
	ti=$(t "$K" info --no-modules "$z")
	lsize=$(stat -c %s "$e")
	zsize=$(stat -c %s "$z")
	{
		echo "| $name ($(numfmt --to=iec "$lsize") logical, .zst $(numfmt --to=iec "$zsize")) | | | | |"
		row "" "dump -> .zst" "$tdump" "cp --sparse=always: $(printf %.3f "$cpb") s" "$(echo "$cpb / $tdump" | bc -l | xargs printf %.1fx)"
		row "" "extract" "$text" "zstd -d: $approx$(printf %.1f "$zd") s" "$approx$(echo "$zd / $text" | bc -l | xargs printf %.0fx)"
		row "" "verify .zst" "$tv" "zstd -d: $approx$(printf %.1f "$zd") s" "$approx$(echo "$zd / $tv" | bc -l | xargs printf %.0fx)"
		row "" "verify .zst SOURCE" "$tvs" "zstd -d: $approx$(printf %.1f "$zd") s" "$approx$(echo "$zd / $tvs" | bc -l | xargs printf %.0fx)"
		row "" "verify ELF SOURCE (two sparse files)" "$tvf" "cp --sparse=always: $(printf %.3f "$cpb") s" "$(echo "$cpb / $tvf" | bc -l | xargs printf %.1fx)"
		row "" "info .zst" "$ti" "-" "-"
		if [[ $name == kdump-64g ]]; then
			for f in kdump lime; do
				tc=$(t "$K" convert -q -f -T 2 --format $f "$z" -o "$work/out.$f")
				row "" "convert .zst --format $f" "$tc" "zstd -d: $approx$(printf %.1f "$zd") s" "$approx$(echo "$zd / $tc" | bc -l | xargs printf %.0fx)"
				tk=$(t "$K" convert -q -f -T 2 --format $f "$src" -o "$work/out.$f")
				row "" "convert kdump --format $f" "$tk" "cp --sparse=always: $(printf %.3f "$cpb") s" "$(echo "$cpb / $tk" | bc -l | xargs printf %.1fx)"
			done
			tik=$(t "$K" info --no-modules "$src")
			row "" "info kdump" "$tik" "-" "-"
		fi
	} >> "$out/sparse.md"
done

# Issue 49: holes only, dump -> .zst; the time should follow the bytes
# written (1 TiB: 32 MiB, 64 GiB: 2 MiB), not the logical size.
holes() {
	local bin=$1 label=$2 t64 t1t s64 s1t
	"$bin" dump -q -f -T 2 "$work/core-64g" -o "$work/h64.zst"
	"$bin" dump -q -f -T 2 "$work/core-1t" -o "$work/h1t.zst"
	s64=$(size "$work/h64.zst") s1t=$(size "$work/h1t.zst")
	t64=$(t "$bin" dump -q -f -T 2 "$work/core-64g" -o "$work/out.zst")
	t1t=$(t "$bin" dump -q -f -T 2 "$work/core-1t" -o "$work/out.zst")
	printf '| %s | %s (%.2f MiB) | %.3f s | %s (%.2f MiB) | %.3f s | %.2f |\n' \
		"$label" "$s64" "$(echo "$s64 / 1048576" | bc -l)" "$t64" \
		"$s1t" "$(echo "$s1t / 1048576" | bc -l)" "$t1t" "$(echo "$t1t / $t64" | bc -l)"
}
{
	echo
	echo "## Holes only: .zst at the format's floor (issue 49)"
	echo
	echo "dump -q -T 2 -> .zst of sparse-1t (1 TiB, 16 pages of data) and of it scaled"
	echo "to 64 GiB (one page every 4 GiB); medians of $reps runs, one row after the"
	echo "other.  Floor: one 4-byte RLE block per 128 KiB,"
	echo "32 MiB per TiB; the ratio is the 1 TiB time over the 64 GiB time."
	echo
	echo "| kcoredump | 64 GiB .zst | 64 GiB dump | 1 TiB .zst | 1 TiB dump | 1 TiB / 64 GiB |"
	echo "|---|---:|---:|---:|---:|---:|"
	if [[ -n ${BASE:-} ]]; then
		holes "$BASE" "BASE: ${BASE_LABEL:-$BASE}"
	fi
	holes "$K" "this build ($(git -C "$here" describe --always --dirty 2> /dev/null || echo unknown))"
} >> "$out/sparse.md"
cat "$out/sparse.md"
