#!/bin/bash
# SPDX-License-Identifier: MIT
# kdump output vs makedumpfile on the same ELF input, side by side in one
# run, medians of REPS repetitions, at dump levels 1 and 31, for each page
# codec both makedumpfile builds have:
#   makedumpfile 1.7.2 (this Debian 12 machine's, one thread)
#   makedumpfile 1.7.8 (Debian sid, in the root tests/oracle/sid-root.sh
#                       builds: one thread, and --num-threads 2)
#   kcoredump convert --format kdump --codec C -d L  with -T 2 (the
#                       default on 2 CPUs) and -T 1, default hashing
#                       (the file's SHA-256, XXH3-128 per block), and -T 2
#                       --hash none for the cost of hashing
# makedumpfile's flags: -c zlib (level 1, Z_BEST_SPEED), -l lzo1x_1, -z
# zstd; kcoredump's zlib default is libdeflate's level 2 (a little smaller
# than zlib's level 1).  Each command is timed inside the root it runs in
# (bash's `time`), so the sid root's set-up is not counted.  A case that
# fails is reported with its exit status and last line, not timed.
# ELF is a kernel ELF dump: by default the VM guest's RAM dump the vm-dump
# case leaves in BUILD_DIR/tests/vm/results-dump/dump-ram/ram.elf (ctest -R
# '^vm-dump$'), a 1 GiB guest's live memory whose zero pages are file
# holes.  Outputs go to $BENCH_DIR (default /var/tmp/kcoredump-bench-kdump:
# a directory the sid root can bind; /dev/shm is not).  CPU seconds (user
# + system, median) are reported next to wall time: the machine is shared.
# Every run is timed, the first one too (a failing case is not timed
# again); the input is read once first, into the page cache.
# makedumpfile --num-threads 2 takes minutes a run (1.7.8 spends its time
# in its threads' locking): MDF_THREADS_REPS (default REPS) times it fewer
# times; the results say how many.
# Usage: [MDF_THREADS_REPS=N] bench/kdump.sh [BUILD_DIR] [REPS] [ELF]
#   (writes bench/results/kdump.{md,json})
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
: "${BENCH_DIR:=/var/tmp/kcoredump-bench-kdump}"
export BENCH_DIR
default_input=$(cd "${1:-$here/../build}" 2> /dev/null && pwd)/tests/vm/results-dump/dump-ram/ram.elf
bench_init kdump "${1:-}" "${2:-}" "${3:-$default_input}"
in=$(realpath "$input")
command -v makedumpfile > /dev/null || { echo "bench/kdump.sh: makedumpfile not installed" >&2; exit 1; }
sid=$here/../tests/oracle/sid-root.sh
if ! "$sid" --skip > /dev/null 2> "$work/sid.err"; then
	echo "bench/kdump.sh: the sid root (makedumpfile 1.7.8) cannot be built here: $(tail -n 1 "$work/sid.err")" >&2
	exit 1
fi
reps_mt=${MDF_THREADS_REPS:-$reps}
mt_note=
if ((reps_mt != reps)); then
	mt_note=" (median of $reps_mt)"
	((reps_mt > 1)) || mt_note=" (one run)"
fi
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
cat "$in" > /dev/null
v_host=$(makedumpfile -v 2>&1 | awk '/version/ { print $3; exit }')
v_sid=$("$sid" run -- makedumpfile -v 2>&1 | awk '/version/ { print $3; exit }')

# measure WHERE N OUT CMD...: runs CMD N times (WHERE host or sid), each
# writing OUT; prints "wall cpu size" (medians) or "fail RC LAST-LINE".
# shellcheck disable=SC2016 # expanded by the inner bash
loop='TIMEFORMAT="%R %U %S"; n=$1 out=$2; shift 2
rm -f "$out.times"
for ((i = 0; i < n; i++)); do
	rm -f "$out"
	{ time "$@" > "$out.log" 2>&1; } 2>> "$out.times" ||
		{ echo "fail $? $(tail -n 1 "$out.log" | tr -s "\t " "  ")"; exit 0; }
done
sz=$(stat -c %s "$out")
w=$(cut -d" " -f1 "$out.times" | sort -n | sed -n "$(((n + 1) / 2))p")
c=$(awk "{ print \$2 + \$3 }" "$out.times" | sort -n | sed -n "$(((n + 1) / 2))p")
rm -f "$out.times"
echo "$w $c $sz"'
measure() {
	local where=$1 n=$2 out=$3
	shift 3
	rm -f "$out"
	case $where in
	host) bash -c "$loop" loop "$n" "$out" "$@" ;;
	sid) "$sid" run --bind "$in" --bind-rw "$work" -- bash -c "$loop" loop "$n" "$out" "$@" ;;
	esac
	rm -f "$out" "$out.log"
}

declare -A res
declare -A mdf_flag=([zlib]=-c [lzo]=-l [zstd]=-z)
cases=()
for level in 1 31; do
	for codec in zlib lzo zstd; do
		f=${mdf_flag[$codec]}
		o=$work/out.kdump
		k=("$K" convert -q -f --format kdump --codec "$codec" -d "$level")
		# Interleaved: each anchor next to the kcoredump rows it is read with.
		res[$level,$codec,mdf-host]=$(measure host "$reps" "$o" makedumpfile "$f" -d "$level" "$in" "$o")
		res[$level,$codec,mdf-sid]=$(measure sid "$reps" "$o" makedumpfile "$f" -d "$level" "$in" "$o")
		res[$level,$codec,mdf-sid-2]=$(measure sid "$reps_mt" "$o" makedumpfile --num-threads 2 "$f" -d "$level" "$in" "$o")
		res[$level,$codec,kcd-2]=$(measure host "$reps" "$o" "${k[@]}" -T 2 "$in" -o "$o")
		res[$level,$codec,kcd-1]=$(measure host "$reps" "$o" "${k[@]}" -T 1 "$in" -o "$o")
		res[$level,$codec,kcd-2-none]=$(measure host "$reps" "$o" "${k[@]}" -T 2 --hash none "$in" -o "$o")
		cases+=("$level,$codec")
	done
done

label() {
	case $1 in
	mdf-host) echo "makedumpfile $v_host, 1 thread" ;;
	mdf-sid) echo "makedumpfile $v_sid, 1 thread" ;;
	mdf-sid-2) echo "makedumpfile $v_sid --num-threads 2$mt_note" ;;
	kcd-2) echo "kcoredump -T 2 (default hashing)" ;;
	kcd-1) echo "kcoredump -T 1 (default hashing)" ;;
	kcd-2-none) echo "kcoredump -T 2 --hash none" ;;
	esac
}
# ratio BASE THIS: BASE's wall time / THIS's (x faster), "-" if either failed.
ratio() {
	local b=$1 t=$2
	[[ $b != fail* && $t != fail* ]] || { echo "-"; return; }
	echo "${b%% *} ${t%% *}" | awk '{ printf "%.2fx", $1 / $2 }'
}
rows=(mdf-host mdf-sid mdf-sid-2 kcd-2 kcd-1 kcd-2-none)
cpu=$(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo | sed 's/^ *//')
alloc=$(du -B1 "$in" | cut -f1)
{
	echo "Machine: $(nproc) CPUs ($cpu), shared with other jobs (load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end), at $(bench_sched);"
	echo "input $(basename "$in"): $(($(size "$in") >> 20)) MiB logical, $((alloc >> 20)) MiB with data, on $(df --output=fstype "$in" | tail -1);"
	echo "outputs on $(df --output=fstype "$work" | tail -1); medians of $reps runs; anchors makedumpfile $v_host (Debian 12) and $v_sid (Debian sid)."
	echo "Ratios are makedumpfile $v_sid's wall time over the row's: above 1 the row is faster."
	for c in "${cases[@]}"; do
		level=${c%,*} codec=${c#*,}
		echo
		echo "### -d $level, $codec (makedumpfile ${mdf_flag[$codec]})"
		echo
		echo "| case | time (s) | CPU (s) | size (KiB) | vs $v_sid, 1 thread | vs $v_sid --num-threads 2 |"
		echo "|---|---|---|---|---|---|"
		for r in "${rows[@]}"; do
			v=${res[$c,$r]}
			if [[ $v == fail* ]]; then
				echo "| $(label "$r") | failed: exit ${v#fail } | - | - | - | - |"
			else
				read -r w cp sz <<< "$v"
				echo "| $(label "$r") | $w | $cp | $((sz >> 10)) | $(ratio "${res[$c,mdf-sid]}" "$v") | $(ratio "${res[$c,mdf-sid-2]}" "$v") |"
			fi
		done
	done
} | tee "$out/kdump.md"
{
	printf '{"input": "%s", "reps": %s, "reps_num_threads_2": %s, "load_start": "%s", "load_end": "%s", "makedumpfile_host": "%s", "makedumpfile_sid": "%s", "cases": [' \
		"$(basename "$in")" "$reps" "$reps_mt" "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$v_host" "$v_sid"
	sep=
	for c in "${cases[@]}"; do
		for r in "${rows[@]}"; do
			v=${res[$c,$r]}
			if [[ $v == fail* ]]; then
				printf '%s\n {"level": %s, "codec": "%s", "case": "%s", "failed": %s}' "$sep" "${c%,*}" "${c#*,}" "$r" \
					"$(jq -Rn --arg v "${v#fail }" '$v')"
			else
				read -r w cp sz <<< "$v"
				printf '%s\n {"level": %s, "codec": "%s", "case": "%s", "seconds": %s, "cpu_seconds": %s, "bytes": %s}' \
					"$sep" "${c%,*}" "${c#*,}" "$r" "$w" "$cp" "$sz"
			fi
			sep=,
		done
	done
	echo ']}'
} | jq . > "$out/kdump.json"
