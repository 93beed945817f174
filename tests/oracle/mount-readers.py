#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""drgn on a mounted dump (kcoredump mount): open VMCORE (the FUSE file)
and, for comparison, REFERENCE (the plain ELF dump it was made from),
read init_uts_ns's release and the kernel's VMCOREINFO-named symbols by
address, and 10000 random pages with data; with --vmlinux, also
linux_banner and the task list (pid, comm of every task) through the
debug info.  Prints the seconds each part took on VMCORE as
"time NAME SECONDS" lines (bench/mount.sh reads them).  Exit 0 when
VMCORE reads as REFERENCE does, 1 on a difference, 77 without drgn.

  mount-readers.py VMCORE REFERENCE [--vmlinux VMLINUX] [--pages N]"""
import argparse
import os
import random
import struct
import sys
import time

import elfdata

try:
    import drgn
except ImportError:
    print("# SKIP: python3-drgn not installed")
    sys.exit(77)


def program(path, vmlinux):
    prog = drgn.Program()
    prog.set_core_dump(path)
    if vmlinux:
        prog.load_debug_info([vmlinux], default=False, main=True)
    return prog


def info_values(path):
    """SYMBOL(x)= and OFFSET(a.b)= lines of the VMCOREINFO note."""
    with open(path, "rb") as f:
        eh = f.read(64)
        phoff, = struct.unpack_from("<Q", eh, 32)
        phnum, = struct.unpack_from("<H", eh, 56)
        f.seek(phoff)
        for _ in range(phnum):
            typ, _, off, _, _, filesz, _, _ = struct.unpack("<IIQQQQQQ", f.read(56))
            if typ == 4:
                f.seek(off)
                notes = f.read(filesz)
                break
    vals = {}
    pos = 0
    while pos + 12 <= len(notes):
        nsz, dsz, _ = struct.unpack_from("<III", notes, pos)
        name = notes[pos + 12:pos + 12 + nsz].rstrip(b"\0")
        d = pos + 12 + ((nsz + 3) & ~3)
        desc = notes[d:d + dsz]
        pos = d + ((dsz + 3) & ~3)
        if name == b"VMCOREINFO":
            for line in desc.decode(errors="replace").splitlines():
                k, _, v = line.partition("=")
                vals[k] = v
    return vals


def data_pages(path, n, seed=1):
    """n random physical pages with data, by SEEK_DATA on the ELF."""
    with open(path, "rb") as f:
        loads = elfdata.phys_loads(f)
        fd = f.fileno()
        pages = []
        for pa, off, filesz in loads:
            for d, h in elfdata.data_runs(fd, off, off + filesz):
                for p in range((d - off) // 4096, (h - off + 4095) // 4096):
                    pages.append(pa + p * 4096)
    # A live kernel's dump holds the kernel image twice (its text segment
    # and RAM), read at different moments: its data pages may differ, and
    # a reader that keeps one copy per physical page may keep either.
    # Only pages with one copy in the reference are compared: the pages
    # where two PT_LOADs overlap are left out, not the whole segments.
    spans = [(pa, pa + filesz) for pa, _, filesz in loads]
    twice = [(max(lo, l2), min(hi, h2))
             for i, (lo, hi) in enumerate(spans)
             for l2, h2 in spans[i + 1:] if lo < h2 and l2 < hi]
    pages = sorted({p for p in pages
                    if not any(lo <= p < hi for lo, hi in twice)})
    random.Random(seed).shuffle(pages)
    return pages[:n]


def run(path, args, pages, vals):
    out = {}
    times = {}
    t0 = time.monotonic()
    prog = program(path, args.vmlinux)
    times["open"] = time.monotonic() - t0
    if not args.physical_only:
        uts = int(vals["SYMBOL(init_uts_ns)"], 16)
        name = int(vals.get("OFFSET(uts_namespace.name)", "0"))
        # new_utsname: 6 fields of 65 bytes; release is the third.
        rel = prog.read(uts + name + 2 * 65, 65, False).split(b"\0")[0]
        out["release"] = rel.decode()
    if args.vmlinux:
        out["banner"] = prog["linux_banner"].string_().decode()
        t0 = time.monotonic()
        from drgn.helpers.linux.pid import for_each_task
        out["tasks"] = sorted((t.pid.value_(), t.comm.string_().decode())
                              for t in for_each_task(prog))
        times["tasks"] = time.monotonic() - t0
    if args.deep:
        deep(prog, out, times)
    t0 = time.monotonic()
    h = 0
    for pa in pages:
        h = hash((h, prog.read(pa, 4096, True)))
    times["pages"] = time.monotonic() - t0
    out["pages"] = h
    return out, times


def deep(prog, out, times):
    """The stack trace of every task (function names, or the error for
    one drgn cannot unwind, such as a task running when the live kernel
    was read), every slab cache with its allocated task_struct objects,
    and every struct page's flags."""
    from drgn.helpers.linux.pid import for_each_task
    from drgn.helpers.linux.slab import (
        for_each_slab_cache, slab_cache_for_each_allocated_object)
    from drgn.helpers.linux.mm import for_each_page
    t0 = time.monotonic()
    stacks = []
    for t in for_each_task(prog):
        try:
            st = prog.stack_trace(t)
            frames = tuple(f.name or hex(f.pc) for f in st)
        except Exception as e:  # noqa: BLE001 - compared as text
            frames = (f"{type(e).__name__}: {e}",)
        stacks.append((t.pid.value_(), frames))
    out["stacks"] = sorted(stacks)
    times["stacks"] = time.monotonic() - t0
    t0 = time.monotonic()
    caches = []
    for c in for_each_slab_cache(prog):
        caches.append((c.name.string_().decode(), c.object_size.value_()))
        if caches[-1][0] == "task_struct":
            # A live kernel's dump is not one instant: a freelist being
            # changed may read as garbage (FaultError), in every format.
            try:
                out["slab_tasks"] = sum(1 for _ in slab_cache_for_each_allocated_object(c, "struct task_struct"))
            except drgn.FaultError:
                out["slab_tasks"] = "FaultError"
    out["slab"] = sorted(caches)
    times["slab"] = time.monotonic() - t0
    t0 = time.monotonic()
    n = h = 0
    for page in for_each_page(prog):
        try:
            # an unsigned long, or (7.x) a memdesc_flags_t struct
            f = str(page.flags.value_())
        except drgn.FaultError:
            f = "fault"
        n += 1
        h = hash((h, f))
    out["page_flags"] = (n, h)
    times["pages_iter"] = time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vmcore")
    ap.add_argument("reference")
    ap.add_argument("--vmlinux")
    ap.add_argument("--pages", type=int, default=10000)
    ap.add_argument("--deep", action="store_true",
                    help="with --vmlinux: every task's stack trace, the "
                    "slab caches and every struct page, as in the reference")
    ap.add_argument("--physical-only", action="store_true",
                    help="read by physical address only")
    ap.add_argument("--only", action="store_true",
                    help="time VMCORE alone, no comparison")
    args = ap.parse_args()
    vals = info_values(args.reference)
    pages = data_pages(args.reference, args.pages)
    t0 = time.monotonic()
    got, times = run(args.vmcore, args, pages, vals)
    total = time.monotonic() - t0
    for k, v in times.items():
        print(f"time {k} {v:.3f}")
    print(f"time total {total:.3f}")
    n = 0
    fail = 0

    def check(cond, what):
        nonlocal n, fail
        n += 1
        print(("ok" if cond else "not ok") + f" {n} - {what}")
        fail |= not cond

    # Fewer than asked for when the reference has fewer; never none.
    check(len(pages) > 0,
          f"{len(pages)} pages with data to read (asked for {args.pages})")
    if not args.physical_only:
        check(got["release"] == vals.get("OSRELEASE"),
              f"init_uts_ns release: {got['release']}")
    if args.only:
        return fail
    want, _ = run(args.reference, args, pages, vals)
    check(got["pages"] == want["pages"],
          f"{len(pages)} random pages with data read as in the reference")
    if args.vmlinux:
        check(got["banner"] == want["banner"] and
              got["banner"].startswith("Linux version " + got["release"]),
              f"linux_banner: {got['banner'][:60]}")
        check(got["tasks"] == want["tasks"] and len(got["tasks"]) > 10,
              f"task list: {len(got['tasks'])} tasks as in the reference")
    if args.vmlinux and args.deep:
        unwound = [p for p, fr in got["stacks"] if fr and "Error" not in fr[0]]
        errs = sorted({fr[0] for p, fr in got["stacks"] if fr and "Error" in fr[0]})
        check(got["stacks"] == want["stacks"] and len(unwound) * 10 >= len(got["stacks"]) * 9,
              f"stack traces: {len(unwound)} of {len(got['stacks'])} tasks unwound, all as in the "
              f"reference (the rest: {'; '.join(errs)[:200] or 'none'})")
        tasks = got.get("slab_tasks")
        check(got["slab"] == want["slab"] and len(got["slab"]) > 50 and
              tasks == want.get("slab_tasks") and (tasks == "FaultError" or (tasks or 0) >= 10),
              f"slab: {len(got['slab'])} caches, {got.get('slab_tasks')} allocated task_structs, as in the reference")
        check(got["page_flags"] == want["page_flags"] and got["page_flags"][0] > 1000,
              f"for_each_page: {got['page_flags'][0]} struct pages, their flags as in the reference")
    print(f"1..{n}")
    return fail


sys.exit(main())
