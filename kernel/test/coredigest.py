#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""coredigest.py CORE...: a digest of each ELF core's bytes, notes masked.

Prints "DIGEST SIZE NONZERO_PAGES NOTE_OFF NOTE_LEN PATH" per core.  Two
cores have the same digest iff they have the same size and the same bytes
everywhere outside their PT_NOTE segments (which hold pids, times and
registers).  The digest covers the file size and every page that is not
all zeros, with its offset, so sparse cores of a TiB are digested by
reading only their data extents (SEEK_DATA/SEEK_HOLE).
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


def digest(path):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        noff, nlen = note_range(f)
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
                        h.update(page)
                pos += len(buf)
        return h.hexdigest(), size, nonzero, noff, nlen


for p in sys.argv[1:]:
    d, size, nz, noff, nlen = digest(p)
    print(d, size, nz, noff, nlen, p)
