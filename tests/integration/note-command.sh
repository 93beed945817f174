#!/bin/bash
# Our metadata note records the command line as typed (the command named
# once, also for the no-command shorthand; the order as given, arguments
# quoted for a shell) (issue 28 item 3).
#   note-command.sh KCOREDUMP FIXTURES
set -uo pipefail
kcoredump=$(readlink -f "$1") fix=$(readlink -f "$2")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src" && cp "$fix/vmcore-twocopies.core" "$tmp/src/v.core" || exit 1
cd "$tmp/src" || exit 1

# field FILE KEY: the note's KEY= line (the note is text in a plain ELF).
field() { grep -a -m1 "^$2=" "$1" | cut -d= -f2-; }

"$kcoredump" dump -q --segments ram v.core -o ../a.elf 2>"$tmp/err"
check "dump: command as typed ($(field ../a.elf command))" \
	[ "$(field ../a.elf command)" = "kcoredump dump -q --segments ram v.core -o ../a.elf" ]
"$kcoredump" -q -o '../b c.elf' ./v.core 2>"$tmp/err"
check "shorthand: 'kcoredump dump', quoted ($(field "../b c.elf" command))" \
	[ "$(field "../b c.elf" command)" = "kcoredump dump -q -o '../b c.elf' ./v.core" ]
"$kcoredump" convert -q --format elf v.core -o ../c.elf 2>"$tmp/err"
check "convert: command as typed ($(field ../c.elf command))" \
	[ "$(field ../c.elf command)" = "kcoredump convert -q --format elf v.core -o ../c.elf" ]
finish
