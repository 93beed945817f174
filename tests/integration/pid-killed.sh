#!/bin/bash
# kcoredump pid against a target killed mid-dump (issue 19 item 1): the
# core is never presented as complete.  The dump goes to a pipe the test
# reads only so far, so the target is killed at a known point of the
# memory copy: early (after the first MiBs), late (after most of a 256 MiB
# area), and with --stop (kept stopped, then SIGKILLed); and, by a race
# over many short runs, anywhere from the register reads on.  A dump of a
# target killed during its copy exits 7 (incomplete), says INCOMPLETE and
# how much was not read, lists the ranges in the JSON (complete false,
# process.vanished true) and -q still says so, and the core records it
# (info says incomplete with the same amount, verify exits 7); one killed
# before it was captured exits 6; nothing exits 0 with unread memory,
# nor 1.
#   pid-killed.sh KCOREDUMP PIDTARGET
set -uo pipefail
kcoredump=$1 target=$(readlink -f "$2")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # called through the trap
cleanup()
{
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
command -v jq >/dev/null || {
	echo "1..0 # SKIP jq not installed"
	exit 77
}

# start NAME ARGS...: a pidtarget with its stdin held open; sets $pid.
start()
{
	local name=$1
	shift
	mkfifo "$tmp/$name.in"
	"$target" "$@" <"$tmp/$name.in" >"$tmp/$name.out" 2>&1 &
	pid=$!
	pids+=("$pid")
	exec {fd}>"$tmp/$name.in"
	for _ in $(seq 100); do
		grep -q '^ready' "$tmp/$name.out" 2>/dev/null && break
		sleep 0.1
	done
}

# killed_at NAME MIB [pid options]: dump a 256 MiB target into a pipe,
# let MIB MiB of the core through, kill the target, drain the rest.
killed_at()
{
	local name=$1 mib=$2
	shift 2
	start "$name" --dense 256 --sparse 0 --threads 2
	local tpid=$pid
	mkfifo "$tmp/$name.go"
	(
		"$kcoredump" pid "$tpid" -o - -T 1 --block-size 1M "$@" \
			2>"$tmp/$name.sum"
		echo $? >"$tmp/$name.rc"
	) | {
		head -c $((mib << 20)) >"$tmp/$name.core"
		read -r _ <"$tmp/$name.go"
		cat >>"$tmp/$name.core"
	} &
	local reader=$!
	# The copy is under way once the first MiBs came through.
	for _ in $(seq 200); do
		[ "$(stat -c %s "$tmp/$name.core" 2>/dev/null || echo 0)" -ge \
			$((mib << 20)) ] && break
		sleep 0.05
	done
	sleep 0.3
	kill -9 "$tpid"
	echo go >"$tmp/$name.go"
	wait "$reader"
	rc=$(cat "$tmp/$name.rc" 2>/dev/null || echo none)
}

# report NAME WHAT: the checks on a dump whose target died in the copy.
report()
{
	local name=$1 what=$2
	check "$what: exit 7, incomplete (got $rc)" [ "$rc" = 7 ]
	# The JSON summary is on stderr (the core went to stdout).
	/usr/bin/python3 -c '
import json, sys
t = open(sys.argv[1]).read()
json.dump(json.loads(t[t.index("{"):]), open(sys.argv[2], "w"))
' "$tmp/$name.sum" "$tmp/$name.json" 2>/dev/null
	check "$what: JSON complete false, process.vanished true" \
		[ "$(jq -r '[.complete, .process.vanished] | join(" ")' \
			"$tmp/$name.json" 2>/dev/null)" = "false true" ]
	local unread ranges
	unread=$(jq -r '.stats.bytes_unreadable' "$tmp/$name.json" 2>/dev/null)
	ranges=$(jq -r '.read_errors | length' "$tmp/$name.json" 2>/dev/null)
	check "$what: unread bytes ($unread) in listed ranges ($ranges)" \
		[ "${unread:-0}" -gt 0 -a "${ranges:-0}" -gt 0 ]
	check "$what: the ranges add up to the unread bytes" \
		[ "$(jq '[.read_errors[].length] | add' "$tmp/$name.json" \
			2>/dev/null)" = "$unread" ]
	# The core itself says so (our note, in the trailer on a pipe):
	# info names the amount, verify exits 7 although its digests match.
	check "$what: info on the core: incomplete: $unread bytes in $ranges ranges" \
		grep -q "incomplete: $unread bytes in $ranges range" \
		<<<"$("$kcoredump" info "$tmp/$name.core" 2>&1)"
	local vrc=0
	"$kcoredump" verify -q "$tmp/$name.core" || vrc=$?
	check "$what: verify of the core exits 7, incomplete (got $vrc)" \
		[ "$vrc" = 7 ]
}

killed_at early 4 --json
report early "killed early in the copy (4 MiB through)"
early_unread=$(jq -r .stats.bytes_unreadable "$tmp/early.json" 2>/dev/null)
killed_at late 200 --json
report late "killed late in the copy (200 MiB through)"
late_unread=$(jq -r .stats.bytes_unreadable "$tmp/late.json" 2>/dev/null)
check "late: less unread than early ($late_unread < $early_unread)" \
	[ "${late_unread:-0}" -lt "${early_unread:-0}" ]
killed_at stop 4 --json --stop
report stop "--stop, SIGKILLed while kept stopped"
killed_at text 4
check "text summary: exit 7 (got $rc)" [ "$rc" = 7 ]
check "text summary: INCOMPLETE and how much was not read" \
	grep -qE '^Dumped process .*: INCOMPLETE$' "$tmp/text.sum"
grep -qE '^  INCOMPLETE: .* could not be read \(the process exited' "$tmp/text.sum" &&
	ok "text summary: the incomplete line" ||
	not_ok "text summary: no incomplete line: $(head -3 "$tmp/text.sum")"
killed_at quiet 4 -q
check "-q: exit 7 (got $rc)" [ "$rc" = 7 ]
check "-q: still one line on stderr saying it is incomplete" \
	grep -q "incomplete: .* could not be read (the process exited" "$tmp/quiet.sum"

# killed_in_file NAME MIB [VAR=VALUE...]: the same into a file, with the
# environment given: kcoredump is stopped (SIGSTOP) once it has written
# MIB MiB, the target killed (a zombie has no memory left to read), and
# kcoredump let go on.  A file is the copy path's (one thread, 1 MiB
# blocks); KCOREDUMP_COPY_PATH=0 the block pipeline's: both record what
# they could not read the same way.
killed_in_file()
{
	local name=$1 mib=$2
	shift 2
	start "$name" --dense 256 --sparse 0 --threads 2
	env "$@" /usr/bin/python3 -c '
import os, signal, subprocess, sys, time
tpid, want = int(sys.argv[1]), int(sys.argv[2]) << 20
out, err = open(sys.argv[3], "w"), open(sys.argv[4], "w")
k = subprocess.Popen(sys.argv[5:], stdout=out, stderr=err)
while k.poll() is None:
    try:
        io = open("/proc/%d/io" % k.pid).read()
    except OSError:
        continue
    if int(io.split("wchar: ")[1].split()[0]) >= want:
        k.send_signal(signal.SIGSTOP)
        break
    time.sleep(0.0002)
else:
    sys.exit(100)  # done before it got there
os.kill(tpid, signal.SIGKILL)
def state():
    try:
        return open("/proc/%d/stat" % tpid).read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"  # reaped
while state() not in ("Z", "gone"):
    time.sleep(0.001)
k.send_signal(signal.SIGCONT)
sys.exit(k.wait())
' "$pid" "$mib" "$tmp/$name.sum" "$tmp/$name.err" \
		"$kcoredump" pid "$pid" -o "$tmp/$name.core" --json --file-sha256
	rc=$?
	wait "$pid" 2>/dev/null
}

for how in copy ring; do
	env=()
	[ $how = ring ] && env=(KCOREDUMP_COPY_PATH=0)
	killed_in_file "file-$how" 64 "${env[@]}"
	report "file-$how" "$how, a file: killed after 64 MiB were written"
	got=$(jq -r .file_sha256 "$tmp/file-$how.json" 2>/dev/null)
	want=$(sha256sum "$tmp/file-$how.core" | cut -d' ' -f1)
	check "$how, a file: the printed file SHA-256 is sha256sum's ($got)" \
		[ "$got" = "$want" ]
done

# The race: 20 short dumps of targets killed at random moments, from
# before the stop to the end of the copy.  Each exits 6 (gone before it
# was captured), 7 (incomplete), or 0 with nothing unread.
bad=0
for i in $(seq 20); do
	start race$i --dense 64 --sparse 1 --threads 8
	tpid=$pid
	(sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"; kill -9 "$tpid") &
	"$kcoredump" pid "$tpid" -o "$tmp/race.core" -f --json \
		>"$tmp/race.json" 2>"$tmp/race.err"
	rc=$?
	wait
	case $rc in
	6 | 7) ;;
	0) [ "$(jq -r .stats.bytes_unreadable "$tmp/race.json")" = 0 ] ||
		bad=$((bad + 1)) ;;
	*)
		bad=$((bad + 1))
		echo "# race $i: exit $rc: $(head -1 "$tmp/race.err")" >&2
		;;
	esac
	echo "$rc" >>"$tmp/race.rcs"
done
check "20 races: every exit 6, 7 or a complete 0 ($(sort "$tmp/race.rcs" |
	uniq -c | tr -s ' \n' ' '))" [ $bad -eq 0 ]
finish
