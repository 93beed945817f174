#!/bin/bash
# kcoredump pid never mixes another process's memory into a core when
# the target dies mid-dump and its PID is given to a new process (issue 19
# item 2).  In a PID namespace of its own (unshare, as root), with ASLR off
# so that two pidtargets have the same layout:
#   1. pidtarget --seed 1 (the target) is dumped to a pipe nobody reads
#      yet, so kcoredump stops early in the memory copy;
#   2. the target is killed and reaped, ns_last_pid makes the next process
#      take its PID, and pidtarget --seed 9 (the impostor) starts there,
#      its 64 MiB area at the same addresses;
#   3. the pipe is drained.
# The core must hold no page of the impostor's pattern; what was not read
# is recorded as unreadable.  Reading by PID (process_vm_readv) copied the
# impostor's memory here.
#   pid-reuse.sh KCOREDUMP PIDTARGET
set -uo pipefail
kcoredump=$(readlink -f "$1") target=$(readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

if [ "${3:-}" != --inner ]; then
	for tool in unshare setarch jq; do
		if ! command -v $tool >/dev/null; then
			echo "1..0 # SKIP $tool not installed"
			exit 77
		fi
	done
	if [ "$(id -u)" != 0 ] ||
		! unshare --pid --fork --mount-proc true 2>/dev/null; then
		echo "1..0 # SKIP needs root for a PID namespace (unshare)"
		exit 77
	fi
	exec unshare --pid --fork --mount-proc "$0" "$1" "$2" --inner
fi

# --- inside the namespace: this shell is PID 1 ---
tmp=$(mktemp -d)
kids=()
# shellcheck disable=SC2317 # called through the trap
cleanup()
{
	for p in "${kids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# start NAME SEED: a pidtarget with a 64 MiB area of pattern SEED; sets
# $pid and $tmp/NAME.out.  $tmp/NAME.in is made beforehand: between a
# write to ns_last_pid and this start, no other process may be created.
start()
{
	setarch "$(uname -m)" -R "$target" --dense 64 --sparse 0 --threads 1 \
		--seed "$2" <"$tmp/$1.in" >"$tmp/$1.out" 2>&1 &
	pid=$!
	kids+=("$pid")
	exec {fd}>"$tmp/$1.in"
	for _ in $(seq 100); do
		grep -q '^ready' "$tmp/$1.out" 2>/dev/null && break
		sleep 0.1
	done
}
field()
{
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2"
}

mkfifo "$tmp/target.in" "$tmp/impostor.in"
start target 1
tpid=$pid
dense=$(field dense "$tmp/target.out")
if [ -z "$dense" ]; then
	not_ok "target started"
	finish
fi

# The dump into a pipe that is read only after the swap.
mkfifo "$tmp/go"
(
	"$kcoredump" pid "$tpid" -o - -T 1 --block-size 1M --json \
		2>"$tmp/sum.json"
	echo $? >"$tmp/rc"
) | {
	read -r _ <"$tmp/go"
	cat >"$tmp/core"
} &
reader=$!
# Wait until kcoredump has let the target go and is blocked on the pipe.
for _ in $(seq 100); do
	sleep 0.1
	[ "$(awk '/^TracerPid:/ {print $2}' "/proc/$tpid/status")" = 0 ] &&
		grep -q . "/proc/$tpid/status" && break
done
sleep 1

kill -9 "$tpid"
wait "$tpid" 2>/dev/null
echo $((tpid - 1)) >/proc/sys/kernel/ns_last_pid
start impostor 9
ipid=$pid
check "the impostor got the target's PID ($ipid = $tpid)" [ "$ipid" = "$tpid" ]
check "the impostor's area is at the target's address" \
	[ "$(field dense "$tmp/impostor.out")" = "$dense" ]

echo go >"$tmp/go"
wait "$reader"
rc=$(cat "$tmp/rc" 2>/dev/null)
# The JSON summary (on stderr, as the core went to stdout).
/usr/bin/python3 -c '
import json, sys
t = open(sys.argv[1]).read()
json.dump(json.loads(t[t.index("{"):]), open(sys.argv[2], "w"))
' "$tmp/sum.json" "$tmp/sum1.json" 2>/dev/null || diag "$tmp/sum.json"

# Pages of the 64 MiB area in the core: the target's pattern, the
# impostor's, or something else (zeros: not read).
/usr/bin/python3 - "$tmp/core" "$dense" >"$tmp/count" 2>&1 <<'PY'
import struct, sys
M = (1 << 64) - 1
def word(addr, seed):
    x = (addr & ~7) ^ ((seed * 0x9e3779b97f4a7c15) & M)
    x ^= x >> 31
    x = (x * 0xbf58476d1ce4e5b9) & M
    x ^= x >> 27
    return x | 1
data = open(sys.argv[1], "rb").read()
dense = int(sys.argv[2], 16)
if data[:4] != b"\x7fELF":
    sys.exit("not an ELF core (%d bytes)" % len(data))
phoff, = struct.unpack_from("<Q", data, 32)
phnum, = struct.unpack_from("<H", data, 56)
counts = {"target": 0, "impostor": 0, "other": 0}
for i in range(phnum):
    t, _, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", data,
                                                     phoff + 56 * i)
    if t != 1 or not (vaddr <= dense < vaddr + filesz):
        continue
    for a in range(dense, dense + (64 << 20), 4096):
        o = off + (a - vaddr)
        w, = struct.unpack_from("<Q", data, o + 8)
        if w == word(a + 8, 1):
            counts["target"] += 1
        elif w == word(a + 8, 9):
            counts["impostor"] += 1
        else:
            counts["other"] += 1
print("pages: target %(target)d impostor %(impostor)d other %(other)d"
      % counts)
PY
diag "$tmp/count"
check "the core holds some of the target's pages" \
	grep -qE 'target [1-9]' "$tmp/count"
check "the core holds no page of the impostor" \
	grep -q 'impostor 0 ' "$tmp/count"
j()
{
	jq -r "$1" "$tmp/sum1.json" 2>/dev/null
}
check "the summary says the process vanished" [ "$(j .process.vanished)" = true ]
unread=$(j .stats.bytes_unreadable)
check "unread memory recorded ($unread bytes)" [ "${unread:-0}" -gt 0 ]
check "kcoredump exits 7, incomplete (status $rc)" [ "$rc" = 7 ]
finish
