#!/bin/bash
# SPDX-License-Identifier: MIT
# The time map (issue 51): our note and the record hold, for each cell of
# each segment that was read, when it was read; `info --read-time` and
# `cat -v`/`cat --json` answer for one address, virtual or physical; the
# cells do not depend on the read path (the pipeline, the copy path) nor
# on the block size; a LiME image (no note) and a file without our note
# say the time is not known.
#   read-time.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$(readlink -f "$1") fixdir=$(readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
if ! command -v jq > /dev/null; then
	echo "1..0 # SKIP jq is not installed"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
k() { "$kcoredump" "$@"; }
jqe() { jq -e "$@" > /dev/null 2>&1; }
src=$fixdir/kcore-x86_64.core
cd "$tmp" || exit 1

k dump -q "$src" -o a.elf --record a.json 2> err
rc=$?
check "dump --record exits 0 ($rc: $(head -c 200 err))" [ "$rc" = 0 ]
check "record: a time map of cells, each read (start <= end)" \
	jqe '.read.time_map.cells | length > 0 and all(.[]; .[3] <= .[4])' a.json
check "record: the grain is a power of two of at least 4 MiB" \
	jqe '.read.time_map.grain as $g | $g >= 4194304 and ([range(22; 63)] | map(pow(2; .)) | index($g) != null)' a.json
check "record: no cell ends after the read" \
	jqe '(.read.seconds * 1000000 + 1000) as $t | all(.read.time_map.cells[]; .[4] <= $t)' a.json
check "record: cells in segment order, each inside its segment" \
	jqe '.segments as $s | .read.time_map.cells as $c | ([$c[] | [.[0], .[1]]] == ([$c[] | [.[0], .[1]]] | sort)) and all($c[]; .[1] + .[2] <= $s[.[0]].size)' a.json
k info --json a.elf > info.json 2> err
check "info --json: the note's read_time lines are the record's cells" \
	jqe --slurpfile r a.json '[.notes[] | select(.metadata) | .metadata.read_time[] | [.segment, .start_us, .end_us]] == [$r[0].read.time_map.cells[] | [.[0], .[3], .[4]]]' info.json
k info a.elf > info.txt 2>&1
n=$(jq '.read.time_map.cells | length' a.json)
check "info: one line sums the time map up ($n cells)" grep -q "read_time  *$n cells read over" info.txt

# An address in the second segment's first cell.
va=$(jq -r '.segments[1].vaddr' a.json)
addr=$(printf '0x%x' $((va + 0x1000)))
k info --read-time "$addr" a.elf > when.txt 2> err
rc=$?
check "info --read-time $addr exits 0 ($rc)" [ "$rc" = 0 ]
check "info --read-time: segment 1, offset 0x1000 ($(head -c 300 when.txt))" \
	grep -q "^$addr (virtual) was read .* segment 1, offset 0x1000 " when.txt
k info --json --read-time "$addr" a.elf > when.json 2> err
check "info --json --read-time: the first cell of segment 1, its times" \
	jqe --slurpfile r a.json '.read_time.known and .read_time.segment == 1 and .read_time.cell_offset == "0x0" and ([.read_time.start_us, .read_time.end_us] == ($r[0].read.time_map.cells | map(select(.[0] == 1 and .[1] == 0)) | .[0][3:5]))' when.json
k cat --json -a "$addr" -l 8 a.elf > cat.json 2> err
check "cat --json: read_time as info gives it" \
	jqe --slurpfile w when.json '.read_time == $w[0].read_time' cat.json
k cat -v -x -a "$addr" -l 8 a.elf > /dev/null 2> cat.err
check "cat -v: says when the address was read" grep -q "^kcoredump cat: $addr (virtual) was read " cat.err
k info --json --read-time 0x10 a.elf > none.json 2> err
check "info --read-time: an address no segment holds is not known" \
	jqe '.read_time.known == false and (.read_time.why | test("no segment"))' none.json

# The kernel image's segment shares RAM's bytes: its cells have their times.
check "record: every segment with data has cells" \
	jqe '.read.time_map.cells as $c | all(.segments | to_entries[] | select(.value.data_bytes > 0); .key as $i | any($c[]; .[0] == $i))' a.json

# Physical: a kdump (its segments have physical addresses).
k dump -q "$src" --format kdump -o a.kdump 2> err
k info --read-time 0x101000 a.kdump > kd.txt 2> err
check "kdump: info --read-time 0x101000 is physical ($(head -c 200 kd.txt))" \
	grep -q "^0x101000 (physical) was read " kd.txt
k cat -v -p -a 0x101000 -l 8 -x a.kdump > /dev/null 2> kd.err
check "kdump: cat -v --phys says when it was read" grep -q "(physical) was read" kd.err

# The cells depend on the plan only.
KCOREDUMP_COPY_PATH=0 k dump -q "$src" --hash none -o p.elf --record p.json 2> err
KCOREDUMP_COPY_PATH=1 k dump -q "$src" --hash none -o c.elf --record c.json 2> err
k dump -q "$src" --block-size 1M -o b.elf --record b.json 2> err
cells() { jq -c '[.read.time_map.grain, (.read.time_map.cells[] | .[0:3])]' "$1" 2> /dev/null; }
check "the same cells on the pipeline, the copy path and 1 MiB blocks" \
	[ -n "$(cells p.json)" ] && [ "$(cells p.json)" = "$(cells c.json)" ] &&
	[ "$(cells p.json)" = "$(cells b.json)" ] && [ "$(cells p.json)" = "$(cells a.json)" ]

# --smear-check: its totals in the note too.
k dump -q "$src" --smear-check -o s.elf --record s.json 2> err
k info --json s.elf > s-info.json 2> err
check "--smear-check: the note's smear_pages and smear_pages_changed are the record's" \
	jqe --slurpfile r s.json '[.notes[] | select(.metadata) | .metadata | [.smear_pages, .smear_pages_changed]] == [[$r[0].smear.pages, $r[0].smear.pages_changed]] and $r[0].smear.pages > 0' s-info.json
check "no --smear-check: no smear lines in the note" \
	jqe '[.notes[] | select(.metadata) | .metadata | has("smear_pages")] == [false]' info.json

# No note: not known, and why.
k dump -q "$src" --format lime -o a.lime 2> err
k info --json --read-time 0x101000 a.lime > lime.json 2> err
check "lime: no note, so not known" \
	jqe '.read_time.known == false and (.read_time.why | test("no kcoredump metadata note"))' lime.json
k info --read-time 0x101000 "$src" > old.txt 2> err
check "a source without our note: not known" grep -q "read time not known" old.txt

# Many segments: one cell per segment at most, the grain grown to fit.
k dump -q "$fixdir/pn-xnum.core" -o x.elf --record x.json 2> err
rc=$?
check "pn-xnum: dump exits 0 ($rc: $(head -c 200 err))" [ "$rc" = 0 ]
check "pn-xnum: at most one cell per segment" \
	jqe '(.read.time_map.cells | length) <= (.segments | length) and (.read.time_map.cells | map(.[0]) | unique | length) == (.read.time_map.cells | length)' x.json

# --read-order: a file is read in address order unless asked;
# volatile-first reads the kernel image first (in the RAM segment that
# holds it, at its physical address) and writes the same dump.
check "a file source: address order, no phase read first" \
	jqe '.read.order == "address" and .read.phases == []' a.json
k dump -q "$src" --read-order volatile-first -o v.elf --record v.json 2> err
rc=$?
check "--read-order volatile-first exits 0 ($rc: $(head -c 200 err))" [ "$rc" = 0 ]
check "record: the image read first, 52 MiB of RAM at 0x2f000000" \
	jqe '.read.order == "volatile-first" and .read.phases[0].what == "image" and .read.phases[0].length == 54525952 and (.segments[.read.phases[0].segment] | .class == "ram" and (.paddr | ltrimstr("0x") | explode | length) > 0)' v.json
check "record: every cell apart from them (and the image's copy) read after" \
	jqe '.segments as $s | .read.phases as $p | ($p | map(.end_us) | max) as $e | [.read.time_map.cells[] | select(. as $c | $s[$c[0]].class != "text" and all($p[]; $c[0] != .segment or $c[1] + $c[2] <= .offset or $c[1] >= .offset + .length)) | .[3]] | length > 3 and all(. >= $e - 1)' v.json
check "the same dump in both orders (segment digest root)" \
	jqe --slurpfile a a.json '.output.segment_digest_root == $a[0].output.segment_digest_root' v.json
k info --json v.elf > v-info.json 2> err
check "info --json: read_order and the read_phase lines" \
	jqe '[.notes[] | select(.metadata) | .metadata | [.read_order, .read_phase[0].what]] == [["volatile-first", "image"]]' v-info.json
k info v.elf > v-info.txt 2>&1
check "info: the phases" grep -q "read_phase  *what=image segment=" v-info.txt
k dump -q "$src" --read-order sideways -o w.elf 2> err
rc=$?
check "--read-order sideways: a usage error ($rc)" \
	[ "$rc" = 2 ] && grep -q "not address or volatile-first" err

# verify --live: only a dump of this boot's live kernel.
k verify --live a.elf > live.out 2> live.err
rc=$?
check "verify --live of a file's dump: refused, exit 4 ($rc), one line" \
	[ "$rc" = 4 ] && [ "$(wc -l < live.err)" = 1 ] && grep -q "a.elf.*no boot ID" live.err
cp --sparse=always a.elf b.elf
python3 - b.elf << 'PY'
import os, sys
# The note and the trailer with the final metadata: every copy.
fd, off, n = os.open(sys.argv[1], os.O_RDWR), 0, 0
while True:
    try:
        off = os.lseek(fd, off, os.SEEK_DATA)
    except OSError:
        break
    end = os.lseek(fd, off, os.SEEK_HOLE)
    data = os.pread(fd, min(end - off, 64 << 20), off)
    at = data.find(b"\nread_order=address\n")
    while at >= 0:
        os.pwrite(fd, b"\nboot_id=0123456789\n", off + at)
        n += 1
        at = data.find(b"\nread_order=address\n", at + 1)
    off = end
assert n > 0
PY
k verify --live b.elf > live.out 2> live.err
rc=$?
check "verify --live of another boot's dump: refused, exit 4 ($rc), one line" \
	[ "$rc" = 4 ] && [ "$(wc -l < live.err)" = 1 ] && grep -q "b.elf.*another boot (boot ID 0123456789" live.err
k verify --live a.elf "$src" > /dev/null 2> err
rc=$?
check "verify --live with a SOURCE: a usage error ($rc)" [ "$rc" = 2 ]
finish
