#!/bin/bash
# SPDX-License-Identifier: MIT
# dump --record (issue 28 item 3): the acquisition record beside the dump,
# as JSON and as text, with the file's SHA-256 (sha256sum's), the absolute
# source path, the boot ID, the command as typed, the read window, the
# segment digests, the unreadable ranges and --case/--examiner/--notes;
# a record that cannot be written refuses the dump before it reads
# anything; `info` decodes our metadata note (type name, fields, the
# source as an absolute path).
#   record.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$(readlink -f "$1") fixdir=$(readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
for tool in jq python3 sha256sum; do
	if ! command -v "$tool" > /dev/null; then
		echo "1..0 # SKIP $tool is not installed"
		exit 77
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
k() { "$kcoredump" "$@"; }
jqe() { jq -e "$@" > /dev/null; }
mkdir "$tmp/w" && cp "$fixdir/vmcore-twocopies.core" "$tmp/w/v.core" || exit 1
cd "$tmp/w" || exit 1

k dump -q v.core -o img.elf.zst --record case.json --case 'C-17 "x"' \
	--examiner 'A. Examiner' --notes $'seized at 10:00\nrack 4' 2> err
rc=$?
check "dump --record exits 0 ($rc: $(head -c 200 err))" [ "$rc" = 0 ]
check "the JSON record is case.json, mode 0600" \
	[ "$(stat -c %a case.json 2> /dev/null)" = 600 ]
check "the text record is case.txt, mode 0600" \
	[ "$(stat -c %a case.txt 2> /dev/null)" = 600 ]
j() { jq -r "$1" case.json 2> /dev/null; }
sum=$(sha256sum img.elf.zst | cut -d' ' -f1)
check "record: file_sha256 is sha256sum's" [ "$(j .output.file_sha256)" = "$sum" ]
check "record: the output's absolute path" [ "$(j .output.path)" = "$tmp/w/img.elf.zst" ]
check "record: the source's absolute path ($(j .source.path))" \
	[ "$(j .source.path)" = "$tmp/w/v.core" ]
check "record: the command as typed" [ "$(j .command_line)" = \
	"kcoredump dump -q v.core -o img.elf.zst --record case.json --case 'C-17 \"x\"' --examiner 'A. Examiner' --notes 'seized at 10:00
rack 4'" ]
if [ -r /proc/sys/kernel/random/boot_id ]; then
	check "record: the boot ID" [ "$(j .host.boot_id)" = "$(cat /proc/sys/kernel/random/boot_id)" ]
fi
check "record: host name and uname" [ "$(j .host.hostname)" = "$(hostname)" ] &&
	[ "$(j .host.uname.release)" = "$(uname -r)" ]
check "record: tool version and build" [ "$(j .tool.version)" = "$(k version | sed -n '1s/^kcoredump //p')" ] &&
	[ -n "$(j .tool.build.libraries.zstd)" ]
check "record: case, examiner and notes" [ "$(j .case)" = 'C-17 "x"' ] &&
	[ "$(j .examiner)" = 'A. Examiner' ] && [ "$(j .notes)" = $'seized at 10:00\nrack 4' ]
check "record: a read window (start <= end, ISO 8601 UTC)" \
	jqe '(.read.start_utc | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$")) and .read.start_utc <= .read.end_utc' case.json
# Issue 40: read.seconds is the read window (end - start), not the whole
# dump; the steps after it are phases of their own.
check "record: read.seconds is end - start (to a millisecond)" \
	jqe 'def ns: capture("(?<s>[0-9-]+T[0-9:]+)\\.(?<f>[0-9]+)Z") | ((.s + "Z") | fromdateiso8601) + ("0." + .f | tonumber);
		((.read.end_utc | ns) - (.read.start_utc | ns) - .read.seconds) | fabs < 0.002' case.json
check "record: the phases (read, end of the file, file SHA-256, publishing) add up to at most the whole" \
	jqe '.phases | .read_seconds == (.read_seconds | numbers) and .read_seconds + .finish_seconds +
		.file_sha256_seconds + .publish_seconds <= .total_seconds + 0.001 and .file_sha256_thread_seconds >= 0' case.json
check "text record: the time line" grep -q '^Time:          [0-9.]* s in all: read [0-9.]* s, ' case.txt
# The segment digests are the dump's own (verify checks them).
check "record: the segment digests are the summary's" \
	[ "$(jq -c '[.segments[].sha256]' case.json)" = \
	"$(k dump -q --json v.core -o again.elf.zst | jq -c '[.segments[].sha256]')" ]
check "record: complete, no read errors" jqe '.complete == true and .read_errors == []' case.json
check "text record: the file SHA-256" grep -q "^File SHA-256:  $sum\$" case.txt
check "text record: the source and the boot ID" grep -q "^Source:        $tmp/w/v.core " case.txt &&
	grep -q '^Boot ID:       ' case.txt
check "text record: notes with the newline escaped" grep -qF 'Notes:         seized at 10:00\nrack 4' case.txt

# info decodes our note: its type, its fields, the absolute source path.
k info --json img.elf.zst > info.json 2> err
check "info: our note's type name" \
	jqe '[.notes[] | select(.name == "KCOREDUMP")][0].type_name == "KCOREDUMP_METADATA"' info.json
check "info: the note's source is absolute" \
	jqe --arg p "$tmp/w/v.core" '[.notes[] | select(.name == "KCOREDUMP")][0].metadata.source == $p' info.json
check "info: the note's case and segment digests" \
	jqe --argjson s "$(jq -c '[.segments[].sha256]' case.json)" \
	'[.notes[] | select(.name == "KCOREDUMP")][0].metadata | .case == "C-17 \"x\"" and ([.segment[].sha256] == $s)' info.json
k info --notes-only img.elf.zst > info.txt 2> err
check "info (text): KCOREDUMP_METADATA and its fields" grep -q 'KCOREDUMP KCOREDUMP_METADATA' info.txt &&
	grep -Eq "^ +source +$tmp/w/v.core\$" info.txt && grep -Eq '^ +bytes_read +2097152$' info.txt

# Refusals before the read: an existing record, a record nobody can write.
rm -f img2.elf
k dump -q v.core -o img2.elf --record case.json 2> err
rc=$?
check "an existing record without --force: refused ($rc)" [ "$rc" != 0 ] &&
	grep -q "case.json.*exists" err
check "... and no dump was written" [ ! -e img2.elf ]
k dump -q v.core -o img2.elf --record nodir/r.json 2> err
rc=$?
check "a record in a missing directory: refused ($rc: $(head -c 120 err))" [ "$rc" != 0 ] && [ ! -e img2.elf ]
k dump -q -n v.core --record r.json 2> err
check "--record with --dry-run: a usage error" [ $? = 2 ]
k dump -q v.core -o img3.elf --record img3.elf 2> err
check "a record that would replace the dump: refused" [ $? != 0 ] && [ ! -e img3.elf ]
k dump -q -f v.core -o img.elf.zst --record case.json 2> err
check "--force replaces the record" [ $? = 0 ] && [ "$(j .case)" = null ]

# An incomplete source: its unreadable range is in the record.
k convert -q --format kdump --codec none v.core -o good.kdump || not_ok "kdump of the fixture"
python3 - good.kdump src.kdump << 'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
bs, sub, bmb = struct.unpack_from("<iiI", d, 428)
desc = (1 + sub) * bs + bmb * bs
for i in range(10, 13):
    struct.pack_into("<Q", d, desc + 24 * i, 0)
open(sys.argv[2], "wb").write(d)
PY
k dump -q src.kdump -o inc.elf.zst --record inc.json 2> err
rc=$?
check "incomplete source: exit 7 ($rc)" [ "$rc" = 7 ]
check "incomplete source: the record says so, with the range" \
	jqe '.complete == false and (.read_errors | length) == 1 and .read_errors[0].length == 12288' inc.json
check "incomplete source: the text record too" grep -q '^Complete:      NO: 12288 bytes in 1 range could' inc.txt &&
	grep -q '^Unreadable ranges (1):' inc.txt
finish
