#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""README command (1)'s last words: what was dumped from which kernel, the
sizes, the time and throughput, each file's SHA-256, the verify result and
where each result file is, from the JSON that scripts/main-job-dumps.sh
(or the VM's main-job case) leaves in DIR.

  main-job-summary.py DIR [WHERE]

WHERE says whose source it was ("this machine's", "the QEMU guest's").  Exit status 1 when a file is missing or a dump does not
verify.
"""
import json
import os
import sys

FILES = (
    ("ram.elf.zst", "the dump of all RAM (zstd ELF; kcoredump mount opens it)"),
    ("ram.json", "its summary: segments, digests, read times (JSON)"),
    ("vmalloc.elf", "the dump of the mapped vmalloc areas (sparse ELF)"),
    ("vmalloc.json", "its summary (JSON)"),
    ("verify-ram.json", "kcoredump verify of the RAM dump (JSON)"),
    ("verify-vmalloc.json", "kcoredump verify of the vmalloc dump (JSON)"),
    ("info.txt", "kcoredump info: the source, segments, notes, VMCOREINFO"),
    ("info.json", "the same as JSON"),
)


def human(n):
    """Bytes as kcoredump prints them: exact below 1 KiB, else one
    decimal in binary units."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    v, u = float(n), 0
    while v >= 1024 and u + 1 < len(units):
        v /= 1024
        u += 1
    return "%d B" % n if u == 0 else "%.1f %s" % (v, units[u])


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def seconds(s):
    return "%.2f s" % s if s < 10 else "%.1f s" % s


def dump_lines(label, path, dump, verify):
    """What was dumped to path, read and written in what time, the
    file's SHA-256, the verify result.  Returns (lines, verified)."""
    st = dump["stats"]
    secs = st["seconds"]
    rate = st["bytes_read"] / secs if secs > 0 else 0
    areas = (dump.get("vmalloc") or {}).get("areas")
    lines = ["%s %s%s" % (label, path,
                          " (%s)" % plural(areas, "mapped area") if areas
                          else ""),
             "  read     %s of %s in %s (%s/s), %s written"
             % (human(st["bytes_read"]), human(st["bytes_total"]),
                seconds(secs), human(rate), human(st["bytes_written"]))]
    if dump.get("file_sha256"):
        lines.append("  SHA-256  %s" % dump["file_sha256"])
    else:
        holes = dump.get("file_sha256_skipped_hole_bytes")
        lines.append("  SHA-256  not computed: a sparse file%s"
                     % (" with %s of holes" % human(holes) if holes else ""))
    if "error" in verify:
        lines.append("  verify   ERROR: %s" % verify["error"]["message"])
        return lines, False
    segs = verify.get("segments") or []
    bad = sum(1 for s in segs if not s.get("match"))
    if verify.get("ok") and not bad:
        lines.append("  verify   OK: %s%s"
                     % ("its segment matches its digest" if len(segs) == 1
                        else "all %d segments match their digests" % len(segs),
                        "" if verify.get("complete", True) else
                        " (INCOMPLETE: some memory could not be read)"))
        return lines, True
    lines.append("  verify   FAILED: %d of %s differ from their digests"
                 % (bad, plural(len(segs), "segment")))
    return lines, False


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip())
    d = os.path.abspath(sys.argv[1])
    where = sys.argv[2] if len(sys.argv) == 3 else None
    missing = [n for n, _ in FILES if not os.path.exists(os.path.join(d, n))]
    if missing:
        print("main-job: missing in %s: %s" % (d, ", ".join(missing)),
              file=sys.stderr)
        return 1
    src = load(d, "info.json")["source"]
    print("== Summary")
    print("Dumped %s%s: Linux %s, %s"
          % (where + " " if where else "", src["path"],
             src.get("kernel_release") or "(release unknown)",
             src.get("machine") or "?"))
    good = True
    for label, name, js, ver in (
            ("RAM:    ", "ram.elf.zst", "ram.json", "verify-ram.json"),
            ("vmalloc:", "vmalloc.elf", "vmalloc.json", "verify-vmalloc.json")):
        lines, ok = dump_lines(label, os.path.join(d, name), load(d, js),
                               load(d, ver))
        good = good and ok
        print("\n".join(lines))
    print("Results in %s/:" % d)
    for name, what in FILES:
        print("  %-20s %s" % (name, what))
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
