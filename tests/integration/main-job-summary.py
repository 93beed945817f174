#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""README command (1)'s summary (issue 46 item 6), without a VM:
scripts/main-job-dumps.sh on the kcore fixture leaves the files
scripts/main-job.sh leaves, and scripts/main-job-summary.py sums them up
in a few lines: the source and its kernel, per dump its path, the bytes
read of the logical size, the time and rate, the bytes written, the
file's SHA-256 (= sha256sum) and the verify result, then every result
file and what it is.  A dump that no longer verifies makes it say so and
exit 1.

  main-job-summary.py KCOREDUMP FIXDIR SRCDIR
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

kcoredump, fixdir, srcdir = sys.argv[1:4]
fix = os.path.join(fixdir, "kcore-x86_64.core")
dumps = os.path.join(srcdir, "scripts", "main-job-dumps.sh")
summary = os.path.join(srcdir, "scripts", "main-job-summary.py")
n = failed = 0


def check(ok, what, diag=None):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    if not ok:
        failed += 1
        for line in str(diag or "").splitlines():
            print("# " + line)


def human(b):
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    v, u = float(b), 0
    while v >= 1024 and u + 1 < len(units):
        v /= 1024
        u += 1
    return "%d B" % b if u == 0 else "%.1f %s" % (v, units[u])


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "results")
    r = subprocess.run([dumps, kcoredump, fix, out], capture_output=True,
                       text=True)
    check(r.returncode == 0, "main-job-dumps.sh on the fixture exits 0",
          r.stderr)
    r = subprocess.run([summary, out, "the fixture's"], capture_output=True,
                       text=True)
    text = r.stdout
    lines = text.splitlines()
    check(r.returncode == 0, "the summary exits 0", r.stderr + text)
    check(5 <= len(lines) <= 20, "the summary is short (%d lines)"
          % len(lines), text)
    info = json.load(open(os.path.join(out, "info.json")))["source"]
    check("Dumped the fixture's %s: Linux %s, x86_64"
          % (fix, info["kernel_release"]) in lines,
          "it names the source and its kernel (%s)" % info["kernel_release"],
          text)
    for label, name, js, ver in (("RAM:", "ram.elf.zst", "ram.json", None),
                                 ("vmalloc:", "vmalloc.elf", "vmalloc.json",
                                  None)):
        path = os.path.join(out, name)
        d = json.load(open(os.path.join(out, js)))
        st = d["stats"]
        try:
            i = next(k for k, ln in enumerate(lines)
                     if ln.split()[:2] == [label, path])
        except StopIteration:
            check(False, "%s: a line names the dump %s" % (name, path), text)
            continue
        block = lines[i + 1:i + 4]
        m = re.match(r"  read     (.+) of (.+) in ([\d.]+) s \((.+)/s\), (.+) "
                     r"written$", block[0] if block else "")
        check(m and m.group(1) == human(st["bytes_read"]) and
              m.group(2) == human(st["bytes_total"]) and
              m.group(5) == human(st["bytes_written"]) and
              abs(float(m.group(3)) - st["seconds"]) < 0.01,
              "%s: read, logical size, time and written as its JSON says"
              % name, "\n".join(block))
        if d.get("file_sha256"):
            check(len(block) > 1 and
                  block[1] == "  SHA-256  %s" % sha256(path),
                  "%s: its SHA-256 is sha256sum's" % name, "\n".join(block))
        else:
            check(len(block) > 1 and
                  block[1].startswith("  SHA-256  not computed: a sparse "),
                  "%s: why there is no SHA-256 (sparse)" % name,
                  "\n".join(block))
        check(len(block) > 2 and re.match(
            r"  verify   OK: (its segment matches its digest|all \d+ "
            r"segments match their digests)$", block[2]),
              "%s: verify OK" % name, "\n".join(block))
    try:
        k = lines.index("Results in %s/:" % out)
        listed = [ln.split()[0] for ln in lines[k + 1:]]
    except ValueError:
        listed = []
    check(sorted(listed) == sorted(os.listdir(out)),
          "every result file is listed, with what it is (%d)" % len(listed),
          "listed: %s\nin the directory: %s" % (listed, os.listdir(out)))
    wide = [ln for ln in lines
            if len(ln) > 80 and out not in ln and fix not in ln]
    check(not wide, "its lines fit 80 columns (but for the paths)",
          "\n".join(wide))

    # A dump that no longer verifies: a byte near its start flipped (a
    # zstd frame early in the file: verify stops there), the other files
    # linked (vmalloc.elf holds 64 GiB of holes).
    bad = os.path.join(tmp, "bad")
    os.mkdir(bad)
    for name in os.listdir(out):
        if name != "ram.elf.zst":
            os.symlink(os.path.join(out, name), os.path.join(bad, name))
    p = os.path.join(bad, "ram.elf.zst")
    shutil.copyfile(os.path.join(out, "ram.elf.zst"), p)
    os.unlink(os.path.join(bad, "verify-ram.json"))
    at = os.path.getsize(p) // 20
    with open(p, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0xff]))
    with open(os.path.join(bad, "verify-ram.json"), "w") as f:
        rc = subprocess.run([kcoredump, "verify", "--json", p], stdout=f,
                            stderr=subprocess.DEVNULL).returncode
    check(rc != 0, "the corrupted RAM dump does not verify (exit %d)" % rc)
    r = subprocess.run([summary, bad], capture_output=True, text=True)
    check(r.returncode == 1 and re.search(
        r"^  verify   (FAILED|ERROR): ", r.stdout, re.M),
          "the summary says so and exits 1 (%d)" % r.returncode, r.stdout)

print("1..%d" % n)
sys.exit(1 if failed else 0)
