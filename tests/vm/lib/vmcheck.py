#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Host-side checks for the VM cases (stdlib only; run with /usr/bin/python3).

An independent oracle: it parses the ELF cores and the kernel's own views
(/proc/iomem, kallsyms, kpread's program headers) itself and compares them
with what kcoredump reported and what the guest helpers say they did.

  vmcheck.py kcore-info DIR            check info-kcore results in DIR
  vmcheck.py core CORE DESC [--sparse] [--info JSON]
                                       check a process core against the
                                       helper's description file
Prints TAP-like "ok"/"not ok" lines; exits 1 on any failure.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

M64 = (1 << 64) - 1
PAGE = 4096
failures = 0


def check(cond, what, detail=""):
    global failures
    if cond:
        print(f"ok - {what}")
    else:
        failures += 1
        print(f"not ok - {what}" + (f": {detail}" if detail else ""))
    return cond


# ---- the pattern of tests/common/pattern.h ---------------------------------
def pattern_word(addr, seed):
    x = (addr & ~7 & M64) ^ ((seed * 0x9E3779B97F4A7C15) & M64)
    x ^= x >> 31
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    return x | 1


def pattern_bytes(addr, length, seed):
    start = addr & ~7
    end = (addr + length + 7) & ~7
    words = [pattern_word(a, seed) for a in range(start, end, 8)]
    data = struct.pack(f"<{len(words)}Q", *words)
    return data[addr - start:addr - start + length]


# ---- ELF -------------------------------------------------------------------
class Elf:
    def __init__(self, path):
        self.path = path
        self.f = open(path, "rb")
        eh = self.f.read(64)
        if eh[:4] != b"\x7fELF" or eh[4] != 2 or eh[5] != 1:
            raise ValueError(f"{path}: not a little-endian ELF64 file")
        self.e_type = struct.unpack_from("<H", eh, 16)[0]
        phoff, shoff = struct.unpack_from("<QQ", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        if phnum == 0xFFFF:  # PN_XNUM: the count is in section 0's sh_info
            self.f.seek(shoff)
            phnum = struct.unpack_from("<I", self.f.read(64), 44)[0]
        self.phdrs = []
        self.f.seek(phoff)
        raw = self.f.read(phentsize * phnum)
        for i in range(phnum):
            t, fl, off, va, pa, fsz, msz, al = struct.unpack_from(
                "<IIQQQQQQ", raw, i * phentsize)
            self.phdrs.append(dict(index=i, type=t, flags=fl, offset=off,
                                   vaddr=va, paddr=pa, filesz=fsz,
                                   memsz=msz, align=al))

    def loads(self):
        return [p for p in self.phdrs if p["type"] == 1]

    def notes(self):
        out = []
        for p in self.phdrs:
            if p["type"] != 4:
                continue
            self.f.seek(p["offset"])
            data = self.f.read(p["filesz"])
            pos = 0
            while pos + 12 <= len(data):
                namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
                pos += 12
                name = data[pos:pos + namesz].rstrip(b"\0").decode(errors="replace")
                pos += (namesz + 3) & ~3
                desc = data[pos:pos + descsz]
                pos += (descsz + 3) & ~3
                out.append((name, ntype, desc))
        return out

    def read(self, vaddr, length):
        for p in self.loads():
            if p["vaddr"] <= vaddr and vaddr + length <= p["vaddr"] + p["memsz"]:
                rel = vaddr - p["vaddr"]
                self.f.seek(p["offset"] + rel)
                n = max(0, min(length, p["filesz"] - rel))
                return self.f.read(n) + b"\0" * (length - n)
        return None


NT_PRSTATUS, NT_PRPSINFO, NT_AUXV = 1, 3, 6
NT_SIGINFO, NT_FILE = 0x53494749, 0x46494C45
SIGABRT = 6


def parse_nt_file(desc):
    count, _page = struct.unpack_from("<QQ", desc, 0)
    triples = [struct.unpack_from("<QQQ", desc, 16 + 24 * i) for i in range(count)]
    names = desc[16 + 24 * count:].split(b"\0")
    return [(s, e, o, names[i].decode(errors="replace"))
            for i, (s, e, o) in enumerate(triples)]


def read_desc(path):
    d = {"regions": []}
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "region":
                d["regions"].append(dict(name=w[1], addr=int(w[2], 16),
                                         len=int(w[3], 0), seed=int(w[4], 0),
                                         path=w[5] if len(w) > 5 else None))
            elif w[0] == "mapping":
                d["mapping"] = (int(w[1], 16), int(w[2], 0))
            else:
                d[w[0]] = " ".join(w[1:])
    return d


def hexint(v):
    return None if v is None else int(v, 16) if isinstance(v, str) else int(v)


# ---- process cores -----------------------------------------------------------
def cmd_core(args):
    core, descpath = args[0], args[1]
    sparse = "--sparse" in args
    info = args[args.index("--info") + 1] if "--info" in args else None
    desc = read_desc(descpath)
    threads = int(desc["threads"])
    name = os.path.basename(core)
    elf = Elf(core)
    check(elf.e_type == 4, f"{name}: ET_CORE")
    notes = elf.notes()

    prs = [d for n, t, d in notes if n == "CORE" and t == NT_PRSTATUS]
    check(len(prs) == threads, f"{name}: {threads} NT_PRSTATUS notes", f"found {len(prs)}")
    cursig = [struct.unpack_from("<h", d, 12)[0] for d in prs]
    pids = [struct.unpack_from("<i", d, 32)[0] for d in prs]
    check(cursig and all(s == SIGABRT for s in cursig),
          f"{name}: pr_cursig is SIGABRT in every thread", str(cursig))
    check(int(desc["pid"]) in pids, f"{name}: pid {desc['pid']} among the threads", str(pids))
    si = [d for n, t, d in notes if n == "CORE" and t == NT_SIGINFO]
    check(len(si) == 1 and struct.unpack_from("<i", si[0], 0)[0] == SIGABRT,
          f"{name}: NT_SIGINFO si_signo is SIGABRT")

    files = [d for n, t, d in notes if n == "CORE" and t == NT_FILE]
    check(len(files) == 1, f"{name}: one NT_FILE note")
    mapped = parse_nt_file(files[0]) if files else []
    paths = {p for _, _, _, p in mapped}
    check(desc["exe"] in paths, f"{name}: NT_FILE lists the executable {desc['exe']}",
          str(sorted(paths)))
    for r in desc["regions"]:
        if r["path"]:
            hit = [m for m in mapped if m[3] == r["path"]]
            check(hit and hit[0][0] == r["addr"] and hit[0][1] == r["addr"] + r["len"],
                  f"{name}: NT_FILE maps {r['path']} at {r['addr']:#x}+{r['len']:#x}",
                  str(hit))

    kcore_read = shutil.which("kcore-read")
    for r in desc["regions"]:
        want = pattern_bytes(r["addr"], r["len"], r["seed"])
        got = elf.read(r["addr"], r["len"])
        check(got == want, f"{name}: region {r['name']} {r['addr']:#x}+{r['len']:#x} "
              f"holds the pattern (own ELF parser)")
        if kcore_read:
            p = subprocess.run([kcore_read, core, "--vaddr", hex(r["addr"]),
                                "--len", str(r["len"])], capture_output=True)
            check(p.returncode == 0 and p.stdout == want,
                  f"{name}: region {r['name']} holds the pattern (kcore-read)",
                  f"rc {p.returncode} {p.stderr.decode(errors='replace').strip()}")
    if not kcore_read:
        print(f"# SKIP {name}: kcore-read not on PATH, pattern checked by vmcheck.py only")

    if sparse:
        base, length = desc["mapping"]
        touched = {r["addr"] for r in desc["regions"]}
        for off in (PAGE, 2 << 30, (48 << 30) + 5 * PAGE,
                    length // 2 + 5 * PAGE):
            a = base + off
            if off >= length or a in touched:
                continue
            got = elf.read(a, PAGE)
            check(got == b"\0" * PAGE, f"{name}: untouched page {a:#x} reads as zeros")
            if kcore_read:
                p = subprocess.run([kcore_read, core, "--vaddr", hex(a), "--len",
                                    str(PAGE)], capture_output=True)
                check(p.returncode == 0 and p.stdout == b"\0" * PAGE,
                      f"{name}: untouched page {a:#x} reads as zeros (kcore-read)")
        st = os.stat(core)
        alloc = st.st_blocks * 512
        check(st.st_size > length, f"{name}: size {st.st_size} covers the {length >> 30} GiB mapping")
        check(alloc < (64 << 20), f"{name}: sparse on the host",
              f"{alloc} bytes allocated of {st.st_size}")
        print(f"# {name}: size {st.st_size}, allocated {alloc}")

    if info:
        check_core_info(name, elf, notes, info, threads,
                        dict(pid=int(desc["pid"]), nt_file=mapped))


def check_core_info(name, elf, notes, info, threads, own):
    """kcoredump info --json on the core against our own parse."""
    try:
        with open(info) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{name}: kcoredump info --json output parses", str(e))
        return
    src = j.get("source", {})
    check(src.get("kind") == "process-core", f"{name}: kcoredump kind is process-core",
          repr(src.get("kind")))
    jn = j.get("notes", [])
    n_pr = sum(1 for n in jn if n.get("type_name") == "NT_PRSTATUS")
    check(n_pr == threads, f"{name}: kcoredump reports {threads} NT_PRSTATUS notes", str(n_pr))
    check(len(jn) == len(notes), f"{name}: kcoredump reports all {len(notes)} notes", str(len(jn)))
    proc = src.get("process")
    if proc is None:
        print(f"# SKIP {name}: kcoredump reports no source.process")
    else:
        check(proc.get("threads") == threads and proc.get("signal") == SIGABRT
              and proc.get("pid") == own["pid"],
              f"{name}: kcoredump source.process: {threads} threads, SIGABRT, pid {own['pid']}",
              json.dumps(proc))
    sigs = [n.get("prstatus", {}).get("signal") for n in jn if n.get("type_name") == "NT_PRSTATUS"]
    check(all(s in (None, SIGABRT) for s in sigs), f"{name}: kcoredump prstatus signals", str(sigs))
    jf = [n.get("file") for n in jn if n.get("type_name") == "NT_FILE"]
    if jf and jf[0] is not None:
        got = [(hexint(m.get("start")), hexint(m.get("end")), hexint(m.get("offset")), m.get("path"))
               for m in jf[0].get("mappings", [])]
        want = [(s, e, o * PAGE, p) for s, e, o, p in own["nt_file"]]
        check(got == want, f"{name}: kcoredump NT_FILE mappings match ours ({len(want)})",
              f"{got} vs {want}")
    segs = j.get("segments", [])
    loads = elf.loads()
    check(len([s for s in segs if s.get("type") == "LOAD"]) == len(loads),
          f"{name}: kcoredump reports all {len(loads)} PT_LOAD segments")
    by_vaddr = {hexint(s.get("vaddr")): s for s in segs}
    bad = [p for p in loads
           if p["vaddr"] not in by_vaddr
           or hexint(by_vaddr[p["vaddr"]].get("offset")) != p["offset"]
           or by_vaddr[p["vaddr"]].get("filesz") != p["filesz"]
           or by_vaddr[p["vaddr"]].get("memsz") != p["memsz"]]
    check(not bad, f"{name}: kcoredump segments match the program headers",
          f"{len(bad)} differ, first vaddr {bad[0]['vaddr']:#x}" if bad else "")


# ---- live kcore --------------------------------------------------------------
def read_phdrs(path):
    out = []
    with open(path) as f:
        for line in f:
            i, t, va, pa, off, fsz, msz, ram = line.split()
            out.append(dict(index=int(i), type=t, vaddr=int(va, 16), paddr=int(pa, 16),
                            offset=int(off, 16), filesz=int(fsz), memsz=int(msz),
                            ram=ram == "1"))
    return out


def system_ram(path):
    ranges = []
    with open(path) as f:
        for line in f:
            if line.startswith(" "):
                continue  # only top-level resources
            rng, _, what = line.partition(" : ")
            if what.strip() == "System RAM":
                s, e = rng.split("-")
                ranges.append((int(s, 16), int(e, 16) + 1))
    return ranges


def merge(ranges):
    out = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def cmd_kcore_info(args):
    d = args[0]
    with open(os.path.join(d, "info.json")) as f:
        j = json.load(f)
    phdrs = read_phdrs(os.path.join(d, "phdrs"))
    syms = {}
    with open(os.path.join(d, "kallsyms")) as f:
        for line in f:
            a, _, n = line.split()[:3]
            syms[n] = int(a, 16)
    segs = j.get("segments", [])

    # kcoredump's segments must be exactly the kernel's program headers.
    loads = [p for p in phdrs if p["type"] == "LOAD"]
    jl = [s for s in segs if s.get("type") == "LOAD"]
    check(len(jl) == len(loads), f"{len(loads)} PT_LOAD segments", f"kcoredump has {len(jl)}")
    by_vaddr = {hexint(s.get("vaddr")): s for s in jl}
    for p in loads:
        s = by_vaddr.get(p["vaddr"])
        if not check(s is not None, f"segment at {p['vaddr']:#x} reported"):
            continue
        pa = hexint(s.get("paddr"))
        want_pa = None if p["paddr"] == M64 else p["paddr"]
        check(hexint(s.get("offset")) == p["offset"] and s.get("filesz") == p["filesz"]
              and s.get("memsz") == p["memsz"] and pa == want_pa,
              f"segment at {p['vaddr']:#x} ({s.get('class')}) matches its phdr",
              f"kcoredump {s} vs phdr {p}")
        vend = hexint(s.get("vend"))
        if vend is not None:
            check(vend == p["vaddr"] + p["memsz"], f"segment at {p['vaddr']:#x}: vend = vaddr + memsz",
                  f"{vend:#x}")

    # RAM segments against /proc/iomem System RAM (kcore builds them from it,
    # page-aligned inwards: kcore_ram_list -> walk_system_ram_range).
    ram = merge([(hexint(s["paddr"]), hexint(s["paddr"]) + s["memsz"])
                 for s in segs if s.get("class") == "ram"])
    sysram = merge([((s + PAGE - 1) & ~(PAGE - 1), e & ~(PAGE - 1))
                    for s, e in system_ram(os.path.join(d, "iomem"))])
    sysram = [(s, e) for s, e in sysram if e > s]
    check(ram == sysram, "ram segments cover exactly the System RAM of /proc/iomem",
          f"ram {[(hex(a), hex(b)) for a, b in ram]} vs iomem {[(hex(a), hex(b)) for a, b in sysram]}")
    check(all(p["ram"] == (hexint(by_vaddr.get(p["vaddr"], {}).get("paddr")) is not None
                           and by_vaddr[p["vaddr"]].get("class") == "ram") for p in loads),
          "class ram is exactly the direct-map segments with a physical address")

    text = [s for s in segs if s.get("class") == "text"]
    t0, t1 = syms.get("_text"), syms.get("_etext")
    check(t0 is not None and t1 is not None, "_text and _etext in kallsyms")
    if t0 is not None and t1 is not None:
        check(any(hexint(s["vaddr"]) <= t0 and t1 <= hexint(s["vaddr"]) + s["memsz"] for s in text),
              f"a text segment holds [_text, _etext) = [{t0:#x}, {t1:#x})")
    for cls in ("vmalloc", "modules"):
        check(any(s.get("class") == cls for s in segs), f"a {cls} segment")

    with open(os.path.join(d, "cmdline")) as f:
        cmdline = f.read().split()
    lines = j.get("vmcoreinfo", {}).get("lines", {})
    l5 = lines.get("NUMBER(pgtable_l5_enabled)")
    want_l5 = "0" if "no5lvl" in cmdline else "1"
    check(l5 == want_l5, f"VMCOREINFO NUMBER(pgtable_l5_enabled) = {want_l5}", repr(l5))


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = sys.argv[1], sys.argv[2:]
    try:
        if cmd == "core":
            cmd_core(args)
        elif cmd == "kcore-info":
            cmd_kcore_info(args)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (OSError, ValueError, KeyError) as e:
        check(False, f"{cmd}: {type(e).__name__}: {e}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
