#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check an ELF core's program header order, and how Volatility 3 finds
physical addresses in it.

    elf-scan.py FILE [--lime LIME] [START-END ...]

Order: PT_NOTE first (when there is one), then the PT_LOADs in ascending
p_vaddr, as the ELF ABI asks.

Volatility 3's Elf64Layer (layers/elf.py) keeps the PT_LOADs whose
p_filesz equals p_memsz (and is not 0) as (p_paddr, p_offset, size) in
program header order, without sorting, and its SegmentedLayer
(layers/segmented.py) finds the segment of a physical address by binary
search over that list (bisect_right on (address, end of the file)), then
takes the segment before the insertion point if it holds the address,
else the address is invalid.  The search is right only when the list
ascends by p_paddr without overlap, which is what this checks in two ways:

Lookup (exact): every byte of the physical ranges -- START-END given (hex,
END exclusive), and the ranges of the LiME file LIME of the same memory --
must be found by that search in a segment that holds it, and with LIME,
the bytes found must be LIME's bytes at that physical address (compared
where either file holds data; holes read as zeros).  The search's answer
changes only where a segment starts or ends, so it is evaluated at those
addresses and one byte after each, which decides it for every byte.

Scan: a scanning plugin (linux.psscan, banners.Banners) scans from the
first kept segment's p_paddr to the last one's end, skipping to the next
segment where an address is invalid; every byte of the ranges must be
reached by it in a segment that holds it.  (Volatility's layer ends one
byte before the last segment does, so its scan never reaches the very
last byte of any file; that byte is not held against the file.)

Prints what is wrong, one line each, and exits 1 if anything is.
"""
import bisect
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "oracle"))
import elfdata  # noqa: E402  (tests/oracle/elfdata.py)

PT_LOAD, PT_NOTE = 1, 4


def phdrs(path):
    with open(path, "rb") as f:
        try:
            return elfdata.phdrs(f)
        except ValueError as e:
            sys.exit(f"{path}: {e}")


def check_order(ph):
    problems = []
    notes = [i for i, p in enumerate(ph) if p[0] == PT_NOTE]
    if notes and notes[0] != 0:
        problems.append(f"PT_NOTE is program header {notes[0]}, not 0")
    loads = [p for p in ph if p[0] == PT_LOAD]
    for a, b in zip(loads, loads[1:]):
        if b[2] < a[2]:
            problems.append(f"PT_LOAD at p_vaddr 0x{b[2]:x} comes after "
                            f"0x{a[2]:x}")
    return problems


class VolatilityScan:
    """Volatility 3's SegmentedLayer over an Elf64Layer, as far as a scan
    of the whole layer goes."""

    def __init__(self, ph, file_end):
        self.segments = [(p[3], p[1], p[5], p[5]) for p in ph
                         if p[0] == PT_LOAD and p[4] == p[5] and p[4] > 0]
        self.base_max = file_end

    def find(self, offset, next_=False):
        i = bisect.bisect_right(self.segments, (offset, self.base_max))
        if i and not next_:
            s = self.segments[i - 1]
            if s[0] <= offset < s[0] + s[2]:
                return s
        if next_ and i < len(self.segments):
            return self.segments[i]
        return None

    def covered(self):
        """The (start, end) ranges the scan of the layer reaches."""
        if not self.segments:
            return []
        lo = self.segments[0][0]
        hi = self.segments[-1][0] + self.segments[-1][2]
        offset, length, cur, out = lo, hi - lo, lo, []
        while cur < offset + length:
            s = self.find(cur)
            if s is None:
                s = self.find(cur, next_=True)
                if s is None or s[0] > offset + length:
                    break
                cur = s[0]
            start, size = s[0], s[2]
            if cur > start:
                size -= cur - start
                start = cur
            n = min(size, length + offset - start)
            if n <= 0:
                break
            out.append((start, start + n))
            cur += n
        return out


def lime_ranges(path):
    """(start, end, file offset) of each range of a LiME file."""
    out = []
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        while pos + 32 <= size:
            f.seek(pos)
            magic, version, s, e = struct.unpack("<IIQQ", f.read(24))
            if magic != 0x4C694D45 or version != 1 or e < s:
                sys.exit(f"{path}: not a LiME range header at 0x{pos:x}")
            out.append((s, e + 1, pos + 32))
            pos += 32 + e + 1 - s
    return out


def runs_union(fa, a, fb, b, n):
    """Relative runs of [0, n) where file fa at a or fb at b holds data."""
    runs = [(d - a, e - a) for d, e in elfdata.data_runs(fa, a, a + n)]
    runs += [(d - b, e - b) for d, e in elfdata.data_runs(fb, b, b + n)]
    runs.sort()
    merged = []
    for d, e in runs:
        if merged and d <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((d, e))
    return merged


def check_lookup(layer, ranges, elf_fd, lime_fd, problems):
    """Every byte of ranges (start, end, LiME offset or None) is found by
    the search, in a segment holding it, and (with LiME) holds LiME's
    bytes."""
    cuts = set()
    for seg in layer.segments:
        cuts.update((seg[0], seg[0] + seg[2]))
    for start, end, lime_off in ranges:
        points = sorted({start, end} | {c for c in cuts if start < c < end})
        bad = []
        for lo, hi in zip(points, points[1:]):
            found = {layer.find(p) for p in (lo, min(lo + 1, hi - 1))}
            for s in found:
                if s is None or not s[0] <= lo or hi > s[0] + s[2]:
                    bad.append((lo, hi, s))
                    break
                if lime_fd is None:
                    continue
                a = s[1] + (lo - s[0])
                b = lime_off + (lo - start)
                for d, e in runs_union(elf_fd, a, lime_fd, b, hi - lo):
                    p = next((p for p in range(d, e, 1 << 20)
                              if os.pread(elf_fd, min(1 << 20, e - p), a + p)
                              != os.pread(lime_fd, min(1 << 20, e - p),
                                          b + p)), None)
                    if p is not None:
                        bad.append((lo + p, lo + min(p + (1 << 20), e),
                                    "bytes"))
                        break
        for lo, hi, s in bad[:3]:
            if s == "bytes":
                what = "reads other bytes than the LiME file's"
            elif s is None:
                what = "is an invalid address"
            else:
                what = (f"resolves to the segment at p_paddr 0x{s[0]:x} "
                        f"(0x{s[2]:x} bytes), which does not hold it")
            problems.append(f"physical 0x{lo:x}-0x{hi:x} of 0x{start:x}-"
                            f"0x{end:x}: {what} (Volatility 3's lookup)")
        if len(bad) > 3:
            problems.append(f"... and {len(bad) - 3} more such pieces of "
                            f"0x{start:x}-0x{end:x}")


def main():
    args = sys.argv[1:]
    lime = None
    if len(args) >= 2 and args[1] == "--lime" and len(args) >= 3:
        lime = args[2]
        args = args[:1] + args[3:]
    if not args:
        sys.exit("usage: elf-scan.py FILE [--lime LIME] [START-END ...]")
    path = args[0]
    ph = phdrs(path)
    problems = check_order(ph)
    with open(path, "rb") as f:
        f.seek(0, 2)
        end = f.tell()
    layer = VolatilityScan(ph, end)
    given = [tuple(int(x, 16) for x in r.split("-")) for r in args[1:]]
    with open(path, "rb") as ef:
        check_lookup(layer, [(a, b, None) for a, b in given], ef.fileno(),
                     None, problems)
        if lime:
            ranges = lime_ranges(lime)
            given += [(a, b) for a, b, _ in ranges]
            with open(lime, "rb") as lf:
                check_lookup(layer, ranges, ef.fileno(), lf.fileno(),
                             problems)
    covered = sorted(layer.covered())
    for a, b in given:
        pos = a
        for s, e in covered:
            if e <= pos or s >= b:
                continue
            if s > pos:
                break
            pos = max(pos, e)
        if pos < b:
            problems.append(f"RAM 0x{pos:x}-0x{b:x} of 0x{a:x}-0x{b:x} is "
                            f"not reached by a Volatility 3 scan")
    for p in problems:
        print(f"{path}: {p}")
    sys.exit(1 if problems else 0)


main()
