#!/bin/bash
# "kcoredump info" text and --json for the valid fixtures, compared with
# golden/NAME.txt and golden/NAME.json.  Output is normalized first: the
# fixture is named relative to its directory, allocated bytes (which depend
# on the file system) are masked, and --no-holes/--no-modules keep
# SEEK_DATA granularity and libdwfl's view of this machine out of it.
# pn-xnum has 70003 program headers: only the first and last few are kept.
#   golden-info.sh KCOREDUMP FIXDIR GOLDENDIR     (UPDATE_GOLDEN=1 rewrites)
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
kcoredump=$1 fixdir=$2 golden=$3
. "$(dirname "$0")/lib.sh"
# render() runs in the fixture directory.
case $kcoredump in
*/*) kcoredump=$(realpath "$kcoredump") ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
opts=(--no-holes --no-modules)

render()
{
	local name=$1 mode=$2
	(
		cd "$fixdir"
		if [ "$mode" = txt ]; then
			if [ "$name" = pn-xnum ]; then
				"$kcoredump" info "${opts[@]}" --segments-only "$name.core" >"$tmp/full" ||
					exit 1
				head -n 20 "$tmp/full"
				echo "[...]"
				tail -n 3 "$tmp/full"
			else
				"$kcoredump" info "${opts[@]}" "$name.core"
			fi | sed -E 's/\([^()]* allocated\)/(ALLOCATED allocated)/'
		else
			"$kcoredump" info "${opts[@]}" --json "$name.core" |
				jq 'del(.source.allocated_bytes) |
				    if (.segments | length) > 40
				    then .segments |= (.[0:8] + .[-3:]) else . end'
		fi
	)
}

for name in $VALID_FIXTURES; do
	for mode in txt json; do
		if ! render "$name" $mode >"$tmp/out" 2>"$tmp/err"; then
			not_ok "$name.$mode: kcoredump info failed"
			diag "$tmp/err"
			continue
		fi
		if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
			cp "$tmp/out" "$golden/$name.$mode"
			ok "$name.$mode: golden file updated"
		elif [ ! -f "$golden/$name.$mode" ]; then
			not_ok "$name.$mode: no golden file (run with UPDATE_GOLDEN=1)"
		elif diff -u "$golden/$name.$mode" "$tmp/out" >"$tmp/diff"; then
			ok "$name.$mode matches the golden file"
		else
			not_ok "$name.$mode differs from the golden file"
			head -n 40 "$tmp/diff" | diag
		fi
	done
done
finish
