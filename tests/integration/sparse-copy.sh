#!/bin/bash
# SPDX-License-Identifier: MIT
# The copy path (issue 30 item 4; src/lib/dump/dump.c): an ELF core in a
# regular file converted to a plain sparse ELF file goes through one small
# block on the calling thread instead of the ring of 4 MiB blocks.
#  - Its output is byte for byte the block pipeline's (KCOREDUMP_COPY_PATH=0)
#    with --hash none, with the default digests (XXH3-128 blocks and the
#    file's SHA-256: the copy path by default, its blocks in turn) and
#    with --hash sha256 (the pipeline by default, the copy path with
#    KCOREDUMP_COPY_PATH=1): for a core with
#    pattern data, allocated zero pages, holes, a segment not a page
#    multiple long and one with p_memsz > p_filesz, and for the same core
#    cut short in its last segment (unreadable ranges: exit 7, the same
#    summary, the same ranges in the note).  The wall clock and host are
#    fixed by the fixedhost shim, the paths by running in one name.
#  - Holes stay holes: the output allocates about its data, not its size.
#  - Memory: converting 48 MiB of data with --hash none -T 2 takes at most
#    12 MiB more peak RSS than kcoredump info of the same file (the ring of
#    six 4 MiB blocks took 24 MiB more).
#   sparse-copy.sh KCOREDUMP MKCORE FIXEDHOST_SO
set -uo pipefail
kcoredump=$(realpath "$1") mkcore=$(realpath "$2") shim=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

{
	echo "elf class=64 data=lsb machine=x86_64 type=core align=4096"
	echo "note prstatus pid=4242 signal=SIGSEGV rip=0x401136"
	echo "note prpsinfo state=R fname=copy args=\"./copy\" pid=4242"
	printf 'load vaddr=0x400000 flags=r\n\tdata 4K\nend\n'
	# 48 MiB of data: 42 MiB of pattern, 6 MiB of zero pages, in stripes.
	echo "load vaddr=0x7e0000000000 flags=rw"
	for _ in 1 2 3; do
		for ((s = 0; s < 32; s++)); do
			printf '\tdata 448K\n\tdata 64K zero\n'
		done
		printf '\thole 100M\n'
	done
	echo "end"
	# Not a page multiple, and zeros beyond p_filesz.
	printf 'load vaddr=0x7f0000000000 flags=rw memsz=0x300000\n\thole 1M\n\tdata 1M+100\nend\n'
	printf 'load vaddr=0x7f1000000000 flags=rw\n\tdata 3M\n\thole 5M\n\tdata 2M\nend\n'
} > "$tmp/core.spec"
if ! "$mkcore" "$tmp/core.spec" "$tmp/core" > "$tmp/mk.out" 2>&1; then
	not_ok "mkcore: $(head -c 300 "$tmp/mk.out")"
	finish
fi
# The same core cut 1 MiB + 1234 bytes into its last segment's data.
last=$("$kcoredump" info --json "$tmp/core" |
	jq -r '[.segments[] | select(.type == "LOAD")] | last | .offset') || last=
if [[ ! $last =~ ^(0x[0-9a-f]+|[0-9]+)$ ]]; then
	not_ok "the last segment's offset from info --json: '$last'"
	finish
fi
cp --sparse=always "$tmp/core" "$tmp/cut"
truncate -s $((last + (1 << 20) + 1234)) "$tmp/cut"

# conv DIR ENV SRC ARGS...: convert SRC to DIR/out.elf with the clock and
# host fixed, environment ENV ("-" for none); stderr to DIR/err, the exit
# status to DIR/rc.
conv() {
	local dir=$1 env=$2 src=$3
	shift 3
	mkdir -p "$dir"
	rm -f "$dir/out.elf"
	(
		cd "$dir" || exit 99
		[[ $env == - ]] || export "${env?}"
		LD_PRELOAD=$shim ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
			"$kcoredump" convert -q --format elf "$@" "$src" -o out.elf 2> err
	)
	echo $? > "$dir/rc"
}

# same WHAT A B: the two runs exited alike, said the same and wrote the
# same bytes.
same() {
	local what=$1 a=$2 b=$3
	if crashed "$(cat "$a/rc")" "$a/err" || crashed "$(cat "$b/rc")" "$b/err"; then
		not_ok "$what: crashed: $(head -c 300 "$a/err" "$b/err")"
	elif ! cmp -s "$a/rc" "$b/rc"; then
		not_ok "$what: exit $(cat "$a/rc") and $(cat "$b/rc"): $(head -c 300 "$a/err")"
	elif ! cmp -s "$a/err" "$b/err"; then
		not_ok "$what: the messages differ: $(diff "$a/err" "$b/err" | head -c 300)"
	elif [[ ! -f $a/out.elf ]] || ! cmp -s "$a/out.elf" "$b/out.elf"; then
		not_ok "$what: the outputs differ ($(cmp "$a/out.elf" "$b/out.elf" 2>&1 | head -c 200))"
	else
		ok "$what"
	fi
}

for src in core cut; do
	want=0
	[[ $src == cut ]] && want=7
	conv "$tmp/$src-none" - "$tmp/$src" --hash none
	conv "$tmp/$src-none-rw" KCOREDUMP_COPY_PATH=0 "$tmp/$src" --hash none
	same "$src, --hash none: copy path = block pipeline" "$tmp/$src-none" "$tmp/$src-none-rw"
	conv "$tmp/$src-def" - "$tmp/$src"
	conv "$tmp/$src-def-rw" KCOREDUMP_COPY_PATH=0 "$tmp/$src"
	same "$src, default digests: copy path = block pipeline" "$tmp/$src-def" "$tmp/$src-def-rw"
	conv "$tmp/$src-sha" - "$tmp/$src" --hash sha256
	conv "$tmp/$src-sha-copy" KCOREDUMP_COPY_PATH=1 "$tmp/$src" --hash sha256
	same "$src, --hash sha256: copy path = block pipeline" "$tmp/$src-sha-copy" "$tmp/$src-sha"
	rc=$(cat "$tmp/$src-none/rc")
	if [[ $rc == "$want" ]]; then
		ok "$src: exit $want"
	else
		not_ok "$src: exit $rc, not $want: $(head -c 300 "$tmp/$src-none/err")"
	fi
done
# The copy path's file SHA-256 (its blocks in turn, holes as zeros on the
# hashing thread, long ones handed over as the copy passes them):
# sha256sum's, for the whole core, the cut one (whose header is rewritten
# at the end: read back) and one whose data holds 40 MiB of zero pages
# (no hole in the source, one in the output) between pattern data.
printf 'load vaddr=0x400000 flags=rw\n\tdata 3M+8K\n\tdata 40M zero\n\tdata 1M\nend\n' > "$tmp/zeros.spec"
"$mkcore" "$tmp/zeros.spec" "$tmp/zeros" > "$tmp/mk.out" 2>&1 ||
	not_ok "mkcore zeros: $(head -c 300 "$tmp/mk.out")"
for src in core cut zeros; do
	rm -f "$tmp/$src-sum.elf"
	"$kcoredump" convert -q --json --format elf --file-sha256 "$tmp/$src" \
		-o "$tmp/$src-sum.elf" > "$tmp/$src-sum.json" 2> "$tmp/$src-sum.err"
	got=$(jq -r .file_sha256 "$tmp/$src-sum.json" 2> /dev/null)
	want=$(sha256sum "$tmp/$src-sum.elf" 2> /dev/null | cut -d' ' -f1)
	if [[ -n $want && $got == "$want" ]]; then
		ok "$src: the copy path's file_sha256 is sha256sum's"
	else
		not_ok "$src: file_sha256 '$got', sha256sum '$want': $(head -c 300 "$tmp/$src-sum.err")"
	fi
done
if [[ -f $tmp/cut-none/out.elf ]] &&
	"$kcoredump" info "$tmp/cut-none/out.elf" > "$tmp/info.txt" 2>&1 &&
	grep -q "incomplete: .* bytes in 1 range" "$tmp/info.txt"; then
	ok "cut: the output records its unreadable range"
else
	not_ok "cut: info of the output: $(grep -i incompl "$tmp/info.txt" | head -c 300)"
fi

# Holes stay holes: 48 MiB + 4196 bytes of pattern data, plus headers.
f=$tmp/core-none/out.elf
if [[ -f $f ]]; then
	alloc=$(($(stat -c %b "$f") * $(stat -c %B "$f")))
	data=$(((42 + 1 + 5) * 1048576 + 4096 + 100))
	if ((alloc >= data && alloc <= data + 1048576)); then
		ok "the output allocates its data: $alloc bytes for $data"
	else
		not_ok "the output allocates $alloc bytes for $data of data"
	fi
else
	not_ok "no output to measure"
fi

# Peak RSS against info's, in KiB (the process' own libraries and heap).
if [[ -x /usr/bin/time ]]; then
	/usr/bin/time -o "$tmp/rss0" -f %M "$kcoredump" info "$tmp/core" > /dev/null 2>&1
	rm -f "$tmp/rss.elf"
	/usr/bin/time -o "$tmp/rss1" -f %M "$kcoredump" convert -q -T 2 --format elf \
		--hash none "$tmp/core" -o "$tmp/rss.elf" > /dev/null 2> "$tmp/rss.err"
	r0=$(tail -n 1 "$tmp/rss0") r1=$(tail -n 1 "$tmp/rss1")
	if [[ ! $r0 =~ ^[0-9]+$ || ! $r1 =~ ^[0-9]+$ ]]; then
		not_ok "peak RSS not measured: '$r0' '$r1' $(head -c 200 "$tmp/rss.err")"
	elif ((r1 - r0 <= 12 * 1024)); then
		ok "peak RSS: convert $r1 KiB, info $r0 KiB"
	else
		not_ok "peak RSS: convert $r1 KiB, info $r0 KiB: more than 12 MiB above"
	fi
else
	skip "peak RSS: /usr/bin/time (package time) is not installed"
fi
finish
