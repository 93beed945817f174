#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 3: the core handler gives up its capabilities early.  A
# stream that stops after its headers keeps the handler waiting; while it
# waits (the copy of the data, which is where the hostile bytes are
# read), /proc shows no capability in any set (bounding set included),
# no-new-privileges and not dumpable.  It used to keep them all.
#   ch-privileges.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
fix=$fixdir/process-x86_64.core
[ -f "$fix" ] || { echo "no fixture $fix"; exit 77; }
if ! is_root; then
	skip "a handler not run as root has no capabilities to give up"
	finish
fi

d=$(newstore store)
mkfifo "$tmp/in"
"$kcoredump" core-handler --dir "$d" --no-sync --no-journal --timeout 20 \
	4242 1000 1000 6 1700000000 crashme < "$tmp/in" 2>"$tmp/err" &
hpid=$!
exec 3>"$tmp/in"
head -c 65536 "$fix" >&3
# The handler has read the headers once it has a slot and waits for data.
for _ in $(seq 100); do
	[ -e "$d/.kcoredump.slot.0" ] && grep -q "^CapEff:" "/proc/$hpid/status" && break
	sleep 0.1
done
sleep 0.5
cp "/proc/$hpid/status" "$tmp/status" 2>/dev/null
field() { awk -v k="$1:" '$1 == k { print $2 }' "$tmp/status"; }
for s in CapInh CapPrm CapEff CapBnd CapAmb; do
	check "while it copies data: $s $(field $s)" [ "$(field $s)" = 0000000000000000 ]
done
check "while it copies data: NoNewPrivs $(field NoNewPrivs)" [ "$(field NoNewPrivs)" = 1 ]
check "while it copies data: uid 0 (the store is root's)" [ "$(field Uid | cut -f1)" = 0 ]
tail -c +65537 "$fix" >&3
exec 3>&-
wait "$hpid"
check "the core is stored all the same (exit $?)" cmp -s "$fix" "$d/core.crashme.1000.4242.1700000000"
finish
