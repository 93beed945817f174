#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 1: the administrator's tools open no path a core names.
# info (text and --json, plain and .zst cores) listed modules through
# libdwfl's standard callbacks, which open() each l_name of the crashed
# process's link map: a FIFO there made info hang for ever, a file such
# as /etc/shadow was opened as root.  Now libdwfl runs in a forked
# sandbox that can open nothing and reports what the core's memory
# holds; files are looked up by build ID under /usr/lib/debug only.
# --open-mapped-files opens the names, only in one's own cores (file and
# process the caller's; exit 5 otherwise).  An inotify watcher on the
# canary and a sentinel says whether the canary was ever opened: the
# sentinel is opened after the command, and its event, queued after any
# of the canary's, is waited for (no deadline load can beat).
#   info-linkmap.sh KCOREDUMP LINKMAP-CRASH FSWATCH
set -uo pipefail
kcoredump=$1 subject=$2 fswatch=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

mkfifo "$tmp/fifo"
echo "secret" >"$tmp/canary"
chmod 600 "$tmp/canary"
: >"$tmp/sentinel"

# core OUT PATH...: a core of the subject with its l_names set to PATHs.
core() {
	local out=$1 spid nl
	shift
	coproc SUBJ { exec "$subject" "$@"; }
	read -r _ spid nl <&"${SUBJ[0]}"
	if ! "$kcoredump" pid "$spid" -o "$out" -q 2>"$tmp/pid.err"; then
		echo quit >&"${SUBJ[1]}"
		wait "$SUBJ_PID" 2>/dev/null
		if grep -qi "ptrace\|permission" "$tmp/pid.err"; then
			echo "1..0 # SKIP ptrace is not allowed here: $(head -c 200 "$tmp/pid.err")"
			exit 77
		fi
		not_ok "kcoredump pid of the subject: $(cat "$tmp/pid.err")"
		finish
	fi
	echo quit >&"${SUBJ[1]}"
	wait "$SUBJ_PID" 2>/dev/null
	[ "${nl:-0}" -ge 2 ]
}
check "a core whose link map names a FIFO and a canary" \
	core "$tmp/lie.core" "$tmp/fifo" "$tmp/canary" "$tmp/fifo" "$tmp/canary"
check "its memory holds the lie" grep -qa "$tmp/fifo" "$tmp/lie.core"
check "the same core as .zst" "$kcoredump" convert "$tmp/lie.core" --format elf -o "$tmp/lie.core.zst" -q
check "a core whose link map names only the canary" \
	core "$tmp/canary.core" "$tmp/canary" "$tmp/canary" "$tmp/canary"

# watched WHAT CMD...: run CMD (bounded) with the canary watched; sets
# rc and opened (yes/no).
watched() {
	local what=$1 wpid ready
	shift
	: >"$tmp/events"
	coproc WATCH { exec "$fswatch" "$tmp/events" "$tmp/canary" "$tmp/sentinel"; }
	wpid=$WATCH_PID
	read -r ready <&"${WATCH[0]}"
	[ "$ready" = ready ] || { not_ok "$what: fswatch did not start"; return; }
	timeout -k 5 60 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/sentinel"
	until grep -q "^open $tmp/sentinel" "$tmp/events" || ! kill -0 "$wpid" 2>/dev/null; do
		sleep 0.05
	done
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	opened=no
	grep -q "^open $tmp/canary" "$tmp/events" && opened=yes
}

json_ok() { [ "$rc" -eq 0 ] && quiet jq -e "$1" "$tmp/out"; }
for c in lie.core lie.core.zst; do
	watched "info $c" "$kcoredump" info --no-holes "$tmp/$c"
	check "info $c: exit $rc (124: hung on the FIFO)" [ "$rc" -eq 0 ]
	check "info $c: the canary was never opened" [ "$opened" = no ]
	check "info $c: modules and build IDs listed from the core's memory" \
		grep -Eq '^Modules \([3-9][0-9]*, via libdwfl\)' "$tmp/out"
	watched "info --json $c" "$kcoredump" info --json --no-holes "$tmp/$c"
	check "info --json $c: exit $rc" [ "$rc" -eq 0 ]
	check "info --json $c: the canary was never opened" [ "$opened" = no ]
	check "info --json $c: build IDs, no file opened by a name from the core" \
		json_ok '(.modules | length) >= 3 and ([.modules[] | select(.build_id != null)] | length) >= 3
			and ([.modules[] | select(.file != null and (.file | startswith("/usr/lib/debug/.build-id/") | not))] | length) == 0
			and .modules_error == null'
done

# A canary first in the link map: opened as root before.
watched "info canary.core" "$kcoredump" info --json --no-holes "$tmp/canary.core"
check "info of a core naming the canary: exit $rc, the canary never opened" \
	[ "$rc" -eq 0 -a "$opened" = no ]

# The option opens the names (the watcher sees it: the check above can
# fail), and only in one's own cores.
watched "info --open-mapped-files" "$kcoredump" info --no-holes --open-mapped-files "$tmp/canary.core"
check "--open-mapped-files on one's own core: exit $rc, the names opened" \
	[ "$rc" -eq 0 -a "$opened" = yes ]
if is_root; then
	cp "$tmp/lie.core" "$tmp/theirs.core"
	chown 65534:65534 "$tmp/theirs.core"
	chmod 644 "$tmp/theirs.core"
	watched "--open-mapped-files, another's file" \
		"$kcoredump" info --open-mapped-files "$tmp/theirs.core"
	check "--open-mapped-files on a file not root's: exit $rc (5), nothing opened" \
		[ "$rc" -eq 5 -a "$opened" = no ]
	check "... and it says why" grep -q "not the caller's" "$tmp/err"
	chmod 711 "$tmp"
	watched "--open-mapped-files, another's process" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$kcoredump" info --open-mapped-files --json "$tmp/theirs.core"
	check "--open-mapped-files by nobody on its file of root's process: exit $rc (5), nothing opened" \
		[ "$rc" -eq 5 -a "$opened" = no ]
	check "... as a JSON error of kind access" quiet jq -e '.error.kind == "access"' "$tmp/out"
else
	skip "--open-mapped-files on another's core: needs root to make one"
fi
finish
