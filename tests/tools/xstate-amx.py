#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Rewrite a process core as a CPU with AMX would have it: every
NT_X86_XSTATE note grown to 11008 bytes (the XSAVE size with the AMX tile
config and data components, XCR0 bits 17 and 18), the extra bytes zero,
XCR0 in the software-reserved bytes (offset 464) with the AMX bits set.
gdb 13 warns "Unexpected size of section '.reg-xstate/TID'" on such a core
(as on the kernel's own cores on those CPUs); eu-stack and drgn must not
care.  Only the note segment changes: PT_LOADs are moved by the growth.

  xstate-amx.py IN OUT

Exit 0 when the notes were grown; 3 when every NT_X86_XSTATE note of IN
already has the AMX size (IN comes from a CPU with AMX: its own notes are
the ones to check, and OUT is not written); 1 on any other problem (no
XSTATE note at all, not a core).
"""
import os
import struct
import sys

NT_X86_XSTATE = 0x202
AMX_SIZE = 11008
XCR0_OFF = 464
AMX_BITS = (1 << 17) | (1 << 18)


def align4(n):
    return (n + 3) & ~3


def main():
    src = open(sys.argv[1], "rb")
    head = src.read(1 << 20)
    if head[:4] != b"\x7fELF" or head[4] != 2:
        sys.exit("not a 64-bit ELF core")
    phoff, = struct.unpack_from("<Q", head, 32)
    phnum, = struct.unpack_from("<H", head, 56)
    phdrs = [list(struct.unpack_from("<IIQQQQQQ", head, phoff + 56 * i))
             for i in range(phnum)]
    first_load = min(p[2] for p in phdrs if p[0] == 1)
    src.seek(0)
    data = bytearray(src.read(first_load))
    note = next(p for p in phdrs if p[0] == 4)
    off, size = note[2], note[5]
    out, pos, grown, amx_sized = bytearray(), off, 0, 0
    while pos < off + size:
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        name = data[pos + 12:pos + 12 + namesz]
        dpos = pos + 12 + align4(namesz)
        desc = bytearray(data[dpos:dpos + descsz])
        if ntype == NT_X86_XSTATE and descsz < AMX_SIZE:
            xcr0, = struct.unpack_from("<Q", desc, XCR0_OFF)
            struct.pack_into("<Q", desc, XCR0_OFF, xcr0 | AMX_BITS)
            desc += bytes(AMX_SIZE - descsz)
            grown += 1
        elif ntype == NT_X86_XSTATE:
            amx_sized += 1
        out += struct.pack("<III", namesz, len(desc), ntype)
        out += name + bytes(align4(namesz) - namesz)
        out += desc + bytes(align4(len(desc)) - len(desc))
        pos = dpos + align4(descsz)
    if not grown and amx_sized:
        print("%d NT_X86_XSTATE notes already have %d bytes or more (a CPU "
              "with AMX)" % (amx_sized, AMX_SIZE))
        sys.exit(3)
    if not grown:
        sys.exit("no NT_X86_XSTATE note to grow")
    # Keep the loads page aligned after the grown notes.
    shift = (len(out) - size + 4095) & ~4095
    new = bytearray(data[:off]) + out
    new += bytes(first_load + shift - len(new))
    for i, p in enumerate(phdrs):
        if p[0] == 4:
            p[5] = p[6] = len(out)
        elif p[2] >= first_load:
            p[2] += shift
        struct.pack_into("<IIQQQQQQ", new, phoff + 56 * i, *p)
    dst = open(sys.argv[2], "wb")
    dst.write(new)
    # The loads' data, holes kept (a process core may be 64 GiB sparse).
    fd, end = src.fileno(), os.fstat(src.fileno()).st_size
    pos = first_load
    while pos < end:
        try:
            pos = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break
        hole = os.lseek(fd, pos, os.SEEK_HOLE)
        while pos < hole:
            n = min(hole - pos, 1 << 20)
            dst.seek(pos + shift)
            dst.write(os.pread(fd, n, pos))
            pos += n
    dst.truncate(end + shift)
    print("%d NT_X86_XSTATE notes grown to %d bytes" % (grown, AMX_SIZE))


main()
