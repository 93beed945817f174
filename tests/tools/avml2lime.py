#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check an AVML (compressed LiME, version 2) file and write it as LiME.

The reader kcoredump's AVML output is checked with: python3-snappy's
StreamDecompressor decodes each range's framed stream (not kcoredump's
code), and this script checks the layout AVML's src/image.rs gives: per
range the LiME header with magic "AVML", version 2, start, inclusive
end and 8 zero bytes; the framed stream, which opens with the stream
identifier and holds chunks of at most 64 KiB of data; a u64 with the
stream's length.  Ranges ascend and do not overlap.

  avml2lime.py AVML LIME     (LIME '-' for none)

prints one line per range and exits 1 with a reason at the first fault.
"""
import struct
import sys

import snappy

import mkavml  # noqa: F401 (its CRC-32C into python3-snappy, beside us)

AVML_MAGIC, LIME_MAGIC = 0x4C4D5641, 0x4C694D45


def fail(msg):
    print(f"avml2lime: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    src, dst = sys.argv[1:3]
    data = memoryview(open(src, "rb").read())
    out = open(dst, "wb") if dst != "-" else None
    at, prev_end, n = 0, -1, 0
    while at < len(data):
        if len(data) - at < 32:
            fail(f"{src}: a header cut at offset {at}")
        magic, version, s, e, res = struct.unpack_from("<IIQQQ", data, at)
        if magic != AVML_MAGIC or version != 2 or res != 0 or e < s:
            fail(f"{src}: bad range header at offset {at}: magic {magic:#x} "
                 f"version {version} {s:#x}-{e:#x} reserved {res:#x}")
        if s <= prev_end:
            fail(f"{src}: range {s:#x}-{e:#x} does not ascend")
        size = e - s + 1
        p = at + 32
        first = True
        dec = snappy.StreamDecompressor()
        got = 0
        chunks = 0
        while got < size:
            if len(data) - p < 4:
                fail(f"{src}: stream cut at offset {p}")
            (h,) = struct.unpack_from("<I", data, p)
            kind, length = h & 0xFF, h >> 8
            if first and kind != 0xFF:
                fail(f"{src}: range {s:#x} does not open with the "
                     f"stream identifier")
            first = False
            chunk = bytes(data[p:p + 4 + length])
            if len(chunk) != 4 + length:
                fail(f"{src}: chunk cut at offset {p}")
            try:
                plain = dec.decompress(chunk)
            except Exception as ex:  # snappy.UncompressError and friends
                fail(f"{src}: chunk at offset {p}: {ex}")
            if len(plain) > 65536:
                fail(f"{src}: chunk at offset {p} holds {len(plain)} bytes")
            if kind in (0, 1):
                chunks += 1
            if out:
                out.write(struct.pack("<IIQQQ", LIME_MAGIC, 1, s, e, 0)
                          if got == 0 and plain else b"")
                out.write(plain)
            got += len(plain)
            p += 4 + length
        if got != size:
            fail(f"{src}: range {s:#x}-{e:#x} holds {got} bytes, not {size}")
        (trailer,) = struct.unpack_from("<Q", data, p)
        if trailer != p - (at + 32):
            fail(f"{src}: trailer at offset {p} says {trailer}, the stream "
                 f"is {p - (at + 32)} bytes")
        print(f"range {s:#x}-{e:#x}: {chunks} chunks, {p - at - 32} bytes")
        at = p + 8
        prev_end = e
        n += 1
    if n == 0:
        fail(f"{src}: no ranges")
    if out:
        out.close()


if __name__ == "__main__":
    main()
