# SPDX-License-Identifier: MIT
"""ELF cores as the oracles read them: the PT_LOADs that have a physical
address, and the runs of a file's bytes that hold data (SEEK_DATA and
SEEK_HOLE: holes are not read)."""
import os
import struct

NO_PADDR = 2**64 - 1


def phdrs(f):
    """(p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz) of each
    program header of the 64-bit little-endian ELF file f (open, binary;
    e_phnum PN_XNUM: the count in section 0's sh_info); ValueError when f
    is not one."""
    f.seek(0)
    eh = f.read(64)
    if eh[:4] != b"\x7fELF" or len(eh) < 64 or eh[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    phoff, = struct.unpack_from("<Q", eh, 32)
    phentsize, phnum = struct.unpack_from("<HH", eh, 54)
    if phnum == 0xFFFF:
        shoff, = struct.unpack_from("<Q", eh, 40)
        f.seek(shoff + 44)
        phnum, = struct.unpack("<I", f.read(4))
    f.seek(phoff)
    table = f.read(phentsize * phnum)
    out = []
    for i in range(phnum):
        (p_type, _flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz,
         _align) = struct.unpack_from("<IIQQQQQQ", table, i * phentsize)
        out.append((p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz))
    return out


def phys_loads(f):
    """(p_paddr, p_offset, p_filesz) of each PT_LOAD of the 64-bit
    little-endian ELF file f (open, binary) that has a physical address;
    ValueError when f is not one."""
    return [(pa, off, filesz)
            for typ, off, _va, pa, filesz, _memsz in phdrs(f)
            if typ == 1 and pa != NO_PADDR]


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
