# SPDX-License-Identifier: MIT
# Shared by the bench scripts (sourced): timing with medians.  Callers set
# $work; outputs are named $work/out.* and removed before every run.

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
