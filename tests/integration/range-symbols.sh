#!/bin/bash
# SPDX-License-Identifier: MIT
# --range with kernel symbols (issue 28 item 6): under KASLR a fixed
# address such as 0xffffffff81000000 matches nothing, _stext+16M always
# does.  On the vmcore fixture (SYMBOL(_stext)=ffffffff9f000000,
# SYMBOL(swapper_pg_dir)=ffffffffa0c22000): START+LENGTH and START-END
# with symbols give the segments of those addresses; an unknown symbol is
# exit 6 naming it; a range that ends before it starts, exit 2.
#   range-symbols.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
command -v jq > /dev/null || { echo "1..0 # SKIP jq is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
v=$fixdir/vmcore-twocopies.core
k() { "$kcoredump" "$@"; }
jqe() { jq -e "$@" > /dev/null; }

k dump -n --json --range _stext+16K "$v" > "$tmp/a.json" 2> "$tmp/err"
check "_stext+16K: exit 0 ($(head -c 200 "$tmp/err"))" [ $? = 0 ]
check "_stext+16K: 16 KiB of kernel text at _stext" \
	jqe '.segments == [.segments[0]] and .segments[0].vaddr == "0xffffffff9f000000" and .segments[0].size == 16384 and .segments[0].class == "text"' "$tmp/a.json"
k dump -n --json --range 0xffffffff9f000000+16K "$v" > "$tmp/b.json"
check "_stext+16K is 0xffffffff9f000000+16K" cmp -s "$tmp/a.json" "$tmp/b.json"
k dump -n --json -r _stext-0xffffffff9f002000 "$v" > "$tmp/c.json"
check "_stext-ADDRESS" jqe '.segments[0].size == 8192' "$tmp/c.json"
k dump -q --range _stext+64K "$v" -o "$tmp/t.elf" 2> "$tmp/err"
k cat -R -a 0xffffffff9f000000 -l 64K "$tmp/t.elf" > "$tmp/t.bin" 2> "$tmp/err"
k cat -R -a 0xffffffff9f000000 -l 64K "$v" > "$tmp/v.bin" 2>> "$tmp/err"
check "a dump of _stext+64K has the text's 64 KiB ($(head -c 200 "$tmp/err"))" \
	[ "$(stat -c %s "$tmp/t.bin")" = 65536 ] && cmp -s "$tmp/t.bin" "$tmp/v.bin"
k dump -n --range nosuch_symbol+4K "$v" > /dev/null 2> "$tmp/err"
rc=$?
check "an unknown symbol: exit 6, named ($rc: $(cat "$tmp/err"))" [ "$rc" = 6 ] &&
	grep -q "no symbol 'nosuch_symbol'" "$tmp/err"
k dump -n --range swapper_pg_dir-_stext "$v" > /dev/null 2> "$tmp/err"
check "symbols the wrong way round: exit 2" [ $? = 2 ] && grep -q "ends before it starts" "$tmp/err"
k dump -n --range '_stext+' "$v" > /dev/null 2> "$tmp/err"
check "'_stext+': a usage error" [ $? = 2 ]
k dump -n --range '_st ext+4K' "$v" > /dev/null 2> "$tmp/err"
check "'_st ext+4K': a usage error" [ $? = 2 ]
finish
