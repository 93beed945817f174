#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump pid vs gdb's gcore on the same live process (issue 8): a
# pidtarget with a 64 GiB MAP_NORESERVE area (16 touched pages), a dense
# 256 MiB area, 3 parked threads and a thread stamping CLOCK_MONOTONIC in a
# tight loop.  The stop as the process saw it is that thread's longest gap
# during the dump; the idle gap (no dump) is the machine's own noise.
#   bench/pid.sh [BUILD_DIR] [REPS]   (writes bench/results/pid.{md,json})
#   bench/pid.sh [BUILD_DIR] [REPS] dense [MIB] [THREADS]
#     (issue 40; writes bench/results/pid-dense.{md,json}): a process with
#     a dense MIB MiB area (default 1024) and THREADS threads (default 16)
#     and nothing sparse, so that the copy is all data and the file's
#     SHA-256 costs what it can: kcoredump pid (default hashing, also
#     through the block pipeline: KCOREDUMP_COPY_PATH=0) and --hash none
#     against gcore, wall and CPU time, each writing a file to BENCH_DIR
#     (default /var/tmp), runs interleaved, medians of REPS.  Ratios are
#     speeds (gcore's time / kcoredump's) within the one run.  Beside
#     them the kernel's own core of the same process: a pidtarget like it
#     killed by SIGABRT with core_pattern naming a file in the same
#     directory, from the signal to the end of the core (its parent's
#     wait returns once the kernel has written it); core_pattern is set
#     under the lock every crash test holds and put back on exit
#     (tests/integration/lib.sh core_pattern_setup), else a skip.
# Two gcores are the anchors: this Debian 12 machine's gdb 13, and gdb 18
# from the Debian sid root tests/oracle/sid-root.sh builds (gdb 15 and
# later skip unmapped and zero ranges and write sparse cores; skipped with
# a note when that root cannot be built here).  gdb 13 writes the whole
# 64 GiB: it gets a real file only when the work directory has room
# (BENCH_DIR, default /var/tmp), else /dev/null (its allocated size is
# then the apparent size of the image) and its time is compared with
# kcoredump's to /dev/null.
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
reps=${2:-3}
K=$build/kcoredump
T=$build/tests/tools/pidtarget
work=${BENCH_DIR:-/var/tmp}/kcoredump-bench-pid.$$
out=$here/results
mkdir -p "$work" "$out"
tpid=
cleanup()
{
	[ -n "$tpid" ] && kill "$tpid" 2> /dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

sid=$here/../tests/oracle/sid-root.sh
if "$sid" --skip > /dev/null 2> "$work/sid.err"; then
	gdb18() { "$sid" run --bind-rw "$work" -- gdb "$@"; }
	gdb18_version=$(gdb18 --version | head -1)
else
	gdb18_version=
	echo "bench/pid.sh: no gdb from the sid root: $(tail -n 1 "$work/sid.err")" >&2
fi

mode=${3:-sparse}
dense_mib=${4:-1024}
dense_threads=${5:-16}
# start_target IN OUT ARGS...: a pidtarget with ARGS reading the FIFO IN
# (made here, held open on fd $target_in), its output to OUT: its pid in
# $target_pid once it says ready (a dense area takes a while to fill).
start_target() {
	local in=$1 o=$2
	shift 2
	mkfifo "$in"
	"$T" "$@" < "$in" > "$o" 2>&1 &
	target_pid=$!
	exec {target_in}> "$in"
	for _ in $(seq 1200); do
		grep -q '^ready' "$o" && break
		sleep 0.1
	done
	grep '^ready' "$o"
}
dense_args=(--dense "$dense_mib" --sparse 0 --threads "$dense_threads")
if [ "$mode" = dense ]; then
	start_target "$work/in" "$work/target.out" "${dense_args[@]}"
else
	start_target "$work/in" "$work/target.out" --dense 256 --sparse 64 \
		--touched 16 --threads 3 --stamp
fi
tpid=$target_pid

# The dense mode: kcoredump pid (SHA-256, --hash none; the default also
# through the block pipeline, KCOREDUMP_COPY_PATH=0, as before the copy
# path took a process) and gcore, each to a file, interleaved; medians of
# the wall and CPU times; then done.
if [ "$mode" = dense ]; then
	run1() { # NAME CMD...: one run's wall seconds appended to $work/NAME.t,
		# its CPU seconds (user + system) to $work/NAME.cpu
		local name=$1 t0 t1 TIMEFORMAT='%U %S' # bash's time: functions too
		shift
		rm -f "$work/out" "$work/out.json"
		# The run before's 2 GiB of dirty pages written back first: else
		# whichever run crosses the dirty limit is throttled for them.
		sync
		t0=$(date +%s.%N)
		{ time "$@" > "$work/out.json" 2> "$work/err"; } 2> "$work/time" || {
			echo "bench/pid.sh: $name failed: $(head -c 300 "$work/err")" >&2
			exit 1
		}
		t1=$(date +%s.%N)
		echo "$t1 - $t0" | bc -l >> "$work/$name.t"
		awk 'END { printf "%.2f\n", $1 + $2 }' "$work/time" >> "$work/$name.cpu"
		if [ "$name" = sha256 ]; then
			jq -r '[.stats.read_seconds, .stats.phases.file_sha256_seconds,
				.stats.phases.file_sha256_thread_seconds] | @tsv' "$work/out.json" |
				awk '{ printf "%.6f %.6f %.6f\n", $1, $2, $3 }' >> "$work/phases.t"
		fi
		if [ "$name" = gcore ]; then
			stat -c %s "$work/out" > "$work/gcore.size"
		fi
		return 0
	}
	for ((i = 0; i < reps; i++)); do
		run1 gcore gdb -p "$tpid" -batch -ex "gcore $work/out"
		[ -z "$gdb18_version" ] || run1 gcore18 gdb18 -p "$tpid" -batch -ex "gcore $work/out"
		run1 sha256 "$K" pid "$tpid" -o "$work/out" --json
		run1 ring env KCOREDUMP_COPY_PATH=0 "$K" pid "$tpid" -o "$work/out" --json
		run1 none "$K" pid "$tpid" -o "$work/out" --json --hash none
	done
	# The kernel's core, REPS times, after the others (the lock is held
	# only that long): in a subshell, whose exit puts core_pattern back.
	(
		# shellcheck source=../tests/integration/lib.sh
		. "$here/../tests/integration/lib.sh"
		core_pattern_setup bench-pid-kernel-core > "$work/kernel.skip"
		echo "$work/kcore.%p" > /proc/sys/kernel/core_pattern
		for ((i = 0; i < reps; i++)); do
			start_target "$work/kin.$i" "$work/ktarget.$i" "${dense_args[@]}" > /dev/null
			kp=$target_pid
			sync
			t0=$(date +%s.%N)
			kill -ABRT "$kp"
			wait "$kp" 2> /dev/null || true
			t1=$(date +%s.%N)
			exec {target_in}>&-
			if [ ! -s "$work/kcore.$kp" ]; then
				echo "no core from the kernel in $work (core_pattern $(cat /proc/sys/kernel/core_pattern))" > "$work/kernel.skip"
				exit 1
			fi
			echo "$t1 - $t0" | bc -l >> "$work/kernel.t"
			stat -c %s "$work/kcore.$kp" > "$work/kernel.size"
			rm -f "$work/kcore.$kp"
		done
	) || echo "bench/pid.sh: no kernel core row: $(head -c 300 "$work/kernel.skip")" >&2
	med() { median < "$work/$1.t"; }
	cpu() { printf '%.2f s' "$(median < "$work/$1.cpu")"; }
	col() { awk -v c="$1" '{ print $c }' "$work/phases.t" | median; }
	ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
	g=$(med gcore) ks=$(med sha256) kr=$(med ring) kn=$(med none) g18='' kc=''
	[ -z "$gdb18_version" ] || g18=$(med gcore18)
	[ ! -s "$work/kernel.t" ] || kc=$(med kernel)
	gsize=$(echo "scale=1; $(cat "$work/gcore.size") / 1048576" | bc -l)
	cat > "$out/pid-dense.md" << EOF
# kcoredump pid vs gcore, a dense process ($(date -u +%F), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))

Live pidtarget: a dense $dense_mib MiB area (pattern bytes), $dense_threads
parked threads, nothing sparse.  Each tool writes a file to
$(df -T "$work" | awk 'NR == 2 { print $2 }') ($work); runs interleaved,
medians of $reps, each run after a sync (the run before's written-back
pages do not throttle it).  gcore: $(gdb --version | head -1), its core $gsize MiB.
Speed ratio: gcore's wall time / kcoredump's (above 1: kcoredump is
faster).  Run at $(bench_sched); the machine is shared with other jobs:
compare the ratios of this run, not seconds between runs.

| run | wall | speed vs gcore | CPU (user + sys) |
|---|---:|---:|---:|
| gdb gcore | $(printf %.2f "$g") s | 1.00x | $(cpu gcore) |
| kcoredump pid (default: the file's SHA-256, XXH3-128 per block; the copy path) | $(printf %.2f "$ks") s | $(ratio "$g" "$ks")x | $(cpu sha256) |
| kcoredump pid, default, through the block pipeline (KCOREDUMP_COPY_PATH=0) | $(printf %.2f "$kr") s | $(ratio "$g" "$kr")x | $(cpu ring) |
| kcoredump pid --hash none | $(printf %.2f "$kn") s | $(ratio "$g" "$kn")x | $(cpu none) |
$(if [ -n "$g18" ]; then
		echo "| gdb gcore, $gdb18_version (sid) | $(printf %.2f "$g18") s | $(ratio "$g" "$g18")x | $(cpu gcore18) |"
	fi
	if [ -n "$kc" ]; then
		echo "| the kernel's own core (SIGABRT, core_pattern to a file there; $(echo "scale=1; $(cat "$work/kernel.size") / 1048576" | bc -l) MiB) | $(printf %.2f "$kc") s | $(ratio "$g" "$kc")x | - |"
	fi
	if [ -n "$g18" ]; then
		echo
		echo "Against $gdb18_version: kcoredump pid (default) $(ratio "$g18" "$ks")x, --hash none $(ratio "$g18" "$kn")x."
	fi
	echo
	if [ -n "$kc" ]; then
		echo "Against the kernel's own core: kcoredump pid (default) $(ratio "$kc" "$ks")x, --hash none $(ratio "$kc" "$kn")x"
		echo "(the kernel's time / kcoredump's; the kernel writes the core as the process dies, unhashed)."
	else
		echo "The kernel's own core: not measured ($(head -c 200 "$work/kernel.skip" | tr '\n' ' '))."
	fi)

Default vs --hash none: $(ratio "$ks" "$kn")x the time.  In the default
runs (medians): read $(printf %.2f "$(col 1)") s, the wait for the file's
SHA-256 after the read $(printf %.3f "$(col 2)") s, its thread hashing
$(printf %.2f "$(col 3)") s alongside the read.
EOF
	jq -n --argjson reps "$reps" --argjson mib "$dense_mib" --argjson threads "$dense_threads" \
		--arg g "$g" --arg ks "$ks" --arg kr "$kr" --arg kn "$kn" --arg g18 "$g18" --arg v18 "$gdb18_version" \
		--arg kc "$kc" --argjson cpu "$(for n in gcore sha256 ring none; do
			echo "{\"$n\": $(median < "$work/$n.cpu")}"; done | jq -s add)" \
		'{reps: $reps, dense_mib: $mib, threads: $threads, gcore_s: ($g|tonumber),
		  gcore_sid_s: (if $g18 == "" then null else ($g18|tonumber) end), gdb_sid: $v18,
		  kcoredump_sha256_s: ($ks|tonumber), kcoredump_sha256_pipeline_s: ($kr|tonumber),
		  kcoredump_hash_none_s: ($kn|tonumber),
		  kernel_core_s: (if $kc == "" then null else ($kc|tonumber) end),
		  cpu_s: $cpu}' \
		> "$out/pid-dense.json"
	cat "$out/pid-dense.md"
	exit 0
fi

# gap: the stamping thread's longest pause since the last call (ns).
gap()
{
	local n
	n=$(grep -c '^gap' "$work/target.out" || true)
	echo gap >&"$target_in"
	for _ in $(seq 200); do
		[ "$(grep -c '^gap' "$work/target.out" || true)" -gt "$n" ] && break
		sleep 0.05
	done
	{ grep '^gap' "$work/target.out" || true; } | tail -1 | awk '{print $2}'
}
# elapsed T0 T1: seconds as a JSON number (bc drops the leading 0).
elapsed() { printf '%.6f' "$(echo "$2 - $1" | bc -l)"; }
secs() { echo "scale=6; $1 / 1000000000" | bc -l; }

gap > /dev/null
sleep 2
idle_gap=$(gap)
echo "idle gap: $(secs "$idle_gap") s"

echo "== kcoredump pid (sparse ELF), $reps runs"
k_times=() k_gaps=() k_stops=()
for ((i = 0; i < reps; i++)); do
	rm -f "$work/k.core"
	gap > /dev/null
	t0=$(date +%s.%N)
	"$K" pid "$tpid" -o "$work/k.core" --json > "$work/k.json"
	t1=$(date +%s.%N)
	k_gaps+=("$(gap)")
	k_times+=("$(elapsed "$t0" "$t1")")
	k_stops+=("$(jq '.process.stop_seconds * 1e9 | floor' "$work/k.json")")
done
k_time=$(printf '%s\n' "${k_times[@]}" | median)
k_gap=$(printf '%s\n' "${k_gaps[@]}" | median)
k_stop=$(printf '%s\n' "${k_stops[@]}" | median)
k_alloc=$(($(stat -c %b "$work/k.core") * 512))
k_size=$(stat -c %s "$work/k.core")
k_read=$(jq .process.bytes_read "$work/k.json")
rm -f "$work/k.core"

echo "== kcoredump pid -o /dev/null, $reps runs (gcore's output when disk is short)"
kn_times=()
for ((i = 0; i < reps; i++)); do
	t0=$(date +%s.%N)
	"$K" pid "$tpid" -o /dev/null --special-output -q
	t1=$(date +%s.%N)
	kn_times+=("$(elapsed "$t0" "$t1")")
done
kn_time=$(printf '%s\n' "${kn_times[@]}" | median)

echo "== kcoredump pid -> .zst"
gap > /dev/null
t0=$(date +%s.%N)
"$K" pid "$tpid" -o "$work/k.core.zst" -q
t1=$(date +%s.%N)
kz_gap=$(gap)
kz_time=$(elapsed "$t0" "$t1")
kz_alloc=$(($(stat -c %b "$work/k.core.zst") * 512))
rm -f "$work/k.core.zst"

echo "== kcoredump pid --stop"
gap > /dev/null
t0=$(date +%s.%N)
"$K" pid "$tpid" --stop -o "$work/ks.core" -q
t1=$(date +%s.%N)
ks_gap=$(gap)
ks_time=$(elapsed "$t0" "$t1")
rm -f "$work/ks.core"

echo "== gcore"
need=$(((64 + 10) << 30))
free=$(($(stat -f -c '%a * %S' "$work")))
if [ "$free" -gt "$need" ]; then
	g_out=$work/g.core
else
	g_out=/dev/null
	echo "gcore writes to /dev/null: $work has $((free >> 30)) GiB free"
fi
gap > /dev/null
t0=$(date +%s.%N)
gdb -p "$tpid" -batch -ex "gcore $g_out" > "$work/gcore.log" 2>&1
t1=$(date +%s.%N)
g_gap=$(gap)
g_time=$(elapsed "$t0" "$t1")
if [ "$g_out" = /dev/null ]; then
	# The image gcore produced: every dumped mapping in full.
	g_alloc=$k_size
	g_where="/dev/null (allocated = apparent size of the same image)"
else
	g_alloc=$(($(stat -c %b "$g_out") * 512))
	g_where="$g_out"
	rm -f "$g_out"
fi

g18_time='' g18_gap='' g18_alloc='' g18_size=''
if [ -n "$gdb18_version" ]; then
	echo "== gcore, $gdb18_version (sid)"
	gap > /dev/null
	t0=$(date +%s.%N)
	gdb18 -p "$tpid" -batch -ex "gcore $work/g18.core" > "$work/gcore18.log" 2>&1
	t1=$(date +%s.%N)
	g18_gap=$(gap)
	g18_time=$(elapsed "$t0" "$t1")
	g18_alloc=$(($(stat -c %b "$work/g18.core") * 512))
	g18_size=$(stat -c %s "$work/g18.core")
	rm -f "$work/g18.core"
fi

# Time is compared like for like: both writing to a file, or both to
# /dev/null when gcore's 64 GiB did not fit.
if [ "$g_out" = /dev/null ]; then
	k_cmp_time=$kn_time g_cmp_where=/dev/null
else
	k_cmp_time=$k_time g_cmp_where="a file in $work"
fi
r() { echo "scale=1; $1 / $2" | bc -l; }
mib() { echo "scale=1; $1 / 1048576" | bc -l; }
ms() { echo "scale=2; $1 / 1000000" | bc -l; }
cat > "$out/pid.md" << EOF
# kcoredump pid vs gcore ($(date -u +%F), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))

Live pidtarget: 64 GiB MAP_NORESERVE area with 16 touched pages, 256 MiB
dense area, 3 parked threads, 1 thread stamping the clock.  Stop = the
stamping thread's longest gap during the dump (idle gap without any dump:
$(ms "$idle_gap") ms).  kcoredump: median of $reps; gcore
($(gdb --version | head -1)): 1 run, output to $g_where.

| | kcoredump pid | gcore | ratio |
|---|---:|---:|---:|
| wall time, writing to $g_cmp_where | $(printf %.2f "$k_cmp_time") s | $(printf %.2f "$g_time") s | $(r "$g_time" "$k_cmp_time")x faster |
| wall time, kcoredump to a sparse file | $(printf %.2f "$k_time") s | - | - |
| output allocated | $(mib "$k_alloc") MiB | $(mib "$g_alloc") MiB | $(r "$g_alloc" "$k_alloc")x smaller |
| stop seen by the process | $(ms "$k_gap") ms | $(ms "$g_gap") ms | $(r "$g_gap" "$k_gap")x shorter |
| stop measured by kcoredump (ptrace) | $(ms "$k_stop") ms | - | - |
| process memory read | $(mib "$k_read") MiB | $(mib "$k_size") MiB (everything) | - |

$(if [ -n "$g18_time" ]; then
		echo "Against gcore of $gdb18_version (sid; one run, a sparse file in $work, $(mib "$g18_size") MiB apparent):"
		echo
		echo "| | kcoredump pid | gcore ($gdb18_version) | ratio |"
		echo "|---|---:|---:|---:|"
		echo "| wall time, writing a file | $(printf %.2f "$k_time") s | $(printf %.2f "$g18_time") s | $(r "$g18_time" "$k_time")x faster |"
		echo "| output allocated | $(mib "$k_alloc") MiB | $(mib "$g18_alloc") MiB | $(r "$g18_alloc" "$k_alloc")x smaller |"
		echo "| stop seen by the process | $(ms "$k_gap") ms | $(ms "$g18_gap") ms | $(r "$g18_gap" "$k_gap")x shorter |"
		echo
	fi)
Also: \`-o core.zst\` $(printf %.2f "$kz_time") s, $(mib "$kz_alloc") MiB,
stop $(ms "$kz_gap") ms; \`--stop\` (stopped for the whole copy)
$(printf %.2f "$ks_time") s, stop $(ms "$ks_gap") ms.
EOF
cat > "$out/pid.json" << EOF
{"reps": $reps, "idle_gap_ns": $idle_gap,
 "kcoredump": {"seconds": $k_time, "allocated": $k_alloc, "apparent": $k_size,
   "gap_ns": $k_gap, "stop_ns": $k_stop, "bytes_read": $k_read,
   "runs_seconds": [$(IFS=,; echo "${k_times[*]}")],
   "runs_gap_ns": [$(IFS=,; echo "${k_gaps[*]}")]},
 "kcoredump_devnull": {"seconds": $kn_time,
   "runs_seconds": [$(IFS=,; echo "${kn_times[*]}")]},
 "kcoredump_zst": {"seconds": $kz_time, "allocated": $kz_alloc, "gap_ns": $kz_gap},
 "kcoredump_stop": {"seconds": $ks_time, "gap_ns": $ks_gap},
 "gcore": {"seconds": $g_time, "allocated": $g_alloc, "gap_ns": $g_gap,
   "output": "$g_out", "gdb": "$(gdb --version | head -1)"},
 "gcore_sid": $(if [ -n "$g18_time" ]; then
		echo "{\"seconds\": $g18_time, \"allocated\": $g18_alloc, \"apparent\": $g18_size, \"gap_ns\": $g18_gap, \"gdb\": \"$gdb18_version\"}"
	else echo null; fi)}
EOF
cat "$out/pid.md"
