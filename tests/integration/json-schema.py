#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Every command's --json against its JSON Schema in docs/schema/ (issue 46
item 2): info (every fixture, whole, --segments-only, --notes-only
--registers), dump (to ELF .zst with --record, --dry-run, --vmalloc-range,
-d, to every format, a stored core by MATCH), convert, pid, verify (alone,
with SOURCE, --sha256, a LiME file without digests), list and show of a
store core-handler filled, cat, the acquisition record, and the error
document of failures.  jsonschema (python3-jsonschema) validates; the
schemas forbid members they do not name, so a renamed or new member fails
here until the schema (and the man page's JSON OUTPUT) says it.

  json-schema.py KCOREDUMP FIXDIR SCHEMADIR [SAVEDIR]

SAVEDIR: also keep every document there (SCHEMA.NAME.json).
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("1..0 # SKIP python3-jsonschema is not installed")
    sys.exit(77)

kcoredump, fixdir, schemadir = sys.argv[1:4]
savedir = sys.argv[4] if len(sys.argv) > 4 else None
n = failed = 0
seen = {}


def check(ok, what, diag=None):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    if not ok:
        failed += 1
        for line in str(diag or "").splitlines()[:30]:
            print("# " + line)


schemas = {}
for p in sorted(glob.glob(os.path.join(schemadir, "*.json"))):
    name = os.path.basename(p)[:-5]
    with open(p) as f:
        s = json.load(f)
    try:
        jsonschema.Draft202012Validator.check_schema(s)
        schemas[name] = s
        check(True, "docs/schema/%s.json is a valid draft 2020-12 schema"
              % name)
    except jsonschema.SchemaError as e:
        check(False, "docs/schema/%s.json is a valid schema" % name, e)
# $refs between the schemas (common.json#/$defs/...) resolve to the files
# here, never to the network: referencing's registry (jsonschema >= 4.18),
# else a RefResolver store (Debian 12's 4.10).
try:
    from referencing import Registry, Resource
    registry = Registry().with_resources(
        [(s["$id"], Resource.from_contents(s)) for s in schemas.values()])

    def refs(schema):
        return {"registry": registry}
except ImportError:
    schema_store = {s["$id"]: s for s in schemas.values()}

    def refs(schema):
        return {"resolver": jsonschema.RefResolver.from_schema(
            schema, store=schema_store)}


def validate(schema, doc, what):
    """Validate doc against docs/schema/SCHEMA.json."""
    seen[schema] = seen.get(schema, 0) + 1
    if savedir:
        with open(os.path.join(savedir, "%s.%s.json" % (
                schema, what.replace("/", "_").replace(" ", "_"))), "w") as f:
            json.dump(doc, f, indent=1)
    v = jsonschema.Draft202012Validator(schemas[schema],
                                        **refs(schemas[schema]))
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
    check(not errors, "%s: valid against %s.json" % (what, schema),
          "\n".join("%s: %s" % ("/".join(map(str, e.path)), e.message)
                    for e in errors[:10]))


def run(schema, what, args, fail=False, **kw):
    """Run kcoredump ARGS; its standard output is one document: an error
    document (docs/schema/error.json) when it is {"error": ...}, whose
    exit_status is the exit status, else SCHEMA's.  fail: True, the
    command must fail; False, succeed; None, either."""
    r = subprocess.run([kcoredump] + args, capture_output=True, **kw)
    try:
        doc = json.loads(r.stdout)
    except ValueError as e:
        check(False, "%s: one JSON document (exit %d)" % (what, r.returncode),
              "%s\n%s" % (e, r.stderr.decode(errors="replace")[:500]))
        return None
    if isinstance(doc, dict) and list(doc) == ["error"]:
        validate("error", doc, what + " (exit %d)" % r.returncode)
        check(doc["error"].get("exit_status") == r.returncode != 0,
              "%s: the error's exit_status is the exit status (%d)"
              % (what, r.returncode))
        if fail is not None:
            check(fail, "%s: %s" % (what, "fails" if fail else "succeeds"),
                  doc["error"].get("message"))
    else:
        validate(schema, doc, what)
        if fail:
            check(False, "%s: fails (exit %d)" % (what, r.returncode))
    return doc


with tempfile.TemporaryDirectory() as tmp:
    t = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    cores = sorted(glob.glob(os.path.join(fixdir, "*.core")))
    for core in cores:
        name = os.path.basename(core)[:-5]
        # The broken fixtures may fail (an error document) or be described.
        bad = name.startswith("bad-")
        run("info", "info " + name, ["info", "--json", "--no-modules", core],
            fail=None if bad else False)
        if name == "pn-xnum":
            continue
        run("info", "info --segments-only " + name,
            ["info", "--json", "--segments-only", "--no-modules", core],
            fail=None if bad else False)
        run("info", "info --notes-only --registers " + name,
            ["info", "--json", "--notes-only", "--registers", core],
            fail=None if bad else False)
    proc = os.path.join(fixdir, "process-x86_64.core")
    vmcore = os.path.join(fixdir, "vmcore-x86_64.core")
    kcore = os.path.join(fixdir, "kcore-x86_64.core")
    run("info", "info with modules process-x86_64", ["info", "--json", proc])
    run("info", "info of a missing file", ["info", "--json", t("none")],
        fail=True)

    # dump, convert and the record.
    run("dump", "dump vmcore --record", ["dump", "--json", vmcore, "-o",
        t("v.elf.zst"), "--record", t("rec.json"), "--case", "C-1"])
    with open(t("rec.json")) as f:
        validate("record", json.load(f), "the record of dump vmcore")
    run("dump", "dump --smear-check=0.5 vmcore --record",
        ["dump", "--json", "--smear-check=0.5", vmcore, "-o", t("sm.elf"),
         "--record", t("sm.json")])
    with open(t("sm.json")) as f:
        validate("record", json.load(f), "the record of a --smear-check")
    run("info", "info --read-time of a dump",
        ["info", "--json", "--read-time", "0xffff8e1a00100000", t("sm.elf")])
    run("cat", "cat --json of a dump (its read time)",
        ["cat", "--json", "-a", "0xffff8e1a00100000", "-l", "16",
         t("sm.elf")])
    run("dump", "dump --dry-run vmcore", ["dump", "--json", "-n", vmcore])
    run("dump", "dump --dry-run --vmalloc-range kcore",
        ["dump", "--json", "-n", "--vmalloc-range", kcore])
    run("dump", "dump --vmalloc-range kcore",
        ["dump", "--json", "--vmalloc-range", kcore, "-o", t("vm.elf")])
    run("dump", "dump --hash none process",
        ["dump", "--json", "--hash", "none", proc, "-o", t("n.elf")])
    run("dump", "dump sparse-1t", ["dump", "--json",
        os.path.join(fixdir, "sparse-1t.core"), "-o", t("s.elf")])
    run("dump", "dump -d 31 vmcore", ["dump", "--json", "-d", "31", vmcore,
        "-o", t("x.elf")])
    for fmt in ("elf", "kdump", "lime", "avml"):
        run("dump", "convert --format %s" % fmt,
            ["convert", "--json", "--format", fmt, t("v.elf.zst"), "-o",
             t("c." + fmt)])
    run("dump", "dump to an existing file", ["dump", "--json", vmcore, "-o",
        t("v.elf.zst")], fail=True)
    # info of what kcoredump wrote: its note, every format's header.
    for f in ("v.elf.zst", "c.kdump", "c.lime", "c.avml", "vm.elf"):
        run("info", "info of the dump " + f, ["info", "--json", t(f)])

    # verify.
    run("verify", "verify .elf.zst", ["verify", "--json", t("v.elf.zst")])
    run("verify", "verify .elf.zst SOURCE",
        ["verify", "--json", t("v.elf.zst"), vmcore])
    run("verify", "verify kdump", ["verify", "--json", t("c.kdump")])
    r = subprocess.run(["sha256sum", t("v.elf.zst")], capture_output=True,
                       text=True)
    run("verify", "verify --sha256", ["verify", "--json", "--sha256",
        r.stdout.split()[0], t("v.elf.zst")])
    run("verify", "verify --sha256 (a mismatch) of a LiME file",
        ["verify", "--json", "--sha256", "0" * 64, t("c.lime")])
    run("verify", "verify a LiME file (no digests)",
        ["verify", "--json", t("c.lime")])

    # pid: a child of ours.
    child = subprocess.Popen(["sleep", "60"])
    try:
        run("pid", "pid of sleep", ["pid", "--json", str(child.pid), "-o",
            t("p.core")])
        run("info", "info of the pid core", ["info", "--json", t("p.core")])
    finally:
        child.kill()
        child.wait()

    # cat.
    run("cat", "cat --json", ["cat", "--json", "-a", "0xffff8e1a00100000",
        "-l", "64", vmcore])

    # A store core-handler fills, then list, show and dump MATCH.
    store = t("store")
    os.mkdir(store, 0o700)
    for pid, sig, when, comm in ((4242, 6, 1700000000, "crashme"),
                                 (4243, 11, 1700086400, "other")):
        with open(proc, "rb") as f:
            subprocess.run([kcoredump, "core-handler", "--dir", store,
                            "--no-sync", "--no-journal", str(pid), "1000",
                            "1001", str(sig), str(when), comm],
                           stdin=f, capture_output=True)
    run("list", "list", ["list", "--json", "--dir", store])
    run("list", "list COMM=nope (none)", ["list", "--json", "--dir", store,
        "COMM=nope"])
    run("show", "show", ["show", "--json", "--dir", store])
    run("show", "show -1", ["show", "--json", "--dir", store, "-1"])
    run("dump", "dump MATCH (a stored core)", ["dump", "--json", "-D", store,
        "4243", "-o", t("m.core")])

missing = sorted(set(schemas) - set(seen) - {"common"})
check(not missing, "every schema was used (%s)" % ", ".join(
    "%s %d" % kv for kv in sorted(seen.items())), "unused: %s" % missing)
print("1..%d" % n)
sys.exit(1 if failed else 0)
