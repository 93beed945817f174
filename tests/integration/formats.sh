#!/bin/bash
# kcoredump dump/convert --format kdump|lime|avml on the kcore-x86_64 fixture:
#  - kdump (zstd, zlib, lzo, snappy, none, flattened through a pipe) and LiME files
#    that kdump-check (its own parser) finds equal, page by page, to an
#    ELF dump of the fixture's RAM, with the shared zero page, bitmaps,
#    header and sub-header fields it documents;
#  - LiME in a .zst stream decompresses to the plain LiME file;
#  - AVML (snappy-compressed LiME) decodes, with python3-snappy's framing
#    decoder, to the LiME file; from a pipe and one thread the same bytes;
#  - the summary warns about the dropped virtual segments; the digests
#    equal the ELF dump's; the metadata note records paddr and format;
#  - usage errors: a virtual-only selection, a .zst kdump, --codec
#    without kdump, convert without --format or input;
#  - round trips back to ELF with the same digest;
#  - a dump holding the kernel image twice: every output takes the first
#    copy (vmcore-twocopies);
#  - verify on our kdump files checks the digests of their metadata note
#    (a changed page is a mismatch); LiME has no room for the note.
#   formats.sh KCOREDUMP KDUMP_CHECK FIXDIR
set -uo pipefail
kcoredump=$1 check=$2 fixdir=$3
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$fixdir/kcore-x86_64.core
rel=6.12.38+deb12-amd64 pb=0x10000000

k() { "$kcoredump" "$@"; }
k dump -q --segments ram "$src" -o "$tmp/ram.elf" || not_ok "ELF dump of the RAM"
for c in zstd zlib lzo snappy none; do
	if k convert -q --format kdump --codec $c "$src" -o "$tmp/$c.kdump" &&
		"$check" kdump "$tmp/$c.kdump" "$tmp/ram.elf" $rel $pb $c | sed 's/^/# /'; then
		ok "kdump --codec $c: every page equals the ELF dump's"
	else
		not_ok "kdump --codec $c"
	fi
done
if k dump -q --format kdump "$src" -o - | cat > "$tmp/flat" &&
	"$check" kdump "$tmp/flat" "$tmp/ram.elf" $rel $pb zlib | sed 's/^/# /'; then
	ok "flattened kdump through a pipe"
else
	not_ok "flattened kdump through a pipe"
fi
if k convert -q --format lime "$src" -o "$tmp/ram.lime" &&
	"$check" lime "$tmp/ram.lime" "$tmp/ram.elf" | sed 's/^/# /'; then
	ok "LiME ranges equal the ELF dump"
else
	not_ok "LiME"
fi
if k convert -q --format lime "$src" -o "$tmp/ram.lime.zst" &&
	zstd -dc "$tmp/ram.lime.zst" | sparsecmp - "$tmp/ram.lime"; then
	ok "LiME .zst decompresses to the plain LiME file"
else
	not_ok "LiME .zst"
fi
k convert -q --format lime "$src" -o - | sparsecmp - "$tmp/ram.lime" &&
	ok "LiME through a pipe equals the LiME file" ||
	not_ok "LiME through a pipe differs from the LiME file"
# AVML: python3-snappy's framing decoder (tests/tools/avml2lime.py, not
# our reader) turns it into the LiME file of the same selection byte for
# byte; the same through a pipe and with one thread or two.  A selection
# around the fixture's data keeps it small: AVML has no holes, and 4 GiB
# of zeros are 200 MB of snappy chunks.
sel=(--phys -r 0x0-0x200000 -r 0x2f000000+0x100000 -r 0x40000000+0x100000 -r 0x16fa00000+0x100000)
k convert -q --format lime "${sel[@]}" "$src" -o "$tmp/sel.lime"
k convert -q --format avml "${sel[@]}" "$src" -o "$tmp/sel.avml" || not_ok "AVML of the selection"
if /usr/bin/python3 -c 'import snappy' 2> /dev/null; then
	if /usr/bin/python3 "$(dirname "$0")/../tools/avml2lime.py" "$tmp/sel.avml" "$tmp/py.lime" |
		sed 's/^/# /' && sparsecmp "$tmp/py.lime" "$tmp/sel.lime"; then
		ok "AVML: python3-snappy decodes it to the LiME file byte for byte"
	else
		not_ok "AVML: avml2lime.py of sel.avml is not the LiME file"
	fi
else
	echo "ok # SKIP python3-snappy is not installed (the AVML decoder)"
fi
k convert -q --format avml -T 1 "${sel[@]}" "$src" -o - | sparsecmp - "$tmp/sel.avml" &&
	ok "AVML through a pipe with one thread equals the file written with all" ||
	not_ok "AVML through a pipe (-T 1) differs from the file"
a=$(k convert -q --json --format elf "$tmp/sel.lime" -o "$tmp/sel-l.elf" | jq -r .segment_digest_root)
b=$(k convert -q --json --format elf "$tmp/sel.avml" -o "$tmp/sel-a.elf" | jq -r .segment_digest_root)
[[ -n $a && $a == "$b" ]] && ok "round trip sel.avml -> ELF: the LiME's digest ($a)" ||
	not_ok "round trip sel.avml -> ELF: digest $b, the LiME's $a"
out=$(k convert --format kdump "$src" -o "$tmp/s.kdump" 2>&1)
grep -q "7 segments without physical memory dropped" <<< "$out" &&
	ok "the summary warns about the 7 dropped virtual segments" ||
	not_ok "no drop warning: $out"
a=$(k dump -q --json --segments ram "$src" -o "$tmp/d.elf" | jq -r .segment_digest_root)
b=$(k convert --json --format kdump "$src" -o "$tmp/d.kdump" |
	jq -r '.segment_digest_root, .kdump.pages_dumped, .kdump.pages_zero, .kdump.pages_excluded, .dropped_segments' | tr '\n' ' ')
# Every page of the RAM segments is dumped, as makedumpfile -d 1 does:
# the 4 zero pages of the fixture's data and every page of its holes
# point at the shared zero page; none is excluded (crash would call it
# "page excluded" without --zero_excluded).
[[ "$b" == "$a 162 1048028 0 7 " ]] &&
	ok "kdump JSON: the ELF dump's sha256, 162 pages with data, 1048028 shared zero pages (zeros and holes), none excluded, 7 dropped" ||
	not_ok "kdump JSON '$b' (ELF sha256 $a)"
for f in zstd.kdump flat; do
	python3 - "$tmp/$f" "$tmp/$f.bm" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
if d[:12] == b"makedumpfile":  # rearrange the flattened records
    out, pos = bytearray(), 4096
    while True:
        off, size = struct.unpack_from(">qq", d, pos)
        if off == -1:
            break
        if len(out) < off + size:
            out.extend(bytes(off + size - len(out)))
        out[off:off + size] = d[pos + 16:pos + 16 + size]
        pos += 16 + size
    d = bytes(out)
bs, sub, bmb = struct.unpack_from("<iiI", d, 428)
bm1 = (1 + sub) * bs
n = bmb // 2 * bs
open(sys.argv[2], "w").write("same\n" if d[bm1:bm1 + n] == d[bm1 + n:bm1 + 2 * n] else "differ\n")
PY
	[[ $(cat "$tmp/$f.bm") == same ]] &&
		ok "$f: bitmap 2 (dumped) is bitmap 1 (RAM): no page excluded without --exclude" ||
		not_ok "$f: pages excluded from bitmap 2 without --exclude"
done
strings "$tmp/d.kdump" > "$tmp/d.strings"
if grep -q "^output_format=kdump" "$tmp/d.strings" &&
	grep -q "^segment=0 .* paddr=0x0000000000001000 " "$tmp/d.strings"; then
	ok "the kdump's metadata note records the format and physical addresses"
else
	not_ok "metadata note of the kdump"
fi

# Round trips (dump -> convert back to ELF -> the same segment content).
ram_sha=$(k dump -q --json --segments ram "$tmp/ram.elf" -o "$tmp/again.elf" | jq -r .segment_digest_root)
rm -f "$tmp/again.elf"
for f in zstd.kdump zlib.kdump lzo.kdump snappy.kdump none.kdump flat ram.lime; do
	back=$(k convert -q --json --format elf "$tmp/$f" -o "$tmp/back.elf" | jq -r .segment_digest_root)
	[[ -n $back && $back == "$ram_sha" ]] &&
		ok "round trip $f -> ELF: the same content digest as the ELF dump" ||
		not_ok "round trip $f -> ELF: digest $back, the ELF dump's $ram_sha"
	rm -f "$tmp/back.elf"
done

# verify: our kdump files carry the digests in their metadata note.
for f in zstd.kdump zlib.kdump lzo.kdump snappy.kdump none.kdump flat; do
	out=$(k verify --json "$tmp/$f" 2>&1)
	if jq -e --arg s "$ram_sha" '.ok and .digests_match and .digests == "note" and .segment_digest_root == $s' <<< "$out" > /dev/null; then
		ok "verify $f: OK against the digests of its note"
	else
		not_ok "verify $f: $(head -c 300 <<< "$out")"
	fi
done
# A changed byte in a raw page: a mismatch (exit 3).
# The file offset of the first page with data that has a descriptor of its
# own (the header's block size, sub-header and bitmap blocks, bitmap 2,
# then 24-byte descriptors in pfn order).
pfn_off=$(python3 - "$tmp/none.kdump" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
bs, sub, bmb = struct.unpack_from("<iiI", d, 428)
bm2 = (1 + sub) * bs + bmb // 2 * bs
desc = (1 + sub) * bs + bmb * bs
zero = None
for i in range(bmb // 2 * bs * 8):
    if d[bm2 + i // 8] >> (i % 8) & 1:
        off, size, flags = struct.unpack_from("<QII", d, desc)
        desc += 24
        zero = off if zero is None else zero
        if off != zero and any(d[off:off + size]):
            print(off)
            break
PY
)
if [[ -n $pfn_off ]]; then
	cp "$tmp/none.kdump" "$tmp/bad.kdump"
	printf '\xa5' | dd of="$tmp/bad.kdump" bs=1 seek=$((pfn_off + 100)) conv=notrunc status=none
	rc=0
	k verify "$tmp/bad.kdump" > "$tmp/v.out" 2>&1 || rc=$?
	[[ $rc == 3 ]] && grep -q MISMATCH "$tmp/v.out" &&
		ok "verify of a kdump with a changed page: MISMATCH, exit 3" ||
		not_ok "verify of a changed kdump: exit $rc, $(head -c 300 "$tmp/v.out")"
else
	not_ok "kdump-check page-offset found no page at 0x1000"
fi
rc=0
k verify "$tmp/ram.lime" > "$tmp/v.out" 2> "$tmp/v.err" || rc=$?
[[ $rc == 4 ]] && grep -q "a LiME file has no place for digests" "$tmp/v.err" &&
	ok "verify ram.lime: no digests (LiME has no notes), exit 4" ||
	not_ok "verify ram.lime: exit $rc, $(cat "$tmp/v.err")"
# Issue 19 item 12: the text line says where digests come from, never
# "digests in the -".
grep -q "no digests to check (.*a LiME file has no place for digests" \
	"$tmp/v.out" && ! grep -q "digests in the -" "$tmp/v.out" &&
	ok "verify ram.lime: says a LiME file has no digests" ||
	not_ok "verify ram.lime says: $(cat "$tmp/v.out")"
{ k verify --json "$tmp/ram.lime" 2>/dev/null || true; } |
	jq -e '.has_digests == false and .digests == null and (.digests_detail | test("LiME"))' >/dev/null &&
	ok "verify --json ram.lime: digests null, digests_detail says why" ||
	not_ok "verify --json ram.lime: no reason given"
k verify "$tmp/ram.elf" 2>&1 | grep -q "OK (.*digests in kcoredump's trailer)" &&
	ok "verify ram.elf: digests from kcoredump's trailer (the file was hashed as written)" ||
	not_ok "verify ram.elf: $(k verify "$tmp/ram.elf" 2>&1 | head -1)"
out=$(k verify --json "$tmp/sel.avml" "$tmp/ram.elf" 2>&1)
jq -e '.ok' <<< "$out" > /dev/null && ok "verify sel.avml against the ELF dump: no byte differs" ||
	not_ok "verify sel.avml ram.elf: $(head -c 300 <<< "$out")"
rc=0
k verify "$tmp/sel.avml" > /dev/null 2> "$tmp/v.err" || rc=$?
[[ $rc == 4 ]] && grep -q "an AVML file has no place for digests" "$tmp/v.err" &&
	ok "verify sel.avml: no digests (AVML has no notes), exit 4" ||
	not_ok "verify sel.avml: exit $rc, $(cat "$tmp/v.err")"

# A dump holding the kernel image twice with other bytes (a live dump read
# it, and later the RAM around it): every output takes the first copy, as
# crash and makedumpfile read by physical address.
two=$fixdir/vmcore-twocopies.core
page() { k cat --raw "$@" --len 4096 | sha256sum | cut -c1-64; }
img=$(page --phys --addr 0x2f000000 "$two")
ram=$(page --addr 0xffff8e1a2f000000 "$two")
below=$(page --phys --addr 0x2eff0000 "$two")
[[ -n $img && $img != "$ram" ]] || not_ok "vmcore-twocopies: the two copies should differ"
k dump -q --segments ram "$two" -o "$tmp/two-ram.elf"
k dump -q "$two" -o "$tmp/two-all.elf"
k convert -q --format kdump "$two" -o "$tmp/two.kdump"
k convert -q --format lime "$two" -o "$tmp/two.lime"
for f in two-ram.elf two-all.elf; do
	[[ $(page --addr 0xffff8e1a2f000000 "$tmp/$f") == "$img" &&
		$(page --phys --addr 0x2f000000 "$tmp/$f") == "$img" &&
		$(page --phys --addr 0x2eff0000 "$tmp/$f") == "$below" ]] &&
		ok "$f: the RAM segment holds the image's copy of its pages, its own elsewhere" ||
		not_ok "$f: the RAM segment's copy of the kernel image"
done
for f in two.kdump two.lime; do
	[[ $(page --phys --addr 0x2f000000 "$tmp/$f") == "$img" &&
		$(page --phys --addr 0x2eff0000 "$tmp/$f") == "$below" ]] &&
		ok "$f: the image's copy of its pages" ||
		not_ok "$f: the copy of the kernel image pages"
done
[[ $(k dump -q --json --segments ram "$two" -o "$tmp/two-2.elf" | jq -r .segment_digest_root) == \
	"$(k convert -q --json --format kdump "$two" -o "$tmp/two-2.kdump" | jq -r .segment_digest_root)" ]] &&
	ok "vmcore-twocopies: the RAM ELF dump and the kdump have one digest" ||
	not_ok "vmcore-twocopies: the RAM ELF dump and the kdump digests differ"

usage() { # description expected-status stderr-pattern args...
	local what=$1 want=$2 pat=$3 err rc
	shift 3
	err=$(k "$@" 2>&1 > /dev/null)
	rc=$?
	if [[ $rc == "$want" ]] && grep -q -- "$pat" <<< "$err"; then
		ok "$what (exit $rc)"
	else
		not_ok "$what: exit $rc, '$err'"
	fi
	rm -f "$tmp/x"*
}
usage "virtual-only selection refused for kdump" 2 "no physical RAM segments" \
	convert --format kdump --segments vmalloc,modules "$src" -o "$tmp/x"
usage "virtual-only selection refused for LiME" 2 "no physical RAM segments" \
	dump --format lime --segments vmemmap "$src" -o "$tmp/x"
usage "a .zst kdump is refused" 2 "compresses each page" \
	convert --format kdump "$src" -o "$tmp/x.kdump.zst"
usage "a .zst AVML file is refused" 2 "snappy-compressed" \
	convert --format avml "$src" -o "$tmp/x.avml.zst"
usage "AVML with --compress xz is refused" 2 "snappy-compressed" \
	dump --format avml --compress xz "$src" -o "$tmp/x"
usage "AVML with --level is refused" 2 "no levels" \
	dump --format avml --level 3 "$src" -o "$tmp/x"
usage "virtual-only selection refused for AVML" 2 "no physical RAM segments" \
	dump --format avml --segments vmalloc "$src" -o "$tmp/x"
usage "--codec without --format kdump" 2 "is for --format kdump" \
	dump --codec zlib "$src" -o "$tmp/x"
usage "convert needs --format" 2 "needs --format" convert "$src" -o "$tmp/x"
usage "convert needs an input" 2 "needs an input" convert --format elf -o "$tmp/x"
usage "unknown format" 2 "unknown format" convert --format vmss "$src" -o "$tmp/x"
[[ ! -e $tmp/x ]] && ok "no output left behind by refused runs" || not_ok "output left behind"
finish
