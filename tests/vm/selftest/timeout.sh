#!/bin/bash
# SPDX-License-Identifier: MIT
# vm-timeout: a guest case that runs out of time fails with "case timed out
# after N s", the command it was running and its last output, instead of a
# bare "FAIL timeout" (issue 24: a loaded machine's TCG could not meet
# main-job's fixed 300 s, and the failure did not say where it was).
# One short boot of hang.sh with --case-timeout 20.
#   timeout.sh KCOREDUMP
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../lib/tap.sh
. "$here/../../lib/tap.sh"
command -v qemu-system-x86_64 > /dev/null || { echo "1..0 # SKIP no qemu-system-x86_64"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rc=0
"$here/../run.sh" --kcoredump "$1" --case-timeout 20 --results "$work/res" \
	"$here/hang.sh" > "$work/out" 2> "$work/err" || rc=$?
check "a case out of time fails (exit $rc)" [ "$rc" -eq 1 ]
line=$(grep -m 1 'guest FAILED' "$work/err" || true)
echo "# $line"
check "it says how long, what ran and the last output" \
	eval '[[ $line == *"case timed out after 20 s, running: sleep 100000; its last output: waiting for a file that never comes"* ]]'
[ -n "$line" ] || diag "$work/err"
finish
