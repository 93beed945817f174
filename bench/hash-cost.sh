#!/bin/bash
# SPDX-License-Identifier: MIT
# What integrity costs: a dense core of mixed content on tmpfs copied to a
# sparse ELF by cp --sparse=always (the baseline), by kcoredump dump with
# its default hashing (XXH3-128 block digests on the workers, the file's
# SHA-256 on its own thread as it is written), with --hash sha256 (SHA-256
# block digests too) and with --hash none, runs interleaved in one run;
# plus the machine's single-core SHA-256 rate (openssl speed) to explain
# the difference.  Run it under nice -n -N on a machine other jobs share
# (the header says the niceness it ran at).  Medians of REPS runs of wall
# time and of user + system CPU time; the default's phases from --json
# (the read, the wait for the file's SHA-256 after it).  Issue 40's
# target: the default within 1.25x the time of --hash none.  Also each
# run's CPU time over its wall time: how much its threads ran at the same
# time (2.0 at most on 2 CPUs), which other jobs on the machine lower but
# cannot raise, so it shows the overlap where the wall time is noisy.
# BENCH_FIFO=1 runs every copy at SCHED_FIFO (chrt -f 5, root): on a
# machine other jobs keep busy they cannot take the CPUs from it then (the
# kernel still leaves them 5% of each second, sched_rt_runtime_us).
# INPUT=dense copies a core whose every page holds data (random bytes: no
# zero pages, nothing becomes a hole), the input issue 40's target names;
# the default (INPUT=mixed) a core of mixed content.
# Usage: [INPUT=dense|mixed] bench/hash-cost.sh [BUILD_DIR] [REPS] [GIB]
#   (writes bench/results/hash-cost.{md,json}, or hash-cost-dense.*)
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
input=${INPUT:-mixed}
case $input in
mixed)
	name=hash-cost
	desc="(half binaries, a quarter zeros, a quarter random)"
	;;
dense)
	name=hash-cost-dense
	desc="of random bytes (every page holds data: no zero pages, no holes)"
	;;
*)
	echo "bench/hash-cost.sh: INPUT must be dense or mixed, not '$input'" >&2
	exit 2
	;;
esac
mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

printf 'load vaddr=0x10000000 flags=rw\n\thole %sG\nend\n' "$gib" > "$work/dense.spec"
"$MK" "$work/dense.spec" "$work/dense.core"
off=$("$K" info --json "$work/dense.core" | jq -r '.segments[] | select(.type == "LOAD") | .offset')
(
	set +o pipefail # head closes its pipe early
	if [ "$input" = dense ]; then
		head -c $((gib << 30)) /dev/urandom
		exit 0
	fi
	# Half executables and libraries, a quarter zeros, a quarter random.
	find /usr/bin /usr/lib -type f -size +64k 2> /dev/null | head -4000 |
		xargs cat 2> /dev/null | head -c $((gib << 29))
	head -c $((gib << 28)) /dev/zero
	head -c $((gib << 28)) /dev/urandom
) | dd of="$work/dense.core" bs=1M seek=$((off)) oflag=seek_bytes conv=notrunc status=none
truncate -s $((off + (gib << 30))) "$work/dense.core"

fifo=()
sched=$(bench_sched)
if [ "${BENCH_FIFO:-0}" = 1 ]; then
	fifo=(chrt -f 5)
	sched="SCHED_FIFO (chrt -f 5)"
fi
# one NAME CMD...: one run; appends "wall cpu cpu/wall" to $work/NAME.
one() {
	local name=$1 t0 t1
	shift
	rm -f "$work"/out.*
	t0=$(date +%s.%N)
	"${fifo[@]}" /usr/bin/time -o "$work/time.txt" -f "%U %S" "$@" > "$work/run.json" 2> /dev/null
	t1=$(date +%s.%N)
	awk -v w="$(echo "$t1 - $t0" | bc -l)" '{ print w, $1 + $2, ($1 + $2) / w }' "$work/time.txt" >> "$work/$name"
	if [ "$name" = def ]; then
		jq -r '[.stats.read_seconds, .stats.phases.file_sha256_seconds,
			.stats.phases.file_sha256_thread_seconds] | @tsv' "$work/run.json" |
			awk '{ printf "%.6f %.6f %.6f\n", $1, $2, $3 }' >> "$work/phases"
	fi
}
: > "$work/cp"
: > "$work/def"
: > "$work/sha"
: > "$work/none"
: > "$work/phases"
cat "$work/dense.core" > /dev/null # into the page cache
for ((i = 0; i < reps; i++)); do
	one cp cp --sparse=always "$work/dense.core" "$work/out.cp"
	one def "$K" dump -q --json -f -T 2 "$work/dense.core" -o "$work/out.elf"
	one sha "$K" dump -q --json -f -T 2 --hash sha256 "$work/dense.core" -o "$work/out.elf"
	one none "$K" dump -q --json -f -T 2 --hash none "$work/dense.core" -o "$work/out.elf"
done
col() { awk -v c="$2" '{ print $c }' "$work/$1" | median; }
t_cp=$(col cp 1) t_def=$(col def 1) t_sha=$(col sha 1) t_none=$(col none 1)
c_cp=$(col cp 2) c_def=$(col def 2) c_sha=$(col sha 2) c_none=$(col none 2)
o_cp=$(col cp 3) o_def=$(col def 3) o_sha=$(col sha 3) o_none=$(col none 3)
# runs NAME: each run's "wall s / CPU s".
runs() { awk '{ printf "%s%.2f / %.2f", (NR > 1 ? ", " : ""), $1, $2 }' "$work/$1"; }
p_read=$(col phases 1) p_wait=$(col phases 2) p_thread=$(col phases 3)
sha_mbs=$(openssl speed -bytes 1048576 -seconds 2 sha256 2> /dev/null |
	awk '/^sha256/ { sub(/k$/, "", $2); printf "%.0f", $2 * 1000 / 1048576 }')
r() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
mbs() { echo "scale=0; $gib * 1024 / $1" | bc -l; }
cpu=$(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo | sed 's/^ *//')
{
	echo "# What hashing costs a dump (bench/hash-cost.sh)"
	echo
	echo "Machine: $(nproc) CPUs ($cpu), kernel $(uname -r), $(date -u +%F), load $(cut -d' ' -f1-3 /proc/loadavg) at the end;"
	echo "single-core SHA-256 $sha_mbs MiB/s (openssl speed, 1 MiB blocks); a $gib GiB core"
	echo "$desc on $(df -T "$work" | awk 'NR == 2 { print $2 }') to the same, read from the page cache;"
	echo "runs interleaved, medians of $reps, at $sched.  Baseline: $(cp --version | head -1)."
	echo "The machine is shared with other jobs: compare the ratios of this one run, not seconds between runs."
	echo
	echo "| copy | wall | MiB/s | CPU (user+sys) | CPU / wall | time vs --hash none | speed vs cp |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	echo "| cp --sparse=always | $(printf %.2f "$t_cp") s | $(mbs "$t_cp") | $(printf %.2f "$c_cp") s | $(printf %.2f "$o_cp") | - | 1.00x |"
	echo "| kcoredump dump (default: the file's SHA-256, XXH3-128 per block) | $(printf %.2f "$t_def") s | $(mbs "$t_def") | $(printf %.2f "$c_def") s | $(printf %.2f "$o_def") | $(r "$t_def" "$t_none")x | $(r "$t_cp" "$t_def")x |"
	echo "| kcoredump dump --hash sha256 (SHA-256 per block too) | $(printf %.2f "$t_sha") s | $(mbs "$t_sha") | $(printf %.2f "$c_sha") s | $(printf %.2f "$o_sha") | $(r "$t_sha" "$t_none")x | $(r "$t_cp" "$t_sha")x |"
	echo "| kcoredump dump --hash none | $(printf %.2f "$t_none") s | $(mbs "$t_none") | $(printf %.2f "$c_none") s | $(printf %.2f "$o_none") | 1.00x | $(r "$t_cp" "$t_none")x |"
	echo
	echo "Each run, wall / CPU seconds: default $(runs def); --hash sha256 $(runs sha);"
	echo "--hash none $(runs none); cp $(runs cp)."
	echo
	echo "Default runs (medians, from --json): the read $(printf %.2f "$p_read") s, the wait for the file's"
	echo "SHA-256 after it $(printf %.3f "$p_wait") s; the hashing thread worked $(printf %.2f "$p_thread") s alongside the read."
	echo
	if [ "$(echo "$t_def <= 1.25 * $t_none" | bc -l)" = 1 ]; then verdict=met; else verdict=missed; fi
	echo "Issue 40's target, the default within 1.25x the time of --hash none: $verdict ($(r "$t_def" "$t_none")x)."
	echo
	if [ "$input" = dense ]; then
		cat <<-'EOF'
			Every page of this input holds data: the copy writes all of it and the file's
			SHA-256 hashes the same bytes, so the two threads carry about the same load
			(the copy: read and write; the hashing thread: SHA-256, plus the XXH3-128
			block digests whenever it would otherwise wait for the copy).  The mixed
			input (bench/results/hash-cost.md) is the harder case: its zeros cost SHA-256
			their size while the copy passes them as holes.
		EOF
	else
	cat <<-'EOF'
		How the default overlaps.  Its CPU time is the copy's (read, zero pages, write:
		--hash none's) plus XXH3-128 (about 0.1 s a GiB) on the copying thread, and the
		file's SHA-256 (single-core rate above) on a thread of its own.  On 2 CPUs the
		wall time can come down to the larger of the two only if they run at the same
		time: CPU / wall near 2 for the default when nothing else runs.
		
		Until issue 40's fix they never did (CPU / wall 1.0 on an idle machine: 1.45 s
		wall for 1.51 s of CPU).  perf sched timehist of one default run: the writing
		thread ran 784 ms, the SHA-256 thread 701 ms, and 0 ms of the two overlapped;
		the SHA-256 thread slept 275 times for 256 blocks of 4 MiB.  The reads kept
		every slot of the worker pool's ring busy, so the slot freed by writing the
		oldest block was at once the next to read into; its bytes had just been handed
		to the SHA-256 thread by reference, and the writing thread waited until they
		were hashed (the FH_SLOTS spare blocks were never spare).  Then it read and
		wrote the next block while the SHA-256 thread, its queue empty, waited: the
		two took turns.  Now the pipeline keeps FH_SLOTS slots out of the pool (the
		slot reused was written FH_SLOTS blocks before); a plain sparse copy (ELF file
		out of a regular file) takes the copy path with the default digests too: one
		thread reads, finds zero pages, computes XXH3-128 per 1 MiB and writes, in 16
		blocks of 1 MiB used in turn, so the SHA-256 thread may lag 16 MiB behind; runs
		go over to it without a lock (one thread adds, one hashes), it is woken only
		when it sleeps, and holes are hashed there as zeros, never written out by the
		copying thread, handed over as the copy passes them rather than with the next
		write.  A regular file's data extents are asked once (SEEK_HOLE on tmpfs walks
		a dense file page by page, 18 ms a GiB, before the copy starts).
		
		Measured on this machine under load 15 with every run at SCHED_FIFO (BENCH_FIFO=1,
		which other jobs cannot take the CPUs from; 5 runs each, interleaved, medians):
		the code before the fix took 1.44 s for 1.59 s of CPU, CPU / wall 1.04, 2.4x the
		time of --hash none; after it the default takes 1.4-1.5x (CPU / wall 1.6-1.75),
		short of 1.25x.  What is left is the SHA-256 thread: about 0.7 s a GiB on one
		core, the floor of the default's wall time on any number of CPUs, against 0.57 s
		for the whole copy; and this input's 256 MiB of zeros cost it 0.17 s while the
		copy passes them in 0.05 s and then waits, 16 MiB ahead, for it to catch up.
	EOF
	fi
} | tee "$out/$name.md"
jq -n --arg input "$input" --argjson gib "$gib" --argjson reps "$reps" --arg cp "$t_cp" --arg dflt "$t_def" --arg cdef "$c_def" --arg sha "$t_sha" \
	--arg nice "$(nice)" --arg sched "$sched" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
	--arg none "$t_none" --arg rate "$sha_mbs" --arg ccp "$c_cp" --arg csha "$c_sha" \
	--arg cnone "$c_none" --arg odef "$o_def" --arg onone "$o_none" --arg pread "$p_read" --arg pwait "$p_wait" --arg pthread "$p_thread" \
	'{gib: $gib, reps: $reps, sha256_mib_per_s: ($rate|tonumber),
	  cp_sparse_s: ($cp|tonumber), kcoredump_default_s: ($dflt|tonumber),
	  kcoredump_default_cpu_s: ($cdef|tonumber), kcoredump_sha256_s: ($sha|tonumber),
	  kcoredump_hash_none_s: ($none|tonumber), cp_cpu_s: ($ccp|tonumber),
	  kcoredump_sha256_cpu_s: ($csha|tonumber), kcoredump_hash_none_cpu_s: ($cnone|tonumber),
	  kcoredump_default_cpu_per_wall: ($odef|tonumber),
	  kcoredump_hash_none_cpu_per_wall: ($onone|tonumber),
	  default_read_s: ($pread|tonumber), default_file_hash_wait_s: ($pwait|tonumber),
	  default_file_hash_thread_s: ($pthread|tonumber), nice: ($nice|tonumber), sched: $sched,
	  load: $load, input: $input}' > "$out/$name.json"
