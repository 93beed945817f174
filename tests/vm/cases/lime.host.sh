#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the two LiME images of lime.sh (LiME's and kcoredump's) are LiME
# files `kcoredump info` opens; each SHA-256 its writer gave is the
# file's; LiME's ranges are the guest's System RAM (/proc/iomem) and
# kcoredump's lie inside them.  The images are deleted afterwards (each
# is the size of the guest's RAM).
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
for f in lime kcd kcd-none; do
	if "$KCOREDUMP" info --json "$d/$f.lime" > "$d/$f-info.json" 2> "$d/$f-info.err"; then
		jqcheck "$f.lime: kcoredump info reads it as LiME" "$d/$f-info.json" \
			'.. | objects | select(has("format")) | .format | ascii_downcase | test("lime")'
	else
		not_ok "$f.lime: kcoredump info failed: $(head -c 300 "$d/$f-info.err")"
	fi
done
lime_sum=$(sha256sum "$d/lime.lime" | cut -d' ' -f1)
if [[ $(tr -d ' \n' < "$d/lime.lime.sha256") == "$lime_sum" ]]; then
	ok "LiME's digest=sha256 is the file's SHA-256"
else
	not_ok "LiME's digest '$(head -c 80 "$d/lime.lime.sha256")' is not the file's $lime_sum"
fi
kcd_sum=$(sha256sum "$d/kcd.lime" | cut -d' ' -f1)
# shellcheck disable=SC2016 # jq variables
jqcheck "kcoredump's SHA-256 is the file's" "$d/kcd.json" \
	'.file_sha256 == $s' --arg s "$kcd_sum"
"$PYTHON" - "$d" << 'PY' || fail=1
import struct, sys
d = sys.argv[1]
MAGIC = 0x4C694D45
bad = 0

def verdict(good, ok_text, bad_text):
    global bad
    print(f"ok - {ok_text}" if good else f"not ok - {bad_text}")
    if not good:
        bad = 1

def ranges(path):
    """A LiME file's ranges: (start, end inclusive, file offset of the data)."""
    out = []
    with open(path, "rb") as f:
        while True:
            h = f.read(32)
            if not h:
                return out
            magic, ver, s, e = struct.unpack("<IIQQ", h[:24])
            if len(h) < 32 or magic != MAGIC or ver != 1 or e < s:
                sys.exit(f"not ok - {path}: bad LiME header at offset {f.tell() - len(h)}")
            out.append((s, e, f.tell()))
            f.seek(e - s + 1, 1)

def spans(rs):
    return [(s, e) for s, e, _ in rs]

def page_at(f, rs, pa):
    for s, e, off in rs:
        if s <= pa and pa + 4095 <= e:
            f.seek(off + pa - s)
            return f.read(4096)
    return None

# /proc/iomem: (nested, name, start, end).
iomem = []
for line in open(f"{d}/iomem"):
    span, name = line.split(" : ", 1)
    a, b = span.strip().split("-")
    iomem.append((line[0] == " ", name.strip(), int(a, 16), int(b, 16)))
ram = [(a, b) for nested, name, a, b in iomem if not nested and name == "System RAM"]
text = [(a, b) for _, name, a, b in iomem if name in ("Kernel code", "Kernel rodata")]
lime, kcd = ranges(f"{d}/lime.lime"), ranges(f"{d}/kcd.lime")
# The splice path's image (--hash none): the default one's ranges, and
# its memory.
none = ranges(f"{d}/kcd-none.lime")
verdict(spans(none) == spans(kcd),
        f"the --hash none (splice) image has the default one's {len(kcd)} ranges",
        f"the --hash none image's ranges {spans(none)[:4]} are not {spans(kcd)[:4]}")
# The kernel's code and read-only data do not change: every page of them
# must be the same in both (bytes moved to the wrong offset would match
# none of them).  Pages with data elsewhere are mostly the same; free
# memory changes as the captures themselves pass pages through pipes.
same = pages = 0
with open(f"{d}/kcd.lime", "rb") as a, open(f"{d}/kcd-none.lime", "rb") as b:
    for s, e in text:
        for pa in range(s - s % 4096, e, 4096):
            pa_, pb_ = page_at(a, kcd, pa), page_at(b, none, pa)
            if pa_ is None or pb_ is None:
                continue
            pages += 1
            same += pa_ == pb_
    verdict(pages and same >= 0.99 * pages,
            f"{same} of the {pages} pages of kernel code and rodata are the same in both images",
            f"only {same} of the {pages} pages of kernel code and rodata are the same in both images")
    same = data = 0
    zero = bytes(4096)
    a.seek(0)
    b.seek(0)
    while True:
        pa, pb = a.read(4096), b.read(4096)
        if not pa or not pb:
            break
        if pa != zero and pb != zero:
            data += 1
            same += pa == pb
    verdict(data and same >= 0.5 * data,
            f"{same} of the {data} pages with data in both images are the same",
            f"only {same} of the {data} pages with data in both images are the same")
verdict(spans(lime) == ram,
        f"LiME's {len(lime)} ranges are /proc/iomem's System RAM",
        f"LiME's ranges {spans(lime)[:4]} are not System RAM {ram[:4]}")
outside = [r for r in spans(kcd) if not any(s <= r[0] and r[1] <= e for s, e in spans(lime))]
verdict(kcd and not outside,
        f"kcoredump's {len(kcd)} ranges lie inside LiME's",
        f"kcoredump's ranges outside LiME's: {outside[:4]} (of {len(kcd)})")
sys.exit(bad)
PY
jqcheck "the --hash none image was spliced (stats.bytes_spliced > 0)" "$d/kcd-none.json" \
	'.stats.bytes_spliced > 0'
rm -f "$d/lime.lime" "$d/kcd.lime" "$d/kcd-none.lime"
exit $fail
