#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: `kcoredump dump --vmalloc-range` (only the mapped vmalloc areas of
# /proc/vmallocinfo), timed, then three areas read back from the dump and
# straight from /proc/kcore (kpread, and kcore-read when given), sha256
# compared.  Areas that should not change are preferred (module text, boot
# hash tables, bpf).  vm-text.elf adds --segments text (the kernel image) for
# crash and drgn.  dump-vmalloc.host.sh checks the rest.
# With kernel.kptr_restrict=0 (the boot default) /proc/vmallocinfo shows
# hashed addresses, so the main dump runs with kptr_restrict=1 (root sees
# the real ones); a second dump (vm-pt.elf) runs with the boot value, where
# kcoredump has to find the mapped pages in the page tables instead.
set -eu

up() { cut -d' ' -f1 /proc/uptime; }
sha() { sha256sum | cut -d' ' -f1; }

kptr=$(cat /proc/sys/kernel/kptr_restrict)
echo "$kptr" > "$OUT/kptr_restrict.boot"
echo 1 > /proc/sys/kernel/kptr_restrict
cat /proc/vmallocinfo > "$OUT/vmallocinfo.before"
t0=$(up)
rc=0
timeout 120 "$KCOREDUMP" dump --vmalloc-range -o "$OUT/vm.elf" --json > "$OUT/vm.json" 2> "$OUT/vm.stderr" || rc=$?
t1=$(up)
awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' > "$OUT/dump-seconds"
echo "dump --vmalloc-range: exit $rc in $(cat "$OUT/dump-seconds") s"
cat "$OUT/vm.stderr"
[ "$rc" -eq 0 ] || { echo "not ok - kcoredump dump --vmalloc-range exited $rc"; exit 1; }
ls -ls "$OUT/vm.elf"
cat /proc/vmallocinfo > "$OUT/vmallocinfo.after"
# With --segments text the kernel image comes too: the dump crash and drgn
# open (dumpcheck.py reads it with drgn).
rc=0
timeout 300 "$KCOREDUMP" dump --vmalloc-range --segments text -o "$OUT/vm-text.elf" --json > "$OUT/vm-text.json" 2> "$OUT/vm-text.stderr" || rc=$?
echo "$rc" > "$OUT/vm-text.rc"
echo "dump --vmalloc-range --segments text: exit $rc"
cat "$OUT/vm-text.stderr"

# The boot kptr_restrict (hashed vmallocinfo addresses unless it was 1).
echo "$kptr" > /proc/sys/kernel/kptr_restrict
t0=$(up)
rc=0
timeout 120 "$KCOREDUMP" dump --vmalloc-range -o "$OUT/vm-pt.elf" --json > "$OUT/vm-pt.json" 2> "$OUT/vm-pt.stderr" || rc=$?
t1=$(up)
echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" > "$OUT/vm-pt.rc-seconds"
echo "dump --vmalloc-range with kptr_restrict=$kptr: exit $rc in $(cut -d' ' -f2 "$OUT/vm-pt.rc-seconds") s"
cat "$OUT/vm-pt.stderr"

# Three areas of the dump (plain --vmalloc-range leaves the module area
# out) with pages=, not ioremap: stable callers first, then any; at most
# 1 MiB of each.
kpread --file "$OUT/vm.elf" --phdrs | awk '$2 == "LOAD" { print $3 }' > "$OUT/vm.loads"
{
	grep -E 'pages=' "$OUT/vmallocinfo.before" | grep -v ioremap |
		grep -E 'load_module|module_alloc|execmem|alloc_large_system_hash|bpf' || true
	grep -E 'pages=' "$OUT/vmallocinfo.before" | grep -v ioremap || true
} | awk 'NR == FNR { in_dump[$1] = 1; next }
	{ split($1, r, "-") } in_dump[r[1]] && !seen[$1]++' "$OUT/vm.loads" - |
	head -n 3 > "$OUT/sampled"
: > "$OUT/compare"
while read -r range _size caller rest; do
	start=${range%-*}
	pages=$(echo "$rest" | tr ' ' '\n' | sed -n 's/^pages=//p')
	len=$((pages * 4096))
	[ "$len" -le 1048576 ] || len=1048576
	d=$(kpread --file "$OUT/vm.elf" --vaddr "$start" --len "$len" | sha)
	k=$(kpread --vaddr "$start" --len "$len" | sha)
	p=-
	[ ! -f "$OUT/vm-pt.elf" ] || p=$(kpread --file "$OUT/vm-pt.elf" --vaddr "$start" --len "$len" | sha) || p=-
	echo "$start $len ${caller%%+*} $d $k $p" >> "$OUT/compare"
	if command -v kcore-read > /dev/null; then
		a=$(kcore-read "$OUT/vm.elf" --vaddr "$start" --len "$len" | sha)
		b=$(kcore-read /proc/kcore --vaddr "$start" --len "$len" | sha)
		echo "kcore-read $start $len: dump $a kcore $b"
		[ "$a" = "$d" ] || echo "not ok - kcore-read and kpread disagree on vm.elf at $start"
	fi
done < "$OUT/sampled"
cat "$OUT/compare"

# Module text (issue 24): since execmem's ROX cache (Linux 7.3 on x86_64)
# several modules' text shares one 2 MiB area whose caller is
# execmem_alloc; the label names the modules whose text starts in it and
# --caller NAME finds it.  The area holding the first module's text,
# dumped with --caller NAME: dump-vmalloc.host.sh compares the label with
# /proc/modules and vmallocinfo.
echo 1 > /proc/sys/kernel/kptr_restrict
cat /proc/modules > "$OUT/modules"
cat /proc/vmallocinfo > "$OUT/vmallocinfo.modules"
echo "$kptr" > /proc/sys/kernel/kptr_restrict
# shellcheck disable=SC2046 # the fields of the first line
set -- $(head -n 1 "$OUT/modules")
if [ $# -ge 6 ]; then
	mod=$1 addr=$6
	area=
	while read -r range _rest; do
		s=${range%-*} e=${range#*-}
		if [ $((addr - s)) -ge 0 ] && [ $((e - addr)) -gt 0 ]; then
			area=$range
			break
		fi
	done < "$OUT/vmallocinfo.modules"
	echo "module $mod text at $addr: vmalloc area ${area:-none}"
	echo "$mod $addr ${area:--}" > "$OUT/modtext.want"
	if [ -n "$area" ]; then
		echo 1 > /proc/sys/kernel/kptr_restrict
		rc=0
		timeout 120 "$KCOREDUMP" dump --vmalloc-range="$area" --caller "$mod" \
			-o "$OUT/modtext.elf" --json > "$OUT/modtext.json" 2> "$OUT/modtext.stderr" || rc=$?
		echo "$kptr" > /proc/sys/kernel/kptr_restrict
		echo "dump --vmalloc-range=$area --caller $mod: exit $rc"
		cat "$OUT/modtext.stderr"
	fi
else
	echo "no loaded module (all built in)"
fi
