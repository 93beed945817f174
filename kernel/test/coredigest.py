#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""coredigest.py [--layout LAYOUT] CORE...: a digest of each ELF core's
bytes, notes masked.

Prints "DIGEST SIZE NONZERO_PAGES NOTE_OFF NOTE_LEN PATH" per core.  Two
cores have the same digest iff they have the same size and the same bytes
everywhere outside their PT_NOTE segments (which hold pids, times and
registers).  The digest covers the file size and every page that is not
all zeros, with its offset, so sparse cores of a TiB are digested by
reading only their data extents (SEEK_DATA/SEEK_HOLE).

With --layout (a crash-shapes layout file, kernel/test/crash-shapes.c),
the pages of its "kernel VADDR LEN NAME" ranges (the vDSO data pages,
which the kernel keeps updating: any two cores differ there, even two of
one kernel) count only as zero or non-zero: their bytes are not hashed.
"""
import hashlib
import os
import struct
import sys

PAGE = 4096


def note_range(f):
    f.seek(0)
    eh = f.read(64)
    if eh[:4] != b"\x7fELF" or eh[4] != 2:
        raise SystemExit(f"{f.name}: not an ELF64 file")
    phoff, = struct.unpack_from("<Q", eh, 32)
    phentsize, phnum = struct.unpack_from("<HH", eh, 54)
    f.seek(phoff)
    ph = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", ph, i * phentsize)
        if p_type == 4:
            return p_offset, p_filesz
    return 0, 0


def extents(fd, size):
    off = 0
    while off < size:
        try:
            start = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            return
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, end
        off = end


def loads(f):
    f.seek(0)
    eh = f.read(64)
    phoff, = struct.unpack_from("<Q", eh, 32)
    phentsize, phnum = struct.unpack_from("<HH", eh, 54)
    f.seek(phoff)
    ph = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", ph, i * phentsize)
        if p_type == 1:
            yield p_offset, p_vaddr, p_filesz


def kernel_ranges(layout):
    """the (vaddr, len) of a layout's "kernel" lines"""
    out = []
    if layout:
        with open(layout) as lf:
            for line in lf:
                w = line.split()
                if len(w) >= 3 and w[0] == "kernel":
                    out.append((int(w[1], 16), int(w[2])))
    return out


def masked_offsets(f, kranges):
    """the file ranges [lo, hi) of the core that hold kranges"""
    out = []
    for off, va, filesz in loads(f):
        for ks, kl in kranges:
            lo, hi = max(va, ks), min(va + filesz, ks + kl)
            if lo < hi:
                out.append((off + lo - va, off + hi - va))
    return out


def digest(path, kranges):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        noff, nlen = note_range(f)
        masked = masked_offsets(f, kranges)
        h = hashlib.sha256(struct.pack("<Q", size))
        nonzero = 0
        zero = bytes(PAGE)
        fd = f.fileno()
        # os.pread only: extents() moves the file offset (SEEK_HOLE)
        for start, end in extents(fd, size):
            pos = start - start % PAGE
            while pos < end:
                buf = os.pread(fd, min(1 << 20, end - pos), pos)
                if not buf:
                    break
                for i in range(0, len(buf), PAGE):
                    page = bytearray(buf[i:i + PAGE])
                    po = pos + i
                    # mask the notes
                    lo, hi = max(po, noff), min(po + len(page), noff + nlen)
                    if lo < hi:
                        page[lo - po:hi - po] = bytes(hi - lo)
                    if page != zero[:len(page)]:
                        nonzero += 1
                        h.update(struct.pack("<Q", po))
                        if any(lo <= po < hi for lo, hi in masked):
                            h.update(b"kernel-updated page, not zero")
                        else:
                            h.update(page)
                pos += len(buf)
        return h.hexdigest(), size, nonzero, noff, nlen


args = sys.argv[1:]
layout = None
if args[:1] == ["--layout"]:
    if len(args) < 2:
        raise SystemExit("usage: coredigest.py [--layout LAYOUT] CORE...")
    layout, args = args[1], args[2:]
kr = kernel_ranges(layout)
for p in args:
    d, size, nz, noff, nlen = digest(p, kr)
    print(d, size, nz, noff, nlen, p)
