#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Files whose cost is in their shape, not their size (issue 15 items 9
and 10): bench/hostile.sh times kcoredump on them at growing N, and the
security tests check time and memory bounds on small ones.

  hostile.py elf N OUT       an ELF vmcore with N one-page PT_LOADs that
                             hold no data (PN_XNUM past 65534), and a
                             VMCOREINFO without the direct-map offset, so
                             that it is derived from the segments
  hostile.py kdump N OUT     a kdump whose bitmap 1 has N runs (every
                             other page RAM) and bitmap 2 none: 72 KB for
                             N = 131072
  hostile.py lime N OUT      LiME with N one-byte ranges
  hostile.py sparse-kdump GIB OUT
                             a kdump whose two bitmaps fill GIB GiB
                             (file holes but for the one page dumped):
                             GIB GiB apparent, a few KB on disk
  hostile.py pgtable N OUT   a 45 KB kdump whose kernel page tables map
                             the image with one 2 MiB page and point N
                             direct-map PGD slots (1 to 236) at one PUD
                             whose entries all point at one PMD whose
                             entries all point at one empty PTE table
                             (issue 27 item 2: a walk per 4 KiB took
                             about 25 hours for N = 236)
  hostile.py flat-kdump LOG2 OUT
                             a flattened kdump (makedumpfile -F) whose
                             header declares 2^LOG2 pfns (bitmaps of
                             2^(LOG2-3) bytes each) in 24 KB of records:
                             the headers, the first page of each bitmap
                             with pfn 1 set, one descriptor and its page
  hostile.py truncated-elf LOG2 OUT
                             an 8 KB ELF vmcore whose one PT_LOAD (at
                             offset 4096) declares p_filesz = p_memsz =
                             2^LOG2: all but its first page past the end
                             of the file (issue 42 item 2)
  hostile.py meta-note N OUT an ELF vmcore whose kcoredump metadata note
                             has N distinct k=v lines (issue 42 item 3)
  hostile.py kdump-chunks N OUT
                             a kdump of max_mapnr 2^31 (bitmaps of 256
                             MiB, holes in the file) whose bitmap 1 holds
                             4000 bytes of 0x55 at the start of each of
                             its first N 1 MiB chunks: 16,000 runs each,
                             1.1 MB on disk for N = 256 (issue 42 item 4)
  hostile.py zst-hole-map IN OUT
                             IN (a .zst dump of ours) with a hole map,
                             CRC valid, that calls every byte a hole
                             (KCDHOLE1, the raw runs)
  hostile.py zst-hole-map2 IN OUT
                             the same as a KCDHOLE2 map (compressed runs)
  hostile.py zst-hole-map2-bad IN OUT
                             a KCDHOLE2 map, CRC valid, whose encoded runs
                             end before the count it gives
"""
import struct
import sys

PAGE = 4096
PAGE_OFFSET = 0xFFFF888000000000


def vmcoreinfo():
    text = (
        "OSRELEASE=6.12.0-hostile\n"
        "PAGESIZE=4096\n"
        "SYMBOL(swapper_pg_dir)=ffffffff82a0a000\n"
        "SYMBOL(_stext)=ffffffff81000000\n"
        "NUMBER(pgtable_l5_enabled)=0\n"
    ).encode()
    name = b"VMCOREINFO\0"
    pad = lambda b: b + bytes(-len(b) % 4)
    return struct.pack("<III", len(name), len(text), 0) + pad(name) + pad(text)


def elf(n, out):
    notes = vmcoreinfo()
    phnum = 1 + n
    xnum = phnum >= 0xFFFF
    note_off = 64 + 56 * phnum
    with open(out, "wb") as f:
        shoff = 0
        if xnum:
            shoff = (note_off + len(notes) + 7) // 8 * 8
        eh = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
        eh += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, shoff, 0, 64, 56,
                          0xFFFF if xnum else phnum, 64 if xnum else 0, 1 if xnum else 0, 0)
        f.write(eh)
        ph = [struct.pack("<IIQQQQQQ", 4, 0, note_off, 0, 0, len(notes), len(notes), 0)]
        for i in range(n):
            pa = i * 2 * PAGE
            ph.append(struct.pack("<IIQQQQQQ", 1, 7, note_off + len(notes), PAGE_OFFSET + pa, pa, 0, PAGE, 0))
        f.write(b"".join(ph))
        f.write(notes)
        if xnum:
            f.seek(shoff)
            f.write(struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, phnum, 0, 0))


def kdump(n, out, dumped=(), mapnr=None, sparse=False, pages=None, info=None):
    """Bitmap 1: every other pfn up to 2n; bitmap 2: the pfns in dumped.
    pages: {pfn: 4096 bytes} dumped with their own data; info: the
    VMCOREINFO text of the sub-header."""
    pages = pages or {}
    dumped = sorted(set(dumped) | set(pages))
    max_mapnr = mapnr or 2 * n
    bitmap_len = ((max_mapnr + 7) // 8 + PAGE - 1) // PAGE * PAGE
    sub = struct.pack("<QiiQQ", 0, 1, 0, 0, 0)
    sub += struct.pack("<QQQQQQ", 0, 0, 0, 0, 0, 0)
    sub += struct.pack("<QQQ", 0, max_mapnr, max_mapnr)
    assert len(sub) == 104
    uts = b"".join(f.ljust(65, b"\0") for f in [b"Linux", b"hostile", b"6.12.0", b"#1", b"x86_64", b""])
    hdr = b"KDUMP   " + struct.pack("<i", 6) + uts + bytes(6)
    hdr += struct.pack("<qq", 1700000000, 0)
    hdr += struct.pack("<IiiIIIIIIi", 0, PAGE, 1, 2 * bitmap_len // PAGE, max_mapnr & 0xFFFFFFFF,
                       len(dumped), 0, len(dumped), 0, 1)
    assert len(hdr) == 464
    bm1_off = 2 * PAGE
    bm2_off = bm1_off + bitmap_len
    desc_off = bm2_off + bitmap_len
    data_off = desc_off + 24 * len(dumped)
    with open(out, "w+b") as f:
        f.write(hdr.ljust(PAGE, b"\0"))
        f.write(sub.ljust(PAGE, b"\0"))
        if not sparse:
            f.write(bytes([0x55]) * ((2 * n + 7) // 8))
        for pfn in dumped:
            f.seek(bm1_off + pfn // 8)
            b = f.read(1)
            f.seek(bm1_off + pfn // 8)
            f.write(bytes([(b[0] if b else 0) | 1 << (pfn % 8)]))
            f.seek(bm2_off + pfn // 8)
            b = f.read(1)
            f.seek(bm2_off + pfn // 8)
            f.write(bytes([(b[0] if b else 0) | 1 << (pfn % 8)]))
        own = [pfn for pfn in dumped if pfn in pages]
        f.seek(desc_off)
        for pfn in dumped:
            off = data_off + PAGE * (1 + own.index(pfn)) if pfn in pages else data_off
            f.write(struct.pack("<QIIQ", off, PAGE, 0, 0))
        f.seek(data_off)
        f.write(b"\x42" * PAGE)
        for pfn in own:
            f.write(pages[pfn])
        end = data_off + PAGE * (1 + len(own))
        if info:  # in the sub-header's block, after its fields
            f.seek(PAGE + 32)
            f.write(struct.pack("<QQ", PAGE + 256, len(info)))
            f.seek(PAGE + 256)
            f.write(info)
        f.truncate(max(end, desc_off))


def pgtable(n, out):
    """Kernel page tables at pfns 1 to 6 (phys_base 0): PGD, the image's
    PUD and PMD (one 2 MiB page at 0), the aliased direct-map PUD, PMD
    and the empty PTE table."""
    ent = lambda pfn, flags=0x63: struct.pack("<Q", pfn * PAGE | flags)
    pgd = bytearray(PAGE)
    for slot in range(273, 273 + max(1, min(n, 236))):  # 0xffff888000000000 on
        pgd[slot * 8:slot * 8 + 8] = ent(4)
    pgd[511 * 8:512 * 8] = ent(2)  # __START_KERNEL_map
    pud_text = bytearray(PAGE)
    pud_text[510 * 8:511 * 8] = ent(3)
    pmd_text = bytearray(PAGE)
    pmd_text[0:8] = ent(0, 0xE3)  # present, rw, PSE: 2 MiB at 0
    info = (
        "OSRELEASE=6.12.0-hostile\n"
        "PAGESIZE=4096\n"
        "SYMBOL(init_top_pgt)=ffffffff80001000\n"
        "SYMBOL(_stext)=ffffffff81000000\n"
        "NUMBER(phys_base)=0\n"
        "NUMBER(pgtable_l5_enabled)=0\n"
        "NUMBER(KERNEL_IMAGE_SIZE)=40000000\n"
    ).encode()
    pages = {1: bytes(pgd), 2: bytes(pud_text), 3: bytes(pmd_text),
             4: ent(5) * 512, 5: ent(6) * 512, 6: bytes(PAGE)}
    kdump(0, out, mapnr=1024, sparse=True, pages=pages, info=info)


def flat_kdump(log2, out):
    """A flattened kdump: 2^log2 pfns declared, pfn 1 dumped, ~24 KB."""
    mapnr = 1 << log2
    bitmap_len = max(PAGE, mapnr // 8)
    sub = struct.pack("<QiiQQ", 0, 1, 0, 0, 0)
    sub += struct.pack("<QQQQQQ", 0, 0, 0, 0, 0, 0)
    sub += struct.pack("<QQQ", 0, mapnr, mapnr)
    uts = b"".join(f.ljust(65, b"\0") for f in [b"Linux", b"hostile", b"6.12.0", b"#1", b"x86_64", b""])
    hdr = b"KDUMP   " + struct.pack("<i", 6) + uts + bytes(6)
    hdr += struct.pack("<qq", 1700000000, 0)
    hdr += struct.pack("<IiiIIIIIIi", 0, PAGE, 1, 2 * bitmap_len // PAGE,
                       mapnr & 0xFFFFFFFF, 1, 0, 1, 0, 1)
    bm1 = 2 * PAGE
    bm2 = bm1 + bitmap_len
    desc = bm2 + bitmap_len
    data = desc + PAGE
    first = bytes([0x02]) + bytes(PAGE - 1)  # pfn 1
    recs = [(0, hdr.ljust(PAGE, b"\0")), (PAGE, sub.ljust(PAGE, b"\0")),
            (bm1, first), (bm2, first),
            (desc, struct.pack("<QIIQ", data, PAGE, 0, 0)),
            (data, b"\x42" * PAGE)]
    with open(out, "wb") as f:
        f.write(b"makedumpfile".ljust(16, b"\0") + struct.pack(">qq", 1, 1))
        f.write(bytes(4096 - 32))
        for off, b in recs:
            f.write(struct.pack(">qq", off, len(b)) + b)
        f.write(struct.pack(">qq", -1, -1))


def leb128(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def zst_hole_map(src, out, version=1):
    """src (a .zst dump with our seek table and hole map), its map
    rewritten, with a valid CRC, to call every byte a hole (version 1:
    KCDHOLE1; 2: KCDHOLE2; 3: KCDHOLE2 claiming two runs, encoding one)."""
    import subprocess
    import zlib
    d = open(src, "rb").read()
    n, desc, magic = struct.unpack("<IBI", d[-9:])
    assert magic == 0x8F92EAB1, "no seek table"
    esize = 12 if desc & 0x80 else 8
    tstart = len(d) - (8 + n * esize + 9)
    ents = [list(struct.unpack_from("<II", d, tstart + 8 + i * esize)) for i in range(n)]
    total = sum(e[1] for e in ents)
    mstart = sum(e[0] for e in ents[:-1])
    assert ents[-1][1] == 0 and d[mstart:mstart + 4] == struct.pack("<I", 0x184D2A5B), "no hole map"
    if version == 1:
        body = b"KCDHOLE1" + struct.pack("<QQ", total, 1) + struct.pack("<QQ", 0, total)
    else:
        enc = leb128(0) + leb128(total)
        z = subprocess.run(["zstd", "-q", "-c"], input=enc, stdout=subprocess.PIPE,
                           check=True).stdout
        body = b"KCDHOLE2" + struct.pack("<QQQ", total, 1 if version == 2 else 2, len(enc)) + z
    body += struct.pack("<I", zlib.crc32(body))
    frame = struct.pack("<II", 0x184D2A5B, len(body)) + body
    ents[-1][0] = len(frame)
    table = b"".join(struct.pack("<II", c, u) + (d[tstart + 8 + i * esize + 8:tstart + 8 + i * esize + 12] if esize == 12 else b"")
                     for i, (c, u) in enumerate(ents))
    seek = struct.pack("<II", 0x184D2A5E, len(table) + 9) + table + d[-9:]
    open(out, "wb").write(d[:mstart] + frame + seek)


def truncated_elf(log2, out):
    notes = vmcoreinfo()
    note_off = 64 + 2 * 56
    eh = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    eh += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, 2, 0, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 4, 0, note_off, 0, 0, len(notes), len(notes), 0)
    size = 1 << log2
    ph += struct.pack("<IIQQQQQQ", 1, 7, PAGE, 0, 0, size, size, PAGE)
    with open(out, "wb") as f:
        f.write(eh + ph + notes)
        f.seek(PAGE)
        f.write(b"\x42" * PAGE)


def meta_note(n, out):
    text = b"".join(b"k%d=v\n" % i for i in range(n))
    name = b"KCOREDUMP\0"
    pad = lambda b: b + bytes(-len(b) % 4)
    meta = struct.pack("<III", len(name), len(text), 0x4B434D44) + pad(name) + pad(text)
    notes = vmcoreinfo() + meta
    note_off = 64 + 2 * 56
    data = (note_off + len(notes) + PAGE - 1) // PAGE * PAGE
    eh = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    eh += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, 2, 0, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 4, 0, note_off, 0, 0, len(notes), len(notes), 0)
    ph += struct.pack("<IIQQQQQQ", 1, 7, data, PAGE_OFFSET, 0, PAGE, PAGE, PAGE)
    with open(out, "wb") as f:
        f.write(eh + ph + notes)
        f.seek(data)
        f.write(b"\x42" * PAGE)


def kdump_chunks(n, out):
    """max_mapnr 2^31: bitmaps of 256 MiB each, holes in the file but
    for 4000 bytes of 0x55 (every other pfn RAM) at the start of each of
    the first n 1 MiB chunks of bitmap 1; pfn 0 dumped."""
    mapnr = 1 << 31
    bitmap_len = mapnr // 8
    sub = struct.pack("<QiiQQ", 0, 1, 0, 0, 0)
    sub += struct.pack("<QQQQQQ", 0, 0, 0, 0, 0, 0)
    sub += struct.pack("<QQQ", 0, mapnr, mapnr)
    uts = b"".join(f.ljust(65, b"\0") for f in [b"Linux", b"hostile", b"6.12.0", b"#1", b"x86_64", b""])
    hdr = b"KDUMP   " + struct.pack("<i", 6) + uts + bytes(6)
    hdr += struct.pack("<qq", 1700000000, 0)
    hdr += struct.pack("<IiiIIIIIIi", 0, PAGE, 1, 2 * bitmap_len // PAGE, mapnr & 0xFFFFFFFF,
                       1, 0, 1, 0, 1)
    bm1 = 2 * PAGE
    bm2 = bm1 + bitmap_len
    desc = bm2 + bitmap_len
    data = desc + PAGE
    with open(out, "wb") as f:
        f.write(hdr.ljust(PAGE, b"\0"))
        f.write(sub.ljust(PAGE, b"\0"))
        for c in range(n):
            f.seek(bm1 + (c << 20))
            f.write(b"\x55" * 4000)
        f.seek(bm2)
        f.write(b"\x01")
        f.seek(desc)
        f.write(struct.pack("<QIIQ", data, PAGE, 0, 0))
        f.seek(data)
        f.write(b"\x42" * PAGE)


def lime(n, out):
    rec = bytearray()
    with open(out, "wb") as f:
        for i in range(n):
            s = i * 2 * PAGE
            rec += struct.pack("<IIQQQ", 0x4C694D45, 1, s, s, 0) + b"\x01"
            if len(rec) >= 1 << 20:
                f.write(rec)
                rec = bytearray()
        f.write(rec)


def main():
    kind, out = sys.argv[1], sys.argv[3]
    if kind.startswith("zst-hole-map"):
        zst_hole_map(sys.argv[2], out, {"zst-hole-map": 1, "zst-hole-map2": 2,
                                        "zst-hole-map2-bad": 3}[kind])
        return
    arg = int(sys.argv[2])
    if kind == "elf":
        elf(arg, out)
    elif kind == "kdump":
        kdump(arg, out)
    elif kind == "lime":
        lime(arg, out)
    elif kind == "pgtable":
        pgtable(arg, out)
    elif kind == "truncated-elf":
        truncated_elf(arg, out)
    elif kind == "meta-note":
        meta_note(arg, out)
    elif kind == "kdump-chunks":
        kdump_chunks(arg, out)
    elif kind == "flat-kdump":
        flat_kdump(arg, out)
    elif kind == "sparse-kdump":
        kdump(0, out, dumped=(12345,), mapnr=arg << 32, sparse=True)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
