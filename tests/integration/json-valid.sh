#!/bin/bash
# Every --json output is exactly one JSON document that jq accepts: info
# (full, --segments-only, --notes-only, --registers) on every fixture, good
# or broken, errors included, and the dump summary.
#   json-valid.sh KCOREDUMP FIXDIR
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
kcoredump=$1 fixdir=$2
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

valid_json()
{
	local what=$1 rc=0
	shift
	timeout 60 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if crashed "$rc" "$tmp/err"; then
		not_ok "$what: crashed or timed out (exit $rc)"
		diag "$tmp/err"
	elif [ "$(jq -s length "$tmp/out" 2>"$tmp/jqerr")" != 1 ]; then
		not_ok "$what: not exactly one JSON document (exit $rc)"
		diag "$tmp/jqerr"
	elif [ "$rc" != 0 ] && ! jq -e .error.message "$tmp/out" >/dev/null; then
		not_ok "$what: exit $rc without an error object"
	else
		ok "$what (exit $rc)"
	fi
}

for file in "$fixdir"/*.core; do
	name=$(basename "$file" .core)
	valid_json "info $name" "$kcoredump" info --json --no-modules "$file"
	[ "$name" = pn-xnum ] && continue # 70003 segments: once is enough
	valid_json "info --segments-only $name" "$kcoredump" info --json --segments-only --no-modules "$file"
	valid_json "info --notes-only --registers $name" "$kcoredump" info --json --notes-only --registers "$file"
done
valid_json "info of a missing file" "$kcoredump" info --json "$tmp/nonexistent"
valid_json "info of a directory" "$kcoredump" info --json "$tmp"
for name in process-x86_64 sparse-1t; do
	valid_json "dump --dry-run $name" "$kcoredump" dump --json --dry-run "$fixdir/$name.core" -o "$tmp/x.elf"
	valid_json "dump $name" "$kcoredump" dump --json "$fixdir/$name.core" -o "$tmp/$name.elf"
done
finish
