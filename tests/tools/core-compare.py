#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""core-compare.py KERNEL_CORE OUR_CORE [--zeros-ok VA]...: compare a core
of a process that `kcoredump pid` wrote with the one the kernel wrote of
the same process (idle in between): every PT_LOAD the kernel filled must be
ours, with the same flags, size and bytes, and we must dump nothing the
kernel did not.  --zeros-ok VA: the segment at VA may be all zeros in ours
whatever the kernel's holds (Linux 7.3's [vvar], which no other process
can fault in).  Exit 0 if so, 1 with the differences listed."""
import os
import struct
import sys

def loads(path):
    f = open(path, "rb")
    eh = f.read(64)
    out = {}
    if eh[4] == 1:  # ELFCLASS32: the core of a 32-bit process
        phoff, = struct.unpack_from("<I", eh, 28)
        phnum, = struct.unpack_from("<H", eh, 44)
        f.seek(phoff)
        for _ in range(phnum):
            t, off, va, pa, fs, ms, fl, al = struct.unpack("<IIIIIIII",
                                                           f.read(32))
            if t == 1:
                out[va] = (off, fs, fl)
        return f, out
    phoff, = struct.unpack_from("<Q", eh, 32)
    phnum, = struct.unpack_from("<H", eh, 56)
    f.seek(phoff)
    for _ in range(phnum):
        t, fl, off, va, pa, fs, ms, al = struct.unpack("<IIQQQQQQ", f.read(56))
        if t == 1:
            out[va] = (off, fs, fl)
    return f, out

CHUNK = 8 << 20


def hole(f, off, n):
    """Whether [off, off + n) of f is a file hole (reads as zeros)."""
    try:
        return os.lseek(f.fileno(), off, os.SEEK_DATA) >= off + n
    except OSError:  # ENXIO: only a hole up to the end of the file
        return True


def same_bytes(a, aoff, b, boff, n):
    """Compare in chunks, skipping what both files leave as holes."""
    pos = 0
    while pos < n:
        m = min(CHUNK, n - pos)
        if not (hole(a, aoff + pos, m) and hole(b, boff + pos, m)):
            a.seek(aoff + pos)
            b.seek(boff + pos)
            if a.read(m) != b.read(m):
                return False
        pos += m
    return True


def zeros(f, off, n):
    pos = 0
    while pos < n:
        m = min(CHUNK, n - pos)
        if not hole(f, off + pos, m):
            f.seek(off + pos)
            if f.read(m).strip(b"\0"):
                return False
        pos += m
    return True


args = sys.argv[1:]
zeros_ok = set()
while "--zeros-ok" in args:
    i = args.index("--zeros-ok")
    zeros_ok.add(int(args[i + 1], 16))
    del args[i:i + 2]
kf, k = loads(args[0])
of, o = loads(args[1])
bad = 0
for va, (koff, kfs, kfl) in sorted(k.items()):
    if kfs and va not in o:
        print("kernel dumped 0x%x (%d bytes), we did not" % (va, kfs))
        bad += 1
for va, (off, fs, fl) in sorted(o.items()):
    if va not in k:
        print("we dumped 0x%x, the kernel has no such segment" % va)
        bad += 1
        continue
    koff, kfs, kfl = k[va]
    if (kfs, kfl) != (fs, fl):
        print("0x%x: size/flags %d/%d, kernel %d/%d" % (va, fs, fl, kfs, kfl))
        bad += 1
        continue
    if not same_bytes(kf, koff, of, off, fs):
        if va in zeros_ok and zeros(of, off, fs):
            print("0x%x: zeros in ours, the kernel's data in its core "
                  "(allowed)" % va)
            continue
        print("0x%x: content differs" % va)
        bad += 1
print("%d segments compared, %d differences" % (len(o), bad))
sys.exit(1 if bad else 0)
