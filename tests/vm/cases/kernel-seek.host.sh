#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: check the /proc/kcore SEEK_DATA/SEEK_HOLE extents kernel-seek.sh
# recorded against the segments and /proc/vmallocinfo.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
jqcheck "kcoredump dump --vmalloc-range uses SEEK_DATA" "$d/dump-vmalloc.json" '.stats.seek_data == true'
rc=0
out=$("$PYTHON" - "$d" <<'PY'
import json, re, sys, os
d = sys.argv[1]
fail = 0
def ok(m): print("ok - " + m)
def bad(m):
    global fail
    print("not ok - " + m); fail = 1
info = json.load(open(os.path.join(d, "info.json")))
segs = [(s["class"], int(s["offset"], 16), int(s["vaddr"], 16), int(s["filesz"]))
        for s in info["segments"] if s["p_type"] == 1]
loads, data = [], []
for l in open(os.path.join(d, "extents")):
    f = l.split()
    if f[0] == "data":
        data.append(tuple(int(x, 16) for x in f[1:]))
    elif f[0] == "time_us":
        print(f"# SEEK enumeration: {f[1]} us, {f[3]} extents")
def areas(name):
    out = []
    for l in open(os.path.join(d, name)):
        m = re.match(r"0x([0-9a-f]+)-0x([0-9a-f]+)\s+(\d+)\s+(.*)", l)
        if m:
            out.append((int(m[1], 16), int(m[2], 16), m[4]))
    return out
before, after = areas("vmallocinfo.before"), areas("vmallocinfo.after")
both = [a for a in before if a in after]      # stable across the run
# extents must not overlap and must be sorted
for a, b in zip(data, data[1:]):
    if b[0] <= a[1]:
        bad(f"extents not disjoint and merged: {a[:2]} {b[:2]}")
def covered(vs, ve):
    # is [vs, ve) inside the union of data extents (by vaddr)?
    for e in data:
        if e[2] and e[2] <= vs and ve <= e[3]:
            return True
    return False
def inside_area(vs, ve, al):
    return any(s <= vs and ve <= e and "ioremap" not in t for s, e, t in al)
# 1. every RAM / text segment is wholly data
nb = 0
for c, off, va, size in segs:
    if c in ("ram", "text"):
        if not covered(va, va + size):
            bad(f"{c} segment {va:#x}+{size:#x} not wholly data")
            nb += 1
if not nb:
    ok("every RAM and text segment is wholly data")
# 2. data extents in vmalloc/modules segments lie in vmallocinfo areas
vm = [(va, va + size) for c, off, va, size in segs if c in ("vmalloc", "modules")]
stray = []
nvm = 0
for e in data:
    if not e[2] or not any(s <= e[2] < t for s, t in vm):
        continue
    nvm += 1
    if not inside_area(e[2], e[3], before + after):
        stray.append(e)
if stray:
    bad(f"{len(stray)} of {nvm} vmalloc data extents outside vmallocinfo areas: " +
        ", ".join(f"{e[2]:#x}-{e[3]:#x}" for e in stray[:5]))
else:
    ok(f"all {nvm} vmalloc/module data extents inside vmallocinfo areas")
# 3. every stable mapped vmalloc area (pages=, not ioremap/vm_map_ram) is data
missing = []
nm = 0
for s, e, t in both:
    if "pages=" not in t or "ioremap" in t or "vm_map_ram" in t:
        continue
    nm += 1
    if not covered(s, e - 4096):
        missing.append((s, e, t))
if missing:
    bad(f"{len(missing)} of {nm} mapped areas not data: " +
        "; ".join(f"{s:#x}-{e:#x} {t[:60]}" for s, e, t in missing[:5]))
else:
    ok(f"all {nm} stable mapped vmalloc areas (minus guard page) are data")
def overlaps(vs, ve):
    # does [vs, ve) overlap any data extent (by vaddr)?
    return any(e[2] and e[2] < ve and vs < e[3] for e in data)
# 4. the test module's areas are data, their guard pages holes (vm_map_ram
# areas have none)
sizes = {"ram": 4, "ram2": 2, "vmalloc": 4, "vmap": 4, "big": 4096,
         "gapa": 4, "gapc": 4, "tail": 64, "huge": 1024}
guarded = ("vmalloc", "vmap", "big", "huge")
if os.path.exists(os.path.join(d, "test-areas")):
    for l in open(os.path.join(d, "test-areas")):
        n, a = l.split()
        a = int(a, 16)
        end = a + sizes[n] * 4096
        if covered(a, end):
            ok(f"kcore_test {n} area {a:#x} is data")
        else:
            bad(f"kcore_test {n} area {a:#x} not data")
        if n in guarded:
            if overlaps(end, end + 4096):
                bad(f"kcore_test {n} area {a:#x}: guard page {end:#x} reported as data")
            else:
                ok(f"kcore_test {n} area {a:#x}: guard page is a hole")
    if os.path.exists(os.path.join(d, "gap")):
        gb = int(open(os.path.join(d, "gap")).read().split()[0], 16)
        if overlaps(gb, gb + 2 * 4096):
            bad(f"dirty vmap block region {gb:#x} reported as data")
        else:
            ok(f"dirty vmap block region {gb:#x} is a hole")
# 4b. every stable vmalloc area with a guard page (size = pages + 1 page in
# vmallocinfo): its last page is a hole
ng, gbad = 0, []
for s, e, t in both:
    m = re.search(r"pages=(\d+)", t)
    if not m or "ioremap" in t or "vm_map_ram" in t:
        continue
    if e - s != (int(m[1]) + 1) * 4096:
        continue
    ng += 1
    if overlaps(e - 4096, e):
        gbad.append((s, e, t))
if gbad:
    bad(f"{len(gbad)} of {ng} guard pages reported as data: " +
        "; ".join(f"{s:#x}-{e:#x} {t[:50]}" for s, e, t in gbad[:5]))
else:
    ok(f"the guard pages of all {ng} stable vmalloc areas are holes")
# 5. hole samples
hs = [l for l in open(os.path.join(d, "holes")) if l.startswith("hole-")]
nz = [l for l in hs if not l.startswith("hole-samples")]
if nz:
    bad("holes not zero: " + "; ".join(x.strip() for x in nz[:5]))
else:
    ok("hole samples all zero: " + "".join(x.strip() for x in hs if x.startswith("hole-samples")))
# 6. the selftest
st = os.path.join(d, "selftest")
if os.path.exists(st):
    lines = open(st).read().splitlines()
    nok = [l for l in lines if l.startswith("not ok")]
    if nok or not any(l.startswith("# Totals") or l.startswith("ok") for l in lines):
        bad("proc-kcore-seek: " + "; ".join(nok[:5]))
    else:
        ok(f"proc-kcore-seek: {sum(l.startswith('ok') for l in lines)} checks pass")
else:
    bad("proc-kcore-seek did not run")
sys.exit(fail)
PY
) || rc=$?
echo "$out"
((rc == 0)) || fail=1
exit $fail
