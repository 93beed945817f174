#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""corecmp.py A B: compare two ELF process cores of the same program run
twice with ASLR off (the kernel's regular-file core and the core_pattern
handler's stored core).  The program headers must be identical; the
segment data may differ only in the few bytes that differ from run to run
(AT_RANDOM, the stack canary and pointer guard derived from it, and
crash-dense's mkstemp() file name wherever it is stored).  Prints
TAP lines and the count of differing bytes; exit 1 on failure.  Holes
that both files have (SEEK_DATA) are zeros in both and are not read, so
sparse cores of a TiB compare in the time their data takes.

corecmp.py --offset-of ADDR CORE: print the file offset of virtual
address ADDR (hex) in CORE's PT_LOADs; exit 1 if none holds it."""
import os
import struct
import sys

MAX_DIFF = 1024


def phdrs(path):
    with open(path, "rb") as f:
        eh = f.read(64)
        assert eh[:4] == b"\x7fELF" and eh[4] == 2
        phoff, = struct.unpack_from("<Q", eh, 32)
        phnum, = struct.unpack_from("<H", eh, 56)
        f.seek(phoff)
        raw = f.read(56 * phnum)
    return [struct.unpack_from("<IIQQQQQQ", raw, 56 * i) for i in range(phnum)]


def next_data(f, off):
    """The first offset at or after off that may hold data, or None."""
    try:
        return os.lseek(f.fileno(), off, os.SEEK_DATA)
    except OSError:  # ENXIO: only a hole from off on
        return None


def offset_of(addr, path):
    for t, _, off, va, _, filesz, _, _ in phdrs(path):
        if t == 1 and va <= addr < va + filesz:
            print(off + addr - va)
            return 0
    return 1


def main():
    if sys.argv[1] == "--offset-of":
        return offset_of(int(sys.argv[2], 16), sys.argv[3])
    a, b = sys.argv[1], sys.argv[2]
    pa, pb = phdrs(a), phdrs(b)
    fails = 0
    if pa == pb:
        print(f"ok - same {len(pa)} program headers")
    else:
        print("not ok - program headers differ")
        return 1
    diff = 0
    pages = set()
    with open(a, "rb") as fa, open(b, "rb") as fb:
        for p in pa:
            if p[0] != 1 or not p[5]:
                continue
            off, end = p[2], p[2] + p[5]
            while off < end:
                # skip what is a hole in both (zeros in both)
                da, db = next_data(fa, off), next_data(fb, off)
                nxt = min(d for d in (da, db, end) if d is not None)
                off = max(off, nxt - nxt % 4096)
                if off >= end:
                    break
                n = min(end - off, 1 << 20)
                fa.seek(off)
                fb.seek(off)
                x, y = fa.read(n), fb.read(n)
                if x != y:
                    for i in range(n):
                        if x[i] != y[i]:
                            diff += 1
                            pages.add(p[3] + (off - p[2] + i) // 4096)
                off += n
    ok = diff <= MAX_DIFF
    print(f"{'ok' if ok else 'not ok'} - segment data identical but for "
          f"{diff} bytes in {len(pages)} pages (run-to-run randomness; "
          f"at most {MAX_DIFF})")
    fails += not ok
    return 1 if fails else 0


sys.exit(main())
