#!/bin/bash
# kcoredump pid of a process in a PID namespace of its own (unshare -pf
# --mount-proc; issue 25 defect 3): the core carries the ids the kernel
# writes, those of the process's namespace (NSpid in /proc/PID/status),
# so gdb sees as many threads as the process has, each with registers;
# our metadata note keeps the host's pid.
#   pid-namespace.sh KCOREDUMP CRASH-SHAPES
set -uo pipefail
kcoredump=$1 target=$(readlink -f "$2")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
upid='' init='' host=''
# shellcheck disable=SC2317 # called through check
quiet() { "$@" >/dev/null 2>&1; }
# shellcheck disable=SC2317 # called through the trap
cleanup()
{
	# The namespace's init ignores what it has no handler for; with it
	# go all the namespace's processes.
	if [ -n "$init" ]; then
		kill -KILL "$init" 2>/dev/null
	fi
	if [ -n "$upid" ]; then
		wait "$upid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

for tool in gdb jq unshare; do
	if ! command -v $tool >/dev/null; then
		echo "1..0 # SKIP $tool not installed"
		exit 77
	fi
done
if ! unshare -pf --mount-proc true 2>"$tmp/err"; then
	echo "1..0 # SKIP no PID namespace here: $(head -1 "$tmp/err")"
	exit 77
fi

# A shell is the namespace's pid 1, the target its child (pid 2): 8
# threads parked, and the main thread.
unshare -pf --mount-proc sh -c "'$target' threads 8; :" >"$tmp/out" 2>&1 &
upid=$!
for _ in $(seq 100); do
	grep -q '^ready' "$tmp/out" && break
	sleep 0.1
done
nspid=$(sed -n 's/^ready //p' "$tmp/out")
init=$(pgrep -P "$upid" || true)
[ -z "$init" ] || host=$(pgrep -P "$init" || true)
if [ -z "$host" ] || [ -z "$nspid" ] ||
	[ "$(awk '/^NSpid:/ { print $NF }' "/proc/$host/status" 2>/dev/null)" != "$nspid" ]; then
	not_ok "the target started in its namespace ($(cat "$tmp/out"))"
	finish
fi
echo "# host pid $host, pid $nspid in its namespace"
sleep 0.3

"$kcoredump" pid "$host" -q -o "$tmp/core" 2>"$tmp/err"
rc=$?
if [ $rc -eq 5 ]; then
	echo "1..0 # SKIP ptrace is not allowed here: $(head -1 "$tmp/err")"
	exit 77
fi
check "kcoredump pid exits 0 ($rc)" [ $rc -eq 0 ]
"$kcoredump" info --json "$tmp/core" >"$tmp/info.json"
# shellcheck disable=SC2016 # jq's variables
check "PRPSINFO: the namespace's pid $nspid and parent 1" quiet jq -e \
	--argjson p "$nspid" '[.notes[] | select(.prpsinfo) | .prpsinfo][0] |
	.pid == $p and .ppid == 1' "$tmp/info.json"
# shellcheck disable=SC2016 # jq's variables
check "PRSTATUS: 9 threads, the first the namespace's pid, all namespace TIDs" \
	quiet jq -e --argjson p "$nspid" '[.notes[] | select(.prstatus) | .prstatus.pid] |
	length == 9 and .[0] == $p and all(.[]; . > 0 and . < 1000)' "$tmp/info.json"
check "our note keeps the host pid $host" grep -aq "^source=process $host\$" "$tmp/core"

gdb -batch -ex 'info threads' -ex 'thread apply all bt 1' "$target" -c "$tmp/core" \
	>"$tmp/gdb" 2>&1
n=$(grep -cE '^\*? +[0-9]+ +(Thread|LWP) ' "$tmp/gdb" || true)
check "gdb: 9 threads ($n)" [ "$n" = 9 ]
check "gdb: every thread has its registers" \
	bash -c "! grep -q \"Couldn't find general-purpose registers\" '$tmp/gdb'"
check "gdb: the main thread is LWP $nspid" grep -qE "^\* +1 +Thread .*\(LWP $nspid\)" "$tmp/gdb"
finish
