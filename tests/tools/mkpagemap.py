#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write a small x86_64 ELF vmcore whose struct pages say what each page
is, for the page classifier of --exclude (src/lib/dump/exclude.c) to be
checked page by page without a VM (tests/integration/exclude.sh).

The file is an ET_CORE with a VMCOREINFO note (Linux 6.12's struct page
layout, page flags and page types) and one PT_LOAD of RAM: physical
0..64 MiB at the direct map, 0xffff888000000000 + paddr.  SPARSEMEM_EXTREME:
the mem_section roots (4096 pointers) at 0x80000, root 0 pointing at the
sections at 0x90000, section 0 holding the struct pages of pfns 0..16383
at 0x100000 (64 bytes each; encoded as mem_map - first pfn * 64, first
pfn 0, with SECTION_MARKED_PRESENT | SECTION_HAS_MEM_MAP).

Every struct page is an ordinary kernel page (flags, compound_head,
mapping and private 0, _mapcount -1) except those of the test pages
below; each test page holds its pfn as a u64, repeated, so that it is
data (not a hole) and says where it is.  Pages not listed are zero.

  pfn 1024       buddy head, order 10: free, 1024 pages (tails have data)
  pfn 2049       buddy head, order 1 but misaligned: kept
  pfn 2050       buddy head, order 12 (> MAX_PAGE_ORDER 10): kept
  pfn 3072       anonymous THP head, order 9, tails 3073..3583: user, 512
  pfn 4000       slab (page type), mapping & 1: kept
  pfn 4001       page cache (PG_lru, a file mapping): cache
  pfn 4002       page cache with PG_private: cache-private
  pfn 4004       hugetlb head (page type), order 1: user, 2 pages
  pfn 4006       PG_hwpoison: always left out
  pfn 4007       offline (page type): always left out
  pfn 4008       PG_swapcache | PG_swapbacked, a mapping: cache
  pfn 4009       PG_swapcache only: kept
  pfn 4010       an anonymous page (PG_lru, mapping & 1): user
  pfn 5000       an ordinary kernel page: kept

With --extra, more cases the rules above do not reach (and
NUMBER(PAGE_UNACCEPTED_MAPCOUNT_VALUE) in VMCOREINFO):

  pfn 6144       file THP head (PG_lru), order 2; page[1]'s mapping word
                 odd (_large_mapcount -1): cache, 4 pages, and kept as a
                 whole when cache is not excluded (tails are not judged)
  pfn 6148       PG_hwpoison on an anonymous page: user, else hwpoison
  pfn 6150       file THP head with PG_private, order 1: cache-private, 2
  pfn 6156       anonymous head of order 3, misaligned: user, 1 page;
                 pfn 6157 (its "page[1]", not a tail) is kept
  pfn 8192       buddy head of order 12, aligned (> MAX_PAGE_ORDER): kept
                 (data in 8192 and 12287)
  pfn 13312      unaccepted (page type), aligned to MAX_PAGE_ORDER:
                 1024 pages (with data; left out with free only)
  pfn 14337      unaccepted, misaligned: kept

With --kernel 7.3, Linux 7.3's VMCOREINFO and struct page as Debian
builds it: OFFSET(page.compound_info) instead of OFFSET(page.compound_head)
(bit 0 still marks a tail; with HugeTLB vmemmap optimization and a 64-byte
struct page the rest of a tail's word is the mask that turns its address
into its head's, no longer the head's address), PG_hwpoison at bit 21
(bit 20 is now PG_mlocked: pfn 5000, an ordinary kernel page, has it and
is kept), NUMBER(PAGE_UNACCEPTED_MAPCOUNT_VALUE) always.

  mkpagemap.py OUT.elf [--extra] [--kernel 6.12|7.3] [--omit KEY]...

--omit KEY leaves the VMCOREINFO line KEY=... out (e.g. SIZE(page)), for
the error of a source that cannot be filtered.  Prints nothing."""
import struct
import sys

PAGE = 4096
PAGE_OFFSET = 0xFFFF888000000000
RAM_SIZE = 64 << 20
NR_PFNS = RAM_SIZE // PAGE
OSRELEASE = "6.12.0-synthetic"
KERNEL = "6.12"

ROOTS_PA = 0x80000  # struct mem_section *mem_section[4096]
SECTIONS_PA = 0x90000  # root 0: 128 struct mem_section of 32 bytes
MEM_MAP_PA = 0x100000  # struct page[16384]
SIZE_PAGE = 64
NR_ROOTS = 4096
MAX_PHYSMEM_BITS = 46
SECTION_PRESENT, SECTION_HAS_MAP = 0x1, 0x2

# struct page (6.12, x86_64, no debug options)
OFF_FLAGS, OFF_HEAD, OFF_MAPPING, OFF_PRIVATE, OFF_MAPCOUNT, OFF_REFCOUNT = 0, 8, 24, 40, 48, 52
PG_LRU, PG_SWAPCACHE, PG_PRIVATE, PG_SWAPBACKED, PG_HWPOISON = 5, 10, 14, 17, 20
PG_MLOCKED_7_3 = 20  # Linux 7.3: PG_hwpoison moved to 21
PG_HEAD = 6
PG_HEAD_MASK = 1 << PG_HEAD
# page types in _mapcount (PGTY_x << 24), as unsigned 32-bit values
BUDDY, OFFLINE, HUGETLB, SLAB, UNACCEPTED = 0xF0000000, 0xF1000000, 0xF4000000, 0xF5000000, 0xF7000000
NO_TYPE = 0xFFFFFFFF  # _mapcount -1

ANON_MAPPING = 0xFFFF888001234001  # an anon_vma, PAGE_MAPPING_ANON
FILE_MAPPING = 0xFFFF888001230000  # an address_space


def va(pa):
    return PAGE_OFFSET + pa


def page_va(pfn):
    """The virtual address of pfn's struct page."""
    return va(MEM_MAP_PA + pfn * SIZE_PAGE)


def to_signed32(v):
    return v - (1 << 32) if v & (1 << 31) else v


def vmcoreinfo(omit, extra):
    lines = [
        f"OSRELEASE={OSRELEASE}",
        f"PAGESIZE={PAGE}",
        f"SIZE(page)={SIZE_PAGE}",
        f"OFFSET(page.flags)={OFF_FLAGS}",
        f"OFFSET(page.compound_info)={OFF_HEAD}" if KERNEL == "7.3" else f"OFFSET(page.compound_head)={OFF_HEAD}",
        f"OFFSET(page.lru)={OFF_HEAD}",
        f"OFFSET(page.mapping)={OFF_MAPPING}",
        f"OFFSET(page.private)={OFF_PRIVATE}",
        f"OFFSET(page._mapcount)={OFF_MAPCOUNT}",
        f"OFFSET(page._refcount)={OFF_REFCOUNT}",
        f"SYMBOL(mem_section)={va(ROOTS_PA):x}",
        f"LENGTH(mem_section)={NR_ROOTS}",
        "SIZE(mem_section)=32",
        "OFFSET(mem_section.section_mem_map)=0",
        "NUMBER(SECTION_SIZE_BITS)=27",
        f"NUMBER(MAX_PHYSMEM_BITS)={MAX_PHYSMEM_BITS}",
        f"NUMBER(PG_lru)={PG_LRU}",
        f"NUMBER(PG_private)={PG_PRIVATE}",
        f"NUMBER(PG_swapcache)={PG_SWAPCACHE}",
        f"NUMBER(PG_swapbacked)={PG_SWAPBACKED}",
        f"NUMBER(PG_hwpoison)={PG_HWPOISON}",
        f"NUMBER(PG_head_mask)={PG_HEAD_MASK}",
        f"NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)={to_signed32(BUDDY)}",
        f"NUMBER(PAGE_SLAB_MAPCOUNT_VALUE)={to_signed32(SLAB)}",
        f"NUMBER(PAGE_HUGETLB_MAPCOUNT_VALUE)={to_signed32(HUGETLB)}",
        f"NUMBER(PAGE_OFFLINE_MAPCOUNT_VALUE)={to_signed32(OFFLINE)}",
        "LENGTH(zone.free_area)=11",
    ]
    if extra or KERNEL == "7.3":
        lines.append(f"NUMBER(PAGE_UNACCEPTED_MAPCOUNT_VALUE)={to_signed32(UNACCEPTED)}")
    lines = [ln for ln in lines if ln.split("=", 1)[0] not in omit]
    return ("\n".join(lines) + "\n").encode()


def note(name, ntype, desc):
    name = name.encode() + b"\0"

    def pad(b):
        return b + bytes(-len(b) % 4)

    return struct.pack("<III", len(name), len(desc), ntype) + pad(name) + pad(desc)


class StructPages:
    """The struct page array of pfns 0..NR_PFNS-1."""

    def __init__(self):
        one = bytearray(SIZE_PAGE)
        struct.pack_into("<I", one, OFF_MAPCOUNT, NO_TYPE)
        self.buf = bytearray(bytes(one) * NR_PFNS)

    def set(self, pfn, flags=None, head=None, mapping=None, private=None, mapcount=None):
        base = pfn * SIZE_PAGE
        for off, fmt, value in ((OFF_FLAGS, "<Q", flags), (OFF_HEAD, "<Q", head), (OFF_MAPPING, "<Q", mapping),
                                (OFF_PRIVATE, "<Q", private), (OFF_MAPCOUNT, "<I", mapcount)):
            if value is not None:
                struct.pack_into(fmt, self.buf, base + off, value)

    def compound(self, head_pfn, order, flags, **kw):
        """A compound page: head flags (PG_head added), order in page[1]'s
        flags, tails pointing at the head (7.3: the mask to it)."""
        self.set(head_pfn, flags=flags | PG_HEAD_MASK, **kw)
        self.set(head_pfn + 1, flags=order)
        tail = page_va(head_pfn) | 1
        if KERNEL == "7.3":
            shift = order + (SIZE_PAGE.bit_length() - 1)
            tail = ((1 << 64) - (1 << shift)) | 1
        for pfn in range(head_pfn + 1, head_pfn + (1 << order)):
            self.set(pfn, head=tail)


def build(extra):
    """{physical address: bytes} of everything that is not zero."""
    sp = StructPages()
    data_pfns = []
    # Free: a buddy head of order 10, and two heads not to be believed.
    sp.set(1024, mapcount=BUDDY, private=10)
    data_pfns += range(1024, 2048)
    sp.set(2049, mapcount=BUDDY, private=1)
    sp.set(2050, mapcount=BUDDY, private=12)
    data_pfns += [2049, 2050]
    # An anonymous THP of order 9.
    sp.compound(3072, 9, 1 << PG_LRU, mapping=ANON_MAPPING)
    data_pfns += range(3072, 3584)
    # Slab with mapping & 1 (slab's own use of the word): not anonymous.
    sp.set(4000, mapcount=SLAB, mapping=1)
    sp.set(4001, flags=1 << PG_LRU, mapping=FILE_MAPPING)
    sp.set(4002, flags=1 << PG_LRU | 1 << PG_PRIVATE, mapping=FILE_MAPPING)
    # hugetlb: the page type on the head, order 1.
    sp.compound(4004, 1, 0, mapcount=HUGETLB)
    sp.set(4006, flags=1 << PG_HWPOISON)
    sp.set(4007, mapcount=OFFLINE)
    sp.set(4008, flags=1 << PG_SWAPCACHE | 1 << PG_SWAPBACKED, mapping=FILE_MAPPING)
    sp.set(4009, flags=1 << PG_SWAPCACHE)
    sp.set(4010, flags=1 << PG_LRU, mapping=ANON_MAPPING)
    if KERNEL == "7.3":
        sp.set(5000, flags=1 << PG_MLOCKED_7_3)
    data_pfns += [4000, 4001, 4002, 4004, 4005, 4006, 4007, 4008, 4009, 4010, 5000]
    if extra:
        sp.compound(6144, 2, 1 << PG_LRU, mapping=FILE_MAPPING)
        sp.set(6145, mapping=0xFFFFFFFFFFFFFFFF)  # folio._large_mapcount etc.
        sp.set(6148, flags=1 << PG_LRU | 1 << PG_HWPOISON, mapping=ANON_MAPPING)
        sp.compound(6150, 1, 1 << PG_LRU | 1 << PG_PRIVATE, mapping=FILE_MAPPING)
        sp.set(6156, flags=PG_HEAD_MASK | 1 << PG_LRU, mapping=ANON_MAPPING)
        sp.set(6157, flags=3)  # the order a head at 6156 would have
        sp.set(8192, mapcount=BUDDY, private=12)
        sp.set(13312, mapcount=UNACCEPTED)
        sp.set(14337, mapcount=UNACCEPTED)
        data_pfns += list(range(6144, 6149)) + [6150, 6151, 6156, 6157, 8192, 12287, 14337]
        data_pfns += range(13312, 14336)

    mem = {}
    roots = bytearray(NR_ROOTS * 8)
    struct.pack_into("<Q", roots, 0, va(SECTIONS_PA))
    mem[ROOTS_PA] = bytes(roots)
    sections = bytearray(PAGE)
    # section_mem_map: mem_map - section's first pfn (0) * SIZE_PAGE
    struct.pack_into("<Q", sections, 0, va(MEM_MAP_PA) | SECTION_PRESENT | SECTION_HAS_MAP)
    mem[SECTIONS_PA] = bytes(sections)
    mem[MEM_MAP_PA] = bytes(sp.buf)
    for pfn in data_pfns:
        mem[pfn * PAGE] = struct.pack("<Q", pfn) * (PAGE // 8)
    # No overlaps between test pages and the tables.
    spans = sorted((pa, pa + len(b)) for pa, b in mem.items())
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "overlapping contents"
    assert spans[-1][1] <= RAM_SIZE
    return mem


def build_tiny():
    """--tiny, a fuzzing seed under 64 KiB: 12 pfns of RAM, SPARSEMEM
    without EXTREME (MAX_PHYSMEM_BITS 28: two sections in one flat array
    at 0x1000), struct pages at 0x2000, one page of each main class."""
    sp = StructPages()
    sp.set(4, mapcount=BUDDY, private=2)  # free 4..7
    sp.set(8, flags=1 << PG_LRU, mapping=ANON_MAPPING)  # user
    sp.set(9, flags=1 << PG_LRU, mapping=FILE_MAPPING)  # cache
    sp.set(10, mapcount=SLAB, mapping=1)  # kept
    sp.set(11, flags=1 << PG_HWPOISON)
    sections = bytearray(2 * 32)
    struct.pack_into("<Q", sections, 0, va(MEM_MAP_PA) | SECTION_PRESENT | SECTION_HAS_MAP)
    mem = {ROOTS_PA: bytes(sections), MEM_MAP_PA: bytes(sp.buf)}
    for pfn in range(4, 12):
        mem[pfn * PAGE] = struct.pack("<Q", pfn) * 64  # 512 bytes each
    return mem


def write_elf(path, mem, notes):
    phnum = 2
    note_off = 64 + 56 * phnum
    load_off = (note_off + len(notes) + PAGE - 1) // PAGE * PAGE
    eh = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # ELFCLASS64, LSB, EV_CURRENT
    # ET_CORE, EM_X86_64, version, entry, phoff, shoff, flags, ehsize,
    # phentsize, phnum, shentsize, shnum, shstrndx
    eh += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, phnum, 64, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 4, 0, note_off, 0, 0, len(notes), len(notes), 0)  # PT_NOTE
    ph += struct.pack("<IIQQQQQQ", 1, 7, load_off, va(0), 0, RAM_SIZE, RAM_SIZE, PAGE)  # PT_LOAD RWX
    with open(path, "wb") as f:
        f.write(eh + ph + notes)
        for pa, data in sorted(mem.items()):
            f.seek(load_off + pa)
            f.write(data)
        f.truncate(load_off + RAM_SIZE)  # sparse: the rest is a hole


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.stderr.write("usage: mkpagemap.py OUT.elf [--extra | --tiny] [--kernel 6.12|7.3] [--omit KEY]...\n")
        return 2
    global RAM_SIZE, NR_PFNS, ROOTS_PA, NR_ROOTS, MEM_MAP_PA, MAX_PHYSMEM_BITS
    global KERNEL, OSRELEASE, PG_HWPOISON
    out, omit, extra, tiny, args = argv[1], set(), False, False, argv[2:]
    while args:
        if args[0] == "--tiny":
            tiny = True
            args = args[1:]
        elif args[0] == "--extra":
            extra = True
            args = args[1:]
        elif args[0] == "--kernel" and len(args) > 1 and args[1] in ("6.12", "7.3"):
            KERNEL = args[1]
            args = args[2:]
        elif args[0] == "--omit" and len(args) > 1:
            omit.add(args[1])
            args = args[2:]
        else:
            sys.stderr.write(f"mkpagemap.py: unknown argument {args[0]}\n")
            return 2
    if KERNEL == "7.3":
        OSRELEASE, PG_HWPOISON = "7.3.0-synthetic", 21
    if tiny:
        RAM_SIZE, ROOTS_PA, NR_ROOTS, MEM_MAP_PA, MAX_PHYSMEM_BITS = 12 * PAGE, 0x1000, 2, 0x2000, 28
        NR_PFNS = RAM_SIZE // PAGE
        write_elf(out, build_tiny(), note("VMCOREINFO", 0, vmcoreinfo(omit, extra)))
        return 0
    write_elf(out, build(extra), note("VMCOREINFO", 0, vmcoreinfo(omit, extra)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
