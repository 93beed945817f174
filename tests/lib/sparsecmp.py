#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""sparsecmp.py A B: exit 0 if A and B hold the same bytes, 1 if not
(saying where), 2 on error.  A may be "-" (standard input, e.g. a pipe);
B is a file.  Like `cmp -s`, but a regular file's holes (SEEK_HOLE) are
known to be zeros instead of read: comparing a 4 GiB dump of a mostly
empty machine costs its data, not 4 GiB of page cache.
"""
import os
import sys

CHUNK = 1 << 20
ZEROS = bytes(CHUNK)


def data_ranges(fd, size):
    """The [start, end) ranges of a file that may hold data."""
    out = []
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: only a hole is left
            break
        end = os.lseek(fd, start, os.SEEK_HOLE)
        out.append((start, min(end, size)))
        pos = end
    return out


def is_file(fd):
    import stat
    return stat.S_ISREG(os.fstat(fd).st_mode)


def differ(where):
    print(f"sparsecmp: differ at byte {where}", file=sys.stderr)
    sys.exit(1)


def cmp_files(a, b):
    size = os.fstat(a).st_size
    if os.fstat(b).st_size != size:
        print(f"sparsecmp: sizes {size} and {os.fstat(b).st_size}",
              file=sys.stderr)
        sys.exit(1)
    ranges = sorted(data_ranges(a, size) + data_ranges(b, size))
    pos = 0
    for start, end in ranges:
        start = max(start, pos)
        while start < end:
            n = min(CHUNK, end - start)
            if os.pread(a, n, start) != os.pread(b, n, start):
                differ(start)
            start += n
        pos = max(pos, end)


def zeros(n, cache={}):
    z = cache.get(n)
    if z is None:
        z = cache[n] = bytes(n)
    return z


def cmp_stream(a, b):
    """a a stream, b a regular file."""
    size = os.fstat(b).st_size
    ranges = data_ranges(b, size)
    try:  # fewer, larger reads from a pipe
        import fcntl
        fcntl.fcntl(a, 1031, CHUNK)  # F_SETPIPE_SZ
    except (OSError, ImportError):
        pass
    pos = 0
    ri = 0
    while True:
        chunk = os.read(a, CHUNK)
        n = len(chunk)
        if n == 0:
            break
        if pos + n > size:
            differ(size)
        # Walk this chunk: data ranges of b are read, holes must be zeros.
        off = 0
        while off < n:
            p = pos + off
            while ri < len(ranges) and ranges[ri][1] <= p:
                ri += 1
            if ri < len(ranges) and ranges[ri][0] <= p:
                m = min(n - off, ranges[ri][1] - p)
                want = os.pread(b, m, p)
            else:
                nxt = ranges[ri][0] if ri < len(ranges) else size
                m = min(n - off, nxt - p)
                want = zeros(m)
            got = chunk if (off == 0 and m == n) else chunk[off:off + m]
            if got != want:
                differ(p)
            off += m
        pos += n
    if pos != size:
        print(f"sparsecmp: {pos} bytes, then EOF; the file has {size}",
              file=sys.stderr)
        sys.exit(1)


def main():
    if len(sys.argv) != 3:
        print("usage: sparsecmp.py A|- B", file=sys.stderr)
        sys.exit(2)
    try:
        a = 0 if sys.argv[1] == "-" else os.open(sys.argv[1], os.O_RDONLY)
        b = os.open(sys.argv[2], os.O_RDONLY)
        if not is_file(b):
            print(f"sparsecmp: {sys.argv[2]}: not a regular file",
                  file=sys.stderr)
            sys.exit(2)
        if is_file(a):
            cmp_files(a, b)
        else:
            cmp_stream(a, b)
    except OSError as e:
        print(f"sparsecmp: {e}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)


if __name__ == "__main__":
    main()
