#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 12: a file system that fills up (ENOSPC) with the limits
# off still keeps the headers and notes, which are always stored: the
# core is cut at a page boundary before where the writes failed (room for
# its metadata) and published as a limit would, truncation_reason
# "no-space".  It stored nothing before.  The store is a 3 MiB tmpfs in a
# private mount namespace (gone with it); the core has 8 MiB of data.
#   ch-nospace.sh KCOREDUMP MKCORE SPECDIR
set -uo pipefail
kcoredump=$1 mkcore=$2 specdir=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

is_root || { echo "1..0 # SKIP needs root (a tmpfs in a mount namespace)"; exit 77; }
unshare -m true 2>/dev/null || { echo "1..0 # SKIP unshare -m is not allowed here"; exit 77; }
{
	cat "$specdir/process-x86_64.spec"
	printf 'load vaddr=0x7e0000000000 flags=rw\n\tdata 8M random=9\nend\n'
} > "$tmp/big.spec"
"$mkcore" "$tmp/big.spec" "$tmp/big.core" >/dev/null || { not_ok "mkcore"; finish; }
mkdir -m 700 "$tmp/fs" "$tmp/out"
# In the namespace: mount, store, list what is there, leave.
# shellcheck disable=SC2016 # expanded by the inner bash
unshare -m --propagation private bash -c '
	mount -t tmpfs -o size=3M,mode=0700 kcd-nospace "$1" || exit 90
	mkdir -m 700 "$1/store"
	"$2" core-handler --dir "$1/store" --no-sync --no-journal --keep-free 0 --max-use 0 \
		4242 1000 1000 6 1700000000 crashme < "$3" 2> "$4/err"
	echo "rc=$?" > "$4/rc"
	cp -a "$1/store/." "$4/out/" 2>/dev/null
	umount "$1"' _ "$tmp/fs" "$kcoredump" "$tmp/big.core" "$tmp" 2>"$tmp/ns.err"
check "the namespace ran (tmpfs mounted)" [ -e "$tmp/rc" ]
check "the handler exits 0 ($(cat "$tmp/rc" 2>/dev/null))" grep -qx "rc=0" "$tmp/rc"
sed 's/^/# /' "$tmp/err" | head -n 5
core=$(find "$tmp/out" -name 'core.crashme.*' ! -name '*.json' | head -n 1)
check "a core is published" [ -n "$core" ]
check "with its metadata" [ -s "$core.json" ]
check "cut for no-space" quiet jq -e '.complete == false and .truncation_reason == "no-space"' "$core.json"
check "it is shorter than the stream ($(stat -c %s "$core" 2>/dev/null) < $(stat -c %s "$tmp/big.core"))" \
	[ "$(stat -c %s "$core" 2>/dev/null || echo 0)" -lt "$(stat -c %s "$tmp/big.core")" ]
check "info reads it (headers and notes are there)" quiet "$kcoredump" info "$core"
"$kcoredump" verify "$core" >/dev/null 2>&1
check "verify says INCOMPLETE (7), its digest holds ($?)" [ $? -eq 7 ]
check "the tmpfs is gone with the namespace" bash -c "! mountpoint -q '$tmp/fs'"
finish
