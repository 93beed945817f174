#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A digest of a file's content: SHA-256 of the file size (8 bytes,
little-endian) and the SHA-256 of its records, one for every 4 KiB block
that is not all zeros: its index (8 bytes, little-endian) and its bytes
(the last block may be short).  Two files have the same digest exactly when they hold the same
bytes, whatever their holes, and a sparse file of a TiB is digested by
reading only its data (SEEK_DATA/SEEK_HOLE).  "-" reads standard input.

    content-digest.py FILE|-
"""
import hashlib
import os
import sys

BLOCK = 4096
CHUNK = 1 << 20


def add(h, base, buf):
    """Hash the non-zero blocks of buf, which starts at block base."""
    if buf.count(0) == len(buf):
        return
    for i in range(0, len(buf), BLOCK):
        b = buf[i:i + BLOCK]
        if b.count(0) != len(b):
            h.update((base + i // BLOCK).to_bytes(8, "little"))
            h.update(b)


def finish(size, h):
    out = hashlib.sha256(size.to_bytes(8, "little"))
    out.update(h.digest())
    return out.hexdigest()


def digest_file(path):
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    pos = 0
    while pos < size:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break  # ENXIO: only holes remain
        end = os.lseek(fd, data, os.SEEK_HOLE)
        data -= data % BLOCK
        while data < end:
            n = min(CHUNK, end - data)
            n += (BLOCK - (data + n) % BLOCK) % BLOCK
            add(h, data // BLOCK, os.pread(fd, n, data))
            data += n
        pos = data
    os.close(fd)
    return finish(size, h)


def digest_stream(f):
    h = hashlib.sha256()
    size = 0
    buf = b""
    while True:
        chunk = f.read(CHUNK)
        if not chunk:
            break
        if not buf and len(chunk) % BLOCK == 0:
            add(h, size // BLOCK, chunk)  # the usual case: no copies
            size += len(chunk)
            continue
        buf += chunk
        n = len(buf) - len(buf) % BLOCK
        add(h, size // BLOCK, buf[:n])
        size += n
        buf = buf[n:]
    add(h, size // BLOCK, buf)
    size += len(buf)
    return finish(size, h)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: content-digest.py FILE|-")
    if sys.argv[1] == "-":
        print(digest_stream(sys.stdin.buffer))
    else:
        print(digest_file(sys.argv[1]))


main()
