#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check an ELF core's program header order, and what a scan of its
physical memory in the manner of Volatility 3 reaches.

    elf-scan.py FILE [START-END ...]

Order: PT_NOTE first (when there is one), then the PT_LOADs in ascending
p_vaddr, as the ELF ABI asks.

Scan: Volatility 3's Elf64Layer keeps the PT_LOADs whose p_filesz equals
p_memsz (and is not 0) in program header order, without sorting; a
scanning plugin (linux.psscan, banners.Banners) scans from the first kept
segment's p_paddr to the last one's end, and finds the segment of an
address by bisection over that list (layers/segmented.py).  Every byte of
the physical ranges START-END given (hex, END exclusive; the RAM) must be
reached by that scan, in a segment that holds it.  (Volatility's layer
ends one byte before the last segment does, so its scan never reaches the
very last byte of any file; that byte is not held against the file.)

Prints what is wrong, one line each, and exits 1 if anything is.
"""
import bisect
import os
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


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: elf-scan.py FILE [START-END ...]")
    path = sys.argv[1]
    ph = phdrs(path)
    problems = check_order(ph)
    with open(path, "rb") as f:
        f.seek(0, 2)
        end = f.tell()
    covered = sorted(VolatilityScan(ph, end).covered())
    for r in sys.argv[2:]:
        a, b = (int(x, 16) for x in r.split("-"))
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
