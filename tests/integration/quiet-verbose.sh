#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 28 item 9: -q/--quiet and -v/--verbose mean less and more output in
# every command, each as its --help says; and the short options that were
# renamed to give each letter one meaning (list -D/-N, cat -l/-R, mount -F,
# debug -D = --dir) work under their new names and not under the old.
#   quiet-verbose.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$(readlink -f "$1") fixdir=$(readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
command -v jq > /dev/null || { echo "1..0 # SKIP jq is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
k() { "$kcoredump" "$@"; }
vm=$fixdir/vmcore-x86_64.core
pc=$fixdir/process-x86_64.core

# dump/convert: -v prints the plan (as --dry-run) on stderr first.
k dump --dry-run "$vm" > "$tmp/plan" 2> /dev/null
k dump -v -o "$tmp/v.elf" "$vm" > "$tmp/out" 2> "$tmp/err"
check "dump -v: the plan on stderr" grep -qF "$(head -n 1 "$tmp/plan")" "$tmp/err"
k dump -o "$tmp/n.elf" "$vm" > "$tmp/out" 2> "$tmp/err"
check "dump without -v: no plan" bash -c "! grep -qF \"\$(head -n 1 '$tmp/plan')\" '$tmp/err'"
k dump -q -o "$tmp/q.elf" "$vm" > "$tmp/out" 2> "$tmp/err"
check "dump -q: nothing on stdout" [ ! -s "$tmp/out" ]
k convert -v --format elf -o "$tmp/c.elf" "$tmp/n.elf" > "$tmp/out" 2> "$tmp/err"
check "convert -v: the plan on stderr" grep -qF "$(head -n 1 "$tmp/plan")" "$tmp/err"
k dump -q -o "$tmp/c.elf.zst" "$vm" > /dev/null 2>&1 || not_ok "dump to .zst"

# verify: -v has a line per segment, without it only the differing ones.
k verify "$tmp/n.elf" > "$tmp/out" 2>&1
plain=$(grep -c '^  segment [0-9]' "$tmp/out")
k verify -v "$tmp/n.elf" > "$tmp/out" 2>&1
nseg=$(sed -nE 's/.*\(([0-9]+) segments.*/\1/p' "$tmp/out")
check "verify: no segment line when all match" [ "$plain" = 0 ]
check "verify -v: a line per segment ($nseg), with its sha256" \
	[ "$(grep -c '^  segment [0-9].*digest ok, .*sha256 [0-9a-f]\{64\}' "$tmp/out")" = "${nseg:-x}" ]
k verify -q "$tmp/n.elf" > "$tmp/out" 2>&1
check "verify -q: nothing" [ ! -s "$tmp/out" ]

# extract: -v adds the compressed size and the ratio.
k extract -v -o "$tmp/x.elf" "$tmp/c.elf.zst" > "$tmp/out" 2>&1
check "extract -v: size, ratio, time" grep -qE 'compressed, ratio [0-9.]+, [0-9.]+ s' "$tmp/out"
k extract -o "$tmp/x2.elf" "$tmp/c.elf.zst" > "$tmp/out" 2>&1
check "extract without -v: no ratio" bash -c "! grep -q ratio '$tmp/out'"

# info: -q prints nothing and the exit status tells; -v = --registers.
k info -q "$vm" > "$tmp/out" 2>&1
st=$?
check "info -q: exit 0, nothing printed" [ "$st" = 0 ] && [ ! -s "$tmp/out" ]
k info -q "$tmp/missing" > "$tmp/out" 2> "$tmp/err"
check "info -q of a missing file: exit 6, the error on stderr" [ $? = 6 ] && [ ! -s "$tmp/out" ] && [ -s "$tmp/err" ]
k info --registers "$pc" > "$tmp/r" 2>&1
k info -v "$pc" > "$tmp/v" 2>&1
k info "$pc" > "$tmp/p" 2>&1
check "info -v shows what --registers does" cmp -s "$tmp/r" "$tmp/v"
check "info --registers (was broken: its key was 'r') adds lines" [ "$(wc -l < "$tmp/r")" -gt "$(wc -l < "$tmp/p")" ]

# cat: -l/-R are --len/--raw; -q drops --hex's end line; -v says what.
addr=$(k info --json "$vm" | jq -r '[.segments[] | select(.type == "LOAD")][0].vaddr')
k cat -R -a "$addr" -l 64 "$vm" > "$tmp/raw" 2> "$tmp/err"
check "cat -R -l 64: 64 raw bytes" [ "$(stat -c %s "$tmp/raw")" = 64 ]
k cat -x -a "$addr" -l 64 "$vm" > "$tmp/hex" 2> "$tmp/err"
k cat -q -x -a "$addr" -l 64 "$vm" > "$tmp/hexq" 2> "$tmp/err"
check "cat -q --hex: one line less (the end address)" \
	[ "$(($(wc -l < "$tmp/hex") - 1))" = "$(wc -l < "$tmp/hexq")" ]
k cat -v -R -a "$addr" -l 64 "$vm" > /dev/null 2> "$tmp/err"
check "cat -v: says what it reads" grep -q "64 bytes at virtual $addr\|64 bytes at virtual 0x0*${addr#0x}" "$tmp/err"
k cat -n 64 -a "$addr" -R "$vm" > /dev/null 2> "$tmp/err"
check "cat -n is no more (--len is -l)" [ $? = 2 ]

# bench: -q only the table; -v more columns.
k bench -q --limit 64K --time 0.05 --block-size 4K -T 1 --no-progress "$vm" > "$tmp/bq" 2>&1
k bench -v --limit 64K --time 0.05 --block-size 4K -T 1 --no-progress "$vm" > "$tmp/bv" 2>&1
check "bench -q: the table first, no header" grep -q '^CLASS' <(head -n 1 "$tmp/bq")
check "bench -v: what ended each measurement" grep -q 'ended by the' "$tmp/bv"

# list/show/debug on a store of two cores.
store=$tmp/store
mkdir -m 700 "$store"
k core-handler --dir "$store" --no-sync --no-journal 1234 0 0 11 1767225600 myprog < "$pc" 2> "$tmp/err" ||
	not_ok "core-handler: $(head -c 200 "$tmp/err")"
k core-handler --dir "$store" --no-sync --no-journal 1235 0 0 6 1767225700 other < "$pc" 2> "$tmp/err" ||
	not_ok "core-handler: $(head -c 200 "$tmp/err")"
k list -q -D "$store" > "$tmp/lq" 2>&1
check "list -q: two paths, each a file" [ "$(wc -l < "$tmp/lq")" = 2 ] &&
	[ -f "$(head -n 1 "$tmp/lq")" ] && [ -f "$(tail -n 1 "$tmp/lq")" ]
COLUMNS=40 k list -v -D "$store" > "$tmp/lv" 2>&1
check "list -v: not fitted to 40 columns (whole paths)" grep -qF "$(head -n 1 "$tmp/lq")" "$tmp/lv"
k list -q -n 1 --reverse -D "$store" > "$tmp/l1" 2>&1
check "list -n 1: the newest" grep -q 'other' "$tmp/l1"
k list -q -r -D "$store" > "$tmp/lr" 2>&1
check "list -r: newest first, as coredumpctl" [ "$(head -n 1 "$tmp/lr")" = "$(tail -n 1 "$tmp/lq")" ] &&
	[ "$(wc -l < "$tmp/lr")" = 2 ]
k list -N 1 -D "$store" > /dev/null 2>&1
check "list -N is no more (-n, as coredumpctl)" [ $? = 2 ]
k show -q -D "$store" myprog > "$tmp/sq" 2>&1
check "show -q: the core's path" [ "$(wc -l < "$tmp/sq")" = 1 ] && [ -f "$(cat "$tmp/sq")" ]
k show -v -D "$store" myprog > "$tmp/sv" 2>&1
check "show -v: the record" grep -q '^ *Record: {' "$tmp/sv"
mkdir "$tmp/bin"
printf '#!/bin/sh\necho "fake-gdb $*"\n' > "$tmp/bin/fake-gdb"
chmod +x "$tmp/bin/fake-gdb"
# Another user's core (the fixture is uid 1000's): --open-mapped-files.
PATH=$tmp/bin:$PATH k debug -q -D "$store" --open-mapped-files --debugger fake-gdb myprog > "$tmp/dq" 2> "$tmp/dqe"
check "debug -q: the debugger ran, nothing said" grep -q '^fake-gdb' "$tmp/dq" && [ ! -s "$tmp/dqe" ]
PATH=$tmp/bin:$PATH k debug -v -D "$store" --open-mapped-files --debugger fake-gdb myprog > "$tmp/dv" 2> "$tmp/dve"
check "debug -v: the debugger's command line" grep -q 'running fake-gdb .*-c ' "$tmp/dve"
finish
