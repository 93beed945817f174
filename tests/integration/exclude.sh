#!/bin/bash
# SPDX-License-Identifier: MIT
# --exclude (-d): the struct page classifier (src/lib/dump/exclude.c), page by
# page, on tests/tools/mkpagemap.py's synthetic Linux 6.12 vmcore (64 MiB
# of RAM, SPARSEMEM_EXTREME, one struct page per pfn; no VM needed):
#  - for dump levels 0, 1, 2, 4, 8, 16, 24, 26, 31 (numbers and names) the
#    --json "exclude" counts, its ranges and stats.bytes_excluded are the
#    fixture's, written here from mkpagemap.py's page list, not from the
#    classifier's rules;
#  - every test page of the output reads as zeros if its class is left out
#    and as its pattern (its pfn, repeated) if kept; the mem_section and
#    struct page tables stay intact; and no other page of the 64 MiB
#    differs from the source (ELF, kdump read back through an ELF, LiME, AVML,
#    dump and convert);
#  - mkpagemap.py --extra's cases too: a file THP (its tails are not
#    judged on their own), a misaligned compound head, a buddy head of too
#    high an order, hwpoison on an anonymous page, unaccepted blocks;
#  - Linux 7.3's VMCOREINFO (OFFSET(page.compound_info), PG_hwpoison 21,
#    tails holding the vmemmap mask: mkpagemap.py --kernel 7.3) gives the
#    same classes;
#  - a kdump says its dump level in format_detail;
#  - --dry-run --json shows the same counts and writes nothing;
#  - verify DUMP SOURCE takes the level from an ELF dump's note, and from
#    -d for LiME and AVML (without it their left-out pages differ);
#  - a bad CLASSES is a usage error (exit 2); a process core, or a vmcore
#    whose VMCOREINFO lacks a struct page entry, is "unsupported" (exit 4,
#    kcoredump(8) EXIT STATUS) with one line naming what is missing, and
#    leaves no output.
#   exclude.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
mkpagemap=$(dirname "$0")/../tools/mkpagemap.py
for tool in jq python3 od cmp; do
	if ! command -v "$tool" >/dev/null; then
		echo "1..0 # SKIP $tool is not installed"
		exit 77
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

k() { "$kcoredump" "$@"; }
# shellcheck disable=SC2317 # called through check
jqe() { jq -e "$@" >/dev/null; }

PAGE=4096
NPFNS=16384 # 64 MiB of RAM

# The fixture's test pages by class (mkpagemap.py): CLASS FIRST LAST.
# Each holds its pfn as a u64, repeated; all other pages with data are
# ordinary kernel pages (the tables below) and are kept at every level.
CLASSES_BASE="free 1024 2047
user 3072 3583
cache 4001 4001
cache_private 4002 4002
user 4004 4005
hwpoison 4006 4006
offline 4007 4007
cache 4008 4008
user 4010 4010"
# Pages read one by one: heads, tails and the pages that must be kept
# (2049, 2050: unbelievable buddy heads; 4000: slab with mapping & 1;
# 4009: swap cache, not swap-backed; 5000: a kernel page).
PROBES_BASE="1024 1025 1536 2047 2049 2050 3072 3073 3328 3583 4000 4001 4002
4004 4005 4006 4007 4008 4009 4010 5000"
# mkpagemap.py --extra adds (kept: 6157, the page after a misaligned head;
# 8192 and 12287, a buddy head of order 12 and where its block would end;
# 14337, a misaligned unaccepted head):
CLASSES_EXTRA="cache 6144 6147
hwpoison_user 6148 6148
cache_private 6150 6151
user 6156 6156
unaccepted 13312 14335"
PROBES_EXTRA="6144 6145 6147 6148 6150 6151 6156 6157 8192 12287 13312 14335 14337"
CLASSES=$CLASSES_BASE PROBES=$PROBES_BASE
# Kernel tables: the mem_section roots, root 0's sections, the struct pages.
TABLES="0x80000 32768
0x90000 4096
0x100000 1048576"

# counted_as LEVEL CLASS: the "exclude" count that dump level LEVEL puts
# pages of CLASS in; false if they are kept.  (makedumpfile's order:
# free, unaccepted, cache, cache-private, user, hwpoison, offline.)
counted_as()
{
	local level=$1 as=$2
	case $2 in
	# unaccepted only with free, as makedumpfile -d 16 does
	free | unaccepted) ((level & 16)) ;;
	user) ((level & 8)) ;;
	cache) ((level & 6)) ;;
	cache_private) ((level & 4)) ;;
	# always, once struct pages are read (any bit but zero)
	hwpoison | offline) ((level & 30)) ;;
	hwpoison_user)
		as=user
		((level & 8)) || { as=hwpoison && ((level & 30)); }
		;;
	*) false ;;
	esac || return 1
	echo "$as"
}
excluded() { counted_as "$@" >/dev/null; }

# class_of PFN: the fixture class of PFN, or "kept".
class_of()
{
	local cls first last
	while read -r cls first last; do
		if [ "$1" -ge "$first" ] && [ "$1" -le "$last" ]; then
			echo "$cls"
			return
		fi
	done <<<"$CLASSES"
	echo kept
}

# runs LEVEL: the excluded pfn runs, merged, as "FIRST-LAST" lines.
runs()
{
	local cls first last cur_first=-1 cur_last=-2
	while read -r cls first last; do
		excluded "$1" "$cls" || continue
		if [ "$first" -eq $((cur_last + 1)) ]; then
			cur_last=$last
			continue
		fi
		[ "$cur_first" -ge 0 ] && echo "$cur_first-$cur_last"
		cur_first=$first cur_last=$last
	done < <(sort -k2,2n <<<"$CLASSES")
	[ "$cur_first" -ge 0 ] && echo "$cur_first-$cur_last"
	return 0
}

# want_counts LEVEL CLASSNAMES: the expected "exclude" fields, in the
# order of the jq filter of got_counts.
want_counts()
{
	local level=$1 names=$2 cls as first last total=0 scanned=0 nruns
	local -A n=([free]=0 [cache]=0 [cache_private]=0 [user]=0 [hwpoison]=0
		[offline]=0 [unaccepted]=0)
	while read -r cls first last; do
		if as=$(counted_as "$level" "$cls"); then
			n[$as]=$((n[$as] + last - first + 1))
			total=$((total + last - first + 1))
		fi
	done <<<"$CLASSES"
	((level & 30)) && scanned=$NPFNS
	nruns=$(runs "$level" | wc -l)
	echo "$level $names $scanned $total ${n[free]} ${n[cache]} ${n[cache_private]}" \
		"${n[user]} ${n[hwpoison]} ${n[offline]} ${n[unaccepted]} 0 $nruns $((total * PAGE))"
}

got_counts()
{
	jq -r '[.exclude.level, .exclude.classes, .exclude.pages_scanned,
		.exclude.pages_excluded, .exclude.free, .exclude.cache,
		.exclude.cache_private, .exclude.user, .exclude.hwpoison,
		.exclude.offline, .exclude.unaccepted, .exclude.unreadable,
		.exclude.ranges, (.stats.bytes_excluded // "none")] |
		map(tostring) | join(" ")' "$1"
}

# check_counts WHAT JSONFILE LEVEL CLASSNAMES [dry]
check_counts()
{
	local what=$1 json=$2 want got
	want=$(want_counts "$3" "$4")
	# a dry run has no stats: nothing was read
	[ "${5:-}" = dry ] && want="${want% *} none"
	got=$(got_counts "$json" 2>&1)
	if [ "$got" = "$want" ] &&
		jq -e '.exclude.seconds | type == "number" and . >= 0' "$json" >/dev/null; then
		ok "$what: exclude counts $got"
	else
		not_ok "$what: exclude counts"
		echo "#   got:  $got" >&2
		echo "#   want: $want" >&2
	fi
}

# page_words FILE PFN: the distinct u64 values of the page (hex, one line),
# or "short N" if the page did not read as 4096 bytes.
page_words()
{
	local n
	k cat --raw --phys --addr "$(printf '0x%x' $(($2 * PAGE)))" --len $PAGE "$1" \
		>"$tmp/page" 2>"$tmp/page.err"
	n=$(wc -c <"$tmp/page")
	if [ "$n" != $PAGE ]; then
		echo "short $n: $(head -n 1 "$tmp/page.err")"
		return
	fi
	od -An -v -tx8 "$tmp/page" | tr -s ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' '
}

# check_probes WHAT FILE LEVEL: excluded test pages are zeros, kept ones
# hold their pattern.
check_probes()
{
	local what=$1 f=$2 level=$3 pfn cls want got bad=0 nex=0
	for pfn in $PROBES; do
		cls=$(class_of "$pfn")
		if excluded "$level" "$cls"; then
			want="0000000000000000 "
			nex=$((nex + 1))
		else
			want="$(printf '%016x' "$pfn") "
		fi
		got=$(page_words "$f" "$pfn")
		if [ "$got" != "$want" ]; then
			echo "#   pfn $pfn ($cls): got '$got', want '$want'" >&2
			bad=1
		fi
	done
	if [ $bad = 0 ]; then
		ok "$what: $nex test pages zero, the other $(($(wc -w <<<"$PROBES") - nex)) intact"
	else
		not_ok "$what: test pages"
	fi
}

# check_tables WHAT FILE: mem_section and struct pages as in the source.
check_tables()
{
	local what=$1 f=$2 addr len bad=0
	while read -r addr len; do
		k cat --raw --phys --addr "$addr" --len "$len" "$fix" >"$tmp/t.src" 2>/dev/null
		k cat --raw --phys --addr "$addr" --len "$len" "$f" >"$tmp/t.out" 2>"$tmp/t.err"
		if [ "$(wc -c <"$tmp/t.out")" != "$len" ] || ! cmp -s "$tmp/t.src" "$tmp/t.out"; then
			echo "#   table at $addr ($len bytes) differs" >&2
			bad=1
		fi
	done <<<"$TABLES"
	if [ $bad = 0 ]; then
		ok "$what: mem_section and struct page tables intact"
	else
		not_ok "$what: tables"
	fi
}

# Pages of RAM that differ between two 64 MiB images: "FIRST-LAST" runs,
# then "nonzero PFN" for every differing page that is not all zeros.
DIFF_PY='
import sys
a = open(sys.argv[1], "rb").read()
b = open(sys.argv[2], "rb").read()
if len(a) != len(b):
    print("length %d %d" % (len(a), len(b)))
    sys.exit(0)
P, zero = 4096, bytes(4096)
runs, nonzero = [], []
for pfn in range(len(a) // P):
    x, y = a[pfn * P:(pfn + 1) * P], b[pfn * P:(pfn + 1) * P]
    if x == y:
        continue
    if y != zero:
        nonzero.append(pfn)
    if runs and runs[-1][1] == pfn - 1:
        runs[-1][1] = pfn
    else:
        runs.append([pfn, pfn])
for r in runs:
    print("%d-%d" % tuple(r))
for pfn in nonzero:
    print("nonzero %d" % pfn)
'

# check_image WHAT FILE LEVEL: exactly the excluded pages differ from the
# source, and they read as zeros.
check_image()
{
	local what=$1 f=$2 level=$3 want got
	want=$(runs "$level")
	if k cat --raw --phys --addr 0 --len $((NPFNS * PAGE)) "$f" >"$tmp/out.img" 2>"$tmp/img.err"; then
		got=$(python3 -c "$DIFF_PY" "$tmp/src.img" "$tmp/out.img" 2>&1)
	else
		got="cat failed: $(head -n 1 "$tmp/img.err")"
	fi
	if [ "$got" = "$want" ]; then
		ok "$what: only the excluded pages differ from the source:" \
			"$(grep -c . <<<"$want") runs ${want:+$(tr '\n' ' ' <<<"$want")}"
	else
		not_ok "$what: the pages that differ from the source"
		echo "#   got:  $(tr '\n' ' ' <<<"$got" | head -c 400)" >&2
		echo "#   want: $(tr '\n' ' ' <<<"$want")" >&2
	fi
	rm -f "$tmp/out.img"
}

check_output()
{
	check_probes "$1" "$2" "$3"
	check_tables "$1" "$2"
	check_image "$1" "$2" "$3"
}

# ---- the fixture ----
fix=$tmp/pagemap.elf
if python3 "$mkpagemap" "$fix" >"$tmp/gen.out" 2>"$tmp/gen.err" && [ ! -s "$tmp/gen.out" ]; then
	ok "mkpagemap.py wrote $(basename "$fix") and printed nothing"
else
	not_ok "mkpagemap.py failed"
	diag "$tmp/gen.err"
	finish
fi
k info --json "$fix" >"$tmp/info.json" 2>"$tmp/err"
if jq -e '.source.kind == "kernel-vmcore" and .source.kernel_release == "6.12.0-synthetic" and
	.source.layout.page_offset_base == "0xffff888000000000" and
	.source.allocated_bytes < 16777216 and
	([.segments[] | select(.type == "LOAD")] | length == 1) and
	([.segments[] | select(.class == "ram")] | length == 1 and
	 .[0].paddr == "0x0" and .[0].memsz == 67108864)' "$tmp/info.json" >/dev/null; then
	ok "fixture: a sparse kernel vmcore, one direct-map RAM segment of 64 MiB"
else
	not_ok "fixture: info does not see a kernel vmcore with 64 MiB of RAM"
	diag "$tmp/err"
fi
# The fixture has what the checks rely on: root 0 points at the sections,
# test pages hold their pattern, the whole of RAM reads.
got=$(k cat --raw --phys --addr 0x80000 --len 8 "$fix" | od -An -tx8 | tr -d ' ')
check "fixture: mem_section root 0 is 0xffff888000090000" [ "$got" = ffff888000090000 ]
check_probes "fixture" "$fix" 0
k cat --raw --phys --addr 0 --len $((NPFNS * PAGE)) "$fix" >"$tmp/src.img" 2>"$tmp/err"
check "fixture: all 64 MiB of RAM read" [ "$(wc -c <"$tmp/src.img")" = $((NPFNS * PAGE)) ]

# ---- ELF outputs, level by level ----
# SPEC LEVEL CLASSNAMES
while read -r spec level names; do
	out=$tmp/out-$level.elf
	rm -f "$out"
	if k convert "$fix" --format elf --exclude "$spec" --json -o "$out" \
		>"$tmp/out.json" 2>"$tmp/err"; then
		ok "convert --format elf --exclude $spec: exit 0"
	else
		not_ok "convert --format elf --exclude $spec failed"
		diag "$tmp/err"
		continue
	fi
	if [ "$level" = 0 ]; then
		# nothing asked for: no "exclude" object, or an empty one
		check "--exclude 0: nothing excluded" \
			jqe '(.exclude == null or .exclude.pages_excluded == 0) and
				.stats.bytes_excluded == 0' "$tmp/out.json"
	else
		check_counts "--exclude $spec" "$tmp/out.json" "$level" "$names"
	fi
	if [ "$level" = 31 ]; then
		# The numbers of the fixture's page list, literally, and the
		# JSON's own sums.
		check "--exclude $spec: free 1024, user 512+2+1, cache 2, cache_private 1, hwpoison 1, offline 1" \
			jqe '.exclude | .free == 1024 and .user == 515 and .cache == 2 and
				.cache_private == 1 and .hwpoison == 1 and .offline == 1 and
				.pages_excluded == .free + .user + .cache + .cache_private +
					.hwpoison + .offline + .unaccepted' "$tmp/out.json"
		check "--exclude $spec: stats.bytes_excluded = pages_excluded * 4096" \
			jqe '.stats.bytes_excluded == .exclude.pages_excluded * 4096 and
				.stats.bytes_excluded > 0' "$tmp/out.json"
	fi
	check_output "elf --exclude $spec" "$out" "$level"
	check "elf --exclude $spec: the output verifies against its own digests" \
		k verify -q "$out"
	if [ "$level" = 31 ]; then
		# With the source: the note's level, no -d needed.
		check "elf --exclude $spec: verify with the source takes level 31 from the note" \
			jqe '.ok and .exclude_level == 31 and .source_bytes_differ == 0 and
			     .source_bytes_excluded > 0' <(k verify --json "$out" "$fix")
	fi
	rm -f "$out"
done <<'EOF'
31 31 zero,cache,cache-private,user,free
all 31 zero,cache,cache-private,user,free
2 2 cache
cache 2 cache
4 4 cache-private
cache-private 4 cache-private
user 8 user
free 16 free
user,free 24 user,free
free,user,cache 26 cache,user,free
zero 1 zero
0 0 none
EOF

# --progress: the struct page scan reports from 0% to 100%, with the
# pages left out so far, before the dump's own progress lines.
if k convert "$fix" --format elf --progress -d 31 -o "$tmp/prog.elf" >/dev/null 2>"$tmp/err"; then
	first=$(grep -m1 'struct pages of' "$tmp/err")
	last=$(grep 'struct pages of' "$tmp/err" | tail -n 1)
	check "--progress: the scan's first report is at 0% ($first)" \
		grep -q '^  0\.0%  struct pages of 0 B of 64\.0 MiB RAM classified, 0 pages left out' <<<"$first"
	check "--progress: its last at 100%, 1544 pages left out ($last)" \
		grep -q '^100\.0%  struct pages of 64\.0 MiB of 64\.0 MiB RAM classified, 1544 pages left out' <<<"$last"
	check "--progress: the dump's progress follows" \
		grep -q ' of .*, read .*/s, .*ETA ' "$tmp/err"
else
	not_ok "convert --progress -d 31 failed"
	diag "$tmp/err"
fi
rm -f "$tmp/prog.elf"

# dump, and -d for --exclude.
if k dump "$fix" -d user,free --json -o "$tmp/dump.elf" >"$tmp/out.json" 2>"$tmp/err"; then
	check_counts "dump -d user,free" "$tmp/out.json" 24 user,free
	check_output "dump -d user,free" "$tmp/dump.elf" 24
else
	not_ok "dump -d user,free failed"
	diag "$tmp/err"
fi
rm -f "$tmp/dump.elf"

# ---- kdump: excluded pages (only they) cleared in bitmap 2; read back as an ELF ----
while read -r level names; do
	kd=$tmp/out-$level.kdump
	if ! k convert "$fix" --format kdump --exclude "$level" --json -o "$kd" \
		>"$tmp/out.json" 2>"$tmp/err"; then
		not_ok "convert --format kdump --exclude $level failed"
		diag "$tmp/err"
		continue
	fi
	check_counts "kdump --exclude $level" "$tmp/out.json" "$level" "$names"
	# Every page that is not excluded is stored, the fixture's holes as
	# the shared zero page (as makedumpfile -d 1 does); the excluded ones
	# only are cleared in bitmap 2.
	total=$(want_counts "$level" "$names" | cut -d' ' -f4)
	# shellcheck disable=SC2016 # $n is jq's
	check "kdump --exclude $level: $((16384 - total)) pages stored (dumped or zero), $total excluded" \
		jqe --argjson n $((16384 - total)) \
		'.kdump.pages_dumped + .kdump.pages_zero == $n and
		 .kdump.pages_dumped + .kdump.pages_zero + .kdump.pages_excluded == 16384' \
		"$tmp/out.json"
	# The header's dump level has bit 1 too: zero pages always share
	# one stored page, as makedumpfile -d 1 does.
	detail=$(k info --json "$kd" 2>"$tmp/err" | jq -r .source.format_detail)
	if [[ $detail == *"dump level $((level | 1))" || $detail == *"dump level $((level | 1)),"* ]]; then
		ok "kdump --exclude $level: info says '$detail'"
	else
		not_ok "kdump --exclude $level: format_detail '$detail' lacks 'dump level $((level | 1))'"
		diag "$tmp/err"
	fi
	back=$tmp/back-$level.elf
	if k convert "$kd" --format elf -q -o "$back" 2>"$tmp/err"; then
		check_output "kdump --exclude $level, converted back to elf" "$back" "$level"
	else
		not_ok "convert of the kdump back to elf failed"
		diag "$tmp/err"
	fi
	rm -f "$kd" "$back"
done <<'EOF'
31 zero,cache,cache-private,user,free
2 cache
EOF

# ---- LiME and AVML: excluded pages are zeros in the range ----
for fmt in lime avml; do
	out=$tmp/out.$fmt
	if k convert "$fix" --format $fmt --exclude 31 --json -o "$out" >"$tmp/out.json" 2>"$tmp/err"; then
		check_counts "$fmt --exclude 31" "$tmp/out.json" 31 zero,cache,cache-private,user,free
		check "$fmt --exclude 31: info says $fmt" \
			[ "$(k info --json "$out" | jq -r .source.format)" = $fmt ]
		check_output "$fmt --exclude 31" "$out" 31
		# verify DUMP SOURCE: no note says the level, so without -d
		# the left-out pages differ; with -d 31 they are counted
		# apart, the same bytes.
		k verify --json "$out" "$fix" >"$tmp/v0.json" 2>"$tmp/err"
		rc=$?
		k verify --json -d 31 "$out" "$fix" >"$tmp/v31.json" 2>>"$tmp/err"
		rc31=$?
		# shellcheck disable=SC2016 # $d is jq's
		check "$fmt --exclude 31: verify with the source differs without -d (exit $rc), matches with -d 31 (exit $rc31), the same bytes left out" \
			jqe --argjson d "$(cat "$tmp/v0.json")" \
			'$d.ok == false and $d.source_bytes_differ > 0 and $d.exclude_level == 0 and
			 .ok and .source_bytes_differ == 0 and .exclude_level == 31 and
			 .source_bytes_excluded == $d.source_bytes_differ' "$tmp/v31.json"
		check "$fmt: verify exit statuses 3 and 0" [ "$rc $rc31" = "3 0" ]
	else
		not_ok "convert --format $fmt --exclude 31 failed"
		diag "$tmp/err"
	fi
	rm -f "$out"
done

# ---- --dry-run: the same counts, nothing written ----
for fmt in elf kdump lime avml; do
	dry=$tmp/dry.$fmt
	if k convert "$fix" --format "$fmt" --dry-run --json --exclude 31 -o "$dry" \
		>"$tmp/out.json" 2>"$tmp/err"; then
		check_counts "$fmt --dry-run --exclude 31" "$tmp/out.json" 31 \
			zero,cache,cache-private,user,free dry
	else
		not_ok "$fmt --dry-run --exclude 31 failed"
		diag "$tmp/err"
	fi
	check "$fmt --dry-run --exclude 31: no output written" [ ! -e "$dry" ]
done
if k dump "$fix" -n --json -d 2 -o "$tmp/dry.elf" >"$tmp/out.json" 2>"$tmp/err"; then
	check_counts "dump -n -d 2" "$tmp/out.json" 2 cache dry
else
	not_ok "dump -n -d 2 failed"
	diag "$tmp/err"
fi
check "dump -n -d 2: no output written" [ ! -e "$tmp/dry.elf" ]

# ---- mkpagemap.py --extra: more of the rules ----
CLASSES="$CLASSES_BASE
$CLASSES_EXTRA"
PROBES="$PROBES_BASE $PROBES_EXTRA"
fix=$tmp/pagemap-extra.elf
if python3 "$mkpagemap" "$fix" --extra 2>"$tmp/err" &&
	k cat --raw --phys --addr 0 --len $((NPFNS * PAGE)) "$fix" >"$tmp/src.img" 2>"$tmp/err" &&
	[ "$(wc -c <"$tmp/src.img")" = $((NPFNS * PAGE)) ]; then
	ok "mkpagemap.py --extra: written and read"
	check_probes "fixture --extra" "$fix" 0
	while read -r level names; do
		out=$tmp/extra-$level.elf
		if k convert "$fix" --format elf -d "$level" --json -o "$out" \
			>"$tmp/out.json" 2>"$tmp/err"; then
			check_counts "--extra -d $level" "$tmp/out.json" "$level" "$names"
			check_output "--extra elf -d $level" "$out" "$level"
		else
			not_ok "--extra: convert --format elf -d $level failed"
			diag "$tmp/err"
		fi
		rm -f "$out"
	done <<-'EOF'
		31 zero,cache,cache-private,user,free
		2 cache
		4 cache-private
		8 user
		16 free
		24 user,free
	EOF
else
	not_ok "mkpagemap.py --extra failed"
	diag "$tmp/err"
fi
CLASSES=$CLASSES_BASE PROBES=$PROBES_BASE fix=$tmp/pagemap.elf

# ---- Linux 7.3's layout: OFFSET(page.compound_info), PG_hwpoison 21 ----
# (mkpagemap.py --kernel 7.3 --extra: the same pages; tails carry the
# HugeTLB vmemmap mask, not the head's address; pfn 5000 has bit 20, now
# PG_mlocked, and is kept.)  Before 7.3 was known, --exclude refused
# the file (exit 4, "no OFFSET(page.compound_head)").
CLASSES="$CLASSES_BASE
$CLASSES_EXTRA"
PROBES="$PROBES_BASE $PROBES_EXTRA"
fix=$tmp/pagemap-7.3.elf
if python3 "$mkpagemap" "$fix" --extra --kernel 7.3 2>"$tmp/err" &&
	k cat --raw --phys --addr 0 --len $((NPFNS * PAGE)) "$fix" >"$tmp/src.img" 2>"$tmp/err" &&
	[ "$(wc -c <"$tmp/src.img")" = $((NPFNS * PAGE)) ]; then
	ok "mkpagemap.py --kernel 7.3: written and read"
	check "7.3 fixture: its VMCOREINFO has compound_info and PG_hwpoison 21, not compound_head" \
		jqe '.vmcoreinfo.lines["OFFSET(page.compound_info)"] == "8" and
			.vmcoreinfo.lines["NUMBER(PG_hwpoison)"] == "21" and
			(.vmcoreinfo.lines | has("OFFSET(page.compound_head)") | not) and
			.source.kernel_release == "7.3.0-synthetic"' \
		<(k info --json "$fix" 2>/dev/null)
	check_probes "fixture --kernel 7.3" "$fix" 0
	while read -r level names; do
		out=$tmp/7.3-$level.elf
		if k convert "$fix" --format elf -d "$level" --json -o "$out" \
			>"$tmp/out.json" 2>"$tmp/err"; then
			check_counts "--kernel 7.3 -d $level" "$tmp/out.json" "$level" "$names"
			check_output "--kernel 7.3 elf -d $level" "$out" "$level"
		else
			not_ok "--kernel 7.3: convert --format elf -d $level failed"
			diag "$tmp/err"
		fi
		rm -f "$out"
	done <<-'EOF'
		31 zero,cache,cache-private,user,free
		2 cache
		8 user
		16 free
	EOF
	if k convert "$fix" --format kdump -d 31 -q -o "$tmp/7.3.kdump" 2>"$tmp/err" &&
		k convert "$tmp/7.3.kdump" --format elf -q -o "$tmp/7.3-back.elf" 2>"$tmp/err"; then
		check_image "--kernel 7.3 kdump -d 31, read back" "$tmp/7.3-back.elf" 31
	else
		not_ok "--kernel 7.3: kdump -d 31 failed"
		diag "$tmp/err"
	fi
	rm -f "$tmp/7.3.kdump" "$tmp/7.3-back.elf"
else
	not_ok "mkpagemap.py --kernel 7.3 failed"
	diag "$tmp/err"
fi
CLASSES=$CLASSES_BASE PROBES=$PROBES_BASE fix=$tmp/pagemap.elf
k cat --raw --phys --addr 0 --len $((NPFNS * PAGE)) "$fix" >"$tmp/src.img" 2>/dev/null

# ---- errors ----
# refused WHAT STATUS PATTERN ARGS...: exit STATUS, one line of error
# (besides a usage error's "Try ... --help" hint) matching PATTERN, and
# no output ($tmp/x.*) left.
refused()
{
	local what=$1 want=$2 pat=$3 rc=0 lines
	shift 3
	rm -f "$tmp"/x.* "$tmp"/.x.*
	k "$@" >"$tmp/err.out" 2>"$tmp/err" || rc=$?
	lines=$(grep -vc "^Try 'kcoredump" "$tmp/err")
	if [ "$rc" = "$want" ] && ! crashed "$rc" "$tmp/err" && [ "$lines" = 1 ] &&
		grep -q -- "$pat" "$tmp/err" && [ ! -s "$tmp/err.out" ] &&
		[ -z "$(find "$tmp" -maxdepth 1 \( -name 'x.*' -o -name '.x.*' \))" ]; then
		ok "$what: exit $rc, $(head -n 1 "$tmp/err")"
	else
		not_ok "$what: exit $rc (want $want), $lines lines, want '$pat'"
		diag "$tmp/err"
		find "$tmp" -maxdepth 1 -name '*x.*' | sed 's/^/#   left: /' >&2
	fi
}
for bad in bogus 32 99 -1 'free,' ,free free,,user user,bogus 31x ''; do
	refused "--exclude '$bad' is a usage error" 2 "bad --exclude '$bad'" \
		convert "$fix" --format elf --exclude "$bad" -o "$tmp/x.elf"
done
refused "dump -d 32 is a usage error" 2 "bad --exclude '32'" \
	dump "$fix" -d 32 -o "$tmp/x.elf"
refused "verify -d without a SOURCE is a usage error" 2 "is for comparing with a SOURCE" \
	verify -d 31 "$fix"
refused "verify -d bogus is a usage error" 2 "bad --exclude 'bogus'" \
	verify -d bogus "$fix" "$fix"

# Unsupported (exit 4): not a kernel memory source.  (Only ELF: kdump and
# LiME refuse a process core's virtual-only segments first, exit 2.)
proc=$fixdir/process-x86_64.core
if [ -f "$proc" ]; then
	refused "process core dump --exclude 31" 4 "cannot exclude pages: not a kernel memory source" \
		dump "$proc" --exclude 31 -o "$tmp/x.elf"
	refused "process core convert -d free" 4 "cannot exclude pages: not a kernel memory source" \
		convert "$proc" --format elf -d free -o "$tmp/x.elf"
	# Level 1 needs no struct pages: the process core dumps.
	if k dump -q "$proc" --exclude zero -o "$tmp/y.elf" 2>"$tmp/err"; then
		ok "process core --exclude zero: dumped (nothing needs struct pages)"
	else
		not_ok "process core --exclude zero failed"
		diag "$tmp/err"
	fi
	rm -f "$tmp/y.elf"
else
	not_ok "no $proc (fixtures-generate)"
fi
# Unsupported (exit 4): VMCOREINFO without an entry the scan needs.
for key in 'SIZE(page)' 'OFFSET(page.flags)' 'OFFSET(page._mapcount)' \
	'OFFSET(page.compound_head)' 'SYMBOL(mem_section)' 'NUMBER(SECTION_SIZE_BITS)' \
	'NUMBER(MAX_PHYSMEM_BITS)' 'NUMBER(PG_lru)' 'NUMBER(PG_head_mask)'; do
	part=$tmp/no-$key.elf
	if ! python3 "$mkpagemap" "$part" --omit "$key" 2>"$tmp/err"; then
		not_ok "mkpagemap.py --omit $key failed"
		diag "$tmp/err"
		continue
	fi
	refused "VMCOREINFO without $key" 4 "cannot exclude pages: VMCOREINFO has no $key" \
		convert "$part" --format elf --exclude 31 -o "$tmp/x.elf"
	# ... and without it nothing needs struct pages at level 1.
	if [ "$key" = 'SIZE(page)' ]; then
		refused "VMCOREINFO without $key, --format kdump" 4 "VMCOREINFO has no $key" \
			convert "$part" --format kdump --exclude free -o "$tmp/x.kdump"
		rc=0
		k convert "$part" --format elf --exclude 1 -q -o "$tmp/y.elf" 2>"$tmp/err" || rc=$?
		check "VMCOREINFO without $key, --exclude 1: converted" [ $rc = 0 ]
		rm -f "$tmp/y.elf"
	fi
	rm -f "$part"
done
# The error as JSON: exit_status 4 and the missing key.
rc=0
python3 "$mkpagemap" "$tmp/nolru.elf" --omit 'NUMBER(PG_lru)'
k convert "$tmp/nolru.elf" --format elf --exclude 31 --json -o "$tmp/x.elf" >"$tmp/out.json" 2>/dev/null || rc=$?
# shellcheck disable=SC2016 # $rc is jq's
check "--json error: exit 4, exit_status 4, the missing key named" \
	jqe --argjson rc "$rc" '$rc == 4 and .error.exit_status == 4 and .error.kind == "unsupported" and
		(.error.message | contains("VMCOREINFO has no NUMBER(PG_lru)"))' "$tmp/out.json"
check "--json error: no output left" [ ! -e "$tmp/x.elf" ]
finish
