#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump core-handler on the kernel's coredump socket, the test
# playing the kernel (core-socket-peer.py) on a socketpair, a listening
# socket (--socket PATH) and a socket passed as systemd does (LISTEN_FDS):
# the request protocol's answer is the kernel's format (size 16, spare 0,
# mask COREDUMP_KERNEL | COREDUMP_WAIT), the stored core is identical to
# what was sent, the metadata says how it came (socket-request or socket,
# the peer's pidfd and cgroup), limits cut it as for the pipe, and a
# refused, short, malformed or silent connection ends with one line of
# error and nothing stored.  core_pattern is never touched.
#   core-socket.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
listener=
cleanup() {
	[ -n "$listener" ] && kill "$listener" 2>/dev/null
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
		"$kcoredump" core-handler -D "$dir" --no-sync "$@" 2>"$tmp/err"
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
# A real process core too, when kcoredump pid can take one here.
sleep 300 &
sl=$!
sleep 0.5
if "$kcoredump" pid "$sl" -o "$tmp/real.core" >/dev/null 2>&1; then
	ok "a real core of a sleeping process from kcoredump pid"
	cores="$fix $tmp/real.core"
else
	echo "# kcoredump pid could not take a core here: the fixture only"
	cores=$fix
fi
kill "$sl" 2>/dev/null
wait "$sl" 2>/dev/null

# --- the request protocol ("@@") -------------------------------------------
n=0
for core in $cores; do
	n=$((n + 1))
	d=$tmp/req$n
	play request "$d" -v
	check "request $n: handler exit 0 ($(res .rc); $(head -c 300 "$tmp/err"))" [ "$(res .rc)" = 0 ]
	check "request $n: ack is size 16, spare 0, mask KERNEL|WAIT (bytes $(res .ack))" \
		[ "$(res .ack)" = 10000000000000000900000000000000 ]
	check "request $n: the handler closed its end after the core (COREDUMP_WAIT)" \
		[ "$(res .closed)" = true ]
	c=$(stored "$d")
	check "request $n: one core stored ($c)" [ -n "$c" ] && [ -f "$c.json" ]
	[ -n "$c" ] || continue
	check "request $n: stored core is cmp-identical to what was sent" cmp -s "$core" "$c"
	m=$c.json
	check "request $n: metadata received.via socket-request" \
		[ "$(jq -r .received.via "$m")" = socket-request ]
	check "request $n: metadata has the request and our answer" \
		[ "$(jq -r '.received.request | "\(.size) \(.size_ack) \(.mask) \(.ack_mask)"' "$m")" = "16 16 0xf 0x9" ]
	check "request $n: the peer's pid is the test's ($(jq .pid "$m"))" \
		[ "$(jq .pid "$m")" = "$(jq .received.peer_pid "$m")" ]
	if [ "$(jq -r .received.pidfd "$m")" = true ]; then
		check "request $n: a cgroup id from PIDFD_GET_INFO" \
			[ "$(jq -r '.received.cgroup_id | type' "$m")" = number ]
	else
		echo "# no pidfd: $(jq -r .received.pidfd_why_not "$m")"
	fi
	check "request $n: complete" [ "$(jq -r .truncation_reason "$m")" = complete ]
	check "request $n: kcoredump info reads the stored core" \
		quiet "$kcoredump" info "$c"
	check "request $n: -v logged the connection" grep -q "connection via socket-request" "$tmp/err"
done
core=$fix

# --- "@": the core at once ---------------------------------------------------
d=$tmp/plain
play plain "$d"
check "plain: handler exit 0 ($(head -c 300 "$tmp/err"))" [ "$(res .rc)" = 0 ]
c=$(stored "$d")
check "plain: stored core is cmp-identical" cmp -s "$fix" "${c:-/nonexistent}"
check "plain: metadata received.via socket" \
	[ "$(jq -r .received.via "${c:-x}.json" 2>/dev/null)" = socket ]
check "plain: no request in the metadata" \
	[ "$(jq -r .received.request "${c:-x}.json" 2>/dev/null)" = null ]

# --- limits apply as for the pipe -------------------------------------------
d=$tmp/small
play request "$d" --max-size 40K
c=$(stored "$d")
check "max-size: stored, exit 0" [ "$(res .rc)" = 0 -a -n "$c" ]
check "max-size: truncated for max-size" \
	[ "$(jq -r .truncation_reason "${c:-x}.json" 2>/dev/null)" = max-size ]
check "max-size: the handler closed the connection (the kernel stops there)" [ "$(res .closed)" = true ]

# --- refused, short, malformed, silent ---------------------------------------
for case in "reject:does not offer" "short:request ends after 8" \
	"garbage:neither a core nor" "refuse:refused our answer (mark 3" \
	"silent:within the time limit"; do
	mode=${case%%:*} want=${case#*:}
	d=$tmp/$mode
	play "$mode" "$d" --timeout 2
	lines=$(grep -c . "$tmp/err")
	check "$mode: exit non-zero ($(res .rc))" [ "$(res .rc)" != 0 ] && [ "$(res .rc)" != "?" ]
	check "$mode: one line of error ($(head -c 300 "$tmp/err"))" [ "$lines" = 1 ]
	check "$mode: the error says '$want'" grep -qF "$want" "$tmp/err"
	check "$mode: nothing stored" [ -z "$(stored "$d")" ]
done

# --- --socket PATH: a listener, a child per connection -----------------------
d=$tmp/listen
mkdir -m 700 "$d"
"$kcoredump" core-handler -D "$d" --no-sync -q --socket "$tmp/s.sock" 2>"$tmp/lerr" &
listener=$!
for _ in $(seq 100); do [ -S "$tmp/s.sock" ] && break; sleep 0.1; done
check "--socket: listening, mode 0600" [ "$(stat -c %a "$tmp/s.sock" 2>/dev/null)" = 600 ]
rm -f "$tmp/res.json"
"$PY" "$peer" connect request "$fix" "$tmp/res.json" "$tmp/s.sock"
check "--socket: ack KERNEL|WAIT" [ "$(res .ack_mask)" = 9 ]
"$PY" "$peer" connect plain "$fix" "$tmp/res2.json" "$tmp/s.sock"
for _ in $(seq 200); do [ "$(stored "$d" | wc -l)" -ge 2 ] && break; sleep 0.1; done
k=0
for c in $(stored "$d"); do cmp -s "$fix" "$c" && k=$((k + 1)); done
check "--socket: two connections, two identical cores ($k)" [ "$k" = 2 ]
check "--socket: -q logged nothing ($(head -c 300 "$tmp/lerr"))" [ ! -s "$tmp/lerr" ]
kill "$listener"
wait "$listener"
check "--socket: ends on SIGTERM, removing its socket" [ ! -e "$tmp/s.sock" ]
listener=

# --- a listening socket passed as systemd does ---------------------------------
d=$tmp/activated
mkdir -m 700 "$d"
rm -f "$tmp/res.json"
CORE=$fix OUT=$tmp/res.json "$PY" "$peer" listen-fd "$tmp/a.sock" -- \
	"$kcoredump" core-handler -D "$d" --no-sync 2>"$tmp/err"
c=$(stored "$d")
check "LISTEN_FDS: ack KERNEL|WAIT ($(head -c 300 "$tmp/err"))" [ "$(res .ack_mask)" = 9 ]
check "LISTEN_FDS: stored core is cmp-identical" cmp -s "$fix" "${c:-/nonexistent}"

# --- usage ---------------------------------------------------------------------
"$kcoredump" core-handler --socket relative >/dev/null 2>&1
check "--socket relative: usage error" [ $? -eq 2 ]
"$kcoredump" core-handler --socket /tmp/x.sock 1 2 3 4 5 </dev/null >/dev/null 2>&1
check "--socket with the kernel's arguments: usage error" [ $? -eq 2 ]
finish
