#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write one small x86_64 kernel memory image in every input format
kcoredump reads, built by hand from the published format facts
(../shared/FORMATS.md: makedumpfile's IMPLEMENTATION, crash's diskdump.h,
LiME's header), independently of kcoredump's own code:

  mem.elf        ELF vmcore: kernel text PT_LOAD + direct-map RAM PT_LOADs
  mem.kdump      kdump-compressed v6, pages zlib / zstd / raw, zero pages
                 shared, some pages excluded (cleared in bitmap 2)
  mem.flat       the same kdump flattened (records out of order, a gap)
  mem.diskdump   the same kdump with the old "DISKDUMP" signature
  mem-pageoffset.kdump  with NUMBER(PAGE_OFFSET) in VMCOREINFO
  mem.lime       LiME v1, one range per RAM range
  mem-vmcoreinfo.lime  the memory with the kernel's VMCOREINFO pages (the
                 note, and its text, each at a page start) and banner
  mem-banner.lime      with an x86_64 kernel's "Linux version" banner only
  mem-banner-arm64.lime  with an arm64 kernel's banner only
  mem.elf.zst    plain zstd of mem.elf (no seek table)   [if zstd exists]
  mem.elf.xz     plain xz of mem.elf                     [if xz exists]
  expect.txt     facts the tests check: addresses and their bytes
  bad-*          malformed variants (see tests/integration/malformed.txt)

The memory holds real x86_64 page tables (SYMBOL(init_top_pgt)) mapping
the direct map with a 1 GiB page, the kernel image with 2 MiB pages and
one 4 KiB page at a vmalloc address, and init_uts_ns, so that virtual
translation and makedumpfile (which walks the page tables to read
utsname) work on it.

  mkformats.py OUTDIR [--tiny]
--tiny writes only small files (fuzzing seeds)."""
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import zlib

PAGE = 4096
START_KERNEL_MAP = 0xFFFFFFFF80000000
PAGE_OFFSET = 0xFFFF888000000000
PHYS_BASE = 0x200000
TEXT_VADDR = 0xFFFFFFFF81000000  # _stext, no KASLR
VMALLOC_VADDR = 0xFFFFC90000000000
OSRELEASE = "6.12.0-kcoredump-test"

P = 0x1  # present
RW = 0x2
PSE = 0x80


def pa_symbol(va):
    return va - START_KERNEL_MAP + PHYS_BASE


class Memory:
    def __init__(self, ranges):
        self.ranges = ranges  # [(start, end)) physical, page aligned
        self.pages = {}  # pfn -> bytes (absent = zero, in a RAM range)
        self.excluded = set()  # pfns dumped as excluded (zero) in kdump

    def write(self, pa, data):
        while data:
            pfn, off = divmod(pa, PAGE)
            n = min(len(data), PAGE - off)
            page = bytearray(self.pages.get(pfn, bytes(PAGE)))
            page[off:off + n] = data[:n]
            self.pages[pfn] = bytes(page)
            pa += n
            data = data[n:]

    def page(self, pfn):
        return self.pages.get(pfn, bytes(PAGE))

    def read(self, pa, n):
        out = []
        while n:
            pfn, off = divmod(pa, PAGE)
            k = min(n, PAGE - off)
            out.append(self.page(pfn)[off:off + k])
            pa += k
            n -= k
        return b"".join(out)


def pattern(pa):
    """A page whose bytes say where they are (and compress a little)."""
    words = [struct.pack("<QQ", pa + i * 16, (pa * 2654435761 + i) & (2**64 - 1)) for i in range(PAGE // 16)]
    return b"".join(words)


def build_memory(tiny):
    if tiny:
        ranges = [(0x1000, 0x4000), (0x200000, 0x208000)]
    else:
        ranges = [(0x1000, 0x9F000), (0x100000, 0x1800000)]
    m = Memory(ranges)
    if tiny:
        for pa in (0x1000, 0x3000, 0x200000, 0x203000, 0x205000):
            m.write(pa, pattern(pa))
        m.excluded.add(0x204000 // PAGE)
        return m, None
    # Patterned data in both ranges, zero pages, excluded pages.
    for pa in list(range(0x1000, 0x9000, PAGE)) + list(range(0x100000, 0x120000, PAGE)):
        m.write(pa, pattern(pa))
    m.write(0x5000, bytes(PAGE))  # an explicit zero page
    for pa in range(0x120000, 0x124000, PAGE):  # excluded in the kdump
        m.excluded.add(pa // PAGE)
    # Page tables: PGD, direct map (1 GiB page), kernel image (2 MiB
    # pages), one vmalloc 4 KiB page.
    pt = 0x1500000
    pgd, pud_dm, pud_k, pmd_k, pud_v, pmd_v, pte_v = (pt + i * PAGE for i in range(7))

    def entry(table, index, value):
        m.write(table + index * 8, struct.pack("<Q", value))

    entry(pgd, (PAGE_OFFSET >> 39) & 511, pud_dm | P | RW)
    entry(pud_dm, 0, 0 | P | RW | PSE)
    entry(pgd, (START_KERNEL_MAP >> 39) & 511, pud_k | P | RW)
    entry(pud_k, (START_KERNEL_MAP >> 30) & 511, pmd_k | P | RW)
    for i in range(24):  # 48 MiB of kernel image mapping
        entry(pmd_k, i, (PHYS_BASE + i * 0x200000) | P | RW | PSE)
    entry(pgd, (VMALLOC_VADDR >> 39) & 511, pud_v | P | RW)
    entry(pud_v, (VMALLOC_VADDR >> 30) & 511, pmd_v | P | RW)
    entry(pmd_v, (VMALLOC_VADDR >> 21) & 511, pte_v | P | RW)
    vmalloc_pa = 0x1700000
    entry(pte_v, 0, vmalloc_pa | P | RW)  # entry 1 stays not present
    m.write(vmalloc_pa, b"vmalloc page " + bytes(range(256)) * 3)
    init_top_pgt = START_KERNEL_MAP + pgd - PHYS_BASE
    # init_uts_ns (uts_namespace.name at offset 0): struct new_utsname.
    uts_va = TEXT_VADDR + 0x200000
    fields = [b"Linux", b"kcoredump-test", OSRELEASE.encode(), b"#1 SMP PREEMPT_DYNAMIC", b"x86_64", b"(none)"]
    m.write(pa_symbol(uts_va), b"".join(f.ljust(65, b"\0") for f in fields))
    # FLATMEM for makedumpfile: mem_map points at a struct page array it
    # never reads at dump level 1.
    mem_map_va = TEXT_VADDR + 0x201000
    m.write(pa_symbol(mem_map_va), struct.pack("<Q", 0xFFFFEA0000000000))
    syms = {"mem_map": mem_map_va, "init_top_pgt": init_top_pgt, "swapper_pg_dir": init_top_pgt, "init_uts_ns": uts_va, "_stext": TEXT_VADDR}
    return m, syms


def vmcoreinfo(syms, page_offset=False):
    lines = [f"OSRELEASE={OSRELEASE}", f"PAGESIZE={PAGE}"]
    if page_offset:  # as riscv64 publishes it; x86_64 does not
        lines.append(f"NUMBER(PAGE_OFFSET)={PAGE_OFFSET:#x}")
    if syms:
        lines += [f"SYMBOL({k})={v:x}" for k, v in syms.items()]
        lines += [
            "OFFSET(uts_namespace.name)=0",
            "SIZE(page)=64",
            "OFFSET(page.flags)=0",
            "OFFSET(page._refcount)=52",
            "OFFSET(page.mapping)=24",
            f"NUMBER(phys_base)={PHYS_BASE}",
            "NUMBER(pgtable_l5_enabled)=0",
            "KERNELOFFSET=0",
            "NUMBER(KERNEL_IMAGE_SIZE)=1073741824",
            "NUMBER(sme_mask)=0",
        ]
    return ("\n".join(lines) + "\n").encode()


def banner(arch):
    """linux_banner of a Debian kernel built for arch (x86_64, arm64)."""
    triplet, suffix = {"x86_64": ("x86_64", "amd64"), "arm64": ("aarch64", "arm64")}[arch]
    return (f"Linux version 6.12.38+deb12-{suffix} (debian-kernel@lists.debian.org) "
            f"({triplet}-linux-gnu-gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0, GNU ld "
            f"(GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian "
            f"6.12.38-1~deb12u1 (2025-07-16)\n\0").encode()


def with_kernel_pages(m, syms, vmcoreinfo_pa=None, banner_pa=None, arch="x86_64"):
    """A copy of m with the kernel's VMCOREINFO pages -- its ELF note at
    vmcoreinfo_pa and its text on the next page, as crash_save_vmcoreinfo()
    keeps them, each at a page start -- and linux_banner at banner_pa."""
    k = Memory(m.ranges)
    k.pages = dict(m.pages)
    if vmcoreinfo_pa is not None:
        text = vmcoreinfo(syms)
        k.write(vmcoreinfo_pa, note("VMCOREINFO", 0, text))
        k.write(vmcoreinfo_pa + PAGE, text + b"\0")
    if banner_pa is not None:
        k.write(banner_pa, banner(arch))
    return k


def note(name, ntype, desc):
    name = name.encode() + b"\0"
    pad = lambda b: b + bytes(-len(b) % 4)
    return struct.pack("<III", len(name), len(desc), ntype) + pad(name) + pad(desc)


def notes_blob(syms, page_offset=False):
    prstatus = bytes(336)  # x86_64 elf_prstatus, all zero
    return note("CORE", 1, prstatus) + note("VMCOREINFO", 0, vmcoreinfo(syms, page_offset))


# ---- ELF ----


def write_elf(path, m, syms, notes):
    loads = []
    if syms:  # kernel text first, as kexec-tools does
        loads.append((TEXT_VADDR, pa_symbol(TEXT_VADDR), 0x400000))
    for s, e in m.ranges:
        loads.append((PAGE_OFFSET + s, s, e - s))
    phnum = 1 + len(loads)
    note_off = 64 + 56 * phnum
    off = (note_off + len(notes) + PAGE - 1) // PAGE * PAGE
    ph = struct.pack("<IIQQQQQQ", 4, 0, note_off, 0, 0, len(notes), len(notes), 0)
    where = []
    for va, pa, size in loads:
        ph += struct.pack("<IIQQQQQQ", 1, 7, off, va, pa, size, size, 0)
        where.append((off, pa, size))
        off += size
    eh = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    eh += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, phnum, 64, 0, 0)
    with open(path, "wb") as f:
        f.write(eh + ph + notes)
        for foff, pa, size in where:
            for pfn in range(pa // PAGE, (pa + size) // PAGE):
                if pfn in m.pages and any(m.pages[pfn]):
                    f.seek(foff + pfn * PAGE - pa)
                    f.write(m.pages[pfn])
        f.truncate(off)


# ---- kdump ----


def zstd_compress(data):
    if not shutil.which("zstd"):
        return None
    return subprocess.run(["zstd", "-q", "-c", "-1", "--no-check"], input=data, stdout=subprocess.PIPE, check=True).stdout


def kdump_bytes(m, notes, codec_cycle=("zlib", "zstd", "raw"), version=6, mutate=None):
    """A kdump-compressed dump as bytes.  mutate(fields) may change
    header values before they are packed."""
    max_mapnr = max(e for _, e in m.ranges) // PAGE
    bitmap_len = (max_mapnr + 7) // 8
    bitmap_len = (bitmap_len + PAGE - 1) // PAGE * PAGE
    bm1 = bytearray(bitmap_len)
    bm2 = bytearray(bitmap_len)
    for s, e in m.ranges:
        for pfn in range(s // PAGE, e // PAGE):
            bm1[pfn >> 3] |= 1 << (pfn & 7)
            if pfn not in m.excluded:
                bm2[pfn >> 3] |= 1 << (pfn & 7)
    sub = struct.pack("<QiiQQ", PHYS_BASE, 1, 0, 0, 0)
    sub_size = 104
    off_note = PAGE + sub_size
    vi = notes.find(b"VMCOREINFO\0\0")
    # the VMCOREINFO descriptor: after its 12-byte header and padded name
    off_vi = off_note + vi + 12
    vi_size = struct.unpack_from("<I", notes, vi - 12 + 4)[0]
    sub += struct.pack("<QQQQQQ", off_vi, vi_size, off_note, len(notes), 0, 0)
    sub += struct.pack("<QQQ", 0, max_mapnr, max_mapnr)
    assert len(sub) == sub_size
    sub_blocks = (sub_size + len(notes) + PAGE - 1) // PAGE
    desc_off = (1 + sub_blocks + 2 * bitmap_len // PAGE) * PAGE
    dumped = [pfn for pfn in range(max_mapnr) if bm2[pfn >> 3] & (1 << (pfn & 7))]
    data_off = desc_off + 24 * len(dumped)
    data = bytearray()
    descs = bytearray()
    zero_at = None
    i = 0
    for pfn in dumped:
        page = m.page(pfn)
        if not any(page):
            if zero_at is None:
                zero_at = data_off + len(data)
                data += page
            descs += struct.pack("<QIIQ", zero_at, PAGE, 0, 0)
            continue
        codec = codec_cycle[i % len(codec_cycle)]
        i += 1
        flags, body = 0, page
        if codec == "zlib":
            flags, body = 0x1, zlib.compress(page)
        elif codec == "zstd":
            z = zstd_compress(page)
            if z is not None:
                flags, body = 0x20, z
        if len(body) >= PAGE:
            flags, body = 0, page
        descs += struct.pack("<QIIQ", data_off + len(data), len(body), flags, 0)
        data += body
    status = 0x1 | 0x20
    h = {
        "signature": b"KDUMP   ",
        "version": version,
        "block_size": PAGE,
        "sub_hdr_size": sub_blocks,
        "bitmap_blocks": 2 * bitmap_len // PAGE,
        "max_mapnr": max_mapnr,
        "status": status,
        "nr_cpus": 1,
        "split": 0,
    }
    if mutate:
        mutate(h)
    uts = b"".join(f.ljust(65, b"\0") for f in [b"Linux", b"kcoredump-test", OSRELEASE.encode(), b"#1", b"x86_64", b""])
    hdr = h["signature"] + struct.pack("<i", h["version"]) + uts + bytes(6)
    hdr += struct.pack("<qq", 1700000000, 0)
    hdr += struct.pack("<IiiIIIIIIi", h["status"], h["block_size"], h["sub_hdr_size"], h["bitmap_blocks"],
                       h["max_mapnr"] & 0xFFFFFFFF, len(dumped), 0, len(dumped), 0, h["nr_cpus"])
    assert len(hdr) == 464
    sub = sub[:12] + struct.pack("<i", h["split"]) + sub[16:80] + struct.pack("<QQQ", 0, h["max_mapnr"], h["max_mapnr"])
    out = bytearray(hdr.ljust(PAGE, b"\0"))
    out += (sub + notes).ljust(sub_blocks * PAGE, b"\0")
    out += bm1 + bm2
    assert len(out) == desc_off
    out += descs + data
    return bytes(out), desc_off, dumped


def flatten(kdump, order="shuffled"):
    """Flattened records: 64 KiB pieces, written out of order; one range
    of zero bytes is left out (a gap reads as zeros)."""
    head = b"makedumpfile".ljust(16, b"\0") + struct.pack(">qq", 1, 1)
    out = bytearray(head.ljust(4096, b"\0"))
    pieces = []
    step = 65536
    for off in range(0, len(kdump), step):
        chunk = kdump[off:off + step]
        if not any(chunk):
            continue
        pieces.append((off, chunk))
    if order == "shuffled":
        pieces = pieces[1::2] + pieces[0::2]
    for off, chunk in pieces:
        out += struct.pack(">qq", off, len(chunk)) + chunk
    out += struct.pack(">qq", -1, -1)
    return bytes(out)


def write_lime(path, m, patches=(), cut=None):
    """LiME v1, sparse where memory is zero; patches = [(offset, bytes)]
    applied afterwards, cut = length to truncate to."""
    with open(path, "wb") as f:
        at = 0
        for s, e in m.ranges:
            f.seek(at)
            f.write(struct.pack("<IIQQQ", 0x4C694D45, 1, s, e - 1, 0))
            for pfn in range(s // PAGE, e // PAGE):
                if pfn in m.pages and any(m.pages[pfn]):
                    f.seek(at + 32 + pfn * PAGE - s)
                    f.write(m.pages[pfn])
            at += 32 + e - s
        f.truncate(at if cut is None else cut)
        for off, data in patches:
            f.seek(off)
            f.write(data)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    outdir = sys.argv[1]
    tiny = "--tiny" in sys.argv[2:]
    os.makedirs(outdir, exist_ok=True)
    m, syms = build_memory(tiny)
    notes = notes_blob(syms)
    j = lambda name: os.path.join(outdir, name)
    write_elf(j("mem.elf"), m, syms, notes)
    kd, desc_off, dumped = kdump_bytes(m, notes)
    write(j("mem.kdump"), kd)
    write(j("mem.flat"), flatten(kd))
    # VMCOREINFO with the direct-map base: segments get virtual addresses.
    if syms:
        write(j("mem-pageoffset.kdump"), kdump_bytes(m, notes_blob(syms, True))[0])
    # The older diskdump signature: same layout, no kdump_sub_header read.
    write(j("mem.diskdump"), b"DISKDUMP" + kd[8:])
    write_lime(j("mem.lime"), m)
    if tiny:
        # A seed for the memory scan (detect.c): a note and a banner.
        write_lime(j("lime-vmcoreinfo"), with_kernel_pages(m, syms, 0x206000, 0x3010))
        return
    # The machine and VMCOREINFO found in the memory of a raw image.
    write_lime(j("mem-vmcoreinfo.lime"), with_kernel_pages(m, syms, 0x1000000, 0x1200123))
    write_lime(j("mem-banner.lime"), with_kernel_pages(m, syms, banner_pa=0x1200123))
    write_lime(j("mem-banner-arm64.lime"), with_kernel_pages(m, syms, banner_pa=0x1200123, arch="arm64"))
    if shutil.which("zstd"):
        subprocess.run(["zstd", "-q", "-f", "--no-progress", j("mem.elf"), "-o", j("mem.elf.zst")], check=True)
    if shutil.which("xz"):
        subprocess.run(["xz", "-k", "-f", "-T1", "-0", j("mem.elf")], check=True)

    with open(j("expect.txt"), "w") as f:
        def sha(b):
            return hashlib.sha256(b).hexdigest()
        # name kind address length sha256
        uts_pa = pa_symbol(syms["init_uts_ns"])
        f.write(f"uts virt {syms['init_uts_ns']:#x} 390 {sha(m.read(uts_pa, 390))}\n")
        f.write(f"directmap virt {PAGE_OFFSET + 0x101000:#x} 8192 {sha(m.read(0x101000, 8192))}\n")
        f.write(f"vmalloc virt {VMALLOC_VADDR:#x} 4096 {sha(m.read(0x1700000, 4096))}\n")
        f.write(f"unmapped virt {VMALLOC_VADDR + PAGE:#x} 16 -\n")
        f.write(f"excluded phys {0x120000:#x} 16384 {sha(bytes(16384))}\n")
        f.write(f"nonram phys {0xA0000:#x} 16 -\n")
        for s, e in m.ranges:
            f.write(f"range phys {s:#x} {e - s} {sha(m.read(s, e - s))}\n")

    # ---- malformed variants (expected results in malformed.txt) ----
    write(j("bad-kdump-truncated-header"), kd[:300])

    def mut(**kw):
        return lambda h: h.update(kw)

    write(j("bad-kdump-block-size"), kdump_bytes(m, notes, mutate=mut(block_size=3000))[0])
    write(j("bad-kdump-version"), kdump_bytes(m, notes, mutate=mut(version=7))[0])
    write(j("bad-kdump-split"), kdump_bytes(m, notes, mutate=mut(split=1))[0])
    write(j("bad-kdump-max-mapnr"), kdump_bytes(m, notes, mutate=mut(max_mapnr=1 << 31))[0])
    bm_off = (1 + struct.unpack_from("<i", kd, 432)[0]) * PAGE
    write(j("bad-kdump-bitmap-past-eof"), kd[:bm_off + 100])
    write(j("bad-kdump-desc-past-eof"), kd[:desc_off + 24 * 10])
    # Page descriptors broken one way each: found when the page is read
    # (tests/integration/formats-in.sh reads them with cat).
    first_data = next(i for i, pfn in enumerate(dumped) if any(m.page(pfn)))
    pfn = dumped[first_data]
    at = desc_off + 24 * first_data
    size_now = struct.unpack_from("<I", kd, at + 8)[0]
    for name, field in (
        ("offset0", struct.pack("<Q", 0)),
        ("offset-past-eof", struct.pack("<Q", len(kd) + PAGE)),
        ("size-too-big", struct.pack("<QI", struct.unpack_from("<Q", kd, at)[0], PAGE + 1)),
        # zlib data flagged as lzo, and as snappy
        ("bad-codec", struct.pack("<QII", struct.unpack_from("<Q", kd, at)[0], size_now, 0x2)),
        ("bad-snappy", struct.pack("<QII", struct.unpack_from("<Q", kd, at)[0], size_now, 0x4)),
        ("raw-short", struct.pack("<QII", struct.unpack_from("<Q", kd, at)[0], 100, 0)),
    ):
        b = bytearray(kd)
        b[at:at + len(field)] = field
        write(j(f"page-{name}.kdump"), bytes(b))
    with open(j("page-pfn.txt"), "w") as f:
        f.write(f"{pfn * PAGE:#x}\n")
    fl = flatten(kd, order="sorted")
    write(j("bad-flat-no-end"), fl[:-16])
    write(j("bad-flat-record-past-eof"), fl[:4096 + 16 + 100])
    ov = bytearray(fl[:-16])
    ov += struct.pack(">qq", 100, 10) + bytes(10) + struct.pack(">qq", -1, -1)
    write(j("bad-flat-overlap"), bytes(ov))
    write(j("bad-flat-version"), fl[:16] + struct.pack(">qq", 1, 2) + fl[32:])
    first = 32 + m.ranges[0][1] - m.ranges[0][0]
    write_lime(j("bad-lime-truncated"), m, cut=first + 32 + 1000)
    write_lime(j("bad-lime-overlap"), m, [(first + 8, struct.pack("<Q", 0x1000))])
    write_lime(j("bad-lime-end-before-start"), m, [(8, struct.pack("<QQ", 0x5000, 0x4FFF))])
    write_lime(j("bad-lime-version"), m, [(4, struct.pack("<I", 2))])
    write(j("bad-avml"), struct.pack("<IIQQQ", 0x4C4D5641, 2, 0, 0xFFF, 0) + bytes(64))
    if shutil.which("zstd"):
        subprocess.run(["zstd", "-q", "-f", "--no-progress", "-o", j("bad-zst-not-elf")],
                       input=b"this is not an ELF core\n" * 100, check=True)
        whole = open(j("mem.elf.zst"), "rb").read()
        write(j("bad-zst-truncated"), whole[:40])


if __name__ == "__main__":
    main()
