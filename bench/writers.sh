#!/bin/bash
# SPDX-License-Identifier: MIT
# The writer interface (issue 16) against a baseline build, in one run:
# the ELF writer (sparse ELF and ELF .zst) on the same 1 GiB core of mixed
# content (executables, zeros, random) on tmpfs, with --hash none and with
# --hash sha256 (named: the default digest differs between builds), by this
# build and by
# the baseline (e.g. main before the writers, built elsewhere), the runs of
# the two alternating; medians of REPS runs and their ratio (this build's
# time / the baseline's: below 1 is faster), of the wall time and of the
# CPU time (user + system, /usr/bin/time: steadier on a loaded machine).  kdump, LiME and AVML need a
# kernel's physical memory: bench/kdump.sh and bench/avml.sh on the VM
# guest's RAM dump, with a baseline build's binary in the same way.
# Usage: bench/writers.sh BASELINE_BUILD_DIR [BUILD_DIR] [REPS]
#   (writes bench/results/writers.{md,json})
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
[[ $# -ge 1 ]] || {
	echo "usage: bench/writers.sh BASELINE_BUILD_DIR [BUILD_DIR] [REPS]" >&2
	exit 2
}
base=$(cd "$1" && pwd)
build=$(cd "${2:-$here/../build}" && pwd)
reps=${3:-3}
K=$build/kcoredump
B=$base/kcoredump
MK=$build/tests/tools/mkcore
for f in "$K" "$B" "$MK"; do
	[[ -x $f ]] || {
		echo "bench/writers.sh: $f is not built" >&2
		exit 1
	}
done
work=${BENCH_DIR:-/dev/shm/kcoredump-bench-writers}
out=$here/results
mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

echo "== generating a 1 GiB core in $work"
cat > "$work/mixed.spec" << 'SPEC'
load vaddr=0x10000000 flags=rw
	hole 1G
end
SPEC
"$MK" "$work/mixed.spec" "$work/mixed.core"
off=$("$K" info --json "$work/mixed.core" | jq -r '.segments[] | select(.type == "LOAD") | .offset')
(
	# head closes its pipe early: SIGPIPE upstream is expected here.
	set +o pipefail
	find /usr/bin /usr/lib -type f -size +64k 2> /dev/null | head -2000 |
		xargs cat 2> /dev/null | head -c $((512 << 20))
	head -c $((256 << 20)) /dev/zero
	head -c $((256 << 20)) /dev/urandom
) | dd of="$work/mixed.core" bs=1M seek=$((off)) oflag=seek_bytes conv=notrunc status=none
truncate -s $((off + (1 << 30))) "$work/mixed.core"

# one BINARY FORMAT_ARGS... -> one timed run: "WALL CPU" (seconds).
one() {
	local bin=$1
	shift
	rm -f "$work"/out.*
	/usr/bin/time -o "$work/time" -f "%e %U %S" \
		"$bin" dump -q -f -T 2 "$work/mixed.core" "$@" > /dev/null 2>&1 || {
		local rc=$?
		# 7 would be an incomplete dump: not on this input.
		echo "bench/writers.sh: $bin dump $* exited $rc" >&2
		exit 1
	}
	tail -n 1 "$work/time" | awk '{ print $1, $2 + $3 }'
}

# col N: the median of column N of the lines on stdin.
col() { awk -v n="$1" '{ print $n }' | median; }

cases=(
	"elf|-o $work/out.elf"
	"elf.zst|-o $work/out.zst"
)
rows=() json=()
for c in "${cases[@]}"; do
	name=${c%%|*}
	read -ra args <<< "${c#*|}"
	for hash in none sha256; do
		# Named, not the default: the default block digest is XXH3-128
		# since 41b975e, SHA-256 in older baselines.
		hargs=(--hash "$hash")
		: > "$work/new.t"
		: > "$work/old.t"
		for ((i = 0; i < reps; i++)); do
			one "$B" "${args[@]}" "${hargs[@]}" >> "$work/old.t"
			one "$K" "${args[@]}" "${hargs[@]}" >> "$work/new.t"
		done
		tn=$(col 1 < "$work/new.t")
		to=$(col 1 < "$work/old.t")
		cn=$(col 2 < "$work/new.t")
		co=$(col 2 < "$work/old.t")
		ratio=$(echo "$tn / $to" | bc -l)
		cratio=$(echo "$cn / $co" | bc -l)
		printf '%-11s %-7s this %6.2f s  baseline %6.2f s  ratio %.3f  CPU %6.2f s / %6.2f s  ratio %.3f\n' \
			"$name" "$hash" "$tn" "$to" "$ratio" "$cn" "$co" "$cratio"
		rows+=("$(printf '| %s | %s | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f |' \
			"$name" "$hash" "$tn" "$to" "$ratio" "$cn" "$co" "$cratio")")
		json+=("$(printf '{"format":"%s","hash":"%s","seconds":%.3f,"baseline_seconds":%.3f,"ratio":%.4f,"cpu_seconds":%.3f,"baseline_cpu_seconds":%.3f,"cpu_ratio":%.4f}' \
			"$name" "$hash" "$tn" "$to" "$ratio" "$cn" "$co" "$cratio")")
	done
done

{
	echo "# Writers: this build against a baseline, $(date -u +%Y-%m-%d)"
	echo
	echo "1 GiB core on tmpfs (512 MiB executables, 256 MiB zeros, 256 MiB"
	echo "random), \`dump -T 2\`, medians of $reps alternating runs; ratio ="
	echo "this build / baseline ($(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)), of"
	echo "the wall time and of the CPU time (user + system); the hashed rows"
	echo "pass \`--hash sha256\` to both builds (not the default digest)."
	echo
	echo "| output | hash | this (s) | baseline (s) | ratio | this CPU (s) | baseline CPU (s) | CPU ratio |"
	echo "|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} > "$out/writers.md"
(
	IFS=,
	echo "[${json[*]}]"
) > "$out/writers.json"
echo "wrote $out/writers.md"
