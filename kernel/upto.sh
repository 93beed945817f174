#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every prefix of the series builds, boots and passes the cases of the
# patches it has: for N = 1 .. the number of patches, kernel/test.sh
# --patched --upto N with the cases below (one boot each; each prefix has its
# own O= directory, build-patched-uptoN, built with ccache).
#
#   kernel/upto.sh [RESULTS_DIR] [N...]      (default: every N)
#
# Prints "upto N CASE: pass|FAIL" per boot and a summary; exit 1 if any
# failed, 77 if qemu is missing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/lib/shell.sh
source "$here/../tests/lib/shell.sh"
kcd_trap_errors

out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-upto.XXXXXX")}
shift || true
mkdir -p "$out"
series=("$here"/patches/[0-9][0-9][0-9][0-9]-*.patch)
total=$((${#series[@]} - 1))   # without the cover letter
ns=("$@")
[[ ${#ns[@]} -gt 0 ]] || mapfile -t ns < <(seq 1 "$total")
command -v qemu-system-x86_64 > /dev/null || { echo "upto.sh: no qemu-system-x86_64, skipping" >&2; exit 77; }

# The cases for a prefix of N patches: what the patches up to N fix or add
# (see kernel/README.md for the series).
cases_for() {
	local n=$1
	echo "kernel-vmap-ram"                       # 0001
	((n < 2)) || echo "kernel-vread"            # 0002 (and 0007, 0008)
	if ((n >= 4)); then                         # 0003, 0004: killable dumps
		echo "kernel-coredump none dense sparse64g kill"
	elif ((n >= 3)); then
		echo "kernel-coredump none dense sparse64g"
	fi
	((n < 6)) || echo "kernel-seek"             # 0006
	((n < 9)) || echo "kernel-coredump dense sparse64g sparse1t strided zeropage protnone dontneed uffd"
}

fails=0
for n in "${ns[@]}"; do
	while read -r c args; do
		[[ -n "$c" ]] || continue
		name=upto$n-$c
		[[ -z "$args" ]] || name+=-$(echo "$args" | cut -d" " -f1-2 | tr ' ' '-')
		# shellcheck disable=SC2086 # args are words
		if "$here/test.sh" --patched --upto "$n" --timeout 1200 \
			--results "$out/$name" "$c" $args > "$out/$name.log" 2>&1; then
			echo "upto $n $c $args: pass"
		else
			echo "upto $n $c $args: FAIL (see $out/$name.log)"
			fails=$((fails + 1))
		fi
	done < <(cases_for "$n")
done
echo "upto.sh: ${#ns[@]} prefixes, $fails failed boots; results in $out"
((fails == 0))
