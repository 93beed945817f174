#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 5: what decides deletion is root's.  With --owner user
# the user used to own (and so edit) the metadata and the core: naming
# another user's core in one's own .json, with an old time, made the next
# limit run delete the victim; fallocate on one's own core evicted
# others.  Now the files stay root's (the user only reads them), a core is
# the file named like its metadata whatever the text says, only our own
# metadata is believed, files that are not ours (an earlier version's
# --owner user files) go first, and the store is not world-readable: the
# user lists its own cores in user.UID.
#   ch-metadata-trust.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
fix=$fixdir/process-x86_64.core
[ -f "$fix" ] || { echo "no fixture $fix"; exit 77; }
if ! is_root; then
	skip "the trust of metadata needs root (other users' files)"
	finish
fi

d=$(newstore store)
handler "$d" --owner user --dump-mode 1 4242 1000 1000 6 1700000010 crashme < "$fix" 2>/dev/null
mine=$(find "$d" -name core.crashme.1000.4242.1700000010 -type f)
check "uid 1000's core is stored for it to read" bash -c "$(declare -f as); as 1000 cat '$mine' >/dev/null"
check "uid 1000 cannot edit its metadata" \
	bash -c "$(declare -f as); ! as 1000 sh -c 'echo x >> \"$mine.json\"' 2>/dev/null"
check "uid 1000 cannot grow its core (fallocate)" \
	bash -c "$(declare -f as); ! as 1000 fallocate -l 64M '$mine' 2>/dev/null"
check "uid 1000 cannot list the store" bash -c "$(declare -f as); ! as 1000 ls '$d' >/dev/null 2>&1"
check "kcoredump list as uid 1000 shows its own core" \
	bash -c "$(declare -f as); as 1000 '$kcoredump' list --dir '$d' --json | jq -e '(.cores | length) == 1 and .cores[0].uid == 1000' >/dev/null"

# An earlier version's --owner user files: uid 4321 owns its metadata.
# Attack 1: it names the victim's core, with a very old time; the next
# handler needs 4 KiB more than the limit leaves.
handler "$d" 4242 0 0 6 1700000020 victim < "$fix" 2>/dev/null
victim=$d/core.victim.0.4242.1700000020
jq --arg v "$(basename "$victim")" '.core = $v | .time = 1 | .uid = 4321' "$victim.json" \
	> "$d/core.evil.4321.1.1.json"
chown 4321:4321 "$d/core.evil.4321.1.1.json"
cp "$victim" "$tmp/victim.copy"
used() { find "$1" -name 'core.*' -type f -printf '%b\n' | awk '{ s += $1 * 512 } END { print s }'; }
limit=$(($(used "$d") + $(alloc "$victim")))
handler "$d" --max-use "$limit" 4242 0 0 6 1700000030 next < "$fix" 2>"$tmp/err"
check "forged metadata naming the victim: the victim's core survives" cmp -s "$victim" "$tmp/victim.copy"
check "... and its metadata" [ -s "$victim.json" ]
check "... and uid 1000's core" [ -s "$mine" ]
check "... the forged (user-owned) metadata went first" [ ! -e "$d/core.evil.4321.1.1.json" ]
check "... the new core is complete" quiet jq -e '.complete' "$d/core.next.0.4242.1700000030.json"

# Attack 2: the user's own (old) core, fallocated to 64 MiB, newest of
# all, to push the others out.
d=$(newstore store2)
handler "$d" 4242 0 0 6 1700000040 victim < "$fix" 2>/dev/null
victim=$d/core.victim.0.4242.1700000040
cp "$fix" "$d/core.big.4321.1.1800000000"
jq '.core = "core.big.4321.1.1800000000" | .time = 1800000000 | .uid = 4321' "$victim.json" \
	> "$d/core.big.4321.1.1800000000.json"
chown 4321:4321 "$d/core.big.4321.1.1800000000" "$d/core.big.4321.1.1800000000.json"
fallocate -l 64M "$d/core.big.4321.1.1800000000"
handler "$d" --max-use 64M 4242 0 0 6 1700000050 next < "$fix" 2>"$tmp/err"
check "a fallocated user-owned core: the victim survives" [ -s "$victim" -a -s "$victim.json" ]
check "... the big user-owned core went instead" [ ! -e "$d/core.big.4321.1.1800000000" ]
check "... the new core is complete" quiet jq -e '.complete' "$d/core.next.0.4242.1700000050.json"
finish
