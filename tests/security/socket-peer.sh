#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 42 item 5: the coredump socket server stored a "crash" from any
# peer that could connect: peer_facts() never required PIDFD_COREDUMPED,
# so a live root process that sent a request and an ELF stream had it
# stored as a crash (signal 0).  And listen_on() bound the socket, then
# chmod()ed it: in between it had the umask's mode.  Now a connection is
# served only when the peer's pidfd says the kernel is dumping it (else
# one line of error, nothing read, nothing stored), and the socket is
# bound under umask 0077.  (Real crashes through the socket are stored:
# tests/integration/core-socket.sh.)
#   socket-peer.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
peer=$(dirname "$0")/../integration/core-socket-peer.py
fix=$fixdir/process-x86_64.core
[ -f "$fix" ] || {
	echo "1..0 # SKIP no fixture $fix"
	exit 77
}
stored() { find "$1" -maxdepth 2 -name 'core.*' ! -name '*.json' | head -1; }
refusal="is not a task the kernel is dumping"

d=$(newstore listen)
"$kcoredump" core-handler -D "$d" --no-sync --no-journal --socket "$tmp/s.sock" 2>"$tmp/lerr" &
listener=$!
trap 'kill "$listener" 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -S "$tmp/s.sock" ] && break; sleep 0.1; done
for mode in request plain; do
	"$PY" "$peer" connect "$mode" "$fix" "$tmp/res-$mode.json" "$tmp/s.sock"
done
for _ in $(seq 100); do [ "$(grep -c "$refusal" "$tmp/lerr")" -ge 2 ] && break; sleep 0.1; done
check "a live process sending a request and a core: nothing stored ($(stored "$d"))" \
	[ -z "$(stored "$d")" ]
check "... both connections refused, said so" [ "$(grep -c "$refusal" "$tmp/lerr")" = 2 ]
check "... no answer to the request" \
	[ "$(jq -r '.ack // ""' "$tmp/res-request.json" 2>/dev/null)" = "" ]
kill "$listener"
wait "$listener" 2>/dev/null

# A connection handed over on stdin (as systemd's Accept=yes does).
d=$(newstore stdin)
"$PY" "$peer" request "$fix" "$tmp/res.json" -- \
	"$kcoredump" core-handler -D "$d" --no-sync --no-journal 2>"$tmp/err"
check "a connection on stdin from a live process: exit $(jq -r .rc "$tmp/res.json" 2>/dev/null) (want 1), nothing stored" \
	[ "$(jq -r .rc "$tmp/res.json" 2>/dev/null)" = 1 -a -z "$(stored "$d")" ]
check "... one line of error naming PIDFD_COREDUMPED" \
	bash -c "[ \$(grep -c . '$tmp/err') = 1 ] && grep -q 'without PIDFD_COREDUMPED' '$tmp/err'"

# Born 0600: the umask in effect when the socket is bound is 077 (the
# chmod after it is then no window), whatever the caller's umask.  (The
# handler already set umask 077 first thing; listen_on() now does so
# itself around bind().)
if command -v strace >/dev/null; then
	d=$(newstore umask)
	(
		umask 000
		exec strace -f -qq -e trace=umask,bind -o "$tmp/trace" \
			"$kcoredump" core-handler -D "$d" --no-sync --no-journal --socket "$tmp/u.sock"
	) 2>/dev/null &
	spid=$!
	for _ in $(seq 100); do [ -S "$tmp/u.sock" ] && break; sleep 0.1; done
	# The handler, not strace, is stopped (strace follows it out).
	kill "$(pgrep -P "$spid")" 2>/dev/null
	wait "$spid" 2>/dev/null
	last=$(sed -n '/bind(.*u\.sock/q; s/^[0-9]* *\(umask([0-7]*)\).*/\1/p' "$tmp/trace" | tail -n 1)
	check "listen: the socket bound under umask 077 (the last umask before bind: $last)" \
		[ "$last" = "umask(077)" ] && grep -q 'bind(.*u\.sock' "$tmp/trace"
else
	skip "the umask at bind: no strace"
fi
finish
