#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write AVML's compressed LiME (version 2) files from a LiME v1 file.

The snappy framing comes from python3-snappy's StreamCompressor (not from
kcoredump), so the test reads a framed stream another implementation
wrote.  Layout per range (AVML's src/image.rs): the LiME header with
magic "AVML" and version 2, the framed stream of the range, and a u64
with the stream's length.

  mkavml.py LIME OUTDIR

writes in OUTDIR: mem.avml; pad.avml (a skippable padding chunk, type
0xfe, and a second stream identifier in the first stream, as the format
allows); and broken files: bad-crc.avml (a stored CRC changed),
bad-data.avml (a byte of compressed data changed), bad-reserved.avml (a
reserved chunk type 0x02), bad-trailer.avml (a wrong length trailer),
bad-truncated.avml (cut inside a chunk), bad-version.avml (version 3).
"""
import os
import struct
import sys

import snappy
import snappy.snappy

LIME_MAGIC, AVML_MAGIC = 0x4C694D45, 0x4C4D5641


def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T = _table()


def crc32c(data):
    """CRC-32C, bytewise: Debian 12's python3-snappy has a broken C one
    (SystemError: PY_SSIZE_T_CLEAN on Python 3.11)."""
    c, t = 0xFFFFFFFF, _T
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283
try:  # python3-crcmod's C extension: a 1 GiB file in seconds
    import crcmod.predefined
    _fast = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
    assert _fast(b"123456789") == crc32c(b"123456789")
    crc32c = _fast  # noqa: F811
except ImportError:
    pass
snappy.snappy._crc32c = crc32c


def lime_ranges(data):
    at = 0
    while at < len(data):
        magic, version, s, e = struct.unpack_from("<IIQQ", data, at)
        assert magic == LIME_MAGIC and version == 1, f"not LiME v1 at {at}"
        size = e - s + 1
        yield s, e, data[at + 32:at + 32 + size]
        at += 32 + size


def chunks(stream):
    """(offset, type, length) of each chunk of a framed stream."""
    at = 0
    while at < len(stream):
        (h,) = struct.unpack_from("<I", stream, at)
        yield at, h & 0xFF, h >> 8
        at += 4 + (h >> 8)


def build(ranges, brk=None, pad=False):
    ranges = [[s, e, bytearray(st), 0] for s, e, st in ranges]
    if pad:
        # after the first identifier (10 bytes): padding, an identifier again
        extra = struct.pack("<I", 0xFE | (5 << 8)) + b"\0" * 5
        extra += struct.pack("<I", 0xFF | (6 << 8)) + b"sNaPpY"
        ranges[0][2][10:10] = extra
    if brk in ("crc", "data", "reserved"):
        # the first compressed chunk of the file
        r, (at, _, length) = next((r, c) for r in ranges
                                  for c in chunks(r[2]) if c[1] == 0)
        stream = r[2]
        if brk == "crc":
            stream[at + 4] ^= 0x01
        elif brk == "data":
            stream[at + 4 + 4 + length // 2] ^= 0x55
        else:
            stream[at] = 0x02
    if brk == "trailer":
        ranges[-1][3] = 1
    res = bytearray()
    for n, (s, e, stream, delta) in enumerate(ranges):
        version = 3 if brk == "version" and n == 0 else 2
        res += struct.pack("<IIQQQ", AVML_MAGIC, version, s, e, 0)
        res += stream
        res += struct.pack("<Q", len(stream) + delta)
    if brk == "truncated":
        res = res[:len(res) // 2]
    return bytes(res)


def main():
    src, outdir = sys.argv[1:3]
    data = open(src, "rb").read()
    ranges = [(s, e, snappy.StreamCompressor().add_chunk(mem))
              for s, e, mem in lime_ranges(data)]

    def write(name, b):
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(b)

    write("mem.avml", build(ranges))
    write("pad.avml", build(ranges, pad=True))
    for brk in ("crc", "data", "reserved", "trailer", "truncated", "version"):
        write(f"bad-{brk}.avml", build(ranges, brk))


if __name__ == "__main__":
    main()
