#!/bin/bash
# Every broken fixture: "kcoredump info" exits with the status in
# malformed.txt, prints exactly one "kcoredump: 'FILE': ..." line on stderr
# naming the problem (and its offset), never crashes, finishes in 5 s; with
# --json, stdout is one JSON document with .error.message.
#   malformed-inputs.sh KCOREDUMP SPECDIR FIXDIR TABLE
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
kcoredump=$1 specdir=$2 fixdir=$3 table=$4
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ELF fixtures from the specs, then the other formats' (mkformats.py).
for file in "$specdir"/bad-*.spec "$fixdir"/formats/bad-*; do
	case $file in
	*.spec)
		name=$(basename "$file" .spec)
		file=$fixdir/$name.core
		;;
	*) name=$(basename "$file") ;;
	esac
	row=$(awk -v n="$name" '$1 == n { print; exit }' "$table")
	if [ -z "$row" ]; then
		not_ok "$name: no row in $(basename "$table")"
		continue
	fi
	want_rc=$(awk '{ print $2 }' <<<"$row")
	want_off=$(awk '{ print $3 }' <<<"$row")
	want_msg=$(sed -E 's/^[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+//' <<<"$row")

	for mode in text json; do
		args=(info)
		[ $mode = json ] && args+=(--json)
		rc=0
		timeout 5 "$kcoredump" "${args[@]}" "$file" >"$tmp/out" 2>"$tmp/err" || rc=$?
		what="$name ($mode)"
		if crashed "$rc" "$tmp/err"; then
			not_ok "$what: crashed or timed out (exit $rc)"
			diag "$tmp/err"
			continue
		fi
		if [ "$rc" != "$want_rc" ]; then
			not_ok "$what: exit status $rc, expected $want_rc"
			diag "$tmp/err"
			continue
		fi
		if [ "$want_rc" = 0 ]; then
			if [ -s "$tmp/err" ]; then
				not_ok "$what: unexpected stderr"
				diag "$tmp/err"
			elif [ $mode = text ] && ! grep -qF -- "$want_msg" "$tmp/out"; then
				not_ok "$what: output lacks '$want_msg'"
			elif [ $mode = json ] && ! jq -e .source "$tmp/out" >/dev/null; then
				not_ok "$what: stdout is not a JSON report"
			else
				ok "$what: parsed, exit 0"
			fi
			continue
		fi
		lines=$(wc -l <"$tmp/err")
		msg=$(head -n 1 "$tmp/err")
		if [ "$lines" != 1 ]; then
			not_ok "$what: $lines lines on stderr, expected 1"
			diag "$tmp/err"
		elif [[ $msg != "kcoredump: '$file': "* ]]; then
			not_ok "$what: message does not start with kcoredump: '$file':"
			diag "$tmp/err"
		elif [[ $msg != *"$want_msg"* ]]; then
			not_ok "$what: message lacks '$want_msg'"
			diag "$tmp/err"
		elif [ "$want_off" = yes ] && [[ $msg != *offset* ]]; then
			not_ok "$what: message does not name the offset"
			diag "$tmp/err"
		elif [ $mode = json ] &&
			! { [ "$(jq -s length "$tmp/out")" = 1 ] &&
				jq -e .error.message "$tmp/out" >/dev/null; }; then
			not_ok "$what: stdout is not one JSON document with .error.message"
			diag "$tmp/out"
		else
			ok "$what: exit $rc, $msg"
		fi
	done
done
finish
