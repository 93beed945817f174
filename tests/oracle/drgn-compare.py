#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""drgn as an oracle: open REFERENCE (our ELF dump) and OTHER (a kdump or
ELF output of the same memory) with drgn -- libkdumpfile reads the kdump --
and compare a test set of pages read by physical address: the pages with data in the
reference (SEEK_DATA; at most 20000, evenly spread) and 2000 others.  A page OTHER does not hold (excluded
in a kdump) must read as zeros in the reference.  With --virt PAGE_OFFSET,
also read the same pages through the direct map by virtual address (drgn
translates them with the kernel's page tables in the dump).  With
--image VADDR PADDR SIZE FILE: the kernel image's pages in FILE read by
virtual address (its PT_LOAD, p_paddr -1 in our ELF) equal RAM's at its
physical address.

Pages that are zero in the reference are read from OTHER through a second
drgn Program of their own.  libkdumpfile 0.5.1 (Debian 12) hands out a
cache entry without a buffer when a read fails (an excluded page) and a
page evicted earlier is read again: drgn then crashes or reports faults
on pages it holds, on makedumpfile's kdump files as on ours.  Upstream
fixed it in January 2024 (commit e63dab4, "cache: Get data buffer before
adjusting ghost partition size"), after 0.5.4.  The Program that reads
the pages with data never sees a failed read unless OTHER is wrong.

Opening a kdump file once failed in CI ("kdump_vmcoreinfo_raw:
linux.vmcoreinfo.raw is not set", snappy, under load) and was not seen
again in 300 opens of the same kind of file: an open that fails is tried
once more on the unchanged file (its size and mtime are compared), and
both failures are printed; a file that cannot be opened twice fails.

Run with Debian's /usr/bin/python3 (python3-drgn).  Exit 0 when equal,
1 on a difference, 77 when drgn is missing."""
import os
import random
import sys

import elfdata

try:
    import drgn
except ImportError:
    print("# SKIP: python3-drgn not installed")
    sys.exit(77)

PAGE = 4096


def test_pages(path):
    """Physical pages of the ELF's PT_LOADs that hold data (SEEK_DATA),
    up to 20000 spread evenly, plus 2000 random others."""
    with open(path, "rb") as f:
        loads = elfdata.phys_loads(f)
        fd = f.fileno()
        data, rest = [], []
        for pa, off, filesz in loads:
            pos = 0
            for d, h in elfdata.data_runs(fd, off, off + filesz):
                d, h = d - off, h - off
                d -= d % PAGE
                rest.extend(range(pa + pos, pa + d, PAGE * 64))
                data.extend(range(pa + d, pa + h, PAGE))
                pos = h + (-h % PAGE)
            rest.extend(range(pa + pos, pa + filesz, PAGE * 64))
    rng = random.Random(5)
    if len(data) > 20000:
        data = data[::len(data) // 20000 + 1]
    if len(rest) > 2000:
        rest = rng.sample(rest, 2000)
    return sorted(data + rest)


def open_core(path):
    """A drgn Program on the core at path, tried twice (see above)."""
    st = os.stat(path)
    try:
        prog = drgn.Program()
        prog.set_core_dump(path)
        return prog
    except Exception as e:  # drgn raises plain Exception here
        print(f"# drgn could not open {path} ({e}); once more")
    again = os.stat(path)
    if (again.st_size, again.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
        print(f"not ok - {path} changed while it was read")
        sys.exit(1)
    prog = drgn.Program()
    prog.set_core_dump(path)
    print(f"# drgn opened {path} the second time")
    return prog


def image_main(vaddr, paddr, size, path):
    """--image VADDR PADDR SIZE FILE: the kernel image read by virtual
    address (its PT_LOAD) equals RAM read at its physical address, on the
    pages with data in its PT_LOAD and 200 others."""
    with open(path, "rb") as f:
        load = [p for p in elfdata.phdrs(f) if p[0] == 1 and p[2] == vaddr]
        if not load:
            print(f"not ok - {path}: no PT_LOAD at p_vaddr 0x{vaddr:x}")
            return 1
        off = load[0][1]
        data = [d - off + i for d, e in elfdata.data_runs(f.fileno(), off,
                                                          off + size)
                for i in range(0, e - d, PAGE)]
    rng = random.Random(5)
    pages = sorted(set(data[::len(data) // 2000 + 1] if data else []) |
                   set(rng.sample(range(0, size, PAGE),
                                  min(200, size // PAGE))))
    prog = open_core(path)
    bad = 0
    for rel in pages:
        try:
            v = prog.read(vaddr + rel, PAGE)
            p = prog.read(paddr + rel, PAGE, True)
        except drgn.FaultError as e:
            print(f"not ok - {path}: image page +0x{rel:x}: {e}")
            bad += 1
            continue
        if v != p:
            print(f"not ok - {path}: image page +0x{rel:x} differs by "
                  f"vaddr 0x{vaddr + rel:x} and paddr 0x{paddr + rel:x}")
            bad += 1
    print(f"# {path}: {len(pages)} image pages ({len(data)} with data), "
          f"{len(pages) - bad} equal by vaddr and paddr")
    return 1 if bad or not data else 0


def main():
    args = sys.argv[1:]
    if len(args) == 5 and args[0] == "--image":
        return image_main(int(args[1], 0), int(args[2], 0),
                          int(args[3], 0), args[4])
    virt = None
    if len(args) >= 2 and args[0] == "--virt":
        virt = int(args[1], 0)
        args = args[2:]
    ref_path, other_path = args[0], args[1]
    ref = open_core(ref_path)
    other = open_core(other_path)
    # Zero pages, which a kdump may leave out: reads that fail.
    other_zero = open_core(other_path)
    sample = test_pages(ref_path)
    same = excluded = data = zero = virt_same = 0
    bad = 0
    for pa in sample:
        want = ref.read(pa, PAGE, True)
        try:
            if want == bytes(PAGE):
                got = other_zero.read(pa, PAGE, True)
            else:
                got = other.read(pa, PAGE, True)
        except drgn.FaultError as e:
            if want != bytes(PAGE):
                print(f"not ok - {other_path}: page 0x{pa:x} has data but "
                      f"is not readable: {e}")
                bad += 1
            excluded += 1
            continue
        if got != want:
            print(f"not ok - {other_path}: page 0x{pa:x} differs")
            bad += 1
            continue
        same += 1
        if want == bytes(PAGE):
            zero += 1
        else:
            data += 1
        if virt is not None and want != bytes(PAGE) and virt_same < 2000:
            va = virt + pa
            try:
                gv = other.read(va, PAGE)
            except drgn.FaultError as e:
                print(f"not ok - {other_path}: vaddr 0x{va:x}: {e}")
                bad += 1
                continue
            if gv != want:
                print(f"not ok - {other_path}: vaddr 0x{va:x} differs")
                bad += 1
                continue
            virt_same += 1
    print(f"# {other_path}: {len(sample)} pages: {same} equal ({data} with "
          f"data, {zero} zero), {excluded} excluded and zero in the "
          f"reference" + (f", {virt_same} also equal by direct-map vaddr"
                          if virt is not None else ""))
    if bad or data == 0 or (virt is not None and virt_same == 0):
        print(f"not ok - drgn reads {other_path} like {ref_path}")
        return 1
    print(f"ok - drgn reads {other_path} like {ref_path}")
    return 0


sys.exit(main())
