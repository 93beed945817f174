#!/bin/bash
# "kcoredump dump" round trips, for process-x86_64, sparse-1t and a core
# made on this machine:
#  - an ELF dump whose PT_LOAD bytes equal the source's at the same
#    addresses (read through kcore-read on both), sparse on disk, mode 0600,
#    and for the 1 TiB sparse-1t written in under 5 s;
#  - .elf.zst and .elf.xz dumps that "zstd -d"/"xz -d" decompress to a
#    plain ELF core (its final metadata in the trailer, as the .elf's: both
#    were hashed as they were written) identical to the .elf from the first
#    PT_LOAD to the trailer, with the same program headers, and equal byte
#    for byte to what "kcoredump extract" writes;
#  - a dump to a pipe, which carries its final metadata as a trailer
#    (LE64 length + "KCDTRL01", kcoredump(8)) that verify reads;
#  - an existing output is refused without --force (and left alone), and
#    replaced with it;
#  - a failed dump leaves neither the output nor a temporary ".NAME.*".
#   dump-roundtrip.sh KCOREDUMP KCORE_READ FIXDIR
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
kcoredump=$1 kread=$2 fixdir=$3
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# PT_LOADs of FILE as "vaddr memsz filesz offset" lines.
loads()
{
	"$kcoredump" info --json --no-holes --no-modules --segments-only "$1" |
		jq -r '.segments[] | select(.type == "LOAD") |
		       "\(.vaddr) \(.memsz) \(.filesz) \(.offset)"'
}

# same_memory SOURCE DUMP: the dump's PT_LOADs hold the source's bytes
# (first 256 KiB and last 64 KiB of each).
same_memory()
{
	local src=$1 dump=$2 vaddr memsz filesz off n bad=0 count=0
	while read -r vaddr memsz filesz off; do
		for part in head tail; do
			if [ $part = head ]; then
				n=$((memsz < 262144 ? memsz : 262144))
				a=$vaddr
			else
				n=$((memsz < 65536 ? memsz : 65536))
				a=$(printf '0x%x' $((vaddr + memsz - n)))
			fi
			[ "$n" -gt 0 ] || continue
			count=$((count + 1))
			if ! cmp -s <("$kread" "$src" --vaddr "$a" --len "$n") \
				<("$kread" "$dump" --vaddr "$a" --len "$n"); then
				echo "# $part of PT_LOAD at $vaddr ($n bytes at $a) differs"
				bad=1
			fi
		done
	done < <(loads "$dump")
	echo "# compared $count ranges"
	[ $bad = 0 ] && [ $count -gt 0 ]
}

first_load_offset()
{
	loads "$1" | awk '{ print $4; exit }'
}

# The image a stream decompresses to, without its trailer.
strip_trailer()
{
	local in=$1 out=$2 size len
	size=$(stat -c %s "$in")
	if [ "$(tail -c 8 "$in")" != KCDTRL01 ]; then
		echo "# no KCDTRL01 trailer"
		return 1
	fi
	len=$(tail -c 16 "$in" | head -c 8 | od -An -t u8 | tr -d ' ')
	head -c $((size - 16 - len)) "$in" >"$out"
}

phdrs_but_note()
{
	eu-readelf -l "$1" | awk '/^ +LOAD /'
}

roundtrip()
{
	local name=$1 src=$2 big=$3 d=$tmp/$1 t0 t1 ms alloc off
	mkdir -p "$d"

	t0=$(date +%s%N)
	if ! "$kcoredump" dump -q "$src" -o "$d/x.elf" 2>"$d/err"; then
		not_ok "$name: dump to .elf failed"
		diag "$d/err"
		return
	fi
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	ok "$name: dumped to .elf in $ms ms"
	if [ "$big" = yes ]; then
		check "$name: 1 TiB dump took $ms ms (< 5000)" [ $ms -lt 5000 ]
	fi
	check "$name: .elf mode is 0600" [ "$(stat -c %a "$d/x.elf")" = 600 ]
	alloc=$(($(stat -c %b "$d/x.elf") * $(stat -c %B "$d/x.elf")))
	if [ "$big" = yes ]; then
		check "$name: .elf is sparse ($alloc bytes allocated of $(stat -c %s "$d/x.elf"))" \
			[ $alloc -lt $((16 << 20)) ]
	else
		check "$name: .elf is sparse ($alloc bytes allocated of $(stat -c %s "$d/x.elf"))" \
			[ $alloc -lt "$(stat -c %s "$d/x.elf")" ]
	fi
	if same_memory "$src" "$d/x.elf" >"$d/cmp"; then
		ok "$name: PT_LOAD contents equal the source's ($(tail -n 1 "$d/cmp" | cut -c3-))"
	else
		not_ok "$name: PT_LOAD contents differ from the source's"
		cat "$d/cmp"
	fi
	off=$(first_load_offset "$d/x.elf")

	for c in zst xz; do
		local tool=zstd
		[ $c = xz ] && tool=xz
		if ! "$kcoredump" dump -q "$src" -o "$d/x.elf.$c" 2>"$d/err"; then
			not_ok "$name: dump to .elf.$c failed"
			diag "$d/err"
			continue
		fi
		check "$name: .elf.$c mode is 0600" [ "$(stat -c %a "$d/x.elf.$c")" = 600 ]
		if [ "$big" = yes ]; then
			# 1 TiB of zeros takes minutes to decompress: check
			# the first 4 MiB (headers, notes, first loads).
			local n=$((4 << 20))
			if cmp -s <($tool -d -c "$d/x.elf.$c" | head -c $n | tail -c +$((off + 1))) \
				<(head -c $n "$d/x.elf" | tail -c +$((off + 1))); then
				ok "$name: $tool -d output starts like the .elf (bytes $off..$n)"
			else
				not_ok "$name: $tool -d output differs from the .elf in its first $n bytes"
			fi
			continue
		fi
		if ! $tool -d -c "$d/x.elf.$c" >"$d/stream.$c" 2>"$d/err"; then
			not_ok "$name: $tool -d failed"
			diag "$d/err"
			continue
		fi
		# The same image kcoredump extract writes, byte for byte.
		if "$kcoredump" extract -q "$d/x.elf.$c" -o "$d/extract.$c" 2>"$d/err" &&
			cmp -s "$d/stream.$c" "$d/extract.$c"; then
			ok "$name: $tool -d gives exactly what kcoredump extract gives"
		else
			not_ok "$name: $tool -d and kcoredump extract differ"
			diag "$d/err"
		fi
		# A hashed file is written once, in order: the final metadata
		# follows the image in a trailer, in a compressed file as in
		# the .elf, so it decompresses to a plain ELF core like the
		# .elf (the two differ only in their metadata: command line,
		# times; so in the trailer's length).
		check "$name: $tool -d output ends with the trailer" \
			[ "$(tail -c 8 "$d/stream.$c")" = KCDTRL01 ]
		check "$name: $tool -d output verifies with the digests in its trailer" \
			bash -c "'$kcoredump' verify --json '$d/stream.$c' | jq -e '.ok and .digests == \"trailer\"' >/dev/null"
		local img_z img_e
		img_z=$(($(stat -c %s "$d/stream.$c") - $(trailer_len "$d/stream.$c")))
		img_e=$(($(stat -c %s "$d/x.elf") - $(trailer_len "$d/x.elf")))
		check "$name: $tool -d image has the .elf's size (before the trailers)" \
			[ "$img_z" = "$img_e" ]
		check "$name: $tool -d image equals the .elf from the first PT_LOAD ($off) to the trailer" \
			cmp -s <(head -c "$img_z" "$d/stream.$c" | tail -c +$((off + 1))) \
			<(head -c "$img_e" "$d/x.elf" | tail -c +$((off + 1)))
		check "$name: $tool -d image has the .elf's PT_LOAD headers" \
			cmp -s <(phdrs_but_note "$d/stream.$c") <(phdrs_but_note "$d/x.elf")
		if same_memory "$src" "$d/stream.$c" >"$d/cmp"; then
			ok "$name: $tool -d output reads back as the source's memory"
		else
			not_ok "$name: $tool -d output's memory differs from the source's"
			cat "$d/cmp"
		fi
	done
}

# A dump to a pipe cannot go back to its header: the final metadata
# follows the image as a trailer, and verify finds it there.
d=$tmp/pipe
mkdir "$d"
"$kcoredump" dump -q "$fixdir/process-x86_64.core" -o - | cat >"$d/p.elf"
check "pipe: the stream ends with the KCDTRL01 trailer" \
	[ "$(tail -c 8 "$d/p.elf")" = KCDTRL01 ]
check "pipe: the image before the trailer verifies" \
	bash -c "'$kcoredump' verify --json '$d/p.elf' | jq -e '.ok and .digests == \"trailer\"' >/dev/null"
if strip_trailer "$d/p.elf" "$d/image.elf" >"$d/cmp" &&
	same_memory "$fixdir/process-x86_64.core" "$d/image.elf" >"$d/cmp2"; then
	ok "pipe: the image reads back as the source's memory"
else
	not_ok "pipe: the image differs from the source"
	cat "$d/cmp" "$d/cmp2" 2>/dev/null
fi

roundtrip process-x86_64 "$fixdir/process-x86_64.core" no
roundtrip sparse-1t "$fixdir/sparse-1t.core" yes
mkdir "$tmp/crash"
if core=$(make_real_core "$tmp/crash"); then
	roundtrip real-core "$core" no
else
	skip "real core: this machine does not write cores to the working directory"
fi

# Replacing an existing output.
d=$tmp/force
mkdir "$d"
src=$fixdir/process-aarch64.core
echo "precious" >"$d/out.elf"
sum=$(sha256sum <"$d/out.elf")
rc=0
"$kcoredump" dump -q "$src" -o "$d/out.elf" 2>"$d/err" || rc=$?
check "dump onto an existing file without --force fails (exit $rc)" [ $rc -ne 0 ] && [ $rc -lt 124 ]
check "the existing file is unchanged" [ "$(sha256sum <"$d/out.elf")" = "$sum" ]
check "no temporary file is left after the refusal" \
	[ -z "$(find "$d" -name '.out.elf*' -print -quit)" ]
check "dump --force replaces it" "$kcoredump" dump -q --force "$src" -o "$d/out.elf"
check "the replacement is the dump" \
	cmp -s <("$kread" "$src" --vaddr 0xaaaac8a40000 --len 4096) \
	<("$kread" "$d/out.elf" --vaddr 0xaaaac8a40000 --len 4096)

# A process core keeps p_filesz < p_memsz where the kernel left file text
# out (gdb reads it from the files): such segments are not zero-filled.
d=$tmp/memsz
mkdir "$d"
"$kcoredump" dump -q "$fixdir/process-x86_64.core" -o "$d/p.elf"
sizes() { eu-readelf -l "$1" | awk '/^ +LOAD / { print $3, $5, $6 }'; }
check "process core: every PT_LOAD keeps its vaddr, p_filesz and p_memsz" \
	cmp -s <(sizes "$fixdir/process-x86_64.core") <(sizes "$d/p.elf")
check "process core: the source has segments with p_filesz < p_memsz" \
	bash -c "eu-readelf -l '$fixdir/process-x86_64.core' | awk '/^ +LOAD / && \$5 != \$6 { n++ } END { exit !n }'"
check "process core: the dump with memory-only tails verifies" \
	"$kcoredump" verify -q "$d/p.elf"

# --hash none: no digests recorded, the same bytes, and verify says so
# (exit 4 alone; with the source it compares content instead).
d=$tmp/nohash
mkdir "$d"
src=$fixdir/process-x86_64.core
"$kcoredump" dump -q "$src" -o "$d/h.elf"
"$kcoredump" dump -q --hash none "$src" -o "$d/n.elf"
"$kcoredump" dump -q --hash none -j "$src" -o "$d/n.elf.zst" >"$d/n.json"
check "--hash none: JSON summary has no digest" \
	jq -e '.segment_digest_root == null and .file_sha256 == null and .digests == "none" and ([.segments[].sha256] | all(. == null))' "$d/n.json"
check "--hash none: the metadata note says hash=none" \
	grep -qa '^hash=none$' "$d/n.elf"
check "--hash none: same memory as a hashed dump" \
	same_memory "$d/h.elf" "$d/n.elf"
for f in n.elf n.elf.zst; do
	rc=0
	"$kcoredump" verify -q "$d/$f" || rc=$?
	check "--hash none: verify $f alone exits 4 (nothing to check)" [ $rc = 4 ]
done
check "--hash none: verify n.elf against its source passes" \
	bash -c "'$kcoredump' verify --json '$d/n.elf' '$src' | jq -e '.ok and .has_digests == false and .source_bytes_differ == 0' >/dev/null"
rc=0
"$kcoredump" dump -q --hash md5 "$src" -o "$d/bad.elf" 2>"$d/err" || rc=$?
check "--hash md5 is a usage error (exit 2)" [ $rc = 2 ]

# Failed dumps leave nothing behind.
for bad in /nonexistent "$fixdir/bad-overlap.core" "$fixdir/bad-note-descsz.core"; do
	d=$tmp/fail.$(basename "$bad")
	mkdir "$d"
	for out in out.elf out.elf.zst out.elf.xz; do
		rc=0
		"$kcoredump" dump -q "$bad" -o "$d/$out" 2>"$d/err" || rc=$?
		if [ $rc = 0 ] || crashed $rc "$d/err"; then
			not_ok "dump of $(basename "$bad") to $out: exit $rc"
			diag "$d/err"
		elif [ -n "$(ls -A "$d" | grep -v '^err$' || true)" ]; then
			not_ok "dump of $(basename "$bad") to $out left files: $(ls -A "$d" | tr '\n' ' ')"
		else
			ok "dump of $(basename "$bad") to $out fails (exit $rc) and leaves no file"
		fi
	done
done
finish
