#!/bin/bash
# SPDX-License-Identifier: MIT
# Complete or say so, through the command line: a kdump whose page
# descriptors for 3 pages were never written (offset 0, as makedumpfile
# leaves them when it stops early) is a source with 12 KiB that cannot be
# read.  Every command that writes a dump of it (dump and convert, to ELF
# sparse, .zst and through a pipe, kdump and flattened kdump, LiME, AVML)
# then:
#  - exits 7 (kcoredump(8) EXIT STATUS), says INCOMPLETE in its summary,
#    on stderr with -q, and "complete": false with the range in --json;
#  - records it where the format has room: kcoredump info shows
#    "incomplete: 12288 bytes in 1 range" (text and --json), verify says
#    INCOMPLETE and exits 7 although every digest matches, an ELF has
#    DUMP_ELF_INCOMPLETE in e_flags (not through a pipe), a kdump the
#    header's incomplete status (also flattened);
#  - a dump of that dump is incomplete too; a complete dump exits 0.
#   incomplete.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
k() { "$kcoredump" "$@"; }

# The source: a raw-page kdump of the twocopies fixture, 3 descriptors cut.
k convert -q --format kdump --codec none "$fixdir/vmcore-twocopies.core" -o "$tmp/good.kdump" ||
	{ not_ok "kdump of the fixture"; finish; }
python3 - "$tmp/good.kdump" "$tmp/src.kdump" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
bs, sub, bmb = struct.unpack_from("<iiI", d, 428)
desc = (1 + sub) * bs + bmb * bs
for i in range(10, 13):
    struct.pack_into("<Q", d, desc + 24 * i, 0)
open(sys.argv[2], "wb").write(d)
PY
src=$tmp/src.kdump

# e_flags of an ELF file, status of a (flattened) kdump file.
eflags() { od -An -tu4 -j48 -N4 "$1" | tr -d ' '; }
kstatus() {
	python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
if d[:12] == b"makedumpfile":  # the record of the status word is last
    pos, out = 4096, bytearray(464)
    while True:
        off, size = struct.unpack_from(">qq", d, pos)
        if off == -1:
            break
        for i in range(size):
            if off + i < 464:
                out[off + i] = d[pos + 16 + i]
        pos += 16 + size
    d = bytes(out)
print(struct.unpack_from("<I", d, 424)[0])
PY
}

# NAME FORMAT-ARGS...: convert src to NAME (through a pipe for *-pipe).
write() {
	local name=$1 rc=0
	shift
	if [[ $name == *-pipe ]]; then
		k convert "$@" "$src" -o - 2> "$tmp/$name.err" > "$tmp/$name" || rc=$?
		mv "$tmp/$name.err" "$tmp/$name.txt"
	else
		k convert "$@" "$src" -o "$tmp/$name" > "$tmp/$name.txt" 2>&1 || rc=$?
	fi
	echo $rc
}

for c in "elf --format elf" "elf.zst --format elf" "elf-pipe --format elf" \
	"kdump --format kdump" "kdump-pipe --format kdump" "lime --format lime" \
	"avml --format avml"; do
	set -- $c
	name=$1
	shift
	rc=$(write "$name" "$@")
	if [[ $rc == 7 ]] && grep -q "INCOMPLETE: *12288 bytes (12.0 KiB) in 1 range could not be read" "$tmp/$name.txt"; then
		ok "convert to $name: exit 7, the summary says INCOMPLETE"
	else
		not_ok "convert to $name: exit $rc, $(head -c 300 "$tmp/$name.txt")"
	fi
	case $name in lime | avml) continue ;; esac
	f=$tmp/$name
	[[ $name == elf.zst ]] && { zstd -q -d "$f" -o "$tmp/unz.elf"; f=$tmp/unz.elf; }
	out=$(k info "$tmp/$name" 2>&1)
	if grep -q "incomplete: 12288 bytes in 1 range could not be read" <<< "$out" &&
		k info --json "$tmp/$name" | jq -e '.source.complete == false and
			.source.incomplete.unreadable_bytes == 12288 and
			.source.incomplete.unreadable_ranges == 1' > /dev/null; then
		ok "$name: info says incomplete: 12288 bytes in 1 range (text and JSON)"
	else
		not_ok "$name: info: $(grep -i complete <<< "$out")"
	fi
	rc=0
	out=$(k verify "$tmp/$name" 2>&1) || rc=$?
	if [[ $rc == 7 ]] && grep -q "INCOMPLETE" <<< "$out" &&
		{ k verify --json "$tmp/$name" || true; } | jq -e '.digests_match and (.ok | not) and
			.complete == false and .incomplete.unreadable_bytes == 12288' > /dev/null; then
		ok "$name: verify: the digests match, INCOMPLETE, exit 7"
	else
		not_ok "$name: verify exit $rc: $(head -c 300 <<< "$out")"
	fi
	case $name in
	elf | elf.zst)
		[[ $(($(eflags "$f") & 1)) == 1 ]] && ok "$name: e_flags has DUMP_ELF_INCOMPLETE" ||
			not_ok "$name: e_flags $(eflags "$f")"
		;;
	elf-pipe)
		[[ $(($(eflags "$f") & 1)) == 0 ]] && ok "$name: e_flags left alone (its header went out first; the trailer says it)" ||
			not_ok "$name: e_flags $(eflags "$f")"
		;;
	kdump*)
		st=$(kstatus "$f")
		[[ $((st & 8)) == 8 ]] && ok "$name: header status 0x$(printf %x "$st") has DUMP_DH_COMPRESSED_INCOMPLETE" ||
			not_ok "$name: header status $st"
		;;
	esac
done

# JSON summary, -q, dump (not only convert).
rc=0
k dump --json --format elf "$src" -o "$tmp/j.elf" > "$tmp/j.json" 2> /dev/null || rc=$?
if [[ $rc == 7 ]] && jq -e '.complete == false and .incomplete.unreadable_bytes == 12288 and
	.incomplete.unreadable_ranges == 1 and (.read_errors | length) == 1 and
	.read_errors[0].length == 12288 and .read_errors[0].segment == 0' "$tmp/j.json" > /dev/null; then
	ok "dump --json: exit 7, complete false, the range with its segment"
else
	not_ok "dump --json: exit $rc, $(head -c 400 "$tmp/j.json")"
fi
rc=0
err=$(k dump -q "$src" -o "$tmp/q.elf" 2>&1 > /dev/null) || rc=$?
[[ $rc == 7 && $err == *"incomplete: 12288 bytes in 1 range could not be read"* ]] &&
	ok "dump -q: exit 7, one line on stderr" || not_ok "dump -q: exit $rc, '$err'"

# A dump of the incomplete dump is incomplete.
rc=0
k convert -q --format kdump "$tmp/elf" -o "$tmp/again.kdump" 2> "$tmp/again.err" || rc=$?
[[ $rc == 7 ]] && grep -q "its source is an incomplete dump" "$tmp/again.err" &&
	k info --json "$tmp/again.kdump" | jq -e '.source.complete == false' > /dev/null &&
	ok "convert of the incomplete ELF: exit 7, the new dump is incomplete too" ||
	not_ok "convert of the incomplete ELF: exit $rc, $(cat "$tmp/again.err")"

# A complete dump: exit 0, complete.
rc=0
k dump --json --format elf "$tmp/good.kdump" -o "$tmp/good.elf" > "$tmp/g.json" 2>&1 || rc=$?
[[ $rc == 0 ]] && jq -e '.complete and .incomplete == null' "$tmp/g.json" > /dev/null &&
	[[ $(k info --json "$tmp/good.elf" | jq .source.complete) == true ]] &&
	k verify "$tmp/good.elf" > /dev/null &&
	ok "a complete dump: exit 0, complete in its summary, info and verify" ||
	not_ok "complete dump: exit $rc"
finish
