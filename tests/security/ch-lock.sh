#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 6 (in part): a truthful reason when the lock cuts a core.
# A core cut because the store lock stayed taken (another handler stuck,
# here a process holding it) says "lock-timeout", not "max-use".
#   ch-lock.sh KCOREDUMP MKCORE SPECDIR
set -uo pipefail
kcoredump=$1 mkcore=$2 specdir=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

"$mkcore" "$specdir/process-x86_64.spec" "$tmp/p.core" >/dev/null || { not_ok "mkcore"; finish; }

# --- the lock stays taken ------------------------------------------------------
d=$(newstore locked)
: >"$d/.kcoredump.lock"
chmod 600 "$d/.kcoredump.lock"
# One process holds it (killed by its pid below), its output not ours.
"$PY" -c 'import fcntl, sys, time
f = open(sys.argv[1])
fcntl.flock(f, fcntl.LOCK_EX)
time.sleep(120)' "$d/.kcoredump.lock" </dev/null >/dev/null 2>&1 &
holder=$!
trap 'kill "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
# Wait until the holder has it (no deadline: a loaded machine is slow).
until ! flock -n "$d/.kcoredump.lock" true; do sleep 0.1; done
handler "$d" --max-use 1G --keep-free 0 4242 1000 1000 6 1700000000 crashme \
	< "$tmp/p.core" 2>"$tmp/err"
rc=$?
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
check "the handler exits 0 ($rc)" [ "$rc" -eq 0 ]
sed 's/^/# /' "$tmp/err" | head -n 4
meta=$(find "$d" -name 'core.*.json' | head -n 1)
check "the core is kept (cut) with its metadata" [ -n "$meta" ]
check "its reason is lock-timeout ($(jq -r .truncation_reason "$meta" 2>/dev/null))" \
	quiet jq -e '.complete == false and .truncation_reason == "lock-timeout"' "$meta"

finish
