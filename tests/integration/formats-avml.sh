#!/bin/bash
# AVML's compressed LiME as a source.  tests/tools/mkavml.py writes the
# files with python3-snappy's framing (another implementation than ours)
# from tests/tools/mkformats.py's LiME file.  Checks: info names the
# format and lists the LiME's ranges; convert back to LiME gives the LiME
# file byte for byte, and to ELF the same digest as from the LiME; cat
# reads the same bytes as from the LiME at addresses inside, across and
# at the ends of chunks; verify finds no byte different; padding chunks
# and a repeated stream identifier are skipped; a changed CRC, changed
# compressed data, a reserved chunk type, a wrong trailer, a truncated
# file and an unknown version are one-line errors with exit status 4.
#   formats-avml.sh KCOREDUMP FORMATSDIR
set -uo pipefail
kcoredump=$1 dir=$2
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
if ! "$py" -c 'import snappy' 2>/dev/null; then
	echo "1..0 # SKIP python3-snappy is not installed"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lime=$dir/mem.lime
k() { "$kcoredump" "$@"; }

"$py" "$(dirname "$0")/../tools/mkavml.py" "$lime" "$tmp" ||
	{ echo "Bail out! mkavml.py failed"; exit 1; }
avml=$tmp/mem.avml

fmt=$(k info --json "$avml" | jq -r '.source | "\(.format): \(.format_detail)"')
[[ $fmt == "avml: version 2, 2 ranges, "*" snappy chunks" ]] && ok "info: $fmt" ||
	not_ok "info: format '$fmt'"
ranges() { k info --json --no-holes "$1" | jq -c '[.segments[] | select(.type == "LOAD") | [.paddr, .memsz]]'; }
a=$(ranges "$lime") b=$(ranges "$avml")
[[ -n $a && $a == "$b" ]] && ok "the same ranges as the LiME file: $b" ||
	not_ok "ranges $b, the LiME's $a"

for f in mem pad; do
	if k convert -q --format lime "$tmp/$f.avml" -o "$tmp/$f.lime" &&
		cmp -s "$tmp/$f.lime" "$lime"; then
		ok "$f.avml -> LiME: the LiME file byte for byte"
	else
		not_ok "$f.avml -> LiME differs from the LiME file"
	fi
done
s1=$(k convert -q --json --format elf "$lime" -o "$tmp/l.elf" | jq -r .segment_digest_root)
s2=$(k convert -q --json --format elf -T 2 "$avml" -o "$tmp/a.elf" | jq -r .segment_digest_root)
[[ -n $s1 && $s1 == "$s2" ]] && ok "-> ELF: the LiME's digest ($s1)" ||
	not_ok "-> ELF: digest $s2, the LiME's $s1"
# The file offsets follow the note, whose size depends on the source's
# path and name: compare everything else.
loads() { k info --json "$1" | jq -c '[.segments[] | select(.type == "LOAD") | del(.offset)]'; }
cmp -s <(loads "$tmp/l.elf") <(loads "$tmp/a.elf") &&
	ok "-> ELF: the same PT_LOADs as from the LiME" || not_ok "-> ELF: other PT_LOADs"

# Inside a chunk, across chunk boundaries (64 KiB), a range's last bytes.
read -r s0 z0 s1 z1 < <(k info --json --no-holes "$avml" |
	jq -r '[.segments[] | select(.type == "LOAD") | .paddr, .memsz] | join(" ")')
bad=0 checked=0
for spec in "$s0 16" "$((s0 + 65536 - 7)) 20" "$((s0 + z0 - 100)) 100" \
	"$s1 4096" "$((s1 + 3 * 65536 - 4096)) 200000" "$((s1 + z1 - 1)) 1" "$((s1 + 12345)) 1048576"; do
	set -- $spec
	checked=$((checked + 1))
	cmp -s <(k cat --raw --phys --addr "$1" --len "$2" "$lime") \
		<(k cat --raw --phys --addr "$1" --len "$2" "$avml") || bad=$((bad + 1))
done
((bad == 0)) && ok "cat: $checked reads equal the LiME's" || not_ok "cat: $bad of $checked reads differ"
out=$(k verify --json "$avml" "$lime" 2>&1)
jq -e '.ok' <<< "$out" > /dev/null && ok "verify against the LiME: no byte differs" ||
	not_ok "verify: $out"

# A corrupt chunk: reading it is an error; a dump goes on past it and
# lists it with what is wrong.
for t in crc:"fails its CRC-32C" data:"chunk at offset"; do
	name=${t%%:*} msg=${t#*:}
	rc=0
	k cat --raw --phys --addr "$s0" --len "$z0" "$tmp/bad-$name.avml" > /dev/null 2> "$tmp/err" || rc=$?
	if [ "$rc" = 4 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q -- "$msg" "$tmp/err" &&
		grep -q "offset" "$tmp/err"; then
		ok "bad-$name.avml: cat exits 4, $(cat "$tmp/err")"
	else
		not_ok "bad-$name.avml: cat exit $rc, expected 4 and '$msg'"
		diag "$tmp/err"
	fi
	rm -f "$tmp/x.elf"
	out=$(k convert -q --json --format elf "$tmp/bad-$name.avml" -o "$tmp/x.elf" 2>&1)
	if jq -e --arg m "$msg" '.read_errors | length == 1 and (.[0].error | contains($m)) and .[0].length == 65536' \
		<<< "$out" > /dev/null; then
		ok "bad-$name.avml: convert goes on and lists the 64 KiB chunk: $(jq -c '.read_errors[0]' <<< "$out")"
	else
		not_ok "bad-$name.avml: convert's read errors: $(jq -c .read_errors <<< "$out" 2>&1 | head -c 300)"
	fi
done
# Broken framing: refused when the file is opened.
rm -f "$tmp/x.elf"
for t in reserved:"reserved snappy chunk type 0x02" trailer:"trailer says" \
	truncated:"truncated at offset" version:"version 3"; do
	name=${t%%:*} msg=${t#*:}
	rc=0
	k convert -q --format elf "$tmp/bad-$name.avml" -o "$tmp/x.elf" > /dev/null 2> "$tmp/err" || rc=$?
	if crashed "$rc" "$tmp/err"; then
		not_ok "bad-$name.avml: crashed (exit $rc)"
		diag "$tmp/err"
	elif [ "$rc" = 4 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q -- "$msg" "$tmp/err" &&
		grep -q "offset" "$tmp/err" && [ ! -e "$tmp/x.elf" ]; then
		ok "bad-$name.avml: exit 4, $(cat "$tmp/err")"
	else
		not_ok "bad-$name.avml: exit $rc, expected 4 and '$msg'"
		diag "$tmp/err"
	fi
done
finish
