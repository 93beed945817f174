#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Oracle: kcoredump --exclude 31 leaves out the pages makedumpfile -d 31
leaves out, on a real kernel's memory (an ELF dump of a VM guest).

    exclude-mdf.py KCOREDUMP ELF

Both tools read the same ELF file; the pages each one left out are read
from the bitmaps of their kdump files (bitmap 2 against bitmap 1), and
compared on every page of RAM (bitmap 2 of our kdump without --exclude,
which holds each page, zeros too).  `verify -d 31` of makedumpfile's file
counts a page only where the source's bytes differ from the zeros read
back: its expected counts are taken over the pages of the ELF file that are
not all zero.  On a kernel makedumpfile 1.7.2 knows (Debian 12's 6.1)
the two sets must be equal.  On a later kernel each difference must be one
of the two that are makedumpfile 1.7.2's own gaps, told apart by reading
the struct page (through our `kcoredump cat`):
  - we leave out the tail pages of a compound page whose head both leave
    out: since Linux 6.9 the order is in the low byte of the first tail's
    flags (makedumpfile 1.7.2 reads page.compound_order, gone);
  - makedumpfile leaves out a slab page as anonymous: since Linux 6.10 a
    slab page is told by page_type (NUMBER(PAGE_SLAB_MAPCOUNT_VALUE)),
    not PG_slab, and its mapping field has bit 0 set.
Prints TAP; exits 1 on an unexplained difference.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import elfdata

n = 0
fail = False


def ok(cond, what):
    global n, fail
    n += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n, what))
    if not cond:
        fail = True


def bitmaps(path):
    with open(path, "rb") as f:
        h = f.read(4096)
        bs, sub, blocks = struct.unpack_from("<iii", h, 428)
        f.seek(bs)
        s = f.read(16)
        level = struct.unpack_from("<I", s, 8)[0]
        f.seek((1 + sub) * bs)
        b = f.read(blocks * bs)
    half = len(b) // 2
    return b[:half], b[half:], level


def pfns(bm, mask_fn):
    out = set()
    for i in range(len(bm)):
        v = mask_fn(i)
        if v:
            for k in range(8):
                if v >> k & 1:
                    out.add(i * 8 + k)
    return out


def nonzero_pfns(path):
    """The page frames of the ELF file whose bytes are not all zero (its
    file holes are skipped with SEEK_DATA)."""
    zero = bytes(4096)
    out = set()
    with open(path, "rb") as f:
        try:
            loads = elfdata.phys_loads(f)
        except ValueError as e:
            raise SystemExit("Bail out! %s: %s" % (path, e))
        fd = f.fileno()
        for paddr, off, filesz in loads:
            if not filesz or paddr % 4096 or off % 4096:
                continue
            for d, e in elfdata.data_runs(fd, off, off + filesz):
                d -= d % 4096
                while d < e:
                    n = min(e - d, 1 << 20)
                    buf = os.pread(fd, n, d)
                    for k in range(0, len(buf), 4096):
                        page = buf[k:k + 4096]
                        if page != zero[:len(page)]:
                            out.add((paddr + d - off + k) // 4096)
                    d += n
    return out


def main():
    kcoredump, elf = sys.argv[1], sys.argv[2]
    if not os.access(elf, os.R_OK):
        print("# SKIP: no guest dump %s (run ctest -R vm-formats first)" % elf)
        return 77
    if not shutil.which("makedumpfile"):
        print("# SKIP: makedumpfile not installed")
        return 77
    tmpdir = tempfile.TemporaryDirectory(prefix="kcoredump-exclude.")
    tmp = tmpdir.name
    mdf = os.path.join(tmp, "mdf.kdump")
    ours = os.path.join(tmp, "ours.kdump")
    full = os.path.join(tmp, "full.kdump")
    r = subprocess.run(["makedumpfile", "-c", "-d", "31", elf, mdf],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("Bail out! makedumpfile -c -d 31 failed: " + r.stderr[-300:])
        return 1
    out = subprocess.run([kcoredump, "convert", "-q", "--json", "--format",
                          "kdump", "--exclude", "31", elf, "-o", ours],
                         capture_output=True, text=True, check=True).stdout
    summary = json.loads(out)
    subprocess.run([kcoredump, "convert", "-q", "--format", "kdump", elf,
                    "-o", full], check=True)
    m1, m2, mlevel = bitmaps(mdf)
    o1, o2, olevel = bitmaps(ours)
    f1, f2, _ = bitmaps(full)
    ok(olevel == 31, "our kdump's dump_level is 31 like makedumpfile's (%s, %s)"
       % (olevel, mlevel))
    size = min(len(m1), len(o1), len(f2))
    ok(m1[:size] == o1[:size], "bitmap 1 (the RAM) is the same")
    data = pfns(f2, lambda i: f2[i] if i < size else 0)
    mdf_out = pfns(m1, lambda i: (m1[i] & ~m2[i] & 0xff) if i < size else 0)
    our_out = pfns(o1, lambda i: (o1[i] & ~o2[i] & 0xff) if i < size else 0)
    mdf_out &= data
    our_out &= data
    ours_only = sorted(our_out - mdf_out)
    mdf_only = sorted(mdf_out - our_out)
    ex = summary["exclude"]
    print("# makedumpfile left out %d pages of RAM, kcoredump %d "
          "(free %d, cache %d, cache-private %d, user %d); %d only by us, "
          "%d only by makedumpfile" % (len(mdf_out), len(our_out), ex["free"],
                                       ex["cache"], ex["cache_private"],
                                       ex["user"], len(ours_only),
                                       len(mdf_only)))
    ok(len(our_out) > 1000, "kcoredump left out pages of RAM (%d)"
       % len(our_out))
    # verify -d 31 of makedumpfile's file against the source: a page
    # both left out is counted apart; one only makedumpfile left out is a
    # difference, one only we left out is intact in its file.
    v = json.loads(subprocess.run([kcoredump, "verify", "--json", "-d", "31",
                                   mdf, elf], capture_output=True,
                                  text=True).stdout)
    nz = nonzero_pfns(elf)
    both = len(our_out & mdf_out & nz)
    mdf_only_nz = len(set(mdf_only) & nz)
    ok(v["exclude_level"] == 31 and
       v["source_bytes_differ"] == 4096 * mdf_only_nz and
       v["source_bytes_excluded"] == 4096 * both,
       "verify -d 31 of makedumpfile's file: %d bytes differ (%d pages "
       "not all zero only it left out), %d excluded (%d pages not all zero "
       "both left out)"
       % (v["source_bytes_differ"], mdf_only_nz,
          v["source_bytes_excluded"], both))
    if not ours_only and not mdf_only:
        ok(True, "the same pages left out as makedumpfile -d 31")
        print("1..%d" % n)
        return 1 if fail else 0

    info = json.loads(subprocess.run([kcoredump, "info", "--json", elf],
                                     capture_output=True, text=True,
                                     check=True).stdout)
    vi = info["vmcoreinfo"]["lines"]
    size_page = int(vi["SIZE(page)"])
    slab = vi.get("NUMBER(PAGE_SLAB_MAPCOUNT_VALUE)")
    slab = int(slab) & 0xffffffff if slab is not None else None
    new_order = "NUMBER(PAGE_HUGETLB_MAPCOUNT_VALUE)" in vi
    head_mask = int(vi["NUMBER(PG_head_mask)"])
    o_flags = int(vi["OFFSET(page.flags)"])
    o_head = int(vi["OFFSET(page.compound_head)"])
    o_mc = int(vi["OFFSET(page._mapcount)"])
    ms = int(vi["SYMBOL(mem_section)"], 16)
    shift = int(vi["NUMBER(SECTION_SIZE_BITS)"]) - 12
    per_root = 4096 // int(vi["SIZE(mem_section)"])

    def cat(addr, length):
        return subprocess.run([kcoredump, "cat", elf, "--addr", hex(addr),
                               "--len", str(length), "--raw"],
                              capture_output=True, check=True).stdout

    maps = {}
    pages = {}  # a section's struct pages, read at once

    def struct_page(pfn):
        nr = pfn >> shift
        if nr not in maps:
            root = struct.unpack("<Q", cat(ms + nr // per_root * 8, 8))[0]
            entry = struct.unpack(
                "<Q", cat(root + nr % per_root * 32, 8))[0]
            maps[nr] = entry & ~0x3f
            first = nr << shift
            pages[nr] = cat(maps[nr] + first * size_page,
                            (1 << shift) * size_page)
        i = (pfn - (nr << shift)) * size_page
        p = pages[nr][i:i + 2 * size_page]
        return p if len(p) == 2 * size_page else p + bytes(size_page)

    def fields(pfn):
        p = struct_page(pfn)
        return (struct.unpack_from("<Q", p, o_flags)[0],
                struct.unpack_from("<Q", p, o_head)[0],
                struct.unpack_from("<I", p, o_mc)[0],
                struct.unpack_from("<Q", p, size_page + o_flags)[0])

    # Our extra pages: tails of a head both left out, inside its order.
    unexplained = []
    heads = {}
    for pfn in ours_only:
        flags, head, mc, _ = fields(pfn)
        found = False
        if head & 1 and new_order:
            # The head's struct page address, back to its pfn.
            hp = (head & ~1)
            base = maps[pfn >> shift]
            hpfn = (hp - base) // size_page
            if hpfn not in heads:
                hflags, _, _, flags1 = fields(hpfn)
                heads[hpfn] = (hflags, flags1 & 0xff)
            hflags, order = heads[hpfn]
            # The head itself may be a zero page (not among the pages
            # with data): ask makedumpfile's bitmaps directly.
            mdf_left_head = (m1[hpfn >> 3] & ~m2[hpfn >> 3]) >> (hpfn & 7) & 1
            found = (hflags & head_mask and mdf_left_head and
                     hpfn <= pfn < hpfn + (1 << order))
        if not found:
            unexplained.append(pfn)
    ok(not unexplained,
       "each of the %d pages only we left out is a tail of a compound page "
       "both left out, within the head's order (first tail's flags byte)%s"
       % (len(ours_only), (": not " + ", ".join(hex(p) for p in
                                                  unexplained[:8]))
          if unexplained else ""))
    unexplained = []
    for pfn in mdf_only:
        flags, head, mc, _ = fields(pfn)
        if not (slab is not None and mc == slab):
            unexplained.append(pfn)
    ok(not unexplained,
       "each of the %d pages only makedumpfile left out is a slab page "
       "(page_type PAGE_SLAB_MAPCOUNT_VALUE) it took for anonymous%s"
       % (len(mdf_only), (": not " + ", ".join(hex(p) for p in
                                                 unexplained[:8]))
          if unexplained else ""))
    print("1..%d" % n)
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
