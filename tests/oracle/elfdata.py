# SPDX-License-Identifier: MIT
"""ELF cores as the oracles read them: the PT_LOADs that have a physical
address, and the runs of a file's bytes that hold data (SEEK_DATA and
SEEK_HOLE: holes are not read)."""
import os
import struct

NO_PADDR = 2**64 - 1


def phys_loads(f):
    """(p_paddr, p_offset, p_filesz) of each PT_LOAD of the 64-bit
    little-endian ELF file f (open, binary) that has a physical address;
    ValueError when f is not one."""
    f.seek(0)
    eh = f.read(64)
    if eh[:4] != b"\x7fELF" or len(eh) < 64 or eh[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    phoff, = struct.unpack_from("<Q", eh, 32)
    phentsize, phnum = struct.unpack_from("<HH", eh, 54)
    f.seek(phoff)
    ph = f.read(phentsize * phnum)
    loads = []
    for i in range(phnum):
        (typ, _flags, off, _vaddr, pa, filesz, _memsz,
         _align) = struct.unpack_from("<IIQQQQQQ", ph, i * phentsize)
        if typ == 1 and pa != NO_PADDR:
            loads.append((pa, off, filesz))
    return loads


def data_runs(fd, start, end):
    """The runs [d, e) of the file's bytes [start, end) that hold data."""
    pos = start
    while pos < end:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: only a hole is left
            return
        if d >= end:
            return
        e = min(os.lseek(fd, d, os.SEEK_HOLE), end)
        yield d, e
        pos = e
