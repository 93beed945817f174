#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: verify every 8-byte word kernel-vread.sh read from the kcore_test.ko
# areas with a page that is not present (ndm, npte): the kcore_test pattern
# of the area (10 = npte, 11 = ndm) in pages 0, 2 and 3, zeros in page 1.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
rc=0
out=$("$PYTHON" - "$d" <<'PY'
import os, struct, sys
d = sys.argv[1]
MAGIC = 0x6b63746500000000
fail = 0
areas = [l.split() for l in open(os.path.join(d, "areas"))] \
    if os.path.exists(os.path.join(d, "areas")) else []
def want(area, k, i):
    if k == 1:
        return 0
    return MAGIC | (k >> 8) << 24 | area << 16 | (k & 0xff) << 8 | (i & 0xff)
for name, addr, npages in areas:
    area = {"npte": 10, "ndm": 11}[name]
    for how, first, n in (("whole", 0, 4), ("page1", 1, 1)):
        f = os.path.join(d, f"{name}.{how}.kpread")
        if not os.path.exists(f):
            print(f"not ok - {name} ({how}): no data (the read failed or never returned)")
            fail = 1
            continue
        data = open(f, "rb").read()
        if len(data) != n * 4096:
            print(f"not ok - {name} ({how}): {len(data)} bytes, want {n * 4096}")
            fail = 1
            continue
        bad = None
        for j in range(n):
            k = first + j
            words = struct.unpack_from("<512Q", data, j * 4096)
            for i, w in enumerate(words):
                if w != want(area, k, i):
                    bad = f"page {k} word {i}: {w:#x}, want {want(area, k, i):#x}"
                    break
            if bad:
                break
        if bad:
            print(f"not ok - {name} ({how}, {addr}): {bad}")
            fail = 1
        else:
            print(f"ok - {name} ({how}, {addr}): pattern, zeros in page 1")
sys.exit(fail)
PY
) || rc=$?
echo "$out"
((rc == 0)) || fail=1
exit $fail
