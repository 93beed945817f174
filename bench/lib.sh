# SPDX-License-Identifier: MIT
# Shared by the bench scripts (sourced): timing with medians, CPU time and
# sizes.  Callers set $work; outputs are named $work/out.* and removed
# before every run.

# With sched_autogroup on (the kernel's default on desktops and on this
# project's CI machines), nice ranks threads only within their session's
# autogroup, and sessions share the CPUs equally: a bench under nice -n -19
# still got one CPU of two while another session's job ran, so its two
# threads took turns.  A bench run at a negative niceness (root) gives its
# autogroup the same niceness; bench_sched says what it runs at.
bench_autogroup=none
bench_nice=$(nice)
if [ "$bench_nice" -lt 0 ] && [ -w /proc/self/autogroup ]; then
	if echo "$bench_nice" > /proc/self/autogroup 2> /dev/null; then
		bench_autogroup=$bench_nice
	fi
fi
# bench_sched: the niceness and the autogroup's, for a header.
bench_sched() { echo "nice $(nice), autogroup nice $bench_autogroup"; }

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# timeit N CMD...: wall seconds of each of N runs; prints the median.
timeit() {
	local n=$1
	shift
	for ((i = 0; i < n; i++)); do
		rm -f "$work"/out.* "$work"/.out.*
		local t0 t1
		t0=$(date +%s.%N)
		"$@" > /dev/null 2>&1
		t1=$(date +%s.%N)
		echo "$t1 - $t0" | bc -l
	done | median
}

# size FILE: its size in bytes.
size() { stat -c %s "$1"; }

# cpu CMD...: user + system seconds of one run.
cpu() {
	rm -f "$work"/out.*
	/usr/bin/time -f "%U %S" "$@" 2>&1 > /dev/null | tail -n 1 | awk '{ print $1 + $2 }'
}

# bench_init NAME [BUILD_DIR] [REPS] [ELF]: the arguments of the benchmarks
# on a kernel ELF dump (by default the VM guest's RAM dump vm-formats
# leaves).  Sets build, reps, input, K, work (made, removed on exit) and
# out; needs $here.
# shellcheck disable=SC2034 # the variables are the caller's
bench_init() {
	local name=$1
	build=$(cd "${2:-$here/../build}" && pwd)
	reps=${3:-3}
	input=${4:-$build/tests/vm/results-formats/ram.elf}
	K=$build/kcoredump
	work=${BENCH_DIR:-/dev/shm/kcoredump-bench-$name}
	out=$here/results
	[[ -r $input ]] || {
		echo "bench/$name.sh: no input $input (run ctest -R vm-formats, or pass an ELF dump)" >&2
		exit 1
	}
	mkdir -p "$work" "$out"
	trap 'rm -rf "$work"' EXIT
}
