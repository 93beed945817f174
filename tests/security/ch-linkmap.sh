#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 1: nothing in the core handler opens a path taken from the
# core.  A live process rewrites the l_name of its shared objects to a
# FIFO nobody writes and to a canary file (`kcoredump pid` takes its
# core, with the lies in memory); the handler stores that core.  libdwfl
# used to open() each l_name as root: the FIFO stalled it until its alarm
# (timeout + 60 s) and left no metadata, the canary was opened.  Now it
# finishes at once, never opens either (inotify says), writes the
# metadata before the core appears, and the build-ID helper ran as nobody
# without capabilities, under seccomp, in an empty root.
#   ch-linkmap.sh KCOREDUMP LINKMAP-CRASH FSWATCH
set -uo pipefail
kcoredump=$1 subject=$2 fswatch=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

mkfifo "$tmp/fifo"
echo "secret" > "$tmp/canary"
coproc SUBJ { exec "$subject" "$tmp/fifo" "$tmp/canary" "$tmp/fifo" "$tmp/canary"; }
subj=$SUBJ_PID
read -r _ spid nl <&"${SUBJ[0]}"
check "the subject rewrote $nl link-map names" [ "${nl:-0}" -ge 2 ]
if ! "$kcoredump" pid "$spid" -o "$tmp/subject.core" -q 2>"$tmp/pid.err"; then
	echo "quit" >&"${SUBJ[1]}"
	if grep -qi "ptrace\|permission" "$tmp/pid.err"; then
		skip "ptrace is not allowed here: $(head -c 200 "$tmp/pid.err")"
		finish
	fi
	not_ok "kcoredump pid of the subject: $(cat "$tmp/pid.err")"
	finish
fi
echo "quit" >&"${SUBJ[1]}"
wait "$subj" 2>/dev/null
check "the core's memory holds the lie" grep -qa "$tmp/fifo" "$tmp/subject.core"

d=$(newstore store)
coproc WATCH { exec "$fswatch" "$tmp/events" "$tmp/canary" "$d"; }
wpid=$WATCH_PID
read -r ready <&"${WATCH[0]}"
[ "$ready" = ready ] || { not_ok "fswatch did not start"; finish; }
t0=$(date +%s%N)
timeout -k 5 40 "$kcoredump" core-handler --dir "$d" --no-sync --no-journal --timeout 5 \
	4242 0 0 6 1700000000 subject < "$tmp/subject.core" 2>"$tmp/err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
sleep 0.2
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
m=$d/core.subject.0.4242.1700000000.json
check "the handler finished in $ms ms (exit $rc), well before its timeout" \
	[ "$rc" -eq 0 -a "$ms" -lt 15000 ]
check "metadata written" [ -s "$m" ]
check "the canary was never opened" bash -c "! grep -q '^open $tmp/canary' '$tmp/events'"
check "the metadata appeared before the core" bash -c "
	grep -n '^create ' '$tmp/events' | grep -v '/\.' > '$tmp/created'
	[ \"\$(sed -n 1p '$tmp/created' | grep -c '\.json$')\" = 1 ] &&
	[ \"\$(grep -c '' '$tmp/created')\" = 2 ]"
check "build IDs were read (from the memory of the core)" \
	quiet jq -e '(.build_ids | length) > 0 and (.build_ids_error == null)' "$m"
if is_root; then
	check "the build-ID helper ran as nobody, no capabilities, no new privileges, seccomp, empty root" \
		quiet jq -e '.build_ids_sandbox == {"uid": 65534, "gid": 65534, "no_new_privs": true,
			"seccomp": true, "chroot": true, "cap_eff": "0x0"}' "$m"
else
	check "the build-ID helper ran with no new privileges under seccomp" \
		quiet jq -e '.build_ids_sandbox.no_new_privs and .build_ids_sandbox.seccomp' "$m"
fi

# Its own time limit: a helper that may not finish is killed, the core
# is stored with the reason in its metadata.  A helper fast enough to
# answer within the limit is a success too (no error then: jq's test()
# of a null error was itself an error).
d2=$(newstore store2)
handler "$d2" --build-id-timeout 0.001 4242 0 0 6 1700000001 subject \
	< "$tmp/subject.core" 2>/dev/null
check "--build-id-timeout: the helper's time limit is its own, the core stored" \
	quiet jq -e '((.build_ids_error // "") | test("did not finish|no reply")) or (.build_ids | length) > 0' \
	"$d2/core.subject.0.4242.1700000001.json"
finish
