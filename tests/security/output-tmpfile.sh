#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 8: a writer killed with SIGKILL leaves nothing behind.  A
# SIGKILLed `dump` used to leave its hidden temporary file (88 MB in the
# report) next to the output.  Outputs are now O_TMPFILE inodes linked
# into place at the end: while writing the directory shows nothing, and a
# killed writer's file is gone with its last descriptor.  The same for a
# core handler killed while it stores a core.
#   output-tmpfile.sh KCOREDUMP MKCORE SPECDIR
set -uo pipefail
kcoredump=$1 mkcore=$2 specdir=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

{
	cat "$specdir/process-x86_64.spec"
	printf 'load vaddr=0x7e0000000000 flags=rw\n\tdata 96M random=3\nend\n'
} > "$tmp/big.spec"
"$mkcore" "$tmp/big.spec" "$tmp/big.core" >/dev/null || { not_ok "mkcore"; finish; }

for fmt in elf xz; do
	out=$tmp/out-$fmt
	mkdir "$out"
	extra=()
	[ $fmt = xz ] && extra=(--compress xz --level 9 -T 1)
	"$kcoredump" dump "$tmp/big.core" -o "$out/dump" "${extra[@]}" -q &
	p=$!
	# Let it run in slices of a few milliseconds, stopped in between,
	# until it is caught writing (its descriptor on the output open): a
	# dump of this file takes a quarter of a second on a quiet machine.
	caught=false
	for _ in $(seq 2000); do
		kill -STOP "$p" 2>/dev/null || break
		if ls -l "/proc/$p/fd" 2>/dev/null | grep -q "$out"; then
			caught=true
			break
		fi
		kill -CONT "$p"
		sleep 0.005
	done
	during=$(ls -A "$out" | tr '\n' ' ')
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	after=$(ls -A "$out" | tr '\n' ' ')
	check "dump ($fmt) caught while writing its output" $caught
	check "dump ($fmt) while writing: nothing visible in the directory ('$during')" [ -z "$during" ]
	check "dump ($fmt) killed with SIGKILL: nothing left behind ('$after')" [ -z "$after" ]
done

d=$(newstore store)
mkfifo "$tmp/in"
"$kcoredump" core-handler --dir "$d" --no-sync --no-journal 4242 1000 1000 6 1700000000 big \
	< "$tmp/in" 2>/dev/null &
h=$!
exec 3>"$tmp/in"
head -c $((32 << 20)) "$tmp/big.core" >&3
sleep 0.5
kill -KILL "$h"
wait "$h" 2>/dev/null
exec 3>&-
sleep 0.5
left=$(find "$d" -name '.core*' -o -name 'core*' | tr '\n' ' ')
check "core-handler killed with SIGKILL while storing: nothing left ('$left')" [ -z "$left" ]
finish
