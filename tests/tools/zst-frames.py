#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Decode a seekable .zst into a sparse file with the zstd tool itself,
in seconds for a TiB of zeros: each distinct frame (by its bytes) is
decoded once by `zstd -dc`; a frame that gives only zeros becomes a hole
of that size, the others are written out.  zstd decodes the frames of a
file one after another, so OUT holds exactly what `zstd -d FILE` writes
(skippable frames give nothing), without writing the zeros.  The seek
table (the zstd seekable format) gives the frames; every frame's decoded
size must be what the table says.  Prints the frame count, the distinct
frames decoded, the hole bytes and the largest frame's decoded size.

    zst-frames.py FILE.zst OUT
"""
import hashlib
import os
import struct
import subprocess
import sys

SEEKABLE_MAGIC = 0x8F92EAB1
ZSTD_MAGIC = 0xFD2FB528


def fail(msg):
    print(f"zst-frames: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    if len(data) < 17:
        fail("too short")
    n, desc, magic = struct.unpack_from("<IBI", data, len(data) - 9)
    if magic != SEEKABLE_MAGIC:
        fail("no seek table")
    esize = 12 if desc & 0x80 else 8
    start = len(data) - 9 - n * esize - 8
    if start < 0 or struct.unpack_from("<I", data, start)[0] != 0x184D2A5E:
        fail("seek table frame header is wrong")
    decoded = {}
    pos = dpos = holes = biggest = 0
    out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for i in range(n):
        csize, dsize = struct.unpack_from("<II", data, start + 8 + i * esize)
        frame = data[pos:pos + csize]
        if len(frame) != csize:
            fail(f"frame {i} runs past the seek table")
        pos += csize
        biggest = max(biggest, dsize)
        if struct.unpack_from("<I", frame)[0] != ZSTD_MAGIC:
            if dsize:
                fail(f"frame {i}: not a zstd frame but {dsize} bytes")
            continue  # skippable (hole map, room): zstd -d skips it
        key = hashlib.sha256(frame).digest()
        if key not in decoded:
            r = subprocess.run(["zstd", "-dcq"], input=frame,
                               capture_output=True, check=False)
            if r.returncode:
                fail(f"frame {i}: zstd -d: {r.stderr.decode().strip()}")
            b = r.stdout
            decoded[key] = (len(b), None if b.count(0) == len(b) else b)
        got, b = decoded[key]
        if got != dsize:
            fail(f"frame {i}: decodes to {got} bytes, seek table says "
                 f"{dsize}")
        if b is None:
            holes += dsize
        else:
            os.pwrite(out, b, dpos)
        dpos += dsize
    if pos != start:
        fail("seek table sizes do not add up to the file")
    os.ftruncate(out, dpos)
    os.close(out)
    print(f"{n} frames, {len(decoded)} distinct decoded by zstd, "
          f"{holes} bytes of zeros, largest frame {biggest} bytes")


main()
