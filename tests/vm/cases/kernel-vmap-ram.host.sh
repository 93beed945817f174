#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: verify every 8-byte word of the areas kernel-vmap-ram.sh read
# through /proc/kcore against the kcore_test.ko pattern.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
rc=0
out=$("$PYTHON" - "$d" <<'PY'
import struct, sys, os
d = sys.argv[1]
MAGIC = 0x6b63746500000000
fail = 0
areas = [l.split() for l in open(os.path.join(d, "areas"))]
AREAS = {"ram": 1, "ram2": 2, "vmalloc": 3, "vmap": 4, "big": 5, "io": 0,
         "gapa": 6, "gapc": 7, "tail": 8, "huge": 9}
def word(area, k, i):
    return (MAGIC | (k >> 8) << 24 | area << 16 | (k & 0xff) << 8 |
            (i & 0xff)) if area else 0
seen = set()
for name, addr, npages in areas:
    if name in seen:
        continue
    seen.add(name)
    area = AREAS[name]
    npages = int(npages)
    for f in sorted(os.listdir(d)):
        if not f.startswith(name + ".") or f.count(".") != 2:
            continue
        data = open(os.path.join(d, f), "rb").read()
        if len(data) != npages * 4096:
            print(f"not ok - {f}: {len(data)} bytes, want {npages * 4096}")
            fail = 1
            continue
        bad = []
        for k in range(npages):
            words = struct.unpack_from("<512Q", data, k * 4096)
            for i, w in enumerate(words):
                want = word(area, k, i)
                if w != want:
                    bad.append(f"page {k} word {i}: {w:#x}")
                    break
        if bad:
            print(f"not ok - {f} ({addr}): " + "; ".join(bad))
            fail = 1
        else:
            print(f"ok - {f} ({addr}): all {npages * 512} words match")
# windows across several areas and the gaps between them: the pattern of
# the area holding each page, zeros where no area is
wins = os.path.join(d, "windows")
spans = [(AREAS[n], int(a, 16), int(p)) for n, a, p in areas]
for l in open(wins) if os.path.exists(wins) else []:
    label, start, length = l.split()
    start, length = int(start, 16), int(length)
    for f in sorted(os.listdir(d)):
        if not f.startswith(f"win-{label}."):
            continue
        data = open(os.path.join(d, f), "rb").read()
        if len(data) != length:
            print(f"not ok - {f}: {len(data)} bytes, want {length}")
            fail = 1
            continue
        bad = None
        for off in range(0, length, 4096):
            va = start + off
            area, k = 0, 0
            for ar, a, n in spans:
                if a <= va < a + n * 4096:
                    area, k = ar, (va - a) // 4096
            words = struct.unpack_from("<512Q", data, off)
            for i, w in enumerate(words):
                if w != word(area, k, i):
                    bad = f"vaddr {va:#x} word {i}: {w:#x}, want {word(area, k, i):#x}"
                    break
            if bad:
                break
        if bad:
            print(f"not ok - {f}: {bad}")
            fail = 1
        else:
            print(f"ok - {f} ({start:#x}+{length:#x}): areas and zeros between them")
sys.exit(fail)
PY
) || rc=$?
echo "$out"
((rc == 0)) || fail=1
exit $fail
