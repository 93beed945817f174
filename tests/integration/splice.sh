#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 40: the splice path.  With --hash none into a pipe, from an ELF
# file, the bytes go from the source to the pipe by splice(2), never
# through kcoredump's memory (dump-splice.c).  Its output must be the
# buffered paths' byte for byte (KCOREDUMP_SPLICE=0), for LiME and ELF,
# into stdout's pipe and into a FIFO, also with a segment that shares
# another's bytes (the kernel image inside RAM: those bytes are read);
# stats.bytes_spliced says it was taken (and 0 when it was not).  A source that fails to read part-way
# (a FUSE file that returns EIO for a damaged frame) makes the splice
# fail: the rest goes through the buffer, the unreadable pages are
# zeros, recorded, and the dump exits "incomplete" (7), as without splice.
#   splice.sh KCOREDUMP FIXTURES
set -uo pipefail
kcoredump=$1 fix=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
for tool in jq cmp mkfifo; do
	command -v "$tool" > /dev/null || {
		echo "1..0 # SKIP $tool is not installed"
		exit 77
	}
done
tmp=$(mktemp -d)
mnt=$tmp/mnt
mkdir "$mnt"
trap 'fusermount3 -u "$mnt" 2>/dev/null; rm -rf "$tmp"' EXIT

# NAME SPLICE SOURCE ARGS...: a dump into a FIFO (--special-output),
# its reader cat: $tmp/NAME.out, .json, .err; prints the exit status.
to_fifo() {
	local name=$1 sp=$2 src=$3 st
	shift 3
	rm -f "$tmp/fifo"
	mkfifo "$tmp/fifo"
	cat "$tmp/fifo" > "$tmp/$name.out" &
	local reader=$!
	KCOREDUMP_SPLICE=$sp timeout 120 "$kcoredump" convert -q --json \
		--hash none --special-output "$@" "$src" -o "$tmp/fifo" \
		> "$tmp/$name.json" 2> "$tmp/$name.err"
	st=$?
	wait "$reader"
	echo "$st"
}

spliced() { jq -r .stats.bytes_spliced "$tmp/$1.json" 2> /dev/null; }

# same A B: LiME files equal; ELF files with equal program headers and
# equal bytes in every PT_LOAD (their metadata says when and how each
# was written, so the notes and trailers differ).
same() {
	python3 - "$1" "$2" << 'PY'
import struct, sys
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
if a[:4] != b"\x7fELF":
    sys.exit(a != b)
def loads(d):
    phoff, = struct.unpack_from("<Q", d, 32)
    phentsize, phnum = struct.unpack_from("<HH", d, 54)
    out = []
    for i in range(phnum):
        t, _, off, va, pa, fsz, msz = struct.unpack_from("<IIQQQQQ", d, phoff + i * phentsize)
        if t == 1:
            out.append((va, pa, fsz, msz, d[off:off + fsz]))
    return out
la, lb = loads(a), loads(b)
if not la or la != lb:
    print(f"# {len(la)} and {len(lb)} loads; differ", file=sys.stderr)
    sys.exit(1)
PY
}

for spec in "lime vmcore-twocopies.core --format lime" \
	"elf process-x86_64.core --format elf" \
	"elf-shared vmcore-twocopies.core --format elf"; do
	read -r name src args <<< "$spec"
	# shellcheck disable=SC2086 # args are words
	{
		a=$(to_fifo "$name-fifo" 1 "$fix/$src" $args)
		b=$(to_fifo "$name-fifo-0" 0 "$fix/$src" $args)
	}
	check "$name into a FIFO: exit 0 both ways ($a, $b)" [ "$a" = 0 ] && [ "$b" = 0 ]
	check "$name into a FIFO: spliced ($(spliced "$name-fifo") bytes), and not with KCOREDUMP_SPLICE=0 ($(spliced "$name-fifo-0"))" \
		[ "$(spliced "$name-fifo")" -gt 0 ] && [ "$(spliced "$name-fifo-0")" = 0 ]
	check "$name into a FIFO: the same bytes both ways" \
		same "$tmp/$name-fifo.out" "$tmp/$name-fifo-0.out"
	check "$name into a FIFO: the same bytes read both ways" \
		[ "$(jq .stats.bytes_read "$tmp/$name-fifo.json")" = "$(jq .stats.bytes_read "$tmp/$name-fifo-0.json")" ]
	check "$name into a FIFO: kcoredump info opens it" \
		bash -c '"$0" info --no-modules "$1" > /dev/null' "$kcoredump" "$tmp/$name-fifo.out"
	# Into stdout's pipe: --json is not asked for (stdout is the dump).
	for sp in 1 0; do
		# shellcheck disable=SC2086
		KCOREDUMP_SPLICE=$sp timeout 120 "$kcoredump" convert -q \
			--hash none $args "$fix/$src" -o - 2> "$tmp/$name-pipe-$sp.err" |
			cat > "$tmp/$name-pipe-$sp.out"
		echo "${PIPESTATUS[0]}" > "$tmp/$name-pipe-$sp.st"
	done
	check "$name into stdout's pipe: exit 0 both ways" \
		[ "$(cat "$tmp/$name-pipe-1.st")" = 0 ] && [ "$(cat "$tmp/$name-pipe-0.st")" = 0 ]
	check "$name into stdout's pipe: the FIFO's bytes both ways" \
		same "$tmp/$name-pipe-1.out" "$tmp/$name-fifo-0.out" &&
		same "$tmp/$name-pipe-0.out" "$tmp/$name-fifo-0.out"
done

# Into a pipe of 64 KiB (the default), the splice path asks for 1 MiB:
# its reader sees the size once the dump is in.
sz=$(timeout 120 "$kcoredump" convert -q --hash none --format lime \
	"$fix/vmcore-twocopies.core" -o - 2> /dev/null |
	python3 -c 'import fcntl, sys; sys.stdin.buffer.read(); print(fcntl.fcntl(0, 1032))')
check "the output pipe grew to 1 MiB ($sz bytes)" [ "${sz:-0}" -ge 1048576 ]

# Unreadable part-way: a damaged zstd frame behind a FUSE file.
if [ ! -e /dev/fuse ] || ! command -v fusermount3 > /dev/null || ! command -v zstd > /dev/null; then
	skip "a read error during the splice: no /dev/fuse, fusermount3 or zstd"
	finish
fi
"$kcoredump" convert -q "$fix/vmcore-twocopies.core" --format elf -o "$tmp/e.zst" --frame-size 4K
python3 - "$tmp/e.zst" "$tmp/bad.zst" << 'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
n, desc, magic = struct.unpack("<IBI", d[-9:])
esize = 12 if desc & 0x80 else 8
tstart = len(d) - (8 + n * esize + 9)
ents = [struct.unpack_from("<II", d, tstart + 8 + i * esize) for i in range(n)]
at, frames = 0, []
for c, u in ents:
    if u:
        frames.append((at, c))
    at += c
at, c = frames[len(frames) // 2]  # a frame in the middle of the data
for k in range(at + 6, at + c - 4):
    d[k] ^= 0x5A
open(sys.argv[2], "wb").write(d)
PY
"$kcoredump" mount --no-prefetch "$tmp/bad.zst" "$mnt"
check "mounted" mountpoint -q "$mnt"
a=$(to_fifo eio "" "$mnt/vmcore" --format lime)
b=$(to_fifo eio-0 0 "$mnt/vmcore" --format lime)
check "EIO: exit 7 (incomplete) both ways ($a, $b)" [ "$a" = 7 ] && [ "$b" = 7 ]
check "EIO: spliced ($(spliced eio) bytes) around the error" [ "$(spliced eio)" -gt 0 ]
check "EIO: the same bytes both ways" cmp "$tmp/eio.out" "$tmp/eio-0.out"
check "EIO: the same unreadable ranges both ways: $(jq -c '.read_errors | map([.offset, .length])' "$tmp/eio.json")" \
	[ "$(jq -c '.read_errors | map([.offset, .length])' "$tmp/eio.json")" = \
		"$(jq -c '.read_errors | map([.offset, .length])' "$tmp/eio-0.json")" ] &&
	[ "$(jq '.read_errors | length' "$tmp/eio.json")" -gt 0 ] &&
	[ "$(jq .complete "$tmp/eio.json")" = false ]
fusermount3 -u "$mnt"
finish
