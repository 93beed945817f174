#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 30 item 4: a sparse ELF core copied to a plain sparse ELF file.
# A synthetic process core (mkcore) of 48 GiB apparent size with MIB MiB
# of data (pattern bytes, and 1/8 of them allocated zero pages, which every
# tool here makes holes) in a few dense runs between large holes, copied
# in one run, interleaved, REPS times each by
#   cp --sparse=always                      (the baseline)
#   kcoredump convert --hash none           (the copy path)
#   kcoredump convert --hash none, KCOREDUMP_COPY_PATH=0
#                                           (the block pipeline: the code
#                                            before the copy path)
#   kcoredump convert                       (the default: the pipeline,
#                                            XXH3-128 block digests on the
#                                            workers, the file's SHA-256 on
#                                            its own thread)
#   kcoredump convert, KCOREDUMP_COPY_PATH=1
#                                           (the same on the copy path,
#                                            one thread)
#   kcoredump convert --hash sha256         (SHA-256 block digests too)
# Medians of wall time (speed ratio = cp's time / the tool's), of user +
# system CPU time, and of peak RSS (/usr/bin/time -v).  The input is read
# once before (by cp), so every run reads it from the page cache; the outputs go
# to BENCH_DIR (default /var/tmp, a disk file system like the cores'
# store).  The machine may be loaded by other jobs: compare the ratios of
# one run, not seconds between runs.
#   bench/sparse-copy.sh [BUILD_DIR] [REPS] [MIB] [HOLE]
#   (writes bench/results/sparse-copy.md)
# HOLE (default 16G) is each of the three holes between the dense runs:
# issue 40 runs it with 128M, an input whose data is at least its holes,
# where the file's SHA-256 (which hashes the holes as zeros, as sha256sum
# reads them) is computed rather than given up, so that its cost shows.
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
reps=${2:-7}
mib=${3:-512}
hole=${4:-16G}
K=$build/kcoredump
MK=$build/tests/tools/mkcore
work=${BENCH_DIR:-/var/tmp/kcoredump-bench-sparse-copy}
out=$here/results
for tool in "$K" "$MK" /usr/bin/time; do
	[[ -x $tool ]] || {
		echo "bench/sparse-copy.sh: $tool is missing (build first; /usr/bin/time is package time)" >&2
		exit 1
	}
done
((mib >= 64 && mib % 64 == 0)) || {
	echo "bench/sparse-copy.sh: MIB must be a multiple of 64, at least 64 (got $mib)" >&2
	exit 1
}
mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# Four dense runs in the first load, each 7/8 pattern and 1/8 zero pages
# in 64 KiB stripes, between HOLE holes; a small load before it.
run=$((mib / 4))
{
	echo "elf class=64 data=lsb machine=x86_64 type=core align=4096"
	echo "note prstatus pid=4242 signal=SIGSEGV rip=0x401136"
	echo "note prpsinfo state=R fname=bigmap args=\"./bigmap\" pid=4242"
	printf 'load vaddr=0x400000 flags=r\n\tdata 4K\nend\n'
	echo "load vaddr=0x7e0000000000 flags=rw"
	for i in 1 2 3 4; do
		for ((s = 0; s < run * 16 / 8; s++)); do
			printf '\tdata 448K\n\tdata 64K zero\n'
		done
		[[ $i == 4 ]] || printf '\thole %s\n' "$hole"
	done
	echo "end"
} > "$work/core.spec"
"$MK" "$work/core.spec" "$work/core"
apparent=$(stat -c %s "$work/core")
ondisk=$(($(stat -c %b "$work/core") * $(stat -c %B "$work/core")))

# one NAME CMD...: one run; appends "wall cpu rss_kib" to $work/NAME.
one() {
	local name=$1 t0 t1
	shift
	rm -f "$work/out"
	t0=$(date +%s.%N)
	/usr/bin/time -o "$work/time.txt" -f "%U %S %M" "$@" > /dev/null 2> "$work/err.txt" || {
		echo "bench/sparse-copy.sh: $name failed: $(head -c 300 "$work/err.txt")" >&2
		exit 1
	}
	t1=$(date +%s.%N)
	awk -v w="$(echo "$t1 - $t0" | bc -l)" '{ print w, $1 + $2, $3 }' "$work/time.txt" >> "$work/$name"
}
names=(cp copy pipeline sha256 sha256copy sha256blocks)
for n in "${names[@]}"; do : > "$work/$n"; done
# Into the page cache (cp reads only the data), and a first output.
cp --sparse=always "$work/core" "$work/out"
for ((r = 0; r < reps; r++)); do
	one cp cp --sparse=always "$work/core" "$work/out"
	one copy "$K" convert -q --format elf --hash none "$work/core" -o "$work/out"
	one pipeline env KCOREDUMP_COPY_PATH=0 "$K" convert -q --format elf --hash none "$work/core" -o "$work/out"
	one sha256 "$K" convert -q --format elf "$work/core" -o "$work/out"
	one sha256copy env KCOREDUMP_COPY_PATH=1 "$K" convert -q --format elf "$work/core" -o "$work/out"
	one sha256blocks "$K" convert -q --format elf --hash sha256 "$work/core" -o "$work/out"
done
# Whether the default computed the file's SHA-256 (the holes hashed as
# zeros) or gave it up (holes outweighing the data).
fsum=$("$K" convert -q -f --json --format elf "$work/core" -o "$work/out" | jq -r .file_sha256)
if [[ $fsum == "$(sha256sum "$work/out" | cut -d' ' -f1)" ]]; then
	fsum_text="computed in the default runs (the holes hashed as zeros), equal to sha256sum's"
else
	fsum_text="not computed in the default runs ($fsum): the holes outweigh the data"
fi
# What the copy path allocates (holes and zero pages stay holes).
"$K" convert -q -f --format elf --hash none "$work/core" -o "$work/out"
out_ondisk=$(($(stat -c %b "$work/out") * $(stat -c %B "$work/out")))

col() { awk -v c="$2" '{ print $c }' "$work/$1" | median; }
declare -A wall cpu rss
for n in "${names[@]}"; do
	wall[$n]=$(col "$n" 1)
	cpu[$n]=$(col "$n" 2)
	rss[$n]=$(col "$n" 3)
done
label() {
	case $1 in
	cp) echo "cp --sparse=always" ;;
	copy) echo "convert --hash none (copy path)" ;;
	pipeline) echo "convert --hash none, KCOREDUMP_COPY_PATH=0 (block pipeline, as before)" ;;
	sha256) echo "convert (the default: XXH3-128 per block on the workers, the file's SHA-256 on its own thread)" ;;
	sha256copy) echo "convert, KCOREDUMP_COPY_PATH=1 (the default's hashing on the copy path)" ;;
	sha256blocks) echo "convert --hash sha256 (SHA-256 per block too)" ;;
	esac
}
{
	echo "# Sparse ELF copy vs cp --sparse=always (bench/sparse-copy.sh)"
	echo
	echo "$(nproc) CPUs ($(lscpu | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2; exit }')), kernel $(uname -r), $(date -u +%Y-%m-%d)."
	echo "Input: a process core of $(numfmt --to=iec "$apparent") apparent size, $(numfmt --to=iec "$ondisk") on disk"
	echo "(${mib} MiB of data in 4 runs between ${hole} holes; 1/8 of the data"
	echo "allocated zero pages), read from the page cache; outputs on"
	echo "$(df -T "$work" | awk 'NR == 2 { print $2 }'). Medians of $reps interleaved runs each, at $(bench_sched),"
	echo "load $(cut -d' ' -f1-3 /proc/loadavg) at the end. The machine is shared"
	echo "with other jobs: compare the ratios of this one run, not the"
	echo "seconds between runs. Speed ratio: cp's wall time / the tool's."
	echo "Baseline: $(cp --version | head -1)."
	echo
	echo "| run | wall | speed vs cp | CPU (user+sys) | peak RSS |"
	echo "|---|---:|---:|---:|---:|"
	for n in "${names[@]}"; do
		printf '| %s | %.3f s | %.2fx | %.2f s | %.1f MiB |\n' "$(label "$n")" "${wall[$n]}" \
			"$(echo "${wall[cp]} / ${wall[$n]}" | bc -l)" "${cpu[$n]}" "$(echo "${rss[$n]} / 1024" | bc -l)"
	done
	echo
	echo "Output of the copy path: $(numfmt --to=iec "$out_ondisk") allocated (holes and zero pages stay holes)."
	echo "The file's SHA-256: $fsum_text."
	echo
	if [ "$(echo "${wall[cp]} / ${wall[sha256]} >= 0.8" | bc -l)" = 1 ]; then verdict=met; else verdict=missed; fi
	printf "Issue 40's target, the default at 0.8x cp's speed or better: %s (%.2fx).\n" "$verdict" \
		"$(echo "${wall[cp]} / ${wall[sha256]}" | bc -l)"
} > "$out/sparse-copy.md"
cat "$out/sparse-copy.md"
