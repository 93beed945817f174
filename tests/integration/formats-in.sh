#!/bin/bash
# Every input format reads back the memory it was written from.
# tests/tools/mkformats.py writes one kernel image as ELF, kdump (and
# flattened), LiME and .zst/.xz, with expect.txt giving addresses and the
# sha256 of their bytes.  For each format: info names the format and lists
# the same physical RAM segments as the ELF; cat reads every expected
# range (physical, and virtual through the page tables where that is
# exact: in every kernel core, not in LiME);
# errors are one line with the right exit status; verify compares a
# kdump/LiME with the ELF.  With MAKEDUMPFILE=1 (the "oracle" test) the
# kdump, flattened and raw files are made by makedumpfile from the ELF
# instead, so a real writer's output is read.
#   formats-in.sh KCOREDUMP FORMATSDIR
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
kcoredump=$1 dir=$2
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

elf=$dir/mem.elf
if [ "${MAKEDUMPFILE:-0}" = 1 ]; then
	if ! command -v makedumpfile >/dev/null; then
		echo "1..0 # SKIP makedumpfile is not installed"
		exit 77
	fi
	# Debian's makedumpfile has no zstd (-z is ignored) and no snappy
	# (-p): zlib, lzo (RHEL's kdump default) and raw.
	makedumpfile -c -d 1 "$elf" "$tmp/mem.kdump" >/dev/null 2>&1 ||
		not_ok "makedumpfile -c -d 1 failed"
	makedumpfile -l -d 1 "$elf" "$tmp/mem-lzo.kdump" >/dev/null 2>&1 ||
		not_ok "makedumpfile -l -d 1 failed"
	makedumpfile -d 1 "$elf" "$tmp/mem-raw.kdump" >/dev/null 2>&1 ||
		not_ok "makedumpfile -d 1 failed"
	makedumpfile -F -c -d 1 "$elf" >"$tmp/mem.flat" 2>/dev/null ||
		not_ok "makedumpfile -F failed"
	kdumps=("$tmp/mem.kdump" "$tmp/mem-lzo.kdump" "$tmp/mem-raw.kdump" "$tmp/mem.flat")
	others=()
else
	kdumps=("$dir/mem.kdump" "$dir/mem.flat")
	others=("$dir/mem.lime" "$dir/mem.diskdump" "$dir/mem-pageoffset.kdump")
	for f in mem.elf.zst mem.elf.xz; do
		[ -f "$dir/$f" ] && others+=("$dir/$f")
	done
	# Our own seekable .zst, through dump.
	if "$kcoredump" dump -q --compress zstd -o "$tmp/dump.elf.zst" "$elf" >/dev/null 2>"$tmp/err"; then
		others+=("$tmp/dump.elf.zst")
	else
		not_ok "kcoredump dump to .zst failed"
		diag "$tmp/err"
	fi
fi

format_of() { "$kcoredump" info --json "$1" | jq -r .source.format; }
# Physical RAM segments as "paddr size" lines.
ram_of()
{
	"$kcoredump" info --json --no-holes "$1" |
		jq -r '.segments[] | select(.class == "ram") | "\(.paddr) \(.memsz)"'
}

ram_of "$elf" >"$tmp/ram.elf"
declare -A want_format=([mem.kdump]=kdump [mem-lzo.kdump]=kdump [mem-raw.kdump]=kdump
	[mem.flat]=flattened [mem.lime]=lime [mem.diskdump]=kdump [mem-pageoffset.kdump]=kdump [mem.elf.zst]=zstd-sequential
	[mem.elf.xz]=xz [dump.elf.zst]=zstd)
for f in "${kdumps[@]}" "${others[@]}"; do
	n=$(basename "$f")
	fmt=$(format_of "$f" 2>"$tmp/err") || true
	if [ "$fmt" = "${want_format[$n]}" ]; then
		ok "$n: info says format $fmt"
	else
		not_ok "$n: format '$fmt', expected ${want_format[$n]}"
		diag "$tmp/err"
	fi
	if ram_of "$f" >"$tmp/ram" && diff -u "$tmp/ram.elf" "$tmp/ram" >"$tmp/diff"; then
		ok "$n: the same $(wc -l <"$tmp/ram") RAM segments as the ELF"
	else
		not_ok "$n: RAM segments differ from the ELF's"
		diag "$tmp/diff"
	fi
done

# cat_check FILE NAME KIND ADDR LEN SHA: bytes or the expected error.
cat_check()
{
	local f=$1 name=$2 kind=$3 addr=$4 len=$5 sha=$6 n rc=0 args
	n=$(basename "$f")
	args=(cat --raw --addr "$addr" --len "$len")
	[ "$kind" = phys ] && args+=(--phys)
	"$kcoredump" "${args[@]}" "$f" >"$tmp/out" 2>"$tmp/err" || rc=$?
	local want_rc=0 want_msg=
	case $name in
	unmapped) want_rc=2 want_msg="not mapped in the kernel's page tables" ;;
	nonram) want_rc=2 want_msg="no segment holds physical" ;;
	esac
	# LiME has no VMCOREINFO; a diskdump's notes are not read.
	if [ "$kind" = virt ] && [[ $f == *.lime || $f == *.diskdump ]]; then
		want_rc=4 want_msg="cannot translate virtual address"
	fi
	if [ "$rc" != "$want_rc" ]; then
		not_ok "$n: cat $name ($kind $addr): exit $rc, expected $want_rc"
		diag "$tmp/err"
	elif [ "$rc" = 0 ]; then
		if [ "$(sha256sum <"$tmp/out" | cut -c1-64)" = "$sha" ]; then
			ok "$n: cat $name ($kind $addr, $len bytes) has the written bytes"
		else
			not_ok "$n: cat $name ($kind $addr) returned other bytes"
		fi
	elif [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "$want_msg" "$tmp/err"; then
		ok "$n: cat $name: exit $rc, $(cat "$tmp/err")"
	else
		not_ok "$n: cat $name: message lacks '$want_msg'"
		diag "$tmp/err"
	fi
}

while read -r name kind addr len sha; do
	for f in "$elf" "${kdumps[@]}" "${others[@]}"; do
		cat_check "$f" "$name" "$kind" "$addr" "$len" "$sha"
	done
done <"$dir/expect.txt"

# NUMBER(PAGE_OFFSET) gives a kdump's segments their direct-map addresses.
if "$kcoredump" info --json "$dir/mem-pageoffset.kdump" |
	jq -e '.source.physical_only == false and
		([.segments[] | select(.type == "LOAD")] | length == 2 and
		 all(.vaddr == ("0x" + ((.paddr | ltrimstr("0x") | ascii_downcase) as $p |
			"ffff888000000000" | .[0:(16 - ($p | length))] + $p))))' >/dev/null; then
	ok "mem-pageoffset.kdump: PT_LOAD vaddr = PAGE_OFFSET + paddr"
else
	not_ok "mem-pageoffset.kdump: segments lack direct-map addresses"
	"$kcoredump" info --json "$dir/mem-pageoffset.kdump" | jq -c '.segments' | diag
fi

# --symbol through VMCOREINFO and --json.
uts=$(awk '$1 == "uts" { print $3 }' "$dir/expect.txt")
for f in "$elf" "${kdumps[@]}"; do
	n=$(basename "$f")
	if out=$("$kcoredump" cat --json --symbol init_uts_ns --len 16 "$f") &&
		[ "$(jq -r .address <<<"$out")" = "$uts" ] &&
		[ "$(jq -r .symbol_from <<<"$out")" = VMCOREINFO ] &&
		[ "$(jq -r .hex <<<"$out")" = "$(printf Linux | od -An -tx1 | tr -d ' \n')0000000000000000000000" ]; then
		ok "$n: cat --symbol init_uts_ns --json reads 'Linux'"
	else
		not_ok "$n: cat --symbol init_uts_ns --json: $out"
	fi
done
rc=0
"$kcoredump" cat --symbol no_such_symbol "$elf" >/dev/null 2>"$tmp/err" || rc=$?
if [ $rc = 2 ] && grep -q "VMCOREINFO has no SYMBOL" "$tmp/err"; then
	ok "cat --symbol of an unknown symbol: exit 2"
else
	not_ok "cat --symbol no_such_symbol: exit $rc"
	diag "$tmp/err"
fi
"$kcoredump" cat --hex --phys --addr 0x1000 --len 48 "${kdumps[0]}" >"$tmp/hex"
if [ "$(head -c 17 "$tmp/hex")" = "0000000000001000 " ] && [ "$(tail -n 1 "$tmp/hex")" = 0000000000001030 ] &&
	[ "$(wc -l <"$tmp/hex")" = 4 ]; then
	ok "cat --hex prints address-labelled lines and the end address"
else
	not_ok "cat --hex output"
	diag "$tmp/hex"
fi

# info --json .source.format_detail: what each header says.
detail() { "$kcoredump" info --json "$1" | jq -r .source.format_detail; }
if [ "${MAKEDUMPFILE:-0}" = 1 ]; then
	declare -A want_detail=([mem.kdump]="header version 6, zlib pages, dump level 1"
		[mem-lzo.kdump]="header version 6, lzo pages, dump level 1"
		[mem-raw.kdump]="header version 6, raw pages, dump level 1")
else
	declare -A want_detail=([mem.lime]="version 1, 2 ranges")
fi
for f in "${kdumps[@]}" "${others[@]}"; do
	n=$(basename "$f")
	[ -n "${want_detail[$n]:-}" ] || continue
	got=$(detail "$f")
	[ "$got" = "${want_detail[$n]}" ] && ok "$n: format_detail '$got'" ||
		not_ok "$n: format_detail '$got', expected '${want_detail[$n]}'"
done
# DUMP_DH_COMPRESSED_INCOMPLETE (0x8): makedumpfile's mark of a dump it
# could not finish; info says it is not complete.
cp "${kdumps[0]}" "$tmp/incomplete.kdump"
status=$(od -An -tu4 -j424 -N4 "$tmp/incomplete.kdump" | tr -d ' ')
printf "$(printf '\\%03o' $(((status | 8) & 255)))" |
	dd of="$tmp/incomplete.kdump" bs=1 seek=424 conv=notrunc status=none
if [[ $(detail "$tmp/incomplete.kdump") == *"marked incomplete"* ]] &&
	"$kcoredump" info --json "$tmp/incomplete.kdump" |
	jq -e '.source.complete == false and .source.incomplete.origin == "kdump header"' > /dev/null; then
	ok "a kdump marked incomplete says so: $(detail "$tmp/incomplete.kdump")"
else
	not_ok "incomplete kdump: format_detail '$(detail "$tmp/incomplete.kdump")'"
fi

# verify: each kdump/LiME against the ELF, byte for byte by paddr; and
# the per-segment digests of the ELF's RAM segments equal theirs.
seg_digests()
{
	"$kcoredump" verify --json "$1" 2>/dev/null |
		jq -r '.segments[] | select(.paddr != null) | "\(.paddr) \(.size) \(.sha256)"' |
		sort
}
seg_digests "$elf" >"$tmp/d.elf" || true
for f in "${kdumps[@]}" "${others[@]}"; do
	n=$(basename "$f")
	case $n in *.zst | *.xz) continue ;; esac
	rc=0
	"$kcoredump" verify "$f" "$elf" >"$tmp/out" 2>&1 || rc=$?
	if [ $rc = 0 ]; then
		ok "$n: verify against the ELF: no byte differs"
	else
		not_ok "$n: verify against the ELF: exit $rc"
		diag "$tmp/out"
	fi
	seg_digests "$f" >"$tmp/d" || true
	if [ -s "$tmp/d" ] && join <(cut -d' ' -f1,3 "$tmp/d.elf") <(cut -d' ' -f1,3 "$tmp/d") |
		awk '$2 != $3 { bad = 1 } END { exit bad }' &&
		[ "$(wc -l <"$tmp/d")" = "$(grep -c . "$tmp/ram.elf")" ]; then
		ok "$n: verify's segment digests equal the ELF's"
	else
		not_ok "$n: verify's segment digests differ from the ELF's"
		diag "$tmp/d"
	fi
done

if [ "${MAKEDUMPFILE:-0}" != 1 ]; then
	# Broken page descriptors are found when the page is read.
	pa=$(cat "$dir/page-pfn.txt")
	for t in offset0:"offset 0x0" offset-past-eof:"past the end of the dump" \
		size-too-big:"has size 4097" bad-codec:"lzo page data is corrupt" \
		bad-snappy:"snappy page data is corrupt" raw-short:"has size 100"; do
		name=${t%%:*} msg=${t#*:}
		rc=0
		"$kcoredump" cat --raw --phys --addr "$pa" --len 16 "$dir/page-$name.kdump" >/dev/null 2>"$tmp/err" || rc=$?
		if [ $rc = 4 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "$msg" "$tmp/err"; then
			ok "page descriptor $name: exit 4, $(cat "$tmp/err")"
		else
			not_ok "page descriptor $name: exit $rc, expected 4 and '$msg'"
			diag "$tmp/err"
		fi
	done
	# A pipe is refused with a clear message.
	rc=0
	"$kcoredump" info /dev/stdin <"$dir/mem.kdump" >/dev/null 2>"$tmp/err" || rc=$?
	rc=0
	cat "$dir/mem.kdump" | "$kcoredump" info /dev/stdin >/dev/null 2>"$tmp/err" || rc=$?
	if [ $rc = 4 ] && grep -q "is a pipe" "$tmp/err"; then
		ok "a pipe as source: exit 4, $(cat "$tmp/err")"
	else
		not_ok "a pipe as source: exit $rc"
		diag "$tmp/err"
	fi
	# bench reads through the backends.
	for f in "${kdumps[@]}" "$dir/mem.lime"; do
		rc=0
		"$kcoredump" bench --json --time 0.2 --limit 1M --block-size 64K --threads 1,2 "$f" >"$tmp/out" 2>"$tmp/err" || rc=$?
		if [ $rc = 0 ] && jq -e . "$tmp/out" >/dev/null; then
			ok "$(basename "$f"): bench runs"
		else
			not_ok "$(basename "$f"): bench exit $rc"
			diag "$tmp/err"
		fi
	done
fi
finish
