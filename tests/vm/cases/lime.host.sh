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

def ranges(path):
    out = []
    with open(path, "rb") as f:
        while True:
            h = f.read(32)
            if not h:
                return out
            magic, ver, s, e = struct.unpack("<IIQQ", h[:24])
            if len(h) < 32 or magic != MAGIC or ver != 1 or e < s:
                sys.exit(f"not ok - {path}: bad LiME header at offset {f.tell() - len(h)}")
            out.append((s, e))
            f.seek(e - s + 1, 1)

ram = []
for line in open(f"{d}/iomem"):
    if line[0] != " " and line.rstrip().endswith(": System RAM"):
        a, b = line.split(" : ")[0].split("-")
        ram.append((int(a, 16), int(b, 16)))
lime, kcd = ranges(f"{d}/lime.lime"), ranges(f"{d}/kcd.lime")
bad = 0
# The splice path's image (--hash none): the default one's ranges, and
# its memory (below).
none = ranges(f"{d}/kcd-none.lime")
if none == kcd:
    print(f"ok - the --hash none (splice) image has the default one's {len(kcd)} ranges")
else:
    print(f"not ok - the --hash none image's ranges {none[:4]} are not {kcd[:4]}")
    bad = 1
def image_map(rs):
    """Physical address -> file offset of a LiME file's ranges."""
    out, off = [], 0
    for st, e in rs:
        out.append((st, e, off + 32))
        off += 32 + e - st + 1
    return out

def page_at(f, m, pa):
    for st, e, off in m:
        if st <= pa and pa + 4095 <= e:
            f.seek(off + pa - st)
            return f.read(4096)
    return None

# The kernel's code and read-only data do not change: every page of them
# must be the same in both (bytes moved to the wrong offset would match
# none of them).  Pages with data elsewhere are mostly the same; free
# memory changes as the captures themselves pass pages through pipes.
text = []
for line in open(f"{d}/iomem"):
    name = line.split(" : ")[-1].strip()
    if name in ("Kernel code", "Kernel rodata"):
        a_, b_ = line.split(" : ")[0].strip().split("-")
        text.append((int(a_, 16), int(b_, 16)))
same = pages = 0
ma, mb = image_map(kcd), image_map(none)
with open(f"{d}/kcd.lime", "rb") as a, open(f"{d}/kcd-none.lime", "rb") as b:
    for st, e in text:
        for pa in range(st - st % 4096, e, 4096):
            pa_, pb_ = page_at(a, ma, pa), page_at(b, mb, pa)
            if pa_ is None or pb_ is None:
                continue
            pages += 1
            same += pa_ == pb_
if pages and same >= 0.99 * pages:
    print(f"ok - {same} of the {pages} pages of kernel code and rodata are the same in both images")
else:
    print(f"not ok - only {same} of the {pages} pages of kernel code and rodata are the same in both images")
    bad = 1
same = data = 0
zero = bytes(4096)
with open(f"{d}/kcd.lime", "rb") as a, open(f"{d}/kcd-none.lime", "rb") as b:
    while True:
        pa, pb = a.read(4096), b.read(4096)
        if not pa or not pb:
            break
        if pa != zero and pb != zero:
            data += 1
            same += pa == pb
if data and same >= 0.5 * data:
    print(f"ok - {same} of the {data} pages with data in both images are the same")
else:
    print(f"not ok - only {same} of the {data} pages with data in both images are the same")
    bad = 1
if lime == ram:
    print(f"ok - LiME's {len(lime)} ranges are /proc/iomem's System RAM")
else:
    print(f"not ok - LiME's ranges {lime[:4]} are not System RAM {ram[:4]}")
    bad = 1
outside = [r for r in kcd if not any(s <= r[0] and r[1] <= e for s, e in lime)]
if kcd and not outside:
    print(f"ok - kcoredump's {len(kcd)} ranges lie inside LiME's")
else:
    print(f"not ok - kcoredump's ranges outside LiME's: {outside[:4]} (of {len(kcd)})")
    bad = 1
sys.exit(bad)
PY
jqcheck "the --hash none image was spliced (stats.bytes_spliced > 0)" "$d/kcd-none.json" \
	'.stats.bytes_spliced > 0'
rm -f "$d/lime.lime" "$d/kcd.lime" "$d/kcd-none.lime"
exit $fail
