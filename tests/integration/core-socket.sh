#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump core-handler on the kernel's coredump socket.  It serves only
# a task the kernel is dumping (its pidfd's PIDFD_GET_INFO says
# PIDFD_COREDUMPED, issue 42 item 5), so a test playing the kernel
# (core-socket-peer.py, a live process) is refused, whatever it sends:
# on a socketpair, a listening socket (--socket PATH) and a socket passed
# as systemd does (LISTEN_FDS), with one line of error, no answer and
# nothing stored.  Real crashes (root: core_pattern "@@PATH" and "@PATH",
# under the shared core_pattern lock, the old pattern put back) are
# stored: the request protocol's answer is the kernel's format (size 16,
# spare 0, mask COREDUMP_KERNEL | COREDUMP_WAIT), the metadata says how
# the core came (socket-request or socket, the peer's pidfd and cgroup),
# limits cut it as for the pipe.
#   core-socket.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
chmod 711 "$tmp"
listener=
old_pattern=
cleanup() {
	[ -n "$listener" ] && kill "$listener" 2>/dev/null
	[ -n "$old_pattern" ] && printf '%s\n' "$old_pattern" >/proc/sys/kernel/core_pattern
	rm -rf "$tmp"
}
trap cleanup EXIT
PY=/usr/bin/python3
peer=$(dirname "$0")/core-socket-peer.py
fix=$fixdir/process-x86_64.core
[ -f "$fix" ] || {
	echo "1..0 # SKIP no fixture $fix"
	exit 77
}

# play MODE DIR ARGS...: the handler on a socketpair; $tmp/res.json and
# $tmp/err say what happened.
play() {
	local mode=$1 dir=$2
	shift 2
	mkdir -p "$dir" && chmod 700 "$dir"
	# No earlier play's result can stand in for this one's.
	rm -f "$tmp/res.json"
	"$PY" "$peer" "$mode" "$core" "$tmp/res.json" -- \
		"$kcoredump" core-handler -D "$dir" --no-sync --no-journal "$@" 2>"$tmp/err"
}
stored() { # DIR: the one stored core's path
	local f
	for f in "$1"/core.*; do
		case $f in *.json) continue ;; esac
		[ -f "$f" ] && echo "$f"
	done
}
res() { jq -r "$1" "$tmp/res.json" 2>/dev/null || echo "?"; }
quiet() { "$@" >/dev/null 2>&1; }

core=$fix
refusal="is not a task the kernel is dumping"

# --- a live process playing the kernel: refused ----------------------------
for mode in request plain reject short garbage refuse silent; do
	d=$tmp/fake-$mode
	play "$mode" "$d" -v --timeout 2
	check "$mode from a live process: exit non-zero ($(res .rc))" \
		[ "$(res .rc)" != 0 ] && [ "$(res .rc)" != "?" ]
	check "$mode: the error says why ($(head -c 300 "$tmp/err"))" grep -qF "$refusal" "$tmp/err"
	check "$mode: no answer sent" [ "$(res '.ack // ""')" = "" ]
	check "$mode: nothing stored" [ -z "$(stored "$d")" ]
done
check "the error names the pidfd's coredump mask" grep -q "coredump mask 0x[0-9a-f]* without PIDFD_COREDUMPED" "$tmp/err"

# --- --socket PATH: a listener, a child per connection -----------------------
d=$tmp/listen
mkdir -m 700 "$d"
"$kcoredump" core-handler -D "$d" --no-sync --no-journal --socket "$tmp/s.sock" 2>"$tmp/lerr" &
listener=$!
for _ in $(seq 100); do [ -S "$tmp/s.sock" ] && break; sleep 0.1; done
check "--socket: listening, mode 0600" [ "$(stat -c %a "$tmp/s.sock" 2>/dev/null)" = 600 ]
rm -f "$tmp/res.json"
"$PY" "$peer" connect request "$fix" "$tmp/res.json" "$tmp/s.sock"
"$PY" "$peer" connect plain "$fix" "$tmp/res2.json" "$tmp/s.sock"
for _ in $(seq 100); do [ "$(grep -c "$refusal" "$tmp/lerr")" -ge 2 ] && break; sleep 0.1; done
check "--socket: two connections of a live process refused, logged" \
	[ "$(grep -c "$refusal" "$tmp/lerr")" = 2 ]
check "--socket: nothing stored" [ -z "$(stored "$d")" ]
check "--socket: still listening" kill -0 "$listener"
kill "$listener"
wait "$listener"
check "--socket: ends on SIGTERM, removing its socket" [ ! -e "$tmp/s.sock" ]
listener=

# --- a listening socket passed as systemd does ---------------------------------
d=$tmp/activated
mkdir -m 700 "$d"
rm -f "$tmp/res.json"
CORE=$fix OUT=$tmp/res.json "$PY" "$peer" listen-fd "$tmp/a.sock" -- \
	"$kcoredump" core-handler -D "$d" --no-sync --no-journal 2>"$tmp/err"
check "LISTEN_FDS: a live process refused ($(head -c 300 "$tmp/err"))" grep -qF "$refusal" "$tmp/err"
check "LISTEN_FDS: nothing stored" [ -z "$(stored "$d")" ]

# --- usage ---------------------------------------------------------------------
"$kcoredump" core-handler --socket relative >/dev/null 2>&1  # lint-journal: a usage error
check "--socket relative: usage error" [ $? -eq 2 ]
"$kcoredump" core-handler --socket /tmp/x.sock 1 2 3 4 5 </dev/null >/dev/null 2>&1  # lint-journal: a usage error
check "--socket with the kernel's arguments: usage error" [ $? -eq 2 ]

# --- real crashes: the kernel connects --------------------------------------
# (core_pattern is this machine's: the lock every such test shares, the
# old pattern put back on exit.)
if [ "$(id -u)" != 0 ]; then
	skip "real crashes through the socket: needs root to set core_pattern"
	finish
fi
exec 9>/tmp/kcd-core-pattern.lock
flock 9
old_pattern=$(cat /proc/sys/kernel/core_pattern)
if ! printf '%s\n' "$old_pattern" >/proc/sys/kernel/core_pattern; then
	old_pattern=
	skip "real crashes through the socket: core_pattern is not writable"
	finish
fi
ulimit -c unlimited
# crash PATTERN DIR: a sleep killed by SIGABRT with core_pattern PATTERN;
# its pid in $cpid; waits (20 s at most) for a core in DIR.
crash() {
	printf '%s\n' "$1" >/proc/sys/kernel/core_pattern
	sleep 60 &
	cpid=$!
	sleep 0.2
	kill -ABRT "$cpid"
	wait "$cpid" 2>/dev/null
	for _ in $(seq 200); do
		c=$(stored "$2")
		[ -n "$c" ] && [ -s "$c.json" ] && break
		sleep 0.1
	done
	c=$(stored "$2")
}
# listen DIR ARGS...: a listener on $tmp/k.sock storing into DIR.
listen() {
	local dir=$1
	shift
	mkdir -m 700 "$dir"
	rm -f "$tmp/k.sock"
	"$kcoredump" core-handler -D "$dir" --no-sync --no-journal --socket "$tmp/k.sock" "$@" 2>"$tmp/lerr" &
	listener=$!
	for _ in $(seq 100); do [ -S "$tmp/k.sock" ] && break; sleep 0.1; done
}
unlisten() {
	kill "$listener"
	wait "$listener"
	listener=
}

d=$tmp/req
listen "$d" -v
crash "@@$tmp/k.sock" "$d"
check "request: a real crash stored ($c; $(head -c 300 "$tmp/lerr"))" [ -n "$c" ] && [ -f "$c.json" ]
m=${c:-x}.json
check "request: metadata received.via socket-request" \
	[ "$(jq -r .received.via "$m" 2>/dev/null)" = socket-request ]
check "request: the kernel's request and our answer (size 16, mask KERNEL|WAIT)" \
	[ "$(jq -r '.received.request | "\(.size) \(.size_ack) \(.ack_mask)"' "$m" 2>/dev/null)" = "16 16 0x9" ]
check "request: the crashed pid, signal 6, PIDFD_COREDUMPED in the mask" bash -c "
	jq -e '.pid == $cpid and .signal == 6 and .received.pidfd and (.received.coredump_mask % 2 == 1)' '$m' >/dev/null"
check "request: a cgroup id from PIDFD_GET_INFO" \
	[ "$(jq -r '.received.cgroup_id | type' "$m" 2>/dev/null)" = number ]
check "request: complete" [ "$(jq -r .truncation_reason "$m" 2>/dev/null)" = complete ]
check "request: kcoredump info reads the stored core, the process's pid" bash -c "
	'$kcoredump' info '${c:-x}' | grep -q 'pid $cpid'"
check "request: -v logged the connection" grep -q "connection via socket-request" "$tmp/lerr"
unlisten

d=$tmp/plain
listen "$d"
crash "@$tmp/k.sock" "$d"
check "plain: a real crash stored ($(head -c 300 "$tmp/lerr"))" [ -n "$c" ]
check "plain: metadata received.via socket, no request" \
	[ "$(jq -r '"\(.received.via) \(.received.request)"' "${c:-x}.json" 2>/dev/null)" = "socket null" ]
check "plain: complete, signal 6" \
	[ "$(jq -r '"\(.truncation_reason) \(.signal)"' "${c:-x}.json" 2>/dev/null)" = "complete 6" ]
unlisten

d=$tmp/small
listen "$d" --max-size 40K
crash "@@$tmp/k.sock" "$d"
check "max-size: stored, truncated for max-size" \
	[ "$(jq -r .truncation_reason "${c:-x}.json" 2>/dev/null)" = max-size ]
unlisten

d=$tmp/activated-real
mkdir -m 700 "$d"
rm -f "$tmp/done" "$tmp/b.sock"
DONE=$tmp/done CORE=$fix OUT=$tmp/res.json "$PY" "$peer" listen-fd "$tmp/b.sock" -- \
	"$kcoredump" core-handler -D "$d" --no-sync --no-journal 2>"$tmp/err" &
act=$!
for _ in $(seq 100); do [ -S "$tmp/b.sock" ] && break; sleep 0.1; done
crash "@@$tmp/b.sock" "$d"
touch "$tmp/done"
wait "$act"
check "LISTEN_FDS: a real crash stored ($(head -c 300 "$tmp/err"))" \
	[ "$(jq -r .received.via "${c:-x}.json" 2>/dev/null)" = socket-request ]
printf '%s\n' "$old_pattern" >/proc/sys/kernel/core_pattern
finish
