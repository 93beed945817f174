#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every prefix of the series builds, boots and passes the cases of the
# patches it has: for N = 1 .. the number of patches, kernel/test.sh
# --patched --upto N with the cases below (one boot each; each prefix has its
# own O= directory, build-patched-uptoN, kept; a new one starts as a copy
# of the closest kept build, build.sh --upto, so only what differs is
# compiled).
#
#   kernel/upto.sh [--base 6.12|7.3] [--quick] [RESULTS_DIR] [N...]
#                  (default: 6.12, every N)
#
# --quick boots each prefix once, with the case of its last patch only
# (the fix's reproducer, the feature's test), instead of every case of the
# patches it has: with the prefixes' builds kept, the 7.3 series' nine (now eleven)
# prefixes take about 30-40 minutes under QEMU TCG on 2 CPUs.
#
# On 7.3 N counts the patches of kernel/patches-7.3's postings in order
# (1-3 the fixes and their KUnit test, 4-7 kcore, 8 the coredump walk, 9
# its selftest, 10 COREDUMP_HOLES on the coredump socket, 11 its selftest).
#
# Prints "upto N CASE: pass|FAIL" per boot and a summary; exit 1 if any
# failed, 77 if qemu is missing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/lib/shell.sh
source "$here/../tests/lib/shell.sh"
kcd_trap_errors

base=6.12
quick=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--base)
		base=${2:-}
		shift 2 || { echo "upto.sh: --base needs 6.12 or 7.3" >&2; exit 2; } ;;
	--quick) quick=1; shift ;;
	*) break ;;
	esac
done
case "$base" in
6.12) series=("$here"/patches/[0-9][0-9][0-9][0-9]-*.patch) ;;
7.3) series=("$here"/patches-7.3/*/[0-9][0-9][0-9][0-9]-*.patch) ;;
*) echo "upto.sh: --base must be 6.12 or 7.3, not '$base'" >&2; exit 2 ;;
esac
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-upto.XXXXXX")}
shift || true
mkdir -p "$out"
total=0                        # without the cover letters
for p in "${series[@]}"; do
	[[ "$(basename "$p")" == 0000-* ]] || total=$((total + 1))
done
ns=("$@")
[[ ${#ns[@]} -gt 0 ]] || mapfile -t ns < <(seq 1 "$total")
command -v qemu-system-x86_64 > /dev/null || { echo "upto.sh: no qemu-system-x86_64, skipping" >&2; exit 77; }

# The cases for a prefix of N patches: what the patches up to N fix or add
# (see kernel/README.md for the series).
cases_for() {
	local n=$1
	if [[ "$base" == 7.3 ]]; then
		# 7.3 has 6.12's 0003 and 0004 (killable dumps) already
		echo "kernel-vmap-ram"                              # 1
		echo "kernel-coredump none dense sparse64g kill"
		((n < 2)) || echo "kernel-vread"                   # 2 (and 6, 7)
		((n < 3)) || echo "kernel-kunit vread"             # 3
		((n < 5)) || echo "kernel-seek"                    # 5
		((n < 8)) || echo "kernel-coredump dense sparse64g sparse1t strided zeropage protnone dontneed uffd"
		((n < 10)) || echo "kernel-coredump sparse64g sparse64g:sock dense dense:sock sparse1t:sock"
		((n < 11)) || echo "kernel-selftest coredump_holes_test coredump_socket_holes_test"
		return
	fi
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

# --quick: the one case of patch N (what it fixes or adds; a patch that
# changes nothing a case sees gets the case of the code it moves).
case_quick() {
	local n=$1
	if [[ "$base" == 7.3 ]]; then
		case $n in
		1|4) echo "kernel-vmap-ram" ;;            # vm_map_ram() reads; the refactor
		2|6|7) echo "kernel-vread" ;;             # retry loop; bulk reads; spans
		3) echo "kernel-kunit vread" ;;
		5) echo "kernel-seek" ;;
		8) echo "kernel-coredump none dense sparse64g strided zeropage protnone dontneed uffd kill" ;;
		10) echo "kernel-coredump sparse64g sparse64g:sock dense dense:sock sparse1t:sock" ;;
		11) echo "kernel-selftest coredump_socket_holes_test" ;;
		*) echo "kernel-selftest coredump_holes_test kunit:vread" ;;
		esac
		return
	fi
	case $n in
	1|5) echo "kernel-vmap-ram" ;;
	2|7|8) echo "kernel-vread" ;;
	3) echo "kernel-coredump none dense sparse64g" ;;
	4) echo "kernel-coredump none dense sparse64g kill" ;;
	6) echo "kernel-seek" ;;
	*) echo "kernel-coredump dense sparse64g sparse1t strided zeropage protnone dontneed uffd" ;;
	esac
}

fails=0
for n in "${ns[@]}"; do
	while read -r c args; do
		[[ -n "$c" ]] || continue
		name=upto$n-$c
		[[ -z "$args" ]] || name+=-$(echo "$args" | cut -d" " -f1-2 | tr ' ' '-')
		# shellcheck disable=SC2086 # args are words
		if "$here/test.sh" --base "$base" --patched --upto "$n" --timeout 1200 \
			--results "$out/$name" "$c" $args > "$out/$name.log" 2>&1; then
			echo "upto $n $c $args: pass"
		else
			echo "upto $n $c $args: FAIL (see $out/$name.log)"
			fails=$((fails + 1))
		fi
	done < <(if ((quick)); then case_quick "$n"; else cases_for "$n"; fi)
done
echo "upto.sh: $base, ${#ns[@]} prefixes, $fails failed boots; results in $out"
((fails == 0))
