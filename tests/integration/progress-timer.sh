#!/bin/bash
# SPDX-License-Identifier: MIT
# Progress that moves (issue 28 item 7): a dump whose output cannot drain
# (written with --special-output into a FIFO nobody reads) does not reach
# its next block, yet its progress line is redrawn: the test holds the
# FIFO until it has seen three redraws with three different elapsed
# times, then drains it.  Nothing here is timed: the test waits for the
# redraws (up to a generous limit), so load only makes it slower; without
# the timer no redraw comes while the dump waits, and the limit fails it.
# Also: each line says what was written and its ratio, and the phases
# after the last read are named (compressing, notes, hashing, publishing).
# Once with --progress and stderr a file (a line a second), once under a
# pseudo-terminal (script(1): progress on by default, "\r\e[K" redraws).
# extract shows its progress on a terminal too.
#   progress-timer.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$(readlink -f "$1") fixdir=$(readlink -f "$2")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
pids=()
cleanup()
{
	for p in "${pids[@]}"; do kill "$p" 2> /dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fix=$fixdir/process-x86_64.core
LIMIT=${PROGRESS_TEST_LIMIT:-90}

# distinct_times FILE: how many different "elapsed h:mm:ss" times its
# progress lines (or redraws) end with.
distinct_times()
{
	tr '\r' '\n' < "$1" | grep -oE ', elapsed [0-9]+:[0-9]{2}:[0-9]{2}$' |
		sort -u | wc -l
}

# hold NAME CMD...: run CMD (a dump into the FIFO $tmp/NAME.fifo, its
# progress into $tmp/NAME.err), read 1000 bytes, then wait for 3 distinct
# elapsed times before draining.
hold()
{
	local name=$1 fifo=$tmp/$1.fifo i
	shift
	mkfifo -m 600 "$fifo"
	"$@" > "$tmp/$name.out" 2>&1 &
	pids+=($!)
	exec 3< "$fifo"
	head -c 1000 <&3 > /dev/null
	for ((i = 0; i < LIMIT * 10; i++)); do
		[ "$(distinct_times "$tmp/$name.err")" -ge 3 ] && break
		sleep 0.1
	done
	check "$name: 3 redraws with different times while the output is full" \
		[ "$(distinct_times "$tmp/$name.err")" -ge 3 ]
	cat <&3 > /dev/null
	exec 3<&-
	wait "${pids[-1]}"
	check "$name: the dump then ends (exit 0)" [ $? = 0 ]
}

hold file bash -c '"$1" dump --progress --special-output "$2" -o "$3" 2> "$4"' _ \
	"$kcoredump" "$fix" "$tmp/file.fifo" "$tmp/file.err"
check "file: lines say what was written and its ratio" \
	grep -qE 'written [0-9.]+ [KMG]?i?B \([0-9.]+x\)' "$tmp/file.err"
for phase in 'compressing the last blocks' 'writing the notes and headers' \
	'hashing the file' 'publishing' 'done'; do
	check "file: the phase '$phase' is named" grep -q ", $phase, " "$tmp/file.err"
done

if command -v script > /dev/null; then
	# Under a pty progress is on by default; the pty's output is the log.
	hold pty script -qfec "'$kcoredump' dump --special-output '$fix' -o '$tmp/pty.fifo'" "$tmp/pty.err"
	check "pty: redraws in place (\\r, erase line)" grep -q $'\r\e\[K' "$tmp/pty.err"
	# extract: progress on a terminal, nothing without one.
	"$kcoredump" dump -q "$fix" -o "$tmp/x.elf.zst"
	script -qfec "'$kcoredump' extract '$tmp/x.elf.zst' -o '$tmp/x.elf'" "$tmp/x.log" > /dev/null
	check "extract on a pty: a progress line that reaches 100%" \
		grep -qE $'\r\e\\[K100\\.0%  [0-9.]+ MiB of [0-9.]+ MiB extracted' "$tmp/x.log"
	"$kcoredump" extract "$tmp/x.elf.zst" -o "$tmp/y.elf" 2> "$tmp/y.err" > /dev/null
	check "extract without a terminal: no progress" [ ! -s "$tmp/y.err" ]
else
	skip "pty: no script(1)"
fi
finish
