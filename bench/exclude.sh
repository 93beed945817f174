#!/bin/bash
# SPDX-License-Identifier: MIT
# Page filtering by struct page against makedumpfile's dump level 31 on the
# same ELF input, side by side in one run, medians of REPS repetitions:
#   makedumpfile -c -d 31 ELF out                 (zlib, one thread)
#   kcoredump convert --format kdump --exclude 31 --codec zlib -T 2
#   kcoredump convert --format kdump --exclude 31 -T 2   (zstd)
#   kcoredump convert --format kdump -T 2         (no filtering: what -d 31
#                                                  saves)
# ELF is a kernel ELF dump: by default the VM guest's RAM dump the
# vm-formats case leaves (a 1 GiB Linux 6.12 guest, mostly free memory);
# tests/vm/results-formats-6.1/ram.elf is Debian 12's own 6.1, which
# makedumpfile 1.7.2 knows in full.  The pages each tool leaves out are
# compared by tests/oracle/exclude-mdf.py.
# Usage: bench/exclude.sh [BUILD_DIR] [REPS] [ELF]
#   (writes bench/results/exclude-KERNEL_RELEASE.{md,json})
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
bench_init exclude "$@"
command -v makedumpfile > /dev/null || { echo "bench/exclude.sh: makedumpfile not installed" >&2; exit 1; }

in=$input
makedumpfile -c -d 31 "$in" "$work/md.kdump" > /dev/null 2>&1
"$K" convert -q -T 2 --format kdump --exclude 31 --codec zlib "$in" -o "$work/kz.kdump"
"$K" convert -q -T 2 --format kdump --exclude 31 "$in" -o "$work/ks.kdump" --json > "$work/ks.json"
"$K" convert -q -T 2 --format kdump "$in" -o "$work/kf.kdump"
s_md=$(size "$work/md.kdump") s_kz=$(size "$work/kz.kdump") s_ks=$(size "$work/ks.kdump") s_kf=$(size "$work/kf.kdump")
excluded=$(jq .exclude.pages_excluded "$work/ks.json")
scan=$(jq .exclude.seconds "$work/ks.json")
rel=$("$K" info --json --no-holes --no-modules "$in" | jq -r .source.kernel_release)
c_md=$(cpu makedumpfile -c -d 31 "$in" "$work/out.kdump")
c_kz=$(cpu "$K" convert -q -T 2 --format kdump --exclude 31 --codec zlib "$in" -o "$work/out.kdump")
c_ks=$(cpu "$K" convert -q -T 2 --format kdump --exclude 31 "$in" -o "$work/out.kdump")
rm -f "$work"/*.kdump
t_md=$(timeit "$reps" makedumpfile -c -d 31 "$in" "$work/out.kdump")
t_kz=$(timeit "$reps" "$K" convert -q -T 2 --format kdump --exclude 31 --codec zlib "$in" -o "$work/out.kdump")
t_ks=$(timeit "$reps" "$K" convert -q -T 2 --format kdump --exclude 31 "$in" -o "$work/out.kdump")
t_kf=$(timeit "$reps" "$K" convert -q -T 2 --format kdump "$in" -o "$work/out.kdump")

for v in t_md t_kz t_ks t_kf; do printf -v "$v" '%.3f' "${!v}"; done
r() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
r3() { printf '%.3f' "$(echo "$1 / $2" | bc -l)"; }
cpuname=$(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo | sed 's/^ *//')
{
	echo "Machine: $(nproc) CPUs ($cpuname), shared with other jobs; input $(basename "$input") (Linux $rel): $(($(size "$in") >> 20)) MiB logical; kcoredump left out $excluded pages (struct page scan $(printf %.3f "$scan") s); medians of $reps runs."
	echo
	echo "| case | time | CPU | size | time vs makedumpfile | size vs makedumpfile |"
	echo "|---|---|---|---|---|---|"
	echo "| makedumpfile -c -d 31 (zlib, 1 thread) | ${t_md} s | ${c_md} s | $((s_md >> 10)) KiB | 1 | 1 |"
	echo "| kcoredump convert --format kdump --exclude 31 --codec zlib -T 2 | ${t_kz} s | ${c_kz} s | $((s_kz >> 10)) KiB | $(r "$t_md" "$t_kz")x faster | $(r3 "$s_kz" "$s_md")x |"
	echo "| kcoredump convert --format kdump --exclude 31 (zstd) -T 2 | ${t_ks} s | ${c_ks} s | $((s_ks >> 10)) KiB | $(r "$t_md" "$t_ks")x faster | $(r3 "$s_ks" "$s_md")x |"
	echo "| kcoredump convert --format kdump (zstd) -T 2, no --exclude | ${t_kf} s | - | $((s_kf >> 10)) KiB | - | $(r3 "$s_kf" "$s_md")x |"
} | tee "$out/exclude-$rel.md"
jq -n --arg in "$(basename "$input")" --arg rel "$rel" --arg reps "$reps" \
	--arg t_md "$t_md" --arg t_kz "$t_kz" --arg t_ks "$t_ks" --arg t_kf "$t_kf" \
	--arg c_md "$c_md" --arg c_kz "$c_kz" --arg c_ks "$c_ks" \
	--arg s_md "$s_md" --arg s_kz "$s_kz" --arg s_ks "$s_ks" --arg s_kf "$s_kf" \
	--arg excluded "$excluded" --arg scan "$scan" \
	'{input: $in, kernel: $rel, reps: ($reps|tonumber),
	  pages_excluded: ($excluded|tonumber), scan_seconds: ($scan|tonumber),
	  makedumpfile_c_d31: {seconds: ($t_md|tonumber), cpu_seconds: ($c_md|tonumber), bytes: ($s_md|tonumber)},
	  kcoredump_zlib_x31_T2: {seconds: ($t_kz|tonumber), cpu_seconds: ($c_kz|tonumber), bytes: ($s_kz|tonumber)},
	  kcoredump_zstd_x31_T2: {seconds: ($t_ks|tonumber), cpu_seconds: ($c_ks|tonumber), bytes: ($s_ks|tonumber)},
	  kcoredump_zstd_T2: {seconds: ($t_kf|tonumber), bytes: ($s_kf|tonumber)}}' > "$out/exclude-$rel.json"
