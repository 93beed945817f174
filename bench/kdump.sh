#!/bin/bash
# SPDX-License-Identifier: MIT
# kdump output vs makedumpfile on the same ELF input, side by side in one
# run, medians of REPS repetitions:
#   makedumpfile -c -d 1 ELF out        (zlib per page, one thread)
#   kcoredump convert --format kdump --codec zlib -T 2 ELF -o out
#   kcoredump convert --format kdump -T 2 ELF -o out   (zstd, the default)
#   kcoredump convert --format kdump --codec zlib -T 1 (the same work on one
#                                        thread, for the per-thread cost)
#   makedumpfile -l -d 1 ELF out        (lzo per page: RHEL's kdump default)
#   kcoredump convert --format kdump --codec lzo -T 2, and --codec snappy
#   (Debian's makedumpfile has no snappy)
# ELF is a kernel ELF dump: by default the VM guest's RAM dump the
# vm-formats case leaves in BUILD_DIR/tests/vm/results-formats/ram.elf
# (ctest -R vm-formats), a 1 GiB guest's live memory (zero pages are file
# holes: kcoredump skips them with SEEK_DATA, makedumpfile reads and tests
# them).  Outputs go to $BENCH_DIR (default /dev/shm/kcoredump-bench-kdump)
# so the disk does not set the pace.  CPU seconds (user + system) are
# reported next to wall time: the machine is shared.
# Usage: bench/kdump.sh [BUILD_DIR] [REPS] [ELF]
#   (writes bench/results/kdump.{md,json})
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
bench_init kdump "$@"
command -v makedumpfile > /dev/null || { echo "bench/kdump.sh: makedumpfile not installed" >&2; exit 1; }

# The input stays where it is: SEEK_DATA finds the holes of a sparse file
# on ext4/xfs, while tmpfs reports a sparse copy as all data.
in=$input
# One run each to keep the outputs for the sizes.
makedumpfile -c -d 1 "$in" "$work/md.kdump" > /dev/null 2>&1
"$K" convert -q -T 2 --format kdump --codec zlib "$in" -o "$work/kz.kdump"
"$K" convert -q -T 2 --format kdump "$in" -o "$work/ks.kdump"
makedumpfile -l -d 1 "$in" "$work/ml.kdump" > /dev/null 2>&1
"$K" convert -q -T 2 --format kdump --codec lzo "$in" -o "$work/kl.kdump"
"$K" convert -q -T 2 --format kdump --codec snappy "$in" -o "$work/kp.kdump"
s_md=$(size "$work/md.kdump") s_kz=$(size "$work/kz.kdump") s_ks=$(size "$work/ks.kdump")
s_ml=$(size "$work/ml.kdump") s_kl=$(size "$work/kl.kdump") s_kp=$(size "$work/kp.kdump")
alloc=$(du -B1 "$in" | cut -f1)
c_md=$(cpu makedumpfile -c -d 1 "$in" "$work/out.kdump")
c_kz=$(cpu "$K" convert -q -T 2 --format kdump --codec zlib "$in" -o "$work/out.kdump")
c_ks=$(cpu "$K" convert -q -T 2 --format kdump "$in" -o "$work/out.kdump")
c_ml=$(cpu makedumpfile -l -d 1 "$in" "$work/out.kdump")
c_kl=$(cpu "$K" convert -q -T 2 --format kdump --codec lzo "$in" -o "$work/out.kdump")
c_kp=$(cpu "$K" convert -q -T 2 --format kdump --codec snappy "$in" -o "$work/out.kdump")
rm -f "$work"/*.kdump

t_md=$(timeit "$reps" makedumpfile -c -d 1 "$in" "$work/out.kdump")
t_kz=$(timeit "$reps" "$K" convert -q -T 2 --format kdump --codec zlib "$in" -o "$work/out.kdump")
t_ks=$(timeit "$reps" "$K" convert -q -T 2 --format kdump "$in" -o "$work/out.kdump")
t_k1=$(timeit "$reps" "$K" convert -q -T 1 --format kdump --codec zlib "$in" -o "$work/out.kdump")
t_ml=$(timeit "$reps" makedumpfile -l -d 1 "$in" "$work/out.kdump")
t_kl=$(timeit "$reps" "$K" convert -q -T 2 --format kdump --codec lzo "$in" -o "$work/out.kdump")
t_kp=$(timeit "$reps" "$K" convert -q -T 2 --format kdump --codec snappy "$in" -o "$work/out.kdump")

r() { echo "scale=2; $1 / $2" | bc -l; }
r3() { echo "scale=3; $1 / $2" | bc -l; }
cpu=$(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo | sed 's/^ *//')
{
	echo "Machine: $(nproc) CPUs ($cpu), shared with other jobs; input $(basename "$input"): $(($(size "$in") >> 20)) MiB logical, $((alloc >> 20)) MiB with data, on $(df --output=fstype "$work" | tail -1); medians of $reps runs."
	echo
	echo "| case | time | CPU | size | time vs makedumpfile | size vs makedumpfile |"
	echo "|---|---|---|---|---|---|"
	echo "| makedumpfile -c -d 1 (zlib, 1 thread) | ${t_md} s | ${c_md} s | $((s_md >> 10)) KiB | 1 | 1 |"
	echo "| kcoredump convert --format kdump --codec zlib -T 2 | ${t_kz} s | ${c_kz} s | $((s_kz >> 10)) KiB | $(r "$t_md" "$t_kz")x faster | $(r3 "$s_kz" "$s_md")x |"
	echo "| kcoredump convert --format kdump (zstd) -T 2 | ${t_ks} s | ${c_ks} s | $((s_ks >> 10)) KiB | $(r "$t_md" "$t_ks")x faster | $(r3 "$s_ks" "$s_md")x |"
	echo "| kcoredump convert --format kdump --codec zlib -T 1 | ${t_k1} s | - | - | $(r "$t_md" "$t_k1")x faster | - |"
	echo
	echo "| case | time | CPU | size | time vs makedumpfile -l | size vs makedumpfile -l |"
	echo "|---|---|---|---|---|---|"
	echo "| makedumpfile -l -d 1 (lzo, 1 thread) | ${t_ml} s | ${c_ml} s | $((s_ml >> 10)) KiB | 1 | 1 |"
	echo "| kcoredump convert --format kdump --codec lzo -T 2 | ${t_kl} s | ${c_kl} s | $((s_kl >> 10)) KiB | $(r "$t_ml" "$t_kl")x faster | $(r3 "$s_kl" "$s_ml")x |"
	echo "| kcoredump convert --format kdump --codec snappy -T 2 | ${t_kp} s | ${c_kp} s | $((s_kp >> 10)) KiB | $(r "$t_ml" "$t_kp")x faster | $(r3 "$s_kp" "$s_ml")x |"
} | tee "$out/kdump.md"
jq -n --arg c_md "$c_md" --arg c_kz "$c_kz" --arg c_ks "$c_ks" --arg t_md "$t_md" --arg t_kz "$t_kz" --arg t_ks "$t_ks" --arg t_k1 "$t_k1" \
	--arg s_md "$s_md" --arg s_kz "$s_kz" --arg s_ks "$s_ks" --arg in "$(basename "$input")" \
	--arg reps "$reps" --arg c_ml "$c_ml" --arg c_kl "$c_kl" --arg c_kp "$c_kp" \
	--arg t_ml "$t_ml" --arg t_kl "$t_kl" --arg t_kp "$t_kp" \
	--arg s_ml "$s_ml" --arg s_kl "$s_kl" --arg s_kp "$s_kp" \
	'{input: $in, reps: ($reps|tonumber),
	  makedumpfile_c_d1: {seconds: ($t_md|tonumber), cpu_seconds: ($c_md|tonumber), bytes: ($s_md|tonumber)},
	  kcoredump_zlib_T2: {seconds: ($t_kz|tonumber), cpu_seconds: ($c_kz|tonumber), bytes: ($s_kz|tonumber)},
	  kcoredump_zstd_T2: {seconds: ($t_ks|tonumber), cpu_seconds: ($c_ks|tonumber), bytes: ($s_ks|tonumber)},
	  kcoredump_zlib_T1: {seconds: ($t_k1|tonumber)},
	  makedumpfile_l_d1: {seconds: ($t_ml|tonumber), cpu_seconds: ($c_ml|tonumber), bytes: ($s_ml|tonumber)},
	  kcoredump_lzo_T2: {seconds: ($t_kl|tonumber), cpu_seconds: ($c_kl|tonumber), bytes: ($s_kl|tonumber)},
	  kcoredump_snappy_T2: {seconds: ($t_kp|tonumber), cpu_seconds: ($c_kp|tonumber), bytes: ($s_kp|tonumber)}}' > "$out/kdump.json"
