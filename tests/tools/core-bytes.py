#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""core-bytes.py A B [--allow VA]... [--allow-stack] [--strict VA]...
[--trailer]: compare two ELF64 cores of the same program, run twice the
same way (no ASLR), byte for byte: the same size, ELF header and program
headers, and the same bytes everywhere but in the PT_NOTE segment (CPU
times, registers) and in the PT_LOADs at the VAs given, or the highest
user one with --allow-stack (the stack: the kernel's AT_RANDOM bytes
differ per exec).  --trailer: what follows the last segment (our metadata
trailer: times, the command line) is not compared, nor the sizes beyond
it.  With --strict, only the PT_LOADs at those VAs must be the same;
the other differences (what the process derived from AT_RANDOM: stack
canary, pointer guard) are listed.  Holes
(SEEK_HOLE) are known zeros, not read.  Prints the differing bytes per
segment; exit 0 if only allowed ones differ, 1 if not, 2 on error."""
import os
import struct
import sys

CHUNK = 1 << 20


def phdrs(f):
    eh = os.pread(f, 64, 0)
    if eh[:4] != b"\177ELF" or eh[4] != 2:
        raise SystemExit("not an ELF64 core")
    phoff, = struct.unpack_from("<Q", eh, 32)
    phnum, = struct.unpack_from("<H", eh, 56)
    raw = os.pread(f, 56 * phnum, phoff)
    return eh, raw, [struct.unpack_from("<IIQQQQQQ", raw, 56 * i)
                     for i in range(phnum)]


def data(f, size):
    out, pos = [], 0
    while pos < size:
        try:
            s = os.lseek(f, pos, os.SEEK_DATA)
        except OSError:
            break
        e = os.lseek(f, s, os.SEEK_HOLE)
        out.append((s, e))
        pos = e
    return out


def main():
    args = sys.argv[1:]
    allow = {int(args[i + 1], 0) for i, a in enumerate(args) if a == "--allow"}
    strict = {int(args[i + 1], 0) for i, a in enumerate(args)
              if a == "--strict"}
    stack = "--allow-stack" in args
    trailer = "--trailer" in args
    paths = [a for i, a in enumerate(args)
             if a not in ("--allow", "--allow-stack", "--strict", "--trailer")
             and (i == 0 or args[i - 1] not in ("--allow", "--strict"))]
    if len(paths) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    fa, fb = (os.open(p, os.O_RDONLY) for p in paths)
    sa, sb = os.fstat(fa).st_size, os.fstat(fb).st_size
    eha, rawa, pa = phdrs(fa)
    ehb, rawb, pb = phdrs(fb)
    if trailer:
        phoff, = struct.unpack_from("<Q", eha, 32)
        sa = min(sa, max([phoff + len(rawa)] + [p[2] + p[5] for p in pa]))
        sb = min(sb, max([phoff + len(rawb)] + [p[2] + p[5] for p in pb]))
    bad = []
    if sa != sb:
        bad.append("sizes %d and %d" % (sa, sb))
    if eha != ehb or rawa != rawb:
        bad.append("the ELF or program headers differ")
    if bad:
        print("\n".join(bad))
        return 1
    if stack:
        user = [p[3] for p in pa if p[0] == 1 and p[3] < 1 << 47]
        if user:
            allow.add(max(user))
    if strict:
        if not all(any(p[0] == 1 and p[3] == va for p in pa) for va in strict):
            print("no PT_LOAD at each of the --strict addresses")
            return 1
        allow |= {p[3] for p in pa if p[0] == 1 and p[3] not in strict}
    ok_ranges = [(p[2], p[2] + p[5]) for p in pa
                 if p[0] == 4 or (p[0] == 1 and p[3] in allow)]
    # The union of both files' data ranges: elsewhere both are zeros.
    ranges = []
    for s, e in sorted(data(fa, sa) + data(fb, sb)):
        e = min(e, sa)
        if ranges and s <= ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], e))
        else:
            ranges.append((s, e))
    diff = {}
    compared = 0
    for s, e in ranges:
        pos = s
        while pos < e:
            n = min(CHUNK, e - pos)
            a, b = os.pread(fa, n, pos), os.pread(fb, n, pos)
            compared += n
            if a != b:
                for i in range(n):
                    if a[i] != b[i]:
                        off = pos + i
                        seg = next((p for p in pa if p[0] in (1, 4) and
                                    p[2] <= off < p[2] + p[5]), None)
                        key = ("note" if seg and seg[0] == 4 else
                               "strict load 0x%x" % seg[3]
                               if seg and seg[3] in strict else
                               "load 0x%x" % seg[3] if seg else "headers")
                        allowed = any(lo <= off < hi for lo, hi in ok_ranges)
                        diff.setdefault((key, allowed), 0)
                        diff[(key, allowed)] += 1
            pos += n
    for (key, allowed), n in sorted(diff.items()):
        print("%s: %d bytes differ%s" % (key, n, "" if allowed else
                                          " (not allowed)"))
    for va in sorted(strict):
        p = next(p for p in pa if p[0] == 1 and p[3] == va)
        print("load 0x%x (%d bytes) the same" % (va, p[5])
              if ("strict load 0x%x" % va, False) not in diff else
              "load 0x%x differs" % va)
    print("%d data bytes compared" % compared)
    return 1 if any(not a for _, a in diff) else 0


if __name__ == "__main__":
    sys.exit(main())
