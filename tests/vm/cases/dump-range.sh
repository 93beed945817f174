#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: `kcoredump dump --range` over 2 MiB of kernel text (from _text) and
# `--range 0x100000+16M --phys`; the live bytes (kpread on /proc/kcore) are
# recorded as sha256 for dump-range.host.sh.
set -eu

sym() { awk -v n="$1" '$3 == n { print "0x" $1; exit }' /proc/kallsyms; }
sha() { sha256sum | cut -d' ' -f1; }
text=$(sym _text)
[ -n "$text" ] || { echo "dump-range: no _text in kallsyms"; exit 1; }
echo "text_vaddr $text" > "$OUT/symbols"
kpread --phdrs > "$OUT/phdrs"
fail=0

run() { # name args...
	n=$1
	shift
	rc=0
	timeout 60 "$KCOREDUMP" dump "$@" -o "$OUT/$n.elf" --json > "$OUT/$n.json" 2> "$OUT/$n.stderr" || rc=$?
	echo "dump $* -> $n.elf: exit $rc"
	cat "$OUT/$n.stderr"
	[ "$rc" -eq 0 ] || { echo "not ok - kcoredump dump $* exited $rc"; fail=1; }
}

run text --range "$text+2M"
echo "live $(kpread --vaddr "$text" --len 2097152 | sha)" > "$OUT/text.live.sha256"

# 0x100000 is RAM on every PC; its direct map alias from the RAM segments.
run phys --range 0x100000+16M --phys
alias=
while read -r _i _t va pa _off _fsz msz ram; do
	[ "$ram" = 1 ] || continue
	d=$((0x100000 - pa))
	if [ "$d" -ge 0 ] && [ "$d" -lt "$msz" ]; then
		alias=$(printf '0x%x' $((va + d)))
		break
	fi
done < "$OUT/phdrs"
echo "phys_alias $alias" >> "$OUT/symbols"
[ -n "$alias" ] || { echo "not ok - 0x100000 in no RAM segment"; exit 1; }
# Low RAM is live kernel memory: keep the bytes, the host compares pages.
kpread --vaddr "$alias" --len 16777216 > "$OUT/phys.live.raw"
echo "live $(sha < "$OUT/phys.live.raw")" > "$OUT/phys.live.sha256"
if command -v kcore-read > /dev/null; then
	a=$(kcore-read "$OUT/phys.elf" --paddr 0x100000 --len 16777216 | sha)
	b=$(kcore-read /proc/kcore --paddr 0x100000 --len 16777216 | sha)
	echo "kcore-read --paddr 0x100000+16M: phys.elf $a /proc/kcore $b"
fi
exit $fail
