# shellcheck shell=bash disable=SC2034 # fail is read by the sourcing script
# SPDX-License-Identifier: MIT
# Sourced by the cases' host checks (bash).  run.sh exports KCOREDUMP (the
# host binary), VM_HERE (tests/vm) and puts the --tool programs on PATH.
set -euo pipefail
# shellcheck source=../../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/shell.sh"
kcd_trap_errors

: "${VM_HERE:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
PYTHON=${PYTHON:-/usr/bin/python3}
fail=0

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fail=1; }

# jqcheck WHAT FILE FILTER [JQ ARGS...]: FILTER must yield true.
jqcheck() {
	local what=$1 file=$2 filter=$3
	shift 3
	if jq -e "$@" "$filter" "$file" > /dev/null 2>&1; then
		ok "$what"
	else
		not_ok "$what ($(jq -c "$@" "$filter" "$file" 2>&1 | head -c 300))"
	fi
}

vmcheck() { "$PYTHON" "$VM_HERE/lib/vmcheck.py" "$@" || fail=1; }

# The guest case's own exit status (written by smoke.sh; absent when the case
# ran alone, where run.sh has already checked status).
guest_rc_ok() {
	local d=$1
	if [[ -f "$d/rc" && "$(cat "$d/rc")" != 0 ]]; then
		not_ok "guest part exited $(cat "$d/rc")"
	fi
}

# run_host_group DIR CASE...: the host check of each case a guest group
# (cases/group-lib.sh) ran, each on DIR/<case>; exits 1 if any failed.
run_host_group() {
	local dir=$1 c
	shift
	for c in "$@"; do
		echo "=== host check $c"
		if [[ ! -d "$dir/$c" ]]; then
			not_ok "$c: no results"
		elif ! bash "$VM_HERE/cases/$c.host.sh" "$dir/$c"; then
			echo "=== host check $c: FAILED"
			fail=1
		fi
	done
	exit $fail
}
